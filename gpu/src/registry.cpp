// The registry of GPU kernel versions (kernel.h): one line per production version; test-only variants are
// appended by register_test_version.
#include <fmt/format.h>

#include <utility>

#include "flashsim/error.h"
#include "versions.h"

namespace flashsim::gpu {

namespace {
std::vector<KernelVersion>& registry() {
  static std::vector<KernelVersion> all = {
      host_emulated_v1(),  // the CPU stand-in: checks the harness where no GPU is
      naive_v1(),         fa2_v1(), three_pass_v1(), two_pass_v1(), decode_v1(), decode_v2(),
#ifdef FLASHSIM_WITH_FA3
      fa3_v1(),  // built with CUTLASS's headers (gpu/fa3/CMakeLists.txt)
#endif
  };
  return all;
}
}  // namespace

const std::vector<KernelVersion>& kernel_versions() {
  return registry();
}

void register_test_version(KernelVersion v) {
  for (const auto& known : registry())
    if (known.name == v.name) throw InputError("kernel", fmt::format("a version named '{}' exists", v.name));
  registry().push_back(std::move(v));
}

TileConfig tile_for(const KernelVersion& v, const AttentionProblem& p, const TileOverride& user, Pass pass) {
  const TileConfig launch = v.launch_tile ? v.launch_tile(p, pass) : TileConfig{};
  TileConfig c = user ? user(launch) : launch;
  c.validate();
  return c;
}

const KernelVersion& kernel_version(const std::string& name) {
  std::string known;
  for (const auto& v : kernel_versions()) {
    if (v.name == name) return v;
    known += (known.empty() ? "" : ", ") + v.name;
  }
  throw InputError("kernel", fmt::format("no kernel version named '{}' (known: {})", name, known));
}

}  // namespace flashsim::gpu
