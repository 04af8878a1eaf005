// The command line: a good run exits 0 and prints the table; bad input prints one line and exits 2.
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <string>

#include "run_cli.h"

namespace {

using Result = flashsim::test::CliResult;

Result run(const std::string& args) {
  return flashsim::test::run_cli(args);
}

int lines(const std::string& s) {
  return flashsim::test::count_lines(s);
}

TEST(Cli, RefPrintsEveryAlgorithm) {
  const Result r =
      run("ref --seqlen 70 --heads 2 --head-dim 16 --causal --bias 1hqk --softcap 2 --block-q 16");
  EXPECT_EQ(r.code, 0) << r.out;
  for (const char* name : {"naive", "three-pass", "two-pass", "fa1", "fa2"})
    EXPECT_NE(r.out.find(name), std::string::npos) << name;
}

TEST(Cli, BadInputGivesOneLineAndExitCode2) {
  for (const char* args : {"ref --heads 3 --heads-kv 2", "ref --head-dim 0", "ref --dtype fp8",
                           "ref --window 1", "ref --bias bqhk", "ref --block-q 0", "ref --varlen 3,x",
                           "ref --seqlen-q", "ref --no-such-flag", "nosuchcommand", "ref --precision fp16"}) {
    const Result r = run(args);
    EXPECT_EQ(r.code, 2) << args << "\n" << r.out;
    EXPECT_EQ(lines(r.out), 1) << args << "\n" << r.out;
  }
}

}  // namespace
