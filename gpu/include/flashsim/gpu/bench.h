#pragma once
// Timing kernel versions on a CUDA device: CUDA events around each launch, warm-up launches first, the median of
// the timed ones, inputs rotated through more memory than L2 holds so that no launch finds its inputs cached.
#include <optional>
#include <string>
#include <vector>

#include "flashsim/gpu/kernel.h"

namespace flashsim::gpu {

struct BenchOptions {
  int warmup = 3;                      // launches before timing: module load, cuBLAS handles, clocks up
  int repeats = 20;                    // timed launches; the median is reported
  int64_t rotate_bytes = 256ll << 20;  // input copies cycled through: 5x an H100's 50 MB L2
  // The passes timed. The forward always runs once untimed first (o and lse for the backward); with
  // time_backward false no backward buffer is made and the backward's support is not asked.
  bool time_forward = true;
  bool time_backward = true;
  // The backward's tile when it differs from the forward's (launch tables are per pass); none: the same.
  std::optional<TileConfig> bwd_tile;
};

struct BenchResult {
  std::string kernel, problem, tile;      // tile: TileConfig::describe() of the config it ran (the forward's;
                                          // bwd_tile's backward fields after " | bwd " when it differs)
  double fwd_ms = 0, bwd_ms = 0;          // medians; bwd 0 for a forward-only version
  double fwd_tflops = 0, bwd_tflops = 0;  // forward 4 B H Sq Sk d (halved when causal), backward 2.5x that
  std::string skipped;                    // why the version cannot run the problem ("" when it ran)
};

// The median of timings as bench reports them: the upper middle of an even count (no averaging of two).
double upper_median(std::vector<double> t);

// The FLOPs the benchmarks of FlashAttention count: 4 B H Sq Sk d forward (d for QK^T and PV), half of it with
// a causal mask (the visible pairs of a square causal problem), and 2.5x the forward for the backward.
double conventional_forward_flops(const AttentionProblem& p);

BenchResult bench(const KernelVersion& v, const AttentionProblem& p, const TileConfig& c,
                  const BenchOptions& o);

// bench()'s timing on buffers already made (`sets`, rotated launch by launch; each holding the inputs, and o and
// lse when the backward is timed): r's forward median and TFLOP/s (o.time_forward) and backward's
// (o.time_backward) at tile c. Checks nothing: the caller has asked unsupported / backward_unsupported.
void time_passes(const KernelVersion& v, const AttentionProblem& p, const TileConfig& c,
                 const std::vector<DeviceArgs>& sets, const BenchOptions& o, BenchResult& r);

}  // namespace flashsim::gpu
