#pragma once
// fa3-v1's forward launches by head dim: each head dim's kernels (its instance in flashsim/families/fa3, bf16
// and fp16, plain and softcapped) are compiled in a translation unit of their own (fa3_fwd_d64.cu, ...), so that
// nvcc builds them in parallel. fa3_v1.cpp and bench/gpu's standalone driver call these; CUDA's error comes
// back as the return value.
#include <cuda_runtime.h>

#include "fa3_fwd_params.h"
#include "flashsim/families/fa3/instances.h"

namespace flashsim::gpu::fa3 {

// The head dims with a translation unit: an instance of another head dim fails to link.
inline constexpr int kFa3HeadDims[] = {64, 96, 128, 256};

template <int kHeadDim>
cudaError_t launch_fwd_head_dim(const Fa3FwdParams& a, bool bf16, cudaStream_t stream);
template <>
cudaError_t launch_fwd_head_dim<64>(const Fa3FwdParams& a, bool bf16, cudaStream_t stream);
template <>
cudaError_t launch_fwd_head_dim<96>(const Fa3FwdParams& a, bool bf16, cudaStream_t stream);
template <>
cudaError_t launch_fwd_head_dim<128>(const Fa3FwdParams& a, bool bf16, cudaStream_t stream);
template <>
cudaError_t launch_fwd_head_dim<256>(const Fa3FwdParams& a, bool bf16, cudaStream_t stream);

// Dispatches on a.head_dim (cudaErrorInvalidValue for a head dim without an instance).
inline cudaError_t launch_fwd(const Fa3FwdParams& a, bool bf16, cudaStream_t stream) {
  switch (a.head_dim) {
    case 64: return launch_fwd_head_dim<64>(a, bf16, stream);
    case 96: return launch_fwd_head_dim<96>(a, bf16, stream);
    case 128: return launch_fwd_head_dim<128>(a, bf16, stream);
    case 256: return launch_fwd_head_dim<256>(a, bf16, stream);
    default: return cudaErrorInvalidValue;
  }
}

}  // namespace flashsim::gpu::fa3
