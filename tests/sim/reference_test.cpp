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

// Standard attention's backward (every matrix materialized): the reference's naive backward reports the
// schedule's seven kernels, GQA and unequal lengths included.
TEST(Reference, NaiveBackwardMatchesSchedule) {
  for (const bool causal : {false, true}) {
    ProblemBuilder b =
        ProblemBuilder().batch(2).heads(4, 2).seqlen(70, 90).head_dim(32, 48).dtype(DType::F16);
    if (causal) b.causal();
    const AttentionProblem p = b.build();
    TileConfig c;
    const auto in = make_random_inputs(p, 3);
    const auto fwd = ref::forward(p, in, Algorithm::Naive, c, {});
    CountingObserver obs(p);
    ref::RunOptions opt;
    opt.observer = &obs;
    const auto g = ref::backward(p, in, fwd, Algorithm::Naive, c, opt);
    const auto plain = ref::backward(p, in, fwd, Algorithm::Naive, c, {});
    EXPECT_EQ(g.dq, plain.dq);  // the same numbers with and without the observer
    EXPECT_EQ(g.dk, plain.dk);
    for (const KernelModel* k : kernels_of(Algorithm::Naive, Pass::Backward)) {
      const auto name = k->name;
      ASSERT_TRUE(obs.kernels().count(name)) << name;
      expect_same_traffic(obs.kernels().at(name), analytic_counts(*k, p, c), name);
      expect_same_traffic(obs.kernels().at(name), execute_counts(schedule(*k, p, c)), name + " executed");
    }
  }
}
