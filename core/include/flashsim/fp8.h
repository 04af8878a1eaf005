#pragma once
// The two OCP 8-bit floating-point formats (OFP8, "OCP 8-bit Floating Point Specification" v1.0) that FP8
// attention kernels read, and the conversions a kernel's __nv_cvt_*_to_fp8(..., __NV_SATFINITE) performs:
//
//   e4m3 (e4m3fn): 1 sign, 4 exponent (bias 7), 3 mantissa bits. No infinities: S.1111.111 is NaN, so the
//                  largest finite value is S.1111.110 = 1.75 * 2^8 = 448. Subnormals m * 2^-9 (m = 1..7).
//   e5m2:          1 sign, 5 exponent (bias 15), 2 mantissa bits, IEEE-like: S.11111.00 is +-inf, S.11111.xx
//                  (xx != 0) NaN; largest finite 1.75 * 2^15 = 57344. Subnormals m * 2^-16 (m = 1..3).
//
// Conversion from double: round to nearest, ties to even, then saturate: a finite value (or an infinity)
// beyond the largest finite value becomes +-max, NaN stays NaN, the sign of zero is kept.
#include <cstdint>

namespace flashsim {

enum class Fp8Format { E4M3, E5M2 };

struct Fp8Traits {
  int exponent_bits;  // 4, 5
  int mantissa_bits;  // 3, 2
  int bias;           // 7, 15
  double max_finite;  // 448, 57344
  int min_exponent;   // the exponent of the smallest normal: 1 - bias (-6, -14)
};
Fp8Traits fp8_traits(Fp8Format f);

// The value of an 8-bit code (NaN for the NaN codes, +-inf for e5m2's infinities).
double fp8_decode(uint8_t code, Fp8Format f);
// Round-to-nearest-even with saturation (above), as a double; exact: every FP8 value is a double.
double fp8_round(double x, Fp8Format f);
float fp8_round(float x, Fp8Format f);
// The code of fp8_round(x, f): NaN gives S.1111.111 (e4m3) or S.11111.10 (e5m2, a quiet NaN).
uint8_t fp8_encode(double x, Fp8Format f);

}  // namespace flashsim
