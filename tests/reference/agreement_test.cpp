// Every algorithm, forward and backward, agrees with the naive fp64 result to 1e-12, and naive agrees with
// the independent scalar oracle, over the feature grid of test_util.h.
#include <gtest/gtest.h>

#include "flashsim/ref/attention.h"
#include "oracle.h"
#include "test_util.h"

namespace flashsim::test {
namespace {

using namespace flashsim::ref;

class Agreement : public ::testing::TestWithParam<Case> {};

TEST_P(Agreement, ForwardAlgorithmsMatchNaiveAndOracle) {
  const Case& c = GetParam();
  const AttentionInputs in = make_random_inputs(c.problem, 11);
  const ForwardResult naive = forward(c.problem, in, Algorithm::Naive, c.tile);
  const OracleOutput oracle = oracle_forward(c.problem, in);
  EXPECT_LE(rel_error(naive.o, oracle.o), 1e-12);
  EXPECT_LE(rel_error(naive.lse, oracle.lse), 1e-12);
  for (auto algo : all_algorithms()) {
    const ForwardResult r = forward(c.problem, in, algo, c.tile);
    EXPECT_LE(rel_error(r.o, naive.o), 1e-12) << algorithm_name(algo);
    EXPECT_LE(rel_error(r.lse, naive.lse), 1e-12) << algorithm_name(algo);
  }
}

TEST_P(Agreement, TiledBackwardMatchesNaive) {
  const Case& c = GetParam();
  const AttentionInputs in = make_random_inputs(c.problem, 12);
  const ForwardResult fwd = forward(c.problem, in, Algorithm::Fa2, c.tile);
  const Gradients naive = backward(c.problem, in, fwd, Algorithm::Naive, c.tile);
  const Gradients tiled = backward(c.problem, in, fwd, Algorithm::Fa2, c.tile);
  EXPECT_LE(rel_error(tiled.dq, naive.dq), 1e-12);
  EXPECT_LE(rel_error(tiled.dk, naive.dk), 1e-12);
  EXPECT_LE(rel_error(tiled.dv, naive.dv), 1e-12);
  EXPECT_EQ(tiled.dbias.size(), static_cast<size_t>(c.problem.bias_elems()));
  EXPECT_LE(rel_error(tiled.dbias, naive.dbias), 1e-12);
}

TEST_P(Agreement, PlainLoopsMatchBlas) {
  const Case& c = GetParam();
  const AttentionInputs in = make_random_inputs(c.problem, 13);
  RunOptions loops;
  loops.use_blas = false;
  const ForwardResult a = forward(c.problem, in, Algorithm::Fa2, c.tile);
  const ForwardResult b = forward(c.problem, in, Algorithm::Fa2, c.tile, loops);
  EXPECT_LE(rel_error(b.o, a.o), 1e-12);
  const Gradients ga = backward(c.problem, in, a, Algorithm::Fa2, c.tile);
  const Gradients gb = backward(c.problem, in, a, Algorithm::Fa2, c.tile, loops);
  EXPECT_LE(rel_error(gb.dq, ga.dq), 1e-12);
  EXPECT_LE(rel_error(gb.dk, ga.dk), 1e-12);
}

INSTANTIATE_TEST_SUITE_P(Grid, Agreement, ::testing::ValuesIn(reference_grid()),
                         [](const auto& pinfo) { return pinfo.param.name; });

}  // namespace
}  // namespace flashsim::test
