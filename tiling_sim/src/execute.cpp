// The executed simulator's counting: every move of a schedule summed by tensor and direction, with 32-byte
// sectors (each row of a BSHD tile is contiguous and sector aligned) and the footprint actually touched.
#include <algorithm>
#include <unordered_map>

#include "flashsim/sim/counts.h"
#include "flashsim/sim/kernel_model.h"

namespace flashsim::sim {

namespace {
int64_t sectors_per_row(int64_t cols, int eb) {
  return (cols * eb + 31) / 32;
}
// A move's sectors: the row convention, or (addr0 >= 0) the sectors its rows' bytes touch at their addresses,
// walked row by row (rows ascend, so a sector already counted can only be the previous row's last).
int64_t move_sectors(const Move& m) {
  if (m.addr0 < 0) return m.rows * sectors_per_row(m.cols, m.elem_bytes);
  int64_t n = 0, last = -1;
  for (int64_t r = 0; r < m.rows; ++r) {
    const int64_t first_byte = (m.addr0 + r * m.pitch) * m.elem_bytes;
    const int64_t s0 = first_byte / 32, s1 = (first_byte + m.cols * m.elem_bytes - 1) / 32;
    n += s1 - std::max(s0, last + 1) + 1;
    last = s1;
  }
  return n;
}
}  // namespace

std::string_view tensor_name(ref::TensorId t) {
  switch (static_cast<int>(t) - tensor::kFirstSimOnly) {
    case 0:
      return "k_cache";
    case 1:
      return "v_cache";
    case 2:
      return "k_new";
    case 3:
      return "v_new";
    case 4:
      return "block_table";
    case 5:
      return "o_accum";
    case 6:
      return "lse_accum";
    default:
      return ref::tensor_name(t);
  }
}

int64_t KernelCounts::load_bytes() const {
  int64_t s = 0;
  for (const auto& t : tensors) s += t.load.bytes;
  return s;
}
int64_t KernelCounts::store_bytes() const {
  int64_t s = 0;
  for (const auto& t : tensors) s += t.store.bytes;
  return s;
}
int64_t KernelCounts::store_sectors() const {
  int64_t s = 0;
  for (const auto& t : tensors) s += t.store.sectors;
  return s;
}
int64_t KernelCounts::reduce_bytes() const {
  int64_t s = 0;
  for (const auto& t : tensors) s += t.reduce.bytes;
  return s;
}
int64_t KernelCounts::unique_loaded() const {
  int64_t s = 0;
  for (const auto& t : tensors)
    if (t.load.bytes > 0 || t.reduce.bytes > 0) s += t.read_bytes >= 0 ? t.read_bytes : t.unique_bytes;
  return s;
}
int64_t KernelCounts::unique_dirty() const {
  int64_t s = 0;
  for (const auto& t : tensors)
    if (t.store.bytes > 0 || t.reduce.bytes > 0) s += t.dirty_bytes >= 0 ? t.dirty_bytes : t.unique_bytes;
  return s;
}
int64_t KernelCounts::unique_stored() const {
  int64_t s = 0;
  for (const auto& t : tensors)
    if (t.store.bytes > 0) s += t.unique_bytes;
  return s;
}
int64_t KernelCounts::unique_total() const {
  int64_t s = 0;
  for (const auto& t : tensors) s += t.unique_bytes;
  return s;
}

KernelCounts execute_counts(const KernelSchedule& s) {
  KernelCounts k;
  k.launch = s.launch;
  std::unordered_map<int64_t, std::vector<uint8_t>> touched;  // (tensor, batch, head) -> rows touched
  std::array<int64_t, kNumTensors> row_bytes{}, read_row_bytes{};
  bool uneven = false, uneven_bytes = false;
  const bool share = s.launch.model && s.launch.model->dram_cta_share;
  std::vector<double> cta_bytes;
  for (const auto& cta : s.ctas) {
    uneven = uneven || cta.mma_flops != s.ctas.front().mma_flops;
    k.mma_flops += cta.mma_flops;
    k.exp_ops += cta.exp_ops;
    k.vector_ops += cta.vector_ops;
    k.tiles += cta.tiles;
    k.skipped_tiles += cta.skipped_tiles;
    if (share) {
      double bytes = 0;
      for (const auto& m : cta.moves)  // DRAM bytes: a box's zero-filled rows have none
        if (!m.zero_fill) bytes += static_cast<double>(m.rows * m.cols * m.elem_bytes);
      uneven_bytes = uneven_bytes || (!cta_bytes.empty() && bytes != cta_bytes.front());
      cta_bytes.push_back(bytes);
    }
    for (const auto& m : cta.moves) {
      const int t = static_cast<int>(m.tensor);
      auto& tt = k.tensors[static_cast<size_t>(t)];
      DirectionBytes& d = m.kind == ref::AccessKind::Load    ? tt.load
                          : m.kind == ref::AccessKind::Store ? tt.store
                                                             : tt.reduce;
      d.bytes += m.rows * m.cols * m.elem_bytes;
      d.sectors += move_sectors(m);
      if (m.zero_fill) continue;  // over the crossbar only: no row of the tensor touched
      // a row's bytes touched: the widest move's (MLA's V part of K's rows alone where no move reads more)
      row_bytes[static_cast<size_t>(t)] = std::max(row_bytes[static_cast<size_t>(t)], m.cols * m.elem_bytes);
      if (m.kind != ref::AccessKind::Store)  // the widest row read (MLA's dK: its first dv columns read back)
        read_row_bytes[static_cast<size_t>(t)] =
            std::max(read_row_bytes[static_cast<size_t>(t)], m.cols * m.elem_bytes);
      auto& rows = touched[(static_cast<int64_t>(t) << 48) | (m.batch << 24) | m.head];
      if (rows.size() < static_cast<size_t>(m.row0 + m.rows))
        rows.resize(static_cast<size_t>(m.row0 + m.rows), 0);
      for (int64_t r = m.row0; r < m.row0 + m.rows; ++r) rows[static_cast<size_t>(r)] = 1;
    }
  }
  if (uneven)
    for (const auto& cta : s.ctas) k.cta_work.push_back(cta.mma_flops);
  if (uneven_bytes) k.cta_bytes = std::move(cta_bytes);
  for (const auto& [key, rows] : touched) {
    const auto t = static_cast<size_t>(key >> 48);
    int64_t n = 0;
    for (auto v : rows) n += v;
    k.tensors[t].unique_bytes += n * row_bytes[t];
    // read back narrower than it is stored: DRAM reads that part of the rows alone
    if (k.tensors[t].store.bytes > 0 && read_row_bytes[t] > 0 && read_row_bytes[t] < row_bytes[t])
      k.tensors[t].read_bytes =
          (k.tensors[t].read_bytes < 0 ? 0 : k.tensors[t].read_bytes) + n * read_row_bytes[t];
  }
  return k;
}

}  // namespace flashsim::sim
