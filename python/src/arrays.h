#pragma once
// Arrays crossing the Python boundary: any CPU array with DLPack or the buffer protocol in, NumPy arrays out.
// A float input is widened to double once (the reference's element type); nothing else is copied.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>

#include <cstdint>
#include <string>
#include <vector>

#include "flashsim/dtype.h"

namespace flashsim::py {

namespace nb = nanobind;

// A read-only, C-contiguous CPU array of any element type (nanobind makes a non-contiguous one contiguous).
using InArray = nb::ndarray<nb::ro, nb::c_contig, nb::device::cpu>;

std::vector<int64_t> shape_of(const InArray& a);
// "[2, 64, 4, 32]"
std::string shape_text(const std::vector<int64_t>& shape);

// The flashsim dtype of a float array: float16/32/64 and bfloat16 (DLPack's bfloat, or uint16 elements, which
// are bfloat16 bit patterns: how ml_dtypes' and torch's bfloat16 arrays reach NumPy). InputError(name) else.
DType float_dtype(const InArray& a, const std::string& name);
// Values widened to double (exact: every fp16 / bf16 / fp32 value is a double).
std::vector<double> widen(const InArray& a, const std::string& name);
// Booleans (bool, uint8, int8 elements: != 0 is true).
std::vector<uint8_t> booleans(const InArray& a, const std::string& name);
// Integers (int32 / int64 elements).
std::vector<int64_t> integers(const InArray& a, const std::string& name);

// A NumPy array of `shape` holding the values stored as `storage`: float64, float32, float16, or bfloat16 as
// uint16 bit patterns (the Python layer views them as ml_dtypes / torch bfloat16).
nb::object to_numpy(const std::vector<double>& values, const std::vector<int64_t>& shape, DType storage);
// A float64 array that takes the vector over (no copy).
nb::object to_numpy(std::vector<double>&& values, const std::vector<int64_t>& shape);

}  // namespace flashsim::py
