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
        scale(problem.softmax_scale()) {
    if (problem.block_mask != BroadcastShape::None) {
      const std::vector<int64_t> s = problem.block_mask_shape();
      bm_batch = s[0];
      bm_heads = s[1];
      bm_q_blocks = s[2];
      bm_k_blocks = s[3];
    }
  }

  const AttentionProblem& p;
  const AttentionInputs& in;
  const RunOptions& opt;
  std::vector<int64_t> cu_q, cu_k;
  double scale;
  // The block mask's shape (problem.block_mask_shape()); 0 without a block mask.
  int64_t bm_batch = 0, bm_heads = 0, bm_q_blocks = 0, bm_k_blocks = 0;

  // The [q_blocks, k_blocks] plane of the block mask that (batch b, q head h) reads, or nullptr without one.
  const uint8_t* block_mask_plane(int64_t b, int64_t h) const {
    if (p.block_mask == BroadcastShape::None) return nullptr;
    const int64_t bb = bm_batch == 1 ? 0 : b, hh = bm_heads == 1 ? 0 : h;
    return in.block_mask.data() + (bb * bm_heads + hh) * bm_q_blocks * bm_k_blocks;
  }

  bool emulated() const { return opt.precision == Precision::Emulated; }
  // Whether scores need per-element work beyond the GEMM, the window and the block mask (which HeadView checks
  // tile by tile: fully_visible).
  bool elementwise_scores() const {
    return p.softcap > 0 || p.bias != BroadcastShape::None || p.mask != BroadcastShape::None || p.alibi;
  }
  // The attention sink logit of q head h (problem.sinks), in the accumulator type.
  template <class Acc>
  Acc sink(int64_t h) const {
    return static_cast<Acc>(in.sinks[h]);
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
