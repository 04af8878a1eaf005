#pragma once
// fa2-v1's forward launches of one head dim (fa2_launch.h): every kFa2FwdInstances entry of that head dim, for
// every stages value (fa2_fwd_instantiated), bf16 and fp16, plain and score-pipeline kernels. Included only by
// the per-head-dim translation units, each ending in FLASHSIM_FA2_FWD_HEAD_DIM(d).
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <iterator>
#include <stdexcept>
#include <utility>

#include "cuda_launch.h"  // FLASHSIM_CUDA_CHECK, allow_dynamic_smem
#include "fa2_fwd_kernel.cuh"
#include "fa2_launch.h"
#include "flashsim/families/fa2/instances.h"

namespace flashsim::gpu::fa2 {

namespace fwd_launch {

template <int kHeadDim, int kBlockM, int kBlockN, int kNWarps, int kStages, class Element, bool kPipeline>
void run(const Fa2FwdParams& prm, cudaStream_t stream) {
  using Tr = Fa2FwdTraits<kHeadDim, kBlockM, kBlockN, kNWarps, kStages, Element>;
  static_assert(Tr::kSmemBytes == fa2_fwd_smem_bytes(kHeadDim, kBlockM, kBlockN, kStages),
                "flashsim/families/fa2/instances.h's shared-memory formula is the traits'");
  const auto kernel =
      flashsim_fa2_fwd_kernel<kHeadDim, kBlockM, kBlockN, kNWarps, kStages, Element, kPipeline>;
  // + the block-sparse bitmaps (fa2_block_mask.cuh) after K and V
  const size_t smem = Tr::kSmemBytes + (prm.a.has_block_mask ? block_mask_bitmap_bytes(prm.bm_items) : 0);
  allow_dynamic_smem(reinterpret_cast<const void*>(kernel), smem, "fa2-v1");
  const dim3 grid(static_cast<unsigned>((prm.a.seqlen_q + kBlockM - 1) / kBlockM),
                  static_cast<unsigned>(prm.a.batch), static_cast<unsigned>(prm.a.heads_q));
  kernel<<<grid, Tr::kThreads, smem, stream>>>(prm);
  FLASHSIM_CUDA_CHECK(cudaGetLastError());
}

// Entry e at kStages, if c asks for it (forward_unsupported checked the device's shared-memory limit).
template <Fa2FwdInstance e, int kStages, class Element>
bool run_stages(int stages, const Fa2FwdParams& prm, cudaStream_t stream) {
  static_assert(fa2_fwd_instantiated(e.head_dim, e.block_q, e.block_k, e.warps, kStages));
  if (stages != kStages) return false;
  if (prm.pipeline)
    run<e.head_dim, e.block_q, e.block_k, e.warps, kStages, Element, true>(prm, stream);
  else
    run<e.head_dim, e.block_q, e.block_k, e.warps, kStages, Element, false>(prm, stream);
  return true;
}

// Table entry I, if it has head dim kHeadDim and c's tile (and this build compiles it: fa2_fwd_compiled).
template <size_t I, int kHeadDim, class Element>
bool run_entry(const TileConfig& c, const Fa2FwdParams& prm, cudaStream_t stream) {
  constexpr Fa2FwdInstance e = kFa2FwdInstances[I];
  if constexpr (e.head_dim != kHeadDim || !fa2_fwd_compiled(e.head_dim, e.block_q, e.block_k, e.warps)) {
    return false;
  } else {
    if (c.block_q != e.block_q || c.block_k != e.block_k || c.warps != e.warps) return false;
    const auto any_stages = [&]<int... S>(std::integer_sequence<int, S...>) {
      return (run_stages<e, kFa2FwdMinStages + S, Element>(c.stages, prm, stream) || ...);
    };
    return any_stages(std::make_integer_sequence<int, kFa2FwdMaxStages - kFa2FwdMinStages + 1>{});
  }
}

template <int kHeadDim, class Element>
bool run_any(const TileConfig& c, const Fa2FwdParams& prm, cudaStream_t stream) {
  const auto any_entry = [&]<size_t... I>(std::index_sequence<I...>) {
    return (run_entry<I, kHeadDim, Element>(c, prm, stream) || ...);
  };
  return any_entry(std::make_index_sequence<std::size(kFa2FwdInstances)>{});
}

}  // namespace fwd_launch

template <int kHeadDim>
void launch_fwd_head_dim(const TileConfig& c, DType dtype, const Fa2FwdParams& prm, cudaStream_t stream) {
  const bool ran = dtype == DType::BF16 ? fwd_launch::run_any<kHeadDim, __nv_bfloat16>(c, prm, stream)
                                        : fwd_launch::run_any<kHeadDim, __half>(c, prm, stream);
  if (!ran) throw std::logic_error("fa2-v1: the tile passed forward_unsupported() but has no instance");
}

}  // namespace flashsim::gpu::fa2

// The explicit instantiation that compiles head dim d's forward kernels (in fa2_fwd_d<d>.cu).
#define FLASHSIM_FA2_FWD_HEAD_DIM(d)                        \
  template void flashsim::gpu::fa2::launch_fwd_head_dim<d>( \
      const flashsim::TileConfig&, flashsim::DType, const flashsim::gpu::fa2::Fa2FwdParams&, cudaStream_t)
