// Standard attention: S = scale * Q K^T and P = softmax(S) materialized for a whole (batch, head), O = P V.
#include "head_view.h"
#include "kernels.h"
#include "softmax_ops.h"

namespace flashsim::ref::detail {

template <class Acc>
void forward_naive(const ProblemContext& ctx, ForwardResult& out) {
  const AttentionProblem& p = ctx.p;
  const int64_t d = p.head_dim, dv = p.head_dim_v;
  const int64_t tasks = p.batch * p.heads_q;
#pragma omp parallel for schedule(dynamic, 1) num_threads(ctx.threads())
  for (int64_t t = 0; t < tasks; ++t) {
    const int64_t h = t / p.batch, b = t % p.batch;
    HeadView<Acc> hv(ctx, b, h);
    const int64_t lq = hv.lq, lk = hv.lk;
    if (lk == 0) {  // no key at all: every row is fully masked (o = 0, lse = -inf, or the sink's logit)
      for (int64_t i = 0; i < lq; ++i) {
        for (int64_t c = 0; c < dv; ++c) out.o[hv.q_index(i, dv, c)] = 0.0;
        out.lse[hv.lse_index(i)] = p.sinks ? static_cast<double>(ctx.sink<Acc>(h)) : neg_inf<double>();
      }
      continue;
    }
    auto* obs = ctx.observer();
    TileArray<Acc> q(lq, d), k(lk, d), v(lk, dv), s(lq, lk), o(lq, dv);
    ColArray<Acc> m(lq), l(lq), shift(lq);
    // Kernel 1: S = scale * Q K^T (+ the score pipeline), written to global memory.
    if (obs) {
      obs->kernel_begin({Algorithm::Naive, Pass::Forward, 0});  // naive_scores
      obs->cta_begin(b, h, 0);
    }
    hv.load_q(0, lq, q.data());
    hv.load_k(0, lk, k.data());
    hv.scores(q.data(), 0, lq, k.data(), 0, lk, s.data());
    if (obs) {
      obs->access({AccessKind::Store, TensorId::Scores, b, h, 0, lq, 0, lk});
      obs->cta_end();
      obs->kernel_end();
      // Kernel 2: P = softmax(S) row by row, written over S; lse.
      obs->kernel_begin({Algorithm::Naive, Pass::Forward, 1});  // naive_softmax
      obs->cta_begin(b, h, 0);
      obs->access({AccessKind::Load, TensorId::Scores, b, h, 0, lq, 0, lk});
    }
    // m = rowmax(S); P = exp(S - m); l = rowsum(P); P = P / l
    row_max(s.data(), lq, lk, m);
    for (int64_t r = 0; r < lq; ++r) shift(r) = safe_shift(m(r));
    exp_rows(s.data(), lq, lk, shift, true, s.data());
    row_sum(s.data(), lq, lk, l);
    for (int64_t r = 0; r < lq; ++r) {
      // With a sink: m, l take e^(sink - m) in, and P (computed against the old m) is rescaled by alpha.
      const Acc alpha = p.sinks ? fold_sink(m(r), l(r), ctx.sink<Acc>(h)) : Acc(1);
      s.row(r) *= l(r) > 0 ? alpha / l(r) : Acc(0);
      out.lse[hv.lse_index(r)] = static_cast<double>(row_lse(m(r), l(r)));
    }
    hv.apply_dropout(s.data(), 0, lq, 0, lk);  // P' = P o keep / (1 - p), after the lse
    if (ctx.emulated()) round_to_dtype(s.data(), lq * lk, p.dtype);
    if (obs) {
      obs->access({AccessKind::Store, TensorId::Probs, b, h, 0, lq, 0, lk});
      obs->access({AccessKind::Store, TensorId::Lse, b, h, 0, lq, 0, 1});
      obs->cta_end();
      obs->kernel_end();
      // Kernel 3: O = P V.
      obs->kernel_begin({Algorithm::Naive, Pass::Forward, 2});  // naive_pv
      obs->cta_begin(b, h, 0);
      obs->access({AccessKind::Load, TensorId::Probs, b, h, 0, lq, 0, lk});
    }
    hv.load_v(0, lk, v.data(), ValuesRead::Alone);  // MLA: K's first dv columns
    gemm<Acc>(ctx.opt.use_blas, Trans::No, Trans::No, lq, dv, lk, Acc(1), s.data(), lk, v.data(), dv, Acc(0),
              o.data(), dv);
    for (int64_t i = 0; i < lq; ++i)
      for (int64_t c = 0; c < dv; ++c) out.o[hv.q_index(i, dv, c)] = stored_output<Acc>(o(i, c), ctx);
    if (obs) {
      obs->access({AccessKind::Store, TensorId::O, b, h, 0, lq, 0, dv});
      obs->cta_end();
      obs->kernel_end();
    }
  }
}

template void forward_naive<float>(const ProblemContext&, ForwardResult&);
template void forward_naive<double>(const ProblemContext&, ForwardResult&);

}  // namespace flashsim::ref::detail
