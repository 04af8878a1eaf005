#pragma once
// AttentionParams: what a kernel needs of an AttentionProblem, as plain numbers a CUDA kernel takes by value.
// Layouts are the goldens' (docs/design.md): q, o, do, dq [total_q, heads_q, d]; k, v, dk, dv
// [total_k, heads_kv, d]; lse [batch, heads_q, seqlen_q] ([heads_q, total_q] with variable lengths); bias and
// mask [b|1, h|1, seqlen_q, seqlen_k], broadcast dims with stride 0 (with variable lengths sequence b uses the
// top-left len_q x len_k corner of its slice).
#include <cstdint>
#include <string>

#include "flashsim/problem.h"

namespace flashsim::gpu {

struct AttentionParams {
  int batch = 1, heads_q = 1, heads_kv = 1, group = 1;  // group: query heads per kv head
  int seqlen_q = 0, seqlen_k = 0;                       // the longest sequence's lengths with varlen
  int head_dim = 0, head_dim_v = 0;
  int64_t total_q = 0, total_k = 0;         // rows of q and k over all sequences
  float scale = 1.f;                        // s = scale * q.k
  float softcap = 0.f;                      // > 0: s = softcap * tanh(s / softcap)
  int window_left = -1, window_right = -1;  // bottom-right aligned; -1 unbounded; causal: (-1, 0)
  bool varlen = false;  // row offsets and lengths from cu_seqlens_q / cu_seqlens_k (int32, batch + 1)
  bool has_bias = false, has_mask = false, alibi = false;
  int64_t bias_stride_b = 0, bias_stride_h = 0, bias_stride_q = 0;  // key stride 1
  int64_t mask_stride_b = 0, mask_stride_h = 0, mask_stride_q = 0;
  // A block-sparse mask (flashsim/block_mask.h): [b|1, h|1, bm_q_blocks, bm_k_blocks], one byte a
  // bm_block_q x bm_block_k tile (!= 0: computed), strides 0 along its broadcast dims.
  bool has_block_mask = false;
  int bm_block_q = 1, bm_block_k = 1, bm_k_blocks = 0;
  int64_t bm_stride_b = 0, bm_stride_h = 0;
};

// Why a version taking `features` (GpuFeature bits, kernel.h) cannot run p ("" when it may): a paged KV cache,
// a block-sparse mask, attention sinks or dropout it lacks, naming the versions that take it.
std::string missing_gpu_feature(const AttentionProblem& p, unsigned features = 0);

// Throws InputError when a size exceeds int (the kernels index with 32-bit ints where a tile is concerned).
AttentionParams make_params(const AttentionProblem& p);

#if defined(__CUDACC__) || defined(FLASHSIM_GPU_HOST_INLINE)
#define FLASHSIM_HD __host__ __device__ inline
#else
#define FLASHSIM_HD inline
#endif

// Row offsets and lengths of sequence b (cu: the int32 cu_seqlens, ignored without varlen).
FLASHSIM_HD int64_t seq_offset(const AttentionParams& a, const int32_t* cu, int64_t len, int b) {
  return a.varlen ? cu[b] : static_cast<int64_t>(b) * len;
}
FLASHSIM_HD int seq_len(const AttentionParams& a, const int32_t* cu, int len, int b) {
  return a.varlen ? cu[b + 1] - cu[b] : len;
}
// Position of lse(b, h, i): [batch, heads_q, seqlen_q], or [heads_q, total_q] with variable lengths.
FLASHSIM_HD int64_t lse_index(const AttentionParams& a, const int32_t* cu_q, int b, int h, int i) {
  return a.varlen ? h * a.total_q + cu_q[b] + i : (static_cast<int64_t>(b) * a.heads_q + h) * a.seqlen_q + i;
}
// Whether query i sees key j by the window: i + lk - lq - left <= j <= i + lk - lq + right.
FLASHSIM_HD bool window_visible(const AttentionParams& a, int lq, int lk, int i, int j) {
  const int diag = i + lk - lq;
  return (a.window_left < 0 || j >= diag - a.window_left) &&
         (a.window_right < 0 || j <= diag + a.window_right);
}

// The block mask's tiles of (batch b, head h): plane [q blocks, k blocks]; nullptr without a block mask.
FLASHSIM_HD const uint8_t* block_mask_plane(const AttentionParams& a, const uint8_t* block_mask, int b,
                                            int h) {
  return a.has_block_mask ? block_mask + b * a.bm_stride_b + h * a.bm_stride_h : nullptr;
}
// Whether some (any) / every (!any) block-mask tile that rows [i0, i1) x keys [j0, j1) overlap is active, as
// the reference's block_any / block_all (an empty rectangle: !any); true without a block mask.
FLASHSIM_HD bool block_mask_tiles(const AttentionParams& a, const uint8_t* plane, int i0, int i1, int j0,
                                  int j1, bool any) {
  if (!plane) return true;
  if (i1 <= i0 || j1 <= j0) return !any;
  for (int qb = i0 / a.bm_block_q; qb <= (i1 - 1) / a.bm_block_q; ++qb)
    for (int kb = j0 / a.bm_block_k; kb <= (j1 - 1) / a.bm_block_k; ++kb)
      if ((plane[int64_t{qb} * a.bm_k_blocks + kb] != 0) == any) return any;
  return !any;
}
// Whether query i, key j lies in an active tile of the plane (true without a block mask).
FLASHSIM_HD bool block_mask_visible(const AttentionParams& a, const uint8_t* plane, int i, int j) {
  return !plane || plane[int64_t{i / a.bm_block_q} * a.bm_k_blocks + j / a.bm_block_k] != 0;
}

}  // namespace flashsim::gpu
