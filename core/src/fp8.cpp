// OCP FP8 (e4m3, e5m2) conversions; the formats and the rounding rule are in flashsim/fp8.h. No Debian package
// ships an FP8 conversion for C++ (Eigen 3.4 has half and bfloat16 only), so it is written here once.
#include "flashsim/fp8.h"

#include <algorithm>
#include <cmath>

namespace flashsim {

Fp8Traits fp8_traits(Fp8Format f) {
  if (f == Fp8Format::E4M3) return {4, 3, 7, 448.0, -6};
  return {5, 2, 15, 57344.0, -14};
}

double fp8_decode(uint8_t code, Fp8Format f) {
  const Fp8Traits t = fp8_traits(f);
  const double sign = (code & 0x80) ? -1.0 : 1.0;
  const int mant_mask = (1 << t.mantissa_bits) - 1;
  const int exp_field = (code & 0x7f) >> t.mantissa_bits;
  const int mant = code & mant_mask;
  const int exp_max = (1 << t.exponent_bits) - 1;
  if (f == Fp8Format::E4M3 && exp_field == exp_max && mant == mant_mask) return std::nan("");
  if (f == Fp8Format::E5M2 && exp_field == exp_max) return mant == 0 ? sign * HUGE_VAL : std::nan("");
  // Subnormal (exponent field 0): m * 2^(min_exponent - mantissa_bits); normal: (2^mb + m) * 2^(e - bias - mb).
  if (exp_field == 0) return sign * std::ldexp(static_cast<double>(mant), t.min_exponent - t.mantissa_bits);
  return sign *
         std::ldexp(static_cast<double>((1 << t.mantissa_bits) + mant), exp_field - t.bias - t.mantissa_bits);
}

double fp8_round(double x, Fp8Format f) {
  if (std::isnan(x)) return x;
  const Fp8Traits t = fp8_traits(f);
  const double a = std::fabs(x);
  // Saturation: every |x| >= max (infinities included) goes to max. Rounding first and clamping after gives
  // the same: values in (max, max + ulp/2) round down to max anyway, and the others would overflow.
  if (a >= t.max_finite) return std::copysign(t.max_finite, x);
  if (a == 0) return x;  // keeps -0
  // The spacing of the FP8 values around a is q = 2^(E - mantissa_bits), E = floor(log2 a) clamped below at
  // the smallest normal exponent (below it the spacing stays that of the subnormals). a / q is exact (a power
  // of two scaling, far from double's limits), and nearbyint rounds it to an integer, ties to even (the
  // default rounding mode). A result of 2^(mantissa_bits + 1) is the next binade's first value: still exact.
  int e2 = 0;
  std::frexp(a, &e2);  // a = m 2^e2, m in [0.5, 1): floor(log2 a) = e2 - 1
  const int exponent = std::max(e2 - 1, t.min_exponent);
  const double q = std::ldexp(1.0, exponent - t.mantissa_bits);
  return std::copysign(std::nearbyint(a / q) * q, x);
}

float fp8_round(float x, Fp8Format f) {
  // Every float is a double, and the double rounding is to the FP8 grid directly: no double rounding.
  return static_cast<float>(fp8_round(static_cast<double>(x), f));
}

uint8_t fp8_encode(double x, Fp8Format f) {
  const Fp8Traits t = fp8_traits(f);
  const uint8_t sign = std::signbit(x) ? 0x80 : 0x00;
  if (std::isnan(x)) return sign | (f == Fp8Format::E4M3 ? 0x7f : 0x7e);
  const double a = std::fabs(fp8_round(x, f));
  if (a == 0) return sign;
  int e2 = 0;
  std::frexp(a, &e2);
  const int e = e2 - 1;    // floor(log2 a)
  if (e < t.min_exponent)  // subnormal: a = m 2^(min_exponent - mantissa_bits)
    return sign | static_cast<uint8_t>(std::ldexp(a, t.mantissa_bits - t.min_exponent));
  const int mant = static_cast<int>(std::ldexp(a, t.mantissa_bits - e)) - (1 << t.mantissa_bits);
  return sign | static_cast<uint8_t>(((e + t.bias) << t.mantissa_bits) | mant);
}

}  // namespace flashsim
