// The two-pass online softmax forward: per query block, a pass over the keys for the running max and
// rescaled sum, then the output pass.
#include "key_streaming.h"

namespace flashsim::sim::kernels {

KernelModel two_pass_forward() {
  return key_streaming_model<2>("fwd_two_pass", Algorithm::TwoPass,
                                "two-pass online softmax forward: K read twice, V once per query block");
}

}  // namespace flashsim::sim::kernels
