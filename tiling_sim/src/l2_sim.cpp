// LRU simulation of L2 over 128-byte lines.
#include "flashsim/sim/l2_sim.h"

#include <algorithm>
#include <list>
#include <unordered_map>

namespace flashsim::sim {

namespace {

class Lru {
 public:
  explicit Lru(int64_t lines) : cap_(std::max<int64_t>(1, lines)) {
    map_.reserve(static_cast<size_t>(cap_) * 2);
  }
  // Returns true on hit. kind: 0 load, 1 store, 2 reduce.
  void touch(uint64_t line, int kind, int line_bytes, L2Result& r) {
    auto it = map_.find(line);
    if (it != map_.end()) {
      ++r.hits;
      order_.splice(order_.begin(), order_, it->second);
      if (kind != 0) it->second->dirty = true;
      return;
    }
    ++r.misses;
    if (kind != 1) r.dram_read += line_bytes;
    if (static_cast<int64_t>(map_.size()) >= cap_) {
      const Entry& victim = order_.back();
      if (victim.dirty) r.dram_write += line_bytes;
      map_.erase(victim.line);
      order_.pop_back();
    }
    order_.push_front(Entry{line, kind != 0});
    map_[line] = order_.begin();
  }
  int64_t dirty_lines() const {
    int64_t n = 0;
    for (const auto& e : order_) n += e.dirty ? 1 : 0;
    return n;
  }

 private:
  struct Entry {
    uint64_t line;
    bool dirty;
  };
  int64_t cap_;
  std::list<Entry> order_;
  std::unordered_map<uint64_t, std::list<Entry>::iterator> map_;
};

}  // namespace

L2Result simulate_l2(const KernelSchedule& s, const AttentionProblem& p, const HardwareProfile& hw,
                     int64_t resident_ctas) {
  L2Result r;
  const int lb = hw.line_bytes > 0 ? hw.line_bytes : 128;
  Lru cache(hw.l2_effective_bytes / lb);
  // Each tensor its own address range; rows of a (batch, head) laid out as BSHD with padded sequences.
  const int64_t rows = std::max(fa2_padded_rows(p.seqlen_q), p.seqlen_k) + 128;
  const int64_t heads = std::max(p.heads_q, p.heads_kv);
  const auto n = static_cast<int64_t>(s.ctas.size());
  const int64_t group = std::max<int64_t>(1, resident_ctas);
  for (int64_t g0 = 0; g0 < n; g0 += group) {
    const int64_t g1 = std::min(n, g0 + group);
    size_t longest = 0;
    for (int64_t c = g0; c < g1; ++c)
      longest = std::max(longest, s.ctas[static_cast<size_t>(c)].moves.size());
    for (size_t i = 0; i < longest; ++i) {
      for (int64_t c = g0; c < g1; ++c) {
        const auto& moves = s.ctas[static_cast<size_t>(c)].moves;
        if (i >= moves.size()) continue;
        const Move& m = moves[i];
        const int kind = m.kind == ref::AccessKind::Load ? 0 : m.kind == ref::AccessKind::Store ? 1 : 2;
        const uint64_t row_bytes = static_cast<uint64_t>(m.cols * m.elem_bytes);
        const uint64_t base = static_cast<uint64_t>(m.tensor) << 44;
        for (int64_t row = m.row0; row < m.row0 + m.rows; ++row) {
          // Row statistics (lse, D, m, l) are [batch, head, seq]; the rest BSHD.
          const bool stat = m.cols == 1;
          const uint64_t a0 = base + static_cast<uint64_t>(stat ? (m.batch * heads + m.head) * rows + row
                                                                : (m.batch * rows + row) * heads + m.head) *
                                         row_bytes;
          for (uint64_t line = a0 / static_cast<uint64_t>(lb);
               line <= (a0 + row_bytes - 1) / static_cast<uint64_t>(lb); ++line)
            cache.touch(line, kind, lb, r);
        }
      }
    }
  }
  r.dirty_at_end = cache.dirty_lines() * lb;
  return r;
}

}  // namespace flashsim::sim
