#include "flashsim/dtype.h"

#include <Eigen/Core>
#include <cmath>
#include <cstring>
#include <limits>

#include "flashsim/error.h"
#include "flashsim/fp8.h"

namespace flashsim {

std::string_view dtype_name(DType t) {
  switch (t) {
    case DType::F64:
      return "fp64";
    case DType::F32:
      return "fp32";
    case DType::F16:
      return "fp16";
    case DType::BF16:
      return "bf16";
    case DType::E4M3:
      return "e4m3";
    case DType::E5M2:
      return "e5m2";
  }
  return "?";
}

std::string_view safetensors_name(DType t) {
  switch (t) {
    case DType::F64:
      return "F64";
    case DType::F32:
      return "F32";
    case DType::F16:
      return "F16";
    case DType::BF16:
      return "BF16";
    case DType::E4M3:
      return "F8_E4M3";
    case DType::E5M2:
      return "F8_E5M2";
  }
  return "?";
}

DType parse_dtype(std::string_view name) {
  if (name == "fp64" || name == "F64" || name == "float64") return DType::F64;
  if (name == "fp32" || name == "F32" || name == "float32") return DType::F32;
  if (name == "fp16" || name == "F16" || name == "float16") return DType::F16;
  if (name == "bf16" || name == "BF16" || name == "bfloat16") return DType::BF16;
  if (name == "e4m3" || name == "F8_E4M3" || name == "float8_e4m3fn") return DType::E4M3;
  if (name == "e5m2" || name == "F8_E5M2" || name == "float8_e5m2") return DType::E5M2;
  throw InputError(
      "dtype", "unknown dtype '" + std::string(name) + "' (expected fp64, fp32, fp16, bf16, e4m3 or e5m2)");
}

int dtype_bytes(DType t) {
  switch (t) {
    case DType::F64:
      return 8;
    case DType::F32:
      return 4;
    case DType::F16:
    case DType::BF16:
      return 2;
    case DType::E4M3:
    case DType::E5M2:
      return 1;
  }
  return 0;
}

bool is_fp8(DType t) {
  return t == DType::E4M3 || t == DType::E5M2;
}

static Fp8Format fp8_format(DType t) {
  return t == DType::E4M3 ? Fp8Format::E4M3 : Fp8Format::E5M2;
}

double unit_roundoff(DType t) {
  switch (t) {
    case DType::F64:
      return std::ldexp(1.0, -53);
    case DType::F32:
      return std::ldexp(1.0, -24);
    case DType::F16:
      return std::ldexp(1.0, -11);
    case DType::BF16:
      return std::ldexp(1.0, -8);
    case DType::E4M3:
      return std::ldexp(1.0, -4);
    case DType::E5M2:
      return std::ldexp(1.0, -3);
  }
  return 0;
}

double max_finite(DType t) {
  switch (t) {
    case DType::F64:
      return std::numeric_limits<double>::max();
    case DType::F32:
      return std::numeric_limits<float>::max();
    case DType::F16:
      return 65504.0;
    case DType::BF16:
      return static_cast<double>(Eigen::NumTraits<Eigen::bfloat16>::highest());
    case DType::E4M3:
    case DType::E5M2:
      return fp8_traits(fp8_format(t)).max_finite;
  }
  return 0;
}

// fp16/bf16 go through float: the double -> float step must not round first (double rounding), so it is done
// only when the float conversion is exact or cannot change the final rounding. Eigen's conversions from float
// are round-to-nearest-even; a double is first truncated to float toward zero with its sticky bit kept.
static float to_float_keep_sticky(double x) {
  const float f = static_cast<float>(x);
  if (static_cast<double>(f) == x || !std::isfinite(x)) return f;
  // Round toward zero to float, then set the lowest mantissa bit as a sticky bit: the later 16-bit rounding
  // (which drops 13 or 16 mantissa bits) sees "strictly between" exactly as for the true value.
  float tz = f;
  if (std::fabs(static_cast<double>(f)) > std::fabs(x)) tz = std::nextafter(f, 0.0f);
  uint32_t bits;
  static_assert(sizeof(bits) == sizeof(tz));
  std::memcpy(&bits, &tz, sizeof(bits));
  bits |= 1u;
  std::memcpy(&tz, &bits, sizeof(bits));
  return tz;
}

uint16_t to_half_bits(double x) {
  return Eigen::numext::bit_cast<uint16_t>(Eigen::half(to_float_keep_sticky(x)));
}
uint16_t to_bfloat16_bits(double x) {
  return Eigen::numext::bit_cast<uint16_t>(Eigen::bfloat16(to_float_keep_sticky(x)));
}
double from_half_bits(uint16_t bits) {
  return static_cast<double>(static_cast<float>(Eigen::numext::bit_cast<Eigen::half>(bits)));
}
double from_bfloat16_bits(uint16_t bits) {
  return static_cast<double>(static_cast<float>(Eigen::numext::bit_cast<Eigen::bfloat16>(bits)));
}

double round_to(double x, DType t) {
  switch (t) {
    case DType::F64:
      return x;
    case DType::F32:
      return static_cast<double>(static_cast<float>(x));
    case DType::F16:
      return from_half_bits(to_half_bits(x));
    case DType::BF16:
      return from_bfloat16_bits(to_bfloat16_bits(x));
    case DType::E4M3:
    case DType::E5M2:
      return fp8_round(x, fp8_format(t));
  }
  return x;
}

float round_to_float(float x, DType t) {
  switch (t) {
    case DType::F64:
    case DType::F32:
      return x;
    case DType::F16:
      return static_cast<float>(Eigen::half(x));
    case DType::BF16:
      return static_cast<float>(Eigen::bfloat16(x));
    case DType::E4M3:
    case DType::E5M2:
      return fp8_round(x, fp8_format(t));
  }
  return x;
}

}  // namespace flashsim
