#pragma once
// Element types of attention inputs and the exact rounding of a double to each of them.
#include <cstdint>
#include <string>
#include <string_view>

namespace flashsim {

// E4M3 and E5M2 are the OCP FP8 formats (flashsim/fp8.h): inputs of FP8 attention kernels only, with descale
// factors (AttentionProblem::descale); round_to saturates to +-max_finite as the kernels' conversions do.
enum class DType { F64, F32, F16, BF16, E4M3, E5M2 };

std::string_view dtype_name(DType t);        // "fp64", "fp32", "fp16", "bf16", "e4m3", "e5m2"
std::string_view safetensors_name(DType t);  // "F64", "F32", "F16", "BF16", "F8_E4M3", "F8_E5M2"
DType parse_dtype(std::string_view name);    // accepts both spellings; throws InputError("dtype")
int dtype_bytes(DType t);
bool is_fp8(DType t);  // E4M3 or E5M2
// Unit roundoff u = 2^-p (half the distance from 1 to the next number): 2^-53, 2^-24, 2^-11, 2^-8, 2^-4, 2^-3.
double unit_roundoff(DType t);
// Largest finite value of the type.
double max_finite(DType t);

// Round-to-nearest-even of x to t, returned as a double (exact: every value of t is a double).
double round_to(double x, DType t);
float round_to_float(float x, DType t);

// Raw bit patterns for file I/O (fp16 / bf16 as IEEE binary16 / bfloat16 bits).
uint16_t to_half_bits(double x);
uint16_t to_bfloat16_bits(double x);
double from_half_bits(uint16_t bits);
double from_bfloat16_bits(uint16_t bits);

}  // namespace flashsim
