// Kernel timing (bench.h).
#include "flashsim/gpu/bench.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <stdexcept>
#include <string>
#include <utility>

#include "case_buffers.h"
#include "flashsim/gpu/params.h"
#include "flashsim/inputs.h"

namespace flashsim::gpu {

namespace {

// The median time in ms of `repeats` calls of launch(set i), each between two events, after `warmup` calls.
template <class F>
double median_ms(int warmup, int repeats, size_t sets, F&& launch) {
  cudaEvent_t start, stop;
  cuda_check(cudaEventCreate(&start), "cudaEventCreate");
  cuda_check(cudaEventCreate(&stop), "cudaEventCreate");
  for (int i = 0; i < warmup; ++i) launch(static_cast<size_t>(i) % sets);
  std::vector<double> ms(static_cast<size_t>(repeats));
  for (int i = 0; i < repeats; ++i) {
    cuda_check(cudaEventRecord(start), "cudaEventRecord");
    launch(static_cast<size_t>(warmup + i) % sets);
    cuda_check(cudaEventRecord(stop), "cudaEventRecord");
    cuda_check(cudaEventSynchronize(stop), "kernel execution");
    float t = 0;
    cuda_check(cudaEventElapsedTime(&t, start, stop), "cudaEventElapsedTime");
    ms[static_cast<size_t>(i)] = t;
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  return upper_median(std::move(ms));
}

}  // namespace

double upper_median(std::vector<double> t) {
  if (t.empty()) return 0;
  std::nth_element(t.begin(), t.begin() + static_cast<std::ptrdiff_t>(t.size() / 2), t.end());
  return t[t.size() / 2];
}

double conventional_forward_flops(const AttentionProblem& p) {
  const double f = 4.0 * static_cast<double>(p.batch * p.heads_q) * static_cast<double>(p.seqlen_q) *
                   static_cast<double>(p.seqlen_k) * static_cast<double>(p.head_dim);
  return p.causal() ? f / 2 : f;
}

BenchResult bench(const KernelVersion& v, const AttentionProblem& p, const TileConfig& c,
                  const BenchOptions& o) {
  BenchResult r;
  r.kernel = v.name;
  r.problem = p.describe();
  const TileConfig cb = o.bwd_tile.value_or(c);
  r.tile = c.describe();
  if (o.bwd_tile) r.tile += " | bwd " + cb.describe();
  if (v.backend != Backend::Cuda) {
    r.skipped = "not a CUDA version";
    return r;
  }
  std::string why = missing_gpu_feature(p, v.features);
  if (why.empty() && v.unsupported) why = v.unsupported(p, c);
  if (!why.empty()) {
    r.skipped = why;
    return r;
  }
  const std::string no_backward =
      !o.time_backward || !v.backward ? "" : (v.backward_unsupported ? v.backward_unsupported(p, cb) : "");
  const bool backward = o.time_backward && v.backward && no_backward.empty();
  if (!no_backward.empty()) r.skipped = "backward: " + no_backward;
  const AttentionInputs in = make_random_inputs(p, 1);  // never zeros: real data, as a model would see
  DeviceMemory mem(Backend::Cuda);
  std::vector<DeviceArgs> sets;
  do {  // enough copies that the rotation moves more bytes than L2 holds
    sets.push_back(upload_case(mem, p, in, v, backward ? cb : c, backward));  // the workspace: both passes'
  } while (mem.allocated_bytes() < static_cast<size_t>(o.rotate_bytes) && sets.size() < 64);
  for (const auto& s : sets) v.forward(p, c, s);  // o and lse for the backward
  mem.synchronize();
  BenchOptions passes = o;
  passes.time_backward = backward;
  time_passes(v, p, c, sets, passes, r);
  mem.synchronize();
  return r;
}

void time_passes(const KernelVersion& v, const AttentionProblem& p, const TileConfig& c,
                 const std::vector<DeviceArgs>& sets, const BenchOptions& o, BenchResult& r) {
  const double fwd = conventional_forward_flops(p);
  if (o.time_forward) {
    r.fwd_ms = median_ms(o.warmup, o.repeats, sets.size(), [&](size_t i) { v.forward(p, c, sets[i]); });
    r.fwd_tflops = fwd / (r.fwd_ms * 1e-3) / 1e12;
  }
  if (o.time_backward && v.backward) {
    const TileConfig cb = o.bwd_tile.value_or(c);
    r.bwd_ms = median_ms(o.warmup, o.repeats, sets.size(), [&](size_t i) { v.backward(p, cb, sets[i]); });
    r.bwd_tflops = 2.5 * fwd / (r.bwd_ms * 1e-3) / 1e12;  // FlashAttention's convention: 2.5x the forward
  }
}

}  // namespace flashsim::gpu
