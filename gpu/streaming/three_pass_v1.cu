// three-pass-v1: safe softmax streamed over key blocks on CUDA cores (streaming_kernels.cuh). Per query row,
// pass 1 over the visible key blocks computes the row max m, pass 2 the sum l = sum_j exp(s - m), pass 3
// normalizes and accumulates O = sum_j (exp(s - m) / l) v_j. K is read from global memory in every pass, V in
// the last; Q is loaded once, O and lse stored once (the simulator's fwd_three_pass).
#include "flashsim/gpu/kernel.h"
#include "streaming_kernels.cuh"

namespace flashsim::gpu {

namespace {

constexpr const char* kName = "three-pass-v1";
constexpr int kPasses = 3;  // max, sum, output

std::string unsupported(const AttentionProblem& p, const TileConfig& c) {
  return streaming::unsupported(kName, p, c);
}

void forward(const AttentionProblem& p, const TileConfig& c, const DeviceArgs& args) {
  streaming::forward<kPasses>(kName, p, c, args);
}

}  // namespace

KernelVersion three_pass_v1() {
  KernelVersion kv;
  kv.name = kName;
  kv.algorithm = Algorithm::ThreePass;
  kv.backend = Backend::Cuda;
  kv.summary =
      "three-pass safe softmax on CUDA cores: one CTA per query block, K blocks staged in shared memory in "
      "every pass (max, sum, output), V in the last; O and lse written once";
  kv.sim_kernels = {"fwd_three_pass"};
  kv.unsupported = unsupported;
  kv.workspace_bytes = nullptr;
  kv.forward = forward;
  kv.backward = nullptr;  // forward only
  return kv;
}

}  // namespace flashsim::gpu
