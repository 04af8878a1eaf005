#pragma once
// Reading a golden file's tensors with errors that name the file, the tensor and what is wrong, and rounding
// inputs to a compute dtype (case_file.cpp, norm_case.cpp).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>
#include <string>
#include <vector>

#include "flashsim/dtype.h"
#include "flashsim/error.h"
#include "flashsim/golden/safetensors.h"

namespace flashsim::golden::detail {

// Rounds every value to d; false when one is not finite then (the inputs overflow d: no kernel in d runs them).
inline bool round_all(std::vector<double>& t, DType d) {
  for (double& x : t) {
    x = round_to(x, d);
    if (!std::isfinite(x)) return false;
  }
  return true;
}

inline const Tensor& need(const SafetensorsFile& f, const std::string& name, const std::string& source) {
  const Tensor* t = f.find(name);
  if (!t) throw InputError(source, fmt::format("has no tensor '{}'", name));
  return *t;
}

inline void check_shape(const Tensor& t, const std::vector<int64_t>& shape, const std::string& name,
                        const std::string& source) {
  if (t.shape != shape)
    throw InputError(source, fmt::format("tensor '{}' has shape [{}], the case needs [{}]", name,
                                         fmt::join(t.shape, ", "), fmt::join(shape, ", ")));
}

inline std::vector<double> input(const SafetensorsFile& f, const std::string& name,
                                 const std::vector<int64_t>& shape, DType dtype, const std::string& source) {
  const Tensor& t = need(f, name, source);
  if (t.dtype != st_dtype_of(dtype))
    throw InputError(source, fmt::format("tensor '{}' is {}, the case's dtype is {}", name,
                                         st_dtype_name(t.dtype), st_dtype_name(st_dtype_of(dtype))));
  check_shape(t, shape, name, source);
  return t.to_doubles();
}

// An integer tensor (I32 or I64) of the given shape, as int64.
inline std::vector<int64_t> int_input(const SafetensorsFile& f, const std::string& name,
                                      const std::vector<int64_t>& shape, const std::string& source) {
  const Tensor& t = need(f, name, source);
  if (t.dtype != StDType::I32 && t.dtype != StDType::I64)
    throw InputError(source, fmt::format("tensor '{}' is {}, not I32 or I64", name, st_dtype_name(t.dtype)));
  check_shape(t, shape, name, source);
  std::vector<int64_t> v;
  for (const double x : t.to_doubles()) v.push_back(static_cast<int64_t>(x));
  return v;
}

}  // namespace flashsim::golden::detail
