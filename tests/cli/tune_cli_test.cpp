// flashsim sim tune end to end: the checked-in launch table is what this build generates; bad input is one line
// with exit 2.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
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

// gpu/fa2/fa2_launch_table.h must equal `flashsim sim tune --header`'s output (cmake --build --target
// fa2_launch_table regenerates it after a model or profile change).
TEST(TuneCommand, LaunchTableIsGenerated) {
  const std::string out = ::testing::TempDir() + "fa2_launch_table.h";
  const auto r =
      flashsim::test::run_cli("sim tune --kernel fa2-fwd,fa2-bwd --hw H100-SXM5-80GB --header " + out);
  ASSERT_EQ(r.code, 0) << r.out;
  const std::string generated = read(out),
                    checked_in = read(std::string(FLASHSIM_SOURCE_DIR) + "/gpu/fa2/fa2_launch_table.h");
  EXPECT_FALSE(generated.empty());
  EXPECT_EQ(generated, checked_in)
      << "gpu/fa2/fa2_launch_table.h is stale: cmake --build <build> --target fa2_launch_table";
  std::remove(out.c_str());
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

TEST(TuneCommand, BadInputIsOneLineExit2) {
  for (const char* args :
       {"sim tune --kernel fa3-fwd", "sim tune --features causal,nope", "sim tune --head-dims 0",
        "sim tune --header /tmp/x.h", "sim tune --check /nonexistent/autotune.csv", "sim tune --hw nope",
        "sim tune --dtypes fp32"}) {
    const auto r = flashsim::test::run_cli(args);
    EXPECT_EQ(r.code, 2) << args << "\n" << r.out;
    EXPECT_EQ(flashsim::test::count_lines(r.out), 1) << args << "\n" << r.out;
  }
}
