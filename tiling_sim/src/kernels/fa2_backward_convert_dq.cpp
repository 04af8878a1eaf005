// FlashAttention-2's last backward kernel (flash_bwd_convert_dq_kernel): the fp32 dQ accumulator converted to
// the input dtype; with the partials strategy, the key blocks' partials summed in key-block order first.
#include <algorithm>

#include "fa2_backward_ncu.h"

namespace flashsim::sim::kernels {

using ref::AccessKind;
using ref::TensorId;

namespace {

KernelLaunch convert_launch(const AttentionProblem& p, const TileConfig& c) {
  KernelLaunch l = per_head_launch(p, ceil_div(p.seqlen_q, c.bwd_block_q), fa2_backward_threads(c));
  l.smem = {{"dQ", c.bwd_block_q * p.head_dim * dtype_bytes(p.dtype)}};
  return l;
}

// kSequenceRows: the accumulator's rows of the sequence alone are read (flashsim's kernel), else the whole
// Br-row tile of the padded accumulator (FlashAttention-2's: through shared memory, only dQ's store predicated).
template <bool kSequenceRows>
void convert_cta(CtaBuilder& x, const TileConfig& c, int64_t b, int64_t h, int64_t m) {
  const auto& p = x.p;
  const int64_t sq = p.len_q(b), q0 = m * c.bwd_block_q;
  if (q0 >= sq) return;
  const int64_t rq = std::min(c.bwd_block_q, sq - q0);
  if (c.dq_strategy == DqStrategy::Partials) {
    // The partials of every key block that sees this query block, summed in key-block order
    // (deterministic), then converted.
    // Under a block mask only the key blocks whose tile the main kernel computed stored a partial.
    const auto [n0, n1] = visible_key_blocks(p, b, q0, q0 + c.bwd_block_q, c.bwd_block_k);
    for (int64_t n = n0; n < n1; ++n) {
      const int64_t k0 = n * c.bwd_block_k;
      if (x.data && !tile_active(p, *x.data, b, h, q0, rq, k0, std::min(c.bwd_block_k, p.len_k(b) - k0)))
        continue;
      x.add(AccessKind::Load, TensorId::DqAccum, b, h, dq_partial_row(p, b, n, q0), rq, p.head_dim, 4);
    }
    x.add(AccessKind::Store, TensorId::dQ, b, h, q0, rq, p.head_dim, x.e);
    return;
  }
  const int64_t rows = kSequenceRows ? rq : std::min(c.bwd_block_q, dq_accum_padded_rows(sq) - q0);
  x.add(AccessKind::Load, TensorId::DqAccum, b, h, q0, rows, p.head_dim, 4);
  x.add(AccessKind::Store, TensorId::dQ, b, h, q0, rq, p.head_dim, x.e);
}

template <bool kSequenceRows>
void convert_sequence(SequenceCounter& x, const AttentionProblem& p, const TileConfig& c, int64_t b) {
  const int e = dtype_bytes(p.dtype);
  const int64_t sq = p.len_q(b), d = p.head_dim;
  if (c.dq_strategy == DqStrategy::Partials) {
    for (int64_t q0 = 0; q0 < sq; q0 += c.bwd_block_q) {
      const int64_t rq = std::min(c.bwd_block_q, sq - q0);
      const auto [n0, n1] = visible_key_blocks(p, b, q0, q0 + c.bwd_block_q, c.bwd_block_k);
      int64_t nb = n1 - n0;
      if (x.data && p.block_mask != BroadcastShape::None) {
        nb = 0;
        for (int64_t n = n0; n < n1; ++n) {
          const int64_t k0 = n * c.bwd_block_k;
          nb += tile_active(p, *x.data, b, x.head, q0, rq, k0, std::min(c.bwd_block_k, p.len_k(b) - k0)) ? 1
                                                                                                         : 0;
        }
      }
      x.load(TensorId::DqAccum, nb * rq, d, 4);
    }
    x.store(TensorId::dQ, sq, d, e);
    return;
  }
  x.load(TensorId::DqAccum,
         kSequenceRows ? sq : std::min(dq_accum_padded_rows(sq), ceil_div(sq, c.bwd_block_q) * c.bwd_block_q),
         d, 4);
  x.store(TensorId::dQ, sq, d, e);
}

}  // namespace

KernelModel fa2_backward_convert_dq() {
  KernelModel m = fa2_backward_model(
      "bwd_convert_dq",
      "FA2 backward 3/3: the fp32 dQ accumulator (or the partials, summed) converted and stored",
      FLASHSIM_FA2_BWD_NCU_PATTERN("flash_bwd_convert_dq_kernel"));
  m.block_sparse = true;  // reads only the partials of computed tiles
  m.launch = convert_launch;
  m.cta = convert_cta<false>;
  m.sequence = convert_sequence<false>;
  return m;
}

// fa2-v1's convert kernel reads the accumulator's rows of the sequence: it once read the padded tile's rows
// without using them and nvcc dropped those loads (ncu: 0.96 .. 0.98x the padded tile's bytes at lengths off
// the tile, issue 31), and now loads only the rows it stores.
KernelModel fa2_backward_convert_dq_rows() {
  KernelModel m = fa2_backward_model("bwd_convert_dq_rows",
                                     "flashsim's FA2 backward 3/3 (gpu/fa2): the fp32 dQ accumulator's "
                                     "sequence rows (or the partials, summed) "
                                     "converted and stored",
                                     FLASHSIM_GPU_BWD_NCU_PATTERN("flashsim_fa2_bwd_convert_kernel"));
  m.algorithm.reset();  // not a step of the reference's FA2 backward: by name only (sim predict --kernel)
  m.block_sparse = true;
  m.launch = convert_launch;
  m.cta = convert_cta<true>;
  m.sequence = convert_sequence<true>;
  return m;
}

}  // namespace flashsim::sim::kernels
