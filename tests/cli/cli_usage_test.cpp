// The command line as a new user meets it: a misspelled flag or subcommand is named with the nearest valid
// one (exit 2, one line), and help shows plain types and defaults, never CLI11's validator text.
#include <gtest/gtest.h>

#include <string>

#include "run_cli.h"

namespace {

using flashsim::test::CliResult;
using flashsim::test::count_lines;
using flashsim::test::run_cli;

TEST(CliUsage, MisspelledFlagSuggestsTheNearest) {
  const CliResult r = run_cli("sim predict --seqeln 10");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_EQ(r.out,
            "flashsim: error: unknown flag --seqeln for 'flashsim sim predict'; did you mean --seqlen?\n");
  const CliResult swapped = run_cli("sim predict --casual");
  EXPECT_EQ(swapped.code, 2) << swapped.out;
  EXPECT_NE(swapped.out.find("did you mean --causal?"), std::string::npos) << swapped.out;
}

TEST(CliUsage, MisspelledCommandSuggestsTheNearest) {
  const CliResult r = run_cli("simm");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_EQ(r.out, "flashsim: error: unknown command 'simm'; did you mean 'sim'?\n");
  const CliResult sub = run_cli("golden verfy");
  EXPECT_EQ(sub.code, 2) << sub.out;
  EXPECT_EQ(sub.out,
            "flashsim: error: unknown command 'verfy' for 'flashsim golden'; did you mean 'verify'?\n");
}

TEST(CliUsage, NonsenseFlagIsNamedWithoutSuggestion) {
  for (const char* args : {"sim predict --xyzzy", "ref --qqqqqqqq 3", "--bogus"}) {
    const CliResult r = run_cli(args);
    EXPECT_EQ(r.code, 2) << args << "\n" << r.out;
    EXPECT_EQ(count_lines(r.out), 1) << args << "\n" << r.out;
    EXPECT_EQ(r.out.rfind("flashsim: error: unknown flag --", 0), 0u) << args << "\n" << r.out;
    EXPECT_EQ(r.out.find("did you mean"), std::string::npos) << args << "\n" << r.out;
  }
  const CliResult r = run_cli("sim predict --xyzzy");
  EXPECT_NE(r.out.find("--xyzzy"), std::string::npos) << r.out;
  const CliResult cmd = run_cli("xyzzy");
  EXPECT_EQ(cmd.code, 2) << cmd.out;
  EXPECT_NE(cmd.out.find("unknown command 'xyzzy'"), std::string::npos) << cmd.out;
  EXPECT_EQ(cmd.out.find("did you mean"), std::string::npos) << cmd.out;
}

TEST(CliUsage, OtherParseErrorsStayAsTheyWere) {
  const CliResult r = run_cli("sim predict --seqlen abc");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_EQ(r.out, "flashsim: error: Could not convert: --seqlen = abc (see --help)\n");
}

TEST(CliUsage, HelpShowsPlainTypesAndDefaults) {
  const CliResult r = run_cli("sim predict --help");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(r.out.find("in ["), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find(":{"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("--pass fwd|bwd|both"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("--max-memory FLOAT "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("(default: H100-SXM5-80GB)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("(default: 512)"), std::string::npos) << r.out;
}

TEST(CliUsage, GroupHelpListsEverySubcommand) {
  const CliResult golden = run_cli("golden --help");
  EXPECT_EQ(golden.code, 0) << golden.out;
  for (const char* sub : {"generate", "merge", "list", "check", "verify", "candidate"})
    EXPECT_NE(golden.out.find(std::string("  ") + sub + " "), std::string::npos) << sub << "\n" << golden.out;
  const CliResult top = run_cli("--help");
  for (const char* sub : {"demo", "ref", "golden", "hw", "sim", "traffic"})
    EXPECT_NE(top.out.find(std::string("  ") + sub + " "), std::string::npos) << sub << "\n" << top.out;
  const CliResult sim = run_cli("sim --help");
  for (const char* sub : {"predict", "sweep"})
    EXPECT_NE(sim.out.find(std::string("  ") + sub + " "), std::string::npos) << sub << "\n" << sim.out;
}

}  // namespace
