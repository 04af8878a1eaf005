#pragma once
// fa2-v1's launches by head dim: each head dim's kernels (every entry of fa2's instances.h with that head
// dim) are compiled in a translation unit of their own, forward and backward apart (fa2_fwd_d64.cu, ...,
// fa2_bwd_d256.cu), so that nvcc builds them in parallel. fa2_fwd_v1.cu and fa2_bwd_v1.cu check the request and
// call these.
#include <cuda_runtime.h>

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

// Launches the forward at tile c (an instance: fa2_fwd_instantiated), dtype bf16 or fp16, on `stream`.
template <int kHeadDim>
void launch_fwd_head_dim(const TileConfig& c, DType dtype, const Fa2FwdParams& prm, cudaStream_t stream);

// Launches the backward's kernels at tile c (fa2_bwd_instantiated): dot_do_o, the main kernel, convert_dq, and
// the dbias reduction when `dbias` is not prm.dbias (a broadcast bias).
template <int kHeadDim>
void launch_bwd_head_dim(const TileConfig& c, const AttentionProblem& p, const Fa2BwdParams& prm,
                         float* dbias, cudaStream_t stream);

}  // namespace flashsim::gpu::fa2
