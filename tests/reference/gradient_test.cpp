// dq, dk, dv and dbias of both backward algorithms match central finite differences of L = <O, dO> computed
// by the independent oracle, in fp64: directional derivatives along random directions, relative error <=
// 1e-6; over the reference grid and block-sparse problems.
#include <gtest/gtest.h>

#include <functional>

#include "block_sparse_cases.h"
#include "finite_diff.h"
#include "flashsim/random.h"
#include "flashsim/ref/attention.h"
#include "oracle.h"
#include "test_util.h"

namespace flashsim::test {
namespace {

using namespace flashsim::ref;

class Gradient : public ::testing::TestWithParam<Case> {};

TEST_P(Gradient, MatchesFiniteDifferences) {
  const Case& c = GetParam();
  expect_gradients_match_fd(c.problem, c.tile, /*input_seed=*/21, /*direction_seed=*/99);
}

std::vector<Case> gradient_cases() {
  std::vector<Case> out;
  for (const Case& c : reference_grid()) {
    // The features the issue names (softcap, masks, GQA, varlen, bias) and a few plain shapes.
    for (const char* want : {"softcap",
                             "mask_bhqk",
                             "mask_11qk",
                             "gqa",
                             "mqa",
                             "varlen",
                             "bias_bhqk",
                             "bias_1hqk",
                             "bias_b1qk",
                             "bias_11qk",
                             "causal",
                             "window",
                             "alibi",
                             "dv_ne_d",
                             "q257_k128_causal",
                             "fully_masked_rows",
                             "combined",
                             "combined_varlen",
                             "len7",
                             "tiles_7x13"}) {
      if (c.name == want) out.push_back(c);
    }
  }
  return out;
}

INSTANTIATE_TEST_SUITE_P(Grid, Gradient, ::testing::ValuesIn(gradient_cases()),
                         [](const auto& pinfo) { return pinfo.param.name; });

// Block-sparse masks (block_sparse_cases.h): the oracle reads the block mask element by element.
std::vector<Case> block_sparse_gradient_cases() {
  std::vector<Case> out;
  for (const Case& c : block_sparse_grid())
    for (const char* want : {"local_sink_misaligned", "random03", "gqa", "varlen_causal_s2", "bias_bhqk",
                             "bias_11qk", "softcap", "alibi", "combined", "combined_varlen"})
      if (c.name == want) out.push_back(c);
  return out;
}

INSTANTIATE_TEST_SUITE_P(BlockSparse, Gradient, ::testing::ValuesIn(block_sparse_gradient_cases()),
                         [](const auto& pinfo) { return pinfo.param.name; });

}  // namespace
}  // namespace flashsim::test
