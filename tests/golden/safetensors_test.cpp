// The safetensors reader and writer: round trips for every dtype, the format's layout rules, and a clear
// InputError (never a crash or an out-of-bounds read) for every kind of malformed file.
#include "flashsim/golden/safetensors.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "flashsim/error.h"

namespace flashsim::golden {
namespace {

std::vector<uint8_t> file_from(const std::string& header, const std::vector<uint8_t>& data) {
  std::vector<uint8_t> out(8 + header.size() + data.size());
  const uint64_t n = header.size();
  std::memcpy(out.data(), &n, 8);
  std::memcpy(out.data() + 8, header.data(), header.size());
  if (!data.empty()) std::memcpy(out.data() + 8 + header.size(), data.data(), data.size());
  return out;
}

std::string error_of(const std::vector<uint8_t>& bytes) {
  try {
    parse(bytes, "f.safetensors");
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(Safetensors, RoundTripsEveryDtype) {
  SafetensorsFile f;
  const std::vector<double> vals = {0.0, -1.5, 3.25, 1e-3, 65504.0, -0.0};
  for (StDType t : {StDType::F64, StDType::F32, StDType::F16, StDType::BF16})
    f.add(std::string(st_dtype_name(t)), Tensor::from_doubles(t, {2, 3}, vals));
  f.add("BOOL", Tensor::from_doubles(StDType::BOOL, {3}, {0, 1, 1}));
  f.add("U8", Tensor::from_doubles(StDType::U8, {2}, {7, 255}));
  f.add("I32", Tensor::from_int64(StDType::I32, {3}, {0, -5, 2147483647}));
  f.add("I64", Tensor::from_int64(StDType::I64, {1}, {-(int64_t{1} << 40)}));
  f.add("empty", Tensor::from_doubles(StDType::F32, {0, 4}, {}));
  f.metadata["k"] = "v";
  const auto bytes = serialize(f);
  uint64_t n;
  std::memcpy(&n, bytes.data(), 8);
  EXPECT_EQ((8 + n) % 8, 0u) << "data must start 8-byte aligned";
  const SafetensorsFile g = parse(bytes, "x");
  ASSERT_EQ(g.tensors.size(), f.tensors.size());
  EXPECT_EQ(g.metadata.at("k"), "v");
  for (size_t i = 0; i < f.tensors.size(); ++i) {
    EXPECT_EQ(g.tensors[i].first, f.tensors[i].first);
    EXPECT_EQ(g.tensors[i].second.shape, f.tensors[i].second.shape);
    EXPECT_EQ(g.tensors[i].second.data, f.tensors[i].second.data);
  }
  // Values that every dtype represents come back exactly; fp16 rounds 1e-3 to its nearest value.
  EXPECT_EQ(g.find("BF16")->to_doubles()[2], 3.25);
  EXPECT_EQ(g.find("F16")->to_doubles()[4], 65504.0);
  EXPECT_NEAR(g.find("F16")->to_doubles()[3], 1e-3, 1e-3 * 0x1p-11);
  EXPECT_EQ(g.find("I32")->to_doubles()[2], 2147483647.0);
  EXPECT_EQ(g.find("I64")->to_doubles()[0], -std::ldexp(1.0, 40));
  EXPECT_EQ(serialize(g), bytes) << "parse then serialize reproduces the bytes";
}

TEST(Safetensors, ReadsAHandWrittenFile) {
  // Written by hand from the format description, as another library would write it: F16 [2] = {1, -2}.
  const auto bytes =
      file_from(R"({"x":{"dtype":"F16","shape":[2],"data_offsets":[0,4]},"__metadata__":{"a":"b"}})",
                {0x00, 0x3c, 0x00, 0xc0});
  const SafetensorsFile f = parse(bytes, "x");
  EXPECT_EQ(f.find("x")->to_doubles(), (std::vector<double>{1.0, -2.0}));
  EXPECT_EQ(f.metadata.at("a"), "b");
}

TEST(Safetensors, RejectsMalformedFilesWithAReason) {
  const std::string ok = R"({"x":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";
  const std::vector<uint8_t> data(8, 0);
  ASSERT_EQ(error_of(file_from(ok, data)), "");
  struct Bad {
    std::vector<uint8_t> bytes;
    const char* expect;
  };
  std::vector<uint8_t> huge(16, 0);
  const uint64_t near_max = std::numeric_limits<uint64_t>::max() - 3;
  std::memcpy(huge.data(), &near_max, 8);
  std::vector<uint8_t> past(16, 0);
  const uint64_t ten = 10;
  std::memcpy(past.data(), &ten, 8);
  auto truncated = file_from(ok, data);
  truncated.resize(truncated.size() - 3);
  const std::vector<Bad> cases = {
      {{1, 2, 3}, "truncated"},
      {huge, "absurd"},
      {past, "past the end"},
      {file_from("[1,2]", {}), "not a JSON object"},
      {file_from("{not json", {}), "not valid JSON"},
      {file_from(R"({"x":{"dtype":"F17","shape":[2],"data_offsets":[0,8]}})", data), "unknown dtype"},
      {file_from(R"({"x":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", data), "need"},
      {file_from(R"({"x":{"dtype":"F32","shape":[2],"data_offsets":[0,16]}})", data), "past the end"},
      {file_from(R"({"x":{"dtype":"F32","shape":[2],"data_offsets":[8,0]}})", data), "begin after end"},
      {file_from(
           R"({"x":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"y":{"dtype":"F32","shape":[1],"data_offsets":[2,6]}})",
           data),
       "overlaps"},
      {file_from(R"({"x":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", data), "hole"},
      {file_from(R"({"x":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", data), "cover"},
      {file_from(R"({"x":{"dtype":"F32","shape":[4294967296,4294967296,16],"data_offsets":[0,8]}})", data),
       "overflows"},
      {file_from(R"({"x":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})", data), "non-negative"},
      {file_from(R"({"x":{"dtype":"F32","shape":[2]}})", data), "data_offsets"},
      {file_from(R"({"x":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"__metadata__":{"a":1}})", data),
       "not a string"},
      {file_from(R"({"x":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"__metadata__":[]})", data),
       "__metadata__"},
      {truncated, "past the end"},
  };
  for (const auto& c : cases) {
    const std::string err = error_of(c.bytes);
    EXPECT_NE(err.find(c.expect), std::string::npos) << "got '" << err << "', expected '" << c.expect << "'";
    EXPECT_EQ(err.rfind("f.safetensors", 0), 0u) << "the error names the file: " << err;
    EXPECT_EQ(err.find('\n'), std::string::npos) << "one line: " << err;
  }
}

TEST(Safetensors, WriterRejectsInconsistentTensors) {
  SafetensorsFile f;
  f.add("x", Tensor::from_doubles(StDType::F32, {2}, {1, 2}));
  f.add("x", Tensor::from_doubles(StDType::F32, {2}, {1, 2}));
  EXPECT_THROW(serialize(f), InputError);
  EXPECT_THROW(Tensor::from_doubles(StDType::F32, {3}, {1, 2}), InputError);
}

}  // namespace
}  // namespace flashsim::golden
