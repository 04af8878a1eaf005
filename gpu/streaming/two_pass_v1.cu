// two-pass-v1: online softmax streamed over key blocks on CUDA cores (streaming_kernels.cuh). Per query row,
// pass 1 over the visible key blocks keeps a running max and a rescaled sum,
// m_new = max(m, rowmax(S)), l = l exp(m - m_new) + sum_j exp(s - m_new); pass 2 accumulates
// O = sum_j (exp(s - m) / l) v_j. K is read from global memory in both passes, V in the second; Q is loaded
// once, O and lse stored once (the simulator's fwd_two_pass).
#include "flashsim/gpu/kernel.h"
#include "streaming_kernels.cuh"

namespace flashsim::gpu {

namespace {

constexpr const char* kName = "two-pass-v1";
constexpr int kPasses = 2;  // online statistics, output

std::string unsupported(const AttentionProblem& p, const TileConfig& c) {
  return streaming::unsupported(kName, p, c);
}

void forward(const AttentionProblem& p, const TileConfig& c, const DeviceArgs& args) {
  streaming::forward<kPasses>(kName, p, c, args);
}

}  // namespace

KernelVersion two_pass_v1() {
  KernelVersion kv;
  kv.name = kName;
  kv.algorithm = Algorithm::TwoPass;
  kv.backend = Backend::Cuda;
  kv.summary =
      "two-pass online softmax on CUDA cores: one CTA per query block, K blocks staged in shared memory in "
      "both passes (running max and rescaled sum, output), V in the second; O and lse written once";
  kv.sim_kernels = {"fwd_two_pass"};
  kv.unsupported = unsupported;
  kv.workspace_bytes = nullptr;
  kv.forward = forward;
  kv.backward = nullptr;  // forward only
  return kv;
}

}  // namespace flashsim::gpu
