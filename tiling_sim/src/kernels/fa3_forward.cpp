// fa3-v1's forward (gpu/fa3/, flashsim_fa3_fwd_kernel): FlashAttention's forward on Hopper, warp-specialized. A
// CTA is a producer warpgroup (one thread issuing TMA loads) and two consumer warpgroups (64 query rows each,
// wgmma); tiles are (query block, head, batch), numbered with the query block fastest and walked from a
// (head, batch)'s last query block; one CTA a tile, or a persistent grid of one CTA an SM taking tiles gridDim
// apart or, with unequal tiles, by the balanced walk (families/fa3: fa3_fwd_schedule, walk.h). Per tile: Q by
// one TMA load, then the visible key blocks from the last to the first, K and V by TMA each; O and lse stored
// from registers. MLA (problem.mla): V is the first head_dim_v columns of the K tile, so a key block is one TMA
// load of K and V has no buffer of its own.
//
// TMA moves whole tiles: a box of Br (Q) or Bc (K, V) rows starting at the tile's first row of the packed
// [rows, heads, d] tensor. Rows past the sequence's end but inside the tensor (the next sequence's rows, batch
// > 1 or varlen) are read and masked; rows past the tensor's end are zeros that cross to the SM all the same
// (fa3_tiles.h: box_rows). So the L2 -> SM bytes of a tile are its whole boxes, which a query block of a short
// or last sequence makes more than FA2's (whose loads stop at the sequence's end); its L2 lines and DRAM bytes
// the rows inside the tensor.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <mutex>
#include <vector>

#include "fa3_tiles.h"
#include "flashsim/error.h"
#include "flashsim/families/fa3/instances.h"
#include "flashsim/families/fa3/launch.h"
#include "flashsim/families/fa3/walk.h"
#include "flashsim/sim/cta_model.h"
#include "kernels.h"
#include "measured_steps.h"

namespace flashsim::sim::kernels {

namespace {

using ref::AccessKind;
using ref::TensorId;

// The tile a launch runs: the config's own when it has fa3's shape (the ncu name's template arguments give
// one; so does --warps 4 x (1 + Br / 64)), else the instance fa3-v1's launch table picks for the problem
// (families/fa3/launch.h), else FlashAttention-3's rule for a head dim it lacks (Br 128, Bc 128 up to
// d128 and 64 above, two stages).
struct Fa3Shape {
  int64_t br = 128, bc = 128, stages = 2;
  int consumers = 2;
  bool persistent = false;
  int64_t head_group = 0;  // causal / window tile order: (batch, head)s taken this many at a time (0: one)
  int64_t num_m = 0, tiles = 0, grid = 0;
  // the persistent CTAs walk balanced (families/fa3/walk.h: balanced_walk), else static
  bool balanced = false;
};

bool fa3_config(const TileConfig& c) {
  return c.block_q % 64 == 0 && c.warps == 4 * (1 + c.block_q / 64);
}

Fa3Shape fa3_shape(const AttentionProblem& p, const TileConfig& c) {
  Fa3Shape s;
  // fa3-v1's launch (gpu/fa3/fa3_v1.cpp): a window edge past every key is no edge.
  const int64_t span = p.seqlen_q + p.seqlen_k;
  const int64_t wl = p.window_left < span ? p.window_left : -1,
                wr = p.window_right < span ? p.window_right : -1;
  if (fa3_config(c)) {
    s.br = c.block_q;
    s.bc = c.block_k;
    s.stages = c.stages;
  } else if (const Fa3FwdInstance* e = fa3_fwd_launch_instance(
                 static_cast<int>(p.head_dim), p.dtype == DType::BF16, wl >= 0 || wr >= 0,
                 std::max(p.seqlen_q, p.seqlen_k), p.softcap > 0)) {
    s.br = e->block_q;
    s.bc = e->block_k;
    s.stages = e->stages;
  } else {
    s.bc = p.head_dim <= 128 ? 128 : 64;
  }
  s.consumers = static_cast<int>(s.br / 64);
  const bool causal = wl < 0 && wr == 0, windowed = !causal && (wl >= 0 || wr >= 0);
  const Fa3Schedule rule = fa3_fwd_schedule(
      causal, windowed, p.seqlen_k, ceil_div(p.seqlen_q, s.br) * p.heads_q * p.batch, kFa3PersistentCtas,
      2 * p.seqlen_k * p.head_dim * kFa3ElementBytes, kFa3L2Bytes, p.batch * p.heads_q);
  s.persistent = rule.persistent;
  s.head_group = rule.head_group;
  s.num_m = ceil_div(p.seqlen_q, s.br);
  s.tiles = s.num_m * p.heads_q * p.batch;
  s.grid = s.persistent ? std::min(s.tiles, kFa3PersistentCtas) : s.tiles;
  s.balanced = fa3_fwd_walks_balanced(s.persistent && s.grid < s.tiles, causal, p.varlen());
  return s;
}

// The balanced walk of a shape that walks balanced (the launch's: fa3_v1.cpp builds the same), else empty.
std::vector<int32_t> balanced_walk(const Fa3Shape& s, const AttentionProblem& p) {
  return s.balanced ? fa3_forward_walk(p, s.br, s.bc, s.head_group, s.grid) : std::vector<int32_t>{};
}

// Tile t (tile_of in the kernel): query block m = num_m - 1 - t % num_m, then the query head, then the batch;
// with head groups of G (causal and windows: G (batch, head)s whose K and V fit half the L2), each group's
// blocks from the last, the group's heads fastest.
struct TileId {
  int64_t b, h, m;
};
TileId tile_id(const Fa3Shape& s, const AttentionProblem& p, int64_t t) {
  const auto [bh, m] = Fa3TileOrder{s.num_m, p.batch * p.heads_q, s.head_group}(t);
  return {bh / p.heads_q, bh % p.heads_q, m};
}

// The visible key blocks of query block m of sequence b (key_block_range in the kernel: the last row is the
// sequence's, not the box's).
std::pair<int64_t, int64_t> key_blocks(const AttentionProblem& p, const Fa3Shape& s, int64_t b, int64_t m) {
  const int64_t q0 = m * s.br;
  return visible_key_blocks(p, b, q0, std::min(p.len_q(b), q0 + s.br), s.bc);
}

// The key blocks of [n0, n1) that need the per-element mask (block_needs_mask in the kernel: the block runs past
// the keys, or crosses a window edge of some row of the box). Block n needs none when its last column
// n Bc + Bc - 1 is at most R = min(lk - 1, first_row + shift + right) and its first column n Bc at least
// L = last_row + shift - left: n in [ceil(L / Bc), floor((R + 1) / Bc)). In O(1), not a block at a time.
int64_t masked_blocks(const AttentionProblem& p, const Fa3Shape& s, int64_t b, int64_t m, int64_t n0,
                      int64_t n1) {
  const int64_t lq = p.len_q(b), lk = p.len_k(b), shift = lk - lq;
  const int64_t first_row = m * s.br, last_row = first_row + s.br - 1;
  const int64_t right = p.window_right >= 0 ? std::min(lk - 1, first_row + shift + p.window_right) : lk - 1;
  const int64_t full_hi = floor_div(right + 1, s.bc);
  const int64_t full_lo = p.window_left >= 0 ? ceil_div_any(last_row + shift - p.window_left, s.bc) : n0;
  return blocks_outside(n0, n1, full_lo, full_hi);
}

// The launch: 384 threads (a producer and two consumer warpgroups), Q and stages x (K, V) in shared memory, 168
// registers a thread at entry (65536 / 384, rounded to 8: setmaxnreg then gives the producer 24, the consumers
// 240), one CTA an SM. The grid: one CTA a tile, or min(tiles, SMs) persistent CTAs.
KernelLaunch fa3_launch(const AttentionProblem& p, const TileConfig& c) {
  if (p.kv_cache() || c.num_splits > 1)
    throw InputError("kernel", "fwd_fa3 (fa3-v1's forward) has no paged KV cache or split-KV launch");
  const Fa3Shape s = fa3_shape(p, c);
  const int64_t e = dtype_bytes(p.dtype), d = p.head_dim, dv = p.head_dim_v;
  KernelLaunch l;
  l.grid_x = s.grid;
  l.threads = (1 + s.consumers) * 128;
  l.regs_per_thread = static_cast<int>(65536 / l.threads / 8 * 8);
  l.smem = {{"Q", s.br * d * e}, {"K", s.stages * s.bc * d * e}, {"V", s.stages * s.bc * dv * e}};
  if (p.mla) l.smem.pop_back();  // V is the K tile's first dv columns
  WarpSpecializedWork& w = l.ws;
  w.block_q = s.br;
  w.block_k = s.bc;
  w.head_dim = d;
  w.head_dim_v = dv;
  w.stages = s.stages;
  w.consumers = s.consumers;
  w.persistent = s.persistent && s.grid < s.tiles;
  w.softcap = p.softcap > 0;
  w.mla = p.mla;
  // Tiles, steps and masked steps over the launch: one (batch, head)'s query blocks, times the heads (and the
  // batch when the sequences are equal).
  const bool vary = p.keys_vary();
  for (int64_t b = 0; b < (vary ? p.batch : 1); ++b) {
    const double times = static_cast<double>(p.heads_q * (vary ? 1 : p.batch));
    for (int64_t m = 0; m < s.num_m; ++m) {
      if (m * s.br >= p.len_q(b)) continue;  // past a shorter sequence: the CTA skips the tile
      const auto [n0, n1] = key_blocks(p, s, b, m);
      w.tiles += times;
      w.steps += times * static_cast<double>(n1 - n0);
      w.masked_steps += times * static_cast<double>(masked_blocks(p, s, b, m, n0, n1));
    }
  }
  return l;
}

// Stores of each O sector (fa3_tile says why).
constexpr int kOStoresPerSector = 2;

// One tile's moves and work (CtaBuilder), in the producer's order: K of the last visible block, Q, then V of
// the last block and K, V of each block below it; O and lse at the end (rows of the sequence only).
void fa3_tile(CtaBuilder& x, const Fa3Shape& s, const std::vector<int64_t>& cu_q,
              const std::vector<int64_t>& cu_k, int64_t t) {
  const AttentionProblem& p = x.p;
  const auto [b, h, m] = tile_id(s, p, t);
  const int64_t lq = p.len_q(b), lk = p.len_k(b), q0 = m * s.br;
  if (q0 >= lq) return;
  const int64_t rq = std::min(s.br, lq - q0), hk = p.kv_head(h);
  const auto [n0, n1] = key_blocks(p, s, b, m);
  for (int64_t n = n1 - 1; n >= n0; --n) {
    add_box(x, AccessKind::Load, TensorId::K, hk, cu_k, b, n * s.bc, s.bc, p.head_dim);
    if (n == n1 - 1) add_box(x, AccessKind::Load, TensorId::Q, h, cu_q, b, q0, s.br, p.head_dim);
    if (!p.mla) add_box(x, AccessKind::Load, TensorId::V, hk, cu_k, b, n * s.bc, s.bc, p.head_dim_v);
    const double rk = static_cast<double>(std::min(s.bc, lk - n * s.bc)), r = static_cast<double>(rq);
    // The algorithm's FLOPs of the block's rows (the tensor cores run whole tiles; the time model counts those)
    x.w->mma_flops += 2.0 * r * rk * static_cast<double>(p.head_dim + p.head_dim_v);
    x.w->exp_ops += r * rk;
    x.w->vector_ops += 3.0 * r * rk + r * static_cast<double>(p.head_dim_v);
  }
  // O from registers: a quad's 4-byte stores cover 16 bytes of a row, half a 32-byte sector, and the LSU counts
  // the whole sector: each sector is written by two stores of a sector each (ncu on the H100: 67.6 MB of global
  // stores for 33.5 MB of O at b2 h16 n4096 d128; calibration fa3.v1_on_h100).
  for (int half = 0; half < kOStoresPerSector; ++half)
    x.add(AccessKind::Store, TensorId::O, b, h, q0, rq, p.head_dim_v, x.out_e());
  x.add(AccessKind::Store, TensorId::Lse, b, h, q0, rq, 1, 4);
}

void fa3_cta(CtaBuilder& x, const TileConfig& c, int64_t /*b*/, int64_t /*h*/, int64_t cta) {
  const Fa3Shape s = fa3_shape(x.p, c);
  const auto cu_q = x.p.cu_seqlens_q(), cu_k = x.p.cu_seqlens_k();
  if (const std::vector<int32_t> walk = balanced_walk(s, x.p); !walk.empty()) {
    for (int32_t i = walk[static_cast<size_t>(cta)]; i < walk[static_cast<size_t>(cta) + 1]; ++i)
      fa3_tile(x, s, cu_q, cu_k, walk[static_cast<size_t>(i)]);
    return;
  }
  for (int64_t t = cta; t < s.tiles; t += s.grid) fa3_tile(x, s, cu_q, cu_k, t);
}

// The closed form: each (batch, query block)'s bytes and work once, times the query heads; each CTA's work in
// launch order when the CTAs differ; the footprints of Q, K, V, O and lse.
void fa3_counts(KernelCounts& k, const AttentionProblem& p, const TileConfig& c, const ProblemData& /*d*/) {
  const Fa3Shape s = fa3_shape(p, c);
  const int e = dtype_bytes(p.dtype);
  const int64_t d = p.head_dim, dv = p.head_dim_v, hq = p.heads_q;
  const auto cu_q = p.cu_seqlens_q(), cu_k = p.cu_seqlens_k();
  KernelCounts one;  // one query head
  SequenceCounter x{one, nullptr, 0, nullptr};
  // work[b][m]: the algorithm's FLOPs of tile (b, m), any head; its key blocks and masked key blocks.
  std::vector<std::vector<double>> work(static_cast<size_t>(p.batch), std::vector<double>(s.num_m, 0.0));
  auto steps = work, masked = work, live = work;
  for (int64_t b = 0; b < p.batch; ++b) {
    const int64_t lq = p.len_q(b), lk = p.len_k(b);
    for (int64_t m = 0; m < s.num_m; ++m) {
      const int64_t q0 = m * s.br;
      if (q0 >= lq) continue;
      const int64_t rq = std::min(s.br, lq - q0);
      const auto [n0, n1] = key_blocks(p, s, b, m);
      live[b][m] = 1;
      steps[b][m] = static_cast<double>(std::max<int64_t>(0, n1 - n0));
      masked[b][m] = static_cast<double>(masked_blocks(p, s, b, m, n0, n1));
      if (n1 > n0) {
        x.load(TensorId::Q, s.br, d, e);  // whole boxes (fa3_tiles.h: box_rows)
        x.load(TensorId::K, (n1 - n0) * s.bc, d, e);
        if (!p.mla) x.load(TensorId::V, (n1 - n0) * s.bc, dv, e);
        const double pairs = static_cast<double>(rq) * static_cast<double>(block_rows(n0, n1, s.bc, lk));
        work[b][m] = 2.0 * pairs * static_cast<double>(d + dv);
        one.mma_flops += work[b][m];
        one.exp_ops += pairs;
        one.vector_ops += 3.0 * pairs + static_cast<double>(rq * dv * (n1 - n0));
      }
      for (int half = 0; half < kOStoresPerSector; ++half)
        x.store(TensorId::O, rq, dv, dtype_bytes(p.output_dtype()));
      x.store(TensorId::Lse, rq, 1, 4);
    }
  }
  for (size_t t = 0; t < one.tensors.size(); ++t) {
    for (auto dir : {&TensorTraffic::load, &TensorTraffic::store, &TensorTraffic::reduce}) {
      (k.tensors[t].*dir).bytes += (one.tensors[t].*dir).bytes * hq;
      (k.tensors[t].*dir).sectors += (one.tensors[t].*dir).sectors * hq;
    }
  }
  k.mma_flops = one.mma_flops * static_cast<double>(hq);
  k.exp_ops = one.exp_ops * static_cast<double>(hq);
  k.vector_ops = one.vector_ops * static_cast<double>(hq);
  // The CTAs' work in launch order: a tile each (the block scheduler deals them out), or a persistent CTA's
  // tiles summed (its static or balanced walk's). Kept only when the CTAs differ (as the executed count keeps
  // it).
  std::vector<double> ctas(static_cast<size_t>(s.grid), 0.0);
  WarpSpecializedWork& w = k.launch.ws;
  const bool listed = s.grid <= WarpSpecializedWork::kMaxListedCtas;
  if (listed)
    for (auto* v : {&w.cta_tiles, &w.cta_steps, &w.cta_masked}) v->assign(static_cast<size_t>(s.grid), 0.0);
  std::vector<int32_t> cta_of;  // the balanced walk's CTA of each tile
  if (const std::vector<int32_t> walk = balanced_walk(s, p); !walk.empty()) {
    cta_of.assign(static_cast<size_t>(s.tiles), 0);
    for (int64_t cta = 0; cta < s.grid; ++cta)
      for (int32_t i = walk[static_cast<size_t>(cta)]; i < walk[static_cast<size_t>(cta) + 1]; ++i)
        cta_of[static_cast<size_t>(walk[static_cast<size_t>(i)])] = static_cast<int32_t>(cta);
  }
  for (int64_t t = 0; t < s.tiles; ++t) {
    const auto [b, h, m] = tile_id(s, p, t);
    const auto cta = static_cast<size_t>(cta_of.empty() ? t % s.grid : cta_of[static_cast<size_t>(t)]);
    ctas[cta] += work[b][m];
    if (listed) {
      w.cta_tiles[cta] += live[b][m];
      w.cta_steps[cta] += steps[b][m];
      w.cta_masked[cta] += masked[b][m];
    }
  }
  if (std::any_of(ctas.begin(), ctas.end(), [&](double v) { return v != ctas.front(); }))
    k.cta_work = std::move(ctas);
  const auto footprint = [&](TensorId t, int64_t bytes) {
    const auto& tt = k.tensors[static_cast<size_t>(t)];
    if (tt.load.bytes + tt.store.bytes > 0) k.tensors[static_cast<size_t>(t)].unique_bytes = bytes;
  };
  footprint(TensorId::Q, p.total_q() * hq * d * e);
  footprint(TensorId::K, p.total_k() * p.heads_kv * d * e);
  footprint(TensorId::V, p.total_k() * p.heads_kv * dv * e);
  footprint(TensorId::O, p.total_q() * hq * dv * dtype_bytes(p.output_dtype()));
  footprint(TensorId::Lse, p.total_q() * hq * 4);
}

// flashsim_fa3_fwd_kernel<Fa3FwdTraits<kHeadDim, kBlockM, kBlockN, kStages, Element>, kSoftcap>: Br, Bc,
// stages; 4 (1 + Br / 64) warps (the producer and Br / 64 consumer warpgroups).
TileConfig from_fa3_traits(const std::smatch& m, const std::string& name) {
  TileConfig c;
  c.block_q = ncu_template_int(m[2], name);
  c.block_k = ncu_template_int(m[3], name);
  c.stages = static_cast<int>(ncu_template_int(m[4], name));
  if (c.block_q % 64 != 0 || c.block_q > 256)
    throw InputError(
        "ncu", "kernel '" + name.substr(0, 200) + "' has a query tile that is not 64, 128, 192 or 256 rows");
  c.warps = static_cast<int>(4 * (1 + c.block_q / 64));
  return checked_ncu_config(c, name);
}

// ---------------------------------------------------------------------------------------------------- time
// Instructions a consumer thread issues a key block beyond its scores' (the model's counts of the kernel's
// loop: the online softmax's quad shuffles and row statistics, the wgmma descriptors, fences, commits and waits,
// the pipelines' waits and releases, the turn's barrier and the loop), and per score: max, subtract the row max
// and scale ((s - m) scale log2 e: FADD, FMUL), add to the row sum, and half a conversion (two scores a packed
// 16-bit pair): ncu's instruction counts of the d64 forward have 1.03 FMNMX, 1.97 FADD, 1.48 FMUL (O's rescale
// too) and 0.49 F2FP a MUFU.EX2 (calibration fa3.step_costs_h100's run); plus 4 where
// the block masks its scores element by element (index, two compares, select: ncu counts 3.8 a score since the
// kernel tests a range a row, calibration fa3.mask_cost_h200; 13.1 before) and 2 with a softcap (two
// multiplies; its tanh is a second MUFU op).
constexpr double kStepInstructions = 40;
constexpr double kScoreInstructions = 4.5, kMaskInstructions = 4, kSoftcapInstructions = 2;
// Bytes a SM's load/store unit takes a clock: a warp's 32 four-byte stores (the epilogue's O).
constexpr double kStoreBytesPerClock = 128;

// wgmma's FLOPs a clock an SM at N (the profile's table at N = 64, 128, 256; linear between, flat outside).
double wgmma_rate(const std::vector<double>& table, double n) {
  if (n <= 64) return table[0];
  if (n <= 128) return table[0] + (table[1] - table[0]) * (n - 64) / 64;
  if (n <= 256) return table[1] + (table[2] - table[1]) * (n - 128) / 128;
  return table[2];
}

// The per-CTA model of a warp-specialized forward (ping-pong consumers). A key block (step) of one consumer
// warpgroup: S = Q K^T (wgmma SS, N = Bc, d / 16 k-steps) and O += P V (wgmma RS, N = dv, Bc / 16 k-steps)
// take t_qk and t_pv on the SM's tensor pipe; the softmax of S (its scores' instructions, ex2 at the SFU rate;
// a consumer warp is the only one issuing on its scheduler while the other warpgroup multiplies) takes t_s and
// runs under this warpgroup's own P V; then O is rescaled and P converted (t_after), and the turn passes
// (named barrier, K / V mbarriers). The two warpgroups take turns at the tensor cores, so a step of the CTA
// takes
//   P = max(consumers (t_qk + t_pv),  t_qk + max(t_s, t_pv) + t_after + t_sync,  K + V bytes at the TMA rate)
// (tensor-bound, softmax/latency-bound, load-bound), plus, for each step that masks element by element, its
// mask instructions where they lengthen the warpgroup's path. A tile adds its pipeline fill (the TMA latency of
// Q and the first K, hidden behind the previous tile's last P V and epilogue in a persistent CTA, which loads the
// next tile's K and Q early; the first softmax, which has no P V of its own to hide under) and its epilogue (O
// normalized and stored, lse). The SMs' busy time over the resident CTAs, times the launch's imbalance (the
// block scheduler's dealing of unequal tiles, or a persistent CTA's share of them), is the kernel's compute time.
CtaTime fa3_time(const KernelCounts& k, int ctas_per_sm, double imbalance, const HardwareProfile& hw) {
  CtaTime t;
  const WarpSpecializedWork& w = k.launch.ws;
  if (w.tiles <= 0 || w.consumers <= 0 || hw.wgmma_ss_flops_per_clock.size() != 3 ||
      hw.wgmma_rs_flops_per_clock.size() != 3 || hw.clock_hz <= 0 || hw.tma_bytes_per_s <= 0 ||
      ctas_per_sm <= 0)
    return t;
  t.modelled = true;
  const double clk = hw.clock_hz, sms = std::max(1, hw.sms), slots = sms * ctas_per_sm;
  const double bc = static_cast<double>(w.block_k), d = static_cast<double>(w.head_dim),
               dv = static_cast<double>(w.head_dim_v), br = static_cast<double>(w.block_q);
  const double e = 2;                               // wgmma's 16-bit operands
  const double consumers = w.consumers, rows = 64;  // a consumer warpgroup's query rows
  // Tensor pipe, cycles of one warpgroup's GEMMs a step.
  const double t_qk = 2 * rows * bc * d / wgmma_rate(hw.wgmma_ss_flops_per_clock, bc);
  const double t_pv = 2 * rows * bc * dv / wgmma_rate(hw.wgmma_rs_flops_per_clock, dv);
  // The softmax of a consumer thread's scores (64 x Bc over 128 threads), on its warp's scheduler.
  const double scores = rows * bc / 128;
  // ex2 of each score (and its tanh with a softcap), 2 row rescales; the other instructions (+ the wgmma
  // instructions of the turn); a consumer warp alone on its scheduler while the other warpgroup multiplies.
  const auto softmax_cycles = [&](bool softcap) {
    const double mufu = scores * (softcap ? 2 : 1) + 2;
    const double alu = scores * (kScoreInstructions + (softcap ? kSoftcapInstructions : 0)) +
                       kStepInstructions + d / 16 + bc / 16;
    return sfu_issue_cycles(mufu, alu, 1, hw);
  };
  const double t_s = softmax_cycles(w.softcap);
  const double t_after = dv / 2 + scores / 2;  // O rescaled (its fp32 registers), P converted
  const double t_sync = hw.named_barrier_cycles + 2 * hw.mbarrier_cycles;
  const double t_mask = scores * kMaskInstructions;
  // a step's K and V tiles (MLA: K's, which holds V); the TMA's bytes a clock an SM
  const double kv_bytes = bc * (w.mla ? d : d + dv) * e, tma_clk = hw.tma_bytes_per_s / clk;
  const double p_pipe = consumers * (t_qk + t_pv);
  const double p_wg = t_qk + std::max(t_s, t_pv) + t_after + t_sync;
  const double p_load = kv_bytes / tma_clk;
  const double step = std::max({p_pipe, p_wg, p_load});
  const double masked_step = std::max({p_pipe, p_wg + t_mask, p_load});
  // The same step without a softcap (the measured costs' own pipeline).
  const double step_plain =
      std::max({p_pipe, t_qk + std::max(softmax_cycles(false), t_pv) + t_after + t_sync, p_load});
  // A step's K / V load, issued stages - 1 steps ahead of its use: what of its latency the steps do not hide.
  const double tma_latency = hw.tma_latency_s * clk;
  const double step_exposed =
      std::max(0.0, tma_latency + kv_bytes / tma_clk - static_cast<double>(w.stages - 1) * step);
  // A tile: its epilogue (O normalized, packed and stored; lse), its fill.
  const double epilogue = dv / 2 + dv / 4 + 20 + br * dv * e / kStoreBytesPerClock;
  const double q_bytes = br * d * e;
  const double fill_first = tma_latency + (q_bytes + bc * d * e) / tma_clk;  // Q and the first K, from launch
  const double fill_next = std::max(0.0, tma_latency + q_bytes / tma_clk - (consumers * t_pv + epilogue));
  const double first_tiles = w.persistent ? std::min(w.tiles, static_cast<double>(k.launch.ctas())) : w.tiles;
  const double start = hw.step_overhead_cycles + 4 * hw.mbarrier_cycles;  // barriers' init, the CTA's sync
  const double ctas = static_cast<double>(k.launch.ctas());
  const double exposed =
      first_tiles * fill_first + (w.tiles - first_tiles) * fill_next + w.steps * step_exposed;
  const double cycles = w.steps * step + w.masked_steps * (masked_step - step) + w.tiles * (t_s + epilogue) +
                        exposed + ctas * start;
  t.steps = w.steps;
  t.regs = 240;  // a consumer thread's (setmaxnreg)
  t.warps_per_scheduler = ctas_per_sm * (1 + consumers);
  t.t_tensor = w.steps * p_pipe / clk / sms;
  t.t_alu = w.steps * consumers * t_s / clk / sms;
  t.t_chain = cycles / clk / slots;
  t.chain_step_s = step / clk;
  t.exposed_load_s = exposed / std::max(1.0, w.tiles) / clk;  // a tile's
  const double busy = std::max({t.t_tensor, t.t_alu, t.t_chain});
  t.bound = step == p_pipe ? "tensor" : step == p_load ? "tma" : t_s >= t_pv ? "alu" : "chain";
  t.time_s = busy * imbalance;
  // The instance's measured step and tile costs where the profile has them (calibration fa3.step_costs_h100):
  // the estimate above misses where the softmax's dependent instructions, not a unit's rate, set the step (d64:
  // 1.5x: calibration fa3.step_costs_h100). A masked step adds its mask instructions, a softcap its
  // share of the estimate (the calibration has neither).
  WarpSpecializedWork plain = w;
  plain.softcap = false;
  if (const MeasuredSteps* m = find_measured_steps(hw, "fwd_fa3", plain)) {
    const double softcap_extra = w.softcap ? std::max(0.0, step - step_plain) / clk : 0.0;
    t.time_s = measured_makespan(w, *m, softcap_extra, (masked_step - step) / clk,
                                 static_cast<int64_t>(slots), imbalance);
    t.chain_step_s = m->step_s() + softcap_extra;
    t.bound = "measured steps";
    t.measured_on = measured_where(*m);
  }
  return t;
}

}  // namespace

KernelModel fa3_forward() {
  KernelModel m;
  m.name = "fwd_fa3";
  m.pass = Pass::Forward;
  m.summary = "fa3-v1 forward (Hopper): TMA tiles, wgmma, producer + 2 ping-pong consumer warpgroups";
  m.work_blocks = WorkBlocks::Forward;
  m.launch = fa3_launch;
  m.cta = fa3_cta;
  m.counts = fa3_counts;
  m.grid_not_problem_shaped = true;  // the persistent schedule's grid is one CTA a SM
  m.time_model = fa3_time;
  // Demangled as ncu prints it, with or without namespaces, casts or spaces in the template arguments.
  m.ncu_names = {{R"(flashsim_fa3_fwd_kernel\s*<\s*(?:\w+::)*Fa3FwdTraits\s*<\s*(?:\(\w+\)\s*)?(\d+)\s*,\s*)"
                  R"((?:\(\w+\)\s*)?(\d+)\s*,\s*(?:\(\w+\)\s*)?(\d+)\s*,\s*(?:\(\w+\)\s*)?(\d+))",
                  from_fa3_traits, 1}};  // group 1: the head dim
  return m;
}

}  // namespace flashsim::sim::kernels

namespace flashsim::sim {

std::vector<int32_t> fa3_forward_walk(const AttentionProblem& p, int64_t block_q, int64_t block_k,
                                      int64_t head_group, int64_t grid) {
  // The last walk is kept: the executed schedule asks for it once a CTA, the launch once a call. Its key is
  // what the walk reads: the tile order, the costs' lengths and windows, the head dim's overhead.
  std::vector<int64_t> key = {p.batch, p.heads_q,  p.seqlen_q, p.head_dim,    block_q,
                              block_k, head_group, grid,       p.window_left, p.window_right};
  for (int64_t b = 0; b < p.batch; ++b) {
    key.push_back(p.len_q(b));
    key.push_back(p.len_k(b));
  }
  static std::mutex mutex;
  static std::vector<int64_t> last_key;
  static std::vector<int32_t> last_walk;
  const std::lock_guard<std::mutex> lock(mutex);
  if (key == last_key) return last_walk;
  const int64_t num_m = kernels::ceil_div(p.seqlen_q, block_q);
  // cost[b][m]: tile (b, m)'s, any head (a tile past a shorter sequence is skipped: none)
  std::vector<int64_t> cost(static_cast<size_t>(p.batch * num_m), 0);
  for (int64_t b = 0; b < p.batch; ++b)
    for (int64_t m = 0; m < num_m && m * block_q < p.len_q(b); ++m)
      cost[static_cast<size_t>(b * num_m + m)] =
          fa3_tile_cost(m * block_q, std::min(p.len_q(b), (m + 1) * block_q), p.len_q(b), p.len_k(b),
                        p.window_left, p.window_right, block_k, p.head_dim);
  const Fa3TileOrder order{num_m, p.batch * p.heads_q, head_group};
  last_walk = fa3_balanced_walk(num_m * p.batch * p.heads_q, grid, [&](int64_t t) {
    const auto [bh, m] = order(t);
    return cost[static_cast<size_t>(bh / p.heads_q * num_m + m)];
  });
  last_key = std::move(key);
  return last_walk;
}

}  // namespace flashsim::sim
