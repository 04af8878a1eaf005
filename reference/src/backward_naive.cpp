// Standard attention backward for one (batch, kv head) at a time, every matrix materialized:
//   P = softmax(S);  dV = P^T dO;  dP = dO V^T;  dS = P o (dP - rowsum(dO o O));
//   dQ = scale dS K;  dK = scale dS^T Q   (dS taken through the softcap's derivative; GQA: dK, dV summed over
//   the q heads of the group, in head order). MLA's dV, the gradient of K's first dv columns, is reported as
//   written into dK's and read back by dK's kernel (attention.cpp folds it into dk).
#include <vector>

#include "backward_common.h"
#include "head_view.h"
#include "kernels.h"
#include "memory_limit.h"
#include "softmax_ops.h"

namespace flashsim::ref::detail {

template <class Acc>
void backward_naive(const ProblemContext& ctx, const ForwardResult& fwd, Gradients& out) {
  const AttentionProblem& p = ctx.p;
  const int64_t d = p.head_dim, dv = p.head_dim_v;
  const bool emu = ctx.emulated();
  const Acc scale = static_cast<Acc>(ctx.scale);
  BiasGradient<Acc> dbias(p);
  out.dq.assign(p.q_elems(), 0.0);
  out.dk.assign(p.k_elems(), 0.0);
  out.dv.assign(p.v_elems(), 0.0);
  // Attention sinks: each (batch, q head)'s -sum_i P_sink,i D_i, added over the batch afterwards.
  std::vector<Acc> sink_part(p.sinks ? p.batch * p.heads_q : 0, Acc(0));
  const int64_t tasks = p.batch * p.heads_kv;
  auto* obs = ctx.observer();
#pragma omp parallel for schedule(dynamic, 1) num_threads(ctx.threads())
  for (int64_t t = 0; t < tasks; ++t) {
    const int64_t hk = t / p.batch, b = t % p.batch;
    const int64_t lq = p.len_q(b), lk = p.len_k(b);
    if (lq == 0 || lk == 0) continue;  // nothing visible: zero gradients
    TileArray<Acc> q(lq, d), k(lk, d), v(lk, dv), dout(lq, dv), o(lq, dv), s(lq, lk), dcap(lq, lk),
        pr(lq, lk), dp(lq, lk), dq(lq, d);
    TileArray<Acc> dk = TileArray<Acc>::Zero(lk, d), dvv = TileArray<Acc>::Zero(lk, dv);
    ColArray<Acc> m(lq), l(lq), shift(lq), delta(lq), p_sink(lq);
    for (int64_t h = hk * p.group_size(); h < (hk + 1) * p.group_size(); ++h) {
      HeadView<Acc> hv(ctx, b, h);
      // With an observer, the steps are reported as the kernels of standard attention's backward, every
      // matrix materialized in global memory between them (S, P, dP and dS; dP and dS reuse S's buffer).
      // The kernels in order: scores, softmax, dp, ds, dv, dq, dk.
      int step = 0;
      const auto kernel = [&] {
        if (!obs) return;
        obs->kernel_begin({Algorithm::Naive, Pass::Backward, step++});
        obs->cta_begin(b, h, 0);
      };
      const auto done = [&] {
        if (!obs) return;
        obs->cta_end();
        obs->kernel_end();
      };
      const auto move = [&](AccessKind a, TensorId id, int64_t head, int64_t rows, int64_t cols) {
        if (obs) obs->access({a, id, b, head, 0, rows, 0, cols});
      };
      kernel();  // naive_bwd_scores
      hv.load_q(0, lq, q.data());
      hv.load_k(0, lk, k.data());
      hv.scores(q.data(), 0, lq, k.data(), 0, lk, s.data(), p.softcap > 0 ? dcap.data() : nullptr);
      move(AccessKind::Store, TensorId::Scores, h, lq, lk);
      done();
      // P = softmax(S), recomputed from scratch (not from the forward's lse).
      kernel();  // naive_bwd_softmax
      move(AccessKind::Load, TensorId::Scores, h, lq, lk);
      row_max(s.data(), lq, lk, m);
      for (int64_t r = 0; r < lq; ++r) shift(r) = safe_shift(m(r));
      exp_rows(s.data(), lq, lk, shift, true, pr.data());
      row_sum(pr.data(), lq, lk, l);
      for (int64_t r = 0; r < lq; ++r) {
        // A sink joins the denominator: m, l take it in, P is rescaled by alpha, P_sink = e^(sink - m) / l.
        const Acc alpha = p.sinks ? fold_sink(m(r), l(r), ctx.sink<Acc>(h)) : Acc(1);
        pr.row(r) *= l(r) > 0 ? alpha / l(r) : Acc(0);
        if (p.sinks) p_sink(r) = std::exp(ctx.sink<Acc>(h) - m(r)) / l(r);
      }
      move(AccessKind::Store, TensorId::Probs, h, lq, lk);
      done();
      // dP = dO V^T
      kernel();  // naive_bwd_dp
      hv.load_do(0, lq, dout.data());
      hv.load_v(0, lk, v.data(), ValuesRead::Alone);  // MLA: K's first dv columns
      gemm<Acc>(ctx.opt.use_blas, Trans::No, Trans::Yes, lq, lk, dv, Acc(1), dout.data(), dv, v.data(), dv,
                Acc(0), dp.data(), lk);
      hv.apply_dropout(dp.data(), 0, lq, 0, lk);  // dropout: dP = dP' o keep / (1 - p)
      move(AccessKind::Store, TensorId::Scores, h, lq, lk);
      done();
      // D = rowsum(dO o O);  dS = P o (dP - D)
      kernel();  // naive_bwd_ds
      move(AccessKind::Load, TensorId::Probs, h, lq, lk);
      move(AccessKind::Load, TensorId::Scores, h, lq, lk);
      move(AccessKind::Load, TensorId::dO, h, lq, dv);
      hv.load_o(fwd.o, 0, lq, o.data());
      delta = (dout * o).rowwise().sum();
      softmax_grad_rows(pr.data(), dp.data(), lq, lk, delta);
      // dsink = sum_i P_sink,i (0 - D_i): the sink's score has no value, so its dP is 0.
      if (p.sinks) sink_part[b * p.heads_q + h] = -(p_sink * delta).sum();
      if (dbias.enabled()) {
        for (int64_t i = 0; i < lq; ++i)
          for (int64_t j = 0; j < lk; ++j) dbias.at(b, h, i, j) = dp(i, j);
      }
      move(AccessKind::Store, TensorId::Scores, h, lq, lk);
      done();
      // dV += P^T dO
      kernel();  // naive_bwd_dv
      move(AccessKind::Load, TensorId::Probs, h, lq, lk);
      move(AccessKind::Load, TensorId::dO, h, lq, dv);
      hv.apply_dropout(pr.data(), 0, lq, 0, lk);  // dV += P'^T dO, P' = P o keep / (1 - p)
      if (emu) round_to_dtype(pr.data(), lq * lk, p.dtype);
      gemm<Acc>(ctx.opt.use_blas, Trans::Yes, Trans::No, lk, dv, lq, Acc(1), pr.data(), lk, dout.data(), dv,
                Acc(1), dvv.data(), dv);
      move(AccessKind::Store, p.mla ? TensorId::dK : TensorId::dV, h, lk, dv);  // MLA: dK's first dv columns
      done();
      if (p.softcap > 0) dp *= dcap;
      if (emu) round_to_dtype(dp.data(), lq * lk, p.dtype);
      // dQ = scale dS K;  dK += scale dS^T Q
      kernel();  // naive_bwd_dq
      move(AccessKind::Load, TensorId::Scores, h, lq, lk);
      move(AccessKind::Load, TensorId::K, hk, lk, d);
      gemm<Acc>(ctx.opt.use_blas, Trans::No, Trans::No, lq, d, lk, scale, dp.data(), lk, k.data(), d, Acc(0),
                dq.data(), d);
      for (int64_t i = 0; i < lq; ++i)
        for (int64_t c = 0; c < d; ++c) out.dq[hv.q_index(i, d, c)] = stored_output<Acc>(dq(i, c), ctx);
      move(AccessKind::Store, TensorId::dQ, h, lq, d);
      done();
      kernel();  // naive_bwd_dk
      move(AccessKind::Load, TensorId::Scores, h, lq, lk);
      move(AccessKind::Load, TensorId::Q, h, lq, d);
      if (p.mla) move(AccessKind::Load, TensorId::dK, h, lk, dv);  // V's gradient, added to dS^T Q's
      gemm<Acc>(ctx.opt.use_blas, Trans::Yes, Trans::No, lk, d, lq, scale, dp.data(), lk, q.data(), d, Acc(1),
                dk.data(), d);
      move(AccessKind::Store, TensorId::dK, h, lk, d);
      done();
    }
    HeadView<Acc> hv0(ctx, b, hk * p.group_size());
    for (int64_t j = 0; j < lk; ++j) {
      for (int64_t c = 0; c < d; ++c) out.dk[hv0.k_index(j, d, c)] = stored_output<Acc>(dk(j, c), ctx);
      for (int64_t c = 0; c < dv; ++c) out.dv[hv0.k_index(j, dv, c)] = stored_output<Acc>(dvv(j, c), ctx);
    }
  }
  out.dbias = dbias.reduce(ctx);
  if (p.sinks) out.dsinks = reduce_sink_partials(p, sink_part);
}

template void backward_naive<float>(const ProblemContext&, const ForwardResult&, Gradients&);
template void backward_naive<double>(const ProblemContext&, const ForwardResult&, Gradients&);

}  // namespace flashsim::ref::detail
