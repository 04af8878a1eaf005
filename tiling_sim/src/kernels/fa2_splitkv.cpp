// FlashAttention-2's decode kernels: the split-KV forward (flash_fwd_splitkv_kernel, what flash_attn_with_kvcache
// launches for a paged cache and for num_splits > 1) and its combine (flash_fwd_splitkv_combine_kernel).
//
// fwd_splitkv: a CTA per (query block, split, batch, kv head). The group's query heads are packed into the
// query tile (pack GQA: seqlen_q x group rows, packed row r = query row r / group of head kv_head * group +
// r % group), so K and V are read once per kv head and split. Split s of sequence b holds key blocks
// [s * per, (s + 1) * per) of its ceil(len_k / Bc), per = ceil(blocks / splits) (the reference's rule,
// ref::forward_split_kv; trailing splits may be empty). With a paged cache each key tile's rows come from the
// pages of the block table (one move per run of keys within a page, at its addresses) after the tile's table
// entries are read; appended keys (seqlen_new > 0) are read from k_new / v_new and written into the cache by
// every CTA whose split holds them (as FA2's Append_KV), then read back with the tile. One split writes O and
// lse; more write fp32 partials (o_accum, lse_accum) for the combine. The MMA runs on the whole Br-row tile.
// MLA (problem.mla, one latent KV head whose first head_dim_v columns are V): the key tile is the value tile, as
// FlashMLA reads the compressed cache once: no V (v_cache, v_new) loads or stores, V's shared memory is K's.
//
// fwd_splitkv_combine: a CTA per 4 rows of the flattened (batch, query head, query row) outputs (gpu/decode's
// combine), reading every split's lse and O partial of its rows and writing O (the problem's dtype) and lse
// (fp32).
//
// traffic compare recognizes gpu/decode's kernels: decode_split_kernel<T, d, dv, rows> (decode-v1) and
// decode_mma_split_kernel<T, d, dv> (decode-v2), their tile from the family's spec (families/decode/), the split
// count from the report's grid y; decode_combine_kernel<T> with the split count of the split kernel before it.
#include <algorithm>
#include <cmath>
#include <vector>

#include "flashsim/error.h"
#include "flashsim/families/decode/tiles.h"
#include "flashsim/sim/cta_model.h"
#include "kernels.h"

namespace flashsim::sim::kernels {

using ref::AccessKind;
using ref::TensorId;

namespace {

// The launch geometry both the CTAs and the closed form use.
struct Geometry {
  int64_t g = 1;         // query heads packed per CTA
  int64_t m_blocks = 1;  // packed query blocks (grid x)
  int64_t splits = 1;
};

Geometry geometry(const AttentionProblem& p, const TileConfig& c) {
  Geometry g;
  g.g = p.group_size();
  g.m_blocks = std::max<int64_t>(1, ceil_div(p.seqlen_q * g.g, c.block_q));
  g.splits = c.num_splits;
  return g;
}

// Key blocks of split s of sequence b: [first, last).
std::pair<int64_t, int64_t> split_blocks(const AttentionProblem& p, const TileConfig& c, int64_t b,
                                         int64_t s) {
  const int64_t blocks = ceil_div(p.len_k(b), c.block_k);
  const int64_t per = std::max<int64_t>(1, ceil_div(blocks, c.num_splits));
  return {std::min(blocks, s * per), std::min(blocks, (s + 1) * per)};
}

// Query rows [i0, i0 + n) of packed head gg (of g) within packed rows [r0, r1).
std::pair<int64_t, int64_t> head_rows(int64_t r0, int64_t r1, int64_t g, int64_t gg) {
  const int64_t i0 = r0 <= gg ? 0 : (r0 - gg + g - 1) / g;
  const int64_t i1 = r1 <= gg ? 0 : (r1 - 1 - gg) / g + 1;
  return {i0, std::max<int64_t>(0, i1 - i0)};
}

// A thread's registers: where c is one of gpu/decode's tiles for p, as ptxas compiled it for sm_90
// (registers_sm90.h: decode-v2's d64 holds four CTAs an SM; other architectures take the same count, not
// measured there); FA2's split-KV kernel's 255 otherwise.
int splitkv_regs(const AttentionProblem& p, const TileConfig& c) {
  const int e = static_cast<int>(dtype_bytes(p.dtype));
  for (const auto split : {gpu::decode::Split::TensorCores, gpu::decode::Split::CudaCores}) {
    const gpu::decode::DecodeTile t = gpu::decode::decode_tile(split, e, static_cast<int>(p.head_dim),
                                                               static_cast<int>(p.head_dim_v), c.block_q);
    if (t.rows == c.block_q && t.block_k == c.block_k && t.threads == c.warps * 32 && t.stages == c.stages &&
        t.registers > 0)
      return t.registers;
  }
  return 255;
}

KernelLaunch splitkv_launch(const AttentionProblem& p, const TileConfig& c) {
  const Geometry g = geometry(p, c);
  KernelLaunch l;
  l.grid_x = g.m_blocks;
  // gpu/decode's grid, (m blocks, splits, batch x kv heads), at any split count (FA2's flash_fwd_splitkv_kernel
  // takes (m blocks, batch, kv heads) with one split: the same CTAs in another order, which no byte of a
  // decode step depends on, each (sequence, kv head) reading its own keys).
  l.grid_y = g.splits;
  l.grid_z = p.batch * p.heads_kv;
  l.threads = c.warps * 32;
  const int64_t e = dtype_bytes(p.dtype), d = p.head_dim, dv = p.head_dim_v;
  l.regs_per_thread = splitkv_regs(p, c);
  l.accumulator_elems = c.block_q * (dv + c.block_k);
  const int64_t q = c.block_q * d * e, k = c.block_k * d * e * c.stages,
                v = p.mla ? 0 : c.block_k * dv * e * c.stages;  // MLA: V is the K tile's first dv columns
  if (p.mla) {
    l.smem = {{"Q", q}, {"K", k}};
  } else if (c.kv_shared_buffer) {
    l.smem = {{"Q", q}, {"KV", std::max(k, v)}};
  } else {
    l.smem = {{"Q", q}, {"K", k}, {"V", v}};
  }
  // FA2 issues the next K (or V) tile's loads while it computes with the current one: a tile per stage in flight.
  l.inflight_bytes = std::max(k, v);
  l.step_bytes = c.block_k * (p.mla ? d : d + dv) * e;
  l.step_head_dim = d;
  l.step_block_q = c.block_q;
  l.step_block_k = c.block_k;
  l.step_stages = c.stages;
  l.step_page_size = p.kv_cache() ? p.page_size : 0;
  return l;
}

// What one key tile costs, shared by the CTA and the closed form.
double tile_mma(const AttentionProblem& p, const TileConfig& c, int64_t rk) {
  return 2.0 * static_cast<double>(c.block_q) * static_cast<double>(rk) *
         static_cast<double>(p.head_dim + p.head_dim_v);
}
double tile_exp(const TileConfig& c, int64_t rk) {
  return static_cast<double>(c.block_q * rk);
}
double tile_vector(const AttentionProblem& p, const TileConfig& c, int64_t rk) {
  return 3.0 * static_cast<double>(c.block_q * rk) + static_cast<double>(c.block_q * p.head_dim_v);
}

// Whether the packed tile (rows [r0, r1), keys [k0, k0 + rk)) has an active block-mask tile for any of its
// heads.
template <class Active>
bool packed_active(int64_t hk, int64_t g, int64_t r0, int64_t r1, Active&& active) {
  for (int64_t gg = 0; gg < g; ++gg) {
    const auto [i0, n] = head_rows(r0, r1, g, gg);
    if (n > 0 && active(hk * g + gg, i0, n)) return true;
  }
  return false;
}

// The CTA's key blocks: the split's blocks the window lets its rows see, [a, z).
struct CtaRange {
  int64_t r0 = 0, r1 = 0;  // packed rows
  int64_t a = 0, z = 0;    // key blocks
};

CtaRange cta_range(const AttentionProblem& p, const TileConfig& c, const Geometry& g, int64_t b, int64_t m,
                   int64_t s) {
  CtaRange r;
  r.r0 = m * c.block_q;
  r.r1 = std::min(r.r0 + c.block_q, p.len_q(b) * g.g);
  if (r.r1 <= r.r0) return r;
  const auto [v0, v1] = visible_key_blocks(p, b, r.r0 / g.g, (r.r1 - 1) / g.g + 1, c.block_k);
  const auto [s0, s1] = split_blocks(p, c, b, s);
  r.a = std::max(v0, s0);
  r.z = std::max(r.a, std::min(v1, s1));
  return r;
}

// Rows of key block n that the append writes: [j0, j1) (empty without appended keys in it).
std::pair<int64_t, int64_t> appended_rows(const AttentionProblem& p, const TileConfig& c, int64_t b,
                                          int64_t n) {
  if (p.seqlen_new <= 0) return {0, 0};
  const int64_t cached = p.cache_seqlens[static_cast<size_t>(b)];
  const int64_t j0 = std::max(n * c.block_k, cached), j1 = std::min((n + 1) * c.block_k, p.len_k(b));
  return j1 > j0 ? std::pair{j0, j1} : std::pair<int64_t, int64_t>{0, 0};
}

// Table columns of the pages keys [k0, k0 + n) span.
std::pair<int64_t, int64_t> table_span(const AttentionProblem& p, int64_t k0, int64_t n) {
  return {k0 / p.page_size, (k0 + n - 1) / p.page_size - k0 / p.page_size + 1};
}

void splitkv_cta(CtaBuilder& x, const TileConfig& c, int64_t y, int64_t z, int64_t m) {
  const auto& p = x.p;
  const Geometry g = geometry(p, c);
  const int64_t s = y, b = z / p.heads_kv, hk = z % p.heads_kv;  // grid (m blocks, splits, batch x kv heads)
  const CtaRange r = cta_range(p, c, g, b, m, s);
  if (r.r1 <= r.r0) return;  // a query block past the sequence: the CTA exits at once
  const int64_t lk = p.len_k(b), d = p.head_dim, dv = p.head_dim_v, lq = p.len_q(b);
  const bool paged = p.kv_cache();
  // The append (FA2's Append_KV): the split's blocks holding new keys, from the last down, before the loop.
  for (int64_t n = r.z - 1; n >= r.a; --n) {
    const auto [j0, j1] = appended_rows(p, c, b, n);
    if (j1 <= j0) continue;
    const int64_t cached = p.cache_seqlens[static_cast<size_t>(b)];
    const auto [t0, tn] = table_span(p, n * c.block_k, std::min(c.block_k, lk - n * c.block_k));
    x.add_table(b, t0, tn);
    x.add(AccessKind::Load, tensor::KNew, b, hk, j0 - cached, j1 - j0, d, x.e);
    x.add_paged(AccessKind::Store, tensor::KCache, b, hk, j0, j1 - j0, d);
    if (p.mla) continue;  // the latent row is K and V
    x.add(AccessKind::Load, tensor::VNew, b, hk, j0 - cached, j1 - j0, dv, x.e);
    x.add_paged(AccessKind::Store, tensor::VCache, b, hk, j0, j1 - j0, dv);
  }
  // The key blocks computed: the block mask may skip a tile for every head of the pack.
  std::vector<int64_t> blocks;
  for (int64_t n = r.z - 1; n >= r.a; --n) {
    const int64_t k0 = n * c.block_k, rk = std::min(c.block_k, lk - k0);
    const bool active = packed_active(hk, g.g, r.r0, r.r1, [&](int64_t h, int64_t i0, int64_t ni) {
      return tile_active(p, *x.data, b, h, i0, ni, k0, rk);
    });
    ++(active ? x.w->tiles : x.w->skipped_tiles);
    if (active) blocks.push_back(n);
  }
  if (!blocks.empty()) {
    for (int64_t gg = 0; gg < g.g; ++gg) {
      const auto [i0, ni] = head_rows(r.r0, r.r1, g.g, gg);
      x.add(AccessKind::Load, TensorId::Q, b, hk * g.g + gg, i0, ni, d, x.e);
    }
    for (const int64_t n : blocks) {  // from the last down, as FA2
      const int64_t k0 = n * c.block_k, rk = std::min(c.block_k, lk - k0);
      if (paged) {
        const auto [t0, tn] = table_span(p, k0, rk);
        x.add_table(b, t0, tn);
        x.add_paged(AccessKind::Load, tensor::KCache, b, hk, k0, rk, d);
        if (!p.mla) x.add_paged(AccessKind::Load, tensor::VCache, b, hk, k0, rk, dv);
      } else {
        x.add(AccessKind::Load, TensorId::K, b, hk, k0, rk, d, x.e);
        if (!p.mla) x.add(AccessKind::Load, TensorId::V, b, hk, k0, rk, dv, x.e);
      }
      x.w->mma_flops += tile_mma(p, c, rk);
      x.w->exp_ops += tile_exp(c, rk);
      x.w->vector_ops += tile_vector(p, c, rk);
    }
  }
  // Every CTA writes its rows: O and lse with one split; the fp32 partials (0 and -inf for an empty split)
  // with more.
  for (int64_t gg = 0; gg < g.g; ++gg) {
    const auto [i0, ni] = head_rows(r.r0, r.r1, g.g, gg);
    const int64_t h = hk * g.g + gg;
    if (g.splits == 1) {
      x.add(AccessKind::Store, TensorId::O, b, h, i0, ni, dv, x.out_e());
      x.add(AccessKind::Store, TensorId::Lse, b, h, i0, ni, 1, 4);
    } else {
      x.add(AccessKind::Store, tensor::OAccum, b, h, s * lq + i0, ni, dv, 4);
      x.add(AccessKind::Store, tensor::LseAccum, b, h, s * lq + i0, ni, 1, 4);
    }
  }
}

// The closed form: per (sequence, kv head), query block and split, bytes and sectors from the key ranges
// (the paged cache's sectors from the block table, page run by page run), the CTAs' work and bytes listed in
// launch order.
void splitkv_counts(KernelCounts& k, const AttentionProblem& p, const TileConfig& c, const ProblemData& d) {
  const Geometry g = geometry(p, c);
  const int e = dtype_bytes(p.dtype);
  const int64_t dim = p.head_dim, dv = p.head_dim_v, hkv = p.heads_kv;
  const bool paged = p.kv_cache();
  const auto add = [&](DirectionBytes TensorTraffic::*dir, TensorId t, int64_t bytes, int64_t sectors) {
    (k.tensors[static_cast<size_t>(t)].*dir).bytes += bytes;
    (k.tensors[static_cast<size_t>(t)].*dir).sectors += sectors;
  };
  const auto rows_of = [](int64_t rows, int64_t cols, int eb) {  // the row convention's sectors
    return rows * ((cols * eb + 31) / 32);
  };
  constexpr auto kLoad = &TensorTraffic::load;
  constexpr auto kStore = &TensorTraffic::store;
  // Per (b, hk): the CTAs' work, bytes and key tiles in (split, query block) order.
  struct Cta {
    double work = 0, bytes = 0, steps = 0;
  };
  std::vector<std::vector<Cta>> ctas(static_cast<size_t>(p.batch * hkv));
  std::vector<std::vector<uint8_t>> table_read(static_cast<size_t>(p.batch));
  for (int64_t b = 0; b < p.batch; ++b) {
    const int64_t lk = p.len_k(b);
    if (paged) table_read[static_cast<size_t>(b)].assign(static_cast<size_t>(p.max_blocks_per_seq()), 0);
    const auto table = [&](int64_t k0, int64_t rk) {  // the tile's table entries: (bytes, sectors)
      const auto [t0, tn] = table_span(p, k0, rk);
      for (int64_t t = t0; t < t0 + tn; ++t) table_read[static_cast<size_t>(b)][static_cast<size_t>(t)] = 1;
      return std::pair{tn * 4, strided_sectors(b * p.max_blocks_per_seq() + t0, tn, 1, 1, 4)};
    };
    for (int64_t hk = 0; hk < hkv; ++hk) {
      auto& list = ctas[static_cast<size_t>(b * hkv + hk)];
      for (int64_t s = 0; s < g.splits; ++s)
        for (int64_t m = 0; m < g.m_blocks; ++m) {
          const CtaRange r = cta_range(p, c, g, b, m, s);
          if (r.r1 <= r.r0) {
            list.push_back({});
            continue;
          }
          double work = 0, bytes = 0;
          const auto moved = [&](DirectionBytes TensorTraffic::*dir, TensorId t, int64_t by, int64_t se) {
            add(dir, t, by, se);
            bytes += static_cast<double>(by);
          };
          for (int64_t n = r.a; n < r.z; ++n) {  // the append
            const auto [j0, j1] = appended_rows(p, c, b, n);
            if (j1 <= j0) continue;
            const auto [tb, ts] = table(n * c.block_k, std::min(c.block_k, lk - n * c.block_k));
            moved(kLoad, tensor::BlockTable, tb, ts);
            moved(kLoad, tensor::KNew, (j1 - j0) * dim * e, rows_of(j1 - j0, dim, e));
            moved(kStore, tensor::KCache, (j1 - j0) * dim * e,
                  paged_sectors(p, d, b, hk, j0, j1 - j0, dim, e));
            if (p.mla) continue;  // the latent row is K and V
            moved(kLoad, tensor::VNew, (j1 - j0) * dv * e, rows_of(j1 - j0, dv, e));
            moved(kStore, tensor::VCache, (j1 - j0) * dv * e, paged_sectors(p, d, b, hk, j0, j1 - j0, dv, e));
          }
          int64_t computed = 0;
          for (int64_t n = r.a; n < r.z; ++n) {
            const int64_t k0 = n * c.block_k, rk = std::min(c.block_k, lk - k0);
            const bool active = p.block_mask == BroadcastShape::None ||
                                packed_active(hk, g.g, r.r0, r.r1, [&](int64_t h, int64_t i0, int64_t ni) {
                                  return tile_active(p, d, b, h, i0, ni, k0, rk);
                                });
            ++(active ? k.tiles : k.skipped_tiles);
            if (!active) continue;
            ++computed;
            if (paged) {
              const auto [tb, ts] = table(k0, rk);
              moved(kLoad, tensor::BlockTable, tb, ts);
              moved(kLoad, tensor::KCache, rk * dim * e, paged_sectors(p, d, b, hk, k0, rk, dim, e));
              if (!p.mla)
                moved(kLoad, tensor::VCache, rk * dv * e, paged_sectors(p, d, b, hk, k0, rk, dv, e));
            } else {
              moved(kLoad, TensorId::K, rk * dim * e, rows_of(rk, dim, e));
              if (!p.mla) moved(kLoad, TensorId::V, rk * dv * e, rows_of(rk, dv, e));
            }
            work += tile_mma(p, c, rk);
            k.exp_ops += tile_exp(c, rk);
            k.vector_ops += tile_vector(p, c, rk);
          }
          const int64_t rows = r.r1 - r.r0;  // packed rows: query rows of the group's heads
          if (computed > 0) moved(kLoad, TensorId::Q, rows * dim * e, rows_of(rows, dim, e));
          if (g.splits == 1) {
            const int eo = dtype_bytes(p.output_dtype());  // bf16 for FP8 inputs
            moved(kStore, TensorId::O, rows * dv * eo, rows_of(rows, dv, eo));
            moved(kStore, TensorId::Lse, rows * 4, rows);
          } else {
            moved(kStore, tensor::OAccum, rows * dv * 4, rows_of(rows, dv, 4));
            moved(kStore, tensor::LseAccum, rows * 4, rows);
          }
          k.mma_flops += work;
          list.push_back({work, bytes, static_cast<double>(computed)});
        }
    }
  }
  // The CTAs in launch order (m, s, b x hk): b outermost.
  std::vector<double> work, bytes, steps;
  const auto push = [&](int64_t b, int64_t hk, size_t i) {
    const Cta& v = ctas[static_cast<size_t>(b * hkv + hk)][i];
    work.push_back(v.work);
    bytes.push_back(v.bytes);
    steps.push_back(v.steps);
  };
  const auto per = static_cast<size_t>(g.m_blocks);
  for (int64_t b = 0; b < p.batch; ++b)
    for (int64_t hk = 0; hk < hkv; ++hk)
      for (int64_t s = 0; s < g.splits; ++s)
        for (size_t m = 0; m < per; ++m) push(b, hk, static_cast<size_t>(s) * per + m);
  const auto uneven = [](const std::vector<double>& v) {
    return std::any_of(v.begin(), v.end(), [&](double x) { return x != v.front(); });
  };
  if (uneven(work)) k.cta_work = std::move(work);
  if (uneven(bytes)) k.cta_bytes = std::move(bytes);
  k.cta_steps = std::move(steps);

  // Footprints: the inputs and outputs whole; the cache's rows the sequences read (a page shared by several
  // read up to its longest use), of which the appended ones are written first (read back from L2, written
  // back to DRAM); the table entries read.
  const auto tensor_of = [&](TensorId t) -> TensorTraffic& { return k.tensors[static_cast<size_t>(t)]; };
  const auto touched = [&](TensorId t) {
    const auto& tt = tensor_of(t);
    return tt.load.bytes + tt.store.bytes + tt.reduce.bytes > 0;
  };
  const int64_t tq = p.total_q(), hq = p.heads_q;
  const std::pair<TensorId, int64_t> whole[] = {{TensorId::Q, tq * hq * dim * e},
                                                {TensorId::O, tq * hq * dv * dtype_bytes(p.output_dtype())},
                                                {TensorId::Lse, tq * hq * 4},
                                                {TensorId::K, p.total_k() * hkv * dim * e},
                                                {TensorId::V, p.total_k() * hkv * dv * e},
                                                {tensor::KNew, p.batch * p.seqlen_new * hkv * dim * e},
                                                {tensor::VNew, p.batch * p.seqlen_new * hkv * dv * e},
                                                {tensor::OAccum, g.splits * tq * hq * dv * 4},
                                                {tensor::LseAccum, g.splits * tq * hq * 4}};
  for (const auto& [t, b] : whole)
    if (touched(t)) tensor_of(t).unique_bytes = b;
  if (paged) {
    std::vector<int64_t> used(static_cast<size_t>(p.cache_num_blocks()), 0);  // rows read of each page
    int64_t appended = 0, entries = 0;
    for (int64_t b = 0; b < p.batch; ++b) {
      for (int64_t t = 0; t < p.max_blocks_per_seq(); ++t) {
        if (!table_read[static_cast<size_t>(b)][static_cast<size_t>(t)]) continue;
        ++entries;
        const int64_t page = d.block_table[static_cast<size_t>(b * p.max_blocks_per_seq() + t)];
        const int64_t rows = std::min(p.page_size, p.len_k(b) - t * p.page_size);
        used[static_cast<size_t>(page)] = std::max(used[static_cast<size_t>(page)], rows);
      }
      appended += p.len_k(b) - p.cache_seqlens[static_cast<size_t>(b)];
    }
    int64_t rows = 0;
    for (const int64_t u : used) rows += u;
    for (const auto& [t, dim_t] : {std::pair{tensor::KCache, dim}, std::pair{tensor::VCache, dv}}) {
      auto& tt = tensor_of(t);
      if (!touched(t)) continue;
      tt.unique_bytes = rows * hkv * dim_t * e;
      if (tt.store.bytes > 0) {
        tt.dirty_bytes = appended * hkv * dim_t * e;
        tt.read_bytes = tt.unique_bytes - tt.dirty_bytes;
      }
    }
    if (touched(tensor::BlockTable)) tensor_of(tensor::BlockTable).unique_bytes = entries * 4;
  }
}

// The combine kernel's rows per CTA (FA2's kBlockM).
// gpu/decode's combine: a warp an output row, 4 warps (FA2's takes 4 rows of head dims that are multiples of 128,
// 8 of 64: the same bytes in other CTAs).
int64_t combine_rows(const AttentionProblem&) {
  return 4;
}

// Smallest power of two >= n, at least 2 (FA2 instantiates the combine for 2^1 .. 2^7 splits).
int64_t max_splits_pow2(int64_t n) {
  int64_t m = 2;
  while (m < n) m *= 2;
  return m;
}

KernelLaunch combine_launch(const AttentionProblem& p, const TileConfig& c) {
  KernelLaunch l;
  const int64_t rows = combine_rows(p);
  l.grid_x = std::max<int64_t>(1, ceil_div(p.batch * p.heads_q * p.seqlen_q, rows));
  l.threads = 128;
  l.smem = {{"lse partials", max_splits_pow2(c.num_splits) * (rows + 1) * 4}, {"lse max", rows * 4}};
  return l;
}

// CTA blk: flattened rows [blk * kBlockM, ...) of (b, h, i), i < seqlen_q; each (b, h) segment's partials of
// every split, then its O and lse.
void combine_cta(CtaBuilder& x, const TileConfig& c, int64_t, int64_t, int64_t blk) {
  const auto& p = x.p;
  const int64_t rows = combine_rows(p), sq = p.seqlen_q, total = p.batch * p.heads_q * sq;
  const int64_t f0 = blk * rows, f1 = std::min(total, f0 + rows);
  for (int64_t f = f0; f < f1;) {
    const int64_t bh = f / sq, b = bh / p.heads_q, h = bh % p.heads_q, i0 = f % sq;
    const int64_t n = std::min(f1, (bh + 1) * sq) - f;  // rows of this (b, h) in the CTA
    const int64_t lq = p.len_q(b), ni = std::max<int64_t>(0, std::min(n, lq - i0));
    for (int64_t s = 0; s < c.num_splits; ++s)
      x.add(AccessKind::Load, tensor::LseAccum, b, h, s * lq + i0, ni, 1, 4);
    for (int64_t s = 0; s < c.num_splits; ++s)
      x.add(AccessKind::Load, tensor::OAccum, b, h, s * lq + i0, ni, p.head_dim_v, 4);
    x.add(AccessKind::Store, TensorId::O, b, h, i0, ni, p.head_dim_v, x.out_e());
    x.add(AccessKind::Store, TensorId::Lse, b, h, i0, ni, 1, 4);
    // Per row and split: the weight exp(lse_s - lse) (max, exp, sum) and dv multiply-adds.
    x.w->exp_ops += static_cast<double>(ni * c.num_splits);
    x.w->vector_ops += static_cast<double>(ni * c.num_splits * (p.head_dim_v + 2));
    f += n;
  }
}

void combine_counts(KernelCounts& k, const AttentionProblem& p, const TileConfig& c, const ProblemData&) {
  const int e = dtype_bytes(p.output_dtype());  // O's (bf16 for FP8 inputs)
  const int64_t dv = p.head_dim_v, splits = c.num_splits;
  const int64_t rows = p.total_q() * p.heads_q;  // every (b, h, i)
  const auto set = [&](DirectionBytes TensorTraffic::*dir, TensorId t, int64_t r, int64_t cols, int eb) {
    auto& db = k.tensors[static_cast<size_t>(t)].*dir;
    db.bytes += r * cols * eb;
    db.sectors += r * ((cols * eb + 31) / 32);
  };
  set(&TensorTraffic::load, tensor::LseAccum, rows * splits, 1, 4);
  set(&TensorTraffic::load, tensor::OAccum, rows * splits, dv, 4);
  set(&TensorTraffic::store, TensorId::O, rows, dv, e);
  set(&TensorTraffic::store, TensorId::Lse, rows, 1, 4);
  k.exp_ops = static_cast<double>(rows * splits);
  k.vector_ops = static_cast<double>(rows * splits * (dv + 2));
  k.tensors[static_cast<size_t>(tensor::LseAccum)].unique_bytes = rows * splits * 4;
  k.tensors[static_cast<size_t>(tensor::OAccum)].unique_bytes = rows * splits * dv * 4;
  k.tensors[static_cast<size_t>(TensorId::O)].unique_bytes = rows * dv * e;
  k.tensors[static_cast<size_t>(TensorId::Lse)].unique_bytes = rows * 4;
}

// The combine's time: its chain of L2 round trips. decode_combine_kernel gives a warp an output row; the warp
// reads every split's lse three times (max, sum, weights: a round trip each, its lanes' splits at once), then,
// for each of its lanes' dv / 32 columns, the splits' O partials one after another (the split loop runs to a
// count known at run time, not unrolled: each load awaited by its multiply-add), (3 + dv / 32 x splits) round
// trips a row, to the L2 (the split kernel wrote the partials just before: l2_latency_s). The resident CTAs'
// warps run their rows at once, in rounds; the roofline's bytes and work stay the other bounds.
CtaTime combine_time(const KernelCounts& k, int ctas_per_sm, double, const HardwareProfile& hw) {
  CtaTime t;
  const auto bytes = [&](TensorId id, bool load) {
    const TensorTraffic& x = k.tensors[static_cast<size_t>(id)];
    return static_cast<double>(load ? x.load.bytes : x.store.bytes);
  };
  const double rows = bytes(TensorId::Lse, false) / 4;  // one fp32 lse a row
  if (rows <= 0 || hw.l2_latency_s <= 0 || ctas_per_sm <= 0) return t;
  const double splits = bytes(tensor::LseAccum, true) / 4 / rows;
  const double dv = bytes(tensor::OAccum, true) / 4 / (rows * std::max(1.0, splits));
  const double warps = static_cast<double>(std::max(1, hw.sms)) * ctas_per_sm * (k.launch.threads / 32);
  t.modelled = true;
  t.steps = rows;
  t.chain_step_s = (3 + std::ceil(dv / 32) * splits) * hw.l2_latency_s;
  t.time_s = std::ceil(rows / warps) * t.chain_step_s;  // rounds of rows, not the roofline's imbalance
  t.t_chain = t.time_s;
  t.bound = "L2 latency";
  return t;
}

// gpu/decode's split kernels, by their template arguments: element type, d, dv (and decode-v1's packed rows).
int decode_elem_bytes(const std::string& type) {
  return type == "float" ? 4 : 2;  // __half, __nv_bfloat16
}
TileConfig decode_config(gpu::decode::Split split, const std::smatch& m, const std::string& name) {
  const int d = static_cast<int>(ncu_template_int(m[2], name)),
            dv = static_cast<int>(ncu_template_int(m[3], name));
  const int64_t rows = split == gpu::decode::Split::CudaCores ? ncu_template_int(m[4], name) : 16;
  const gpu::decode::DecodeTile t =
      gpu::decode::decode_tile(split, decode_elem_bytes(m[1].str()), d, dv, rows);
  if (t.rows == 0 || (split == gpu::decode::Split::CudaCores && t.rows != rows))
    throw InputError("ncu", "kernel '" + name.substr(0, 200) + "' is no instance of gpu/decode's tiles");
  TileConfig c;
  c.block_q = t.rows;
  c.block_k = t.block_k;
  c.warps = t.threads / 32;
  c.stages = t.stages;
  return checked_ncu_config(c, name);
}
TileConfig from_decode_v1(const std::smatch& m, const std::string& name) {
  return decode_config(gpu::decode::Split::CudaCores, m, name);
}
TileConfig from_decode_v2(const std::smatch& m, const std::string& name) {
  return decode_config(gpu::decode::Split::TensorCores, m, name);
}
TileConfig from_combine(const std::smatch&, const std::string&) {
  return TileConfig{};  // the split count comes from the split kernel before it (NcuSplits::PreviousKernel)
}

}  // namespace

KernelModel fa2_splitkv_forward() {
  KernelModel m;
  m.name = "fwd_splitkv";
  m.summary =
      "FA2 split-KV / paged-cache forward: a CTA per (query block, split, batch, kv head), the group's query "
      "heads packed, fp32 partials with > 1 split";
  m.block_sparse = true;
  m.dram_cta_share = true;
  m.ncu_names = {
      {R"(decode_split_kernel\s*<\s*(float|__half|__nv_bfloat16)\s*,\s*(?:\(int\))?(\d+)\s*,\s*(?:\(int\))?(\d+)\s*,\s*(?:\(int\))?(\d+)\s*>)",
       from_decode_v1},
      {R"(decode_mma_split_kernel\s*<\s*(__half|__nv_bfloat16)\s*,\s*(?:\(int\))?(\d+)\s*,\s*(?:\(int\))?(\d+)\s*>)",
       from_decode_v2}};
  m.ncu_splits = KernelModel::NcuSplits::GridY;
  m.lsu_store_sectors = true;
  m.launch = splitkv_launch;
  m.tile_rule = fa2_forward_tile_rule;
  m.cta = splitkv_cta;
  m.counts = splitkv_counts;
  return m;
}

KernelModel fa2_splitkv_combine() {
  KernelModel m;
  m.name = "fwd_splitkv_combine";
  m.summary = "FA2 split-KV combine: every split's lse and fp32 O partial of kBlockM rows, O and lse stored";
  m.block_sparse = true;  // reads partials, no keys: nothing to skip
  m.lsu_store_sectors = true;
  m.launch = combine_launch;
  m.grid_not_problem_shaped = true;  // a flat grid over rows
  m.cta = combine_cta;
  m.counts = combine_counts;
  return m;
}

// gpu/decode's combine: FA2's bytes (the same partials read, the same rows written), a warp a row, and its own
// time: the chain of L2 round trips above (combine_time), which FA2's combine, a thread's 16-byte load a split,
// does not run.
KernelModel decode_combine() {
  KernelModel m = fa2_splitkv_combine();
  m.name = "decode_combine";
  m.summary =
      "gpu/decode's split-KV combine: a warp an output row, every split's lse and fp32 O partial read in "
      "turn";
  m.ncu_names = {{R"(decode_combine_kernel\s*<)", from_combine}};
  m.ncu_splits = KernelModel::NcuSplits::PreviousKernel;
  m.time_model = combine_time;
  return m;
}

}  // namespace flashsim::sim::kernels
