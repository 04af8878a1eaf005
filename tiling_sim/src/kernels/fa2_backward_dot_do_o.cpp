// FlashAttention-2's first backward kernel (flash_bwd_dot_do_o_kernel): D = rowsum(dO o O) per query block,
// a second fp32 row statistic, and the clear of the fp32 dQ accumulator that the main kernel's atomics add
// into. flashsim's own (gpu/fa2, flashsim_fa2_bwd_dot_kernel) also reads the forward's lse: its second
// statistic is the lse shift (ncu: its L2->SM reads are O + dO + lse exactly, FA2's O + dO).
#include <algorithm>

#include "fa2_backward_ncu.h"

namespace flashsim::sim::kernels {

using ref::AccessKind;
using ref::TensorId;

namespace {

KernelLaunch dot_launch(const AttentionProblem& p, const TileConfig& c) {
  return per_head_launch(p, ceil_div(p.seqlen_q, c.bwd_block_q), fa2_backward_threads(c));
}

template <bool kReadsLse>
void dot_cta(CtaBuilder& x, const TileConfig& c, int64_t b, int64_t h, int64_t m) {
  const auto& p = x.p;
  const int64_t sq = p.len_q(b), q0 = m * c.bwd_block_q;
  if (q0 >= sq) return;
  const int64_t rq = std::min(c.bwd_block_q, sq - q0);
  x.add(AccessKind::Load, TensorId::O, b, h, q0, rq, p.head_dim_v, x.e);
  x.add(AccessKind::Load, TensorId::dO, b, h, q0, rq, p.head_dim_v, x.e);
  if (kReadsLse) x.add(AccessKind::Load, TensorId::Lse, b, h, q0, rq, 1, 4);
  x.add(AccessKind::Store, TensorId::Delta, b, h, q0, rq, 1, 4);
  x.add(AccessKind::Store, TensorId::RowSum, b, h, q0, rq, 1, 4);  // FA2 writes a second fp32 row statistic
  if (c.dq_strategy == DqStrategy::Atomic) {  // clears the dQ accumulator (partials need no clearing)
    const int64_t rz = std::min(c.bwd_block_q, dq_accum_padded_rows(sq) - q0);
    x.add(AccessKind::Store, TensorId::DqAccum, b, h, q0, rz, p.head_dim, 4);
  }
}

template <bool kReadsLse>
void dot_sequence(SequenceCounter& x, const AttentionProblem& p, const TileConfig& c, int64_t b) {
  const int e = dtype_bytes(p.dtype);
  const int64_t sq = p.len_q(b), dv = p.head_dim_v;
  x.load(TensorId::O, sq, dv, e);
  x.load(TensorId::dO, sq, dv, e);
  if (kReadsLse) x.load(TensorId::Lse, sq, 1, 4);
  x.store(TensorId::Delta, sq, 1, 4);
  x.store(TensorId::RowSum, sq, 1, 4);
  if (c.dq_strategy == DqStrategy::Atomic)
    x.store(TensorId::DqAccum,
            std::min(dq_accum_padded_rows(sq), ceil_div(sq, c.bwd_block_q) * c.bwd_block_q), p.head_dim, 4);
}

// The launch and the CTAs of either dot kernel, on its name and ncu pattern.
template <bool kReadsLse>
KernelModel dot_model(KernelModel m) {
  m.block_sparse = true;  // per query block: nothing to skip
  m.launch = dot_launch;
  m.cta = dot_cta<kReadsLse>;
  m.sequence = dot_sequence<kReadsLse>;
  return m;
}

}  // namespace

KernelModel fa2_backward_dot_do_o() {
  return dot_model<false>(fa2_backward_model(
      "bwd_dot_do_o", "FA2 backward 1/3: D = rowsum(dO o O), and the fp32 dQ accumulator cleared",
      FLASHSIM_FA2_BWD_NCU_PATTERN("flash_bwd_dot_do_o_kernel")));
}

KernelModel fa2_backward_dot_do_o_lse() {
  KernelModel m = dot_model<true>(fa2_backward_model(
      "bwd_dot_do_o_lse",
      "flashsim's FA2 backward 1/3 (gpu/fa2): D = rowsum(dO o O) and the lse shift (the lse read), the fp32 "
      "dQ accumulator cleared",
      FLASHSIM_GPU_BWD_NCU_PATTERN("flashsim_fa2_bwd_dot_kernel")));
  m.algorithm.reset();  // not a step of the reference's FA2 backward: by name only (sim predict --kernel)
  // D and the lse shift: threads / Br lanes a row, the first of them stores: 32 Br / threads rows a warp's
  // instruction, in the lse's own [batch, heads, seqlen] layout (FlashAttention-2's dot kernel writes D in rows
  // rounded up to 128: aligned).
  m.lsu_row_stat_rows = [](const TileConfig& c) {
    return static_cast<int>(std::max<int64_t>(1, 32 * c.bwd_block_q / fa2_backward_threads(c)));
  };
  return m;
}

}  // namespace flashsim::sim::kernels
