// sim tune --kernel splitkv: the split-count table over a (batch, cache length) grid.
#include "flashsim/sim/tune_splits.h"

#include <gtest/gtest.h>

#include "flashsim/error.h"
#include "flashsim/sim/model.h"
#include "flashsim/sim/tune.h"

using namespace flashsim;

TEST(TuneSplits, EveryEntryRanksItsSweepAndNamesThePickedCount) {
  sim::TuneSplitsRequest r;
  r.batches = {1, 64};
  r.cache_lens = {1024, 16384};
  r.page_sizes = {16};
  const auto hw = sim::load_profile("H100-SXM5-80GB");
  size_t calls = 0;
  const auto res = sim::tune_splits(r, hw, [&](size_t done, size_t total) {
    ++calls;
    EXPECT_EQ(done, calls);
    EXPECT_EQ(total, 4u);
  });
  ASSERT_EQ(res.entries.size(), 4u);
  for (const auto& e : res.entries) {
    ASSERT_FALSE(e.sweep.rows.empty());
    EXPECT_EQ(e.problem.page_size, 16);
    EXPECT_EQ(e.sweep.tile.block_k, sim::splitkv_tile(e.problem).block_k);  // FA2's tile without --split-tile
    EXPECT_EQ(e.sweep.heuristic, sim::splitkv_heuristic(e.problem, e.sweep.tile, hw));
    // the pick (sim::pick_splits): within the model's resolution of every row, and the fewest splits that is
    bool found = false;
    for (const auto& row : e.sweep.rows) {
      if (!row.fits) continue;
      EXPECT_LE(e.best_s, (1 + sim::kTuneResolution) * row.time_s)
          << e.problem.describe() << " splits " << row.num_splits;
      if (e.best_s > row.time_s) {
        EXPECT_GT(row.num_splits, e.best) << e.problem.describe();  // a faster row costs more splits
      }
      if (row.num_splits == e.best) found = true;
      if (row.num_splits == 1) {
        EXPECT_EQ(e.one_split_s, row.time_s);
      }
    }
    EXPECT_TRUE(found);
    EXPECT_GE((1 + sim::kTuneResolution) * e.heuristic_s, e.best_s);
    EXPECT_GT(e.best_s, e.sweep.floor_s * 0.5);  // the model cannot read K and V much faster than DRAM allows
  }
  // One sequence of 16K keys fills few SMs with one split: the model splits it; 64 sequences of 1K fill the
  // GPU already.
  const auto at = [&](int64_t b, int64_t n) -> const sim::TuneSplitsEntry& {
    for (const auto& e : res.entries)
      if (e.problem.batch == b && e.problem.seqlen_k == n) return e;
    throw std::logic_error("no entry");
  };
  EXPECT_GT(at(1, 16384).best, 1);
  EXPECT_LT(at(64, 1024).best, at(1, 16384).best);
  const auto j = sim::to_json(res);
  EXPECT_EQ(j["entries"].size(), 4u);
  EXPECT_EQ(j["entries"][0]["best_splits"], res.entries[0].best);
}

TEST(TuneSplits, AGivenTileIsSweptAndBadGridsAreInputErrors) {
  sim::TuneSplitsRequest r;
  r.batches = {8};
  r.cache_lens = {8192};
  r.page_sizes = {256};
  TileConfig t;
  t.block_q = 16;
  t.block_k = 64;
  t.warps = 4;
  t.stages = 3;
  r.tile = t;
  const auto hw = sim::load_profile("H100-SXM5-80GB");
  const auto res = sim::tune_splits(r, hw);
  ASSERT_EQ(res.entries.size(), 1u);
  EXPECT_EQ(res.entries[0].sweep.tile.block_q, 16);
  EXPECT_EQ(res.entries[0].sweep.tile.stages, 3);
  auto bad = r;
  bad.batches = {};
  EXPECT_THROW(sim::tune_splits(bad, hw), InputError);
  bad = r;
  bad.cache_lens = {0};
  EXPECT_THROW(sim::tune_splits(bad, hw), InputError);
  bad = r;
  bad.heads_kv = 5;  // 32 query heads are not a multiple of 5
  EXPECT_THROW(sim::tune_splits(bad, hw), InputError);
}
