// two-pass-v1: online softmax streamed over key blocks on CUDA cores (streaming_kernels.cuh). Per query row,
// pass 1 over the visible key blocks keeps a running max and a rescaled sum,
// m_new = max(m, rowmax(S)), l = l exp(m - m_new) + sum_j exp(s - m_new); pass 2 accumulates
// O = sum_j (exp(s - m) / l) v_j. K is read from global memory in both passes, V in the second; Q is loaded
// once, O and lse stored once (the simulator's fwd_two_pass).
#include "flashsim/gpu/kernel.h"
#include "streaming_kernels.cuh"

namespace flashsim::gpu {

namespace {
constexpr char kName[] = "two-pass-v1";
}  // namespace

KernelVersion two_pass_v1() {
  return streaming::make_version<2, kName>(  // 2 passes: online statistics, output
      Algorithm::TwoPass,
      "two-pass online softmax on CUDA cores: one CTA per query block, K blocks staged in shared memory in "
      "both passes (running max and rescaled sum, output), V in the second; O and lse written once",
      "fwd_two_pass");
}

}  // namespace flashsim::gpu
