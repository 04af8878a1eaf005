#pragma once
// fa3-v1's forward launch for one instance (flashsim/families/fa3/instances.h): the TMA descriptors of q, k, v,
// the grid, and cudaLaunchKernelEx with a cluster of one CTA (the pipelines' barriers are cluster-scoped).
// Included by the per-head-dim translation units (fa3_fwd_d*.cu) and by bench/gpu's standalone driver; returns
// CUDA's error instead of throwing, so that both can report it their way.
#include <cuda_runtime.h>
#include <cutlass/numeric_types.h>

#include <cute/tensor.hpp>
#include <iterator>
#include <type_traits>
#include <utility>

#include "fa3_fwd_kernel.cuh"
#include "fa3_launch.h"  // fa3_fwd_instance_compiled
#include "flashsim/families/fa3/instances.h"

namespace flashsim::gpu::fa3 {

// q, k or v as the kernel's (rows, d, heads) tensor, for a TMA descriptor; rows >= 1 (a descriptor of an empty
// tensor cannot be encoded; the kernel loads nothing then).
template <class Tr>
auto gmem_tensor(const void* ptr, int64_t rows, int heads) {
  using Element = typename Tr::Element;
  return make_tensor(
      make_gmem_ptr(static_cast<Element const*>(ptr)),
      make_layout(
          make_shape(static_cast<int>(rows < 1 ? 1 : rows), Int<Tr::kHeadDim>{}, heads),
          make_stride(static_cast<int64_t>(heads) * Tr::kHeadDim, _1{}, static_cast<int64_t>(Tr::kHeadDim))));
}

// Launches `kernel` with `smem` bytes of dynamic shared memory in clusters of one CTA (the pipelines' barriers
// are cluster-scoped) and returns the launch's error.
template <class Kernel, class Params>
cudaError_t launch_cluster_of_one(Kernel kernel, dim3 grid, int threads, int smem, cudaStream_t stream,
                                  const Params& prm) {
  if (cudaError_t e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
      e != cudaSuccess)
    return e;
  cudaLaunchConfig_t config = {};
  config.gridDim = grid;
  config.blockDim = dim3(threads);
  config.dynamicSmemBytes = smem;
  config.stream = stream;
  cudaLaunchAttribute cluster = {};
  cluster.id = cudaLaunchAttributeClusterDimension;
  cluster.val.clusterDim.x = cluster.val.clusterDim.y = cluster.val.clusterDim.z = 1;
  config.attrs = &cluster;
  config.numAttrs = 1;
  if (cudaError_t e = cudaLaunchKernelEx(&config, kernel, prm); e != cudaSuccess) return e;
  return cudaGetLastError();
}

template <int kHeadDim, int kBlockM, int kBlockN, int kStages, class Element, bool kSoftcap>
cudaError_t launch_fa3_fwd(const Fa3FwdParams& a, cudaStream_t stream) {
  using Tr = Fa3FwdTraits<kHeadDim, kBlockM, kBlockN, kStages, Element>;
  using Params = Fa3FwdKernelParams<Tr>;
  if (a.seqlen_q <= 0 || a.batch <= 0) return cudaSuccess;
  Params prm{
      a,
      make_tma_copy(SM90_TMA_LOAD{}, gmem_tensor<Tr>(a.q, a.total_q, a.heads_q), typename Tr::SmemLayoutQ{},
                    Shape<Int<kBlockM>, Int<kHeadDim>>{}, _1{}),
      make_tma_copy(SM90_TMA_LOAD{}, gmem_tensor<Tr>(a.k, a.total_k, a.heads_kv),
                    take<0, 2>(typename Tr::SmemLayoutK{}), Shape<Int<kBlockN>, Int<kHeadDim>>{}, _1{}),
      make_tma_copy(SM90_TMA_LOAD{}, gmem_tensor<Tr>(a.v, a.total_k, a.heads_kv),
                    take<0, 2>(typename Tr::SmemLayoutV{}), Shape<Int<kBlockN>, Int<kHeadDim>>{}, _1{})};
  // Persistent: one CTA a SM (its shared memory and 384 threads of 168 registers allow no second), each
  // walking the tiles gridDim.x apart or its list of the balanced walk (built for walk_ctas CTAs); else one CTA
  // a tile, which the hardware hands out as SMs free up.
  int device = 0, sms = 0;
  if (cudaError_t e = cudaGetDevice(&device); e != cudaSuccess) return e;
  if (cudaError_t e = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device); e != cudaSuccess)
    return e;
  const int64_t tiles = static_cast<int64_t>((a.seqlen_q + kBlockM - 1) / kBlockM) * a.heads_q * a.batch;
  const int64_t grid = a.walk ? a.walk_ctas : a.persistent && sms < tiles ? sms : tiles;
  return launch_cluster_of_one(flashsim_fa3_fwd_kernel<Tr, kSoftcap>, dim3(static_cast<unsigned>(grid)),
                               Tr::kThreads, Tr::kSmemBytes, stream, prm);
}

// An instance (instances.h), bf16 or fp16, plain or softcapped (where it has a softcapped kernel).
template <Fa3FwdInstance e>
cudaError_t launch_fa3_fwd_dtype(const Fa3FwdParams& a, bool bf16, cudaStream_t stream) {
  const bool cap = a.softcap > 0.f;
  constexpr int d = e.head_dim, bm = e.block_q, bn = e.block_k, st = e.stages;
  if constexpr (kFa3HandOnly) {  // bf16 alone (fa3_launch.h)
    if (!bf16 || (cap && !e.softcap)) return cudaErrorInvalidValue;
    if constexpr (e.softcap)
      if (cap) return launch_fa3_fwd<d, bm, bn, st, cutlass::bfloat16_t, true>(a, stream);
    return launch_fa3_fwd<d, bm, bn, st, cutlass::bfloat16_t, false>(a, stream);
  } else if constexpr (!e.softcap) {  // no softcapped kernel (instances.h: it would spill)
    if (cap) return cudaErrorInvalidValue;
    return bf16 ? launch_fa3_fwd<d, bm, bn, st, cutlass::bfloat16_t, false>(a, stream)
                : launch_fa3_fwd<d, bm, bn, st, cutlass::half_t, false>(a, stream);
  } else {
    if (bf16)
      return cap ? launch_fa3_fwd<d, bm, bn, st, cutlass::bfloat16_t, true>(a, stream)
                 : launch_fa3_fwd<d, bm, bn, st, cutlass::bfloat16_t, false>(a, stream);
    return cap ? launch_fa3_fwd<d, bm, bn, st, cutlass::half_t, true>(a, stream)
               : launch_fa3_fwd<d, bm, bn, st, cutlass::half_t, false>(a, stream);
  }
}

// The instance of head dim kHeadDim that a asks for (a.block_k, a.stages; 0, 0: the hand-kept one, or with a
// softcap the first with a softcapped kernel) among
// those this build compiles (fa3_launch.h); cudaErrorInvalidValue when it is none of them. Instantiates the
// kernels of those instances alone.
template <int kHeadDim, size_t... I>
cudaError_t launch_fa3_fwd_instances(const Fa3FwdParams& a, bool bf16, cudaStream_t stream,
                                     std::index_sequence<I...>) {
  const Fa3FwdInstance* hand = fa3_fwd_instance(kHeadDim);
  if (a.softcap > 0.f && !hand->softcap) hand = fa3_fwd_softcap_instance(kHeadDim);
  const int bk = a.block_k > 0 ? a.block_k : hand->block_k, st = a.stages > 0 ? a.stages : hand->stages;
  cudaError_t e = cudaErrorInvalidValue;
  const auto one = [&](auto index) {
    constexpr Fa3FwdInstance inst = kFa3FwdInstances[decltype(index)::value];
    if constexpr (inst.head_dim == kHeadDim && fa3_fwd_instance_compiled(inst)) {
      if (inst.block_k != bk || inst.stages != st) return false;
      e = launch_fa3_fwd_dtype<inst>(a, bf16, stream);
      return true;
    } else {
      return false;
    }
  };
  (one(std::integral_constant<size_t, I>{}) || ...);
  return e;
}

template <int kHeadDim>
cudaError_t launch_fa3_fwd_head_dim(const Fa3FwdParams& a, bool bf16, cudaStream_t stream) {
  return launch_fa3_fwd_instances<kHeadDim>(a, bf16, stream,
                                            std::make_index_sequence<std::size(kFa3FwdInstances)>{});
}

}  // namespace flashsim::gpu::fa3
