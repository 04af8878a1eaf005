// libFuzzer target: suite spec JSON. Any input may be rejected, but only with flashsim::InputError. It only
// parses and expands the spec (a spec that parses may describe a huge problem: nothing is generated).
#include <cstddef>
#include <cstdint>
#include <string>

#include "flashsim/error.h"
#include "flashsim/golden/suite.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace flashsim::golden;
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const SuiteSpec s = parse_suite_spec(text, "fuzz");
    for (const auto& c : s.cases) {
      // A case that parses prints to JSON and back.
      (void)case_from_json(case_to_json(c), "fuzz round trip");
      (void)c.problem.describe();
    }
  } catch (const flashsim::InputError&) {
  }
  return 0;
}
