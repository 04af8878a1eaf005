// The OCP FP8 formats (flashsim/fp8.h) against an independent table of all 256 codes of each
// (tests/data/fp8/fp8_codes.csv, from the specification in exact rational arithmetic), and the
// conversion's rounding and saturation: ties to even, max, just above max, infinities, NaN, subnormals, -0.
#include "flashsim/fp8.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "flashsim/dtype.h"
#include "flashsim/random.h"

using namespace flashsim;

namespace {

struct Table {
  std::vector<double> e4m3, e5m2;
};

Table read_table() {
  std::ifstream in(std::string(FLASHSIM_TEST_DATA) + "/fp8/fp8_codes.csv");
  EXPECT_TRUE(in) << "tests/data/fp8/fp8_codes.csv";
  Table t;
  std::string line;
  std::getline(in, line);  // header
  while (std::getline(in, line)) {
    std::stringstream ss(line);
    std::string code, a, b;
    std::getline(ss, code, ',');
    std::getline(ss, a, ',');
    std::getline(ss, b, ',');
    t.e4m3.push_back(std::strtod(a.c_str(), nullptr));  // strtod reads hex floats, inf and nan
    t.e5m2.push_back(std::strtod(b.c_str(), nullptr));
  }
  return t;
}

bool same_double(double a, double b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  return a == b && std::signbit(a) == std::signbit(b);
}

// The nearest finite table value to x, ties to the even code (the code whose mantissa's last bit is 0),
// saturating: what fp8_round must give, found by brute force over the table.
double nearest_in_table(const std::vector<double>& table, double x) {
  double best = std::numeric_limits<double>::quiet_NaN();
  int best_code = -1;
  for (int c = 0; c < 256; ++c) {
    const double v = table[c];
    if (!std::isfinite(v)) continue;
    if (v == 0 && std::signbit(v) != std::signbit(x)) continue;  // zero keeps x's sign
    if (best_code < 0 || std::fabs(v - x) < std::fabs(best - x) ||
        (std::fabs(v - x) == std::fabs(best - x) && (c & 1) == 0)) {
      best = v;
      best_code = c;
    }
  }
  return best;
}

DType dtype_of(Fp8Format f) {
  return f == Fp8Format::E4M3 ? DType::E4M3 : DType::E5M2;
}

}  // namespace

TEST(Fp8, EveryCodeDecodesAsTheTable) {
  const Table t = read_table();
  ASSERT_EQ(t.e4m3.size(), 256u);
  ASSERT_EQ(t.e5m2.size(), 256u);
  for (int c = 0; c < 256; ++c) {
    EXPECT_TRUE(same_double(fp8_decode(static_cast<uint8_t>(c), Fp8Format::E4M3), t.e4m3[c])) << "e4m3 " << c;
    EXPECT_TRUE(same_double(fp8_decode(static_cast<uint8_t>(c), Fp8Format::E5M2), t.e5m2[c])) << "e5m2 " << c;
  }
}

TEST(Fp8, EveryFiniteCodeEncodesBackToItself) {
  for (Fp8Format f : {Fp8Format::E4M3, Fp8Format::E5M2})
    for (int c = 0; c < 256; ++c) {
      const double v = fp8_decode(static_cast<uint8_t>(c), f);
      if (!std::isfinite(v)) continue;
      EXPECT_EQ(fp8_encode(v, f), c) << v;
      EXPECT_TRUE(same_double(round_to(v, dtype_of(f)), v));
    }
}

TEST(Fp8, RoundsToTheNearestTableValueTiesToEven) {
  const Table t = read_table();
  for (Fp8Format f : {Fp8Format::E4M3, Fp8Format::E5M2}) {
    const std::vector<double>& table = f == Fp8Format::E4M3 ? t.e4m3 : t.e5m2;
    std::vector<double> xs;
    // Every midpoint between neighbouring finite values (the ties) and points just either side of it.
    for (int c = 0; c < 127; ++c) {
      const double a = table[c], b = table[c + 1];
      if (!std::isfinite(a) || !std::isfinite(b)) continue;
      const double mid = (a + b) / 2;
      for (double x : {mid, std::nextafter(mid, 0.0), std::nextafter(mid, 1e9), a, b}) {
        xs.push_back(x);
        xs.push_back(-x);
      }
    }
    // Random values over the whole range, beyond max included.
    for (uint64_t n = 0; n < 20000; ++n) {
      const double e = uniform_open01(7, 1, n) * 40 - 20;
      xs.push_back((n % 2 ? -1 : 1) * std::exp2(e) * (1 + uniform_open01(7, 2, n)));
    }
    for (double x : xs) {
      const double want = nearest_in_table(table, x);
      const double got = fp8_round(x, f);
      ASSERT_TRUE(same_double(got, want))
          << (f == Fp8Format::E4M3 ? "e4m3 " : "e5m2 ") << x << ": " << got << " want " << want;
      EXPECT_TRUE(same_double(static_cast<double>(fp8_round(static_cast<float>(x), f)),
                              fp8_round(static_cast<double>(static_cast<float>(x)), f)));
      EXPECT_TRUE(same_double(fp8_decode(fp8_encode(x, f), f), want)) << x;
    }
  }
}

TEST(Fp8, Boundaries) {
  const auto e4 = [](double x) { return fp8_round(x, Fp8Format::E4M3); };
  const auto e5 = [](double x) { return fp8_round(x, Fp8Format::E5M2); };
  // Ties to even: 1 + 1/16 between 1 (mantissa 000) and 1.125 (001) -> 1; 1 + 3/16 -> 1.25 (010).
  EXPECT_EQ(e4(1.0625), 1.0);
  EXPECT_EQ(e4(1.1875), 1.25);
  EXPECT_EQ(e5(1.125), 1.0);
  EXPECT_EQ(e5(1.375), 1.5);
  // Max, just above, the tie above max (448 + 16: 448's mantissa 110 is even), far above, infinities.
  EXPECT_EQ(e4(448), 448);
  EXPECT_EQ(e4(449), 448);
  EXPECT_EQ(e4(464), 448);
  EXPECT_EQ(e4(465), 448);
  EXPECT_EQ(e4(-1e30), -448);
  EXPECT_EQ(e4(HUGE_VAL), 448);
  EXPECT_EQ(e4(-HUGE_VAL), -448);
  EXPECT_EQ(e4(416), 416);
  EXPECT_EQ(e4(432), 448);  // tie between 416 (101) and 448 (110) -> 448
  EXPECT_EQ(e5(57344), 57344);
  EXPECT_EQ(e5(57345), 57344);
  EXPECT_EQ(e5(61440), 57344);  // the tie with what would be 65536 (inf's code): saturates
  EXPECT_EQ(e5(HUGE_VAL), 57344);
  EXPECT_EQ(e5(-HUGE_VAL), -57344);
  EXPECT_EQ(max_finite(DType::E4M3), 448);
  EXPECT_EQ(max_finite(DType::E5M2), 57344);
  // NaN stays NaN; its code: S.1111.111 (e4m3), S.11111.10 (e5m2).
  EXPECT_TRUE(std::isnan(e4(std::nan(""))));
  EXPECT_TRUE(std::isnan(e5(std::nan(""))));
  EXPECT_EQ(fp8_encode(std::nan(""), Fp8Format::E4M3), 0x7f);
  EXPECT_EQ(fp8_encode(-std::nan(""), Fp8Format::E4M3), 0xff);
  EXPECT_EQ(fp8_encode(std::nan(""), Fp8Format::E5M2), 0x7e);
  // Subnormals: e4m3's smallest 2^-9, half of it ties to 0 (even), just above half rounds up; 3 * 2^-10 is the
  // tie between 2^-9 (001) and 2^-8 (010) -> 2^-8; the largest subnormal 7 * 2^-9 and the smallest normal 2^-6.
  EXPECT_EQ(e4(std::ldexp(1, -9)), std::ldexp(1, -9));
  EXPECT_EQ(e4(std::ldexp(1, -10)), 0);
  EXPECT_EQ(e4(std::nextafter(std::ldexp(1, -10), 1)), std::ldexp(1, -9));
  EXPECT_EQ(e4(3 * std::ldexp(1, -10)), std::ldexp(1, -8));
  EXPECT_EQ(e4(7 * std::ldexp(1, -9)), 7 * std::ldexp(1, -9));
  EXPECT_EQ(e4(15 * std::ldexp(1, -10)), std::ldexp(1, -6));  // tie 7/512 (111) vs 8/512 = 2^-6 -> 2^-6
  EXPECT_EQ(fp8_encode(std::ldexp(1, -9), Fp8Format::E4M3), 0x01);
  EXPECT_EQ(fp8_encode(std::ldexp(1, -6), Fp8Format::E4M3), 0x08);
  EXPECT_EQ(e5(std::ldexp(1, -16)), std::ldexp(1, -16));
  EXPECT_EQ(e5(std::ldexp(1, -17)), 0);
  EXPECT_EQ(e5(3 * std::ldexp(1, -17)), std::ldexp(1, -15));
  EXPECT_EQ(fp8_encode(std::ldexp(1, -14), Fp8Format::E5M2), 0x04);
  // Negative zero and negative values that round to zero keep the sign.
  EXPECT_TRUE(std::signbit(e4(-0.0)));
  EXPECT_TRUE(std::signbit(e4(-std::ldexp(1, -11))));
  EXPECT_EQ(fp8_encode(-0.0, Fp8Format::E4M3), 0x80);
  EXPECT_EQ(fp8_encode(-std::ldexp(1, -18), Fp8Format::E5M2), 0x80);
  // The dtype's spellings and sizes.
  EXPECT_EQ(parse_dtype("e4m3"), DType::E4M3);
  EXPECT_EQ(parse_dtype("F8_E5M2"), DType::E5M2);
  EXPECT_EQ(parse_dtype("float8_e4m3fn"), DType::E4M3);
  EXPECT_EQ(safetensors_name(DType::E4M3), "F8_E4M3");
  EXPECT_EQ(dtype_bytes(DType::E5M2), 1);
  EXPECT_TRUE(is_fp8(DType::E4M3));
  EXPECT_FALSE(is_fp8(DType::BF16));
  EXPECT_EQ(unit_roundoff(DType::E4M3), 1.0 / 16);
  EXPECT_EQ(unit_roundoff(DType::E5M2), 1.0 / 8);
}
