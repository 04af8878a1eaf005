// The tile flags (flashsim/app/problem_flags.h): config() from every flag, over() replacing only the flags
// given, so that `flashsim-gpu --block-k 64` keeps the rest of a kernel version's launch tile.
#include <gtest/gtest.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <string>
#include <vector>

#include "flashsim/app/problem_flags.h"
#include "flashsim/error.h"

using namespace flashsim;

namespace {

// Parses args (without the program name) into a fresh TileFlags; the App must outlive over().
struct Parsed {
  CLI::App app;
  app::TileFlags tile;
  explicit Parsed(std::vector<std::string> args) {
    tile.add_to(&app, true);
    std::reverse(args.begin(), args.end());  // CLI11 parses a vector in reverse order
    app.parse(args);
  }
};

}  // namespace

TEST(TileFlags, OverReplacesOnlyTheGivenFields) {
  TileConfig launch;  // a launch table's entry: every field off TileConfig{}'s value
  launch.block_q = 64;
  launch.block_k = 32;
  launch.stages = 2;
  launch.bwd_block_k = 64;
  launch.dq_strategy = DqStrategy::Partials;

  Parsed none({});
  EXPECT_EQ(none.tile.over(launch).describe(), launch.describe());

  Parsed some({"--block-k", "64", "--warps", "8"});
  const TileConfig c = some.tile.over(launch);
  EXPECT_EQ(c.block_k, 64);
  EXPECT_EQ(c.warps, 8);
  EXPECT_EQ(c.block_q, 64);  // not given: the launch tile's
  EXPECT_EQ(c.stages, 2);
  EXPECT_EQ(c.bwd_block_k, 64);
  EXPECT_EQ(c.dq_strategy, DqStrategy::Partials);

  Parsed all({"--block-q", "128", "--block-k", "16", "--bwd-block-q", "32", "--bwd-block-k", "32", "--warps",
              "2", "--stages", "3", "--q-in-registers", "--kv-shared", "--dq-strategy", "atomic"});
  const TileConfig a = all.tile.over(launch);
  EXPECT_EQ(a.describe(), all.tile.config().describe());  // every field given: the flags alone decide
}

TEST(TileFlags, BadValuesAreInputErrorsEvenOverAValidBase) {
  Parsed bad({"--stages", "0"});
  EXPECT_THROW(bad.tile.over(TileConfig{}), InputError);
  Parsed bad_dq({"--dq-strategy", "sometimes"});
  EXPECT_THROW(bad_dq.tile.over(TileConfig{}), InputError);
}
