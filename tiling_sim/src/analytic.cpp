// Closed-form counts of a kernel: its model's count of one sequence for one head (or the CTAs of one (batch,
// head) built and counted), times heads and equal batches; then each touched tensor's footprint. Equal to
// execute_counts(schedule(...)) on load/store/reduce bytes and sectors (tests hold them equal).
#include <algorithm>
#include <array>

#include "flashsim/sim/kernel_model.h"

namespace flashsim::sim {

using ref::TensorId;

namespace {

constexpr auto kLoad = &TensorTraffic::load;
constexpr auto kStore = &TensorTraffic::store;
constexpr auto kReduce = &TensorTraffic::reduce;

// Without a closed form: build the CTAs of (b, x.head) and count their moves.
void count_ctas(const KernelModel& m, const AttentionProblem& p, const TileConfig& c, const KernelLaunch& l,
                int64_t b, SequenceCounter& x) {
  for (int64_t blk = 0; blk < l.grid_x; ++blk) {
    CtaWork w{b, x.head, blk, {}, 0, 0};
    CtaBuilder builder{p, dtype_bytes(p.dtype), &w, x.data};
    m.cta(builder, c, b, x.head, blk);
    for (const auto& mv : w.moves)
      x.add(mv.kind == ref::AccessKind::Load    ? kLoad
            : mv.kind == ref::AccessKind::Store ? kStore
                                                : kReduce,
            mv.tensor, mv.rows, mv.cols, mv.elem_bytes);
    x.k.mma_flops += w.mma_flops;
    x.k.exp_ops += w.exp_ops;
    x.k.vector_ops += w.vector_ops;
    x.k.tiles += w.tiles;
    x.k.skipped_tiles += w.skipped_tiles;
    x.cta_work(w.mma_flops);
  }
}

// The widest row a kernel moved of each tensor, and loaded or reduced, in bytes (SequenceCounter::row_bytes,
// read_row_bytes).
struct RowBytes {
  std::array<int64_t, kNumTensors> any{}, read{};
};

// One sequence (batch entry) of one kernel, for one query head (per_kv_head: one kv head); scaled by `times`
// (heads, equal batches); the widest rows into `widest`.
void sequence(const KernelModel& m, const AttentionProblem& p, const TileConfig& c, const KernelLaunch& l,
              int64_t b, int64_t times, KernelCounts& k, RowBytes& widest, std::vector<double>* work,
              int64_t head = 0, const ProblemData* data = nullptr) {
  KernelCounts one;
  SequenceCounter x{one, work, head, data};
  if (m.sequence) {
    m.sequence(x, p, c, b);
  } else {
    count_ctas(m, p, c, l, b, x);
  }
  for (size_t t = 0; t < one.tensors.size(); ++t) {
    widest.any[t] = std::max(widest.any[t], x.row_bytes[t]);
    widest.read[t] = std::max(widest.read[t], x.read_row_bytes[t]);
    for (auto dir : {kLoad, kStore, kReduce}) {
      (k.tensors[t].*dir).bytes += (one.tensors[t].*dir).bytes * times;
      (k.tensors[t].*dir).sectors += (one.tensors[t].*dir).sectors * times;
    }
  }
  k.mma_flops += one.mma_flops * static_cast<double>(times);
  k.exp_ops += one.exp_ops * static_cast<double>(times);
  k.vector_ops += one.vector_ops * static_cast<double>(times);
  k.tiles += one.tiles * times;
  k.skipped_tiles += one.skipped_tiles * times;
}

// With a block mask every (sequence, head) differs: each counted on its own, and the CTAs' work listed in
// launch order (head, batch, block), kept when the CTAs differ (as the executed count keeps it).
void per_head_counts(const KernelModel& m, const AttentionProblem& p, const TileConfig& c,
                     const ProblemData& d, KernelCounts& k, RowBytes& widest) {
  const int64_t heads = m.per_kv_head ? p.heads_kv : p.heads_q, gx = k.launch.grid_x;
  std::vector<double> all, w;
  all.reserve(static_cast<size_t>(heads * p.batch * gx));
  for (int64_t h = 0; h < heads; ++h)
    for (int64_t b = 0; b < p.batch; ++b) {
      w.clear();
      sequence(m, p, c, k.launch, b, 1, k, widest, &w, h, &d);
      for (int64_t x = 0; x < gx; ++x)
        all.push_back(x < static_cast<int64_t>(w.size()) ? w[static_cast<size_t>(x)] : 0.0);
    }
  if (std::any_of(all.begin(), all.end(), [&](double v) { return v != all.front(); }))
    k.cta_work = std::move(all);
}

// Footprints (what a cold L2 must fetch or eventually write back) of the tensors the kernel touches, as
// execute_counts takes them: a row is the widest the kernel moved of it (a kernel that reads, or writes the
// gradient of, MLA's V alone touches the first head_dim_v columns of K's or dK's rows only), and a tensor it
// stores and reads back narrower (MLA's dK, its first head_dim_v columns) is read from DRAM that wide.
void add_footprints(KernelCounts& k, const AttentionProblem& p, const TileConfig& c, bool per_kv_head,
                    const RowBytes& widest) {
  const int e = dtype_bytes(p.dtype);
  const int64_t tq = p.total_q(), tk = p.total_k(), hq = p.heads_q, hk = p.heads_kv;
  const int64_t h_dkv = per_kv_head ? hk : hq;  // dK, dV per kv head, or per query head (FA2's expanded dK)
  int64_t padded = 0;
  int64_t score_elems = 0;
  for (int64_t b = 0; b < p.batch; ++b) score_elems += p.len_q(b) * p.len_k(b) * hq;
  for (int64_t b = 0; b < p.batch; ++b)
    padded += std::min(dq_accum_padded_rows(p.len_q(b)),
                       (p.len_q(b) + c.bwd_block_q - 1) / c.bwd_block_q * c.bwd_block_q);
  const auto touched = [](const TensorTraffic& t) {
    return t.load.bytes + t.store.bytes + t.reduce.bytes > 0;
  };
  struct Footprint {
    TensorId t;
    int64_t rows, row_bytes;  // the tensor's rows and the bytes of a whole one
  };
  const Footprint fp[] = {{TensorId::Q, tq * hq, p.head_dim * e},
                          {TensorId::K, tk * hk, p.head_dim * e},
                          {TensorId::V, tk * hk, p.head_dim_v * e},
                          {TensorId::O, tq * hq, p.head_dim_v * dtype_bytes(p.output_dtype())},
                          {TensorId::dO, tq * hq, p.head_dim_v * e},
                          {TensorId::Lse, tq * hq, 4},
                          {TensorId::RowMax, tq * hq, 4},
                          {TensorId::Scores, score_elems, 4},
                          {TensorId::Probs, score_elems, 4},
                          {TensorId::Delta, tq * hq, 4},
                          {TensorId::RowSum, tq * hq, 4},
                          {TensorId::dQ, tq * hq, p.head_dim * e},
                          {TensorId::dK, tk * h_dkv, p.head_dim * e},
                          {TensorId::dV, tk * h_dkv, p.head_dim_v * e},
                          {TensorId::DqAccum, padded * hq, p.head_dim * 4}};
  for (const auto& [t, rows, whole] : fp) {
    const auto i = static_cast<size_t>(t);
    auto& tt = k.tensors[i];
    if (!touched(tt)) continue;
    const int64_t row = widest.any[i] > 0 ? std::min(widest.any[i], whole) : whole, read = widest.read[i];
    tt.unique_bytes = rows * row;
    if (tt.store.bytes > 0 && read > 0 && read < row) tt.read_bytes = rows * read;
  }
  auto& acc = k.tensors[static_cast<size_t>(TensorId::DqAccum)];
  if (c.dq_strategy == DqStrategy::Partials) {  // each partial row is written once, then read once
    acc.unique_bytes = acc.load.bytes + acc.store.bytes;
  } else if (touched(acc)) {
    // a kernel moving fewer bytes than the padded footprint touches the rows it moves, once each
    acc.unique_bytes = std::min(acc.unique_bytes, acc.load.bytes + acc.store.bytes + acc.reduce.bytes);
  }
}

}  // namespace

KernelCounts analytic_counts(const KernelModel& m, const AttentionProblem& p, const TileConfig& c,
                             const ProblemData* data, bool list_block_mask_steps) {
  ProblemData storage;
  const ProblemData& d = resolve_data(p, data, storage);
  KernelCounts k;
  k.launch = launch(m, p, c, list_block_mask_steps ? &d : nullptr);
  if (m.counts) {  // the model's own closed form of the whole launch
    m.counts(k, p, c, d);
    return k;
  }
  RowBytes widest{};
  if (p.block_mask != BroadcastShape::None) {
    per_head_counts(m, p, c, d, k, widest);
    add_footprints(k, p, c, m.per_kv_head, widest);
    return k;
  }
  // CTAs of unequal work (masked blocks skipped, varlen): their work in launch order (heads, batch, blocks).
  const bool bwd = m.work_blocks == WorkBlocks::Backward;
  const int64_t bq = bwd ? c.bwd_block_q : c.block_q, bk = bwd ? c.bwd_block_k : c.block_k;
  const bool vary = p.keys_vary();  // sequences of their own lengths (varlen, or a KV cache's cache_seqlens)
  const bool uneven =
      m.work_blocks != WorkBlocks::None &&
      (vary || p.window_left >= 0 || p.window_right >= 0 || p.seqlen_q % bq != 0 || p.seqlen_k % bk != 0);
  std::vector<std::vector<double>> work(uneven ? static_cast<size_t>(vary ? p.batch : 1) : 0);
  const int64_t heads = m.per_kv_head ? p.heads_kv : p.heads_q;  // the grid's z
  if (vary) {
    for (int64_t b = 0; b < p.batch; ++b)
      sequence(m, p, c, k.launch, b, heads, k, widest, uneven ? &work[static_cast<size_t>(b)] : nullptr);
  } else {
    sequence(m, p, c, k.launch, 0, p.batch * heads, k, widest, uneven ? &work[0] : nullptr);
  }
  if (uneven) {  // equal sequences: one (batch, head)'s blocks, repeated; varlen: every CTA
    const int64_t pattern_heads = vary ? k.launch.grid_z : 1, pattern_batch = vary ? p.batch : 1;
    k.cta_work.reserve(static_cast<size_t>(pattern_heads * pattern_batch * k.launch.grid_x));
    for (int64_t h = 0; h < pattern_heads; ++h)
      for (int64_t b = 0; b < pattern_batch; ++b) {
        const auto& w = work[static_cast<size_t>(b)];
        for (int64_t x = 0; x < k.launch.grid_x; ++x)
          k.cta_work.push_back(x < static_cast<int64_t>(w.size()) ? w[static_cast<size_t>(x)] : 0.0);
      }
    k.cta_work_repeat = vary ? 1 : k.launch.grid_y * k.launch.grid_z;
  }
  add_footprints(k, p, c, m.per_kv_head, widest);
  return k;
}

}  // namespace flashsim::sim
