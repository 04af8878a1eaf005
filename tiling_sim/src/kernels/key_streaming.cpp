// The key-streaming forward kernels' launch, CTA moves and closed form (key_streaming.h).
#include "key_streaming.h"

#include <algorithm>
#include <vector>

namespace flashsim::sim::kernels {

using ref::AccessKind;
using ref::TensorId;

KernelLaunch key_streaming_launch(const AttentionProblem& p, const TileConfig& c) {
  const int64_t e = dtype_bytes(p.dtype), d = p.head_dim, dv = p.head_dim_v;
  KernelLaunch l = per_head_launch(p, ceil_div(p.seqlen_q, c.block_q), c.warps * 32);
  l.regs_per_thread = 255;
  // O (Br x dv) and S/P (Br x Bc) in fp32; Q too when kept in registers (in the input dtype).
  l.accumulator_elems = c.block_q * (dv + c.block_k) + (c.q_in_registers ? c.block_q * d * e / 4 : 0);
  const int64_t q = c.block_q * d * e, k = c.block_k * d * e * c.stages, v = c.block_k * dv * e * c.stages;
  if (p.mla) {  // V is the K tile's first dv columns
    l.smem = {{"Q", q}, {"K", k}};
  } else if (c.kv_shared_buffer) {
    l.smem = {{"Q", q}, {"KV", std::max(k, v)}};
  } else {
    l.smem = {{"Q", q}, {"K", k}, {"V", v}};
  }
  if (c.q_in_registers) l.smem[0].bytes = std::max<int64_t>(0, q - l.smem[1].bytes);  // Q shares K's buffer
  return l;
}

void key_streaming_cta(CtaBuilder& x, const TileConfig& c, int64_t b, int64_t h, int64_t m, int passes) {
  const auto& p = x.p;
  const int64_t sq = p.len_q(b), sk = p.len_k(b), q0 = m * c.block_q;
  if (q0 >= sq) return;
  const int64_t rq = std::min(c.block_q, sq - q0), hk = p.kv_head(h);
  const auto [n0, n1] = visible_key_blocks(p, b, q0, q0 + c.block_q, c.block_k);
  // The key blocks the CTA computes: the visible ones whose tile a block mask leaves active.
  std::vector<int64_t> blocks;
  for (int64_t n = n0; n < n1; ++n)
    if (x.tile(b, h, q0, rq, n * c.block_k, std::min(c.block_k, sk - n * c.block_k))) blocks.push_back(n);
  const auto nb = static_cast<int64_t>(blocks.size());
  if (nb > 0) {
    x.add(AccessKind::Load, TensorId::Q, b, h, q0, rq, p.head_dim, x.e);
    for (int pass = 1; pass <= passes; ++pass)
      for (int64_t i = 0; i < nb; ++i) {
        // FA2 walks the key blocks from the last visible one down (the masked diagonal block first).
        const int64_t n = blocks[static_cast<size_t>(passes == 1 ? nb - 1 - i : i)];
        const int64_t k0 = n * c.block_k, rk = std::min(c.block_k, sk - k0);
        const bool last = pass == passes;
        x.add(AccessKind::Load, TensorId::K, b, hk, k0, rk, p.head_dim, x.e);
        if (last && !p.mla) x.add(AccessKind::Load, TensorId::V, b, hk, k0, rk, p.head_dim_v, x.e);
        // S = Q K^T in every pass (2 rq rk d); O += P V in the last (2 rq rk dv)
        x.w->mma_flops += 2.0 * static_cast<double>(rq) * static_cast<double>(rk) *
                          static_cast<double>(p.head_dim + (last ? p.head_dim_v : 0));
        if (pass > 1 || passes == 1) x.w->exp_ops += static_cast<double>(rq * rk);
        // Per score: max, scale-and-subtract, sum; per key block: O's rows rescaled.
        if (last)
          x.w->vector_ops += 3.0 * static_cast<double>(rq * rk) + static_cast<double>(rq * p.head_dim_v);
      }
  }
  x.add(AccessKind::Store, TensorId::O, b, h, q0, rq, p.head_dim_v, x.out_e());
  x.add(AccessKind::Store, TensorId::Lse, b, h, q0, rq, 1, 4);
}

void key_streaming_sequence(SequenceCounter& x, const AttentionProblem& p, const TileConfig& c, int64_t b,
                            int passes) {
  const int e = dtype_bytes(p.dtype);
  const int64_t sq = p.len_q(b), sk = p.len_k(b), d = p.head_dim, dv = p.head_dim_v;
  const bool masked = p.block_mask != BroadcastShape::None;
  for (int64_t q0 = 0; q0 < sq; q0 += c.block_q) {
    const int64_t rq = std::min(c.block_q, sq - q0);
    const auto [n0, n1] = visible_key_blocks(p, b, q0, q0 + c.block_q, c.block_k);
    // Key blocks computed and their rows: every visible block, or those a block mask leaves active.
    int64_t nb = n1 - n0, rk = block_rows(n0, n1, c.block_k, sk);
    if (masked) {
      nb = rk = 0;
      for (int64_t n = n0; n < n1; ++n) {
        const int64_t k0 = n * c.block_k, r = std::min(c.block_k, sk - k0);
        if (x.tile(p, b, x.head, q0, rq, k0, r)) {
          ++nb;
          rk += r;
        }
      }
    } else {
      x.k.tiles += nb;
    }
    if (nb > 0) x.load(TensorId::Q, rq, d, e);
    x.load(TensorId::K, rk * passes, d, e);
    if (!p.mla) x.load(TensorId::V, rk, dv, e);  // MLA: the last pass's K tile holds V
    const double pairs = static_cast<double>(rq) * static_cast<double>(rk);
    x.cta_work(2.0 * pairs * static_cast<double>(passes * d + dv));
    x.k.mma_flops += 2.0 * pairs * static_cast<double>(passes * d + dv);
    x.k.exp_ops += pairs * (passes == 1 ? 1 : passes - 1);
    if (nb > 0) x.k.vector_ops += 3.0 * pairs + static_cast<double>(rq * dv * nb);
  }
  x.store(TensorId::O, sq, dv, dtype_bytes(p.output_dtype()));
  x.store(TensorId::Lse, sq, 1, 4);
}

}  // namespace flashsim::sim::kernels
