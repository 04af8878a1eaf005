// dq, dk, dv and dbias of both backward algorithms match central finite differences of L = <O, dO> computed
// by the independent oracle, in fp64: directional derivatives along random directions, relative error <=
// 1e-6; over the reference grid and block-sparse problems.
#include <gtest/gtest.h>

#include <functional>

#include "block_sparse_cases.h"
#include "flashsim/random.h"
#include "flashsim/ref/attention.h"
#include "oracle.h"
#include "test_util.h"

namespace flashsim::test {
namespace {

using namespace flashsim::ref;

// (L(x + eps u) - L(x - eps u)) / (2 eps) for the tensor `field` of the inputs.
double directional_fd(const AttentionProblem& p, AttentionInputs in,
                      std::vector<double> AttentionInputs::*field, const std::vector<double>& u) {
  // eps ~ cbrt(machine eps) balances the O(eps^2) truncation error against O(u / eps) rounding.
  const double eps = 1e-5;
  std::vector<double>& x = in.*field;
  const std::vector<double> x0 = x;
  for (size_t n = 0; n < x.size(); ++n) x[n] = x0[n] + eps * u[n];
  const double plus = oracle_loss(p, in);
  for (size_t n = 0; n < x.size(); ++n) x[n] = x0[n] - eps * u[n];
  const double minus = oracle_loss(p, in);
  return (plus - minus) / (2 * eps);
}

double dot(const std::vector<double>& a, const std::vector<double>& b) {
  double s = 0;
  for (size_t n = 0; n < a.size(); ++n) s += a[n] * b[n];
  return s;
}

std::vector<double> direction(size_t n, uint64_t stream) {
  std::vector<double> u(n);
  for (size_t i = 0; i < n; ++i) u[i] = standard_normal(99, stream, i);
  return u;
}

class Gradient : public ::testing::TestWithParam<Case> {};

TEST_P(Gradient, MatchesFiniteDifferences) {
  const Case& c = GetParam();
  const AttentionInputs in = make_random_inputs(c.problem, 21);
  const ForwardResult fwd = forward(c.problem, in, Algorithm::Fa2, c.tile);
  for (auto algo : {Algorithm::Naive, Algorithm::Fa2}) {
    const Gradients g = backward(c.problem, in, fwd, algo, c.tile);
    struct Item {
      const char* name;
      std::vector<double> AttentionInputs::*field;
      const std::vector<double>* grad;
    };
    std::vector<Item> items = {{"dq", &AttentionInputs::q, &g.dq},
                               {"dk", &AttentionInputs::k, &g.dk},
                               {"dv", &AttentionInputs::v, &g.dv}};
    if (c.problem.bias != BroadcastShape::None) items.push_back({"dbias", &AttentionInputs::bias, &g.dbias});
    uint64_t stream = 1;
    for (const Item& it : items) {
      const std::vector<double> u = direction((in.*it.field).size(), stream++);
      const double analytic = dot(*it.grad, u);
      const double fd = directional_fd(c.problem, in, it.field, u);
      EXPECT_NEAR(analytic, fd, 1e-6 * std::max(1.0, std::fabs(fd)))
          << it.name << " (" << algorithm_name(algo) << ")";
    }
  }
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
