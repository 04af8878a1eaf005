// FlashAttention (the first paper's loop order): key blocks outer, query blocks inner; each query block's O,
// row max m and row sum l live in global memory and are re-read and re-written once per key block. A (key
// block, query block) pair the block mask hides entirely is skipped (no loads, no stores, no work), and a key
// block whose pairs are all skipped is not loaded.
#include <vector>

#include "head_view.h"
#include "kernels.h"
#include "softmax_ops.h"

namespace flashsim::ref::detail {

template <class Acc>
void forward_fa1(const ProblemContext& ctx, const TileConfig& tile, ForwardResult& out) {
  const AttentionProblem& p = ctx.p;
  const int64_t d = p.head_dim, dv = p.head_dim_v, br = tile.block_q, bc = tile.block_k;
  const int64_t tasks = p.batch * p.heads_q;  // one CTA per (batch, head), as FlashAttention-1
  if (auto* obs = ctx.observer()) obs->kernel_begin({Algorithm::Fa1, Pass::Forward, 0});
  TileCounter total;
#pragma omp parallel num_threads(ctx.threads())
  {
    TileCounter counts;
    TileArray<Acc> q(br, d), k(bc, d), v(bc, dv), s(br, bc), pt(br, bc), pv(br, dv);
    ColArray<Acc> mt(br), lt(br), shift(br);
#pragma omp for schedule(dynamic, 1)
    for (int64_t t = 0; t < tasks; ++t) {
      const int64_t h = t / p.batch, b = t % p.batch;
      HeadView<Acc> hv(ctx, b, h);
      auto* obs = ctx.observer();
      if (obs) obs->cta_begin(b, h, 0);
      // The "global memory" O, m, l of this head, read and written block by block.
      TileArray<Acc> o = TileArray<Acc>::Zero(hv.lq, dv);
      ColArray<Acc> m = ColArray<Acc>::Constant(hv.lq, neg_inf<Acc>());
      ColArray<Acc> l = ColArray<Acc>::Zero(hv.lq);
      for (int64_t j0 = 0; j0 < hv.lk; j0 += bc) {
        const int64_t mk = std::min(bc, hv.lk - j0);
        int64_t qbegin, qend;
        hv.query_range(j0, mk, qbegin, qend);
        if (qbegin >= qend) continue;
        const int64_t ibegin = (qbegin / br) * br;
        int64_t active = 0;
        for (int64_t i0 = ibegin; i0 < qend; i0 += br) {
          const bool a = hv.tile_active(i0, std::min(br, hv.lq - i0), j0, mk);
          counts.add(a);
          active += a;
        }
        if (active == 0) continue;  // every pair of this key block skipped: K and V not loaded
        hv.load_k(j0, mk, k.data());
        hv.load_v(j0, mk, v.data(), ValuesRead::WithKeys);
        for (int64_t i0 = ibegin; i0 < qend; i0 += br) {
          const int64_t n = std::min(br, hv.lq - i0);
          if (!hv.tile_active(i0, n, j0, mk)) continue;
          hv.load_q(i0, n, q.data());
          if (obs) {
            obs->access({AccessKind::Load, TensorId::O, b, h, i0, n, 0, dv});
            obs->access({AccessKind::Load, TensorId::RowMax, b, h, i0, n, 0, 1});
            obs->access({AccessKind::Load, TensorId::RowSum, b, h, i0, n, 0, 1});
          }
          hv.scores(q.data(), i0, n, k.data(), j0, mk, s.data());
          // m~ = rowmax(S); P~ = exp(S - m~); l~ = rowsum(P~)
          row_max(s.data(), n, mk, mt);
          for (int64_t r = 0; r < n; ++r) shift(r) = safe_shift(mt(r));
          exp_rows(s.data(), n, mk, shift, true, pt.data());
          row_sum(pt.data(), n, mk, lt);
          hv.apply_dropout(pt.data(), i0, n, j0, mk);  // P~' = P~ o keep / (1 - p), after l~
          if (ctx.emulated()) round_to_dtype(pt.data(), n * mk, p.dtype);
          gemm<Acc>(ctx.opt.use_blas, Trans::No, Trans::No, n, dv, mk, Acc(1), pt.data(), mk, v.data(), dv,
                    Acc(0), pv.data(), dv);
          for (int64_t r = 0; r < n; ++r) {
            const int64_t i = i0 + r;
            // m_new = max(m_i, m~); l_new = e^(m_i - m_new) l_i + e^(m~ - m_new) l~;
            // O_i = (l_i e^(m_i - m_new) O_i + e^(m~ - m_new) P~ V) / l_new
            const Acc m_new = std::max(m(i), mt(r));
            const Acc a = safe_exp_diff(m(i), m_new), c = safe_exp_diff(mt(r), m_new);
            const Acc l_new = a * l(i) + c * lt(r);
            if (l_new > 0) o.row(i) = (l(i) * a * o.row(i) + c * pv.row(r)) / l_new;
            m(i) = m_new;
            l(i) = l_new;
          }
          if (obs) {
            obs->release(TensorId::Q);
            obs->release(TensorId::O);
            obs->access({AccessKind::Store, TensorId::O, b, h, i0, n, 0, dv});
            obs->access({AccessKind::Store, TensorId::RowMax, b, h, i0, n, 0, 1});
            obs->access({AccessKind::Store, TensorId::RowSum, b, h, i0, n, 0, 1});
          }
        }
        if (obs) {
          obs->release(TensorId::K);
          obs->release(TensorId::V);
        }
      }
      for (int64_t i = 0; i < hv.lq; ++i) {
        if (p.sinks) {  // O is normalized by l: O' = O l alpha / l' after folding the sink into m and l
          const Acc l_old = l(i);
          const Acc alpha = fold_sink(m(i), l(i), ctx.sink<Acc>(h));
          o.row(i) *= l_old * alpha / l(i);
        }
        for (int64_t c = 0; c < dv; ++c) out.o[hv.q_index(i, dv, c)] = stored_output<Acc>(o(i, c), ctx);
        out.lse[hv.lse_index(i)] = static_cast<double>(row_lse(m(i), l(i)));
      }
      if (obs) obs->cta_end();
    }
    counts.add_to(total);
  }
  if (auto* obs = ctx.observer()) obs->kernel_end();
  out.tiles_skipped = total.skipped;
  out.tiles_computed = total.computed;
}

template void forward_fa1<float>(const ProblemContext&, const TileConfig&, ForwardResult&);
template void forward_fa1<double>(const ProblemContext&, const TileConfig&, ForwardResult&);

}  // namespace flashsim::ref::detail
