// The split-KV (Flash-Decoding) forward: for every split count it equals the independent oracle to 1e-12 in
// fp64, including splits where a row sees no key; its partials recombine (here, independently, in fp64) to its
// output; the emulated pipeline stays within fp32 rounding of the exact result.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "flashsim/error.h"
#include "flashsim/ref/attention.h"
#include "oracle.h"
#include "problem_builder.h"
#include "test_util.h"

namespace flashsim::test {
namespace {

using namespace flashsim::ref;

constexpr double kNegInf = -std::numeric_limits<double>::infinity();

class SplitKv : public ::testing::TestWithParam<Case> {};

TEST_P(SplitKv, EverySplitCountMatchesTheOracle) {
  const Case& c = GetParam();
  const AttentionInputs in = make_random_inputs(c.problem, 21);
  const OracleOutput oracle = oracle_forward(c.problem, in);
  for (const int splits : {1, 2, 3, 7, 64}) {  // 64: more splits than key blocks, many of them empty
    const SplitKvResult r = forward_split_kv(c.problem, in, splits, c.tile);
    EXPECT_LE(rel_error(r.combined.o, oracle.o), 1e-12) << splits << " splits";
    EXPECT_LE(rel_error(r.combined.lse, oracle.lse), 1e-12) << splits << " splits";
  }
}

INSTANTIATE_TEST_SUITE_P(Grid, SplitKv, ::testing::ValuesIn(reference_grid()),
                         [](const auto& pinfo) { return pinfo.param.name; });

// Decode-like: one query row per sequence against ragged cache lengths, GQA 4:1, causal (bottom-right): the
// partials are exactly FA2 over each split's keys, and combining them in fp64 here gives the output.
TEST(SplitKvDecode, PartialsRecombineAndEmptySplitsAreNeutral) {
  const AttentionProblem p =
      ProblemBuilder().heads(8, 2).varlen({1, 1, 4}, {300, 5, 129}).head_dim(64).causal().build();
  const AttentionInputs in = make_random_inputs(p, 22);
  TileConfig t;
  t.block_k = 64;
  const int splits = 4;  // per = ceil(5 / 4) = 2 blocks: sequence 1 (5 keys) has splits 1-3 empty
  const SplitKvResult r = forward_split_kv(p, in, splits, t);
  const OracleOutput oracle = oracle_forward(p, in);
  EXPECT_LE(rel_error(r.combined.o, oracle.o), 1e-12);
  EXPECT_LE(rel_error(r.combined.lse, oracle.lse), 1e-12);
  const int64_t lse_n = p.lse_elems(), dv = p.head_dim_v;
  ASSERT_EQ(r.partial_lse.size(), static_cast<size_t>(splits * lse_n));
  std::vector<double> o(p.o_elems()), lse(lse_n);
  for (int64_t b = 0; b < p.batch; ++b)
    for (int64_t h = 0; h < p.heads_q; ++h)
      for (int64_t i = 0; i < p.len_q(b); ++i) {
        const int64_t li = p.lse_index(b, h, i);
        double mx = kNegInf;
        for (int s = 0; s < splits; ++s) mx = std::max(mx, r.partial_lse[s * lse_n + li]);
        double sum = 0;
        for (int s = 0; s < splits; ++s) sum += std::exp(r.partial_lse[s * lse_n + li] - mx);
        lse[li] = mx + std::log(sum);
        for (int64_t cc = 0; cc < dv; ++cc) {
          const int64_t oi = ((p.offset_q(b) + i) * p.heads_q + h) * dv + cc;
          for (int s = 0; s < splits; ++s)
            o[oi] += std::exp(r.partial_lse[s * lse_n + li] - lse[li]) * r.partial_o[s * p.o_elems() + oi];
        }
      }
  EXPECT_LE(rel_error(o, r.combined.o), 1e-13);
  EXPECT_LE(rel_error(lse, r.combined.lse), 1e-13);
  // Sequence 1 (5 keys: one key block) has its keys in split 0 only.
  for (int s = 1; s < splits; ++s)
    for (int64_t h = 0; h < p.heads_q; ++h)
      EXPECT_EQ(r.partial_lse[s * lse_n + p.lse_index(1, h, 0)], kNegInf);
}

TEST(SplitKvDecode, RowsThatSeeNothingGiveZeroAndMinusInfinity) {
  const AttentionProblem p =
      ProblemBuilder().heads(2).seqlen(40, 10).head_dim(32).causal().build();  // rows 0-29 see no key
  const AttentionInputs in = make_random_inputs(p, 23);
  TileConfig t;
  t.block_k = 4;
  const SplitKvResult r = forward_split_kv(p, in, 3, t);
  for (int64_t h = 0; h < p.heads_q; ++h) {
    EXPECT_EQ(r.combined.lse[p.lse_index(0, h, 0)], kNegInf);
    EXPECT_EQ(r.combined.o[h * p.head_dim_v], 0.0);
    EXPECT_TRUE(std::isfinite(r.combined.lse[p.lse_index(0, h, 39)]));
  }
}

TEST(SplitKvDecode, EmulatedStaysWithinFp32RoundingOfExact) {
  const AttentionProblem p =
      ProblemBuilder().heads(4, 1).seqlen(3, 777).head_dim(64).dtype(DType::F32).build();
  const AttentionInputs in = make_random_inputs(p, 24);
  RunOptions emu;
  emu.precision = Precision::Emulated;
  const ForwardResult exact = forward(p, in, Algorithm::Naive);
  for (const int splits : {1, 5, 16}) {
    const SplitKvResult r = forward_split_kv(p, in, splits, {}, emu);
    EXPECT_LE(rel_error(r.combined.o, exact.o), 1e-6) << splits;
    EXPECT_LE(rel_error(r.combined.lse, exact.lse), 1e-6) << splits;
    EXPECT_GT(rel_error(r.combined.o, exact.o), 0.0) << "the emulated pipeline computes in fp32";
  }
}

TEST(SplitKvDecode, BadSplitCountsAreInputErrors) {
  const AttentionProblem p = ProblemBuilder().build();
  const AttentionInputs in = make_random_inputs(p, 25);
  EXPECT_THROW(forward_split_kv(p, in, 0), InputError);
  EXPECT_THROW(forward_split_kv(p, in, 5000), InputError);
}

}  // namespace
}  // namespace flashsim::test
