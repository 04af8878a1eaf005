#pragma once
// fa3-v1's backward, the two row-wise kernels around the main one (fa3_bwd_kernel.cuh):
//   dot_do_o:   D_i = sum_c dO_ic O_ic in fp32 (FlashAttention's dP sum, in lse's layout), and dq_accum = 0;
//   convert_dq: dQ = scale * dq_accum, rounded to the input dtype.
// One warp a (row, head); d / 32 elements a lane.
#include <cuda_runtime.h>

#include "fa3_bwd_params.h"

namespace flashsim::gpu::fa3 {

template <class Element>
__global__ void flashsim_fa3_bwd_dot_do_o_kernel(const Fa3BwdParams a) {
  const int64_t warp = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
  const int lane = threadIdx.x % 32;
  if (warp >= a.total_q * a.heads_q) return;
  const int64_t row = warp / a.heads_q;  // packed query row
  const int h = static_cast<int>(warp % a.heads_q);
  const int64_t base = warp * a.head_dim;
  const auto* dout = static_cast<const Element*>(a.dout) + base;
  const auto* o = static_cast<const Element*>(a.o) + base;
  float sum = 0.f;
  for (int c = lane; c < a.head_dim; c += 32) {
    sum += static_cast<float>(dout[c]) * static_cast<float>(o[c]);
    a.dq_accum[base + c] = 0.f;
  }
  for (int off = 16; off > 0; off /= 2) sum += __shfl_xor_sync(0xffffffff, sum, off);
  if (lane != 0) return;
  // lse's layout: [heads_q, total_q] with variable lengths, else [batch, heads_q, seqlen_q].
  int64_t at;
  if (a.varlen) {
    at = h * a.total_q + row;
  } else {
    const int64_t b = row / a.seqlen_q, i = row % a.seqlen_q;
    at = (b * a.heads_q + h) * a.seqlen_q + i;
  }
  a.dpsum[at] = sum;
}

template <class Element>
__global__ void flashsim_fa3_bwd_convert_dq_kernel(const Fa3BwdParams a) {
  const int64_t n = a.total_q * a.heads_q * a.head_dim;
  auto* dq = static_cast<Element*>(a.dq);
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    dq[i] = static_cast<Element>(a.dq_accum[i] * a.scale);
}

}  // namespace flashsim::gpu::fa3
