// libFuzzer target: manifest.json of a suite folder. Any input may be rejected, but only with
// flashsim::InputError. A manifest that parses must print (to_json_text) and parse again to the same one.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "flashsim/error.h"
#include "flashsim/golden/manifest.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace flashsim::golden;
  const std::string text(reinterpret_cast<const char*>(data), size);
  Manifest m;
  try {
    m = parse_manifest(text, "fuzz");
  } catch (const flashsim::InputError&) {
    return 0;
  }
  const std::string printed = m.to_json_text();
  const Manifest again = parse_manifest(printed, "fuzz round trip");
  if (again.to_json_text() != printed) std::abort();
  return 0;
}
