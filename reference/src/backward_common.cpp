#include "backward_common.h"

#include <cmath>

#include "softmax_ops.h"

namespace flashsim::ref::detail {

template <class Acc>
std::vector<Acc> compute_delta(const ProblemContext& ctx, const ForwardResult& fwd, const TileConfig& tile) {
  const AttentionProblem& p = ctx.p;
  const int64_t dv = p.head_dim_v;
  std::vector<Acc> delta(p.lse_elems());
  const int64_t tasks = p.batch * p.heads_q;
  auto* obs = ctx.observer();
  if (obs) obs->kernel_begin({Algorithm::Fa2, Pass::Backward, 0});  // bwd_dot_do_o
#pragma omp parallel for schedule(dynamic, 1) num_threads(ctx.threads())
  for (int64_t t = 0; t < tasks; ++t) {
    const int64_t h = t / p.batch, b = t % p.batch;
    HeadView<Acc> hv(ctx, b, h);
    for (int64_t i0 = 0; i0 < hv.lq; i0 += tile.bwd_block_q) {
      const int64_t n = std::min(tile.bwd_block_q, hv.lq - i0);
      if (obs) {
        obs->cta_begin(b, h, i0 / tile.bwd_block_q);
        obs->access({AccessKind::Load, TensorId::dO, b, h, i0, n, 0, dv});
        obs->access({AccessKind::Load, TensorId::O, b, h, i0, n, 0, dv});
      }
      for (int64_t i = i0; i < i0 + n; ++i) {
        Acc sum = 0;  // D_i = sum_c dO_ic * O_ic
        for (int64_t c = 0; c < dv; ++c) {
          const int64_t idx = hv.q_index(i, dv, c);
          sum += static_cast<Acc>(ctx.in.dout[idx]) * static_cast<Acc>(fwd.o[idx]);
        }
        delta[hv.lse_index(i)] = sum;
      }
      if (obs) {
        obs->release(TensorId::dO);
        obs->release(TensorId::O);
        obs->access({AccessKind::Store, TensorId::Delta, b, h, i0, n, 0, 1});
        // As FlashAttention-2's dot_do_o kernel: a second fp32 row statistic, and the clear of the fp32 dQ
        // accumulator (rows padded to a multiple of 128) that the main kernel's atomics add into.
        obs->access({AccessKind::Store, TensorId::RowSum, b, h, i0, n, 0, 1});
        const int64_t padded = dq_accum_padded_rows(hv.lq);
        obs->access({AccessKind::Store, TensorId::DqAccum, b, h, i0, std::min(tile.bwd_block_q, padded - i0),
                     0, p.head_dim});
        obs->cta_end();
      }
    }
  }
  if (obs) obs->kernel_end();
  return delta;
}

template <class Acc>
std::vector<Acc> sink_partials(const ProblemContext& ctx, const std::vector<double>& lse,
                               const std::vector<Acc>& delta) {
  const AttentionProblem& p = ctx.p;
  std::vector<Acc> part(p.batch * p.heads_q, Acc(0));
  for (int64_t b = 0; b < p.batch; ++b) {
    for (int64_t h = 0; h < p.heads_q; ++h) {
      const Acc sink = ctx.sink<Acc>(h);
      Acc sum = 0;  // -sum_i e^(sink - lse_i) D_i
      for (int64_t i = 0; i < p.len_q(b); ++i) {
        const int64_t idx = p.lse_index(b, h, i);
        sum -= std::exp(sink - static_cast<Acc>(lse[idx])) * delta[idx];
      }
      part[b * p.heads_q + h] = sum;
    }
  }
  return part;
}

template <class Acc>
std::vector<double> reduce_sink_partials(const AttentionProblem& p, const std::vector<Acc>& partials) {
  std::vector<double> out(p.heads_q);
  for (int64_t h = 0; h < p.heads_q; ++h) {
    Acc sum = 0;  // in batch order
    for (int64_t b = 0; b < p.batch; ++b) sum += partials[b * p.heads_q + h];
    out[h] = static_cast<double>(sum);  // kept in the accumulator's precision: sinks are fp32 parameters
  }
  return out;
}

int64_t bias_gradient_bytes(const AttentionProblem& p, int acc_bytes) {
  if (p.bias == BroadcastShape::None) return 0;
  return p.broadcast_elems(BroadcastShape::BHQK) * acc_bytes;
}

template <class Acc>
BiasGradient<Acc>::BiasGradient(const AttentionProblem& p) : p_(p), enabled_(p.bias != BroadcastShape::None) {
  if (enabled_) full_.assign(p.broadcast_elems(BroadcastShape::BHQK), Acc(0));
}

template <class Acc>
std::vector<double> BiasGradient<Acc>::reduce(const ProblemContext& ctx) const {
  if (!enabled_) return {};
  std::vector<Acc> sum(p_.bias_elems(), Acc(0));
  const int64_t plane = p_.seqlen_q * p_.seqlen_k;
  // dbias = sum over the broadcast dims of dS, in order b = 0.., h = 0.. (fixed, so thread-count
  // independent).
  for (int64_t b = 0; b < p_.batch; ++b) {
    for (int64_t h = 0; h < p_.heads_q; ++h) {
      const Acc* src = full_.data() + (b * p_.heads_q + h) * plane;
      Acc* dst = sum.data() + p_.broadcast_index(p_.bias, b, h, 0, 0);
#pragma omp parallel for schedule(static) num_threads(ctx.threads())
      for (int64_t n = 0; n < plane; ++n) dst[n] += src[n];
    }
  }
  std::vector<double> out(sum.size());
  for (size_t n = 0; n < sum.size(); ++n) out[n] = stored_output<Acc>(sum[n], ctx);
  return out;
}

template std::vector<float> compute_delta<float>(const ProblemContext&, const ForwardResult&,
                                                 const TileConfig&);
template std::vector<double> compute_delta<double>(const ProblemContext&, const ForwardResult&,
                                                   const TileConfig&);
template std::vector<float> sink_partials<float>(const ProblemContext&, const std::vector<double>&,
                                                 const std::vector<float>&);
template std::vector<double> sink_partials<double>(const ProblemContext&, const std::vector<double>&,
                                                   const std::vector<double>&);
template std::vector<double> reduce_sink_partials<float>(const AttentionProblem&, const std::vector<float>&);
template std::vector<double> reduce_sink_partials<double>(const AttentionProblem&,
                                                          const std::vector<double>&);
template class BiasGradient<float>;
template class BiasGradient<double>;

}  // namespace flashsim::ref::detail
