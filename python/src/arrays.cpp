#include "arrays.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <sys/mman.h>

#include <cstdint>
#include <cstring>

#include "flashsim/error.h"
#include "flashsim/fp8.h"

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

// Faulting in a large copy's 4 KiB pages one by one is most of its cost (0.05 s for a 67 MB input on the
// 2-core development machine, 5% of a 4096 x 16-head forward): ask for 2 MiB pages where the kernel gives them
// on request (transparent huge pages in "madvise" mode).
void advise_huge_pages(void* data, size_t bytes) {
#ifdef MADV_HUGEPAGE
  constexpr uintptr_t kPage = 4096;
  const auto begin = (reinterpret_cast<uintptr_t>(data) + kPage - 1) & ~(kPage - 1);
  const auto end = (reinterpret_cast<uintptr_t>(data) + bytes) & ~(kPage - 1);
  if (end > begin)
    madvise(reinterpret_cast<void*>(begin), end - begin, MADV_HUGEPAGE);  // a hint: errors ignored
#else
  (void)data;
  (void)bytes;
#endif
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
  const auto n = static_cast<int64_t>(a.size());
  std::vector<double> out;
  out.reserve(static_cast<size_t>(n));
  advise_huge_pages(out.data(), static_cast<size_t>(n) * sizeof(double));
  out.resize(static_cast<size_t>(n));
  // One pass over the input, the only copy, split over the cores.
  const auto convert = [&](auto element) {
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; ++i) out[i] = element(i);
  };
  switch (t) {
    case DType::F64:
      convert([p = data_as<double>(a)](int64_t i) { return p[i]; });
      break;
    case DType::F32:
      convert([p = data_as<float>(a)](int64_t i) { return double(p[i]); });
      break;
    case DType::F16:
      convert([p = data_as<uint16_t>(a)](int64_t i) { return from_half_bits(p[i]); });
      break;
    case DType::BF16:
      convert([p = data_as<uint16_t>(a)](int64_t i) { return from_bfloat16_bits(p[i]); });
      break;
    case DType::E4M3:  // float_dtype never gives FP8: NumPy has no FP8 type
    case DType::E5M2:
      throw InputError(name, "FP8 arrays are not taken: pass the dequantized values");
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
    case DType::E4M3:  // FP8 codes as uint8
    case DType::E5M2: {
      std::vector<uint8_t> codes(values.size());
      for (size_t i = 0; i < codes.size(); ++i)
        codes[i] = fp8_encode(values[i], storage == DType::E4M3 ? Fp8Format::E4M3 : Fp8Format::E5M2);
      return own(std::move(codes), shape);
    }
  }
  return nb::none();
}

nb::object to_numpy(std::vector<double>&& values, const std::vector<int64_t>& shape) {
  return own(std::move(values), shape);
}

}  // namespace flashsim::py
