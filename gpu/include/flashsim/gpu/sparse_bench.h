#pragma once
// The block-sparse benchmark (flashsim-gpu sparse-bench): a version that skips inactive tiles
// (kFeatureBlockMask: fa2-v1) timed forward and backward on one problem under several block masks, beside the
// simulator's prediction for the same mask and the tiles it computes and skips.
#include <cstdint>
#include <string>
#include <vector>

#include "flashsim/gpu/bench.h"
#include "flashsim/gpu/kernel.h"
#include "flashsim/sim/kernel_model.h"

namespace flashsim::gpu {

struct SparseBenchRow {
  std::string spec;                        // the block mask's pattern (problem.block_mask_spec), "none"
  std::string tile;                        // the tiles it ran (BenchResult::tile)
  int64_t fwd_tiles = 0, fwd_skipped = 0;  // (query block, key block, query head) pairs at the launch tile
  int64_t bwd_tiles = 0, bwd_skipped = 0;  // the same at the backward's tile
  double fwd_ms = 0, bwd_ms = 0;           // measured medians (bench(): inputs of seed 1, rotated)
  double fwd_predicted_ms = 0, bwd_predicted_ms = 0;  // the simulator's, on the device's profile, same mask
};

// Times v on p (a block mask, or none: the dense baseline) at its launch tiles passed through `user` (tile_for, per pass); the
// prediction and tile counts are the simulator's at the same tiles, for the mask bench() draws
// (make_random_inputs' seed 1). Throws InputError when v cannot run p.
SparseBenchRow sparse_bench(const KernelVersion& v, const AttentionProblem& p, const BenchOptions& o,
                            const TileOverride& user = {});

// The kernel models sparse_bench predicts a pass of v with: v's own (KernelVersion::sim_kernels of that pass:
// fa2-v1's fwd_fa2_v1, bwd_dq_dk_dv_group, ...), or its algorithm's where it names none (host-emulated-v1: the
// FlashAttention-2 tiles it emulates).
std::vector<const sim::KernelModel*> sparse_pass_models(const KernelVersion& v, const AttentionProblem& p,
                                                        const TileConfig& c, Pass pass);

}  // namespace flashsim::gpu
