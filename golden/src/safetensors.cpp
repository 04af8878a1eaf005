#include "flashsim/golden/safetensors.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>

#include "flashsim/error.h"
#include "flashsim/fp8.h"

namespace flashsim::golden {

namespace {

struct DTypeInfo {
  StDType t;
  std::string_view name;
  int bytes;
};
constexpr DTypeInfo kTypes[] = {{StDType::F64, "F64", 8},         {StDType::F32, "F32", 4},
                                {StDType::F16, "F16", 2},         {StDType::BF16, "BF16", 2},
                                {StDType::BOOL, "BOOL", 1},       {StDType::U8, "U8", 1},
                                {StDType::I32, "I32", 4},         {StDType::I64, "I64", 8},
                                {StDType::F8_E4M3, "F8_E4M3", 1}, {StDType::F8_E5M2, "F8_E5M2", 1}};

template <class T>
T load_le(const uint8_t* p) {  // the data is little-endian, as is every platform flashsim builds on
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}
template <class T>
void store_le(uint8_t* p, T v) {
  std::memcpy(p, &v, sizeof(T));
}

// Product of the dims, or -1 when a dim is negative or the product overflows int64.
int64_t checked_elements(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0) return -1;
    if (d != 0 && n > std::numeric_limits<int64_t>::max() / d) return -1;
    n *= d;
  }
  return n;
}

}  // namespace

std::string_view st_dtype_name(StDType t) {
  for (const auto& i : kTypes)
    if (i.t == t) return i.name;
  return "?";
}
StDType parse_st_dtype(std::string_view name) {
  for (const auto& i : kTypes)
    if (i.name == name) return i.t;
  throw InputError("dtype", fmt::format("unknown safetensors dtype '{}'", name));
}
int st_dtype_bytes(StDType t) {
  for (const auto& i : kTypes)
    if (i.t == t) return i.bytes;
  return 0;
}
bool st_is_float(StDType t) {
  return t == StDType::F64 || t == StDType::F32 || t == StDType::F16 || t == StDType::BF16 ||
         t == StDType::F8_E4M3 || t == StDType::F8_E5M2;
}
StDType st_dtype_of(DType t) {
  switch (t) {
    case DType::F64:
      return StDType::F64;
    case DType::F32:
      return StDType::F32;
    case DType::F16:
      return StDType::F16;
    case DType::BF16:
      return StDType::BF16;
    case DType::E4M3:
      return StDType::F8_E4M3;
    case DType::E5M2:
      return StDType::F8_E5M2;
  }
  return StDType::F64;
}
DType float_dtype_of(StDType t) {
  switch (t) {
    case StDType::F64:
      return DType::F64;
    case StDType::F32:
      return DType::F32;
    case StDType::F16:
      return DType::F16;
    case StDType::BF16:
      return DType::BF16;
    case StDType::F8_E4M3:
      return DType::E4M3;
    case StDType::F8_E5M2:
      return DType::E5M2;
    default:
      break;
  }
  throw InputError("dtype", fmt::format("{} is not a floating-point dtype", st_dtype_name(t)));
}

int64_t Tensor::elements() const {
  return checked_elements(shape);
}

std::vector<double> Tensor::to_doubles() const {
  const int64_t n = elements();
  std::vector<double> out(static_cast<size_t>(n));
  const uint8_t* p = data.data();
  for (int64_t i = 0; i < n; ++i) {
    switch (dtype) {
      case StDType::F64:
        out[i] = load_le<double>(p + 8 * i);
        break;
      case StDType::F32:
        out[i] = load_le<float>(p + 4 * i);
        break;
      case StDType::F16:
        out[i] = from_half_bits(load_le<uint16_t>(p + 2 * i));
        break;
      case StDType::BF16:
        out[i] = from_bfloat16_bits(load_le<uint16_t>(p + 2 * i));
        break;
      case StDType::F8_E4M3:
        out[i] = fp8_decode(p[i], Fp8Format::E4M3);
        break;
      case StDType::F8_E5M2:
        out[i] = fp8_decode(p[i], Fp8Format::E5M2);
        break;
      case StDType::BOOL:
      case StDType::U8:
        out[i] = p[i];
        break;
      case StDType::I32:
        out[i] = load_le<int32_t>(p + 4 * i);
        break;
      case StDType::I64:
        out[i] = static_cast<double>(load_le<int64_t>(p + 8 * i));
        break;
    }
  }
  return out;
}

Tensor Tensor::from_doubles(StDType dtype, std::vector<int64_t> shape, const std::vector<double>& values) {
  Tensor t;
  t.dtype = dtype;
  t.shape = std::move(shape);
  const int64_t n = t.elements();
  if (n != static_cast<int64_t>(values.size()))
    throw InputError("tensor", fmt::format("shape holds {} elements, {} values given", n, values.size()));
  const int b = st_dtype_bytes(dtype);
  t.data.resize(static_cast<size_t>(n) * b);
  uint8_t* p = t.data.data();
  for (int64_t i = 0; i < n; ++i) {
    const double x = values[i];
    switch (dtype) {
      case StDType::F64:
        store_le<double>(p + 8 * i, x);
        break;
      case StDType::F32:
        store_le<float>(p + 4 * i, static_cast<float>(x));
        break;
      case StDType::F16:
        store_le<uint16_t>(p + 2 * i, to_half_bits(x));
        break;
      case StDType::BF16:
        store_le<uint16_t>(p + 2 * i, to_bfloat16_bits(x));
        break;
      case StDType::F8_E4M3:
        p[i] = fp8_encode(x, Fp8Format::E4M3);
        break;
      case StDType::F8_E5M2:
        p[i] = fp8_encode(x, Fp8Format::E5M2);
        break;
      case StDType::BOOL:
        p[i] = x != 0 ? 1 : 0;
        break;
      case StDType::U8:
        p[i] = static_cast<uint8_t>(x);
        break;
      case StDType::I32:
        store_le<int32_t>(p + 4 * i, static_cast<int32_t>(x));
        break;
      case StDType::I64:
        store_le<int64_t>(p + 8 * i, static_cast<int64_t>(x));
        break;
    }
  }
  return t;
}

Tensor Tensor::from_bytes(std::vector<int64_t> shape, const std::vector<uint8_t>& values, StDType dtype) {
  std::vector<double> v(values.begin(), values.end());
  return from_doubles(dtype, std::move(shape), v);
}

Tensor Tensor::from_int64(StDType dtype, std::vector<int64_t> shape, const std::vector<int64_t>& values) {
  Tensor t;
  t.dtype = dtype;
  t.shape = std::move(shape);
  if (t.elements() != static_cast<int64_t>(values.size()))
    throw InputError("tensor", "shape and values disagree");
  t.data.resize(values.size() * st_dtype_bytes(dtype));
  for (size_t i = 0; i < values.size(); ++i) {
    if (dtype == StDType::I32)
      store_le<int32_t>(t.data.data() + 4 * i, static_cast<int32_t>(values[i]));
    else if (dtype == StDType::I64)
      store_le<int64_t>(t.data.data() + 8 * i, values[i]);
    else
      throw InputError("tensor", "from_int64 takes I32 or I64");
  }
  return t;
}

const Tensor* SafetensorsFile::find(std::string_view name) const {
  for (const auto& [n, t] : tensors)
    if (n == name) return &t;
  return nullptr;
}

std::vector<uint8_t> serialize(const SafetensorsFile& f) {
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!f.metadata.empty()) header["__metadata__"] = f.metadata;
  uint64_t offset = 0;
  for (const auto& [name, t] : f.tensors) {
    if (name == "__metadata__") throw InputError("tensor", "'__metadata__' is reserved");
    if (header.contains(name)) throw InputError("tensor", fmt::format("duplicate tensor name '{}'", name));
    const uint64_t n = t.data.size();
    if (static_cast<int64_t>(n) != t.elements() * st_dtype_bytes(t.dtype))
      throw InputError("tensor", fmt::format("'{}' holds {} bytes, its shape needs {}", name, n,
                                             t.elements() * st_dtype_bytes(t.dtype)));
    header[name] = {
        {"dtype", st_dtype_name(t.dtype)}, {"shape", t.shape}, {"data_offsets", {offset, offset + n}}};
    offset += n;
  }
  std::string text = header.dump();
  text.append((8 - (8 + text.size()) % 8) % 8, ' ');  // data starts 8-byte aligned, as the Python writer does
  std::vector<uint8_t> out(8 + text.size() + offset);
  store_le<uint64_t>(out.data(), text.size());
  std::memcpy(out.data() + 8, text.data(), text.size());
  uint8_t* p = out.data() + 8 + text.size();
  for (const auto& [name, t] : f.tensors) {
    if (!t.data.empty()) std::memcpy(p, t.data.data(), t.data.size());
    p += t.data.size();
  }
  return out;
}

SafetensorsFile parse(const uint8_t* bytes, size_t size, const std::string& source) {
  auto fail = [&](const std::string& msg) { throw InputError(source, msg); };
  if (size < 8) fail(fmt::format("truncated: {} bytes, shorter than the 8-byte header length", size));
  const uint64_t n = load_le<uint64_t>(bytes);
  if (n > kMaxHeaderBytes)
    fail(fmt::format("header length {} is absurd (the limit is {} bytes)", n, kMaxHeaderBytes));
  if (n > size - 8) fail(fmt::format("header length {} runs past the end of the file ({} bytes)", n, size));
  if (n < 2) fail(fmt::format("header length {} is too short for a JSON object", n));
  const std::string_view text(reinterpret_cast<const char*>(bytes) + 8, n);
  if (text[0] != '{') fail("header is not a JSON object");
  nlohmann::ordered_json header;
  try {
    header = nlohmann::ordered_json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    std::string why = e.what();  // nlohmann quotes what it last read, which can be kilobytes of header
    if (why.size() > 160) why = why.substr(0, 157) + "...";
    fail(fmt::format("header is not valid JSON ({})", why));
  }
  if (!header.is_object()) fail("header is not a JSON object");
  const uint64_t data_size = size - 8 - n;
  SafetensorsFile f;
  struct Range {
    uint64_t begin, end;
    std::string name;
  };
  std::vector<Range> ranges;
  std::vector<std::pair<std::string, Tensor>> tensors;
  for (const auto& [key, value] : header.items()) {
    if (key == "__metadata__") {
      if (!value.is_object()) fail("__metadata__ is not a JSON object");
      for (const auto& [mk, mv] : value.items()) {
        if (!mv.is_string()) fail(fmt::format("__metadata__ value of '{}' is not a string", mk));
        f.metadata[mk] = mv.get<std::string>();
      }
      continue;
    }
    const std::string where = fmt::format("tensor '{}'", key);
    if (!value.is_object()) fail(where + " is not a JSON object");
    if (!value.contains("dtype") || !value["dtype"].is_string()) fail(where + " has no dtype string");
    if (!value.contains("shape") || !value["shape"].is_array()) fail(where + " has no shape array");
    if (!value.contains("data_offsets") || !value["data_offsets"].is_array() ||
        value["data_offsets"].size() != 2)
      fail(where + " has no [begin, end] data_offsets");
    Tensor t;
    try {
      t.dtype = parse_st_dtype(value["dtype"].get<std::string>());
    } catch (const InputError&) {
      fail(fmt::format("{} has unknown dtype '{}'", where, value["dtype"].get<std::string>()));
    }
    for (const auto& d : value["shape"]) {
      if (!d.is_number_unsigned()) fail(where + " has a shape entry that is not a non-negative integer");
      const uint64_t dim = d.get<uint64_t>();
      if (dim > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
        fail(where + " has a dim past 2^63");
      t.shape.push_back(static_cast<int64_t>(dim));
    }
    for (const auto& o : value["data_offsets"])
      if (!o.is_number_unsigned()) fail(where + " has a data offset that is not a non-negative integer");
    const uint64_t begin = value["data_offsets"][0].get<uint64_t>();
    const uint64_t end = value["data_offsets"][1].get<uint64_t>();
    const int64_t elems = checked_elements(t.shape);
    if (elems < 0 || elems > std::numeric_limits<int64_t>::max() / 8)
      fail(where + " has a shape whose element count overflows 64 bits");
    if (begin > end)
      fail(fmt::format("{} has data_offsets [{}, {}] with begin after end", where, begin, end));
    if (end > data_size)
      fail(fmt::format("{} has data_offsets [{}, {}] past the end of the data ({} bytes)", where, begin, end,
                       data_size));
    const uint64_t want = static_cast<uint64_t>(elems) * st_dtype_bytes(t.dtype);
    if (end - begin != want)
      fail(fmt::format("{} spans {} bytes, its dtype and shape need {}", where, end - begin, want));
    ranges.push_back({begin, end, key});
    tensors.emplace_back(key, std::move(t));
  }
  std::vector<Range> sorted = ranges;
  std::sort(sorted.begin(), sorted.end(), [](const Range& a, const Range& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  uint64_t covered = 0;
  for (const auto& r : sorted) {
    if (r.begin < covered) fail(fmt::format("tensor '{}' overlaps another tensor's data", r.name));
    if (r.begin > covered) fail(fmt::format("the data has a hole before tensor '{}'", r.name));
    covered = r.end;
  }
  if (covered != data_size)
    fail(fmt::format("the tensors cover {} of the {} data bytes", covered, data_size));
  const uint8_t* data = bytes + 8 + n;
  for (size_t i = 0; i < tensors.size(); ++i) {
    Tensor& t = tensors[i].second;
    t.data.assign(data + ranges[i].begin, data + ranges[i].end);
    f.tensors.push_back(std::move(tensors[i]));
  }
  return f;
}

SafetensorsFile parse(const std::vector<uint8_t>& bytes, const std::string& source) {
  return parse(bytes.data(), bytes.size(), source);
}

}  // namespace flashsim::golden
