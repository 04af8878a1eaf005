#pragma once
// fa2-v1's backward launches of one head dim (fa2_launch.h): every kFa2BwdInstances entry of that head dim, bf16
// and fp16, plain and score-pipeline main kernels, each with its dot_do_o, convert_dq and dbias kernels.
// Included only by the per-head-dim translation units, each ending in FLASHSIM_FA2_BWD_HEAD_DIM(d).
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <stdexcept>
#include <utility>

#include "cuda_launch.h"  // FLASHSIM_CUDA_CHECK, allow_dynamic_smem
#include "fa2_bwd_kernel.cuh"
#include "fa2_bwd_rowwise.cuh"
#include "fa2_launch.h"
#include "flashsim/families/fa2/instances.h"

namespace flashsim::gpu::fa2 {

namespace bwd_launch {

template <int kHeadDim, int kBlockM, int kBlockN, int kNWarps, class Element, bool kPipeline>
void run(const Fa2BwdParams& prm, const AttentionProblem& p, float* dbias, cudaStream_t stream) {
  using Tr = Fa2BwdTraits<kHeadDim, kBlockM, kBlockN, kNWarps, Element>;
  static_assert(Tr::kSmemBytes == fa2_bwd_smem_bytes(kHeadDim, kBlockM, kBlockN),
                "flashsim/families/fa2/instances.h's shared-memory formula is the traits'");
  const unsigned q_blocks = static_cast<unsigned>((prm.a.seqlen_q + kBlockM - 1) / kBlockM);
  const unsigned k_blocks = static_cast<unsigned>((prm.a.seqlen_k + kBlockN - 1) / kBlockN);
  const dim3 rows_grid(q_blocks, static_cast<unsigned>(prm.a.batch), static_cast<unsigned>(prm.a.heads_q));
  const dim3 main_grid(k_blocks, static_cast<unsigned>(prm.a.batch), static_cast<unsigned>(prm.a.heads_kv));

  flashsim_fa2_bwd_dot_kernel<kHeadDim, kBlockM, kBlockN, kNWarps, Element>
      <<<rows_grid, Tr::kThreads, 0, stream>>>(prm);
  FLASHSIM_CUDA_CHECK(cudaGetLastError());

  const auto main = flashsim_fa2_bwd_main_kernel<kHeadDim, kBlockM, kBlockN, kNWarps, Element, kPipeline>;
  // + the block-sparse bitmaps (fa2_block_mask.cuh) after D
  const size_t smem = Tr::kSmemBytes + (prm.a.has_block_mask ? block_mask_bitmap_bytes(prm.bm_items) : 0);
  allow_dynamic_smem(reinterpret_cast<const void*>(main), smem, "fa2-v1 backward");
  main<<<main_grid, Tr::kThreads, smem, stream>>>(prm);
  FLASHSIM_CUDA_CHECK(cudaGetLastError());

  flashsim_fa2_bwd_convert_kernel<kHeadDim, kBlockM, kBlockN, kNWarps, Element>
      <<<rows_grid, Tr::kThreads, 0, stream>>>(prm);
  FLASHSIM_CUDA_CHECK(cudaGetLastError());

  if (dbias && dbias != prm.dbias) {  // dS went to the full-size workspace: reduce over the broadcast dims
    const auto shape = p.broadcast_shape(p.bias);
    const int64_t elems = p.bias_elems();
    // 256 threads a block, one element a thread; past 65535 blocks the kernel's grid-stride loop takes the rest
    const unsigned blocks = static_cast<unsigned>(std::min<int64_t>((elems + 255) / 256, 65535));
    flashsim_fa2_bwd_dbias_kernel<kHeadDim, kBlockM, kBlockN, kNWarps, Element>
        <<<blocks, 256, 0, stream>>>(prm, dbias, static_cast<int>(shape[0]), static_cast<int>(shape[1]));
    FLASHSIM_CUDA_CHECK(cudaGetLastError());
  }
}

// Table entry I, if it has head dim kHeadDim and c's backward tile (its kernel: 2 x c.warps warps) and this
// build compiles it (fa2_bwd_compiled).
template <size_t I, int kHeadDim, class Element>
bool run_entry(const TileConfig& c, const AttentionProblem& p, const Fa2BwdParams& prm, float* dbias,
               cudaStream_t stream) {
  constexpr Fa2BwdInstance e = kFa2BwdInstances[I];
  if constexpr (e.head_dim != kHeadDim || !fa2_bwd_compiled(e.head_dim, e.block_q, e.block_k, e.warps)) {
    return false;
  } else {
    if (c.bwd_block_q != e.block_q || c.bwd_block_k != e.block_k || c.warps != e.warps) return false;
    if (prm.pipeline)
      run<e.head_dim, e.block_q, e.block_k, 2 * e.warps, Element, true>(prm, p, dbias, stream);
    else
      run<e.head_dim, e.block_q, e.block_k, 2 * e.warps, Element, false>(prm, p, dbias, stream);
    return true;
  }
}

template <int kHeadDim, class Element>
bool run_any(const TileConfig& c, const AttentionProblem& p, const Fa2BwdParams& prm, float* dbias,
             cudaStream_t stream) {
  const auto any_entry = [&]<size_t... I>(std::index_sequence<I...>) {
    return (run_entry<I, kHeadDim, Element>(c, p, prm, dbias, stream) || ...);
  };
  return any_entry(std::make_index_sequence<std::size(kFa2BwdInstances)>{});
}

}  // namespace bwd_launch

template <int kHeadDim>
void launch_bwd_head_dim(const TileConfig& c, const AttentionProblem& p, const Fa2BwdParams& prm,
                         float* dbias, cudaStream_t stream) {
  const bool ran = p.dtype == DType::BF16
                       ? bwd_launch::run_any<kHeadDim, __nv_bfloat16>(c, p, prm, dbias, stream)
                       : bwd_launch::run_any<kHeadDim, __half>(c, p, prm, dbias, stream);
  if (!ran) throw std::logic_error("fa2-v1: the tile passed backward_unsupported() but has no instance");
}

}  // namespace flashsim::gpu::fa2

// The explicit instantiation that compiles head dim d's backward kernels (in fa2_bwd_d<d>.cu).
#define FLASHSIM_FA2_BWD_HEAD_DIM(d)                                  \
  template void flashsim::gpu::fa2::launch_bwd_head_dim<d>(           \
      const flashsim::TileConfig&, const flashsim::AttentionProblem&, \
      const flashsim::gpu::fa2::Fa2BwdParams&, float*, cudaStream_t)
