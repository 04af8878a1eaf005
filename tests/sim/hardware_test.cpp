#include "flashsim/sim/hardware.h"

#include <gtest/gtest.h>

#include "flashsim/error.h"

using namespace flashsim::sim;

TEST(Hardware, BuiltinsLoad) {
  const auto names = profile_names();
  for (const char* n : {"A100-SXM4-80GB", "A10", "H100-SXM5-80GB", "H200", "L4", "host"})
    EXPECT_NE(std::find(names.begin(), names.end(), n), names.end()) << n;
  const auto h = load_profile("H100-SXM5-80GB");
  EXPECT_EQ(h.sms, 132);
  EXPECT_EQ(h.l2_bytes, 50 * 1024 * 1024);
  EXPECT_EQ(h.sector_bytes, 32);
}

TEST(Hardware, HostFromHwloc) {
  const auto h = load_profile("host");
  EXPECT_GE(h.sms, 1);
  EXPECT_GT(h.l2_bytes, 0);
}

TEST(Hardware, UnknownIsInputError) {
  EXPECT_THROW(load_profile("nope"), flashsim::InputError);
}

TEST(Hardware, JsonRoundTrip) {
  const auto h = load_profile("A100-SXM4-80GB");
  EXPECT_EQ(to_json(profile_from_json(to_json(h))), to_json(h));
}
