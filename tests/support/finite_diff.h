#pragma once
// Gradients against central finite differences of the oracle's L = <O, dO> (oracle.h), in fp64: for both
// backward algorithms (naive, fa2), directional derivatives of dq, dk, dv, and dbias / dsinks where the problem
// has them, along random directions, relative error <= 1e-6.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "flashsim/random.h"
#include "flashsim/ref/attention.h"
#include "oracle.h"

namespace flashsim::test {

// (L(x + eps u) - L(x - eps u)) / (2 eps) for the tensor `field` of the inputs.
inline double directional_fd(const AttentionProblem& p, AttentionInputs in,
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

// Both backwards of the fa2 forward at `tile` on inputs drawn with `input_seed`, each gradient's directional
// derivative (directions from `direction_seed`, a stream a tensor) against directional_fd.
inline void expect_gradients_match_fd(const AttentionProblem& p, const TileConfig& tile, uint64_t input_seed,
                                      uint64_t direction_seed) {
  const AttentionInputs in = make_random_inputs(p, input_seed);
  const ref::ForwardResult fwd = ref::forward(p, in, Algorithm::Fa2, tile);
  for (auto algo : {Algorithm::Naive, Algorithm::Fa2}) {
    const ref::Gradients g = ref::backward(p, in, fwd, algo, tile);
    struct Item {
      const char* name;
      std::vector<double> AttentionInputs::*field;
      const std::vector<double>* grad;
    };
    std::vector<Item> items = {{"dq", &AttentionInputs::q, &g.dq},
                               {"dk", &AttentionInputs::k, &g.dk},
                               {"dv", &AttentionInputs::v, &g.dv}};
    if (p.bias != BroadcastShape::None) items.push_back({"dbias", &AttentionInputs::bias, &g.dbias});
    if (p.sinks) items.push_back({"dsinks", &AttentionInputs::sinks, &g.dsinks});
    uint64_t stream = 1;
    for (const Item& it : items) {
      ASSERT_EQ(it.grad->size(), (in.*it.field).size()) << it.name;
      std::vector<double> u(it.grad->size());
      for (size_t n = 0; n < u.size(); ++n) u[n] = standard_normal(direction_seed, stream, n);
      ++stream;
      double analytic = 0;
      for (size_t n = 0; n < u.size(); ++n) analytic += (*it.grad)[n] * u[n];
      const double fd = directional_fd(p, in, it.field, u);
      EXPECT_NEAR(analytic, fd, 1e-6 * std::max(1.0, std::fabs(fd)))
          << it.name << " (" << algorithm_name(algo) << ")";
    }
  }
}

}  // namespace flashsim::test
