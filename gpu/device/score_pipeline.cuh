#pragma once
// The score pipeline of docs/design.md on the device, shared by every CUDA version that computes scores one
// element at a time (naive-v1's row kernels, the streaming kernels): s = scale * q.k (by the caller), then
// softcap, + bias, + ALiBi, then -inf where the window or the mask hides key j
// (reference/src/head_view.h, HeadView::scores). Also the element conversions these kernels use.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "flashsim/gpu/params.h"

namespace flashsim::gpu {

__device__ inline float neg_inf() {
  return __int_as_float(0xff800000);  // -inf in IEEE binary32
}

// Element conversions by the cuda_fp16.h / cuda_bf16.h intrinsics (round to nearest even).
__device__ inline float to_float(float x) {
  return x;
}
__device__ inline float to_float(__half x) {
  return __half2float(x);
}
__device__ inline float to_float(__nv_bfloat16 x) {
  return __bfloat162float(x);
}
template <class T>
__device__ inline T from_float(float x);
template <>
__device__ inline float from_float<float>(float x) {
  return x;
}
template <>
__device__ inline __half from_float<__half>(float x) {
  return __float2half_rn(x);
}
template <>
__device__ inline __nv_bfloat16 from_float<__nv_bfloat16>(float x) {
  return __float2bfloat16_rn(x);
}

// Index of (b, h, i, j) in a [b|1, h|1, seqlen_q, seqlen_k] bias (or dbias): broadcast dims have stride 0.
__device__ inline int64_t bias_index(const AttentionParams& a, int b, int h, int i, int j) {
  return b * a.bias_stride_b + h * a.bias_stride_h + i * a.bias_stride_q + j;
}
// Index of (b, h, i, j) in a [b|1, h|1, seqlen_q, seqlen_k] mask, as bias_index.
__device__ inline int64_t mask_index(const AttentionParams& a, int b, int h, int i, int j) {
  return b * a.mask_stride_b + h * a.mask_stride_h + i * a.mask_stride_q + j;
}

// The inputs of the pipeline besides the score, for sequence b (lengths lq, lk): pointers as DeviceArgs
// (nullptr where the feature is off).
struct ScoreInputs {
  const void* bias = nullptr;           // [b|1, h|1, seqlen_q, seqlen_k], the problem's dtype T
  const uint8_t* mask = nullptr;        // same shape, != 0 keeps the score
  const float* slopes = nullptr;        // alibi slopes [heads_q]
  const uint8_t* block_mask = nullptr;  // [b|1, h|1, q blocks, k blocks] (a.has_block_mask): != 0 computed
};

// The score before the masks, from s = scale * q.k: softcap c: s = c tanh(s / c); + bias (the element's value,
// read only where a.has_bias); + ALiBi -slope |dist|, dist = i + lk - lq - j (bottom-right aligned). dcap
// (optional) receives the softcap's derivative 1 - tanh^2(s / c). Every kernel's score goes through here.
__device__ inline float biased_score(const AttentionParams& a, float s, float bias, float slope, int dist,
                                     float* dcap = nullptr) {
  float x = s;
  if (a.softcap > 0.f) {
    const float t = tanhf(x / a.softcap);  // s = c tanh(s / c)
    x = a.softcap * t;
    if (dcap) *dcap = 1.f - t * t;  // d(c tanh(s / c)) / ds = 1 - tanh^2(s / c)
  }
  if (a.has_bias) x += bias;                                               // s += bias
  if (a.alibi) x += -slope * static_cast<float>(dist < 0 ? -dist : dist);  // s += -slope_h |dist|
  return x;
}

// The pipelined score of query i (query head h) and key j of sequence b, from s = scale * q.k: biased_score,
// then -inf where the window, the mask or the block mask hides key j.
template <class T>
__device__ inline float score_pipeline(const AttentionParams& a, const ScoreInputs& in, int b, int h, int lq,
                                       int lk, int i, int j, float s, float* dcap) {
  const float bias = a.has_bias ? to_float(static_cast<const T*>(in.bias)[bias_index(a, b, h, i, j)]) : 0.f;
  const float x = biased_score(a, s, bias, a.alibi ? in.slopes[h] : 0.f, i + lk - lq - j, dcap);
  const bool visible =
      window_visible(a, lq, lk, i, j) && (!a.has_mask || in.mask[mask_index(a, b, h, i, j)] != 0) &&
      (!a.has_block_mask || block_mask_visible(a, block_mask_plane(a, in.block_mask, b, h), i, j));
  return visible ? x : neg_inf();
}

}  // namespace flashsim::gpu
