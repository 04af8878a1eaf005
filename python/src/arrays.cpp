#include "arrays.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cstring>

#include "flashsim/error.h"

namespace flashsim::py {

namespace {
namespace dl = nb::dlpack;

bool is(const InArray& a, dl::dtype_code code, int bits) {
  const dl::dtype t = a.dtype();
  return t.code == static_cast<uint8_t>(code) && t.bits == bits && t.lanes == 1;
}

std::string dtype_text(const InArray& a) {
  const dl::dtype t = a.dtype();
  const char* kind = "?";
  switch (static_cast<dl::dtype_code>(t.code)) {
    case dl::dtype_code::Int:
      kind = "int";
      break;
    case dl::dtype_code::UInt:
      kind = "uint";
      break;
    case dl::dtype_code::Float:
      kind = "float";
      break;
    case dl::dtype_code::Bfloat:
      kind = "bfloat";
      break;
    case dl::dtype_code::Complex:
      kind = "complex";
      break;
    case dl::dtype_code::Bool:
      kind = "bool";
      break;
  }
  return fmt::format("{}{}", kind, t.bits);
}

template <typename T>
const T* data_as(const InArray& a) {
  return static_cast<const T*>(a.data());
}

// Owns a vector for the lifetime of the NumPy array that views it.
template <typename T>
nb::object own(std::vector<T>&& v, const std::vector<int64_t>& shape) {
  auto* heap = new std::vector<T>(std::move(v));
  nb::capsule owner(heap, [](void* p) noexcept { delete static_cast<std::vector<T>*>(p); });
  std::vector<size_t> dims(shape.begin(), shape.end());
  return nb::cast(nb::ndarray<nb::numpy, T>(heap->data(), dims.size(), dims.data(), owner));
}
}  // namespace

std::vector<int64_t> shape_of(const InArray& a) {
  std::vector<int64_t> s(a.ndim());
  for (size_t i = 0; i < a.ndim(); ++i) s[i] = static_cast<int64_t>(a.shape(i));
  return s;
}

std::string shape_text(const std::vector<int64_t>& shape) {
  return fmt::format("[{}]", fmt::join(shape, ", "));
}

DType float_dtype(const InArray& a, const std::string& name) {
  if (is(a, dl::dtype_code::Float, 64)) return DType::F64;
  if (is(a, dl::dtype_code::Float, 32)) return DType::F32;
  if (is(a, dl::dtype_code::Float, 16)) return DType::F16;
  if (is(a, dl::dtype_code::Bfloat, 16) || is(a, dl::dtype_code::UInt, 16)) return DType::BF16;
  throw InputError(name, fmt::format("elements of type {}: expected float64, float32, float16 or bfloat16",
                                     dtype_text(a)));
}

std::vector<double> widen(const InArray& a, const std::string& name) {
  const DType t = float_dtype(a, name);
  const size_t n = a.size();
  std::vector<double> out(n);
  switch (t) {  // one pass over the input, the only copy
    case DType::F64:
      std::memcpy(out.data(), a.data(), n * sizeof(double));
      break;
    case DType::F32: {
      const float* p = data_as<float>(a);
      for (size_t i = 0; i < n; ++i) out[i] = p[i];
      break;
    }
    case DType::F16: {
      const uint16_t* p = data_as<uint16_t>(a);
      for (size_t i = 0; i < n; ++i) out[i] = from_half_bits(p[i]);
      break;
    }
    case DType::BF16: {
      const uint16_t* p = data_as<uint16_t>(a);
      for (size_t i = 0; i < n; ++i) out[i] = from_bfloat16_bits(p[i]);
      break;
    }
  }
  return out;
}

std::vector<uint8_t> booleans(const InArray& a, const std::string& name) {
  if (!is(a, dl::dtype_code::Bool, 8) && !is(a, dl::dtype_code::UInt, 8) && !is(a, dl::dtype_code::Int, 8))
    throw InputError(name,
                     fmt::format("elements of type {}: expected bool (or uint8, != 0 keeps)", dtype_text(a)));
  const uint8_t* p = data_as<uint8_t>(a);
  std::vector<uint8_t> out(a.size());
  for (size_t i = 0; i < out.size(); ++i) out[i] = p[i] != 0;
  return out;
}

std::vector<int64_t> integers(const InArray& a, const std::string& name) {
  std::vector<int64_t> out(a.size());
  if (is(a, dl::dtype_code::Int, 32)) {
    for (size_t i = 0; i < out.size(); ++i) out[i] = data_as<int32_t>(a)[i];
  } else if (is(a, dl::dtype_code::Int, 64)) {
    std::memcpy(out.data(), a.data(), out.size() * sizeof(int64_t));
  } else {
    throw InputError(name, fmt::format("elements of type {}: expected int32 or int64", dtype_text(a)));
  }
  return out;
}

nb::object to_numpy(const std::vector<double>& values, const std::vector<int64_t>& shape, DType storage) {
  switch (storage) {
    case DType::F64:
      return own(std::vector<double>(values), shape);
    case DType::F32:
      return own(std::vector<float>(values.begin(), values.end()), shape);
    case DType::F16:
    case DType::BF16: {
      std::vector<uint16_t> bits(values.size());
      for (size_t i = 0; i < bits.size(); ++i)
        bits[i] = storage == DType::F16 ? to_half_bits(values[i]) : to_bfloat16_bits(values[i]);
      nb::object a = own(std::move(bits), shape);
      // float16 has a NumPy type: view the bits as it; bfloat16 stays uint16 for the Python layer.
      return storage == DType::F16 ? a.attr("view")("float16") : a;
    }
  }
  return nb::none();
}

nb::object to_numpy(std::vector<double>&& values, const std::vector<int64_t>& shape) {
  return own(std::move(values), shape);
}

}  // namespace flashsim::py
