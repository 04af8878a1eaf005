// Dropout with a given keep mask (problem.dropout_p, inputs.dropout_keep; FlashAttention-2's semantics):
// every forward algorithm (and split-KV) equals the independent fp64 oracle; lse is the one without dropout;
// both backwards' gradients match finite differences of the oracle's loss; D = rowsum(dO o O) equals
// sum_j P_j dP_j with dropout (the identity FA2's backward relies on), checked by explicit fp64 loops; a
// keep-everything mask scales O by 1 / (1 - p); bad dropout inputs are refused naming the field.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "finite_diff.h"
#include "flashsim/error.h"
#include "flashsim/random.h"
#include "flashsim/ref/attention.h"
#include "oracle.h"
#include "problem_builder.h"
#include "test_util.h"

namespace flashsim::test {
namespace {

using namespace flashsim::ref;

constexpr Algorithm kForwards[] = {Algorithm::Naive, Algorithm::ThreePass, Algorithm::TwoPass, Algorithm::Fa1,
                                   Algorithm::Fa2};

std::vector<Case> dropout_cases() {
  std::vector<Case> out;
  auto add = [&](std::string name, ProblemBuilder b, TileConfig t) {
    out.push_back({std::move(name), b.build(), t});
  };
  add("p01", base(50, 70, 16).dropout(0.1), tiles(16, 32));
  add("p05_causal_q_gt_k", base(70, 40, 16).causal().dropout(0.5), tiles(16, 16));
  add("p03_gqa_window", base(64, 64, 16).heads(6, 2).window(10, 3).dropout(0.3), tiles(16, 16));
  add("p02_varlen", base(90, 100, 16).varlen({90, 1, 0, 33}, {100, 40, 7, 0}).dropout(0.2), tiles(16, 16));
  add("p09_bias_softcap", base(40, 50, 16).heads(3).softcap(2.0).bias(BroadcastShape::OneHQK).dropout(0.9),
      tiles(16, 16));
  add("p02_sinks", base(40, 60, 16).sinks().dropout(0.2), tiles(7, 13));
  return out;
}

class Dropout : public ::testing::TestWithParam<Case> {};

TEST_P(Dropout, EveryForwardAlgorithmMatchesTheOracle) {
  const Case& c = GetParam();
  const AttentionInputs in = make_random_inputs(c.problem, 41);
  const OracleOutput oracle = oracle_forward(c.problem, in);
  for (auto algo : kForwards) {
    const ForwardResult r = forward(c.problem, in, algo, c.tile);
    EXPECT_LE(rel_error(r.o, oracle.o), 1e-12) << algorithm_name(algo);
    EXPECT_LE(rel_error(r.lse, oracle.lse), 1e-12) << algorithm_name(algo);
  }
  for (const int splits : {2, 5}) {
    const SplitKvResult r = forward_split_kv(c.problem, in, splits, c.tile);
    EXPECT_LE(rel_error(r.combined.o, oracle.o), 1e-12) << splits << " splits";
    EXPECT_LE(rel_error(r.combined.lse, oracle.lse), 1e-12) << splits << " splits";
  }
}

// The lse is the softmax's, without dropout; o differs (the mask drops some of P).
TEST_P(Dropout, LseIsTheOneWithoutDropout) {
  const Case& c = GetParam();
  const AttentionInputs in = make_random_inputs(c.problem, 42);
  AttentionProblem plain = c.problem;
  plain.dropout_p = 0;
  AttentionInputs in_plain = in;
  in_plain.dropout_keep.clear();
  const ForwardResult with = forward(c.problem, in, Algorithm::Fa2, c.tile);
  const ForwardResult without = forward(plain, in_plain, Algorithm::Fa2, c.tile);
  EXPECT_LE(rel_error(with.lse, without.lse), 1e-14);
  EXPECT_GT(rel_error(with.o, without.o), 1e-3);
}

TEST_P(Dropout, GradientsMatchFiniteDifferences) {
  const Case& c = GetParam();
  expect_gradients_match_fd(c.problem, c.tile, /*input_seed=*/43, /*direction_seed=*/97);
}

INSTANTIATE_TEST_SUITE_P(Cases, Dropout, ::testing::ValuesIn(dropout_cases()),
                         [](const auto& pinfo) { return pinfo.param.name; });

// FA2's backward takes D_i = rowsum(dO_i o O_i) with O = P' V, P' = P o Z: then
//   sum_j P_ij dP_ij = sum_j P_ij Z_ij (dO_i . V_j) = dO_i . sum_j P'_ij V_j = D_i,
// the identity that makes dS = P o (dP - D) the softmax's gradient. Explicit fp64 loops on one head.
TEST(DropoutIdentity, RowsumOfDoTimesOEqualsSumOfPTimesDp) {
  const AttentionProblem p =
      ProblemBuilder().seqlen(20, 30).head_dim(8).dtype(DType::F64).dropout(0.4).build();
  const AttentionInputs in = make_random_inputs(p, 44);
  const OracleOutput o = oracle_forward(p, in);
  const double z = 1.0 / (1.0 - p.dropout_p), scale = p.softmax_scale();
  for (int64_t i = 0; i < p.seqlen_q; ++i) {
    double rhs = 0;
    for (int64_t j = 0; j < p.seqlen_k; ++j) {
      double s = 0, dp = 0;
      for (int64_t c = 0; c < p.head_dim; ++c)
        s += scale * in.q[i * p.head_dim + c] * in.k[j * p.head_dim + c];
      for (int64_t c = 0; c < p.head_dim_v; ++c)
        dp += in.dout[i * p.head_dim_v + c] * in.v[j * p.head_dim_v + c];
      const double pij = std::exp(s - o.lse[i]);
      rhs += pij * (in.dropout_keep[i * p.seqlen_k + j] ? z : 0.0) * dp;  // P_ij dP_ij, dP = dP' o Z
    }
    double lhs = 0;
    for (int64_t c = 0; c < p.head_dim_v; ++c)
      lhs += in.dout[i * p.head_dim_v + c] * o.o[i * p.head_dim_v + c];
    EXPECT_NEAR(lhs, rhs, 1e-12 * std::max(1.0, std::fabs(lhs))) << "row " << i;
  }
}

// A mask that keeps everything leaves P and only scales O by 1 / (1 - p); the keep mask drawn for p keeps
// about 1 - p of the entries.
TEST(DropoutEdge, KeepEverythingScalesOutput) {
  const AttentionProblem p = base(30, 40, 16).dropout(0.25).build();
  AttentionInputs in = make_random_inputs(p, 45);
  double kept = 0;
  for (uint8_t k : in.dropout_keep) kept += k != 0;
  EXPECT_NEAR(kept / static_cast<double>(in.dropout_keep.size()), 0.75, 0.03);
  std::fill(in.dropout_keep.begin(), in.dropout_keep.end(), uint8_t{1});
  AttentionProblem plain = p;
  plain.dropout_p = 0;
  AttentionInputs in_plain = in;
  in_plain.dropout_keep.clear();
  const ForwardResult ref = forward(plain, in_plain, Algorithm::Naive);
  for (auto algo : kForwards) {
    const ForwardResult r = forward(p, in, algo, tiles(16, 16));
    for (size_t n = 0; n < r.o.size(); ++n)
      EXPECT_NEAR(r.o[n], ref.o[n] / 0.75, 1e-12) << algorithm_name(algo);
  }
}

std::string dropout_error(const AttentionProblem& p, const AttentionInputs& in) {
  try {
    forward(p, in, Algorithm::Fa2);
  } catch (const InputError& e) {
    return e.field();
  }
  return "";
}

TEST(DropoutEdge, BadDropoutIsRefusedNamingTheField) {
  const AttentionProblem p = base(8, 8, 8).dropout(0.2).build();
  const AttentionInputs good = make_random_inputs(p, 46);
  EXPECT_EQ(dropout_error(p, good), "");
  for (double bad : {1.0, 1.5, -0.1, std::numeric_limits<double>::quiet_NaN()}) {
    AttentionProblem q = p;
    q.dropout_p = bad;
    EXPECT_EQ(dropout_error(q, good), "dropout_p") << bad;
  }
  AttentionInputs in = good;
  in.dropout_keep.pop_back();  // wrong shape
  EXPECT_EQ(dropout_error(p, in), "dropout_keep");
  in.dropout_keep.clear();
  EXPECT_EQ(dropout_error(p, in), "dropout_keep");
  AttentionProblem no_dropout = p;
  no_dropout.dropout_p = 0;
  EXPECT_EQ(dropout_error(no_dropout, good), "dropout_keep");  // a mask without dropout
}

}  // namespace
}  // namespace flashsim::test
