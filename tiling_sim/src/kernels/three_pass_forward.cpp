// The three-pass safe softmax forward: per query block, a pass over the keys for the row max, one for the
// row sum of exp(s - m), one that normalizes and multiplies by V.
#include "key_streaming.h"

namespace flashsim::sim::kernels {

KernelModel three_pass_forward() {
  return key_streaming_model<3>("fwd_three_pass", Algorithm::ThreePass,
                                "three-pass softmax forward: K read three times, V once per query block");
}

}  // namespace flashsim::sim::kernels
