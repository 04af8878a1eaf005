#pragma once
// What every tile of one problem needs: the problem, its inputs, the options, the cumulative offsets.
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "flashsim/inputs.h"
#include "flashsim/problem.h"
#include "flashsim/ref/options.h"
#include "flashsim/ref/traffic.h"

namespace flashsim::ref::detail {

struct ProblemContext {
  ProblemContext(const AttentionProblem& problem, const AttentionInputs& inputs, const RunOptions& options)
      : p(problem),
        in(inputs),
        opt(options),
        cu_q(problem.cu_seqlens_q()),
        cu_k(problem.cu_seqlens_k()),
        scale(problem.softmax_scale()) {}

  const AttentionProblem& p;
  const AttentionInputs& in;
  const RunOptions& opt;
  std::vector<int64_t> cu_q, cu_k;
  double scale;

  bool emulated() const { return opt.precision == Precision::Emulated; }
  // Whether scores need per-element work beyond the GEMM and the window.
  bool elementwise_scores() const {
    return p.softcap > 0 || p.bias != BroadcastShape::None || p.mask != BroadcastShape::None || p.alibi;
  }
  TrafficObserver* observer() const { return opt.observer; }
  // OpenMP thread count for a parallel loop: one thread when an observer counts tile moves.
  int threads() const;
};

template <class T>
constexpr T neg_inf() {
  return -std::numeric_limits<T>::infinity();
}

}  // namespace flashsim::ref::detail
