#pragma once
// Reading and writing the safetensors format (https://github.com/huggingface/safetensors):
//   [8 bytes: N, little-endian u64] [N bytes: JSON header] [data]
//   header = {"name": {"dtype": "F32", "shape": [..], "data_offsets": [begin, end]}, ...,
//             "__metadata__": {"key": "string value", ...}}
// Offsets are relative to the start of the data; tensors are row-major and contiguous; the data must be
// covered by the tensors exactly, without holes or overlaps. The reader checks all of this and throws
// InputError naming the problem; it never reads out of bounds.
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "flashsim/dtype.h"

namespace flashsim::golden {

enum class StDType { F64, F32, F16, BF16, BOOL, U8, I32, I64, F8_E4M3, F8_E5M2 };
std::string_view st_dtype_name(StDType t);      // "F64", ...
StDType parse_st_dtype(std::string_view name);  // throws InputError("dtype") for an unknown name
int st_dtype_bytes(StDType t);
bool st_is_float(StDType t);
StDType st_dtype_of(DType t);     // fp64 -> F64, ...
DType float_dtype_of(StDType t);  // F64 -> fp64, ...; throws for non-float types

struct Tensor {
  StDType dtype = StDType::F64;
  std::vector<int64_t> shape;
  std::vector<uint8_t> data;  // row-major, little-endian

  int64_t elements() const;
  // Element values as doubles (floats and integers; BOOL/U8 as 0/1/...).
  std::vector<double> to_doubles() const;
  // A tensor of `dtype` from values (rounded to the dtype with round-to-nearest-even for floats).
  static Tensor from_doubles(StDType dtype, std::vector<int64_t> shape, const std::vector<double>& values);
  static Tensor from_bytes(std::vector<int64_t> shape, const std::vector<uint8_t>& values, StDType dtype);
  static Tensor from_int64(StDType dtype, std::vector<int64_t> shape, const std::vector<int64_t>& values);
};

// Tensors in file order (the order they were added) and the string-to-string metadata.
struct SafetensorsFile {
  std::vector<std::pair<std::string, Tensor>> tensors;
  std::map<std::string, std::string> metadata;

  const Tensor* find(std::string_view name) const;  // nullptr when absent
  void add(std::string name, Tensor t) { tensors.emplace_back(std::move(name), std::move(t)); }
};

// Serializes: header padded with spaces to a multiple of 8 bytes; data in tensor order. Deterministic.
std::vector<uint8_t> serialize(const SafetensorsFile& f);
// Parses and validates; `source` names the file in error messages.
SafetensorsFile parse(const uint8_t* bytes, size_t size, const std::string& source);
SafetensorsFile parse(const std::vector<uint8_t>& bytes, const std::string& source);

// The largest header accepted: the safetensors library's own limit (100 MB).
constexpr uint64_t kMaxHeaderBytes = 100'000'000;

}  // namespace flashsim::golden
