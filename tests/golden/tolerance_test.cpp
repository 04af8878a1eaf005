// The tolerance rule's pieces against values worked out by hand.
#include "flashsim/golden/tolerance.h"

#include <gtest/gtest.h>

#include <cmath>

namespace flashsim::golden {
namespace {

TEST(Tolerance, UlpMatchesEachFormat) {
  EXPECT_EQ(ulp(1.0, DType::BF16), 0x1p-7);  // 8 significand bits
  EXPECT_EQ(ulp(1.0, DType::F16), 0x1p-10);  // 11
  EXPECT_EQ(ulp(1.0, DType::F32), 0x1p-23);  // 24
  EXPECT_EQ(ulp(3.0, DType::BF16), 0x1p-6);  // [2, 4): twice the spacing
  EXPECT_EQ(ulp(0.0, DType::F16), 0x1p-24);  // the subnormal spacing
  EXPECT_EQ(ulp(-5.0, DType::F32), 0x1p-21);
}

TEST(Tolerance, ErrorStatsOverFiniteExactValues) {
  const std::vector<double> exact = {1, -2, 0, -INFINITY, 4};
  const std::vector<double> got = {1.5, -2, 0, -INFINITY, 3};
  const ErrorStats s = error_stats(exact, got);
  EXPECT_EQ(s.max_abs, 1.0);
  EXPECT_EQ(s.worst, 4);
  EXPECT_EQ(s.magnitude, 4.0);
  EXPECT_DOUBLE_EQ(s.rel_l2, std::sqrt((0.25 + 1.0) / (1 + 4 + 16)));
  EXPECT_EQ(s.nonfinite, 0);
  EXPECT_EQ(s.inf_mismatch, 0);
  const ErrorStats bad = error_stats(exact, {NAN, -2, INFINITY, 0.0, 4});
  EXPECT_EQ(bad.nonfinite, 2);     // NaN and Inf where exact is finite
  EXPECT_EQ(bad.inf_mismatch, 1);  // lse of a fully masked row must stay -inf
  EXPECT_EQ(count_above(exact, {NAN, -2, 0, -INFINITY, 4.5}, 0.25), 2);
}

TEST(Tolerance, BoundIsFactorTimesEmulatedPlusFloor) {
  ErrorStats e;
  e.max_abs = 0.01;
  e.rel_l2 = 0.003;
  e.magnitude = 3.0;
  const OutputTolerance o = make_tolerance("o", DType::BF16, e);
  EXPECT_EQ(o.factor, kForwardFactor);
  EXPECT_EQ(o.storage, DType::BF16);
  EXPECT_DOUBLE_EQ(o.bound_max_abs(DType::BF16), 2 * 0.01 + 2 * 0x1p-6);
  EXPECT_DOUBLE_EQ(o.bound_rel_l2(DType::F32), 2 * 0.003 + 0x1p-8);  // the emulated output's bf16 rounding
  const OutputTolerance dq = make_tolerance("dq", DType::F32, e);
  EXPECT_EQ(dq.factor, kBackwardFactor);
  // A candidate storing an fp32 computation in bf16 gets the coarser floor.
  EXPECT_DOUBLE_EQ(dq.bound_max_abs(DType::BF16), 3 * 0.01 + 2 * 0x1p-6);
  EXPECT_DOUBLE_EQ(dq.bound_max_abs(DType::F32), 3 * 0.01 + 2 * 0x1p-22);
  const OutputTolerance lse = make_tolerance("lse", DType::BF16, e);
  EXPECT_EQ(lse.storage, DType::F32) << "lse stays fp32 in the kernel pipeline";
  // Round trip through JSON.
  const OutputTolerance back = tolerance_from_json(to_json(dq), "t");
  EXPECT_EQ(back.bound_max_abs(DType::F16), dq.bound_max_abs(DType::F16));
}

// An FP8 output (cuDNN's FP8 attention stores o x scale_o in e4m3): the floor is the e4m3 grid at that scale,
// in the output's units. M = 3 lies in [2, 4): e4m3's ulp there is 2^-2, at 3 x 64 = 192 in [128, 256) it is
// 2^4, which is 2^-2 again once divided by 64; at scale 1/8 (M x scale = 0.375, in [0.25, 0.5): ulp 2^-5) it is
// 2^-2 as well: binary scales move the grid with the values, and only a scale into e4m3's subnormals (below
// 2^-6) widens it.
TEST(Tolerance, AnFp8OutputsFloorIsItsGridAtItsScale) {
  ErrorStats e;
  e.max_abs = 0.01;
  e.rel_l2 = 0.003;
  e.magnitude = 3.0;
  const OutputTolerance o = make_tolerance("o", DType::E4M3, e);  // FP8 compute: the emulated o is bf16
  EXPECT_EQ(o.storage, DType::BF16);
  EXPECT_DOUBLE_EQ(o.bound_max_abs(DType::E4M3), 2 * 0.01 + 2 * 0x1p-2);
  EXPECT_DOUBLE_EQ(o.bound_max_abs(DType::E4M3, 64), 2 * 0.01 + 2 * 0x1p-2);
  EXPECT_DOUBLE_EQ(o.bound_max_abs(DType::E4M3, 0.125), 2 * 0.01 + 2 * 0x1p-2);
  EXPECT_DOUBLE_EQ(o.bound_max_abs(DType::E4M3, 0x1p-10), 2 * 0.01 + 2 * 0x1p-9 * 0x1p10);  // subnormal grid
  EXPECT_DOUBLE_EQ(o.bound_max_abs(DType::BF16, 64), o.bound_max_abs(DType::BF16));  // not coarser: unscaled
  EXPECT_DOUBLE_EQ(o.bound_rel_l2(DType::E4M3), 2 * 0.003 + 0x1p-4);
}

}  // namespace
}  // namespace flashsim::golden
