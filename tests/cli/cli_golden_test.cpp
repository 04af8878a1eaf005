// The golden commands end to end: exit codes 0 / 1 / 2, one-line errors naming the file, nothing written on
// bad input, shards merged through the command line.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "flashsim/golden/files.h"
#include "golden_test_util.h"
#include "run_cli.h"

namespace flashsim::golden {
namespace {

using test::folder_bytes;
using test::Scratch;
namespace fs = std::filesystem;

using Result = flashsim::test::CliResult;

Result run(const std::string& args) {
  return flashsim::test::run_cli(args);
}

int lines(const std::string& s) {
  return flashsim::test::count_lines(s);
}

TEST(GoldenCli, GenerateShardMergeListCheckVerify) {
  Scratch s("cli");
  const std::string spec = (s / "spec.json").string();
  write_text_file(spec, test::kSmallSpec);
  const std::string d = s.path().string();
  EXPECT_EQ(run("golden generate --suite " + spec + " --out " + d + "/whole --threads 2").code, 0);
  for (int i = 0; i < 2; ++i)
    EXPECT_EQ(run(fmt::format("golden generate --suite {} --out {}/s{} --shard {}/2", spec, d, i, i)).code,
              0);
  const Result merged = run("golden merge " + d + "/merged " + d + "/s1 " + d + "/s0");
  EXPECT_EQ(merged.code, 0) << merged.out;
  EXPECT_EQ(folder_bytes(s / "whole"), folder_bytes(s / "merged"));

  const Result list = run("golden list " + d + "/merged");
  EXPECT_EQ(list.code, 0);
  EXPECT_NE(list.out.find("dma-softcap"), std::string::npos);
  EXPECT_EQ(run("golden check " + d + "/merged").code, 0);

  EXPECT_EQ(run("golden candidate --golden " + d + "/whole --out " + d + "/cand --dtype fp16").code, 0);
  const Result ok = run("golden verify --golden " + d + "/whole --candidate " + d + "/cand");
  EXPECT_EQ(ok.code, 0) << ok.out;
  EXPECT_NE(ok.out.find("ALL PASS"), std::string::npos);
  const Result js = run("golden verify --json --golden " + d + "/whole --candidate " + d + "/cand");
  EXPECT_EQ(js.code, 0);
  const auto j = nlohmann::json::parse(js.out);
  EXPECT_EQ(j["ok"], true);
  EXPECT_EQ(j["cases"].size(), 5u);
  EXPECT_TRUE(j["cases"][0]["outputs"][0].contains("worst_index"));

  // Claimed as fp32 computation, fp16 outputs fail: exit 1.
  const Result strict = run("golden verify --as fp32 --golden " + d + "/whole --candidate " + d + "/cand");
  EXPECT_EQ(strict.code, 1) << strict.out;
  EXPECT_NE(strict.out.find("FAIL"), std::string::npos);
}

TEST(GoldenCli, BadInputIsOneLineExitTwoAndWritesNothing) {
  Scratch s("cli-bad");
  const std::string d = s.path().string();
  ASSERT_EQ(run("golden generate --suite smoke --out " + d + "/g").code, 0);
  ASSERT_EQ(run("golden candidate --golden " + d + "/g --out " + d + "/c").code, 0);
  // A truncated golden file, a header length past the end, a sha256 mismatch.
  fs::create_directories(s / "bad");
  for (const auto& e : fs::directory_iterator(s / "g")) fs::copy(e.path(), s / "bad" / e.path().filename());
  const fs::path victim = s / "bad" / "fp32-basic.safetensors";
  auto bytes = read_file(victim);
  bytes.resize(bytes.size() / 2);
  write_file(victim, bytes);
  const std::vector<std::string> bad = {
      "golden generate --suite nosuch --out " + d + "/x",
      "golden generate --suite smoke --out " + d + "/g",  // exists, no --force
      "golden generate --suite smoke --out " + d + "/y --shard 2/2",
      "golden verify --golden " + d + "/bad --candidate " + d + "/c",
      "golden verify --golden " + d + "/nosuch --candidate " + d + "/c",
      "golden verify --golden " + d + "/g --candidate " + d + "/nosuch",
      "golden verify --golden " + d + "/g --candidate " + d + "/c --as fp8",
      "golden list " + d + "/nosuch",
      "golden merge " + d + "/m " + d + "/nosuch",
      "golden generaet --suite smoke --out " + d + "/z",
  };
  for (const auto& args : bad) {
    const Result r = run(args);
    EXPECT_EQ(r.code, 2) << args << "\n" << r.out;
    EXPECT_EQ(lines(r.out), 1) << args << "\n" << r.out;
    EXPECT_NE(r.out.find("error"), std::string::npos) << r.out;
  }
  EXPECT_NE(
      run("golden verify --golden " + d + "/bad --candidate " + d + "/c").out.find("fp32-basic.safetensors"),
      std::string::npos);
  for (const char* never : {"x", "y", "z", "m"}) EXPECT_FALSE(fs::exists(s / never)) << never;
  // A candidate with an output missing: exit 1 (a failure, not bad input).
  fs::remove(s / "c" / "bf16-gqa.safetensors");
  const Result missing = run("golden verify --golden " + d + "/g --candidate " + d + "/c --quiet");
  EXPECT_EQ(missing.code, 1) << missing.out;
  EXPECT_NE(missing.out.find("candidate file missing: bf16-gqa.safetensors"), std::string::npos)
      << missing.out;
  // A file named like no case (a misnamed output of the harness) is named, the verdict unchanged.
  fs::copy_file(s / "c" / "fp32-basic.safetensors", s / "c" / "bf16-gqa-typo.safetensors");
  const Result stray = run("golden verify --golden " + d + "/g --candidate " + d + "/c --quiet");
  EXPECT_EQ(stray.code, 1) << stray.out;
  EXPECT_NE(
      stray.out.find("1 candidate files match no case of the suite (misnamed?): bf16-gqa-typo.safetensors"),
      std::string::npos)
      << stray.out;
  const Result stray_json = run("golden verify --golden " + d + "/g --candidate " + d + "/c --json");
  EXPECT_NE(stray_json.out.find("\"stray_files\": [\n    \"bf16-gqa-typo.safetensors\""), std::string::npos)
      << stray_json.out;
}

}  // namespace
}  // namespace flashsim::golden
