// `flashsim-gpu autotune`'s plan, where no GPU is: the grid's problems and every (problem, config) pair the run
// times, each a config the version (fa2-v1, fa3-v1) accepts, and the outputs' shape.
#include "flashsim/gpu/autotune.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>
#include <tuple>

#include "ci_instances.h"
#include "flashsim/error.h"
#include "flashsim/families/fa2/instances.h"
#include "flashsim/families/fa3/instances.h"
#include "flashsim/gpu/harness.h"

using flashsim::test::runs;

using namespace flashsim;

namespace {

// Configs of a head dim in the instance table: forward entries x the stages that fit, backward entries.
int fwd_configs(int64_t d) {
  int n = 0;
  for (const Fa2FwdInstance& e : kFa2FwdInstances)
    for (int s = kFa2FwdMinStages; s <= kFa2FwdMaxStages; ++s)
      n += e.head_dim == d && fa2_fwd_instantiated(d, e.block_q, e.block_k, e.warps, s) ? 1 : 0;
  return n;
}
int bwd_configs(int64_t d) {
  return static_cast<int>(std::count_if(std::begin(kFa2BwdInstances), std::end(kFa2BwdInstances),
                                        [&](const Fa2BwdInstance& e) { return e.head_dim == d; }));
}

}  // namespace

TEST(GpuAutotune, DefaultPlanTimesEveryInstanceOnEveryProblem) {
  const gpu::AutotunePlan plan = gpu::autotune_plan(gpu::AutotuneGrid{});
  ASSERT_EQ(plan.problems.size(), 4u * 2 * 3 * 4);  // head dims x dtypes x seqlens x features
  const auto& v = gpu::kernel_version("fa2-v1");
  std::map<std::pair<size_t, gpu::TunePass>, std::tuple<int, int>> per;  // (configs, hand configs)
  size_t last_problem = 0;
  for (const auto& it : plan.items) {
    EXPECT_GE(it.problem, last_problem);  // grouped by problem
    last_problem = it.problem;
    const AttentionProblem& p = plan.problems[it.problem].problem;
    if (it.pass == gpu::TunePass::Fwd)
      EXPECT_EQ(runs(v.unsupported(p, it.tile)), "") << gpu::autotune_label(plan, it);
    else
      EXPECT_EQ(runs(gpu::why_no_backward(v, p, it.tile)), "") << gpu::autotune_label(plan, it);
    auto& [n, hand] = per[{it.problem, it.pass}];
    ++n;
    hand += it.hand ? 1 : 0;
  }
  size_t total = 0;
  for (size_t i = 0; i < plan.problems.size(); ++i) {
    const AttentionProblem& p = plan.problems[i].problem;
    EXPECT_EQ(p.batch * p.seqlen_q, 16384);   // bench's convention: 16K tokens a batch, width 2048
    EXPECT_EQ(p.heads_q, 2048 / p.head_dim);  // d96: 21 heads
    const std::string& f = plan.problems[i].feature;
    EXPECT_EQ(p.causal(), f.find("causal") != std::string::npos) << f;
    EXPECT_EQ(p.bias, f.find("bias") != std::string::npos ? BroadcastShape::BHQK : BroadcastShape::None) << f;
    const auto [nf, hf] = per[{i, gpu::TunePass::Fwd}];
    const auto [nb, hb] = per[{i, gpu::TunePass::Bwd}];
    EXPECT_EQ(nf, fwd_configs(p.head_dim)) << i;
    EXPECT_EQ(nb, bwd_configs(p.head_dim)) << i;
    EXPECT_EQ(hf, 1) << i;  // the launch table picks exactly one instance, forward and backward
    EXPECT_EQ(hb, 1) << i;
    total += static_cast<size_t>(nf + nb);
  }
  EXPECT_EQ(total, plan.items.size());
  // the rounds' median, as bench takes its launches': the upper middle of an even count
  EXPECT_EQ(gpu::upper_median({3.0, 1.0, 2.0}), 2.0);
  EXPECT_EQ(gpu::upper_median({4.0, 1.0, 3.0, 2.0}), 3.0);
  EXPECT_EQ(gpu::upper_median({}), 0.0);
  const double once = gpu::autotune_estimate_seconds(plan, gpu::BenchOptions{});
  EXPECT_GT(once, 0.0);
  EXPECT_NEAR(gpu::autotune_estimate_seconds(plan, gpu::BenchOptions{}, 3), 3 * once, 1e-9 * once);
  // rounds are counted before a CUDA device is asked for: refused here with or without one
  const auto nothing = [](size_t, const gpu::AutotuneRow&) {};
  EXPECT_THROW(gpu::autotune(gpu::kernel_version(plan.kernel), plan, gpu::BenchOptions{}, nothing, 0),
               InputError);
}

TEST(GpuAutotune, GridChoicesAndOutputs) {
  gpu::AutotuneGrid g;
  g.head_dims = {128};
  g.dtypes = {DType::F16};
  g.seqlens = {4096};
  g.features = {"causal+bias"};
  g.batch = 2;
  g.heads = 16;
  g.bwd = false;
  const gpu::AutotunePlan plan = gpu::autotune_plan(g);
  ASSERT_EQ(plan.problems.size(), 1u);
  EXPECT_EQ(plan.problems[0].problem.batch, 2);
  EXPECT_EQ(plan.problems[0].problem.heads_q, 16);
  ASSERT_EQ(plan.items.size(), static_cast<size_t>(fwd_configs(128)));
  for (const auto& it : plan.items) EXPECT_EQ(it.pass, gpu::TunePass::Fwd);
  EXPECT_EQ(gpu::autotune_label(plan, plan.items[0]), "fwd d128 fp16 causal+bias n4096 Br128 Bc64 w4 st1");

  // A CSV line has the header's fields; a backward row leaves the forward's knobs empty and its kernel runs
  // twice the TileConfig's warps.
  gpu::AutotuneRow r{plan.items[0], 1.5, 100.0, ""};
  const auto fields = [](const std::string& line) { return std::count(line.begin(), line.end(), ','); };
  EXPECT_EQ(fields(gpu::autotune_csv_line(plan, r)), fields(gpu::autotune_csv_header()));
  EXPECT_EQ(gpu::autotune_csv_line(plan, r).rfind(
                "fa2-v1,fwd,128,fp16,4096,4096,2,16,1,1,128,64,4,4,1,,,1.5000,100.0,", 0),
            0u)
      << gpu::autotune_csv_line(plan, r);
  r.spread = 0.0712;  // the rounds' spread closes the line
  EXPECT_TRUE(gpu::autotune_csv_line(plan, r).ends_with(",0.0712\n")) << gpu::autotune_csv_line(plan, r);
  EXPECT_NE(gpu::autotune_json(plan, {r}).find("\"rounds_spread\": 0.0712"), std::string::npos);
  g.fwd = false;
  g.bwd = true;
  const gpu::AutotunePlan bplan = gpu::autotune_plan(g);
  ASSERT_FALSE(bplan.items.empty());
  // (not the hand config: the launch table takes Bc64 for the d128 score pipeline, which a bias needs)
  gpu::AutotuneRow b{bplan.items[0], 2.0, 50.0, "a \"quoted\" reason, with a comma"};
  const std::string line = gpu::autotune_csv_line(bplan, b);
  EXPECT_EQ(line.rfind("fa2-v1,bwd,128,fp16,4096,4096,2,16,1,1,,,4,8,,64,128,2.0000,50.0,0,", 0), 0u) << line;
  EXPECT_NE(line.find("\"a \"\"quoted\"\" reason, with a comma\""), std::string::npos) << line;
  const std::string json = gpu::autotune_json(bplan, {b});
  EXPECT_NE(json.find("\"bwd_block_k\": 128"), std::string::npos) << json;
  EXPECT_NE(json.find("\"skipped\": \"a \\\"quoted\\\" reason, with a comma\""), std::string::npos) << json;
}

// fa3-v1 (registered where the build has CUTLASS's headers): every forward instance of the head dim, the
// hand-kept one marked, and the backward's one tile.
TEST(GpuAutotune, Fa3PlanTimesEveryForwardInstance) {
  const auto& versions = gpu::kernel_versions();
  if (std::none_of(versions.begin(), versions.end(), [](const auto& v) { return v.name == "fa3-v1"; }))
    GTEST_SKIP() << "fa3-v1 is not in this build (no CUTLASS headers)";
  gpu::AutotuneGrid g;
  g.kernel = "fa3-v1";
  g.head_dims = {64, 256};
  g.dtypes = {DType::BF16};
  g.seqlens = {2048};
  g.features = {"plain", "causal"};
  const gpu::AutotunePlan plan = gpu::autotune_plan(g);
  EXPECT_EQ(plan.kernel, "fa3-v1");
  ASSERT_EQ(plan.problems.size(), 4u);
  const auto& v = gpu::kernel_version("fa3-v1");
  std::map<size_t, std::tuple<int, int, int>>
      per;  // problem -> (forward configs, hand ones, backward configs)
  for (const auto& it : plan.items) {
    const AttentionProblem& p = plan.problems[it.problem].problem;
    auto& [nf, hand, nb] = per[it.problem];
    if (it.pass == gpu::TunePass::Fwd) {
      ++nf;
      hand += it.hand ? 1 : 0;
      EXPECT_NE(fa3_fwd_instance(static_cast<int>(p.head_dim), static_cast<int>(it.tile.block_q),
                                 static_cast<int>(it.tile.block_k), it.tile.stages),
                nullptr);
      EXPECT_EQ(runs(v.unsupported(p, it.tile)), "") << gpu::autotune_label(plan, it);
    } else {
      ++nb;
      EXPECT_EQ(runs(gpu::why_no_backward(v, p, it.tile)), "") << gpu::autotune_label(plan, it);
    }
  }
  for (const auto& [i, counts] : per) {
    const int64_t d = plan.problems[i].problem.head_dim;
    const auto [nf, hand, nb] = counts;
    int instances = 0;
    for (const auto& e : kFa3FwdInstances) instances += e.head_dim == d;
    EXPECT_EQ(nf, instances) << d;
    EXPECT_EQ(hand, 1) << d;
    EXPECT_EQ(nb, 1) << d;  // the backward's one tile a head dim (d256's: Bc64)
  }
  const gpu::AutotuneRow r{plan.items[0], 1.0, 100.0, ""};
  EXPECT_EQ(
      gpu::autotune_csv_line(plan, r).rfind("fa3-v1,fwd,64,bf16,2048,2048,8,32,0,0,128,128,12,12,2,", 0), 0u)
      << gpu::autotune_csv_line(plan, r);
  g.head_dims = {80};
  EXPECT_THROW(gpu::autotune_plan(g), InputError);
  // without features, the version's own: fa3-v1 has no bias
  gpu::AutotuneGrid own;
  own.kernel = "fa3-v1";
  own.head_dims = {128};
  own.dtypes = {DType::BF16};
  own.seqlens = {1024};
  const gpu::AutotunePlan own_plan = gpu::autotune_plan(own);
  ASSERT_EQ(own_plan.problems.size(), 2u);
  EXPECT_EQ(own_plan.problems[0].feature, "plain");
  EXPECT_EQ(own_plan.problems[1].feature, "causal");
}

TEST(GpuAutotune, BadGridsAreInputErrors) {
  gpu::AutotuneGrid g;
  g.features = {"causal+alibi"};
  EXPECT_THROW(gpu::autotune_plan(g), InputError);
  g = {};
  g.head_dims = {80};
  EXPECT_THROW(gpu::autotune_plan(g), InputError);
  g = {};
  g.dtypes = {DType::F32};
  EXPECT_THROW(gpu::autotune_plan(g), InputError);
  g = {};
  g.fwd = g.bwd = false;
  EXPECT_THROW(gpu::autotune_plan(g), InputError);
  g = {};
  g.seqlens = {};
  EXPECT_THROW(gpu::autotune_plan(g), InputError);
  g = {};
  g.kernel = "naive-v1";  // no tiles to time: said so, not as an empty grid
  try {
    gpu::autotune_plan(g);
    ADD_FAILURE() << "naive-v1's plan did not throw";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("no tile configs to time"), std::string::npos) << e.what();
  }
  g.kernel = "nope";
  EXPECT_THROW(gpu::autotune_plan(g), InputError);
  if (!gpu::cuda_available()) {
    g = {};
    g.head_dims = {64};
    EXPECT_THROW(gpu::autotune(gpu::kernel_version("fa2-v1"), gpu::autotune_plan(g), gpu::BenchOptions{},
                               [](size_t, const gpu::AutotuneRow&) {}),
                 InputError);
  }
}
