// fa3-v1's backward (gpu/fa3/, Hopper): after dq_accum is cleared (a memset, no kernel),
//   bwd_fa3_dot_do_o  flashsim_fa3_bwd_dot_do_o_kernel: D = rowsum(dO o O), a warp a (row, head), lane 0 storing
//                     D's 4 bytes (the LSU counts the 32-byte sector of each: ncu, 8x D's bytes);
//   bwd_fa3           flashsim_fa3_bwd_kernel: one CTA a (key block, kv head, batch), a producer and two
//                     consumer warpgroups of 64 key rows; K and V by one TMA box each, then for each query head of
//                     the group and each query block that sees the keys (a step): Q and dO by TMA boxes, lse and
//                     D of the block's rows (the first warp's loads; L1 serves the others), and dQ's partial sum
//                     into dq_accum by bulk reduces of the whole block (the deterministic option: bulk copies to
//                     the key block's own slab); dK and dV stored from registers at the end (4-byte stores, a
//                     quad covering half a sector: each sector counted twice, as the forward's O);
//   bwd_fa3_convert   flashsim_fa3_bwd_convert_dq_kernel: a CTA a (query block, head, sequence) reads the block's
//                     dq_accum whole (each slab of a key block that sees it, deterministic) and stores dQ's rows
//                     of the sequence through shared memory, 16 bytes a thread (each sector once).
// dQ leaves the main kernel through the TMA unit, not the LSU: `traffic compare` holds those bytes to the L2's
// reduce sectors (KernelModel::dq_by_bulk_copy).
#include <fmt/format.h>

#include <algorithm>
#include <vector>

#include "fa3_tiles.h"
#include "flashsim/error.h"
#include "flashsim/families/fa3/instances.h"
#include "flashsim/sim/cta_model.h"
#include "kernels.h"
#include "measured_steps.h"

namespace flashsim::sim::kernels {

namespace {

using ref::AccessKind;
using ref::TensorId;

constexpr int kSectorsPerRowValue = 8;  // a lone 4-byte store moves a 32-byte sector: D of dot_do_o
constexpr int kStoresPerSector = 2;     // 4-byte stores of register pairs, a quad per 16 bytes: dK, dV
constexpr int kRowThreads = 256;        // dot_do_o's CTA: 8 warps, a (row, head) each
constexpr int kConsumerThreads = 256;   // convert_dq's CTA: the main kernel's two consumer warpgroups

// The tile: the config's when it has fa3's shape (12 warps: a producer and two consumer warpgroups, of 64 key
// rows each (Bc 128) or both on 64 keys (Bc 64, the split head dim); the ncu name's template arguments give
// one), else fa3-v1's instance for the head dim (and softcap), else FlashAttention-3's (Br 64, Bc 128, two
// stages).
struct BwdShape {
  int64_t br = 64, bc = 128, stages = 2;
};
BwdShape bwd_shape(const AttentionProblem& p, const TileConfig& c) {
  if (c.warps == 12 && (c.bwd_block_k == 128 || c.bwd_block_k == 64) && c.bwd_block_q % 64 == 0)
    return {c.bwd_block_q, c.bwd_block_k, c.stages};
  if (const Fa3BwdInstance* e = fa3_bwd_instance(static_cast<int>(p.head_dim), p.softcap > 0))
    return {e->block_q, e->block_k, e->stages};
  return {};
}

void check_problem(const AttentionProblem& p, const TileConfig& c, const char* kernel) {
  if (p.kv_cache() || c.num_splits > 1)
    throw InputError("kernel",
                     fmt::format("{} (fa3-v1's backward) has no paged KV cache or split-KV launch", kernel));
  if (p.mla)  // its kernel loads V and stores dV as tensors of their own; MLA has neither (no model of one yet)
    throw InputError("kernel",
                     fmt::format("{} (fa3-v1's backward) has no MLA form (V as K's first head_dim_v "
                                 "columns, dV folded into dK): use FA2's backward (--algorithm fa2)",
                                 kernel));
  if (p.head_dim != p.head_dim_v)
    throw InputError("kernel", fmt::format("{} (fa3-v1's backward) needs head_dim_v == head_dim", kernel));
}

// The query blocks [m_min, m_max) that see key block n (query_block_range in the kernel: windows and causal are
// bottom-right aligned).
std::pair<int64_t, int64_t> query_blocks(const AttentionProblem& p, const BwdShape& s, int64_t lq, int64_t lk,
                                         int64_t n) {
  const int64_t num_m = ceil_div(lq, s.br);
  int64_t m_min = 0, m_max = num_m;
  if (p.window_right >= 0) {
    const int64_t first_row = n * s.bc - lk + lq - p.window_right;
    m_min = first_row <= 0 ? 0 : first_row / s.br;
  }
  if (p.window_left >= 0) {
    const int64_t last_row = n * s.bc + s.bc - 1 - lk + lq + p.window_left;
    m_max = last_row < 0 ? 0 : std::min(num_m, last_row / s.br + 1);
  }
  return {m_min, std::max(m_min, m_max)};
}

int64_t key_block_count(const AttentionProblem& p, const BwdShape& s) {
  return ceil_div(p.seqlen_k, s.bc);
}

bool deterministic(const TileConfig& c) {
  return c.dq_strategy == DqStrategy::Partials;
}

// ---------------------------------------------------------------------------------------------- dot_do_o
KernelLaunch dot_launch(const AttentionProblem& p, const TileConfig& c) {
  check_problem(p, c, "bwd_fa3_dot_do_o");
  KernelLaunch l;
  l.grid_x = ceil_div(p.total_q() * p.heads_q * 32, kRowThreads);
  l.threads = kRowThreads;
  return l;
}

// CTA `block`: the (row, head) pairs [8 block, 8 block + 8) of the packed [rows, heads] order.
void dot_cta(CtaBuilder& x, const TileConfig& /*c*/, int64_t /*b*/, int64_t /*h*/, int64_t block) {
  const AttentionProblem& p = x.p;
  const auto cu = p.cu_seqlens_q();
  const int64_t pairs = p.total_q() * p.heads_q, warps = kRowThreads / 32;
  for (int64_t i = block * warps; i < std::min(pairs, (block + 1) * warps); ++i) {
    const int64_t row = i / p.heads_q, h = i % p.heads_q;
    const auto b = static_cast<int64_t>(std::upper_bound(cu.begin(), cu.end(), row) - cu.begin()) - 1;
    const int64_t r = row - cu[static_cast<size_t>(b)];
    x.add(AccessKind::Load, TensorId::dO, b, h, r, 1, p.head_dim_v, x.e);
    x.add(AccessKind::Load, TensorId::O, b, h, r, 1, p.head_dim_v, x.e);
    for (int s = 0; s < kSectorsPerRowValue; ++s) x.add(AccessKind::Store, TensorId::Delta, b, h, r, 1, 1, 4);
  }
}

void dot_counts(KernelCounts& k, const AttentionProblem& p, const TileConfig& /*c*/,
                const ProblemData& /*d*/) {
  const int e = dtype_bytes(p.dtype);
  SequenceCounter x{k, nullptr, 0, nullptr};
  const int64_t rows = p.total_q() * p.heads_q;
  x.load(TensorId::dO, rows, p.head_dim_v, e);
  x.load(TensorId::O, rows, p.head_dim_v, e);
  for (int s = 0; s < kSectorsPerRowValue; ++s) x.store(TensorId::Delta, rows, 1, 4);
  k.vector_ops = 2.0 * static_cast<double>(rows * p.head_dim_v);
  k.tensors[static_cast<size_t>(TensorId::dO)].unique_bytes = rows * p.head_dim_v * e;
  k.tensors[static_cast<size_t>(TensorId::O)].unique_bytes = rows * p.head_dim_v * e;
  k.tensors[static_cast<size_t>(TensorId::Delta)].unique_bytes = rows * 4;
}

// ---------------------------------------------------------------------------------------------- main kernel
// The grid: (key blocks, batch, kv heads) here (the CTA builder's order); the kernel's is (key blocks, kv heads,
// batch), which the time model's per-CTA lists follow.
KernelLaunch main_launch(const AttentionProblem& p, const TileConfig& c) {
  check_problem(p, c, "bwd_fa3");
  const BwdShape s = bwd_shape(p, c);
  const int64_t e = dtype_bytes(p.dtype), d = p.head_dim;
  KernelLaunch l;
  l.grid_x = key_block_count(p, s);
  l.grid_y = p.batch;
  l.grid_z = p.heads_kv;
  l.heads_then_batch = true;
  l.threads = 3 * 128;
  l.regs_per_thread = 65536 / l.threads / 8 * 8;  // 168 at entry; setmaxnreg: 24 producer, 240 consumers
  // K, V once; Q, dO stages deep; dS (Br x Bc), and P beside it where both warpgroups share 64 keys (Bc 64);
  // dQ's per-warp staging (Br x d fp32).
  l.smem = {{"K", s.bc * d * e},
            {"V", s.bc * d * e},
            {"Q", s.stages * s.br * d * e},
            {"dO", s.stages * s.br * d * e},
            {"dS", s.br * s.bc * e},
            {"dQ", s.br * d * 4}};
  if (s.bc == 64) l.smem.push_back({"P", s.br * s.bc * e});
  WarpSpecializedWork& w = l.ws;
  w.block_q = s.br;
  w.block_k = s.bc;
  w.head_dim = d;
  w.head_dim_v = p.head_dim_v;
  w.stages = s.stages;
  w.consumers = 2;
  w.softcap = p.softcap > 0;  // the kSoftcap kernel: tanh and the derivative a score
  return l;
}

// One CTA's steps, masked steps, and each step's (query block) rows, for sequence b.
struct KeyBlockSteps {
  int64_t m_min = 0, m_max = 0, masked = 0;
};
// masked: the blocks bwd_block_needs_mask marks (the block runs past the queries or keys, or crosses a window
// edge), in O(1): a 10M-key problem has 1e5 query blocks a key block. Query block m of rows [m Br, m Br + Br)
// needs no mask when its rows end inside the queries (m < floor(lq / Br)), the key block ends inside the keys,
// its first row sees the block's last column (m Br >= last_col - shift - right) and its last row the block's
// first column (m Br + Br - 1 + shift - left <= first_col: m < floor((first_col + 1 - shift + left) / Br)).
KeyBlockSteps key_block_steps(const AttentionProblem& p, const BwdShape& s, int64_t b, int64_t n) {
  const int64_t lq = p.len_q(b), lk = p.len_k(b), shift = lk - lq;
  KeyBlockSteps k;
  if (n * s.bc >= lk) return k;
  std::tie(k.m_min, k.m_max) = query_blocks(p, s, lq, lk, n);
  const int64_t first_col = n * s.bc, last_col = first_col + s.bc - 1;
  if (last_col >= lk) {
    k.masked = k.m_max - k.m_min;
    return k;
  }
  int64_t full_hi = floor_div(lq, s.br);
  if (p.window_left >= 0) full_hi = std::min(full_hi, floor_div(first_col + 1 - shift + p.window_left, s.br));
  const int64_t full_lo =
      p.window_right >= 0 ? ceil_div_any(last_col - shift - p.window_right, s.br) : k.m_min;
  k.masked = blocks_outside(k.m_min, k.m_max, full_lo, full_hi);
  return k;
}

void main_cta(CtaBuilder& x, const TileConfig& c, int64_t b, int64_t hk, int64_t n) {
  const AttentionProblem& p = x.p;
  const BwdShape s = bwd_shape(p, c);
  const KeyBlockSteps k = key_block_steps(p, s, b, n);
  if (k.m_max <= k.m_min) return;
  const auto cu_q = p.cu_seqlens_q(), cu_k = p.cu_seqlens_k();
  const int64_t lq = p.len_q(b), lk = p.len_k(b), d = p.head_dim, group = p.group_size();
  add_box(x, AccessKind::Load, TensorId::K, hk, cu_k, b, n * s.bc, s.bc, d);
  add_box(x, AccessKind::Load, TensorId::V, hk, cu_k, b, n * s.bc, s.bc, d);
  const double rk = static_cast<double>(std::min(s.bc, lk - n * s.bc));
  // Steps in the kernel's order: the group's heads in turn, each walking its query blocks from m_min + n
  // (rotated: the key blocks of a head start at different query blocks).
  const int64_t range = k.m_max - k.m_min;
  for (int64_t h = hk * group; h < (hk + 1) * group; ++h)
    for (int64_t step = 0; step < range; ++step) {
      const int64_t m = k.m_min + (step + n) % range;
      const int64_t q0 = m * s.br, rq = std::max<int64_t>(0, std::min(s.br, lq - q0));
      add_box(x, AccessKind::Load, TensorId::Q, h, cu_q, b, q0, s.br, d);
      add_box(x, AccessKind::Load, TensorId::dO, h, cu_q, b, q0, s.br, d);
      x.add(AccessKind::Load, TensorId::Lse, b, h, q0, rq, 1, 4);
      x.add(AccessKind::Load, TensorId::Delta, b, h, q0, rq, 1, 4);
      x.add(deterministic(c) ? AccessKind::Store : AccessKind::Reduce, TensorId::DqAccum, b, h, q0, s.br, d,
            4);
      x.w->mma_flops += 2.0 * static_cast<double>(rq) * rk * static_cast<double>(5 * d);
      x.w->exp_ops += static_cast<double>(rq) * rk;
      x.w->vector_ops += 4.0 * static_cast<double>(rq) * rk;
    }
  const int64_t rows = std::min(s.bc, lk - n * s.bc);
  for (int half = 0; half < kStoresPerSector; ++half) {
    x.add(AccessKind::Store, TensorId::dK, b, hk, n * s.bc, rows, d, x.e);
    x.add(AccessKind::Store, TensorId::dV, b, hk, n * s.bc, rows, d, x.e);
  }
}

void main_counts(KernelCounts& k, const AttentionProblem& p, const TileConfig& c, const ProblemData& /*d*/) {
  const BwdShape s = bwd_shape(p, c);
  const int e = dtype_bytes(p.dtype);
  const int64_t d = p.head_dim, group = p.group_size(), hkv = p.heads_kv, num_n = key_block_count(p, s);
  const auto cu_q = p.cu_seqlens_q(), cu_k = p.cu_seqlens_k();
  KernelCounts one;  // one kv head
  SequenceCounter x{one, nullptr, 0, nullptr};
  // per (batch, key block): steps, masked steps, whether the CTA has work
  std::vector<double> steps(static_cast<size_t>(p.batch * num_n), 0.0), masked = steps, live = steps;
  for (int64_t b = 0; b < p.batch; ++b) {
    const int64_t lq = p.len_q(b), lk = p.len_k(b);
    for (int64_t n = 0; n < num_n; ++n) {
      const KeyBlockSteps kb = key_block_steps(p, s, b, n);
      if (kb.m_max <= kb.m_min) continue;
      const auto at = static_cast<size_t>(b * num_n + n);
      live[at] = 1;
      steps[at] = static_cast<double>((kb.m_max - kb.m_min) * group);
      masked[at] = static_cast<double>(kb.masked * group);
      x.load(TensorId::K, s.bc, d, e);  // whole boxes (fa3_tiles.h: box_rows)
      x.load(TensorId::V, s.bc, d, e);
      const double rk = static_cast<double>(std::min(s.bc, lk - n * s.bc));
      // The query blocks [m_min, m_max) of each of the group's heads, summed in O(1) (the counts are linear in
      // rows): Q and dO whole boxes, lse and Delta the sequence's rows, a dQ tile each.
      const int64_t q_rows = (kb.m_max - kb.m_min) * s.br * group;
      const int64_t rq = block_rows(kb.m_min, kb.m_max, s.br, lq) * group;
      x.load(TensorId::Q, q_rows, d, e);
      x.load(TensorId::dO, q_rows, d, e);
      x.load(TensorId::Lse, rq, 1, 4);
      x.load(TensorId::Delta, rq, 1, 4);
      const int64_t dq_rows = (kb.m_max - kb.m_min) * s.br * group;
      if (deterministic(c))
        x.store(TensorId::DqAccum, dq_rows, d, 4);
      else
        x.reduce(TensorId::DqAccum, dq_rows, d, 4);
      const double pairs = static_cast<double>(rq) * rk;  // integers: exact, whatever the order
      one.mma_flops += 2.0 * pairs * static_cast<double>(5 * d);
      one.exp_ops += pairs;
      one.vector_ops += 4.0 * pairs;
      for (int half = 0; half < kStoresPerSector; ++half) {
        x.store(TensorId::dK, static_cast<int64_t>(rk), d, e);
        x.store(TensorId::dV, static_cast<int64_t>(rk), d, e);
      }
    }
  }
  for (size_t t = 0; t < one.tensors.size(); ++t)
    for (auto dir : {&TensorTraffic::load, &TensorTraffic::store, &TensorTraffic::reduce}) {
      (k.tensors[t].*dir).bytes += (one.tensors[t].*dir).bytes * hkv;
      (k.tensors[t].*dir).sectors += (one.tensors[t].*dir).sectors * hkv;
    }
  k.mma_flops = one.mma_flops * static_cast<double>(hkv);
  k.exp_ops = one.exp_ops * static_cast<double>(hkv);
  k.vector_ops = one.vector_ops * static_cast<double>(hkv);
  // The CTAs in the kernel's launch order: key blocks fastest, then kv heads, then the batch.
  WarpSpecializedWork& w = k.launch.ws;
  const int64_t ctas = num_n * hkv * p.batch;
  for (int64_t b = 0; b < p.batch; ++b)
    for (int64_t n = 0; n < num_n; ++n) {
      const auto at = static_cast<size_t>(b * num_n + n);
      w.tiles += live[at] * static_cast<double>(hkv);
      w.steps += steps[at] * static_cast<double>(hkv);
      w.masked_steps += masked[at] * static_cast<double>(hkv);
    }
  if (ctas <= WarpSpecializedWork::kMaxListedCtas)
    for (int64_t b = 0; b < p.batch; ++b)
      for (int64_t h = 0; h < hkv; ++h)
        for (int64_t n = 0; n < num_n; ++n) {
          const auto at = static_cast<size_t>(b * num_n + n);
          w.cta_tiles.push_back(live[at]);
          w.cta_steps.push_back(steps[at]);
          w.cta_masked.push_back(masked[at]);
        }
  const auto footprint = [&](TensorId t, int64_t bytes) {
    k.tensors[static_cast<size_t>(t)].unique_bytes = bytes;
  };
  const int64_t hq = p.heads_q, slabs = deterministic(c) ? num_n : 1;
  footprint(TensorId::Q, p.total_q() * hq * d * e);
  footprint(TensorId::dO, p.total_q() * hq * d * e);
  footprint(TensorId::K, p.total_k() * hkv * d * e);
  footprint(TensorId::V, p.total_k() * hkv * d * e);
  footprint(TensorId::Lse, p.total_q() * hq * 4);
  footprint(TensorId::Delta, p.total_q() * hq * 4);
  footprint(TensorId::dK, p.total_k() * hkv * d * e);
  footprint(TensorId::dV, p.total_k() * hkv * d * e);
  // dq_accum: every sequence's query blocks whole (fa3_dq_accum_rows), a slab a key block when deterministic
  int64_t dq_rows = 0;
  for (int64_t b = 0; b < p.batch; ++b) dq_rows += ceil_div(p.len_q(b), s.br) * s.br;
  footprint(TensorId::DqAccum, slabs * hq * dq_rows * d * 4);
}

// ---------------------------------------------------------------------------------------------- convert_dq
KernelLaunch convert_launch(const AttentionProblem& p, const TileConfig& c) {
  check_problem(p, c, "bwd_fa3_convert");
  KernelLaunch l = per_head_launch(p, ceil_div(p.seqlen_q, bwd_shape(p, c).br), kConsumerThreads);
  l.heads_then_batch = true;  // the kernel's grid: (query blocks, heads, batch)
  return l;
}

// Slabs convert_dq reads for query block m of sequence b: one, or (deterministic) those of the key blocks
// that see it.
int64_t convert_slabs(const AttentionProblem& p, const TileConfig& c, const BwdShape& s, int64_t b,
                      int64_t m) {
  if (!deterministic(c)) return 1;
  const int64_t lq = p.len_q(b), lk = p.len_k(b);
  int64_t slabs = 0;
  for (int64_t n = 0; n * s.bc < lk; ++n) {
    const auto [m_min, m_max] = query_blocks(p, s, lq, lk, n);
    slabs += m >= m_min && m < m_max ? 1 : 0;
  }
  return slabs;
}

void convert_cta(CtaBuilder& x, const TileConfig& c, int64_t b, int64_t h, int64_t m) {
  const AttentionProblem& p = x.p;
  const BwdShape s = bwd_shape(p, c);
  const int64_t q0 = m * s.br, lq = p.len_q(b);
  if (q0 >= lq) return;
  for (int64_t i = 0; i < convert_slabs(p, c, s, b, m); ++i)
    x.add(AccessKind::Load, TensorId::DqAccum, b, h, q0, s.br, p.head_dim, 4);
  x.add(AccessKind::Store, TensorId::dQ, b, h, q0, std::min(s.br, lq - q0), p.head_dim, x.e);
}

void convert_sequence(SequenceCounter& x, const AttentionProblem& p, const TileConfig& c, int64_t b) {
  const BwdShape s = bwd_shape(p, c);
  const int64_t lq = p.len_q(b);
  for (int64_t m = 0; m * s.br < lq; ++m) {
    x.load(TensorId::DqAccum, s.br * convert_slabs(p, c, s, b, m), p.head_dim, 4);
    x.store(TensorId::dQ, std::min(s.br, lq - m * s.br), p.head_dim, dtype_bytes(p.dtype));
  }
  x.k.vector_ops += static_cast<double>(lq * p.head_dim);
}

// ---------------------------------------------------------------------------------------------- names
// Fa3BwdTraits<kHeadDim, kBlockM, kBlockN, kStages, Element>: d, Br, Bc, stages; 12 warps.
TileConfig from_bwd_traits(const std::smatch& m, const std::string& name) {
  TileConfig c;
  c.bwd_block_q = ncu_template_int(m[2], name);
  c.bwd_block_k = ncu_template_int(m[3], name);
  c.stages = static_cast<int>(ncu_template_int(m[4], name));
  if ((c.bwd_block_k != 128 && c.bwd_block_k != 64) || c.bwd_block_q % 64 != 0 || c.bwd_block_q > 128)
    throw InputError("ncu", "kernel '" + name.substr(0, 200) +
                                "' has a tile fa3-v1's backward does not run (Bc 128 or 64, Br 64 or 128)");
  c.warps = 12;
  return checked_ncu_config(c, name);
}
TileConfig from_dot(const std::smatch& /*m*/, const std::string& name) {
  TileConfig c;
  c.warps = 12;
  return checked_ncu_config(c, name);
}
#define FLASHSIM_FA3_BWD_TRAITS                                                                \
  R"(\s*<\s*(?:\w+::)*Fa3BwdTraits\s*<\s*(?:\(\w+\)\s*)?(\d+)\s*,\s*(?:\(\w+\)\s*)?(\d+)\s*,)" \
  R"(\s*(?:\(\w+\)\s*)?(\d+)\s*,\s*(?:\(\w+\)\s*)?(\d+))"

// ---------------------------------------------------------------------------------------------------- time
// A softcap's work a score beyond the plain kernel's, counted from fa3_bwd_kernel.cuh's kSoftcap path: the
// exponent's tanh as 1 - 2 / (e^2x + 1) (ex2 and a reciprocal: 2 MUFU ops; a multiply, a clamp, two adds and
// three multiplies beside the plain FFMA and FMUL: 6 more ALU ops) and ds'/ds = 1 - t^2 recovered from P (lg2:
// 1 MUFU op; four multiplies, an add, a compare and a select: 7 ALU ops).
constexpr double kSoftcapMufu = 3, kSoftcapAlu = 13;

// The main kernel: the instance's measured step and tile costs (calibration fa3.step_costs_h100), a masked
// step adding its mask instructions (4 a score, a consumer thread's 64 Br / 128 scores), a softcap its own;
// without a measurement,
// the tensor pipe's time of the step's five GEMMs alone (an estimate that is optimistic by what the softmax,
// the dS exchange between the warpgroups and the dQ reduces add: the measured d128 step is 2.1x it).
CtaTime main_time(const KernelCounts& k, int ctas_per_sm, double imbalance, const HardwareProfile& hw) {
  CtaTime t;
  const WarpSpecializedWork& w = k.launch.ws;
  if (w.tiles <= 0 || hw.wgmma_ss_flops_per_clock.size() != 3 || hw.clock_hz <= 0 || ctas_per_sm <= 0)
    return t;
  t.modelled = true;
  const double clk = hw.clock_hz, slots = static_cast<double>(std::max(1, hw.sms) * ctas_per_sm);
  const double br = static_cast<double>(w.block_q), bc = static_cast<double>(w.block_k),
               d = static_cast<double>(w.head_dim);
  const double tensor_step = 2 * br * bc * 5 * d / hw.wgmma_ss_flops_per_clock[1] / clk;
  const double mask_extra = 64 * br / 128 * 4 / clk;
  // A softcap's step adds its ops on each consumer thread's Br Bc / (128 consumers) scores (the measured tile
  // costs are the plain kernel's). Its MUFU ops run at the SFU's rate (exp_per_s: about a quarter of a warp a
  // clock a scheduler), which the consumer warps on a scheduler (one a warpgroup) share, as the forward's model
  // counts its softcap: the slower of that and one instruction a clock. (Until 2026-11-28: 9 instructions a score
  // at one a clock and one warp, which fa3_tune_h100's run3 found 1.33-1.41x optimistic: its README.)
  const double consumers = std::max(1, w.consumers);
  const double scores = br * static_cast<double>(w.block_k) / (128 * consumers);
  const double softcap_extra =
      w.softcap ? sfu_issue_cycles(kSoftcapMufu * scores, kSoftcapAlu * scores, consumers, hw) / clk : 0.0;
  t.steps = w.steps;
  t.regs = 240;
  t.warps_per_scheduler = ctas_per_sm * 3;
  t.t_tensor = w.steps * tensor_step / slots;
  if (const MeasuredSteps* m = find_measured_steps(hw, "bwd_fa3", w)) {
    t.time_s = measured_makespan(w, *m, softcap_extra, mask_extra, static_cast<int64_t>(slots), imbalance);
    t.chain_step_s = m->step_s() + softcap_extra;
    t.t_chain = t.time_s;
    t.bound = "measured steps";
    t.measured_on = measured_where(*m);
  } else {
    MeasuredSteps estimate;
    estimate.tile_s_by_steps = {{0, 0}, {1, tensor_step}};
    t.time_s =
        measured_makespan(w, estimate, softcap_extra, mask_extra, static_cast<int64_t>(slots), imbalance);
    t.chain_step_s = tensor_step + softcap_extra;
    t.bound = "tensor";
  }
  return t;
}

}  // namespace

KernelModel fa3_backward_dot_do_o() {
  KernelModel m;
  m.name = "bwd_fa3_dot_do_o";
  m.pass = Pass::Backward;
  m.summary = "fa3-v1 backward 1/3 (Hopper): D = rowsum(dO o O), a warp a (row, head)";
  m.follows_memset = true;           // dq_accum's clear
  m.grid_not_problem_shaped = true;  // a flat grid over (row, head) pairs
  m.launch = dot_launch;
  m.cta = dot_cta;
  m.counts = dot_counts;
  m.ncu_names = {{R"(flashsim_fa3_bwd_dot_do_o_kernel\s*<)", from_dot}};
  return m;
}

KernelModel fa3_backward() {
  KernelModel m;
  m.name = "bwd_fa3";
  m.pass = Pass::Backward;
  m.summary =
      "fa3-v1 backward 2/3 (Hopper): dK, dV per key block, dQ by bulk reduces; TMA, wgmma, 2 consumers";
  m.work_blocks = WorkBlocks::Backward;
  m.per_kv_head = true;
  m.dq_by_bulk_copy = true;
  m.launch = main_launch;
  m.cta = main_cta;
  m.counts = main_counts;
  m.time_model = main_time;
  m.ncu_names = {
      {R"(flashsim_fa3_bwd_kernel)" FLASHSIM_FA3_BWD_TRAITS, from_bwd_traits, 1}};  // 1: the head dim
  return m;
}

KernelModel fa3_backward_convert_dq() {
  KernelModel m;
  m.name = "bwd_fa3_convert";
  m.pass = Pass::Backward;
  m.summary = "fa3-v1 backward 3/3 (Hopper): dQ = scale dq_accum, rounded (deterministic: the slabs summed)";
  m.launch = convert_launch;
  m.cta = convert_cta;
  m.sequence = convert_sequence;
  m.ncu_names = {{R"(flashsim_fa3_bwd_convert_dq_kernel)" FLASHSIM_FA3_BWD_TRAITS, from_bwd_traits, 1}};
  return m;
}

}  // namespace flashsim::sim::kernels
