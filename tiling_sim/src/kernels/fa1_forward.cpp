// FlashAttention (v1)'s loop order: one CTA per (batch, head), key blocks outer; for each key block the query
// blocks that see it are loaded with their partial O, row max and row sum, updated and written back. MLA
// (problem.mla): the key block's V is its K tile's first head_dim_v columns: no V load, no V buffer.
#include <algorithm>
#include <vector>

#include "kernels.h"

namespace flashsim::sim::kernels {

using ref::AccessKind;
using ref::TensorId;

namespace {

KernelLaunch fa1_launch(const AttentionProblem& p, const TileConfig& c) {
  const int64_t e = dtype_bytes(p.dtype), d = p.head_dim, dv = p.head_dim_v;
  KernelLaunch l = per_head_launch(p, 1, c.warps * 32);
  l.smem = {{"Q", c.block_q * d * e},
            {"K", c.block_k * d * e},
            {"V", c.block_k * dv * e},
            {"O", c.block_q * dv * 4},
            {"m, l", c.block_q * 8}};
  if (p.mla) l.smem.erase(l.smem.begin() + 2);  // V is the K tile's first dv columns
  return l;
}

void fa1_cta(CtaBuilder& x, const TileConfig& c, int64_t b, int64_t h, int64_t) {
  const auto& p = x.p;
  const int64_t sq = p.len_q(b), sk = p.len_k(b), hk = p.kv_head(h);
  for (int64_t k0 = 0; k0 < sk; k0 += c.block_k) {
    const int64_t rk = std::min(c.block_k, sk - k0);
    const auto [m0, m1] = visible_query_blocks(p, b, k0, k0 + rk, c.block_q);
    std::vector<int64_t> blocks;  // the query blocks computed against this key block (block mask)
    for (int64_t m = m0; m < m1; ++m)
      if (x.tile(b, h, m * c.block_q, std::min(c.block_q, sq - m * c.block_q), k0, rk)) blocks.push_back(m);
    if (blocks.empty()) continue;
    x.add(AccessKind::Load, TensorId::K, b, hk, k0, rk, p.head_dim, x.e);
    if (!p.mla) x.add(AccessKind::Load, TensorId::V, b, hk, k0, rk, p.head_dim_v, x.e);
    for (const int64_t m : blocks) {
      const int64_t q0 = m * c.block_q, rq = std::min(c.block_q, sq - q0);
      x.add(AccessKind::Load, TensorId::Q, b, h, q0, rq, p.head_dim, x.e);
      x.add(AccessKind::Load, TensorId::O, b, h, q0, rq, p.head_dim_v, x.out_e());
      x.add(AccessKind::Load, TensorId::RowMax, b, h, q0, rq, 1, 4);
      x.add(AccessKind::Load, TensorId::RowSum, b, h, q0, rq, 1, 4);
      x.add(AccessKind::Store, TensorId::O, b, h, q0, rq, p.head_dim_v, x.out_e());
      x.add(AccessKind::Store, TensorId::RowMax, b, h, q0, rq, 1, 4);
      x.add(AccessKind::Store, TensorId::RowSum, b, h, q0, rq, 1, 4);
      // S = Q K^T and O += P V: 2 rq rk (d + dv)
      x.w->mma_flops += 2.0 * static_cast<double>(rq) * static_cast<double>(rk) *
                        static_cast<double>(p.head_dim + p.head_dim_v);
      x.w->exp_ops += static_cast<double>(rq * rk);
    }
  }
}

void fa1_sequence(SequenceCounter& x, const AttentionProblem& p, const TileConfig& c, int64_t b) {
  const int e = dtype_bytes(p.dtype);
  const int64_t sq = p.len_q(b), sk = p.len_k(b), d = p.head_dim, dv = p.head_dim_v;
  const bool masked = p.block_mask != BroadcastShape::None;
  double work = 0;  // the one CTA of (b, h)
  for (int64_t k0 = 0; k0 < sk; k0 += c.block_k) {
    const int64_t rk = std::min(c.block_k, sk - k0);
    const auto [m0, m1] = visible_query_blocks(p, b, k0, k0 + rk, c.block_q);
    // Query blocks computed and their rows: every visible block, or those a block mask leaves active.
    int64_t nb = m1 - m0, rq = block_rows(m0, m1, c.block_q, sq);
    if (masked) {
      nb = rq = 0;
      for (int64_t m = m0; m < m1; ++m) {
        const int64_t r = std::min(c.block_q, sq - m * c.block_q);
        if (x.tile(p, b, x.head, m * c.block_q, r, k0, rk)) {
          ++nb;
          rq += r;
        }
      }
    } else if (nb > 0) {
      x.k.tiles += nb;
    }
    if (nb <= 0) continue;
    x.load(TensorId::K, rk, d, e);
    if (!p.mla) x.load(TensorId::V, rk, dv, e);
    x.load(TensorId::Q, rq, d, e);
    for (auto dir : {&TensorTraffic::load, &TensorTraffic::store}) {
      x.add(dir, TensorId::O, rq, dv, dtype_bytes(p.output_dtype()));
      x.add(dir, TensorId::RowMax, rq, 1, 4);
      x.add(dir, TensorId::RowSum, rq, 1, 4);
    }
    const double pairs = static_cast<double>(rq) * static_cast<double>(rk);
    x.k.mma_flops += 2.0 * pairs * static_cast<double>(d + dv);
    x.k.exp_ops += pairs;
    work += 2.0 * pairs * static_cast<double>(d + dv);
  }
  x.cta_work(work);
}

}  // namespace

KernelModel fa1_forward() {
  KernelModel m;
  m.name = "fwd_fa1";
  m.algorithm = Algorithm::Fa1;
  m.summary = "FA1 forward: key blocks outer, O, row max and row sum re-read and re-written per key block";
  m.block_sparse = true;
  m.launch = fa1_launch;
  m.tile_rule = mma16_forward_tile_rule;
  m.cta = fa1_cta;
  m.sequence = fa1_sequence;
  return m;
}

}  // namespace flashsim::sim::kernels
