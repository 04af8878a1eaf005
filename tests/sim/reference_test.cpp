// The CPU reference algorithms, run with a counting observer, move what the FA2 schedules say.
#include <gtest/gtest.h>

#include "flashsim/inputs.h"
#include "flashsim/ref/attention.h"
#include "flashsim/sim/counting_observer.h"
#include "flashsim/sim/kernel_model.h"
#include "problem_builder.h"
#include "traffic_expect.h"

using namespace flashsim;
using namespace flashsim::sim;
using flashsim::test::expect_same_traffic;
using flashsim::test::ProblemBuilder;

namespace {

void check(const AttentionProblem& p, const TileConfig& c, const std::string& what) {
  const auto in = make_random_inputs(p, 1);
  CountingObserver obs(p);
  ref::RunOptions opt;
  opt.observer = &obs;
  const auto fwd = ref::forward(p, in, Algorithm::Fa2, c, opt);
  (void)ref::backward(p, in, fwd, Algorithm::Fa2, c, opt);
  const auto& ks = obs.kernels();
  for (const KernelModel* k : {&kernel_model("fwd_fa2"), &kernel_model("bwd_dot_do_o"),
                               &kernel_model("bwd_dq_dk_dv"), &kernel_model("bwd_convert_dq")}) {
    const auto name = k->name;
    ASSERT_TRUE(ks.count(name)) << what << " no kernel " << name;
    expect_same_traffic(ks.at(name), analytic_counts(*k, p, c), what + " " + name);
  }
}

void check_forward(const AttentionProblem& p, const TileConfig& c, Algorithm a, const KernelModel& k) {
  const auto in = make_random_inputs(p, 2);
  CountingObserver obs(p);
  ref::RunOptions opt;
  opt.observer = &obs;
  (void)ref::forward(p, in, a, c, opt);
  const auto& name = k.name;
  ASSERT_TRUE(obs.kernels().count(name)) << name;
  expect_same_traffic(obs.kernels().at(name), analytic_counts(k, p, c), name);
}

}  // namespace

TEST(Reference, ThreeAndTwoPassMatchSchedules) {
  const AttentionProblem p =
      ProblemBuilder().batch(2).heads(2, 1).seqlen(200, 300).head_dim(32).causal().dtype(DType::BF16).build();
  TileConfig c;
  check_forward(p, c, Algorithm::ThreePass, kernel_model("fwd_three_pass"));
  check_forward(p, c, Algorithm::TwoPass, kernel_model("fwd_two_pass"));
  check_forward(p, c, Algorithm::Fa1, kernel_model("fwd_fa1"));
  check_forward(p, c, Algorithm::Naive, kernel_model("naive_scores"));
  check_forward(p, c, Algorithm::Naive, kernel_model("naive_softmax"));
  check_forward(p, c, Algorithm::Naive, kernel_model("naive_pv"));
}

// FP8 inputs (1-byte q, k, v; a bf16 o): the forwards move what their schedules say.
TEST(Reference, Fp8ForwardsMatchSchedules) {
  const AttentionProblem p = ProblemBuilder()
                                 .batch(2)
                                 .heads(4, 2)
                                 .seqlen(150, 230)
                                 .head_dim(32)
                                 .causal()
                                 .fp8(DType::E4M3, Descale::PerHead)
                                 .build();
  TileConfig c;
  check_forward(p, c, Algorithm::Fa2, kernel_model("fwd_fa2"));
  check_forward(p, c, Algorithm::ThreePass, kernel_model("fwd_three_pass"));
  check_forward(p, c, Algorithm::TwoPass, kernel_model("fwd_two_pass"));
  check_forward(p, c, Algorithm::Fa1, kernel_model("fwd_fa1"));
  check_forward(p, c, Algorithm::Naive, kernel_model("naive_pv"));
}

TEST(Reference, CountsMatchScheduleFull) {
  const AttentionProblem p =
      ProblemBuilder().batch(2).heads(2).seqlen(256).head_dim(32).dtype(DType::BF16).build();
  TileConfig c;
  check(p, c, "full");
}

TEST(Reference, CountsMatchScheduleCausalGqa) {
  const AttentionProblem p =
      ProblemBuilder().batch(1).heads(4, 2).seqlen(256).head_dim(32).causal().dtype(DType::F16).build();
  TileConfig c;
  check(p, c, "causal gqa");
}

TEST(Reference, CountsMatchSchedulePartialWindow) {
  const AttentionProblem p = ProblemBuilder()
                                 .batch(2)
                                 .heads(2, 1)
                                 .seqlen(200, 300)
                                 .head_dim(32)
                                 .window(70, 10)
                                 .dtype(DType::F16)
                                 .build();
  TileConfig c;
  check(p, c, "window");
}

TEST(Reference, CountsMatchScheduleVarlenCausal) {
  const AttentionProblem p = ProblemBuilder()
                                 .heads(2)
                                 .varlen({100, 7, 300}, {150, 400, 300})
                                 .head_dim(32)
                                 .causal()
                                 .dtype(DType::BF16)
                                 .build();
  TileConfig c;
  check(p, c, "varlen causal");
}

namespace {

// The reference's naive backward reports the schedule's seven kernels (closed form and executed).
void check_naive_backward(const AttentionProblem& p, const std::string& what) {
  TileConfig c;
  const auto in = make_random_inputs(p, 3);
  const auto fwd = ref::forward(p, in, Algorithm::Naive, c, {});
  CountingObserver obs(p);
  ref::RunOptions opt;
  opt.observer = &obs;
  const auto g = ref::backward(p, in, fwd, Algorithm::Naive, c, opt);
  const auto plain = ref::backward(p, in, fwd, Algorithm::Naive, c, {});
  EXPECT_EQ(g.dq, plain.dq) << what;  // the same numbers with and without the observer
  EXPECT_EQ(g.dk, plain.dk) << what;
  for (const KernelModel* k : kernels_of(Algorithm::Naive, Pass::Backward)) {
    const auto name = what + " " + k->name;
    ASSERT_TRUE(obs.kernels().count(k->name)) << name;
    expect_same_traffic(obs.kernels().at(k->name), analytic_counts(*k, p, c), name);
    expect_same_traffic(obs.kernels().at(k->name), execute_counts(schedule(*k, p, c)), name + " executed");
  }
}

}  // namespace

// Standard attention's backward (every matrix materialized): the reference's naive backward reports the
// schedule's seven kernels, GQA and unequal lengths included.
TEST(Reference, NaiveBackwardMatchesSchedule) {
  for (const bool causal : {false, true}) {
    ProblemBuilder b =
        ProblemBuilder().batch(2).heads(4, 2).seqlen(70, 90).head_dim(32, 48).dtype(DType::F16);
    if (causal) b.causal();
    check_naive_backward(b.build(), causal ? "causal" : "full");
  }
}

// MLA (V the first head_dim_v columns of K's rows): the reference reports no V or dV tile. Its tiled algorithms
// read V with K's tile (nothing more), FA2's backward stores dK alone; standard attention reads K's first dv
// columns for P V and dO V^T and writes V's gradient into dK's (read back by dK's kernel). Every kernel's
// counted moves equal its schedule's, forward and backward.
TEST(Reference, MlaMatchesSchedules) {
  for (const bool causal : {false, true}) {
    ProblemBuilder b =
        ProblemBuilder().batch(2).heads(4, 1).seqlen(70, 90).head_dim(48, 32).dtype(DType::F16);
    if (causal) b.causal();
    AttentionProblem p = b.build();
    p.mla = true;
    p.validate();
    const std::string what = causal ? "mla causal" : "mla";
    const TileConfig c;
    check(p, c, what);
    for (const auto& [a, name] : {std::pair{Algorithm::ThreePass, "fwd_three_pass"},
                                  {Algorithm::TwoPass, "fwd_two_pass"},
                                  {Algorithm::Fa1, "fwd_fa1"},
                                  {Algorithm::Naive, "naive_scores"},
                                  {Algorithm::Naive, "naive_softmax"},
                                  {Algorithm::Naive, "naive_pv"}})
      check_forward(p, c, a, kernel_model(name));
    check_naive_backward(p, what);
    // Nothing of V or dV reported by any algorithm.
    const auto in = make_random_inputs(p, 4);
    CountingObserver obs(p);
    ref::RunOptions opt;
    opt.observer = &obs;
    for (const Algorithm a :
         {Algorithm::Naive, Algorithm::ThreePass, Algorithm::TwoPass, Algorithm::Fa1, Algorithm::Fa2}) {
      const auto fwd = ref::forward(p, in, a, c, opt);
      if (has_backward(a)) (void)ref::backward(p, in, fwd, a, c, opt);
    }
    for (const auto& [name, k] : obs.kernels())
      for (const auto t : {ref::TensorId::V, ref::TensorId::dV}) {
        const auto& tt = k.tensors[static_cast<size_t>(t)];
        EXPECT_EQ(tt.load.bytes + tt.store.bytes + tt.reduce.bytes, 0) << what << " " << name;
      }
  }
}

// Block-sparse: the reference skips the (query tile, key tile) pairs whose block-mask tiles are all inactive
// and reports no moves for them; the schedules skip the same tiles, forward (every streaming algorithm) and
// FA2's backward. The mask is the one the inputs of the same seed carry.
TEST(Reference, BlockSparseMatchesSchedules) {
  struct Case {
    std::string spec;
    BroadcastShape shape;
    int64_t tq, tk;
    bool causal;
  };
  for (const Case& m : {Case{"s2:local=1,stride=3", BroadcastShape::OneHQK, 64, 64, true},
                        Case{"random:keep=0.4", BroadcastShape::BHQK, 32, 128, false},
                        Case{"local-sink:local=2,sink=1", BroadcastShape::OneOneQK, 128, 64, false}}) {
    ProblemBuilder b = ProblemBuilder().batch(2).heads(4, 2).seqlen(200, 300).head_dim(32).dtype(DType::BF16);
    if (m.causal) b.causal();
    AttentionProblem p = b.build();
    p.block_mask = m.shape;
    p.block_mask_spec = m.spec;
    p.block_mask_q = m.tq;
    p.block_mask_k = m.tk;
    p.validate();
    const uint64_t seed = 4;
    const auto in = make_random_inputs(p, seed);
    const ProblemData d = problem_data(p, seed);
    ASSERT_EQ(in.block_mask, d.block_mask);
    TileConfig c;
    const std::string what = p.describe();
    {
      CountingObserver obs(p);
      ref::RunOptions opt;
      opt.observer = &obs;
      const auto fwd = ref::forward(p, in, Algorithm::Fa2, c, opt);
      const auto g = ref::backward(p, in, fwd, Algorithm::Fa2, c, opt);
      for (const KernelModel* k : {&kernel_model("fwd_fa2"), &kernel_model("bwd_dot_do_o"),
                                   &kernel_model("bwd_dq_dk_dv"), &kernel_model("bwd_convert_dq")}) {
        ASSERT_TRUE(obs.kernels().count(k->name)) << what << " no kernel " << k->name;
        expect_same_traffic(obs.kernels().at(k->name), analytic_counts(*k, p, c, &d), what + " " + k->name);
      }
      // the tiles the reference skipped and computed are the schedules'
      const auto f2 = analytic_counts(kernel_model("fwd_fa2"), p, c, &d);
      EXPECT_EQ(f2.skipped_tiles, fwd.tiles_skipped) << what;
      EXPECT_EQ(f2.tiles, fwd.tiles_computed) << what;
      const auto b2 = analytic_counts(kernel_model("bwd_dq_dk_dv"), p, c, &d);
      EXPECT_EQ(b2.skipped_tiles, g.tiles_skipped) << what;
      EXPECT_EQ(b2.tiles, g.tiles_computed) << what;
      EXPECT_GT(g.tiles_skipped, 0) << what;
    }
    for (const auto& [a, name] :
         {std::pair{Algorithm::ThreePass, "fwd_three_pass"}, std::pair{Algorithm::TwoPass, "fwd_two_pass"},
          std::pair{Algorithm::Fa1, "fwd_fa1"}}) {
      CountingObserver obs(p);
      ref::RunOptions opt;
      opt.observer = &obs;
      const auto f = ref::forward(p, in, a, c, opt);
      ASSERT_TRUE(obs.kernels().count(name)) << name;
      const auto k = analytic_counts(kernel_model(name), p, c, &d);
      expect_same_traffic(obs.kernels().at(name), k, what + " " + name);
      EXPECT_EQ(k.skipped_tiles, f.tiles_skipped) << what << " " << name;
      EXPECT_EQ(k.tiles, f.tiles_computed) << what << " " << name;
    }
  }
}

// The split kernel's split rule is the reference's (ref::forward_split_kv: ceil(blocks / splits) whole key
// blocks a split): without grouped heads (nothing packed) it computes and skips the (query tile, key tile)
// pairs the reference does, over a cache's gathered keys or plain ones, for 1 to 9 splits.
TEST(Reference, SplitKvTilesMatchTheReferenceSplits) {
  for (const bool paged : {false, true}) {
    AttentionProblem p =
        ProblemBuilder().batch(3).heads(2).seqlen(3, 400).head_dim(32).dtype(DType::BF16).build();
    if (paged) {
      p.page_size = 16;
      p.cache_seqlens = {0, 399, 130};
      p.seqlen_new = 1;
    }
    p.block_mask = BroadcastShape::BHQK;
    p.block_mask_spec = "random:keep=0.5";
    p.block_mask_q = 1;
    p.block_mask_k = 64;
    p.validate();
    const auto in = make_random_inputs(p, 9);
    const ProblemData d = problem_data(p, 9);
    TileConfig c;
    c.block_q = 64;
    c.block_k = 32;
    for (int splits = 1; splits <= 9; splits += 2) {
      c.num_splits = splits;
      const auto r = ref::forward_split_kv(p, in, splits, c);
      const auto k = analytic_counts(kernel_model("fwd_splitkv"), p, c, &d);
      EXPECT_EQ(k.skipped_tiles, r.combined.tiles_skipped) << p.describe() << " splits " << splits;
      EXPECT_EQ(k.tiles, r.combined.tiles_computed) << p.describe() << " splits " << splits;
      EXPECT_GT(k.skipped_tiles, 0);
    }
  }
}
