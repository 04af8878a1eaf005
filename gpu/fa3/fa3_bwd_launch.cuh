#pragma once
// fa3-v1's backward launches for one instance (flashsim/families/fa3/instances.h): dq_accum = 0, dot_do_o (D),
// the main kernel (TMA descriptors of k, v, q, dout; one CTA per key block, kv head and batch; a one-CTA
// cluster), convert_dq. Returns CUDA's first error, as fa3_fwd_launch.cuh.
#include <cuda_runtime.h>
#include <cutlass/numeric_types.h>

#include <cute/tensor.hpp>

#include "fa3_bwd_kernel.cuh"
#include "fa3_bwd_rowwise.cuh"
#include "fa3_fwd_launch.cuh"  // gmem_tensor, launch_cluster_of_one
#include "flashsim/families/fa3/instances.h"

namespace flashsim::gpu::fa3 {

// kWithSoftcap: the instance's softcapped main kernel is compiled (instances.h); without it a softcap is
// cudaErrorInvalidValue (fa3_v1.cpp refuses it first, saying why). kSoftcapOnly: its plain kernel is not (an
// instance that only softcapped problems run).
template <int kHeadDim, int kBlockM, int kBlockN, int kStages, class Element, bool kWithSoftcap,
          bool kSoftcapOnly = false>
cudaError_t launch_fa3_bwd(const Fa3BwdParams& a, cudaStream_t stream) {
  if (!kWithSoftcap && a.softcap > 0.f) return cudaErrorInvalidValue;
  if (kSoftcapOnly && !(a.softcap > 0.f)) return cudaErrorInvalidValue;
  using Tr = Fa3BwdTraits<kHeadDim, kBlockM, kBlockN, kStages, Element>;
  using Params = Fa3BwdKernelParams<Tr>;
  if (a.total_q <= 0 && a.total_k <= 0) return cudaSuccess;
  constexpr int kRowThreads = 256;  // 8 warps, a (row, head) each
  const int64_t rows = a.total_q * a.heads_q;
  if (rows > 0) {
    // The reduces add into zeros; the deterministic slabs are each written whole before convert_dq reads them.
    if (cudaError_t e = a.dq_slabs > 1
                            ? cudaSuccess
                            : cudaMemsetAsync(a.dq_accum, 0,
                                              static_cast<size_t>(a.heads_q * a.dq_accum_rows * kHeadDim *
                                                                  static_cast<int64_t>(sizeof(float))),
                                              stream);
        e != cudaSuccess)
      return e;
    flashsim_fa3_bwd_dot_do_o_kernel<Element>
        <<<static_cast<unsigned>((rows * 32 + kRowThreads - 1) / kRowThreads), kRowThreads, 0, stream>>>(a);
    if (cudaError_t e = cudaGetLastError(); e != cudaSuccess) return e;
  }
  if (a.total_k > 0) {
    // Traits' shapes index the tile: a descriptor takes one stage of Q / dO.
    Params prm{
        a,
        make_tma_copy(SM90_TMA_LOAD{}, gmem_tensor<Tr>(a.k, a.total_k, a.heads_kv),
                      typename Tr::SmemLayoutK{}, Shape<Int<kBlockN>, Int<kHeadDim>>{}, _1{}),
        make_tma_copy(SM90_TMA_LOAD{}, gmem_tensor<Tr>(a.v, a.total_k, a.heads_kv),
                      typename Tr::SmemLayoutV{}, Shape<Int<kBlockN>, Int<kHeadDim>>{}, _1{}),
        make_tma_copy(SM90_TMA_LOAD{}, gmem_tensor<Tr>(a.total_q > 0 ? a.q : a.k, a.total_q, a.heads_q),
                      take<0, 2>(typename Tr::SmemLayoutQ{}), Shape<Int<kBlockM>, Int<kHeadDim>>{}, _1{}),
        make_tma_copy(SM90_TMA_LOAD{}, gmem_tensor<Tr>(a.total_q > 0 ? a.dout : a.k, a.total_q, a.heads_q),
                      take<0, 2>(typename Tr::SmemLayoutDO{}), Shape<Int<kBlockM>, Int<kHeadDim>>{}, _1{})};
    const dim3 grid(static_cast<unsigned>((a.seqlen_k + kBlockN - 1) / kBlockN),
                    static_cast<unsigned>(a.heads_kv), static_cast<unsigned>(a.batch));
    const auto kernel = [&] {
      if constexpr (kSoftcapOnly)
        return flashsim_fa3_bwd_kernel<Tr, true>;
      else
        return kWithSoftcap && a.softcap > 0.f ? flashsim_fa3_bwd_kernel<Tr, kWithSoftcap>
                                               : flashsim_fa3_bwd_kernel<Tr, false>;
    }();
    if (cudaError_t e = launch_cluster_of_one(kernel, grid, Tr::kThreads, Tr::kSmemBytes, stream, prm);
        e != cudaSuccess)
      return e;
  }
  if (rows > 0) {
    const dim3 blocks(static_cast<unsigned>((a.seqlen_q + kBlockM - 1) / kBlockM),
                      static_cast<unsigned>(a.heads_q), static_cast<unsigned>(a.batch));
    flashsim_fa3_bwd_convert_dq_kernel<Tr><<<blocks, Tr::kMmaThreads, 0, stream>>>(a);
    return cudaGetLastError();
  }
  return cudaSuccess;
}

template <Fa3BwdInstance e, bool kSoftcapOnly = false>
cudaError_t launch_fa3_bwd_dtype(const Fa3BwdParams& a, bool bf16, cudaStream_t stream) {
  if (bf16)
    return launch_fa3_bwd<e.head_dim, e.block_q, e.block_k, e.stages, cutlass::bfloat16_t, e.softcap,
                          kSoftcapOnly>(a, stream);
  if constexpr (kFa3HandOnly)  // bf16 alone (fa3_launch.h)
    return cudaErrorInvalidValue;
  else
    return launch_fa3_bwd<e.head_dim, e.block_q, e.block_k, e.stages, cutlass::half_t, e.softcap,
                          kSoftcapOnly>(a, stream);
}

// A head dim's backward: its hand-kept instance, or for a softcap the instance that has a softcapped kernel
// where that is another (a full build: FLASHSIM_GPU_INSTANCES=ci compiles the hand-kept one alone).
template <int kHeadDim>
cudaError_t launch_fa3_bwd_head_dim(const Fa3BwdParams& a, bool bf16, cudaStream_t stream) {
  constexpr const Fa3BwdInstance* kHand = fa3_bwd_instance(kHeadDim);
  constexpr const Fa3BwdInstance* kCapped = fa3_bwd_instance(kHeadDim, true);
  if constexpr (kCapped != nullptr && kCapped != kHand && !kFa3HandOnly)
    if (a.softcap > 0.f) return launch_fa3_bwd_dtype<*kCapped, true>(a, bf16, stream);
  return launch_fa3_bwd_dtype<*kHand>(a, bf16, stream);
}

}  // namespace flashsim::gpu::fa3
