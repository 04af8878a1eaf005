// The FA2 models' issue-31 parts (tiling_sim/src/kernels/fa2_forward.cpp, fa2_backward_*.cpp): the forward's and
// the main backward kernels' CTAs listed with their steps (and the forward's masked steps) in launch order, their
// time from the instance's measured costs (calibration fa2.step_costs_h100) where the profile has them and the
// per-CTA chain elsewhere, and the convert kernels' rows at a length off the tile (flashsim's reads the sequence's
// rows, FlashAttention-2's the tile's).
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include "flashsim/sim/counts.h"
#include "flashsim/sim/hardware.h"
#include "flashsim/sim/kernel_model.h"
#include "flashsim/sim/model.h"
#include "flashsim/sim/problem_data.h"
#include "problem_builder.h"

using namespace flashsim;
using namespace flashsim::sim;
using flashsim::test::ProblemBuilder;
using ref::TensorId;

namespace {

// fa2-v1's and FlashAttention-2's d64 .. d128 backward tile: Br 64, Bc 128, 8 warps (twice the forward's 4).
TileConfig bwd_tile(int64_t br = 64, int64_t bc = 128) {
  TileConfig c;
  c.bwd_block_q = br;
  c.bwd_block_k = bc;
  c.warps = 4;
  return c;
}

const MeasuredSteps* entry(const HardwareProfile& hw, const std::string& kernel, int d, int br, int bc) {
  for (const MeasuredSteps& m : hw.measured_steps)
    if (m.kernel == kernel && m.head_dim == d && m.block_q == br && m.block_k == bc) return &m;
  return nullptr;
}

}  // namespace

TEST(Fa2BackwardModel, LaunchListsEachCtasQueryBlockSteps) {
  // b2, 8 query heads over 2 kv heads, n1000 causal: 8 key blocks of 128; key block n sees the query blocks from
  // 128 n / 64 = 2n to ceil(1000 / 64) = 16.
  const AttentionProblem p =
      ProblemBuilder().batch(2).heads(8, 2).seqlen(1000).head_dim(128).causal().dtype(DType::BF16).build();
  const TileConfig c = bwd_tile();
  // flashsim's kernel: a CTA per (key block, sequence, kv head) walking its 4 query heads' blocks
  const KernelLaunch group = launch(kernel_model("bwd_dq_dk_dv_group"), p, c);
  const std::vector<double> group_steps = group.ws.whole(group.ws.cta_steps);
  const std::vector<double> group_tiles = group.ws.whole(group.ws.cta_tiles);
  ASSERT_EQ(group_steps.size(), 8u * 2 * 2);
  EXPECT_EQ(group.ws.cta_steps.size(), 8u);  // one (sequence, kv head)'s key blocks, the launch's period
  // FlashAttention-2's: a CTA per (key block, sequence, query head)
  const KernelLaunch fa2 = launch(kernel_model("bwd_dq_dk_dv"), p, c);
  const std::vector<double> fa2_steps = fa2.ws.whole(fa2.ws.cta_steps);
  ASSERT_EQ(fa2_steps.size(), 8u * 2 * 8);
  for (size_t i = 0; i < group_steps.size(); ++i) {
    const double n = static_cast<double>(i % 8);
    EXPECT_EQ(group_steps[i], 4 * (16 - 2 * n)) << i;
    EXPECT_EQ(group_tiles[i], 1) << i;
  }
  for (size_t i = 0; i < fa2_steps.size(); ++i)
    EXPECT_EQ(fa2_steps[i], 16 - 2 * static_cast<double>(i % 8)) << i;
  // both walk the same (query block, key block, query head) steps
  EXPECT_EQ(group.ws.steps, fa2.ws.steps);
  EXPECT_EQ(group.ws.steps, std::accumulate(group_steps.begin(), group_steps.end(), 0.0));
  EXPECT_EQ(group.ws.block_q, 64);
  EXPECT_EQ(group.ws.block_k, 128);
  EXPECT_EQ(group.ws.head_dim, 128);
}

TEST(Fa2BackwardModel, VarlenCtasPastTheirSequenceHaveNoSteps) {
  // sequences of 300 and 700 keys in a grid of ceil(700 / 128) = 6 key blocks: the first's blocks 3 .. 5 exit
  const AttentionProblem p = ProblemBuilder()
                                 .batch(2)
                                 .heads(2)
                                 .varlen({300, 700}, {300, 700})
                                 .head_dim(64)
                                 .dtype(DType::BF16)
                                 .build();
  const KernelLaunch l = launch(kernel_model("bwd_dq_dk_dv_group"), p, bwd_tile());
  const std::vector<double> steps = l.ws.whole(l.ws.cta_steps), tiles = l.ws.whole(l.ws.cta_tiles);
  ASSERT_EQ(steps.size(), 6u * 2 * 2);
  for (size_t i = 0; i < steps.size(); ++i) {
    const bool first = (i / 6) % 2 == 0;
    const double expected = first ? (i % 6 < 3 ? 5 : 0) : 11;  // ceil(300 / 64) = 5, ceil(700 / 64) = 11
    EXPECT_EQ(steps[i], expected) << i;
    EXPECT_EQ(tiles[i], expected > 0 ? 1 : 0) << i;
  }
  EXPECT_EQ(l.ws.tiles, 2 * (3 + 6));
}

namespace {

// A problem with a random block mask (bhqk) of the given keep fraction and tile.
AttentionProblem masked(AttentionProblem p, double keep, int64_t tq, int64_t tk) {
  p.block_mask = BroadcastShape::BHQK;
  p.block_mask_spec = "random:keep=" + std::to_string(keep);
  p.block_mask_q = tq;
  p.block_mask_k = tk;
  p.validate();
  return p;
}

TileConfig both_tiles() {
  TileConfig c = bwd_tile();
  c.block_q = 128;
  c.block_k = 64;
  return c;
}

const char* const kListingModels[] = {"fwd_fa2", "fwd_fa2_v1", "bwd_dq_dk_dv", "bwd_dq_dk_dv_group"};

}  // namespace

TEST(Fa2Models, BlockMaskLaunchesListTheActiveSteps) {
  // The launch alone cannot see the mask (its data): nothing listed; with the data every CTA is listed, its steps
  // the tiles the closed form counts as computed (the kernels' tile counts are held to those on the GPU).
  const auto hw = load_profile("H100-SXM5-80GB");
  const TileConfig c = both_tiles();
  const AttentionProblem base[] = {
      ProblemBuilder().batch(2).heads(4, 2).seqlen(600).head_dim(64).dtype(DType::BF16).build(),
      ProblemBuilder().batch(1).heads(2).seqlen(700).head_dim(128).causal().dtype(DType::BF16).build(),
      ProblemBuilder().batch(2).heads(2).seqlen(513).head_dim(64).window(100, 20).dtype(DType::BF16).build(),
      ProblemBuilder()
          .batch(2)
          .heads(4, 1)
          .varlen({300, 650}, {420, 650})
          .head_dim(64)
          .dtype(DType::BF16)
          .build()};
  int timed = 0;  // problems whose tile the profile has measured
  for (const AttentionProblem& plain : base)
    for (const auto& [tq, tk] : {std::pair<int64_t, int64_t>{64, 64}, {48, 80}})
      for (const char* name : kListingModels) {
        const KernelModel& m = kernel_model(name);
        const std::string what = std::string(name) + " " + plain.describe() + " tile " + std::to_string(tq);
        const AttentionProblem p = masked(plain, 0.5, tq, tk);
        const ProblemData d = problem_data(p, 3);
        EXPECT_EQ(launch(m, p, c).ws.tiles, 0) << what;
        EXPECT_EQ(analytic_counts(m, p, c, &d, false).launch.ws.tiles, 0) << what;  // a ranking needs none
        const KernelLaunch l = launch(m, p, c, &d);
        const KernelCounts k = analytic_counts(m, p, c, &d);
        EXPECT_EQ(l.ws.steps, static_cast<double>(k.tiles)) << what;
        EXPECT_GT(k.skipped_tiles, 0) << what;
        const std::vector<double> steps = l.ws.whole(l.ws.cta_steps);
        ASSERT_EQ(static_cast<int64_t>(steps.size()), l.ctas()) << what;
        EXPECT_EQ(std::accumulate(steps.begin(), steps.end(), 0.0), l.ws.steps) << what;
        const bool bwd = m.pass == Pass::Backward;  // the profile's measured tiles: timed by them
        if (entry(hw, name, static_cast<int>(p.head_dim), static_cast<int>(bwd ? c.bwd_block_q : c.block_q),
                  static_cast<int>(bwd ? c.bwd_block_k : c.block_k))) {
          EXPECT_EQ(predict_kernel(k, hw).cta.bound, "measured steps") << what;
          ++timed;
        }
        // every tile active: the lists (steps and masked steps, CTA by CTA) and the time of the plain problem
        const AttentionProblem all = masked(plain, 1.0, tq, tk);
        const ProblemData d_all = problem_data(all, 3);
        const KernelLaunch la = launch(m, all, c, &d_all), lp = launch(m, plain, c);
        EXPECT_EQ(la.ws.whole(la.ws.cta_steps), lp.ws.whole(lp.ws.cta_steps)) << what;
        EXPECT_EQ(la.ws.whole(la.ws.cta_masked), lp.ws.whole(lp.ws.cta_masked)) << what;
        EXPECT_DOUBLE_EQ(predict_kernel(analytic_counts(m, all, c, &d_all), hw).time_s,
                         predict_kernel(analytic_counts(m, plain, c), hw).time_s)
            << what;
      }
  EXPECT_GE(timed, 8);
}

TEST(Fa2ForwardModel, BlockMaskTilesCutByABlockAreMaskedSteps) {
  // Non-causal, lengths on the blocks: only the block mask masks a score. A key block is a masked step where the
  // mask tiles it overlaps are not all active (the kernel then tests each score), which mask tiles of 48 x 80
  // make happen and 128 x 64 (the blocks, Br 128 x Bc 64) never do.
  const TileConfig c = both_tiles();
  const AttentionProblem plain =
      ProblemBuilder().batch(2).heads(3).seqlen(1024).head_dim(64).dtype(DType::BF16).build();
  for (const auto& [tq, tk] : {std::pair<int64_t, int64_t>{128, 64}, {48, 80}}) {
    const AttentionProblem p = masked(plain, 0.5, tq, tk);
    const ProblemData d = problem_data(p, 7);
    const KernelLaunch l = launch(kernel_model("fwd_fa2_v1"), p, c, &d);
    const std::vector<double> masked_steps = l.ws.whole(l.ws.cta_masked), steps = l.ws.whole(l.ws.cta_steps);
    ASSERT_EQ(masked_steps.size(), 8u * 2 * 3);
    size_t i = 0;
    for (int64_t h = 0; h < 3; ++h)
      for (int64_t b = 0; b < 2; ++b)
        for (int64_t m = 0; m < 8; ++m, ++i) {
          double active = 0, partial = 0;
          for (int64_t n = 0; n < 16; ++n)
            if (tile_active(p, d, b, h, m * 128, 128, n * 64, 64)) {
              ++active;
              partial += tile_fully_active(p, d, b, h, m * 128, 128, n * 64, 64) ? 0 : 1;
            }
          EXPECT_EQ(steps[i], active) << i;
          EXPECT_EQ(masked_steps[i], partial) << i;
        }
    const double total = std::accumulate(masked_steps.begin(), masked_steps.end(), 0.0);
    if (tq == 128)
      EXPECT_EQ(total, 0);
    else
      EXPECT_GT(total, 0);
  }
}

TEST(ProblemData, FullyActiveTilesAreThoseWithEveryMaskTileActive) {
  AttentionProblem p =
      masked(ProblemBuilder().batch(1).heads(1).seqlen(256).head_dim(64).build(), 0.5, 64, 64);
  ProblemData d = problem_data(p, 1);
  std::fill(d.block_mask.begin(), d.block_mask.end(), uint8_t{1});
  d.block_mask[1] = 0;  // mask tile (0, 1): rows 0-63, keys 64-127
  EXPECT_TRUE(tile_fully_active(p, d, 0, 0, 0, 64, 0, 64));
  EXPECT_FALSE(tile_fully_active(p, d, 0, 0, 0, 64, 0, 128));  // overlaps (0, 1)
  EXPECT_TRUE(tile_active(p, d, 0, 0, 0, 64, 0, 128));
  EXPECT_FALSE(tile_fully_active(p, d, 0, 0, 32, 64, 100, 10));
  EXPECT_FALSE(tile_active(p, d, 0, 0, 32, 32, 64, 64));  // inside (0, 1) alone
  EXPECT_TRUE(tile_fully_active(p, d, 0, 0, 64, 192, 0, 256));
  EXPECT_FALSE(tile_fully_active(p, d, 0, 0, 0, 0, 0, 64));  // empty
}

TEST(Fa2BackwardModel, MeasuredStepsTimeTheMainKernels) {
  const auto hw = load_profile("H100-SXM5-80GB");
  const TileConfig c = bwd_tile();
  for (const std::string kernel : {"bwd_dq_dk_dv_group", "bwd_dq_dk_dv"}) {
    const MeasuredSteps* m = entry(hw, kernel, 128, 64, 128);
    ASSERT_TRUE(m) << kernel;
    // b1 h264 n1024 d128: 8 key blocks x 264 heads = 2112 CTAs, 16 an SM, each 16 query blocks
    const AttentionProblem p =
        ProblemBuilder().batch(1).heads(264).seqlen(1024).head_dim(128).dtype(DType::BF16).build();
    const auto pr = predict_kernel(analytic_counts(kernel_model(kernel), p, c), hw);
    EXPECT_EQ(pr.cta.bound, "measured steps") << kernel;
    EXPECT_NEAR(pr.cta.time_s, 16 * m->tile_s(16), 1e-12) << kernel;
    EXPECT_NEAR(pr.time_s, hw.kernel_latency_s + pr.cta.time_s, 1e-12) << kernel;
    // 8 CTAs more (one more head): 8 SMs take a 17th CTA, and the kernel ends with them
    const AttentionProblem more =
        ProblemBuilder().batch(1).heads(265).seqlen(1024).head_dim(128).dtype(DType::BF16).build();
    EXPECT_NEAR(predict_kernel(analytic_counts(kernel_model(kernel), more, c), hw).cta.time_s,
                17 * m->tile_s(16), 1e-12)
        << kernel;
    // Causal: CTAs of 16 .. 2 steps, dealt in launch order: between the even share and the first SM's list
    const AttentionProblem causal =
        ProblemBuilder().batch(1).heads(264).seqlen(1024).head_dim(128).causal().dtype(DType::BF16).build();
    const double t = predict_kernel(analytic_counts(kernel_model(kernel), causal, c), hw).cta.time_s;
    double even = 0;
    for (int n = 0; n < 8; ++n) even += 264 * m->tile_s(16 - 2 * n);
    EXPECT_GE(t, even / 132 - 1e-12) << kernel;
    EXPECT_LT(t, pr.cta.time_s * 0.7) << kernel;
  }
  // A tile the profile has no costs of: the per-CTA chain
  const AttentionProblem p =
      ProblemBuilder().batch(1).heads(264).seqlen(1024).head_dim(128).dtype(DType::BF16).build();
  const auto other =
      predict_kernel(analytic_counts(kernel_model("bwd_dq_dk_dv_group"), p, bwd_tile(64, 64)), hw);
  EXPECT_NE(other.cta.bound, "measured steps");
  EXPECT_GT(other.cta.time_s, 0);
}

TEST(Fa2BackwardModel, ConvertRowsOffTheTile) {
  // n1000, d64, Br64: 16 query blocks; the padded accumulator has ceil(1000 / 128) x 128 = 1024 rows
  const AttentionProblem p =
      ProblemBuilder().batch(2).heads(4).seqlen(1000).head_dim(64).dtype(DType::BF16).build();
  const TileConfig c = bwd_tile();
  for (const auto& [kernel, rows] : {std::pair<std::string, int64_t>{"bwd_convert_dq_rows", 1000},
                                     std::pair<std::string, int64_t>{"bwd_convert_dq", 1024}}) {
    const KernelModel& m = kernel_model(kernel);
    const KernelCounts a = analytic_counts(m, p, c);
    const KernelCounts x = execute_counts(schedule(m, p, c));
    const auto& acc = a.tensors[static_cast<size_t>(TensorId::DqAccum)];
    EXPECT_EQ(acc.load.bytes, 2 * 4 * rows * 64 * 4) << kernel;
    EXPECT_EQ(acc.load, x.tensors[static_cast<size_t>(TensorId::DqAccum)].load) << kernel;
    EXPECT_EQ(a.tensors[static_cast<size_t>(TensorId::dQ)].store.bytes, 2 * 4 * 1000 * 64 * 2) << kernel;
  }
  // n1090 at Br128: FlashAttention-2's reads 9 whole tiles (1152 rows, the padded accumulator), flashsim's 1090
  const AttentionProblem q =
      ProblemBuilder().batch(1).heads(1).seqlen(1090).head_dim(64).dtype(DType::BF16).build();
  EXPECT_EQ(analytic_counts(kernel_model("bwd_convert_dq"), q, bwd_tile(128, 128))
                .tensors[static_cast<size_t>(TensorId::DqAccum)]
                .load.bytes,
            1152 * 64 * 4);
  EXPECT_EQ(analytic_counts(kernel_model("bwd_convert_dq_rows"), q, bwd_tile(128, 128))
                .tensors[static_cast<size_t>(TensorId::DqAccum)]
                .load.bytes,
            1090 * 64 * 4);
}

TEST(Fa2ForwardModel, LaunchListsStepsAndMaskedSteps) {
  TileConfig c;  // fa2-v1's d96 / d128 forward tile: Br 128, Bc 64
  c.block_q = 128;
  c.block_k = 64;
  c.warps = 4;
  // n1000 causal: query block m sees key blocks [0, ceil(min(1000, 128 m + 128) / 64)); those from
  // (128 m + 1) / 64 on cross the diagonal (or the keys' end) and mask element by element
  const AttentionProblem causal =
      ProblemBuilder().batch(2).heads(3).seqlen(1000).head_dim(128).causal().dtype(DType::BF16).build();
  for (const std::string kernel : {"fwd_fa2", "fwd_fa2_v1"}) {
    const KernelLaunch l = launch(kernel_model(kernel), causal, c);
    const std::vector<double> steps = l.ws.whole(l.ws.cta_steps), masked = l.ws.whole(l.ws.cta_masked);
    ASSERT_EQ(steps.size(), 8u * 2 * 3) << kernel;
    for (size_t i = 0; i < steps.size(); ++i) {
      const int64_t m = static_cast<int64_t>(i % 8),
                    n_max = (std::min<int64_t>(1000, 128 * m + 128) + 63) / 64;
      EXPECT_EQ(steps[i], static_cast<double>(n_max)) << i;
      EXPECT_EQ(masked[i], static_cast<double>(n_max - (128 * m + 1) / 64)) << i;
    }
  }
  // not causal: every query block walks all 16 key blocks, the last (keys 960 .. 999) masked
  const AttentionProblem full =
      ProblemBuilder().batch(2).heads(3).seqlen(1000).head_dim(128).dtype(DType::BF16).build();
  const KernelLaunch l = launch(kernel_model("fwd_fa2_v1"), full, c);
  EXPECT_EQ(l.ws.steps, 16.0 * 8 * 6);
  EXPECT_EQ(l.ws.masked_steps, 8.0 * 6);
}

TEST(Fa2ForwardModel, MeasuredStepsAndMaskedStepsTimeTheForward) {
  const auto hw = load_profile("H100-SXM5-80GB");
  TileConfig c;
  c.block_q = 128;
  c.block_k = 64;
  c.warps = 4;
  for (const std::string kernel : {"fwd_fa2", "fwd_fa2_v1"}) {
    const MeasuredSteps* m = entry(hw, kernel, 128, 128, 64);
    ASSERT_TRUE(m) << kernel;
    ASSERT_NE(m->masked_step_s, 0) << kernel;
    // b1 h264 n1024: 8 query blocks x 264 heads = 2112 CTAs, 16 an SM, each 16 key blocks, none masked
    const AttentionProblem p =
        ProblemBuilder().batch(1).heads(264).seqlen(1024).head_dim(128).dtype(DType::BF16).build();
    const auto pr = predict_kernel(analytic_counts(kernel_model(kernel), p, c), hw);
    EXPECT_EQ(pr.cta.bound, "measured steps") << kernel;
    EXPECT_NEAR(pr.cta.time_s, 16 * m->tile_s(16), 1e-12) << kernel;
    // n1000: the same CTAs' last key block masks the keys' end
    const AttentionProblem odd =
        ProblemBuilder().batch(1).heads(264).seqlen(1000).head_dim(128).dtype(DType::BF16).build();
    EXPECT_NEAR(predict_kernel(analytic_counts(kernel_model(kernel), odd, c), hw).cta.time_s,
                16 * (m->tile_s(16) + m->masked_step_s), 1e-12)
        << kernel;
  }
  // fa2-v1's masked steps cost more than FlashAttention-2's (its element masking: the recorded causal problems)
  EXPECT_GT(entry(hw, "fwd_fa2_v1", 64, 128, 128)->masked_step_s,
            5 * entry(hw, "fwd_fa2", 64, 128, 128)->masked_step_s);
}
