// fa3-v1's backward kernels of head dim 64 (fa3_launch.h): its instances in flashsim/families/fa3/instances.h.
#include "fa3_bwd_launch.cuh"
#include "fa3_launch.h"

namespace flashsim::gpu::fa3 {

template <>
cudaError_t launch_bwd_head_dim<64>(const Fa3BwdParams& a, bool bf16, cudaStream_t stream) {
  return launch_fa3_bwd_head_dim<64>(a, bf16, stream);
}

}  // namespace flashsim::gpu::fa3
