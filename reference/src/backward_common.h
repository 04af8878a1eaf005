#pragma once
// Pieces both backward algorithms share: D = rowsum(dO o O), the bias-gradient scratch and its reduction.
#include <vector>

#include "head_view.h"
#include "kernels.h"

namespace flashsim::ref::detail {

// D[lse index] = sum_c dO[i, c] * O[i, c] in the accumulator type, for every (batch, head, row).
template <class Acc>
std::vector<Acc> compute_delta(const ProblemContext& ctx, const ForwardResult& fwd, const TileConfig& tile);

// Attention sinks: the gradient of sink h is dsink_h = -sum over the rows (b, i) of head h of P_sink * D_i, with
// P_sink = e^(sink_h - lse_i) the sink's probability (dS of a logit with no value vector: P (0 - D)).
// sink_partials gives each (batch, head)'s sum in [batch, heads_q] from the forward's lse and D (the tiled
// backward); reduce_sink_partials adds them over the batch in order (thread-count independent) into dsinks.
template <class Acc>
std::vector<Acc> sink_partials(const ProblemContext& ctx, const std::vector<double>& lse,
                               const std::vector<Acc>& delta);
template <class Acc>
std::vector<double> reduce_sink_partials(const AttentionProblem& p, const std::vector<Acc>& partials);

// dS for every (batch, q head, i, j) of the bias's full [batch, heads_q, seqlen_q, seqlen_k] shape, reduced
// afterwards over the bias's broadcast dims in a fixed order (batch, then head).
template <class Acc>
class BiasGradient {
 public:
  explicit BiasGradient(const AttentionProblem& p);
  bool enabled() const { return enabled_; }
  Acc& at(int64_t b, int64_t h, int64_t i, int64_t j) {
    return full_[((b * p_.heads_q + h) * p_.seqlen_q + i) * p_.seqlen_k + j];
  }
  // dbias in the bias's own shape, rounded to the input dtype when emulating.
  std::vector<double> reduce(const ProblemContext& ctx) const;

 private:
  const AttentionProblem& p_;
  bool enabled_;
  std::vector<Acc> full_;
};

// Bytes the bias-gradient scratch needs (0 without a bias).
int64_t bias_gradient_bytes(const AttentionProblem& p, int acc_bytes);

}  // namespace flashsim::ref::detail
