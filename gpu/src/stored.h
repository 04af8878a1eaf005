#pragma once
// Tensors in their stored dtype (raw bytes, as on a device) to and from doubles.
#include <cstdint>
#include <cstring>
#include <vector>

#include "flashsim/dtype.h"

namespace flashsim::gpu {

// `n` elements of dtype t at `src` as doubles (exact: every value of t is a double).
inline std::vector<double> from_stored(const void* src, int64_t n, DType t) {
  std::vector<double> out(static_cast<size_t>(n));
  const auto* b = static_cast<const uint8_t*>(src);
  for (int64_t i = 0; i < n; ++i) {
    const uint8_t* e = b + i * dtype_bytes(t);
    uint16_t h = 0;
    float f = 0;
    switch (t) {
      case DType::F64:
        std::memcpy(&out[i], e, 8);
        break;
      case DType::F32:
        std::memcpy(&f, e, 4);
        out[i] = f;
        break;
      case DType::F16:
        std::memcpy(&h, e, 2);
        out[i] = from_half_bits(h);
        break;
      case DType::BF16:
        std::memcpy(&h, e, 2);
        out[i] = from_bfloat16_bits(h);
        break;
    }
  }
  return out;
}

// Doubles rounded to dtype t (round to nearest even), written as t's bytes at `dst`.
inline void to_stored(const std::vector<double>& values, void* dst, DType t) {
  auto* b = static_cast<uint8_t*>(dst);
  for (size_t i = 0; i < values.size(); ++i) {
    uint8_t* e = b + i * static_cast<size_t>(dtype_bytes(t));
    uint16_t h = 0;
    float f = 0;
    switch (t) {
      case DType::F64:
        std::memcpy(e, &values[i], 8);
        break;
      case DType::F32:
        f = static_cast<float>(values[i]);
        std::memcpy(e, &f, 4);
        break;
      case DType::F16:
        h = to_half_bits(values[i]);
        std::memcpy(e, &h, 2);
        break;
      case DType::BF16:
        h = to_bfloat16_bits(values[i]);
        std::memcpy(e, &h, 2);
        break;
    }
  }
}

}  // namespace flashsim::gpu
