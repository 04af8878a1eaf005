// three-pass-v1: safe softmax streamed over key blocks on CUDA cores (streaming_kernels.cuh). Per query row,
// pass 1 over the visible key blocks computes the row max m, pass 2 the sum l = sum_j exp(s - m), pass 3
// normalizes and accumulates O = sum_j (exp(s - m) / l) v_j. K is read from global memory in every pass, V in
// the last; Q is loaded once, O and lse stored once (the simulator's fwd_three_pass).
#include "flashsim/gpu/kernel.h"
#include "streaming_kernels.cuh"

namespace flashsim::gpu {

namespace {
constexpr char kName[] = "three-pass-v1";
}  // namespace

KernelVersion three_pass_v1() {
  return streaming::make_version<3, kName>(  // 3 passes: max, sum, output
      Algorithm::ThreePass,
      "three-pass safe softmax on CUDA cores: one CTA per query block, K blocks staged in shared memory in "
      "every pass (max, sum, output), V in the last; O and lse written once",
      "fwd_three_pass");
}

}  // namespace flashsim::gpu
