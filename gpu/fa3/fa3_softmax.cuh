#pragma once
// The online softmax of fa3-v1's consumers, on a wgmma accumulator seen as (rows, cols) (acc_rows_cols): each
// thread holds 2 rows, and a row's columns are spread over the 4 threads of a quad (lanes 4q .. 4q + 3), so a
// row reduction is the thread's own values then two xor-shuffles.
#include <math_constants.h>

#include <cute/tensor.hpp>

namespace flashsim::gpu::fa3 {

// 2^x by the SFU (ex2.approx.ftz: relative error ~2^-22, under the fp32 accumulation error the tolerances
// allow; -inf gives +0).
__device__ __forceinline__ float exp2_approx(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

__device__ __forceinline__ float quad_max(float x) {
  x = fmaxf(x, __shfl_xor_sync(0xffffffff, x, 1));
  return fmaxf(x, __shfl_xor_sync(0xffffffff, x, 2));
}
__device__ __forceinline__ float quad_sum(float x) {
  x += __shfl_xor_sync(0xffffffff, x, 1);
  return x + __shfl_xor_sync(0xffffffff, x, 2);
}

// Row statistics of kRows rows. Scores arrive unscaled (s = q.k, or softcap(scale q.k) with scale_log2 =
// log2 e); the exponent is s * scale_log2 - m * scale_log2, one FFMA a score.
template <int kRows>
struct OnlineSoftmax {
  float row_max[kRows];  // m: the running max of the raw scores (-inf: no visible key yet)
  float
      row_sum[kRows];  // l: this thread's share of sum_j exp2((s_j - m) scale_log2), quad-reduced at the end
  float scale_log2;
  float scale;  // the same in natural units, for the lse

  __device__ OnlineSoftmax(float scale_log2_, float scale_) : scale_log2(scale_log2_), scale(scale_) {
    for (int r = 0; r < kRows; ++r) {
      row_max[r] = -CUDART_INF_F;
      row_sum[r] = 0.f;
    }
  }

  // S (rows, cols) -> P = exp2((S - m_new) scale_log2) in place; rescale[r] = exp2((m_old - m_new) scale_log2),
  // the factor the row's O and l take: m_new = max(m_old, rowmax(S)), l = l rescale + rowsum(P).
  template <class TensorS>
  __device__ __forceinline__ void update(TensorS& s, float (&rescale)[kRows]) {
    static_assert(decltype(cute::size<0>(s))::value == kRows);
    CUTE_UNROLL
    for (int r = 0; r < kRows; ++r) {
      float m = row_max[r];
      CUTE_UNROLL
      for (int c = 0; c < cute::size<1>(s); ++c) m = fmaxf(m, s(r, c));
      m = quad_max(m);
      // A row with no visible key so far keeps m = -inf: subtract 0 instead, so exp2(-inf) = 0, never NaN.
      // (s - m) scale_log2, not s scale_log2 - m scale_log2: at scores of several thousand (large inputs) each
      // product carries fp32's absolute error at that size (and scale_log2's own rounding times it), ~3e-4 in
      // every exponent; s - m is exact near the max, where P matters (the golden magnitude-x64.0-fp16 caught
      // O at 10x fa2-v1's error and the backward's dS, through D = rowsum(dO o O), over its bound).
      const float m_sub = m == -CUDART_INF_F ? 0.f : m;
      rescale[r] = exp2_approx((row_max[r] - m_sub) * scale_log2);
      row_max[r] = m;
      float sum = 0.f;
      CUTE_UNROLL
      for (int c = 0; c < cute::size<1>(s); ++c) {
        s(r, c) = exp2_approx((s(r, c) - m_sub) * scale_log2);
        sum += s(r, c);
      }
      row_sum[r] = row_sum[r] * rescale[r] + sum;
    }
  }

  // inv_sum[r] = 1 / l (0 for a row that saw no key: o = 0); lse[r] = ln(sum_j exp(s_j scale)) (-inf then).
  __device__ __forceinline__ void finalize(float (&inv_sum)[kRows], float (&lse)[kRows]) {
    CUTE_UNROLL
    for (int r = 0; r < kRows; ++r) {
      const float l = quad_sum(row_sum[r]);
      const bool empty = l == 0.f || row_max[r] == -CUDART_INF_F;
      inv_sum[r] = empty ? 0.f : 1.f / l;
      // lse = m scale + ln l in natural units with one rounding of m scale (the backward's exponent subtracts it
      // from scores of the same size: at |s| ~ 1e3 the log2 round trip lost ~1e-3 of it)
      lse[r] = empty ? -CUDART_INF_F : fmaf(row_max[r], scale, logf(l));
    }
  }
};

}  // namespace flashsim::gpu::fa3
