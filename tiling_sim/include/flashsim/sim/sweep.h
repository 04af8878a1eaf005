#pragma once
// Every tile config of a space for one problem, predicted by the closed-form model and ranked by time.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "flashsim/sim/model.h"

namespace flashsim::sim {

struct SweepRow {
  TileConfig config;
  double time_s = 0;                       // summed over the pass's kernels
  int64_t load_bytes = 0, dram_bytes = 0;  // L2 -> SM loads; DRAM read + write
  int64_t smem_bytes = 0;                  // the largest kernel's shared memory per CTA
  int ctas_per_sm = 0;                     // of the slowest kernel
  std::string bound;                       // the slowest kernel and what bounds it: "fwd_fa2:tensor"
};

struct SweepResult {
  int64_t configs = 0;           // configs tried
  std::vector<SweepRow> ranked;  // those that fit every kernel, fastest first
};

// The space: Br and Bc in {16, 32, 64, 128, 192, 256} (powers of two and FA2's 192 for small head dims),
// warps {2, 4, 8}, K/V stages {1, 2, 3}, Q in registers or not, K and V sharing a buffer or not; the
// backward's (Br, Bc, warps) only: FlashAttention-2's backward has none of the other variants.
std::vector<TileConfig> sweep_space(Pass pass);

// Ranks by predicted time; equal times (compute-bound configs of the same FLOPs) by less DRAM traffic, then
// fewer L2 bytes, then less shared memory. progress(done, total) is called every 64 configs and at the end.
SweepResult sweep(const AttentionProblem& p, const HardwareProfile& hw, Algorithm a, Pass pass,
                  const std::function<void(size_t, size_t)>& progress = {});

// FlashAttention's lower bound on HBM traffic: every input read and every output written once (forward: q, k,
// v read, o written; backward: q, k, v, o, do read, dq, dk, dv written).
double dram_lower_bound(const AttentionProblem& p, Pass pass);

}  // namespace flashsim::sim
