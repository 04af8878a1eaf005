// flashsim sim tune end to end: the checked-in launch table is what this build generates; bad input is one line
// with exit 2.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "run_cli.h"

namespace {

std::string read(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

// The launch tables (fa2-v1's and fa3-v1's, families/fa*/include/flashsim/families/fa*/launch_table.h) must equal
// `flashsim sim tune --header`'s output (cmake --build --target fa2_launch_table / fa3_launch_table regenerates
// them after a model or profile change). fa3's keeps the test name it was added under.
namespace {
void expect_launch_table_generated(const std::string& family, const std::string& kernels) {
  const std::string out = ::testing::TempDir() + family + "_launch_table.h";
  const auto r =
      flashsim::test::run_cli("sim tune --kernel " + kernels + " --hw H100-SXM5-80GB --header " + out);
  ASSERT_EQ(r.code, 0) << r.out;
  const std::string path = "families/" + family + "/include/flashsim/families/" + family + "/launch_table.h";
  const std::string generated = read(out), checked_in = read(std::string(FLASHSIM_SOURCE_DIR) + "/" + path);
  EXPECT_FALSE(generated.empty());
  EXPECT_EQ(generated, checked_in) << path << " is stale: cmake --build <build> --target " << family
                                   << "_launch_table";
  std::remove(out.c_str());
}

}  // namespace

TEST(TuneCommand, LaunchTableIsGenerated) {
  expect_launch_table_generated("fa2", "fa2-fwd,fa2-bwd");
}

TEST(TuneCommand, Fa3LaunchTableIsGenerated) {
  expect_launch_table_generated("fa3", "fa3-fwd");
}

TEST(TuneCommand, Fa3FwdRanksItsInstances) {
  auto r = flashsim::test::run_cli(
      "sim tune --kernel fa3-fwd --head-dims 128 --dtypes bf16 --seqlens 4096 --top 0");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("fa3-fwd on H100-SXM5-80GB (configs: fa3-v1's instances)"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("d128 bf16 plain n4096"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("d128 bf16 causal n4096"), std::string::npos) << r.out;  // its default features
  EXPECT_NE(r.out.find("Br128 Bc64 w12 st2"), std::string::npos) << r.out;
  r = flashsim::test::run_cli("sim tune --kernel fa3-fwd --features bias");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("fa3-v1 runs no bias"), std::string::npos) << r.out;
  r = flashsim::test::run_cli("sim tune --kernel fa3-fwd,fa2-bwd --header /tmp/never.h");
  EXPECT_EQ(r.code, 2) << r.out;
}

TEST(TuneCommand, TableAndJson) {
  auto r = flashsim::test::run_cli(
      "sim tune --head-dims 64 --dtypes bf16 --features causal --seqlens 2048 --top 2");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("d64 bf16 plain n2048"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("d64 bf16 causal n2048"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("runner-up"), std::string::npos) << r.out;
  r = flashsim::test::run_cli(
      "sim tune --kernel fa2-bwd --head-dims 128 --dtypes fp16 --features bias --seqlens 1024 "
      "--json");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("\"kernel\": \"fa2-bwd\""), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\"features\": \"bias\""), std::string::npos) << r.out;
}

// The table's config is the model's best or, where that is not clearly faster, the hand-kept one; the text
// output names the table's config and says when it kept the hand one.
TEST(TuneCommand, TableNamesTheLaunchTablesConfig) {
  const auto r = flashsim::test::run_cli(
      "sim tune --kernel fa2-bwd --head-dims 64,128 --dtypes bf16 --features causal --seqlens 1024,4096 "
      "--json");
  ASSERT_EQ(r.code, 0) << r.out;
  const auto j = nlohmann::json::parse(r.out);
  int kept = 0;
  for (const auto& e : j["entries"]) {
    const std::string best = e["best"], table = e["table"], reason = e["reason"];
    if (best != table) {
      ++kept;
      EXPECT_NE(reason.find("the hand-kept config, kept: " + best), std::string::npos) << reason;
    } else {
      EXPECT_EQ(reason.find("kept"), std::string::npos) << reason;
    }
  }
  const auto text = flashsim::test::run_cli(
      "sim tune --kernel fa2-bwd --head-dims 64,128 --dtypes bf16 --features causal --seqlens 1024,4096");
  ASSERT_EQ(text.code, 0);
  size_t tables = 0;
  for (size_t at = text.out.find("  table "); at != std::string::npos; at = text.out.find("  table ", at + 1))
    ++tables;
  EXPECT_EQ(tables, static_cast<size_t>(kept)) << text.out;
}

TEST(TuneCommand, BadInputIsOneLineExit2) {
  for (const char* args :
       {"sim tune --kernel fa9-fwd", "sim tune --features causal,nope", "sim tune --head-dims 0",
        "sim tune --header /tmp/x.h", "sim tune --check /nonexistent/autotune.csv", "sim tune --hw nope",
        "sim tune --dtypes fp32", "sim tune --resources /nonexistent/fa2.csv",
        "sim tune --check /nonexistent/autotune.csv --resources /nonexistent/fa2.csv"}) {
    const auto r = flashsim::test::run_cli(args);
    EXPECT_EQ(r.code, 2) << args << "\n" << r.out;
    EXPECT_EQ(flashsim::test::count_lines(r.out), 1) << args << "\n" << r.out;
  }
}

// Configs are data: a sweep or tune row's `tile` holds each knob and the flags that give `sim predict` that tile,
// and predicting with those flags gives the row's time (the row's own pass).
TEST(TuneCommand, RowsFeedSimPredict) {
  const std::string problem = "--batch 2 --heads 8 --seqlen 1024 --head-dim 64 --hw H100-SXM5-80GB";
  for (const std::string pass : {"fwd", "bwd"}) {
    const auto sweep =
        flashsim::test::run_cli("sim sweep " + problem + " --pass " + pass + " --top 3 --json");
    ASSERT_EQ(sweep.code, 0) << sweep.out;
    const auto swept = nlohmann::json::parse(sweep.out);
    const auto& rows = swept["ranked"];
    ASSERT_EQ(rows.size(), 3u);
    for (const auto& row : rows) {
      const auto& tile = row["tile"];
      EXPECT_EQ(tile["warps"].get<int>() > 0, true);
      EXPECT_TRUE(pass == "fwd" ? tile.contains("block_q") && tile.contains("kv_shared")
                                : tile.contains("bwd_block_q") && tile.contains("dq_strategy"))
          << tile.dump();
      const auto predicted = flashsim::test::run_cli("sim predict " + problem + " --pass " + pass +
                                                     " --json " + tile["flags"].get<std::string>());
      ASSERT_EQ(predicted.code, 0) << predicted.out;
      const auto prediction = nlohmann::json::parse(predicted.out);
      double time_s = 0;
      for (const auto& k : prediction["kernels"]) time_s += k["time_s"].get<double>();
      EXPECT_NEAR(time_s, row["time_s"].get<double>(), 1e-9 * time_s) << tile["flags"];
    }
  }
  const auto csv = flashsim::test::run_cli("sim sweep " + problem + " --top 1 --csv");
  ASSERT_EQ(csv.code, 0) << csv.out;
  EXPECT_EQ(
      csv.out.substr(0, csv.out.find('\n')),
      "rank,config,time_s,load_bytes,dram_bytes,smem_bytes,ctas_per_sm,bound,block_q,block_k,warps,stages,"
      "q_in_registers,kv_shared,num_splits,flags");
  const auto tune = flashsim::test::run_cli(
      "sim tune --head-dims 64 --dtypes bf16 --features causal --seqlens 1024 --top 2 --json");
  ASSERT_EQ(tune.code, 0) << tune.out;
  const auto tuned = nlohmann::json::parse(tune.out);
  const auto& entry = tuned["entries"][0];
  EXPECT_EQ(entry["ranked"][0]["tile"]["flags"].get<std::string>().rfind("--block-q ", 0), 0u)
      << entry.dump();
}

// A one-pass prediction's config line shows that pass's knobs only; both passes show every knob.
TEST(TuneCommand, PredictShowsThePassesTile) {
  const std::string problem = "sim predict --batch 1 --heads 4 --seqlen 512 --head-dim 64 --pass ";
  const auto config_line = [](const std::string& out) {
    const auto a = out.find('\n') + 1;
    return out.substr(a, out.find('\n', a) - a);
  };
  const auto fwd = flashsim::test::run_cli(problem + "fwd --block-q 64 --bwd-block-q 32");
  ASSERT_EQ(fwd.code, 0) << fwd.out;
  EXPECT_EQ(config_line(fwd.out), "Br64 Bc64 w4 st1 fa2") << fwd.out;
  const auto bwd = flashsim::test::run_cli(problem + "bwd --block-q 64 --bwd-block-q 32");
  ASSERT_EQ(bwd.code, 0) << bwd.out;
  EXPECT_EQ(config_line(bwd.out), "fa2 bwd Br32 Bc128 w4 dq:atomic") << bwd.out;
  const auto both = flashsim::test::run_cli(problem + "both --block-q 64 --bwd-block-q 32");
  ASSERT_EQ(both.code, 0) << both.out;
  EXPECT_EQ(config_line(both.out), "Br64 Bc64 w4 st1 fa2 bwd Br32 Bc128 dq:atomic") << both.out;
}

// sim sweep --rejected: the configs the ranking drops, each with its reason; ranked + rejected = tried, and
// sim predict refuses a rejected row's flags with the same reason.
TEST(TuneCommand, SweepListsTheRejectedWithTheirReason) {
  const std::string problem = "--batch 1 --heads 8 --seqlen 2048 --head-dim 128 --hw H100-SXM5-80GB";
  const auto r = flashsim::test::run_cli("sim sweep " + problem + " --rejected --json --top 0");
  ASSERT_EQ(r.code, 0) << r.out;
  const auto j = nlohmann::json::parse(r.out);
  const auto& rejected = j["rejected"];
  ASSERT_GT(rejected.size(), 0u);
  EXPECT_EQ(rejected.size() + j["ranked"].size(), j["configs"].get<size_t>());
  for (const auto& row :
       rejected) {  // the kernel, then the resource (shared memory, registers) and by how much
    const std::string reason = row["reason"].get<std::string>();
    EXPECT_EQ(reason.rfind("fwd_fa2: ", 0), 0u) << row.dump();
    EXPECT_NE(reason.find_first_of("0123456789"), std::string::npos) << row.dump();
  }
  const auto& first = rejected[0];
  const auto predicted = flashsim::test::run_cli("sim predict " + problem + " --pass fwd " +
                                                 first["tile"]["flags"].get<std::string>());
  EXPECT_EQ(predicted.code, 2) << predicted.out;
  const std::string reason = first["reason"].get<std::string>();
  EXPECT_NE(predicted.out.find(reason.substr(reason.find(": ") + 2)), std::string::npos)
      << predicted.out << "\nvs " << reason;
  const auto text = flashsim::test::run_cli("sim sweep " + problem + " --rejected");
  EXPECT_NE(
      text.out.find(std::to_string(rejected.size()) + " of " + j["configs"].dump() + " configs do not fit"),
      std::string::npos)
      << text.out;
}
