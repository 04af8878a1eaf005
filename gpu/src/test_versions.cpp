// The test-only kernel versions (test_versions.h): one line per planted version.
#include "flashsim/gpu/test_versions.h"

#include "planted_versions.h"

namespace flashsim::gpu {

void register_test_versions() {
  static const bool registered = [] {
    register_test_version(fa2_v1_heads_first());
    return true;
  }();
  (void)registered;
}

}  // namespace flashsim::gpu
