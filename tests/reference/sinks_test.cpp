// Attention sinks (problem.sinks): one logit per q head in every row's softmax denominator, with no value.
// Every forward algorithm (naive, three-pass, two-pass, FA1, FA2, split-KV at every split count) equals the
// independent fp64 oracle; both backwards' dq, dk, dv and dsinks match finite differences of the oracle's loss;
// the sink relates the outputs with and without it as lse' = log(e^lse + e^s), o' = e^(lse - lse') o; a row with
// no visible key gives lse = s, o = 0; bad sinks are refused naming the field.
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

std::vector<Case> sink_cases() {
  std::vector<Case> out;
  auto add = [&](std::string name, ProblemBuilder b, TileConfig t) {
    out.push_back({std::move(name), b.sinks().build(), t});
  };
  add("plain", base(50, 70, 16), tiles(16, 32));
  add("len1", base(1, 1, 8), tiles(16, 16));
  add("causal_q_gt_k", base(70, 40, 16).causal(), tiles(16, 16));  // bottom-right: 30 rows see no key
  add("gqa_window", base(64, 64, 16).heads(6, 2).window(10, 3), tiles(16, 16));
  add("varlen", base(90, 100, 16).varlen({90, 1, 0, 33}, {100, 40, 7, 0}), tiles(16, 16));
  add("fully_masked_rows", base(60, 60, 16).mask(BroadcastShape::BHQK, 0.03), tiles(16, 16));
  add("softcap_bias_alibi", base(40, 50, 16).heads(3).softcap(2.0).bias(BroadcastShape::OneHQK).alibi(),
      tiles(16, 16));
  add("tiles_7x13", base(60, 60, 16), tiles(7, 13));
  return out;
}

class Sinks : public ::testing::TestWithParam<Case> {};

TEST_P(Sinks, EveryForwardAlgorithmMatchesTheOracle) {
  const Case& c = GetParam();
  const AttentionInputs in = make_random_inputs(c.problem, 31);
  const OracleOutput oracle = oracle_forward(c.problem, in);
  for (auto algo :
       {Algorithm::Naive, Algorithm::ThreePass, Algorithm::TwoPass, Algorithm::Fa1, Algorithm::Fa2}) {
    const ForwardResult r = forward(c.problem, in, algo, c.tile);
    EXPECT_LE(rel_error(r.o, oracle.o), 1e-12) << algorithm_name(algo);
    EXPECT_LE(rel_error(r.lse, oracle.lse), 1e-12) << algorithm_name(algo);
  }
  // The sink enters the combine once, whatever the split count (64: most splits empty).
  for (const int splits : {1, 2, 3, 64}) {
    const SplitKvResult r = forward_split_kv(c.problem, in, splits, c.tile);
    EXPECT_LE(rel_error(r.combined.o, oracle.o), 1e-12) << splits << " splits";
    EXPECT_LE(rel_error(r.combined.lse, oracle.lse), 1e-12) << splits << " splits";
  }
}

// The same inputs without the sink: lse' = log(e^lse + e^s) and o' = e^(lse - lse') o, row by row; a row that
// sees no key (lse = -inf) gets lse' = s and o' = 0.
TEST_P(Sinks, RelateToTheOutputsWithoutTheSink) {
  const Case& c = GetParam();
  const AttentionInputs in = make_random_inputs(c.problem, 32);
  AttentionProblem plain = c.problem;
  plain.sinks = false;
  AttentionInputs in_plain = in;
  in_plain.sinks.clear();
  const ForwardResult with = forward(c.problem, in, Algorithm::Fa2, c.tile);
  const ForwardResult without = forward(plain, in_plain, Algorithm::Fa2, c.tile);
  const AttentionProblem& p = c.problem;
  int64_t empty_rows = 0;
  for (int64_t b = 0; b < p.batch; ++b)
    for (int64_t h = 0; h < p.heads_q; ++h)
      for (int64_t i = 0; i < p.len_q(b); ++i) {
        const int64_t li = p.lse_index(b, h, i);
        const double s = in.sinks[h], lse = without.lse[li];
        const double want =
            std::isinf(lse) ? s : std::max(lse, s) + std::log1p(std::exp(-std::fabs(lse - s)));
        EXPECT_NEAR(with.lse[li], want, 1e-12 * std::max(1.0, std::fabs(want)));
        const double ratio = std::isinf(lse) ? 0.0 : std::exp(lse - want);
        empty_rows += std::isinf(lse);
        const int64_t row = p.offset_q(b) + i;
        for (int64_t e = 0; e < p.head_dim_v; ++e) {
          const int64_t idx = (row * p.heads_q + h) * p.head_dim_v + e;
          EXPECT_NEAR(with.o[idx], ratio * without.o[idx], 1e-12);
        }
      }
  if (c.name == "causal_q_gt_k" || c.name == "fully_masked_rows") {
    EXPECT_GT(empty_rows, 0);
  }
}

TEST_P(Sinks, GradientsMatchFiniteDifferences) {
  const Case& c = GetParam();
  expect_gradients_match_fd(c.problem, c.tile, /*input_seed=*/33, /*direction_seed=*/98);
}

// fp32 and the emulated pipeline (fp32 accumulation) stay within fp32 rounding of the exact result.
TEST_P(Sinks, Fp32PipelinesStayCloseToExact) {
  const Case& c = GetParam();
  AttentionProblem p = c.problem;
  p.dtype = DType::F32;
  const AttentionInputs in = make_random_inputs(p, 34);
  const ForwardResult exact = forward(p, in, Algorithm::Naive, c.tile);
  const Gradients gexact = backward(p, in, exact, Algorithm::Naive, c.tile);
  for (auto prec : {Precision::Fp32, Precision::Emulated}) {
    RunOptions opt;
    opt.precision = prec;
    for (auto algo :
         {Algorithm::Naive, Algorithm::ThreePass, Algorithm::TwoPass, Algorithm::Fa1, Algorithm::Fa2}) {
      const ForwardResult r = forward(p, in, algo, c.tile, opt);
      EXPECT_LE(rel_error(r.o, exact.o), 1e-5) << algorithm_name(algo);
      EXPECT_LE(rel_error(r.lse, exact.lse), 1e-5) << algorithm_name(algo);
    }
    const ForwardResult f = forward(p, in, Algorithm::Fa2, c.tile, opt);
    for (auto algo : {Algorithm::Naive, Algorithm::Fa2}) {
      const Gradients g = backward(p, in, f, algo, c.tile, opt);
      EXPECT_LE(rel_error(g.dsinks, gexact.dsinks), 1e-4) << algorithm_name(algo);
      EXPECT_LE(rel_error(g.dq, gexact.dq), 1e-4) << algorithm_name(algo);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, Sinks, ::testing::ValuesIn(sink_cases()),
                         [](const auto& pinfo) { return pinfo.param.name; });

// A row with no visible key: the sink takes all the mass (lse = s exactly, o = 0), and its gradient is 0
// (o = 0 gives D = 0); no NaN anywhere.
TEST(SinksEdge, RowsWithoutKeysGiveTheSinkLogit) {
  const AttentionProblem p = base(5, 3, 8).causal().sinks().build();  // rows 0 and 1 see no key
  const AttentionInputs in = make_random_inputs(p, 35);
  for (auto algo :
       {Algorithm::Naive, Algorithm::ThreePass, Algorithm::TwoPass, Algorithm::Fa1, Algorithm::Fa2}) {
    const ForwardResult r = forward(p, in, algo, tiles(2, 2));
    for (int64_t b = 0; b < p.batch; ++b)
      for (int64_t h = 0; h < p.heads_q; ++h)
        for (int64_t i = 0; i < 2; ++i) {
          EXPECT_EQ(r.lse[p.lse_index(b, h, i)], in.sinks[h]) << algorithm_name(algo);
          for (int64_t e = 0; e < p.head_dim_v; ++e)
            EXPECT_EQ(r.o[((b * p.seqlen_q + i) * p.heads_q + h) * p.head_dim_v + e], 0.0);
        }
    const Gradients g = backward(p, in, r, Algorithm::Fa2, tiles(2, 2));
    for (double x : g.dsinks) EXPECT_TRUE(std::isfinite(x));
  }
}

// A sink far below every score changes nothing; one far above takes every row (o -> 0, lse -> s, and
// dsinks -> -sum_i D_i = 0 since o = 0).
TEST(SinksEdge, ExtremeSinksReduceToTheLimits) {
  const AttentionProblem p = base(30, 40, 16).sinks().build();
  AttentionInputs in = make_random_inputs(p, 36);
  AttentionProblem plain = p;
  plain.sinks = false;
  AttentionInputs in_plain = in;
  in_plain.sinks.clear();
  const ForwardResult ref = forward(plain, in_plain, Algorithm::Naive);
  in.sinks.assign(p.heads_q, -1000.0);
  for (auto algo :
       {Algorithm::Naive, Algorithm::ThreePass, Algorithm::TwoPass, Algorithm::Fa1, Algorithm::Fa2}) {
    const ForwardResult r = forward(p, in, algo, tiles(16, 16));
    EXPECT_LE(rel_error(r.o, ref.o), 1e-13) << algorithm_name(algo);
    EXPECT_LE(rel_error(r.lse, ref.lse), 1e-13) << algorithm_name(algo);
  }
  in.sinks.assign(p.heads_q, 1000.0);
  const ForwardResult r = forward(p, in, Algorithm::Fa2, tiles(16, 16));
  for (double x : r.o) EXPECT_EQ(x, 0.0);
  for (double x : r.lse) EXPECT_EQ(x, 1000.0);
}

std::string sink_error(const AttentionProblem& p, const AttentionInputs& in) {
  try {
    forward(p, in, Algorithm::Fa2);
  } catch (const InputError& e) {
    return e.field();
  }
  return "";
}

TEST(SinksEdge, BadSinksAreRefusedNamingTheField) {
  const AttentionProblem p = base(8, 8, 8).heads(4).sinks().build();
  const AttentionInputs good = make_random_inputs(p, 37);
  EXPECT_EQ(sink_error(p, good), "");
  AttentionInputs in = good;
  in.sinks.pop_back();  // 3 for 4 heads
  EXPECT_EQ(sink_error(p, in), "sinks");
  in = good;
  in.sinks.clear();
  EXPECT_EQ(sink_error(p, in), "sinks");
  for (double bad : {std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::infinity(),
                     -std::numeric_limits<double>::infinity(), 0.1 /* not an fp32 value */}) {
    in = good;
    in.sinks[2] = bad;
    EXPECT_EQ(sink_error(p, in), "sinks") << bad;
  }
  AttentionProblem no_sinks = p;
  no_sinks.sinks = false;
  EXPECT_EQ(sink_error(no_sinks, good), "sinks");  // sinks given to a problem without them
}

}  // namespace
}  // namespace flashsim::test
