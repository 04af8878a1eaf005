#pragma once
// Element types of attention inputs and the exact rounding of a double to each of them.
#include <cstdint>
#include <string>
#include <string_view>

namespace flashsim {

enum class DType { F64, F32, F16, BF16 };

std::string_view dtype_name(DType t);        // "fp64", "fp32", "fp16", "bf16"
std::string_view safetensors_name(DType t);  // "F64", "F32", "F16", "BF16"
DType parse_dtype(std::string_view name);    // accepts both spellings; throws InputError("dtype")
int dtype_bytes(DType t);
// Unit roundoff u = 2^-p (half the distance from 1 to the next number): 2^-53, 2^-24, 2^-11, 2^-8.
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
