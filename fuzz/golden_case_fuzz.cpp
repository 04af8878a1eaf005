// libFuzzer target: a golden case file as `golden verify` and `golden check` read it: the safetensors
// container, then the case in __metadata__["flashsim.case"] with its tolerance table and every tensor
// checked against the problem. Any input may be rejected, but only with flashsim::InputError.
#include <cstddef>
#include <cstdint>

#include "flashsim/error.h"
#include "flashsim/golden/case_file.h"
#include "flashsim/golden/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace flashsim::golden;
  try {
    const LoadedCase lc = load_case(parse(data, size, "fuzz"), "fuzz");
    (void)lc.c.problem.describe();
  } catch (const flashsim::InputError&) {
  }
  return 0;
}
