// The statistical check of a kernel's own dropout RNG (flashsim/dropout_check.h): its false-alarm rate on a
// correct Bernoulli(1 - p) generator is at most the stated one (simulated over many masks, both the normal
// and the Hoeffding regimes), it detects a generator whose keep rate is off by 1% (and one that scales p
// wrongly), and it refuses bad arguments.
#include "flashsim/dropout_check.h"

#include <gtest/gtest.h>

#include <cmath>

#include "flashsim/error.h"
#include "flashsim/random.h"

namespace flashsim {
namespace {

// Kept entries among n draws keeping with probability q, from stream `trial` of the counter generator.
int64_t draw_kept(int64_t n, double q, uint64_t trial) {
  int64_t kept = 0;
  for (int64_t i = 0; i < n; ++i) kept += uniform_open01(4242, trial, static_cast<uint64_t>(i)) < q;
  return kept;
}

TEST(DropoutCheck, NormalQuantileIsTheInverseOfTheTail) {
  for (double tail : {0.5, 0.025, 1e-3, 1e-6, 1e-12}) {
    const double z = normal_upper_quantile(tail);
    EXPECT_NEAR(0.5 * std::erfc(z / std::sqrt(2.0)) / tail, 1.0, 1e-9) << tail;
  }
  EXPECT_NEAR(normal_upper_quantile(0.5), 0.0, 1e-12);
}

// A correct generator fails at most at about the stated rate: with alpha = 0.05 over 1000 masks the failure
// count is Binomial(1000, <= 0.05): mean <= 50, sd 6.9; more than 75 would be a bound too narrow.
TEST(DropoutCheck, FalseAlarmRateIsAtMostTheStatedOne) {
  struct Regime {
    int64_t n;
    double p;
  };
  for (const Regime r : {Regime{4000, 0.1}, Regime{4000, 0.5}, Regime{30, 0.2}}) {  // the last: Hoeffding
    int fails = 0;
    const int trials = 1000;
    for (int t = 0; t < trials; ++t)
      fails += !check_keep_fraction(draw_kept(r.n, 1 - r.p, 100 + t), r.n, r.p, 0.05).ok;
    EXPECT_LE(fails, 75) << "n " << r.n << " p " << r.p;
    // The normal bound is not needlessly wide either: a correct generator does fail sometimes.
    if (keep_fraction_bound(r.n, r.p, 0.05).method == "normal") {
      EXPECT_GE(fails, 25) << "n " << r.n;
    }
  }
  EXPECT_EQ(keep_fraction_bound(30, 0.2, 0.05).method, "hoeffding");
  EXPECT_EQ(keep_fraction_bound(4000, 0.1, 0.05).method, "normal");
}

// A generator keeping with 1 - p - 0.01 (or dropping with 1 - p: p and 1 - p swapped) fails every time at
// n = 10^6, alpha = 1e-6, while a correct one passes.
TEST(DropoutCheck, DetectsAKeepRateOffByOnePercent) {
  const int64_t n = 1000000;
  const double p = 0.1;
  for (int t = 0; t < 5; ++t) {
    EXPECT_TRUE(check_keep_fraction(draw_kept(n, 1 - p, 10 + t), n, p, 1e-6).ok);
    const KeepFractionCheck off = check_keep_fraction(draw_kept(n, 1 - p - 0.01, 20 + t), n, p, 1e-6);
    EXPECT_FALSE(off.ok);
    EXPECT_LT(off.z_score, -20);  // 0.01 / sqrt(0.09 / 1e6) = 33 sd low
    EXPECT_FALSE(check_keep_fraction(draw_kept(n, p, 30 + t), n, p, 1e-6).ok);
  }
}

TEST(DropoutCheck, PZeroKeepsEverything) {
  EXPECT_TRUE(check_keep_mask(std::vector<uint8_t>(100, 1), 0.0, 1e-6).ok);
  std::vector<uint8_t> one_dropped(100, 1);
  one_dropped[7] = 0;
  EXPECT_FALSE(check_keep_mask(one_dropped, 0.0, 1e-6).ok);
}

TEST(DropoutCheck, BadArgumentsAreRefused) {
  EXPECT_THROW(keep_fraction_bound(0, 0.1, 1e-3), InputError);
  EXPECT_THROW(keep_fraction_bound(10, 1.0, 1e-3), InputError);
  EXPECT_THROW(keep_fraction_bound(10, -0.1, 1e-3), InputError);
  EXPECT_THROW(keep_fraction_bound(10, std::nan(""), 1e-3), InputError);
  EXPECT_THROW(keep_fraction_bound(10, 0.1, 0.0), InputError);
  EXPECT_THROW(keep_fraction_bound(10, 0.1, 1.0), InputError);
  EXPECT_THROW(check_keep_fraction(11, 10, 0.1, 1e-3), InputError);
  try {
    keep_fraction_bound(10, 1.5, 1e-3);
  } catch (const InputError& e) {
    EXPECT_EQ(e.field(), "dropout_p");
  }
}

}  // namespace
}  // namespace flashsim
