// libFuzzer target: Nsight Compute CSV reports. Any input may be rejected, but only with
// flashsim::InputError. Kernel names are run through recognize_kernel and the comparison with the model
// for a small fixed problem, as `flashsim traffic compare` does.
#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>

#include "flashsim/error.h"
#include "flashsim/sim/hardware.h"
#include "flashsim/sim/ncu.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace flashsim::sim;
  std::istringstream in(std::string(reinterpret_cast<const char*>(data), size));
  try {
    const auto kernels = parse_ncu_csv(in);
    flashsim::AttentionProblem p;
    p.batch = 1;
    p.heads_q = p.heads_kv = 2;
    p.seqlen_q = p.seqlen_k = 256;
    p.head_dim = p.head_dim_v = 64;
    static const HardwareProfile hw = load_profile("h100");
    (void)to_json(compare_ncu(kernels, p, hw));
  } catch (const flashsim::InputError&) {
  }
  return 0;
}
