// FlashAttention-2 backward: key blocks outer. For each key block, every query block that can see it
// recomputes P = exp(S - lse) from the saved lse, then
//   dV_j += P^T dO_i;  dP = dO_i V_j^T;  dS = P o (dP - D_i);  dQ_i += scale dS K_j;  dK_j += scale dS^T Q_i
// (dS taken through the softcap's derivative). dQ is accumulated across key blocks. Parallel without atomics:
// a task owns (batch, kv head, a chunk of key blocks); each chunk accumulates its own dQ partial, and the
// partials are added in chunk order, so results do not depend on the thread count. A (key block, query block)
// pair the block mask hides entirely is skipped (P = 0 there: no contribution to any gradient; no loads, no
// work). A CTA with no pair to compute (the window leaves none, or the block mask skips them all) loads no K
// or V; it still stores its zero dK and dV.
#include <algorithm>
#include <vector>

#include "backward_common.h"
#include "head_view.h"
#include "kernels.h"
#include "memory_limit.h"
#include "softmax_ops.h"

namespace flashsim::ref::detail {

namespace {

// Enough tasks to keep 8 threads busy when batch * heads_kv is small; never more dQ-partial memory than
// 256 MiB. Depends on the problem alone (not the thread count), so the summation order is fixed.
constexpr int64_t kTargetTasks = 8;
constexpr int64_t kMaxPartialBytes = int64_t{256} << 20;

int64_t key_chunks(const AttentionProblem& p, const TileConfig& tile, int acc_bytes) {
  const int64_t max_blocks = num_blocks(p.seqlen_k, tile.bwd_block_k);
  int64_t chunks = std::clamp<int64_t>((kTargetTasks + p.batch * p.heads_kv - 1) / (p.batch * p.heads_kv), 1,
                                       std::max<int64_t>(1, max_blocks));
  const int64_t dq_bytes = p.q_elems() * acc_bytes;
  while (chunks > 1 && (chunks - 1) * dq_bytes > kMaxPartialBytes) --chunks;
  return chunks;
}

template <class Acc>
struct BackwardBuffers {
  TileArray<Acc> q, k, v, dout, s, dcap, pr, dp, dk, dv;
  ColArray<Acc> lse, delta;
  BackwardBuffers(const TileConfig& t, const AttentionProblem& p)
      : q(t.bwd_block_q, p.head_dim),
        k(t.bwd_block_k, p.head_dim),
        v(t.bwd_block_k, p.head_dim_v),
        dout(t.bwd_block_q, p.head_dim_v),
        s(t.bwd_block_q, t.bwd_block_k),
        dcap(t.bwd_block_q, t.bwd_block_k),
        pr(t.bwd_block_q, t.bwd_block_k),
        dp(t.bwd_block_q, t.bwd_block_k),
        dk(t.bwd_block_k, p.head_dim),
        dv(t.bwd_block_k, p.head_dim_v),
        lse(t.bwd_block_q),
        delta(t.bwd_block_q) {}
};

}  // namespace

template <class Acc>
void backward_tiled(const ProblemContext& ctx, const TileConfig& tile, const ForwardResult& fwd,
                    Gradients& out) {
  const AttentionProblem& p = ctx.p;
  const int64_t d = p.head_dim, dv = p.head_dim_v, br = tile.bwd_block_q, bc = tile.bwd_block_k;
  const bool emu = ctx.emulated();
  const Acc scale = static_cast<Acc>(ctx.scale);
  const int64_t chunks = key_chunks(p, tile, sizeof(Acc));
  require_memory(ctx,
                 (chunks * p.q_elems() + p.lse_elems()) * int64_t(sizeof(Acc)) +
                     (p.q_elems() + p.k_elems() + p.v_elems()) * int64_t(sizeof(double)) +
                     bias_gradient_bytes(p, sizeof(Acc)),
                 "tiled backward");
  const std::vector<Acc> delta = compute_delta<Acc>(ctx, fwd, tile);
  // dq_parts[c]: chunk c's dQ partial, in the layout of q.
  std::vector<std::vector<Acc>> dq_parts(chunks, std::vector<Acc>(p.q_elems(), Acc(0)));
  // Each kv row's dK and dV are finished by one task and written once, straight into the outputs.
  out.dk.assign(p.k_elems(), 0.0);
  out.dv.assign(p.v_elems(), 0.0);
  BiasGradient<Acc> dbias(p);
  auto* obs = ctx.observer();
  if (obs) obs->kernel_begin({Algorithm::Fa2, Pass::Backward, 1});  // bwd_dq_dk_dv
  const int64_t tasks = p.batch * p.heads_kv * chunks;
  TileCounter total;
#pragma omp parallel num_threads(ctx.threads())
  {
    BackwardBuffers<Acc> buf(tile, p);
    TileCounter counts;
#pragma omp for schedule(dynamic, 1)
    for (int64_t t = 0; t < tasks; ++t) {
      const int64_t c = t % chunks, b = (t / chunks) % p.batch, hk = t / (chunks * p.batch);
      std::vector<Acc>& dq = dq_parts[c];
      const int64_t lk = p.len_k(b), nk = num_blocks(lk, bc);
      for (int64_t jb = nk * c / chunks; jb < nk * (c + 1) / chunks; ++jb) {
        const int64_t j0 = jb * bc, m = std::min(bc, lk - j0);
        buf.dk.topRows(m).setZero();
        buf.dv.topRows(m).setZero();
        for (int64_t h = hk * p.group_size(); h < (hk + 1) * p.group_size(); ++h) {
          HeadView<Acc> hv(ctx, b, h);
          if (obs) obs->cta_begin(b, h, jb);
          int64_t qbegin, qend;
          hv.query_range(j0, m, qbegin, qend);
          const int64_t ibegin = (qbegin / br) * br;
          int64_t active = 0;
          for (int64_t i0 = ibegin; i0 < qend; i0 += br) {
            const bool a = hv.tile_active(i0, std::min(br, hv.lq - i0), j0, m);
            counts.add(a);
            active += a;
          }
          // K and V are loaded when some pair is computed (as FlashAttention-2, whose CTA with no query block
          // to visit writes zero dK, dV and exits; the block mask's skipped pairs count as none).
          if (active > 0) {
            hv.load_k(j0, m, buf.k.data());
            hv.load_v(j0, m, buf.v.data(), ValuesRead::WithKeys);
          }
          for (int64_t i0 = ibegin; i0 < qend; i0 += br) {
            const int64_t n = std::min(br, hv.lq - i0);
            if (!hv.tile_active(i0, n, j0, m)) continue;
            hv.load_q(i0, n, buf.q.data());
            hv.load_do(i0, n, buf.dout.data());
            if (obs) {
              obs->access({AccessKind::Load, TensorId::Lse, b, h, i0, n, 0, 1});
              obs->access({AccessKind::Load, TensorId::Delta, b, h, i0, n, 0, 1});
            }
            for (int64_t r = 0; r < n; ++r) {
              buf.lse(r) = static_cast<Acc>(fwd.lse[hv.lse_index(i0 + r)]);
              buf.delta(r) = delta[hv.lse_index(i0 + r)];
            }
            hv.scores(buf.q.data(), i0, n, buf.k.data(), j0, m, buf.s.data(),
                      p.softcap > 0 ? buf.dcap.data() : nullptr);
            // P = exp(S - lse): the forward's probabilities, recomputed (0 for rows with lse = -inf).
            ColArray<Acc> shift = buf.lse.head(n).unaryExpr([](Acc x) { return safe_shift(x); });
            exp_rows(buf.s.data(), n, m, shift, true, buf.pr.data());
            // dP = dO V^T
            gemm<Acc>(ctx.opt.use_blas, Trans::No, Trans::Yes, n, m, dv, Acc(1), buf.dout.data(), dv,
                      buf.v.data(), dv, Acc(0), buf.dp.data(), m);
            // Dropout: that was dP' (of P' = P o Z, Z = keep / (1 - p)); dP = dP' o Z
            hv.apply_dropout(buf.dp.data(), i0, n, j0, m);
            // dS = P o (dP - D)   (computed from the unrounded P, as FlashAttention-2 does)
            softmax_grad_rows(buf.pr.data(), buf.dp.data(), n, m, buf.delta);
            auto dS = TileMap<Acc>(buf.dp.data(), n, m);
            if (dbias.enabled()) {
              for (int64_t r = 0; r < n; ++r)
                for (int64_t q = 0; q < m; ++q) dbias.at(b, h, i0 + r, j0 + q) = dS(r, q);
            }
            // dV_j += P'^T dO   (P' = P o Z with dropout; rounded to the input dtype when emulating)
            hv.apply_dropout(buf.pr.data(), i0, n, j0, m);
            if (emu) round_to_dtype(buf.pr.data(), n * m, p.dtype);
            gemm<Acc>(ctx.opt.use_blas, Trans::Yes, Trans::No, m, dv, n, Acc(1), buf.pr.data(), m,
                      buf.dout.data(), dv, Acc(1), buf.dv.data(), dv);
            // Through the softcap: d(raw score) = dS * (1 - tanh^2).
            if (p.softcap > 0) dS *= TileMap<Acc>(buf.dcap.data(), n, m);
            if (emu) round_to_dtype(buf.dp.data(), n * m, p.dtype);
            // dQ_i += scale dS K_j  (rows of this head in the chunk's partial)
            Acc* dq_rows = dq.data() + hv.q_index(i0, d, 0);
            gemm<Acc>(ctx.opt.use_blas, Trans::No, Trans::No, n, d, m, scale, buf.dp.data(), m, buf.k.data(),
                      d, Acc(1), dq_rows, p.heads_q * d);
            // dK_j += scale dS^T Q_i
            gemm<Acc>(ctx.opt.use_blas, Trans::Yes, Trans::No, m, d, n, scale, buf.dp.data(), m, buf.q.data(),
                      d, Acc(1), buf.dk.data(), d);
            if (obs) {
              obs->release(TensorId::Q);
              obs->release(TensorId::dO);
              // FlashAttention-2's atomics cover the whole Br-row tile (the accumulator is padded).
              const bool atomic = tile.dq_strategy == DqStrategy::Atomic;
              obs->access({atomic ? AccessKind::Reduce : AccessKind::Store, TensorId::DqAccum, b, h, i0,
                           atomic ? tile.bwd_block_q : n, 0, d});
              if (dbias.enabled()) obs->access({AccessKind::Store, TensorId::dBias, b, h, i0, n, j0, m});
            }
          }
          if (obs) {
            if (active > 0) {
              obs->release(TensorId::K);
              obs->release(TensorId::V);
            }
            obs->access({AccessKind::Store, TensorId::dK, b, h, j0, m, 0, d});
            if (!p.mla) obs->access({AccessKind::Store, TensorId::dV, b, h, j0, m, 0, dv});  // MLA: in dK
            obs->cta_end();
          }
        }
        // dK, dV of kv head hk: the sum over its group of q heads, in head order.
        const int64_t k0 = ctx.cu_k[b] + j0;
        for (int64_t r = 0; r < m; ++r) {
          const int64_t kidx = (k0 + r) * p.heads_kv + hk;
          for (int64_t e = 0; e < d; ++e) out.dk[kidx * d + e] = stored_output<Acc>(buf.dk(r, e), ctx);
          for (int64_t e = 0; e < dv; ++e) out.dv[kidx * dv + e] = stored_output<Acc>(buf.dv(r, e), ctx);
        }
      }
    }
    counts.add_to(total);
  }
  if (obs) obs->kernel_end();
  out.tiles_skipped = total.skipped;
  out.tiles_computed = total.computed;

  // dQ = sum of the chunk partials, in chunk order.
  out.dq.resize(p.q_elems());
#pragma omp parallel for schedule(static) num_threads(ctx.threads())
  for (int64_t n = 0; n < p.q_elems(); ++n) {
    Acc sum = dq_parts[0][n];
    for (int64_t c = 1; c < chunks; ++c) sum += dq_parts[c][n];
    out.dq[n] = stored_output<Acc>(sum, ctx);
  }
  if (obs) {
    obs->kernel_begin({Algorithm::Fa2, Pass::Backward, 2});  // bwd_convert_dq
    for (int64_t h = 0; h < p.heads_q; ++h)
      for (int64_t b = 0; b < p.batch; ++b)
        for (int64_t i0 = 0; i0 < p.len_q(b); i0 += br) {
          const int64_t n = std::min(br, p.len_q(b) - i0);
          obs->cta_begin(b, h, i0 / br);
          // The whole Br-row tile of the accumulator (padded to 128 rows) is read; the dQ store is
          // predicated.
          const int64_t padded = dq_accum_padded_rows(p.len_q(b));
          obs->access({AccessKind::Load, TensorId::DqAccum, b, h, i0, std::min(br, padded - i0), 0, d});
          obs->access({AccessKind::Store, TensorId::dQ, b, h, i0, n, 0, d});
          obs->cta_end();
        }
    obs->kernel_end();
  }
  out.dbias = dbias.reduce(ctx);
  if (p.sinks) out.dsinks = reduce_sink_partials(p, sink_partials(ctx, fwd.lse, delta));
}

template void backward_tiled<float>(const ProblemContext&, const TileConfig&, const ForwardResult&,
                                    Gradients&);
template void backward_tiled<double>(const ProblemContext&, const TileConfig&, const ForwardResult&,
                                     Gradients&);

}  // namespace flashsim::ref::detail
