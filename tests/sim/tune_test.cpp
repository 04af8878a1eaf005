// sim tune and the per-CTA time model: the terms separate configs that move the same bytes, the instance
// space is what fa2-v1 compiles, the check's statistics.
#include "flashsim/sim/tune.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <set>

#include "flashsim/error.h"
#include "flashsim/families/fa2/instances.h"
#include "flashsim/families/fa3/instances.h"
#include "flashsim/sim/cta_model.h"
#include "flashsim/sim/hardware.h"
#include "flashsim/sim/kernel_model.h"
#include "flashsim/sim/kernel_resources.h"
#include "flashsim/sim/sweep.h"

using namespace flashsim;
using namespace flashsim::sim;

namespace {

AttentionProblem issue_problem() {  // the issue's example: b4 h32/8 n8192 d128 causal bf16
  AttentionProblem p;
  p.batch = 4;
  p.heads_q = 32;
  p.heads_kv = 8;
  p.seqlen_q = p.seqlen_k = 8192;
  p.head_dim = p.head_dim_v = 128;
  p.window_right = 0;
  p.dtype = DType::BF16;
  return p;
}

KernelPrediction forward(const AttentionProblem& p, const TileConfig& c) {
  const auto& m = kernel_model("fwd_fa2");
  return predict_kernel(analytic_counts(m, p, c), load_profile("H100-SXM5-80GB"));
}

}  // namespace

TEST(Spearman, KnownValues) {
  EXPECT_DOUBLE_EQ(spearman({1, 2, 3, 4}, {10, 20, 30, 40}), 1.0);
  EXPECT_DOUBLE_EQ(spearman({1, 2, 3, 4}, {4, 3, 2, 1}), -1.0);
  // ties share their mean rank: ranks {1, 2.5, 2.5, 4} against {1, 2, 3, 4}: 4.5 / sqrt(4.5 x 5)
  EXPECT_NEAR(spearman({1, 2, 2, 3}, {1, 2, 3, 4}), 4.5 / std::sqrt(22.5), 1e-12);
  EXPECT_EQ(spearman({1}, {2}), 0.0);
}

TEST(TuneFeatures, EveryCombinationPlainFirst) {
  const auto f = feature_combinations({"causal", "dbias"});
  ASSERT_EQ(f.size(), 4u);
  EXPECT_EQ(f[0].name(), "plain");
  std::set<std::string> names;
  for (const auto& x : f) names.insert(x.name());
  EXPECT_EQ(names, (std::set<std::string>{"plain", "causal", "bias", "causal+bias"}));
  EXPECT_TRUE(f[3].pipeline());
  EXPECT_THROW(feature_combinations({"nope"}), InputError);
}

TEST(TuneSpace, InstancesAreWhatFa2V1Compiles) {
  for (int64_t d : {64, 96, 128, 256}) {
    const auto fwd = tune_space(TuneKernel::Fa2Fwd, TuneSpace::Instances, d);
    ASSERT_FALSE(fwd.empty()) << d;
    for (const auto& c : fwd)
      EXPECT_TRUE(fa2_fwd_instantiated(d, c.block_q, c.block_k, c.warps, c.stages)) << c.describe();
    size_t expected = 0;
    for (const auto& e : kFa2FwdInstances)
      for (int st = kFa2FwdMinStages; st <= kFa2FwdMaxStages; ++st) expected += e.head_dim == d;
    EXPECT_EQ(fwd.size(), expected);
    for (const auto& c : tune_space(TuneKernel::Fa2Bwd, TuneSpace::Instances, d))
      EXPECT_TRUE(fa2_bwd_instantiated(d, c.bwd_block_q, c.bwd_block_k, c.warps)) << c.describe();
  }
  EXPECT_EQ(tune_space(TuneKernel::Fa2Fwd, TuneSpace::All, 128).size(), sweep_space(Pass::Forward).size());
}

// Every instance runs on the H100 (at its fewest stages): its shared memory fits the profile's limit a block
// (227 KB, cudaDevAttrMaxSharedMemoryPerBlockOptin), the one limit gpu/'s largest target offers.
TEST(TuneSpace, EveryInstanceFitsTheH100) {
  const int64_t limit = load_profile("H100-SXM5-80GB").shared_memory_per_block;
  EXPECT_EQ(limit, 227 * 1024);
  for (const auto& e : kFa2FwdInstances)
    EXPECT_TRUE(fa2_fwd_fits(e.head_dim, e.block_q, e.block_k, kFa2FwdMinStages, limit)) << e.head_dim;
  for (const auto& e : kFa2BwdInstances)
    EXPECT_TRUE(fa2_bwd_fits(e.head_dim, e.block_q, e.block_k, limit)) << e.head_dim;
}

// The issue's complaint: configs that differ only in stages, Q in registers or a shared K/V buffer tied.
TEST(CtaModel, SeparatesStagesQregAndSharedKv) {
  const auto p = issue_problem();
  TileConfig base;  // Br128 Bc32 w4 st1: room for Q's fragments in registers
  base.block_k = 32;
  TileConfig st2 = base, qreg = base, kvs = base;
  st2.stages = 2;
  qreg.q_in_registers = true;
  kvs.kv_shared_buffer = true;
  const auto b = forward(p, base), s = forward(p, st2), q = forward(p, qreg), k = forward(p, kvs);
  ASSERT_TRUE(b.cta.modelled);
  // a shared K/V buffer leaves the V load exposed: slower; Q in registers reads less shared memory
  EXPECT_GT(k.cta.exposed_load_s, b.cta.exposed_load_s);
  EXPECT_LT(q.counts.launch.step.smem_bytes, b.counts.launch.step.smem_bytes);
  EXPECT_GT(q.counts.launch.step.accumulator_regs,
            b.counts.launch.step.accumulator_regs);  // ... and holds Q's fragments in registers
  EXPECT_LE(s.cta.exposed_load_s, b.cta.exposed_load_s);
  EXPECT_GT(k.cta.chain_step_s, b.cta.chain_step_s);  // the exposed V load lengthens a CTA's step ...
  EXPECT_GE(k.time_s, b.time_s);                      // ... which other CTAs may hide, never shorten
  // At d64 Q's fragments fit without spilling (at d128 the spill's traffic can cancel what Q saves): less shared
  // memory, a different time.
  auto p64 = p;
  p64.head_dim = p64.head_dim_v = 64;
  const auto b64 = forward(p64, base), q64 = forward(p64, qreg);
  EXPECT_EQ(q64.cta.spill_bytes, 0);
  EXPECT_NE(q64.time_s, b64.time_s) << "Q in registers must change the prediction";
}

TEST(CtaModel, MoreWarpsForTheSameRowsReadMoreSharedMemoryPerFlop) {
  const auto p = issue_problem();
  TileConfig w4, w8;
  w8.warps = 8;  // Br128: 16 rows a warp instead of 32, each warp still reads all of K and V
  const auto a = forward(p, w4).counts.launch.step, b = forward(p, w8).counts.launch.step;
  EXPECT_GT(b.smem_bytes / b.mma_flops, a.smem_bytes / a.mma_flops);
  EXPECT_LT(b.regs, a.regs);  // half the accumulators a thread
}

TEST(CtaModel, RegistersOver255Spill) {
  auto p = issue_problem();
  TileConfig c;
  c.block_k = 128;  // d128 Br128 Bc128 w4: 32 x 256 / 32 = 256 accumulator registers
  const auto k = forward(p, c);
  EXPECT_GT(k.counts.launch.step.accumulator_regs + kMinRegisterOverhead, kMaxRegistersPerThread);
  // the occupancy check refuses accumulators over 255 registers outright
  EXPECT_FALSE(k.occ.fits);
  c.block_k = 64;
  const auto ok = forward(p, c);
  EXPECT_TRUE(ok.occ.fits);
  EXPECT_EQ(ok.cta.spill_bytes, 0);  // 192 accumulators + 63: at the limit, as ptxas builds it
  c.block_k = 32;
  c.q_in_registers = true;  // 160 + 64 registers of Q fragments: spills
  EXPECT_GT(forward(p, c).cta.spill_bytes, 0);
}

// A scheduler interleaves the warps it holds, from one CTA or from two: an 8-warp CTA of 16 rows a warp alone on
// its SM and two 4-warp CTAs of 16 rows a warp issue the same instructions a warp at 2 warps a scheduler. Only
// the lone CTA's warps run in phase (lockstep_cpi_factor, ncu's cycles per instruction).
TEST(CtaModel, WarpsOfOneCtaInterleaveLikeWarpsOfTwo) {
  auto hw = load_profile("H100-SXM5-80GB");
  auto p = issue_problem();
  p.window_right = -1;
  TileConfig w4, w8;
  w4.block_q = 64;  // Br64 w4 and Br128 w8: 16 rows a warp
  w8.warps = 8;
  const auto& m = kernel_model("fwd_fa2");
  const auto c4 = analytic_counts(m, p, w4), c8 = analytic_counts(m, p, w8);
  ASSERT_DOUBLE_EQ(c4.launch.step.warp_instructions, c8.launch.step.warp_instructions);
  hw.lockstep_cpi_factor = 0;
  const auto a = cta_time(c4, 2, 1.0, hw), b = cta_time(c8, 1, 1.0, hw);
  ASSERT_TRUE(a.modelled && b.modelled);
  // the same work a warp, 2 warps a scheduler either way: the chains agree but for the step's barriers and loads
  EXPECT_NEAR(b.t_chain / a.t_chain, 1.0, 0.1);
  hw.lockstep_cpi_factor = 1.2;
  const auto a2 = cta_time(c4, 2, 1.0, hw), b2 = cta_time(c8, 1, 1.0, hw);
  EXPECT_DOUBLE_EQ(a2.t_chain, a.t_chain);  // two CTAs an SM: not in phase
  EXPECT_GT(b2.t_chain, 1.05 * b.t_chain);  // its issue 1.2x slower, part of it under the next tile's load
  // more warps a scheduler (3 CTAs) take longer a round, not less: the scheduler issues for all of them
  const auto a3 = cta_time(c4, 3, 1.0, hw);
  EXPECT_NEAR(a3.t_chain / a.t_chain, 1.0, 0.15);
}

// ptxas's registers replace the estimate for a config fa2-v1 compiles: d64 Br64 Bc64 w4 st2 with a bias holds
// its scores and bias indices in 147 registers, 3 CTAs an SM, where the estimate (accumulators + 102) allows 2.
TEST(KernelResources, CompiledRegistersSetTheOccupancy) {
  const auto table = KernelResources::parse(
      "pass,head_dim,block_q,block_k,warps,kernel_warps,stages,dtype,pipeline,arch,registers,stack_bytes,"
      "local_bytes,smem_bytes,ldl,stl,loop_ldl,loop_stl,loop_hmma\n"
      "fwd,64,64,64,4,4,2,bf16,1,sm_90,147,0,0,40960,0,0,0,0,64\n"
      "bwd,64,64,128,4,8,,bf16,0,sm_90,255,8,0,133120,1,1,1,0,320\n",
      "test");
  ASSERT_EQ(table.size(), 2u);
  auto p = tune_problem(8, 32, 64, DType::BF16, parse_tune_features("bias"), 2048);
  TileConfig c;
  c.block_q = 64;
  c.block_k = 64;
  c.stages = 2;
  ASSERT_NE(table.find(Pass::Forward, p, c), nullptr);
  EXPECT_EQ(table.find(Pass::Forward, p, c)->registers, 147);
  TileConfig st1 = c;
  st1.stages = 1;
  EXPECT_EQ(table.find(Pass::Forward, p, st1), nullptr);  // not in the table
  auto plain = p;
  plain.bias = BroadcastShape::None;
  EXPECT_EQ(table.find(Pass::Forward, plain, c), nullptr);  // the plain kernel is another one
  TileConfig b;
  b.bwd_block_q = 64;
  b.bwd_block_k = 128;
  ASSERT_NE(table.find(Pass::Backward, plain, b), nullptr);
  EXPECT_EQ(table.find(Pass::Backward, plain, b)->registers, 255);

  const auto hw = load_profile("H100-SXM5-80GB");
  const auto kernels = kernels_of(Algorithm::Fa2, Pass::Forward);
  bool fits = true;
  const auto estimated = predict_config(p, c, hw, kernels, nullptr, fits);
  const auto compiled = predict_config(p, c, hw, kernels, nullptr, fits, &table);
  EXPECT_EQ(compiled.regs, 147);
  EXPECT_EQ(compiled.ctas_per_sm, 3);  // 147 -> 152 registers x 128 threads: 3 x 19456 <= 65536
  EXPECT_LT(estimated.ctas_per_sm, 3);
  EXPECT_LT(compiled.time_s, estimated.time_s);
}

TEST(KernelResources, BuiltInTablesHoldEveryInstance) {
  for (const char* arch : {"sm_80", "sm_90"}) {
    const auto table = KernelResources::builtin(arch);
    for (int64_t d : {64, 96, 128, 256})
      for (TuneKernel k : {TuneKernel::Fa2Fwd, TuneKernel::Fa2Bwd})
        for (const auto& c : tune_space(k, TuneSpace::Instances, d))
          for (DType t : {DType::BF16, DType::F16})
            for (const char* f : {"plain", "bias"}) {
              const auto p = tune_problem(1, 1, d, t, parse_tune_features(f), 128);
              EXPECT_NE(table.find(k == TuneKernel::Fa2Fwd ? Pass::Forward : Pass::Backward, p, c), nullptr)
                  << arch << " d" << d << " " << tune_config_name(k, c) << " " << f;
            }
  }
  EXPECT_TRUE(KernelResources::builtin("sm_75").empty());
  EXPECT_TRUE(KernelResources::builtin("").empty());
}

TEST(KernelResources, MalformedTablesAreInputErrors) {
  EXPECT_THROW(KernelResources::parse("", "t"), InputError);
  EXPECT_THROW(KernelResources::parse("pass,head_dim\nfwd,64\n", "t"), InputError);  // columns missing
  const std::string header =
      "pass,head_dim,block_q,block_k,warps,kernel_warps,stages,dtype,pipeline,arch,registers,stack_bytes,"
      "local_bytes,smem_bytes,ldl,stl,loop_ldl,loop_stl,loop_hmma\n";
  EXPECT_THROW(KernelResources::parse(header + "fwd,64,64,64,4,4,2,bf16,1,sm_90,300,0,0,0,0,0,0,0,64\n", "t"),
               InputError);  // more than 255 registers
  EXPECT_THROW(KernelResources::parse(header + "fwd,64,64,64,4,4,2,fp8,1,sm_90,100,0,0,0,0,0,0,0,64\n", "t"),
               InputError);
  EXPECT_THROW(KernelResources::parse(header + "fwd,x,64,64,4,4,2,bf16,1,sm_90,100,0,0,0,0,0,0,0,64\n", "t"),
               InputError);
  EXPECT_THROW(KernelResources::from_file("/nonexistent/fa2.csv"), InputError);
}

TEST(CtaModel, NotModelledWithoutTheProfileRates) {
  auto hw = load_profile("H100-SXM5-80GB");
  hw.mma_sync_flops = 0;
  hw.measured_steps.clear();  // the instance's measured costs (fa2.step_costs_h100) need no rates
  const auto& m = kernel_model("fwd_fa2");
  const auto k = predict_kernel(analytic_counts(m, issue_problem(), TileConfig{}), hw);
  EXPECT_FALSE(k.cta.modelled);
  EXPECT_NE(k.bound, "smem");
}

TEST(Tune, RanksFastestFirstAndNamesTheRunnerUp) {
  TuneRequest r;
  r.head_dims = {128};
  r.dtypes = {DType::BF16};
  r.seqlens = {4096};
  r.features = feature_combinations({"causal"});
  const auto out = tune(r, load_profile("H100-SXM5-80GB"));
  ASSERT_EQ(out.entries.size(), 2u);
  for (const auto& e : out.entries) {
    ASSERT_GE(e.ranked.size(), 2u);
    for (size_t i = 1; i < e.ranked.size(); ++i) EXPECT_LE(e.ranked[i - 1].time_s, e.ranked[i].time_s);
    EXPECT_NE(e.reason().find("runner-up " + tune_config_name(TuneKernel::Fa2Fwd, e.ranked[1].config)),
              std::string::npos);
  }
  EXPECT_EQ(out.entries[0].problem.batch, 4);     // 16K tokens at seqlen 4K
  EXPECT_EQ(out.entries[0].problem.heads_q, 16);  // width 2048 at d128
}

// The launch table keeps the hand-kept config unless the model's best beats it by kTuneResolution.
TEST(Tune, TableKeepsTheHandConfigUnlessClearlyBeaten) {
  TuneRequest r;
  r.head_dims = {64, 96, 128, 256};
  r.dtypes = {DType::BF16};
  r.seqlens = {1024, 16384};
  const auto hw = load_profile("H100-SXM5-80GB");
  int kept = 0, replaced = 0;
  for (TuneKernel k : {TuneKernel::Fa2Fwd, TuneKernel::Fa2Bwd}) {
    r.kernel = k;
    for (const auto& e : tune(r, hw).entries) {
      ASSERT_FALSE(e.ranked.empty());
      ASSERT_GE(e.hand, 0) << "the hand-kept config is one of fa2-v1's instances";
      const auto& hand = e.ranked[static_cast<size_t>(e.hand)];
      const auto& pick = e.table_pick();
      if (hand.time_s < (1 + kTuneResolution) * e.ranked[0].time_s) {
        EXPECT_EQ(&pick, &hand);
        kept += e.keeps_hand();
        if (e.keeps_hand()) {
          EXPECT_NE(e.reason().find("the hand-kept config, kept"), std::string::npos);
        }
      } else {
        EXPECT_EQ(&pick, &e.ranked[0]);
        ++replaced;
      }
    }
  }
  EXPECT_GT(kept, 0);  // both happen on this grid
  EXPECT_GT(replaced, 0);
}

TEST(TuneCheck, AgreesWithItsOwnPredictionsAndNotWithTheirReverse) {
  // a "measured" CSV made of the model's own times (and of their reverse): the check's statistics
  const auto hw = load_profile("H100-SXM5-80GB");
  TuneRequest r;
  r.head_dims = {64};
  r.dtypes = {DType::BF16};
  r.seqlens = {2048};
  r.features = feature_combinations({});
  const auto out = tune(r, hw);
  ASSERT_EQ(out.entries.size(), 1u);
  const auto& e = out.entries[0];
  const std::string path = ::testing::TempDir() + "tune_check.csv";
  for (bool reverse : {false, true}) {
    {
      std::ofstream f(path);
      f << "pass,head_dim,dtype,seqlen_q,seqlen_k,batch,heads,causal,bias,block_q,block_k,warps,stages,ms,"
           "hand\n";
      for (size_t i = 0; i < e.ranked.size(); ++i) {
        const auto& c = e.ranked[i].config;
        const double ms = reverse ? 1.0 / e.ranked[i].time_s : e.ranked[i].time_s * 1e3;
        f << "fwd,64,bf16,2048,2048," << e.problem.batch << "," << e.problem.heads_q << ",0,0," << c.block_q
          << "," << c.block_k << "," << c.warps << "," << c.stages << "," << ms << "," << (i == 1 ? 1 : 0)
          << "\n";
      }
    }
    const auto c = check_tune(read_autotune_csv(path), hw, tune_resources(r, hw));
    ASSERT_EQ(c.groups.size(), 1u);
    EXPECT_EQ(c.entries, 1);
    if (!reverse) {
      EXPECT_NEAR(c.groups[0].spearman_mean, 1.0, 1e-12);
      EXPECT_EQ(c.within_5, 1);
      EXPECT_EQ(c.not_slower_than_hand, 1);
    } else {
      EXPECT_LT(c.groups[0].spearman_mean, 0.0);
      EXPECT_EQ(c.within_10, 0);
    }
  }
  std::remove(path.c_str());
}

TEST(TuneCheck, BadCsvIsAnInputError) {
  const std::string path = ::testing::TempDir() + "tune_bad.csv";
  {
    std::ofstream f(path);
    f << "pass,head_dim\nfwd,64\n";
  }
  EXPECT_THROW(read_autotune_csv(path), InputError);
  EXPECT_THROW(read_autotune_csv(path + ".missing"), InputError);
  std::remove(path.c_str());
}

// ---- fa3-fwd: fa3-v1's forward instances (families/fa3), ranked by the fwd_fa3 model

TEST(TuneFa3, SpaceIsTheInstancesHandKeptFirst) {
  for (int d : {64, 96, 128, 256}) {
    const auto space = tune_space(TuneKernel::Fa3Fwd, TuneSpace::Instances, d);
    size_t expected = 0;
    for (const auto& e : kFa3FwdInstances) expected += e.head_dim == d;
    ASSERT_EQ(space.size(), expected) << d;
    EXPECT_GE(space.size(), 2u) << d << ": nothing to rank";
    EXPECT_EQ(space[0].block_k, fa3_fwd_instance(d)->block_k) << d;
    EXPECT_EQ(space[0].stages, fa3_fwd_instance(d)->stages) << d;
    for (const auto& c : space) {
      EXPECT_NE(fa3_fwd_instance(d, static_cast<int>(c.block_q), static_cast<int>(c.block_k), c.stages),
                nullptr);
      EXPECT_LE(fa3_fwd_smem_bytes(d, static_cast<int>(c.block_q), static_cast<int>(c.block_k), c.stages),
                227 * 1024)
          << c.describe();
    }
    EXPECT_EQ(tune_space(TuneKernel::Fa3Fwd, TuneSpace::All, d).size(), space.size());
  }
  EXPECT_TRUE(tune_space(TuneKernel::Fa3Fwd, TuneSpace::Instances, 80).empty());
  EXPECT_EQ(parse_tune_kernel("fa3-fwd"), TuneKernel::Fa3Fwd);
  EXPECT_EQ(tune_kernel_name(TuneKernel::Fa3Fwd), "fa3-fwd");
}

TEST(TuneFa3, RanksEveryInstanceWithTheModelsOwnTimes) {
  const auto hw = load_profile("H100-SXM5-80GB");
  TuneRequest r;
  r.kernel = TuneKernel::Fa3Fwd;
  r.head_dims = {64, 128};
  r.dtypes = {DType::BF16};
  r.seqlens = {1024, 8192};
  r.features = feature_combinations({"causal"});
  const auto out = tune(r, hw);
  ASSERT_EQ(out.entries.size(), 2u * 2 * 2);
  for (const auto& e : out.entries) {
    ASSERT_EQ(e.ranked.size(), static_cast<size_t>(e.configs)) << e.problem.describe();  // all fit an H100
    for (size_t i = 1; i < e.ranked.size(); ++i) EXPECT_LE(e.ranked[i - 1].time_s, e.ranked[i].time_s);
    // each row is fwd_fa3's prediction of that tile on the entry's problem
    for (const auto& row : e.ranked) {
      bool fits = true;
      const auto direct =
          predict_config(e.problem, row.config, hw, {&kernel_model("fwd_fa3")}, nullptr, fits);
      EXPECT_DOUBLE_EQ(direct.time_s, row.time_s) << row.config.describe();
    }
    ASSERT_GE(e.hand, 0);
    EXPECT_EQ(e.ranked[static_cast<size_t>(e.hand)].config.block_k,
              fa3_fwd_instance(static_cast<int>(e.head_dim))->block_k);
  }
}

TEST(TuneFa3, FeaturesItLacksAndUnknownHeadDimsAreInputErrors) {
  const auto hw = load_profile("H100-SXM5-80GB");
  TuneRequest r;
  r.kernel = TuneKernel::Fa3Fwd;
  r.head_dims = {128};
  r.seqlens = {1024};
  r.features = feature_combinations({"bias"});
  EXPECT_THROW(tune(r, hw), InputError);
  r.features = feature_combinations({"softcap"});
  EXPECT_NO_THROW(tune(r, hw));
  r.head_dims = {80};
  EXPECT_THROW(tune(r, hw), InputError);
}

TEST(TuneFa3, CheckReadsItsRowsAndSkipsItsSingleTileBackward) {
  // an autotune CSV of fa3-v1 (flashsim-gpu autotune --kernel fa3-v1): the forward rows are ranked as fa3-fwd,
  // the backward's one tile is left out; times equal to the model's give rank correlation 1, reversed -1
  const auto hw = load_profile("H100-SXM5-80GB");
  TuneRequest r;
  r.kernel = TuneKernel::Fa3Fwd;
  r.head_dims = {128};
  r.dtypes = {DType::BF16};
  r.seqlens = {4096};
  r.features = feature_combinations({});
  const auto out = tune(r, hw);
  const auto& e = out.entries.at(0);
  ASSERT_GE(e.ranked.size(), 3u);
  const std::string path = ::testing::TempDir() + "tune_fa3_check.csv";
  for (bool reverse : {false, true}) {
    {
      std::ofstream f(path);
      f << "kernel,pass,head_dim,dtype,seqlen_q,seqlen_k,batch,heads,causal,bias,block_q,block_k,warps,"
           "kernel_warps,stages,bwd_block_q,bwd_block_k,ms,tflops,hand,table,skipped\n";
      for (size_t i = 0; i < e.ranked.size(); ++i) {
        const auto& c = e.ranked[i].config;
        const double ms = reverse ? 1.0 / e.ranked[i].time_s : e.ranked[i].time_s * 1e3;
        f << "fa3-v1,fwd,128,bf16,4096,4096," << e.problem.batch << "," << e.problem.heads_q << ",0,0,"
          << c.block_q << "," << c.block_k << ",12,12," << c.stages << ",,," << ms << ",1,"
          << (static_cast<int>(i) == e.hand) << "," << (static_cast<int>(i) == e.hand) << ",\n";
      }
      f << "fa3-v1,bwd,128,bf16,4096,4096," << e.problem.batch << "," << e.problem.heads_q
        << ",0,0,,,12,12,,64,128,1.5,1,1,1,\n";
    }
    const auto rows = read_autotune_csv(path);
    ASSERT_EQ(rows.size(), e.ranked.size());
    for (const auto& row : rows) EXPECT_EQ(row.kernel, TuneKernel::Fa3Fwd);
    const auto c = check_tune(rows, hw, KernelResources{});
    ASSERT_EQ(c.groups.size(), 1u);
    EXPECT_EQ(c.groups[0].kernel, TuneKernel::Fa3Fwd);
    if (!reverse) {
      EXPECT_NEAR(c.groups[0].spearman_mean, 1.0, 1e-12);
      EXPECT_EQ(c.within_5, 1);
    } else {
      EXPECT_NEAR(c.groups[0].spearman_mean, -1.0, 1e-12);
    }
  }
  {
    std::ofstream f(path);
    f << "kernel,pass,head_dim,dtype,seqlen_q,batch,heads,causal,bias,block_q,block_k,warps,stages,ms\n"
         "fa9-v1,fwd,128,bf16,4096,8,16,0,0,128,128,12,2,1.0\n";
  }
  EXPECT_THROW(read_autotune_csv(path), InputError);  // a version tune does not rank
  std::remove(path.c_str());
}
