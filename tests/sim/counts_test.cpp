// Analytic counts equal the executed schedule exactly, over a grid of shapes and configs.
#include <gtest/gtest.h>

#include <cmath>

#include "flashsim/sim/kernel_model.h"
#include "flashsim/sim/model.h"
#include "problem_builder.h"
#include "traffic_expect.h"

using namespace flashsim;
using namespace flashsim::sim;
using flashsim::test::expect_same_counts;
using flashsim::test::ProblemBuilder;

namespace {}  // namespace

TEST(Counts, AnalyticEqualsExecutedGrid) {
  struct Win {
    int64_t l, r;
  };
  int cases = 0;
  for (int64_t sq : {1, 100, 256, 300})
    for (int64_t sk : {64, 257, 300})
      for (Win w : {Win{-1, -1}, Win{-1, 0}, Win{32, 0}, Win{17, 40}})
        for (auto [hq, hk] : {std::pair<int64_t, int64_t>{4, 4}, {4, 1}})
          for (auto [bq, bk] : {std::pair<int64_t, int64_t>{128, 64}, {64, 128}, {32, 32}}) {
            const AttentionProblem p = ProblemBuilder()
                                           .batch(2)
                                           .heads(hq, hk)
                                           .seqlen(sq, sk)
                                           .head_dim(64)
                                           .window(w.l, w.r)
                                           .dtype(DType::BF16)
                                           .build();
            TileConfig c;
            c.block_q = bq;
            c.block_k = bk;
            c.bwd_block_q = bk;
            c.bwd_block_k = bq;
            for (const KernelModel* k :
                 {&kernel_model("fwd_fa2"), &kernel_model("bwd_dot_do_o"), &kernel_model("bwd_dq_dk_dv"),
                  &kernel_model("bwd_dq_dk_dv_group"), &kernel_model("bwd_convert_dq"),
                  &kernel_model("fwd_three_pass"), &kernel_model("fwd_two_pass"), &kernel_model("fwd_fa1"),
                  &kernel_model("naive_scores"), &kernel_model("naive_softmax"), &kernel_model("naive_pv"),
                  &kernel_model("naive_bwd_scores"), &kernel_model("naive_bwd_softmax"),
                  &kernel_model("naive_bwd_dp"), &kernel_model("naive_bwd_ds"), &kernel_model("naive_bwd_dv"),
                  &kernel_model("naive_bwd_dq"), &kernel_model("naive_bwd_dk")}) {
              expect_same_counts(analytic_counts(*k, p, c), execute_counts(schedule(*k, p, c)),
                                 p.describe() + " " + c.describe() + " " + k->name);
              ++cases;
            }
            TileConfig partials = c;  // deterministic dQ: per-key-block partials and a reduction kernel
            partials.dq_strategy = DqStrategy::Partials;
            auto bwd = kernels_of(Algorithm::Fa2, Pass::Backward);
            bwd.push_back(&kernel_model("bwd_dq_dk_dv_group"));
            for (const KernelModel* k : bwd) {
              expect_same_counts(analytic_counts(*k, p, partials), execute_counts(schedule(*k, p, partials)),
                                 p.describe() + " " + partials.describe() + " " + k->name);
              ++cases;
            }
          }
  EXPECT_GT(cases, 500);
}

TEST(Counts, Varlen) {
  const AttentionProblem p =
      ProblemBuilder().heads(2).varlen({100, 7, 300}, {50, 400, 300}).causal().dtype(DType::F16).build();
  TileConfig c;
  for (const KernelModel* k :
       {&kernel_model("fwd_fa2"), &kernel_model("bwd_dot_do_o"), &kernel_model("bwd_dq_dk_dv"),
        &kernel_model("bwd_dq_dk_dv_group"), &kernel_model("bwd_convert_dq"), &kernel_model("fwd_fa1"),
        &kernel_model("naive_scores"), &kernel_model("naive_pv"), &kernel_model("naive_bwd_ds"),
        &kernel_model("naive_bwd_dk")})
    expect_same_counts(analytic_counts(*k, p, c), execute_counts(schedule(*k, p, c)), "varlen");
}

TEST(Counts, ForwardIsQPlusKvPerQueryBlock) {
  const AttentionProblem p =
      ProblemBuilder().batch(2).heads(16).seqlen(4096).head_dim(128).dtype(DType::BF16).build();
  TileConfig c;  // 128 x 64
  const auto k = analytic_counts(kernel_model("fwd_fa2"), p, c);
  const int64_t q = 2 * 16 * 4096 * 128 * 2;
  EXPECT_EQ(k.load_bytes(), q + 2 * q * 32);
  EXPECT_EQ(k.store_bytes(), q + 2 * 16 * 4096 * 4);
}

TEST(Counts, CausalSkipsHalf) {
  const AttentionProblem p = ProblemBuilder().seqlen(1024).causal().build();
  TileConfig c;
  c.block_q = c.block_k = 64;
  const auto k = analytic_counts(kernel_model("fwd_fa2"), p, c);
  // 16 query blocks; block m sees m + 1 key blocks.
  EXPECT_EQ(k.tensors[static_cast<size_t>(ref::TensorId::K)].load.bytes, 136LL * 64 * 64 * 4);
}

TEST(Model, SharedMemoryOverflowRejected) {
  const AttentionProblem p = ProblemBuilder().head_dim(256).dtype(DType::BF16).build();
  TileConfig c;
  c.block_q = 256;
  c.block_k = 256;
  c.stages = 2;
  const auto ks = predict(p, c, load_profile("H100-SXM5-80GB"), kernels_of(Algorithm::Fa2, Pass::Forward));
  ASSERT_EQ(ks.size(), 1u);
  EXPECT_FALSE(ks[0].occ.fits);
  EXPECT_NE(ks[0].occ.reason.find("exceeds"), std::string::npos);
}

TEST(Model, AnalyticIsFast) {
  const AttentionProblem p =
      ProblemBuilder().batch(2).heads(16).seqlen(4096).head_dim(128).dtype(DType::BF16).build();
  const auto hw = load_profile("H100-SXM5-80GB");
  const auto t0 = std::chrono::steady_clock::now();
  int n = 0;
  for (int64_t bq : {64, 128, 192, 256})
    for (int64_t bk : {32, 64, 128, 256})
      for (int i = 0; i < 1000; ++i, ++n) {
        TileConfig c;
        c.block_q = bq;
        c.block_k = bk;
        (void)predict_kernel(analytic_counts(kernel_model("fwd_fa2"), p, c), hw);
      }
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_GT(n / s, 100000.0) << n / s << " configs/s";
}

// The partials strategy trades the atomics for plain stores: no reductions, the same dQ, and the reduction
// kernel reads each partial row the main kernel wrote exactly once.
TEST(Counts, PartialsStoreWhatTheReductionReads) {
  const AttentionProblem p =
      ProblemBuilder().batch(2).heads(4).seqlen(1000).head_dim(128).causal().dtype(DType::BF16).build();
  TileConfig c;
  c.dq_strategy = DqStrategy::Partials;
  const auto main = analytic_counts(kernel_model("bwd_dq_dk_dv"), p, c);
  const auto red = analytic_counts(kernel_model("bwd_convert_dq"), p, c);
  const auto acc = static_cast<size_t>(ref::TensorId::DqAccum);
  EXPECT_EQ(main.reduce_bytes(), 0);
  EXPECT_GT(main.tensors[acc].store.bytes, 0);
  EXPECT_EQ(main.tensors[acc].store.bytes, red.tensors[acc].load.bytes);
  EXPECT_EQ(analytic_counts(kernel_model("bwd_dot_do_o"), p, c).tensors[acc].store.bytes, 0);
}

// A thread holds at most 255 registers: FA2's own tiles fit, 2 warps holding 256 query rows of O and S do
// not.
TEST(Model, AccumulatorRegistersLimitTiles) {
  const AttentionProblem p = ProblemBuilder().head_dim(128).seqlen(4096).dtype(DType::BF16).build();
  const auto hw = load_profile("H100-SXM5-80GB");
  TileConfig fa2;  // Br128 Bc64 4 warps forward, Br64 Bc128 8 warps backward
  for (const auto& k : predict(p, fa2, hw, kernels_of(Algorithm::Fa2, Pass::Forward)))
    EXPECT_TRUE(k.occ.fits) << k.occ.reason;
  for (const auto& k : predict(p, fa2, hw, kernels_of(Algorithm::Fa2, Pass::Backward)))
    EXPECT_TRUE(k.occ.fits) << k.occ.reason;
  TileConfig wide = fa2;
  wide.block_q = 256;
  wide.block_k = 64;
  wide.warps = 2;
  const auto ks = predict(p, wide, hw, kernels_of(Algorithm::Fa2, Pass::Forward));
  EXPECT_FALSE(ks[0].occ.fits);
  EXPECT_NE(ks[0].occ.reason.find("registers per thread"), std::string::npos);
}

// The time model's load imbalance: equal CTAs give ceil(waves) / waves; unequal ones (causal, partial tiles,
// varlen) are list-scheduled, and the closed form's per-CTA work gives the same imbalance as the schedule's.
TEST(Model, ImbalanceAnalyticEqualsExecuted) {
  const auto hw = load_profile("H100-SXM5-80GB");
  const AttentionProblem p =
      ProblemBuilder().batch(2).heads(16).seqlen(4096).head_dim(128).dtype(DType::BF16).build();
  TileConfig c;
  const auto uniform = predict_kernel(analytic_counts(kernel_model("fwd_fa2"), p, c), hw);
  EXPECT_DOUBLE_EQ(uniform.imbalance, std::ceil(uniform.waves) / uniform.waves);
  for (int shape = 0; shape < 3; ++shape) {
    AttentionProblem q = p;
    if (shape == 0) q.window_right = 0;              // causal
    if (shape == 1) q.seqlen_q = q.seqlen_k = 1000;  // partial tiles
    if (shape == 2) {                                // varlen, causal
      q.seqlens_q = q.seqlens_k = {300, 2000};
      q.seqlen_q = q.seqlen_k = 2000;
      q.window_right = 0;
    }
    for (const KernelModel* k : {&kernel_model("fwd_fa2"), &kernel_model("bwd_dq_dk_dv")}) {
      const auto a = predict_kernel(analytic_counts(*k, q, c), hw);
      const auto e = predict_kernel(execute_counts(schedule(*k, q, c)), hw);
      EXPECT_NEAR(a.imbalance, e.imbalance, 1e-9) << q.describe() << " " << k->name;
      EXPECT_NEAR(a.time_s, e.time_s, 1e-9 * e.time_s) << q.describe();
      if (shape == 0) {
        EXPECT_GT(a.imbalance, 1.1) << k->name;  // long CTAs launched last
      }
    }
  }
}

TEST(Counts, GroupBackwardLoadsKvOncePerKvHead) {
  // flashsim's main backward kernel (a CTA per kv head, its group's query heads in turn) moves FA2's bytes for
  // MHA; with GQA it reads K and V and stores dK and dV once per kv head, where FA2's reads them per query head.
  TileConfig c;
  const auto mha =
      ProblemBuilder().batch(2).heads(8, 8).seqlen(300, 300).head_dim(64).dtype(DType::BF16).build();
  const auto gqa =
      ProblemBuilder().batch(2).heads(8, 2).seqlen(300, 300).head_dim(64).dtype(DType::BF16).build();
  const auto& fa2 = kernel_model("bwd_dq_dk_dv");
  const auto& group = kernel_model("bwd_dq_dk_dv_group");
  const auto bytes = [](const KernelCounts& k, ref::TensorId t, bool load) {
    const auto& tt = k.tensors[static_cast<size_t>(t)];
    return load ? tt.load.bytes : tt.store.bytes;
  };
  for (auto t : {ref::TensorId::K, ref::TensorId::V, ref::TensorId::Q, ref::TensorId::dO})
    EXPECT_EQ(bytes(analytic_counts(group, mha, c), t, true), bytes(analytic_counts(fa2, mha, c), t, true));
  const auto g = analytic_counts(group, gqa, c), f = analytic_counts(fa2, gqa, c);
  for (auto t : {ref::TensorId::K, ref::TensorId::V}) EXPECT_EQ(4 * bytes(g, t, true), bytes(f, t, true));
  for (auto t : {ref::TensorId::dK, ref::TensorId::dV}) EXPECT_EQ(4 * bytes(g, t, false), bytes(f, t, false));
  for (auto t : {ref::TensorId::Q, ref::TensorId::dO}) EXPECT_EQ(bytes(g, t, true), bytes(f, t, true));
  EXPECT_EQ(g.launch.grid_z, 2);
  EXPECT_DOUBLE_EQ(g.mma_flops, f.mma_flops);
}
