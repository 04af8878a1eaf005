#pragma once
// What decode-v1 and decode-v2 share (decode_versions.cpp describes the family): the cache row of a key, the paged copy
// of a tile's rows into shared memory, warp reductions, the append of k_new / v_new into the cache, and the
// combine of the splits' partials:
//   lse = log sum_s exp(lse_s), O = sum_s exp(lse_s - lse) O_s   (a split without a visible key: lse_s = -inf)
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "cp_async.cuh"
#include "decode_kernel_limits.h"
#include "decode_params.h"
#include "score_pipeline.cuh"

namespace flashsim::gpu::decode {

// The cache row of key j of sequence b.
__device__ __forceinline__ int64_t cache_row(const DecodeParams& p, int b, int j) {
  const int page = p.block_table[static_cast<int64_t>(b) * p.max_blocks + j / p.page_size];
  return static_cast<int64_t>(page) * p.page_size + j % p.page_size;
}

// The slot of 16-byte chunk c of row `row` in shared memory: c XOR (row x kSwz mod 8). decode-v1 reads K with
// kSwz = its threads a key (8 consecutive threads: 8 / kSwz keys, kSwz chunk phases each, on 8 distinct bank
// groups); decode-v2's ldmatrix reads 8 rows of one chunk (kSwz = 1); kSwz = 0 leaves the row unswizzled.
template <int kSwz>
__device__ __forceinline__ int chunk_slot(int row, int c) {
  return c ^ ((row * kSwz) & 7);
}

// What a split CTA works on: sequence b, kv head hk, split `split`, packed rows [r0, r0 + rows) (rows > 0: the
// grid has ceil(seqlen_q x group / kRows) row blocks), lk keys; its key tiles [n0, n0 + nt): split s holds tiles
// [s per, (s + 1) per) of ceil(lk / kBlockK), per = ceil(tiles / splits) (ref::forward_split_kv's rule), narrowed
// to the window of its rows' queries.
struct SplitCta {
  int split, b, hk, lk, r0, rows, n0, nt;
};
template <int kRows, int kBlockK>
__device__ __forceinline__ SplitCta split_cta(const DecodeParams& p) {
  const AttentionParams& a = p.a;
  SplitCta c;
  c.split = blockIdx.y;
  c.b = blockIdx.z / a.heads_kv;
  c.hk = blockIdx.z % a.heads_kv;
  c.lk = p.cache_seqlens[c.b] + p.seqlen_new;
  c.r0 = blockIdx.x * kRows;
  c.rows = min(kRows, a.seqlen_q * a.group - c.r0);
  const int lq = a.seqlen_q, tiles = (c.lk + kBlockK - 1) / kBlockK;
  const int per = max(1, (tiles + p.num_splits - 1) / p.num_splits);
  int n0 = min(tiles, c.split * per), n1 = min(tiles, (c.split + 1) * per);
  const int i_lo = c.r0 / a.group, i_hi = (c.r0 + c.rows - 1) / a.group;  // the rows' queries
  if (a.window_left >= 0) n0 = max(n0, max(0, i_lo + c.lk - lq - a.window_left) / kBlockK);
  if (a.window_right >= 0) {
    const int j_max = i_hi + c.lk - lq + a.window_right;  // the last key a row sees
    n1 = min(n1, j_max < 0 ? 0 : j_max / kBlockK + 1);
  }
  c.n0 = n0;
  c.nt = max(0, n1 - n0);
  return c;
}

// The block-table lookups of a CTA's tiles, once a key (threads [0, kBlockK), one key each) and ahead of the copy:
// tile t's rows are loaded into a register (fetch) an iteration before they are stored to sRow[t % kStages]
// (put), which the copy of tile t reads after the next barrier; so a lookup's load latency overlaps a tile's work
// instead of holding the barrier. A row is (cache row of the key) x heads_kv + hk, the key's row in a
// [rows x heads_kv, dim] view of the cache, or -1 past lk. (Every copying thread looking up its own keys, integer
// division included, had cost more instructions than the products: the H100 issued one instruction every ~3
// cycles a scheduler and streamed ~7 GB/s a CTA; storing the lookup at once held each barrier for a load's
// latency, ~15 GB/s a CTA.)
template <int kBlockK, int kStages>
struct RowLookups {
  int64_t* sRow;  // [kStages, kBlockK]
  const DecodeParams& p;
  int b, hk, n0, nt, lk, tid;
  int64_t pending = -1;  // fetched, not yet put

  __device__ __forceinline__ int64_t fetch(int t) const {
    const int j = (n0 + t) * kBlockK + tid;
    return t < nt && tid < kBlockK && j < lk ? cache_row(p, b, j) * p.a.heads_kv + hk : -1;
  }
  __device__ __forceinline__ void put(int t, int64_t row) const {
    if (t < nt && tid < kBlockK) sRow[(t % kStages) * kBlockK + tid] = row;
  }
  __device__ __forceinline__ const int64_t* rows_of(int t) const { return sRow + (t % kStages) * kBlockK; }
};

// Copies the rows of one tensor of the cache for a tile (sRow: RowLookups::rows_of) into shared memory (row stride
// kRowBytes, chunks placed by chunk_slot<kSwz>; zero-filled past lk) by 16-byte cp.async: each thread copies one
// chunk phase of kPasses keys.
template <int kBlockK, int kRowBytes, int kKeysPerPass, int kSwz>
__device__ __forceinline__ void copy_rows(unsigned char* s, const void* cache, const int64_t* sRow, int tid) {
  constexpr int kChunks = kRowBytes / 16, kPasses = kBlockK / kKeysPerPass;
  const int chunk = tid % kChunks, first = tid / kChunks;
  const unsigned char* base = static_cast<const unsigned char*>(cache) + chunk * 16;
#pragma unroll
  for (int i = 0; i < kPasses; ++i) {
    const int jj = first + i * kKeysPerPass;
    const int64_t row = sRow[jj];
    cp_async_16(smem_addr(s + jj * kRowBytes + chunk_slot<kSwz>(jj, chunk) * 16),
                row >= 0 ? base + row * kRowBytes : base, row >= 0 ? 16 : 0);
  }
}

// Tile t (of nt) of a split CTA into stage t % kStages of sKV (a stage: Tr::kBlockK K rows, then as many V rows),
// at the rows `lookups` put; K's chunks placed by chunk_slot<kSwzK>, V's by chunk_slot<kSwzV>. Keys past len_k
// are zero-filled: their scores are -inf, and a zero V row keeps 0 x V finite.
template <class Tr, int kSwzK, int kSwzV>
__device__ __forceinline__ void load_kv_tile(unsigned char* sKV, const DecodeParams& p,
                                             const RowLookups<Tr::kBlockK, Tr::kStages>& lookups, int t,
                                             int nt, int tid) {
  if (t >= nt) return;
  unsigned char* sK = sKV + (t % Tr::kStages) * Tr::kStageBytes;
  const int64_t* rows = lookups.rows_of(t);
  copy_rows<Tr::kBlockK, Tr::kKStride, Tr::kKKeysPerPass, kSwzK>(sK, p.k_cache, rows, tid);
  copy_rows<Tr::kBlockK, Tr::kVStride, Tr::kVKeysPerPass, kSwzV>(sK + Tr::kBlockK * Tr::kKStride, p.v_cache,
                                                                 rows, tid);
}

// Column c of packed row r of a split CTA, from its unnormalized O sum, row sum l and row max m: O / l and
// lse = m + log l (a row without a visible key: l = 0, O = 0, lse = -inf), into o and lse with one split, else
// into the split's fp32 partials.
template <class T>
__device__ __forceinline__ void store_row(const DecodeParams& p, const SplitCta& cta, int r, int c,
                                          float o_sum, float l, float m) {
  const AttentionParams& a = p.a;
  const int lq = a.seqlen_q, dv = a.head_dim_v, pr = cta.r0 + r, i = pr / a.group;
  const int h = cta.hk * a.group + pr % a.group;
  const float ov = l > 0.f ? o_sum / l : 0.f;
  const float lse = l > 0.f ? m + logf(l) : neg_inf();
  const int64_t row =
      (static_cast<int64_t>(cta.b) * a.heads_q + h) * lq + i;  // lse's [batch, heads_q, seqlen_q]
  if (p.num_splits == 1) {
    static_cast<T*>(p.o)[((static_cast<int64_t>(cta.b) * lq + i) * a.heads_q + h) * dv + c] =
        from_float<T>(ov);
    if (c == 0) p.lse[row] = lse;
  } else {
    const int64_t srow = static_cast<int64_t>(cta.split) * a.batch * a.heads_q * lq + row;
    p.o_accum[srow * dv + c] = ov;
    if (c == 0) p.lse_accum[srow] = lse;
  }
}

// The kVec elements of a 16-byte chunk in shared memory, as fp32.
template <class T, int kVec>
__device__ __forceinline__ void chunk_to_float(const unsigned char* chunk, float (&f)[kVec]) {
  const uint4 raw = *reinterpret_cast<const uint4*>(chunk);
  const T* e = reinterpret_cast<const T*>(&raw);
#pragma unroll
  for (int i = 0; i < kVec; ++i) f[i] = to_float(e[i]);
}

template <class Op>
__device__ __forceinline__ float warp_reduce(float x, Op op) {
#pragma unroll
  for (int off = 16; off > 0; off /= 2) x = op(x, __shfl_xor_sync(0xffffffffu, x, off));
  return x;
}
struct Max {
  __device__ float operator()(float x, float y) const { return fmaxf(x, y); }
};
struct Sum {
  __device__ float operator()(float x, float y) const { return x + y; }
};

// k_new / v_new into the cache rows cache_seqlens[b] + t of sequence b, one thread a 16-byte chunk (head dims
// are multiples of 8 bytes' worth of 16-byte chunks: d x sizeof(T) % 16 == 0, checked by the version).
__global__ void decode_append_kernel(const DecodeParams p, int elem_bytes) {
  const AttentionParams& a = p.a;
  const int kc = a.head_dim * elem_bytes / 16, vc = a.head_dim_v * elem_bytes / 16;
  const int64_t total = static_cast<int64_t>(a.batch) * p.seqlen_new * a.heads_kv * (kc + vc);
  for (int64_t idx = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; idx < total;
       idx += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int c = static_cast<int>(idx % (kc + vc));
    int64_t rest = idx / (kc + vc);
    const int hk = static_cast<int>(rest % a.heads_kv);
    rest /= a.heads_kv;
    const int t = static_cast<int>(rest % p.seqlen_new), b = static_cast<int>(rest / p.seqlen_new);
    const int64_t row = cache_row(p, b, p.cache_seqlens[b] + t);
    const int64_t src_row = (static_cast<int64_t>(b) * p.seqlen_new + t) * a.heads_kv + hk;
    const bool is_k = c < kc;
    const int chunks = is_k ? kc : vc, cc = is_k ? c : c - kc;
    const uint4* src = static_cast<const uint4*>(is_k ? p.k_new : p.v_new) + src_row * chunks + cc;
    uint4* dst = static_cast<uint4*>(is_k ? p.k_cache : p.v_cache) + (row * a.heads_kv + hk) * chunks + cc;
    *dst = *src;
  }
}

// A warp an output row (b, h, i): lse = log sum_s exp(lse_s), O = sum_s exp(lse_s - lse) O_s.
constexpr int kCombineWarps = 4;
constexpr int kMaxSplits = kMaxCombinedSplits;  // the weights' shared buffer (decode_kernel_limits.h)
template <class T>
__global__ void __launch_bounds__(kCombineWarps * 32) decode_combine_kernel(const DecodeParams p) {
  __shared__ float sW[kCombineWarps][kMaxSplits];
  const AttentionParams& a = p.a;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int64_t rows = static_cast<int64_t>(a.batch) * a.heads_q * a.seqlen_q;
  const int64_t row = blockIdx.x * static_cast<int64_t>(kCombineWarps) + warp;
  if (row >= rows) return;
  const int S = p.num_splits, dv = a.head_dim_v;
  float mx = neg_inf();
  for (int s = lane; s < S; s += 32) mx = fmaxf(mx, p.lse_accum[s * rows + row]);
  mx = warp_reduce(mx, Max{});
  const int64_t i = row % a.seqlen_q, bh = row / a.seqlen_q, h = bh % a.heads_q, b = bh / a.heads_q;
  T* o = static_cast<T*>(p.o) + ((b * a.seqlen_q + i) * a.heads_q + h) * dv;
  if (mx == neg_inf()) {  // no split saw a key
    for (int c = lane; c < dv; c += 32) o[c] = from_float<T>(0.f);
    if (lane == 0) p.lse[row] = neg_inf();
    return;
  }
  float sum = 0.f;
  for (int s = lane; s < S; s += 32) sum += expf(p.lse_accum[s * rows + row] - mx);
  sum = warp_reduce(sum, Sum{});
  const float lse = mx + logf(sum);  // lse = max + log sum_s exp(lse_s - max)
  for (int s = lane; s < S; s += 32) sW[warp][s] = expf(p.lse_accum[s * rows + row] - lse);
  __syncwarp();
  for (int c = lane; c < dv; c += 32) {
    float x = 0.f;
    for (int s = 0; s < S; ++s)
      if (sW[warp][s] > 0.f) x = fmaf(sW[warp][s], p.o_accum[(s * rows + row) * dv + c], x);
    o[c] = from_float<T>(x);
  }
  if (lane == 0) p.lse[row] = lse;
}

}  // namespace flashsim::gpu::decode
