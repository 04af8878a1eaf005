#pragma once
// Tensors in their stored dtype (raw bytes, as on a device) to and from doubles, through golden::Tensor's
// conversions (round to nearest even into fp16 / bf16 / fp32).
#include <cstdint>
#include <cstring>
#include <vector>

#include "flashsim/dtype.h"
#include "flashsim/golden/safetensors.h"

namespace flashsim::gpu {

// The bytes of `values` rounded to dtype t.
inline std::vector<uint8_t> stored_bytes(const std::vector<double>& values, DType t) {
  return golden::Tensor::from_doubles(golden::st_dtype_of(t), {static_cast<int64_t>(values.size())}, values)
      .data;
}

// `n` elements of dtype t at `src` as doubles.
inline std::vector<double> from_stored(const void* src, int64_t n, DType t) {
  const auto* b = static_cast<const uint8_t*>(src);
  golden::Tensor tensor{golden::st_dtype_of(t), {n}, std::vector<uint8_t>(b, b + n * dtype_bytes(t))};
  return tensor.to_doubles();
}

// `values` rounded to dtype t, written as t's bytes at `dst`.
inline void to_stored(const std::vector<double>& values, void* dst, DType t) {
  const auto bytes = stored_bytes(values, t);
  std::memcpy(dst, bytes.data(), bytes.size());
}

}  // namespace flashsim::gpu
