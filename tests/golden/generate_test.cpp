// Generation: deterministic bytes (threads, runs, shards merged), atomic output, exact outputs against an
// independent oracle, and the committed smoke suite still matching the reference.
#include "flashsim/golden/generate.h"

#include <gtest/gtest.h>

#include "flashsim/error.h"
#include "flashsim/golden/case_file.h"
#include "flashsim/golden/safetensors.h"
#include "golden_test_util.h"
#include "oracle.h"
#include "test_util.h"

namespace flashsim::golden {
namespace {

using test::folder_bytes;
using test::Scratch;
namespace fs = std::filesystem;

Manifest generate(const SuiteSpec& spec, const fs::path& out, int threads, Shard shard = {}) {
  GenerateOptions opt;
  opt.run.threads = threads;
  opt.shard = shard;
  return generate_suite(spec, out, opt);
}

TEST(Generate, ByteIdenticalAcrossThreadCountsAndRuns) {
  const SuiteSpec spec = parse_suite_spec(test::kSmallSpec, "small");
  Scratch s("gen-threads");
  generate(spec, s / "t1", 1);
  generate(spec, s / "t2", 2);
  generate(spec, s / "t2-again", 2);
  const auto a = folder_bytes(s / "t1");
  ASSERT_EQ(a.size(), spec.cases.size() + 1);  // + manifest.json
  EXPECT_EQ(a, folder_bytes(s / "t2"));
  EXPECT_EQ(a, folder_bytes(s / "t2-again"));
}

TEST(Generate, MergedShardsAreByteIdenticalToOneRun) {
  const SuiteSpec spec = parse_suite_spec(test::kSmallSpec, "small");
  Scratch s("gen-shards");
  generate(spec, s / "whole", 2);
  std::vector<fs::path> shards;
  for (int64_t i = 0; i < 3; ++i) {
    shards.push_back(s / ("shard" + std::to_string(i)));
    const Manifest m = generate(spec, shards.back(), 1, Shard{i, 3});
    EXPECT_TRUE(m.shard.has_value());
    for (const auto& e : m.cases) EXPECT_EQ(e.index % 3, i);
  }
  // Any order of the shard folders.
  merge_shards({shards[2], shards[0], shards[1]}, s / "merged", false);
  EXPECT_EQ(folder_bytes(s / "whole"), folder_bytes(s / "merged"));
  // Missing or duplicated shards are refused, and nothing is written.
  EXPECT_THROW(merge_shards({shards[0], shards[1]}, s / "m2", false), InputError);
  EXPECT_THROW(merge_shards({shards[0], shards[1], shards[1], shards[2]}, s / "m3", false), InputError);
  EXPECT_FALSE(fs::exists(s / "m2"));
  EXPECT_FALSE(fs::exists(s / "m3"));
  // A shard of another spec is refused.
  const SuiteSpec other =
      parse_suite_spec(R"({"name": "small", "version": 3, "cases": [{"name": "plain"}]})", "o");
  generate(other, s / "other", 1);
  EXPECT_THROW(merge_shards({shards[0], s / "other"}, s / "m4", false), InputError);
}

TEST(Generate, RefusesToOverwriteWithoutForceAndLeavesNoTemporaries) {
  const SuiteSpec spec = parse_suite_spec(R"({"name": "t", "cases": [{"name": "a", "seqlen": 8}]})", "t");
  Scratch s("gen-force");
  fs::create_directories(s / "out");
  write_text_file(s / "out" / "keep.txt", "mine");
  EXPECT_THROW(generate(spec, s / "out", 1), InputError);
  EXPECT_EQ(read_text_file(s / "out" / "keep.txt"), "mine");
  GenerateOptions opt;
  opt.force = true;
  generate_suite(spec, s / "out", opt);
  EXPECT_FALSE(fs::exists(s / "out" / "keep.txt"));
  EXPECT_TRUE(fs::exists(s / "out" / "a.safetensors"));
  for (const auto& e : fs::directory_iterator(s.path()))
    EXPECT_EQ(e.path().filename().string().find(".tmp"), std::string::npos) << e.path();
}

TEST(Generate, MemoryGuardRefusesBeforeWriting) {
  const SuiteSpec spec = parse_suite_spec(R"({"name": "t", "cases": [{"name": "a", "seqlen": 8192}]})", "t");
  Scratch s("gen-mem");
  GenerateOptions opt;
  opt.run.max_memory_bytes = 1 << 20;  // 1 MiB: far less than the case's tensors
  EXPECT_THROW(generate_suite(spec, s / "out", opt), MemoryLimitError);
  EXPECT_FALSE(fs::exists(s / "out"));
}

TEST(Generate, ExactOutputsMatchAnIndependentOracle) {
  const SuiteSpec spec = parse_suite_spec(test::kSmallSpec, "small");
  for (const auto& c : spec.cases) {
    const SafetensorsFile f = parse(serialize(make_case_file(c, {})), c.name);
    const LoadedCase lc = load_case(f, c.name);
    const flashsim::test::OracleOutput want = flashsim::test::oracle_forward(lc.c.problem, lc.inputs);
    EXPECT_LT(flashsim::test::rel_error(lc.outputs.at("o"), want.o), 1e-12) << c.name;
    EXPECT_LT(flashsim::test::rel_error(lc.outputs.at("lse"), want.lse), 1e-12) << c.name;
    // Inputs are stored in the case's dtype and read back unchanged.
    EXPECT_EQ(f.find("q")->dtype, st_dtype_of(c.problem.dtype));
    EXPECT_EQ(f.find("o")->dtype, StDType::F64);
    EXPECT_EQ(f.metadata.at(kFormatMetadataKey), kFormatName);
    // Every compute dtype has a tolerance row for every output, the bound above the emulated error.
    for (DType d : {DType::F32, DType::F16, DType::BF16})
      for (const auto& name : output_names(c.problem)) {
        const OutputTolerance& t = lc.tolerances.at(std::string(dtype_name(d))).at(name);
        EXPECT_GT(t.bound_max_abs(d), t.emulated_max_abs) << c.name << " " << name;
      }
  }
}

TEST(Generate, CommittedSmokeSuiteMatchesTheCurrentReference) {
  const fs::path dir = fs::path(FLASHSIM_SOURCE_DIR) / "golden" / "data" / "smoke";
  const auto checked = check_suite(dir, {});
  ASSERT_EQ(checked.size(), load_suite_spec("smoke").cases.size());
  for (const auto& c : checked) EXPECT_TRUE(c.ok()) << c.name << ": " << c.problem << " " << c.worst_rel;
  // The committed inputs are the ones the generator draws today.
  const Manifest m = read_manifest(dir);
  const SuiteSpec spec = load_suite_spec("smoke");
  EXPECT_EQ(m.spec_sha256, spec.spec_sha256)
      << "golden/suites/smoke.json changed: regenerate golden/data/smoke";
  for (size_t i = 0; i < spec.cases.size(); ++i) {
    const LoadedCase lc =
        load_case(parse(read_file(dir / m.cases[i].file), m.cases[i].file), m.cases[i].file);
    const AttentionInputs now =
        make_random_inputs(spec.cases[i].problem, spec.cases[i].seed, spec.cases[i].magnitude);
    EXPECT_EQ(lc.inputs.q, now.q) << m.cases[i].name;
    EXPECT_EQ(lc.inputs.k, now.k) << m.cases[i].name;
    EXPECT_EQ(lc.inputs.v, now.v) << m.cases[i].name;
    EXPECT_EQ(lc.inputs.dout, now.dout) << m.cases[i].name;
    EXPECT_EQ(lc.inputs.bias, now.bias) << m.cases[i].name;
    EXPECT_EQ(lc.inputs.mask, now.mask) << m.cases[i].name;
  }
}

TEST(Generate, CheckFindsATamperedFile) {
  const SuiteSpec spec = parse_suite_spec(R"({"name": "t", "cases": [{"name": "a", "seqlen": 8}]})", "t");
  Scratch s("gen-tamper");
  generate(spec, s / "out", 1);
  auto bytes = read_file(s / "out" / "a.safetensors");
  bytes[bytes.size() - 1] ^= 1;  // flip one bit of the last output value
  write_file(s / "out" / "a.safetensors", bytes);
  const auto checked = check_suite(s / "out", {});
  ASSERT_EQ(checked.size(), 1u);
  EXPECT_FALSE(checked[0].sha_ok);
  EXPECT_FALSE(checked[0].ok());
}

}  // namespace
}  // namespace flashsim::golden
