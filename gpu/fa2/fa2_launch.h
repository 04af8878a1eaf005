#pragma once
// fa2-v1's launches by head dim: each head dim's kernels (every entry of fa2's instances.h with that head
// dim) are compiled in a translation unit of their own, forward and backward apart (fa2_fwd_d64.cu, ...,
// fa2_bwd_d256.cu), so that nvcc builds them in parallel. fa2_fwd_v1.cu and fa2_bwd_v1.cu check the request and
// call these.
#include <cuda_runtime.h>

#include <cstdint>
#include <string>

#include "flashsim/dtype.h"
#include "flashsim/families/fa2/instances.h"
#include "flashsim/problem.h"
#include "flashsim/tile_config.h"

namespace flashsim::gpu::fa2 {

struct Fa2FwdParams;  // fa2_fwd_kernel.cuh
struct Fa2BwdParams;  // fa2_bwd_params.cuh

// The head dims with a translation unit, forward and backward: a table entry of another head dim fails to
// compile (below), one added here without its two .cu files fails to link.
inline constexpr int kFa2HeadDims[] = {64, 96, 128, 256};

static_assert(
    [] {
      const auto known = [](int d) {
        for (const int k : kFa2HeadDims)
          if (k == d) return true;
        return false;
      };
      for (const Fa2FwdInstance& e : kFa2FwdInstances)
        if (!known(e.head_dim)) return false;
      for (const Fa2BwdInstance& e : kFa2BwdInstances)
        if (!known(e.head_dim)) return false;
      return true;
    }(),
    "an fa2 instance's head dim needs its translation units (fa2_fwd_d*.cu, fa2_bwd_d*.cu)");

// The instances this build compiles (FLASHSIM_GPU_INSTANCES, top-level CMakeLists.txt). "all" (the GPU
// machine's build): every entry of the tables. "ci" (a machine without a GPU): one forward and one backward
// tile a head dim, each with all its kernels (both stages, bf16 and fp16, plain and score pipeline), so that
// every kernel template path compiles in a fraction of the nvcc time; the eight differ in Br, Bc and warps
// (forward: 1 or 2 m16 tiles a warp, Bc 32 / 64 / 128, 4 or 8 warps; backward: a key tile a warp, or its head
// dim split in two or four, 4- and 8-warp kernels). forward_unsupported / backward_unsupported refuse the
// other tiles ("not compiled in this build").
#if defined(FLASHSIM_GPU_INSTANCES_CI) && FLASHSIM_GPU_INSTANCES_CI
inline constexpr bool kFa2CompilesAll = false;
#else
inline constexpr bool kFa2CompilesAll = true;
#endif
inline constexpr Fa2FwdInstance kFa2CiFwdInstances[] = {
    {64, 128, 64, 4}, {96, 128, 32, 4}, {128, 64, 128, 4}, {256, 128, 64, 8}};
inline constexpr Fa2BwdInstance kFa2CiBwdInstances[] = {
    {64, 128, 128, 4}, {96, 64, 64, 4}, {128, 64, 64, 2}, {256, 64, 32, 4}};

// Whether a tile is in the CI subset / this build compiled the forward (any stages) / backward of a tile.
constexpr bool fa2_ci_fwd_instance(int64_t head_dim, int64_t block_q, int64_t block_k, int64_t warps) {
  for (const Fa2FwdInstance& e : kFa2CiFwdInstances)
    if (e.head_dim == head_dim && e.block_q == block_q && e.block_k == block_k && e.warps == warps)
      return true;
  return false;
}
constexpr bool fa2_ci_bwd_instance(int64_t head_dim, int64_t block_q, int64_t block_k, int64_t warps) {
  for (const Fa2BwdInstance& e : kFa2CiBwdInstances)
    if (e.head_dim == head_dim && e.block_q == block_q && e.block_k == block_k && e.warps == warps)
      return true;
  return false;
}
constexpr bool fa2_fwd_compiled(int64_t head_dim, int64_t block_q, int64_t block_k, int64_t warps) {
  return kFa2CompilesAll || fa2_ci_fwd_instance(head_dim, block_q, block_k, warps);
}
constexpr bool fa2_bwd_compiled(int64_t head_dim, int64_t block_q, int64_t block_k, int64_t warps) {
  return kFa2CompilesAll || fa2_ci_bwd_instance(head_dim, block_q, block_k, warps);
}

static_assert(
    [] {
      for (const int d : kFa2HeadDims) {
        int fwd = 0, bwd = 0;
        for (const Fa2FwdInstance& e : kFa2CiFwdInstances)
          if (e.head_dim == d &&
              fa2_fwd_instantiated(e.head_dim, e.block_q, e.block_k, e.warps, kFa2FwdMinStages))
            ++fwd;
        for (const Fa2BwdInstance& e : kFa2CiBwdInstances)
          if (e.head_dim == d && fa2_bwd_instantiated(e.head_dim, e.block_q, e.block_k, e.warps)) ++bwd;
        if (fwd != 1 || bwd != 1) return false;
      }
      return true;
    }(),
    "FLASHSIM_GPU_INSTANCES=ci: one forward and one backward tile of the tables a head dim");

// Why a tile of the tables is not run by a FLASHSIM_GPU_INSTANCES=ci build: the refusal forward_unsupported /
// backward_unsupported give, naming the tile the build has for the head dim.
inline std::string fa2_not_compiled_text(int64_t head_dim, bool forward) {
  std::string has;
  const auto tile = [](const auto& e) {
    return "Br" + std::to_string(e.block_q) + " Bc" + std::to_string(e.block_k) + " w" +
           std::to_string(e.warps);
  };
  if (forward) {
    for (const Fa2FwdInstance& e : kFa2CiFwdInstances)
      if (e.head_dim == head_dim) has = tile(e);
  } else {
    for (const Fa2BwdInstance& e : kFa2CiBwdInstances)
      if (e.head_dim == head_dim) has = "bwd " + tile(e);
  }
  return "not compiled in this build (FLASHSIM_GPU_INSTANCES=ci: head_dim " + std::to_string(head_dim) +
         " has only " + has + "; FLASHSIM_GPU_INSTANCES=all compiles every instance)";
}

// Launches the forward at tile c (an instance: fa2_fwd_instantiated), dtype bf16 or fp16, on `stream`.
template <int kHeadDim>
void launch_fwd_head_dim(const TileConfig& c, DType dtype, const Fa2FwdParams& prm, cudaStream_t stream);

// Launches the backward's kernels at tile c (fa2_bwd_instantiated): dot_do_o, the main kernel, convert_dq, and
// the dbias reduction when `dbias` is not prm.dbias (a broadcast bias).
template <int kHeadDim>
void launch_bwd_head_dim(const TileConfig& c, const AttentionProblem& p, const Fa2BwdParams& prm,
                         float* dbias, cudaStream_t stream);

}  // namespace flashsim::gpu::fa2
