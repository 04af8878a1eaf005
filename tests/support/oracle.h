#pragma once
// An independent scalar fp64 attention, written straight from the definition in docs/design.md (the block mask
// included, tile by tile, attention sinks and dropout by the keep mask) with no code shared with the library (no
// tiles, no BLAS, no Eigen): the oracle the naive algorithm is checked against, and the function <O, dO> whose
// finite differences check every gradient.
#include <vector>

#include "flashsim/inputs.h"
#include "flashsim/problem.h"

namespace flashsim::test {

struct OracleOutput {
  std::vector<double> o, lse;
};

OracleOutput oracle_forward(const AttentionProblem& p, const AttentionInputs& in);
// sum over all elements of O * dO.
double oracle_loss(const AttentionProblem& p, const AttentionInputs& in);

}  // namespace flashsim::test
