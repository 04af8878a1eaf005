// libFuzzer target: the safetensors reader. Any input may be rejected, but only with flashsim::InputError;
// anything else (another exception, a crash, a sanitizer report) is a bug. A file that parses must
// serialize and parse again to the same tensors and metadata.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <vector>

#include "flashsim/error.h"
#include "flashsim/golden/safetensors.h"

namespace {
bool same(const flashsim::golden::SafetensorsFile& a, const flashsim::golden::SafetensorsFile& b) {
  if (a.metadata != b.metadata || a.tensors.size() != b.tensors.size()) return false;
  for (size_t i = 0; i < a.tensors.size(); ++i) {
    const auto& [na, ta] = a.tensors[i];
    const auto& [nb, tb] = b.tensors[i];
    if (na != nb || ta.dtype != tb.dtype || ta.shape != tb.shape || ta.data != tb.data) return false;
  }
  return true;
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace flashsim::golden;
  SafetensorsFile f;
  try {
    f = parse(data, size, "fuzz");
  } catch (const flashsim::InputError&) {
    return 0;
  }
  for (const auto& [name, t] : f.tensors)
    if (t.elements() < 0) std::abort();  // the reader promised a valid shape
  const std::vector<uint8_t> bytes = serialize(f);
  if (!same(parse(bytes, "fuzz round trip"), f)) std::abort();
  return 0;
}
