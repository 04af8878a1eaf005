// fa3-v1's balanced persistent walk (flashsim/families/fa3/walk.h) and the fwd_fa3 model walking it: every tile
// dealt once, in order; equal tiles dealt as the static walk deals them; list scheduling's bound; the short
// causal problem whose static walk is unbalanced, balanced; the model's CTAs the walk's.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "flashsim/families/fa3/instances.h"
#include "flashsim/families/fa3/walk.h"
#include "flashsim/sim/counts.h"
#include "flashsim/sim/hardware.h"
#include "flashsim/sim/kernel_model.h"
#include "flashsim/sim/ncu.h"
#include "flashsim/sim/schedule.h"
#include "problem_builder.h"
#include "recorded_ncu.h"

using namespace flashsim;
using namespace flashsim::sim;
using flashsim::test::ProblemBuilder;

namespace {

// CTA c's tiles of a walk.
std::vector<int32_t> tiles_of(const std::vector<int32_t>& walk, int64_t c) {
  return {walk.begin() + walk[static_cast<size_t>(c)], walk.begin() + walk[static_cast<size_t>(c) + 1]};
}

// Each CTA's summed cost.
std::vector<int64_t> loads(const std::vector<int32_t>& walk, int64_t grid, const std::vector<int64_t>& cost) {
  std::vector<int64_t> out(static_cast<size_t>(grid), 0);
  for (int64_t c = 0; c < grid; ++c)
    for (int32_t t : tiles_of(walk, c)) out[static_cast<size_t>(c)] += cost[static_cast<size_t>(t)];
  return out;
}

double balance(const std::vector<int64_t>& load) {  // mean over max
  const double total = static_cast<double>(std::accumulate(load.begin(), load.end(), int64_t{0}));
  return total / static_cast<double>(load.size()) /
         static_cast<double>(*std::max_element(load.begin(), load.end()));
}

}  // namespace

TEST(Fa3Walk, DealsEveryTileOnceInOrderWithinListSchedulingsBound) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 20; ++trial) {
    const int64_t grid = 1 + static_cast<int64_t>(rng() % 140), tiles = static_cast<int64_t>(rng() % 3000);
    std::vector<int64_t> cost(static_cast<size_t>(tiles));
    for (auto& c : cost) c = static_cast<int64_t>(rng() % 40);
    const auto walk = fa3_balanced_walk(tiles, grid, [&](int64_t t) { return cost[static_cast<size_t>(t)]; });
    ASSERT_EQ(static_cast<int64_t>(walk.size()), grid + 1 + tiles);
    EXPECT_EQ(static_cast<int64_t>(walk.size()) * 4, fa3_walk_bytes(tiles, grid));
    EXPECT_EQ(walk.front(), grid + 1);
    EXPECT_EQ(walk[static_cast<size_t>(grid)], static_cast<int32_t>(walk.size()));
    std::vector<int> seen(static_cast<size_t>(tiles), 0);
    for (int64_t c = 0; c < grid; ++c) {
      const auto mine = tiles_of(walk, c);
      EXPECT_TRUE(std::is_sorted(mine.begin(), mine.end())) << "CTA " << c;  // the walk's order kept
      for (int32_t t : mine) ++seen[static_cast<size_t>(t)];
    }
    EXPECT_TRUE(std::all_of(seen.begin(), seen.end(), [](int n) { return n == 1; }));
    if (tiles == 0) continue;
    // Graham's bound of list scheduling: no CTA ends later than the mean plus the costliest tile.
    const auto load = loads(walk, grid, cost);
    const int64_t total = std::accumulate(cost.begin(), cost.end(), int64_t{0});
    const int64_t most = *std::max_element(cost.begin(), cost.end());
    EXPECT_LE(static_cast<double>(*std::max_element(load.begin(), load.end())),
              static_cast<double>(total) / static_cast<double>(grid) + static_cast<double>(most));
  }
}

TEST(Fa3Walk, CalendarAndHeapDealTheSameWalk) {
  // The heap (long problems, whose costs span more units than a calendar holds) and the calendar choose the same
  // CTA every time: the least cost so far, then the lowest CTA; zero-cost tiles and ties included.
  std::mt19937 rng(31);
  for (int trial = 0; trial < 40; ++trial) {
    const int64_t grid = 1 + static_cast<int64_t>(rng() % 200), tiles = static_cast<int64_t>(rng() % 4000);
    const int64_t spread = trial % 4 == 0 ? 1 : 1 + static_cast<int64_t>(rng() % 3000);
    std::vector<int64_t> cost(static_cast<size_t>(tiles));
    for (auto& c : cost) c = static_cast<int64_t>(rng() % static_cast<uint64_t>(spread + 1));  // 0 .. spread
    const auto cost_of = [&](int64_t t) { return cost[static_cast<size_t>(t)]; };
    const auto calendar = fa3_balanced_walk(tiles, grid, cost_of, Fa3WalkMethod::Calendar);
    EXPECT_EQ(fa3_balanced_walk(tiles, grid, cost_of, Fa3WalkMethod::Heap), calendar) << "trial " << trial;
    EXPECT_EQ(fa3_balanced_walk(tiles, grid, cost_of), calendar) << "trial " << trial;
  }
  // A 10M-key causal problem's tiles (1 .. 78125 key blocks each): the automatic choice takes the heap and
  // returns (a calendar would span 7e7 slots of 8 bytes).
  const int64_t num_m = 78125, grid = 132;
  const auto walk = fa3_balanced_walk(num_m, grid, [&](int64_t t) { return num_m - t % num_m; });
  EXPECT_EQ(static_cast<int64_t>(walk.size()), grid + 1 + num_m);
}

TEST(Fa3Walk, EqualTilesAreDealtAsTheStaticWalkDealsThem) {
  const int64_t grid = 132, tiles = 1000;
  const auto walk = fa3_balanced_walk(tiles, grid, [](int64_t) { return 5; });
  for (int64_t c = 0; c < grid; ++c) {
    std::vector<int32_t> want;
    for (int64_t t = c; t < tiles; t += grid) want.push_back(static_cast<int32_t>(t));
    EXPECT_EQ(tiles_of(walk, c), want) << "CTA " << c;
  }
}

// b16 h16 n1024 d128 causal, Br = Bc = 128 on 132 CTAs in head groups of 16: query block m sees m + 1 key
// blocks; the static walk (tile t on CTA t % 132) leaves the mean CTA at 0.78 of the busiest, the balanced walk
// at 0.95 or more.
TEST(Fa3Walk, ShortCausalProblemIsBalanced) {
  const auto p = ProblemBuilder().batch(16).heads(16).seqlen(1024).head_dim(128).causal().build();
  const int64_t grid = 132, num_m = 8, tiles = num_m * 16 * 16, group = 16;
  const Fa3TileOrder order{num_m, 16 * 16, group};
  std::vector<int64_t> cost(static_cast<size_t>(tiles));
  for (int64_t t = 0; t < tiles; ++t)
    cost[static_cast<size_t>(t)] = order(t).second + 1 + fa3_tile_overhead_blocks(128);
  std::vector<int64_t> static_load(static_cast<size_t>(grid), 0);
  for (int64_t t = 0; t < tiles; ++t)
    static_load[static_cast<size_t>(t % grid)] += cost[static_cast<size_t>(t)];
  const auto walk = fa3_forward_walk(p, 128, 128, group, grid);
  EXPECT_LT(balance(static_load), 0.8);
  EXPECT_GE(balance(loads(walk, grid, cost)), 0.95);
  // The order: a head group's 16 last query blocks first.
  EXPECT_EQ(order(0), (std::pair<int64_t, int64_t>{0, 7}));
  EXPECT_EQ(order(15), (std::pair<int64_t, int64_t>{15, 7}));
  EXPECT_EQ(order(16), (std::pair<int64_t, int64_t>{0, 6}));
  EXPECT_EQ(order(128), (std::pair<int64_t, int64_t>{16, 7}));
}

TEST(Fa3Walk, RuleWalksUnequalPersistentTilesOnly) {
  EXPECT_TRUE(fa3_fwd_walks_balanced(true, true, false));
  EXPECT_TRUE(fa3_fwd_walks_balanced(true, false, true));
  EXPECT_FALSE(fa3_fwd_walks_balanced(true, false, false));  // equal tiles: the static walk
  EXPECT_FALSE(fa3_fwd_walks_balanced(false, true, true));   // one CTA a tile: the hardware deals them
}

// The model's per-CTA work is the walk's: the analytic counts (fa3_counts) and the executed schedule (fa3_cta)
// agree on each CTA's work, and the CTAs of the short causal problem differ by little.
TEST(Fa3Walk, ModelWalksTheCtasTheLaunchWalks) {
  const KernelModel& m = kernel_model("fwd_fa3");
  for (const auto& p :
       {ProblemBuilder().batch(16).heads(16).seqlen(1024).head_dim(128).causal().build(),
        ProblemBuilder().varlen({700, 1500, 64, 900}, {700, 1500, 64, 900}).heads(12).head_dim(64).build(),
        // causal varlen, 1,536 tiles: persistent, its tiles unequal by length and by query block
        ProblemBuilder()
            .varlen({2000, 1500, 300, 1000}, {2000, 1500, 300, 1000})
            .heads(24)
            .head_dim(64)
            .causal()
            .build()}) {
    const KernelCounts a = analytic_counts(m, p, {});
    const KernelCounts x = execute_counts(schedule(m, p, {}));
    ASSERT_FALSE(a.cta_work.empty());
    EXPECT_EQ(a.cta_work, x.cta_work);
    EXPECT_EQ(a.launch.ctas(), 132);  // the H100's SMs: one persistent CTA each
  }
  const auto p = ProblemBuilder().batch(16).heads(16).seqlen(1024).head_dim(128).causal().build();
  const KernelCounts a = analytic_counts(m, p, {});
  const double most = *std::max_element(a.cta_work.begin(), a.cta_work.end());
  const double mean =
      std::accumulate(a.cta_work.begin(), a.cta_work.end(), 0.0) / static_cast<double>(a.cta_work.size());
  EXPECT_GE(mean / most, 0.9);  // FLOPs a CTA (the walk balanced their costs, the overhead included)
}

// fa3-v1's forward walking balanced under ncu on an H200 (tests/data/ncu/fa3_walk_h200, 2026-11-29): the L2 ->
// SM bytes within 2% (a tile's bytes do not depend on its CTA) and the DRAM reads and writes inside the range the
// L2 simulation gives the walk's CTAs (the H200's profile: its L2 and HBM).
TEST(Fa3Walk, BalancedWalkAgainstNcu) {
  const auto hw = load_profile("H200");
  const std::pair<const char*, AttentionProblem> reports[] = {
      {"ncu_fwd_b16_h16_n1024_d128_causal.csv",
       ProblemBuilder().batch(16).heads(16).seqlen(1024).head_dim(128).dtype(DType::BF16).causal().build()},
      {"ncu_fwd_b16_h32_n1024_d64_causal.csv",
       ProblemBuilder().batch(16).heads(32).seqlen(1024).head_dim(64).dtype(DType::BF16).causal().build()},
      {"ncu_fwd_b8_h16_n2048_d128_causal.csv",
       ProblemBuilder().batch(8).heads(16).seqlen(2048).head_dim(128).dtype(DType::BF16).causal().build()},
  };
  for (const auto& [file, p] : reports) {
    const auto kernels = test::read_report(std::string(FLASHSIM_TEST_DATA "/ncu/fa3_walk_h200/") + file);
    const Comparison c = compare_ncu(kernels, p, hw, dram_counters_replayed(kernels));
    ASSERT_EQ(c.kernels.size(), 3u) << file;  // three timed launches
    for (const auto& k : c.kernels) {
      ASSERT_TRUE(k.recognized) << file << " " << k.name;
      int held = 0;
      for (const auto& m : k.metrics) {
        if (m.metric.starts_with("l1tex__m_xbar2l1tex")) {
          EXPECT_LE(std::abs(m.measured - m.predicted), 0.02 * m.predicted) << file;
          ++held;
        }
        if (m.metric.starts_with("dram__bytes")) {
          EXPECT_TRUE(m.interval && m.ok) << file << " " << m.metric << ": " << m.verdict;
          ++held;
        }
      }
      EXPECT_EQ(held, 3) << file;
    }
  }
}

// The schedule rule (instances.h): a causal launch of at least 8 tiles an SM runs persistent at any length where
// the launch walks balanced (at 4096 keys and more in L2-sized head groups), one CTA a tile where it cannot;
// windowed launches and causal ones of fewer tiles run one CTA a tile.
TEST(Fa3Walk, LongCausalRunsPersistentWhereTheLaunchWalksBalanced) {
  const int64_t sms = 132, l2 = 50 << 20, kv = 2 * 16384 * 128 * 2;  // K and V of a head at 16K keys, d128
  const Fa3Schedule walked = fa3_fwd_schedule(true, false, 16384, 2048, sms, kv, l2, 16);
  EXPECT_TRUE(walked.persistent);
  EXPECT_EQ(walked.head_group, 3);  // 25 MiB / 8 MiB a head
  EXPECT_FALSE(
      fa3_fwd_schedule(true, false, 16384, 2048, sms, kv, l2, 16, /*balanced_walk=*/false).persistent);
  EXPECT_FALSE(fa3_fwd_schedule(true, false, 16384, 8 * sms - 1, sms, kv, l2, 16).persistent);
  EXPECT_FALSE(fa3_fwd_schedule(false, true, 16384, 2048, sms, kv, l2, 16).persistent);  // a window
  const Fa3Schedule short_causal = fa3_fwd_schedule(true, false, 1024, 2048, sms, kv / 16, l2, 256, false);
  EXPECT_TRUE(short_causal.persistent);  // the static walk's measured range (below 4096 keys)
  EXPECT_EQ(short_causal.head_group, 16);
}

// The walk's tile cost (walk.h, which the dev driver's held-out timings build their walk from without the
// simulator) is the simulator's visible key blocks plus the head dim's overhead, over windows on both sides,
// causal, q longer and shorter than k, ragged last blocks and windows past either end.
TEST(Fa3Walk, TileCostIsTheVisibleKeyBlocksPlusTheOverhead) {
  std::mt19937 rng(29);
  const auto pick = [&](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  };
  int checked = 0;
  for (int trial = 0; trial < 400; ++trial) {
    const int64_t sq = pick(1, 700), sk = pick(1, 700),
                  d = std::vector<int64_t>{64, 96, 128, 256}[pick(0, 3)];
    const int64_t bq = 128, bk = std::vector<int64_t>{32, 64, 96, 128}[pick(0, 3)];
    int64_t wl = pick(-1, 300), wr = pick(-1, 300);
    if (trial % 4 == 0) wl = -1, wr = 0;  // causal
    const AttentionProblem p =
        ProblemBuilder().batch(1).heads(2).seqlen(sq, sk).head_dim(d).window(wl, wr).build();
    for (int64_t q0 = 0; q0 < sq; q0 += bq) {
      const int64_t q1 = std::min(sq, q0 + bq);
      const auto [n0, n1] = visible_key_blocks(p, 0, q0, q1, bk);
      EXPECT_EQ(fa3_tile_cost(q0, q1, sq, sk, wl, wr, bk, d), n1 - n0 + fa3_tile_overhead_blocks(d))
          << "q" << sq << " k" << sk << " window " << wl << "," << wr << " Bc" << bk << " rows " << q0;
      ++checked;
    }
  }
  EXPECT_GT(checked, 400);
}
