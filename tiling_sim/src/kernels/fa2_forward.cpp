// FlashAttention-2's forward (flash_fwd_kernel): a query block per CTA, key blocks streamed once with the
// online softmax, O written once.
#include <algorithm>

#include "flashsim/sim/cta_model.h"
#include "key_streaming.h"
#include "measured_steps.h"

namespace flashsim::sim::kernels {

namespace {
// flash_fwd_kernel<Flash_fwd_kernel_traits<kHeadDim, kBlockM, kBlockN, kNWarps, ...>>: Br, Bc, warps.
TileConfig from_fwd_traits(const std::smatch& m, const std::string& name) {
  TileConfig c;
  c.block_q = ncu_template_int(m[2], name);
  c.block_k = ncu_template_int(m[3], name);
  c.warps = static_cast<int>(ncu_template_int(m[4], name));
  return checked_ncu_config(c, name);
}
// flashsim_fa2_fwd_kernel<kHeadDim, kBlockM, kBlockN, kNWarps, kStages, ...>: FA2's four, then the stages.
TileConfig from_fwd_v1_traits(const std::smatch& m, const std::string& name) {
  TileConfig c = from_fwd_traits(m, name);
  c.stages = static_cast<int>(ncu_template_int(m[5], name));
  return checked_ncu_config(c, name);
}
// A key block of one CTA as gpu/fa2's forward (FlashAttention-2's warp partition) runs it: warp w owns Br / warps
// query rows (whole m16 tiles), reads the whole K and V block from shared memory and, unless Q stays in
// registers, its Q rows again, for S = Q K^T and O += P V. MLA: the V block is the K tile's first dv columns
// (read again from shared memory for P V), so a step loads K alone.
CtaStep forward_step(const AttentionProblem& p, const TileConfig& c) {
  const double e = dtype_bytes(p.dtype), d = static_cast<double>(p.head_dim),
               dv = static_cast<double>(p.head_dim_v), bc = static_cast<double>(c.block_k);
  const int64_t rows = (ceil_div(c.block_q, c.warps) + 15) / 16 * 16;  // a warp's rows in whole m16 tiles
  const double r = static_cast<double>(rows), w = c.warps;
  CtaStep s;
  s.warps = c.warps;
  s.algorithm_flops = 2.0 * static_cast<double>(c.block_q) * bc * (d + dv);  // 2 Br Bc (d + dv)
  s.mma_flops = 2.0 * r * w * bc * (d + dv);
  // ldmatrix: every warp reads K and V (and its Q rows). The cp.async fills of K and V are not counted: ncu's
  // shared-memory wavefronts are the same for Br128 w8 and Br64 w4 (which fills twice as often per FLOP) at d64,
  // d128 and d256 (calibration fa2.fwd_smem_model). Measured on the forward only: the
  // backward's model keeps its Q / dO fills (without them its ranking gets worse).
  s.smem_bytes = (w * (bc * (d + dv) + (c.q_in_registers ? 0.0 : r * d))) * e;
  s.load_bytes = bc * (p.mla ? d : d + dv) * e;  // the K and V tiles (MLA: K's, which holds V)
  s.direct_bytes = score_tile_bytes(p, c.block_q, c.block_k);
  // A warp's instructions a step: its m16n8k16 MMAs (2048 multiply-adds each), its ldmatrix.x4 of K and V (512
  // bytes each, with their address arithmetic: 2) and of Q, 7 a score for the softmax (scale, max, subtract, ex2,
  // sum, convert, pack; 4 more to load and apply a bias or mask element), 1 per O element for the rescale, and 60
  // for the loop, barriers and copies. Against ncu's instruction counts of fa2-v1's forward at every tile (stages
  // 1): calibration fa2.fwd_smem_model.
  const double hmma = r * bc * (d + dv) / 2048, ldsm_kv = bc * (d + dv) * e / 512,
               ldsm_q = c.q_in_registers ? 0.0 : r * d * e / 512;
  const double per_score = 7 + (s.direct_bytes > 0 ? 4 : 0);
  s.warp_instructions = hmma + 2 * ldsm_kv + ldsm_q + per_score * r * bc / 32 + r * dv / 32 + 60;
  // FA2's two barriers a key block (K arrived, V arrived; MLA: the tile arrived, its buffer free for the next);
  // one more to free a shared K/V buffer for V.
  s.syncs = c.kv_shared_buffer && !p.mla ? 3 : 2;
  // One K/V buffer each (stages 1): the next K is issued after S = Q K^T, hidden by softmax and P V (about half
  // a step); each further stage hides a whole step more; a shared K/V buffer leaves only the softmax (a
  // quarter) between V's issue and P V. MLA: both products read the one tile, so the next is issued after P V
  // into the same buffer (stages 1: nothing hides it), or a step ahead into another stage's.
  s.hide_steps = p.mla                ? static_cast<double>(c.stages) - 1.0
                 : c.kv_shared_buffer ? 0.25
                                      : static_cast<double>(c.stages) - 0.5;
  // O (rows x dv) and S (rows x Bc) in fp32 over the warp's 32 lanes; Q's rows in the input dtype when held.
  const double acc = r * (dv + bc) / 32 + (c.q_in_registers ? r * d * e / 4 / 32 : 0.0);
  set_step_registers(s, p, acc, r * bc / 32);
  // A spilled register is stored and reloaded once a step (the SASS of the spilling kernels: 1 .. 1.5 local loads
  // and stores a key block per spilled register).
  s.warp_instructions += 2 * spilled_registers(s.accumulator_regs);
  return s;
}

// A query block's key blocks as gpu/fa2's forward walks them: the visible ones [n_min, n_max) of rows
// [q0, q0 + Br), of which those outside [full_lo, full_hi) cross a window limit of some row or the end of the keys
// (their scores masked one by one).
struct QueryBlockKeys {
  int64_t n_min, n_max, full_lo, full_hi;
};
QueryBlockKeys query_block_keys(const AttentionProblem& p, const TileConfig& c, int64_t b, int64_t q0) {
  const auto [n_min, n_max] = visible_key_blocks(p, b, q0, q0 + c.block_q, c.block_k);
  const int64_t lk = p.len_k(b), shift = lk - p.len_q(b), bc = c.block_k;
  const int64_t left_max = p.window_left < 0 ? 0 : q0 + c.block_q - 1 + shift - p.window_left;
  const int64_t right_min = p.window_right < 0 ? lk : std::min(lk, q0 + shift + p.window_right + 1);
  return {n_min, n_max, left_max <= 0 ? 0 : std::min(ceil_div(left_max, bc), n_max),
          right_min < bc ? 0 : right_min / bc};
}

// A query block's key-block steps and those that mask scores element by element. In O(1), not a block at a time:
// a 10M-key problem has 1e5 key blocks a query block.
std::pair<int64_t, int64_t> query_block_steps(const AttentionProblem& p, const TileConfig& c, int64_t b,
                                              int64_t q0) {
  const QueryBlockKeys k = query_block_keys(p, c, b, q0);
  return {k.n_max - k.n_min, blocks_outside(k.n_min, k.n_max, k.full_lo, k.full_hi)};
}

// The launch's CTAs in launch order (query blocks fastest, then the batch, then the heads) with their key-block
// steps and masked steps, for the measured time model (measured_or_chain_time); launches of more than
// kMaxListedCtas CTAs list their totals alone. A block mask's launch lists them from the mask's data
// (list_block_mask_steps).
void list_steps(KernelLaunch& l, const AttentionProblem& p, const TileConfig& c) {
  WarpSpecializedWork& w = l.ws;
  if (p.block_mask != BroadcastShape::None) return;
  const int64_t batches = p.keys_vary() ? p.batch : 1;  // equal sequences: one pattern for every (b, h)
  std::vector<std::vector<std::pair<int64_t, int64_t>>> blocks(static_cast<size_t>(batches));
  for (int64_t b = 0; b < batches; ++b)
    for (int64_t m = 0; m < l.grid_x; ++m)
      blocks[static_cast<size_t>(b)].push_back(m * c.block_q < p.len_q(b)
                                                   ? query_block_steps(p, c, b, m * c.block_q)
                                                   : std::pair<int64_t, int64_t>{0, 0});
  list_ctas(w, l, p, c.block_q, c.block_k, c.stages, blocks);
}

// Under a block mask, each CTA's steps as gpu/fa2's forward walks them: the visible key blocks whose tile with
// the CTA's rows overlaps an active block-mask tile (the others skipped, as the closed form counts them), of which
// masked those crossing a window limit or the keys' end and those not every block-mask tile of which is active
// (the kernel then tests each score against the mask). Every CTA listed: the mask differs by head and sequence.
void list_block_mask_steps(KernelLaunch& l, const AttentionProblem& p, const TileConfig& c,
                           const ProblemData& d) {
  std::vector<std::pair<int64_t, int64_t>> ctas;
  ctas.reserve(static_cast<size_t>(std::min(l.ctas(), WarpSpecializedWork::kMaxListedCtas)));
  for_each_cta(l, [&](int64_t b, int64_t h, int64_t m) {
    const int64_t q0 = m * c.block_q, rq = std::min(c.block_q, p.len_q(b) - q0), lk = p.len_k(b);
    if (rq <= 0) {
      ctas.emplace_back(0, 0);
      return;
    }
    const QueryBlockKeys k = query_block_keys(p, c, b, q0);
    int64_t steps = 0, masked = 0;
    for (int64_t n = k.n_min; n < k.n_max; ++n) {
      const int64_t k0 = n * c.block_k, rk = std::min(c.block_k, lk - k0);
      if (!tile_active(p, d, b, h, q0, rq, k0, rk)) continue;
      ++steps;
      if (n < k.full_lo || n >= k.full_hi || !tile_fully_active(p, d, b, h, q0, rq, k0, rk)) ++masked;
    }
    ctas.emplace_back(steps, masked);
  });
  list_period(l.ws, l, p, c.block_q, c.block_k, c.stages, ctas, 1);
}

KernelLaunch forward_launch(const AttentionProblem& p, const TileConfig& c) {
  KernelLaunch l = key_streaming_launch(p, c);
  l.step = forward_step(p, c);
  l.regs_per_thread = l.step.regs;
  list_steps(l, p, c);
  return l;
}

}  // namespace

KernelModel fa2_forward() {
  KernelModel m = key_streaming_model<1>(
      "fwd_fa2", Algorithm::Fa2, "FA2 forward: Q block resident, K/V blocks streamed, O and lse stored once");
  // Dao-AILab's kernel (PyTorch's SDPA flash backend builds the same): head dim, Br, Bc, warps.
  m.launch = forward_launch;
  // lse: the lanes of a warp's m16 tile's first column, 8 rows a store instruction
  m.lsu_row_stat_rows = [](const TileConfig&) { return 8; };
  m.time_model = measured_or_chain_time;
  m.list_block_mask_steps = list_block_mask_steps;
  m.tile_rule = fa2_forward_tile_rule;
  // Then (optionally) the template flags after the traits: Is_dropout, Is_causal, Is_local, ... (traffic compare
  // checks --causal / --window against them).
  m.ncu_names = {{R"(flash_fwd_kernel<Flash_fwd_kernel_traits<\s*(\d+),\s*(\d+),\s*(\d+),\s*(\d+))"
                  R"((?:[^>]*>>\s*,\s*(\d+)\s*,\s*(\d+)\s*,\s*(\d+))?)",
                  from_fwd_traits, 1, 6, 7, true}};
  return m;
}

// flashsim's forward (gpu/fa2), whose first four template arguments are FA2's (head dim, Br, Bc, warps): the same
// moves and chain, its own measured costs (its masked steps cost 1.4 .. 9x a plain step, FA2's 0.6 .. 1.5x:
// calibration fa2.step_costs_h100).
KernelModel fa2_v1_forward() {
  KernelModel m = fa2_forward();
  m.name = "fwd_fa2_v1";
  m.summary =
      "flashsim's FA2 forward (gpu/fa2): Q block resident, K/V blocks streamed, O and lse stored once";
  m.algorithm.reset();  // by name only (sim predict --kernel), as the other gpu/ kernels' models
  m.ncu_names = {
      {R"(flashsim_fa2_fwd_kernel<\s*(\d+),\s*(\d+),\s*(\d+),\s*(\d+),\s*(\d+))", from_fwd_v1_traits, 1}};
  return m;
}

}  // namespace flashsim::sim::kernels
