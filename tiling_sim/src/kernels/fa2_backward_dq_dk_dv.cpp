// FlashAttention-2's main backward kernel (flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel): one CTA per key
// block, query blocks walked from the last one down; P recomputed from lse, dK and dV accumulated in
// registers, dQ added into an fp32 accumulator by atomics (or, with the partials strategy, stored as this key
// block's own partial). MLA (problem.mla): V is the first head_dim_v columns of the K tile, loaded once, and V's
// gradient accumulates into those of dK (the one latent tensor's gradient): no V load or buffer, no dV store.
#include <algorithm>
#include <vector>

#include "fa2_backward_ncu.h"
#include "flashsim/sim/cta_model.h"
#include "measured_steps.h"

namespace flashsim::sim::kernels {

using ref::AccessKind;
using ref::TensorId;

namespace {

double tile_flops(const AttentionProblem& p, int64_t rq, int64_t rk);

// A query block of one CTA as gpu/fa2's backward partitions it: each warp owns m16 tiles of the CTA's keys (dK,
// dV in registers); when there are more warps than key tiles, the warps of a tile split dK / dV's head dim and
// each recomputes the tile's S^T and dP^T. Every warp reads the whole Q and dO block (S^T = K Q^T, dP^T = V
// dO^T) and its head-dim part of them again (dV += P^T dO, dK += dS^T Q); dS goes through shared memory, and
// dQ += dS K reads dS and, for each m16 row tile of queries, K.
CtaStep backward_step(const AttentionProblem& p, const TileConfig& c) {
  const double e = dtype_bytes(p.dtype), d = static_cast<double>(p.head_dim),
               dv = static_cast<double>(p.head_dim_v), br = static_cast<double>(c.bwd_block_q),
               bc = static_cast<double>(c.bwd_block_k);
  const int warps = fa2_backward_threads(c) / 32;
  const double key_tiles = static_cast<double>(ceil_div(c.bwd_block_k, 16));
  const double parts = std::max(1.0, warps / key_tiles);           // warps sharing a key tile
  const double tiles_per_warp = std::max(1.0, key_tiles / warps);  // key tiles a warp owns
  CtaStep s;
  s.warps = warps;
  s.algorithm_flops = tile_flops(p, c.bwd_block_q, c.bwd_block_k);
  s.mma_flops = s.algorithm_flops + (parts - 1) * 2 * br * bc * (d + dv);  // S^T, dP^T once per part
  s.smem_bytes = (warps * br * (d + dv) * (1 + 1 / parts)  // Q, dO for S^T / dP^T, their parts for dK / dV
                  + 2 * br * bc                            // dS written, read for dQ
                  + br / 16 * bc * d                       // K for dQ, per m16 tile of queries
                  + br * (d + dv))                         // cp.async writes of Q, dO
                 * e;
  s.load_bytes = br * (d + dv) * e;
  // Each warp loads the bias / mask elements of its key tile x Br for its own S^T: the warps sharing a key tile
  // (parts) load them each (gpu/fa2/fa2_bwd_kernel.cuh: the P loop is not split by head-dim part).
  s.direct_bytes = score_tile_bytes(p, c.bwd_block_q, c.bwd_block_k) * parts;
  s.syncs = 3;  // Q / dO arrived, dS written, dQ's reads done before the next block's dS
  // Q and dO double-buffered: the next block's load is issued as this one starts.
  s.hide_steps = 1.5;
  // dK, dV (each warp's key tiles, its part of the head dim; MLA: dK alone, dV added into its first dv columns)
  // and S^T, dP^T (its key tiles x Br), fp32 over 32 lanes
  const double acc = tiles_per_warp * ((p.mla ? d : d + dv) * 16 / parts + 2 * 16 * br) / 32;
  set_step_registers(s, p, acc, tiles_per_warp * 16 * br / 32);
  return s;
}

// The launch's CTAs in launch order (key blocks fastest, then the batch, then the grid's heads), each with the
// query-block steps it walks (`group` query heads' for flashsim's kernel), for the measured time model
// (measured_or_chain_time); launches of more than kMaxListedCtas CTAs list their totals alone. A block mask's
// launch lists them from the mask's data (list_block_mask_steps).
void list_steps(KernelLaunch& l, const AttentionProblem& p, const TileConfig& c, int64_t group) {
  WarpSpecializedWork& w = l.ws;
  if (p.block_mask != BroadcastShape::None) return;
  const int64_t batches = p.keys_vary() ? p.batch : 1;  // equal sequences: one pattern for every (b, h)
  // no masked steps listed: a masked step costs a step here (the n4096 causal calibration problems: 0.97 ..
  // 1.10 of the prediction without a masked cost)
  std::vector<std::vector<std::pair<int64_t, int64_t>>> blocks(static_cast<size_t>(batches));
  for (int64_t b = 0; b < batches; ++b)
    for (int64_t n = 0; n < l.grid_x; ++n) {
      const int64_t k0 = n * c.bwd_block_k;
      const auto [m0, m1] = k0 < p.len_k(b)
                                ? visible_query_blocks(p, b, k0, k0 + c.bwd_block_k, c.bwd_block_q)
                                : std::pair<int64_t, int64_t>{0, 0};
      blocks[static_cast<size_t>(b)].emplace_back((m1 - m0) * group, 0);
    }
  list_ctas(w, l, p, c.bwd_block_q, c.bwd_block_k, 1, blocks);  // stages 1: Q and dO double-buffered in all
}

// Under a block mask, each CTA's steps: the visible query blocks of its `group` query heads whose tile with the
// CTA's key block overlaps an active block-mask tile (the others skipped, as the closed form counts them). No
// masked steps, as without a mask (list_steps). Every CTA listed: the mask differs by head and sequence.
template <bool Group>
void list_block_mask_steps(KernelLaunch& l, const AttentionProblem& p, const TileConfig& c,
                           const ProblemData& d) {
  const int64_t group = Group ? p.group_size() : 1, bq = c.bwd_block_q;
  std::vector<std::pair<int64_t, int64_t>> ctas;
  ctas.reserve(static_cast<size_t>(std::min(l.ctas(), WarpSpecializedWork::kMaxListedCtas)));
  for_each_cta(l, [&](int64_t b, int64_t hz, int64_t n) {
    const int64_t k0 = n * c.bwd_block_k, rk = std::min(c.bwd_block_k, p.len_k(b) - k0), lq = p.len_q(b);
    int64_t steps = 0;
    if (rk > 0) {
      const auto [m0, m1] = visible_query_blocks(p, b, k0, k0 + c.bwd_block_k, bq);
      for (int64_t h = hz * group; h < (hz + 1) * group; ++h)
        for (int64_t m = m0; m < m1; ++m)
          steps += tile_active(p, d, b, h, m * bq, std::min(bq, lq - m * bq), k0, rk);
    }
    ctas.emplace_back(steps, 0);
  });
  list_period(l.ws, l, p, bq, c.bwd_block_k, 1, ctas, 1);  // stages 1, as list_steps
}

// The launch of either main kernel but for its grid's heads and its listed steps.
KernelLaunch shared_launch(const AttentionProblem& p, const TileConfig& c) {
  const int64_t e = dtype_bytes(p.dtype), d = p.head_dim, dv = p.head_dim_v;
  const int64_t br = c.bwd_block_q, bc = c.bwd_block_k;
  KernelLaunch l = per_head_launch(p, ceil_div(p.seqlen_k, bc), fa2_backward_threads(c));
  l.accumulator_elems = bc * (p.mla ? d : d + dv) + 2 * br * bc;  // dK, dV (MLA: dK holds dV); S and dP
  l.step = backward_step(p, c);
  l.regs_per_thread = l.step.regs;
  l.smem = {{"Q (double buffer)", 2 * br * d * e},
            {"dO", br * dv * e},
            {"K", bc * d * e},
            {"V", bc * dv * e},
            {"dS", br * bc * e},
            {"P", br * bc * e}};
  if (p.mla) l.smem.erase(l.smem.begin() + 3);  // V is the K tile's first dv columns
  return l;
}

KernelLaunch main_launch(const AttentionProblem& p, const TileConfig& c) {
  KernelLaunch l = shared_launch(p, c);
  list_steps(l, p, c, 1);
  return l;
}

// S = Q K^T, dP = dO V^T, dV += P^T dO, dQ += dS K, dK += dS^T Q: 2 rq rk (3 d + 2 dv)
double tile_flops(const AttentionProblem& p, int64_t rq, int64_t rk) {
  return 2.0 * static_cast<double>(rq) * static_cast<double>(rk) *
         static_cast<double>(3 * p.head_dim + 2 * p.head_dim_v);
}

// The query blocks of [m0, m1) whose tile with key block n (rows [k0, k0 + rk)) query head h computes: all of
// them, or those a block mask leaves active.
std::vector<int64_t> computed_query_blocks(CtaBuilder& x, const TileConfig& c, int64_t b, int64_t h,
                                           int64_t k0, int64_t rk, int64_t m0, int64_t m1) {
  std::vector<int64_t> blocks;
  const int64_t sq = x.p.len_q(b);
  for (int64_t m = m0; m < m1; ++m)
    if (x.tile(b, h, m * c.bwd_block_q, std::min(c.bwd_block_q, sq - m * c.bwd_block_q), k0, rk))
      blocks.push_back(m);
  return blocks;
}

// Query head h's part of key block n's CTA: every computed query block, from the last down.
void query_blocks(CtaBuilder& x, const TileConfig& c, int64_t b, int64_t h, int64_t n,
                  const std::vector<int64_t>& blocks, int64_t rk) {
  const auto& p = x.p;
  const int64_t sq = p.len_q(b);
  for (auto it = blocks.rbegin(); it != blocks.rend(); ++it) {
    const int64_t m = *it;  // FA2 walks the query blocks from the last one down
    const int64_t q0 = m * c.bwd_block_q, rq = std::min(c.bwd_block_q, sq - q0);
    x.add(AccessKind::Load, TensorId::Q, b, h, q0, rq, p.head_dim, x.e);
    x.add(AccessKind::Load, TensorId::dO, b, h, q0, rq, p.head_dim_v, x.e);
    x.add(AccessKind::Load, TensorId::Lse, b, h, q0, rq, 1, 4);
    x.add(AccessKind::Load, TensorId::Delta, b, h, q0, rq, 1, 4);
    if (c.dq_strategy == DqStrategy::Atomic) {
      x.add(AccessKind::Reduce, TensorId::DqAccum, b, h, q0, c.bwd_block_q, p.head_dim, 4);  // unpredicated
    } else {  // this key block's own fp32 partial of dQ: plain stores, no atomics
      x.add(AccessKind::Store, TensorId::DqAccum, b, h, dq_partial_row(p, b, n, q0), rq, p.head_dim, 4);
    }
    x.w->mma_flops += tile_flops(p, rq, rk);
    x.w->exp_ops += static_cast<double>(rq * rk);
    x.w->vector_ops += 3.0 * static_cast<double>(rq * rk);  // P = exp(S - lse): FMA; dS = P o (dP - D)
  }
}

// FA2's CTA (b, query head h, key block n): K and V of h's kv head, dK and dV of h (the expanded per-query-head
// gradients FA2 sums over a GQA group afterwards). Under a block mask K and V are loaded when some tile of
// the key block is computed. MLA: K alone, and dK (V's gradient in its first dv columns).
void main_cta(CtaBuilder& x, const TileConfig& c, int64_t b, int64_t h, int64_t n) {
  const auto& p = x.p;
  const int64_t sk = p.len_k(b), k0 = n * c.bwd_block_k;
  if (k0 >= sk) return;
  const int64_t rk = std::min(c.bwd_block_k, sk - k0), hk = p.kv_head(h);
  const auto [m0, m1] = visible_query_blocks(p, b, k0, k0 + c.bwd_block_k, c.bwd_block_q);
  const auto blocks = computed_query_blocks(x, c, b, h, k0, rk, m0, m1);
  if (!blocks.empty()) {
    x.add(AccessKind::Load, TensorId::K, b, hk, k0, rk, p.head_dim, x.e);
    if (!p.mla) x.add(AccessKind::Load, TensorId::V, b, hk, k0, rk, p.head_dim_v, x.e);
    query_blocks(x, c, b, h, n, blocks, rk);
  }
  x.add(AccessKind::Store, TensorId::dK, b, h, k0, rk, p.head_dim, x.e);
  if (!p.mla) x.add(AccessKind::Store, TensorId::dV, b, h, k0, rk, p.head_dim_v, x.e);
}

// flashsim's CTA (b, kv head hk, key block n) (gpu/fa2/fa2_bwd_kernel.cuh): K and V loaded once, the group's
// query heads walked in order, dK and dV of hk stored once (nothing to sum afterwards).
void group_cta(CtaBuilder& x, const TileConfig& c, int64_t b, int64_t hk, int64_t n) {
  const auto& p = x.p;
  const int64_t sk = p.len_k(b), k0 = n * c.bwd_block_k;
  if (k0 >= sk) return;
  const int64_t rk = std::min(c.bwd_block_k, sk - k0), g = p.group_size();
  const auto [m0, m1] = visible_query_blocks(p, b, k0, k0 + c.bwd_block_k, c.bwd_block_q);
  std::vector<std::vector<int64_t>> blocks;
  bool any = false;
  for (int64_t h = hk * g; h < (hk + 1) * g; ++h) {
    blocks.push_back(computed_query_blocks(x, c, b, h, k0, rk, m0, m1));
    any = any || !blocks.back().empty();
  }
  if (any) {
    x.add(AccessKind::Load, TensorId::K, b, hk, k0, rk, p.head_dim, x.e);
    if (!p.mla) x.add(AccessKind::Load, TensorId::V, b, hk, k0, rk, p.head_dim_v, x.e);
    for (int64_t h = hk * g; h < (hk + 1) * g; ++h)
      query_blocks(x, c, b, h, n, blocks[static_cast<size_t>(h - hk * g)], rk);
  }
  x.add(AccessKind::Store, TensorId::dK, b, hk, k0, rk, p.head_dim, x.e);
  if (!p.mla) x.add(AccessKind::Store, TensorId::dV, b, hk, k0, rk, p.head_dim_v, x.e);
}

KernelLaunch group_launch(const AttentionProblem& p, const TileConfig& c) {
  KernelLaunch l = shared_launch(p, c);
  l.grid_z = p.heads_kv;
  list_steps(l, p, c, p.group_size());
  return l;
}

// The closed form of a CTA per key block walking `heads` query heads from h0 (FA2's: one, its own; flashsim's:
// a kv head's group), for sequence b: K and V once a key block where some of them computes a block, each query
// block's Q, dO, lse, Delta and dQ, then dK and dV. Linear in the rows: a key block's query blocks summed, not
// walked one by one (a 1M-key launch 0.02 s, where building flashsim's CTAs took 9 s). Under a block mask the
// tiles the mask leaves active alone (x.head: the head, or kv head, counted).
void key_block_sequence(SequenceCounter& x, const AttentionProblem& p, const TileConfig& c, int64_t b,
                        int64_t h0, int64_t heads) {
  const int e = dtype_bytes(p.dtype);
  const int64_t sq = p.len_q(b), sk = p.len_k(b), d = p.head_dim, dv = p.head_dim_v, bq = c.bwd_block_q;
  const bool masked = p.block_mask != BroadcastShape::None;
  for (int64_t k0 = 0; k0 < sk; k0 += c.bwd_block_k) {
    const int64_t rk = std::min(c.bwd_block_k, sk - k0);
    const auto [m0, m1] = visible_query_blocks(p, b, k0, k0 + c.bwd_block_k, bq);
    // Query blocks computed over the heads and their rows: every visible block of each, or those a block mask
    // leaves active.
    int64_t nb = (m1 - m0) * heads, rq = block_rows(m0, m1, bq, sq) * heads;
    if (masked) {
      nb = rq = 0;
      for (int64_t h = h0; h < h0 + heads; ++h)
        for (int64_t m = m0; m < m1; ++m) {
          const int64_t r = std::min(bq, sq - m * bq);
          if (x.tile(p, b, h, m * bq, r, k0, rk)) {
            ++nb;
            rq += r;
          }
        }
    } else {
      x.k.tiles += nb;
    }
    if (nb > 0) {
      x.load(TensorId::K, rk, d, e);
      if (!p.mla) x.load(TensorId::V, rk, dv, e);
    }
    x.load(TensorId::Q, rq, d, e);
    x.load(TensorId::dO, rq, dv, e);
    x.load(TensorId::Lse, rq, 1, 4);
    x.load(TensorId::Delta, rq, 1, 4);
    if (c.dq_strategy == DqStrategy::Atomic) {
      x.reduce(TensorId::DqAccum, nb * bq, d, 4);  // unpredicated: whole blocks
    } else {
      x.store(TensorId::DqAccum, rq, d, 4);
    }
    x.cta_work(tile_flops(p, rq, rk));
    x.k.mma_flops += tile_flops(p, rq, rk);
    x.k.exp_ops += static_cast<double>(rq * rk);
    x.k.vector_ops += 3.0 * static_cast<double>(rq * rk);
  }
  x.store(TensorId::dK, sk, d, e);
  if (!p.mla) x.store(TensorId::dV, sk, dv, e);
}

void main_sequence(SequenceCounter& x, const AttentionProblem& p, const TileConfig& c, int64_t b) {
  key_block_sequence(x, p, c, b, x.head, 1);
}

void group_sequence(SequenceCounter& x, const AttentionProblem& p, const TileConfig& c, int64_t b) {
  key_block_sequence(x, p, c, b, x.head * p.group_size(), p.group_size());
}

}  // namespace

KernelModel fa2_backward_dq_dk_dv() {
  KernelModel m = fa2_backward_model(
      "bwd_dq_dk_dv",
      "FA2 backward 2/3: a key block per CTA, dK and dV stored, dQ reduced into the fp32 accumulator",
      // then (optionally) the template flags after the traits: Is_dropout, Is_causal, Is_local, ...
      FLASHSIM_FA2_BWD_NCU_PATTERN(
          "flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel") R"((?:[^>]*>>\s*,\s*(\d+)\s*,\s*(\d+)\s*,\s*(\d+))?)");
  m.ncu_names[0].causal_group = 6;
  m.ncu_names[0].local_group = 7;
  m.work_blocks = WorkBlocks::Backward;
  m.backward_mma_rate = true;
  m.block_sparse = true;
  m.launch = main_launch;
  m.list_block_mask_steps = list_block_mask_steps<false>;
  m.cta = main_cta;
  m.sequence = main_sequence;
  m.time_model = measured_or_chain_time;
  m.tile_rule = fa2_backward_tile_rule;
  return m;
}

KernelModel fa2_backward_dq_dk_dv_group() {
  KernelModel m = fa2_backward_model("bwd_dq_dk_dv_group",
                                     "flashsim's FA2 backward 2/3 (gpu/fa2): a CTA per (key block, kv head) "
                                     "walking its group's query heads: "
                                     "K, V, dK, dV once per kv head",
                                     FLASHSIM_GPU_BWD_NCU_PATTERN("flashsim_fa2_bwd_main_kernel"));
  m.algorithm.reset();  // not a step of the reference's FA2 backward: by name only (sim predict --kernel)
  m.work_blocks = WorkBlocks::Backward;
  m.backward_mma_rate = true;
  m.block_sparse = true;
  m.per_kv_head = true;
  m.launch = group_launch;
  m.list_block_mask_steps = list_block_mask_steps<true>;
  m.cta = group_cta;
  m.sequence = group_sequence;
  m.time_model = measured_or_chain_time;
  m.tile_rule = fa2_backward_tile_rule;
  return m;
}

}  // namespace flashsim::sim::kernels
