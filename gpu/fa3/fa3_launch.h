#pragma once
// fa3-v1's forward launches by head dim: each head dim's kernels (its instance in flashsim/families/fa3, bf16
// and fp16, plain and softcapped) are compiled in a translation unit of their own (fa3_fwd_d64.cu, ...), so that
// nvcc builds them in parallel. fa3_v1.cpp and bench/gpu's standalone driver call these; CUDA's error comes
// back as the return value.
#include <cuda_runtime.h>

#include <cstddef>
#include <iterator>
#include <utility>

#include "fa3_bwd_params.h"
#include "fa3_fwd_params.h"
#include "flashsim/families/fa3/instances.h"

namespace flashsim::gpu::fa3 {

// The head dims compiled in this build (the build defines FLASHSIM_FA3_HEAD_DIMS; FLASHSIM_GPU_INSTANCES=ci builds
// d128 alone): each has a translation unit, fa3_fwd_d<d>.cu.
#ifndef FLASHSIM_FA3_HEAD_DIMS
#define FLASHSIM_FA3_HEAD_DIMS 64, 96, 128, 256
#endif
inline constexpr int kFa3CompiledHeadDims[] = {FLASHSIM_FA3_HEAD_DIMS};
// The backward's: those of the forward that have a backward instance (every one).
#ifndef FLASHSIM_FA3_BWD_HEAD_DIMS
#define FLASHSIM_FA3_BWD_HEAD_DIMS 64, 96, 128, 256
#endif
inline constexpr int kFa3CompiledBwdHeadDims[] = {FLASHSIM_FA3_BWD_HEAD_DIMS};

constexpr bool fa3_head_dim_compiled(int d) {
  for (const int c : kFa3CompiledHeadDims)
    if (c == d) return true;
  return false;
}
// FLASHSIM_GPU_INSTANCES=ci compiles a head dim's hand-kept forward instance alone (FLASHSIM_FA3_HAND_ONLY),
// and bf16 alone (fp16 takes the same template path with another element type: a CI build that never runs its
// kernels halves its fa3 nvcc time); a full build every instance of kFa3FwdInstances in both dtypes.
#ifdef FLASHSIM_FA3_HAND_ONLY
inline constexpr bool kFa3HandOnly = true;
#else
inline constexpr bool kFa3HandOnly = false;
#endif
constexpr bool fa3_fwd_instance_compiled(const Fa3FwdInstance& e) {
  return fa3_head_dim_compiled(e.head_dim) && (!kFa3HandOnly || *fa3_fwd_instance(e.head_dim) == e);
}
constexpr bool fa3_bwd_head_dim_compiled(int d) {
  for (const int c : kFa3CompiledBwdHeadDims)
    if (c == d) return true;
  return false;
}

template <int kHeadDim>
cudaError_t launch_fwd_head_dim(const Fa3FwdParams& a, bool bf16, cudaStream_t stream);

template <size_t... I>
cudaError_t launch_fwd_compiled(const Fa3FwdParams& a, bool bf16, cudaStream_t stream,
                                std::index_sequence<I...>) {
  cudaError_t e = cudaErrorInvalidValue;
  ((a.head_dim == kFa3CompiledHeadDims[I] &&
    (e = launch_fwd_head_dim<kFa3CompiledHeadDims[I]>(a, bf16, stream), true)) ||
   ...);
  return e;
}

// Dispatches on a.head_dim, then on the instance (a.block_k, a.stages): cudaErrorInvalidValue for a head dim
// or an instance this build did not compile.
inline cudaError_t launch_fwd(const Fa3FwdParams& a, bool bf16, cudaStream_t stream) {
  return launch_fwd_compiled(a, bf16, stream, std::make_index_sequence<std::size(kFa3CompiledHeadDims)>{});
}

template <int kHeadDim>
cudaError_t launch_bwd_head_dim(const Fa3BwdParams& a, bool bf16, cudaStream_t stream);

template <size_t... I>
cudaError_t launch_bwd_compiled(const Fa3BwdParams& a, bool bf16, cudaStream_t stream,
                                std::index_sequence<I...>) {
  cudaError_t e = cudaErrorInvalidValue;
  ((a.head_dim == kFa3CompiledBwdHeadDims[I] &&
    (e = launch_bwd_head_dim<kFa3CompiledBwdHeadDims[I]>(a, bf16, stream), true)) ||
   ...);
  return e;
}

// The backward's three kernels (dot_do_o, main, convert_dq) for a.head_dim.
inline cudaError_t launch_bwd(const Fa3BwdParams& a, bool bf16, cudaStream_t stream) {
  return launch_bwd_compiled(a, bf16, stream, std::make_index_sequence<std::size(kFa3CompiledBwdHeadDims)>{});
}

}  // namespace flashsim::gpu::fa3
