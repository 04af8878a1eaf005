// Three-pass safe softmax, two-pass online softmax and FlashAttention-2 (query blocks outer): each task owns
// one block of query rows of one (batch, head) and streams the key blocks its window allows, skipping those the
// block mask hides entirely. Split-KV runs FA2's task over each split's key blocks.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "head_view.h"
#include "kernels.h"
#include "softmax_ops.h"

namespace flashsim::ref::detail {

namespace {

template <class Acc>
struct RowBlockBuffers {
  TileArray<Acc> q, k, v, s, p, o;
  ColArray<Acc> m, l, m_new, shift, alpha;
  std::vector<Acc> split_o, split_lse;  // split-KV: each split's partials for the block's rows
  TileCounter counts;                   // this thread's visited key blocks, skipped and computed

  RowBlockBuffers(const TileConfig& tile, const AttentionProblem& prob)
      : q(tile.block_q, prob.head_dim),
        k(tile.block_k, prob.head_dim),
        v(tile.block_k, prob.head_dim_v),
        s(tile.block_q, tile.block_k),
        p(tile.block_q, tile.block_k),
        o(tile.block_q, prob.head_dim_v),
        m(tile.block_q),
        l(tile.block_q),
        m_new(tile.block_q),
        shift(tile.block_q),
        alpha(tile.block_q) {}
};

template <class Acc>
class RowBlockTask {
 public:
  RowBlockTask(const HeadView<Acc>& hv, const TileConfig& tile, int64_t i0, int64_t n,
               RowBlockBuffers<Acc>& buf)
      : hv_(hv), ctx_(hv.ctx()), tile_(tile), i0_(i0), n_(n), buf_(buf), dv_(ctx_.p.head_dim_v) {
    hv_.key_range(i0, n, kbegin_, kend_);
    buf_.m.head(n).setConstant(neg_inf<Acc>());
    buf_.l.head(n).setZero();
    buf_.o.topRows(n).setZero();
  }

  // Calls f(j0, m) for every key block [j0, j0 + m) the window lets these rows see (blocks aligned to Bc),
  // within keys [lo, hi) when given (a split-KV split: whole key blocks), except the blocks the block mask
  // hides entirely (HeadView::tile_active): those are skipped, no load and no work (their scores would all
  // be -inf, which leaves m, l and O as they are). `count`: add the blocks to the thread's tile counts (the
  // first pass of each algorithm counts, so a (query block, key block) pair counts once).
  template <class F>
  void for_each_key_block(F&& f, bool count) const {
    const int64_t bc = tile_.block_k;
    for (int64_t j0 = std::max((kbegin_ / bc) * bc, lo_); j0 < std::min(kend_, hi_); j0 += bc) {
      const int64_t m = std::min(bc, hv_.lk - j0);
      const bool active = hv_.tile_active(i0_, n_, j0, m);
      if (count) buf_.counts.add(active);
      if (active) f(j0, m);
    }
  }
  // Restricts the passes to keys [lo, hi) (whole key blocks) and restarts the running statistics.
  void restrict_keys(int64_t lo, int64_t hi) {
    lo_ = lo;
    hi_ = hi;
    buf_.m.head(n_).setConstant(neg_inf<Acc>());
    buf_.l.head(n_).setZero();
    buf_.o.topRows(n_).setZero();
  }

  // S tile for key block [j0, j0 + m): loads K (and V when with_v) and computes the scores. Q is loaded before
  // the first tile (a task that computes none, all its keys hidden by the window or the block mask, loads no
  // Q: FlashAttention-2's early exit).
  void score_tile(int64_t j0, int64_t m, bool with_v) {
    if (!q_loaded_) {
      hv_.load_q(i0_, n_, buf_.q.data());
      q_loaded_ = true;
    }
    hv_.load_k(j0, m, buf_.k.data());
    if (with_v) hv_.load_v(j0, m, buf_.v.data(), ValuesRead::WithKeys);
    hv_.scores(buf_.q.data(), i0_, n_, buf_.k.data(), j0, m, buf_.s.data());
    if (auto* obs = ctx_.observer()) {
      obs->release(TensorId::K);
      if (with_v) obs->release(TensorId::V);
    }
    may_have_neg_inf_ = ctx_.elementwise_scores() || !hv_.fully_visible(i0_, n_, j0, m);
  }

  // P = exp(S - shift) for the current tile.
  void exp_tile(int64_t m, const ColArray<Acc>& shift) {
    exp_rows(buf_.s.data(), n_, m, shift, may_have_neg_inf_, buf_.p.data());
  }
  // O += P' * V for the current tile [j0, j0 + m): P' = P o keep / (1 - p) with dropout (l summed P before it),
  // rounded to the input dtype first when emulating.
  void accumulate_pv(int64_t j0, int64_t m) {
    hv_.apply_dropout(buf_.p.data(), i0_, n_, j0, m);
    if (ctx_.emulated()) round_to_dtype(buf_.p.data(), n_ * m, ctx_.p.dtype);
    gemm<Acc>(ctx_.opt.use_blas, Trans::No, Trans::No, n_, dv_, m, Acc(1), buf_.p.data(), m, buf_.v.data(),
              dv_, Acc(1), buf_.o.data(), dv_);
  }

  // Pass: running max only (three-pass, pass 1).  m = max(m, rowmax(S))
  void pass_max() {
    for_each_key_block(
        [&](int64_t j0, int64_t m) {
          score_tile(j0, m, false);
          row_max(buf_.s.data(), n_, m, buf_.m_new);
          buf_.m.head(n_) = buf_.m.head(n_).max(buf_.m_new.head(n_));
        },
        true);
  }
  // Pass: sum of exp(s - m) for a known row max (three-pass, pass 2).  l += rowsum(exp(S - m))
  void pass_sum() {
    for (int64_t r = 0; r < n_; ++r) buf_.shift(r) = safe_shift(buf_.m(r));
    for_each_key_block(
        [&](int64_t j0, int64_t m) {
          score_tile(j0, m, false);
          exp_tile(m, buf_.shift);
          row_sum(buf_.p.data(), n_, m, buf_.alpha);
          buf_.l.head(n_) += buf_.alpha.head(n_);
        },
        false);
  }
  // Pass: online max and rescaled sum (two-pass, pass 1).
  //   m_new = max(m, rowmax(S));  l = l * exp(m - m_new) + rowsum(exp(S - m_new))
  void pass_online_stats() {
    for_each_key_block(
        [&](int64_t j0, int64_t m) {
          score_tile(j0, m, false);
          update_max_and_rescale(m);
          add_rescaled_row_sums(m);
        },
        true);
  }
  // Pass: normalized output for known m and l (three- and two-pass, last pass).  O += (exp(S - m) / l) * V
  void pass_output() {
    for (int64_t r = 0; r < n_; ++r) buf_.shift(r) = safe_shift(buf_.m(r));
    for_each_key_block(
        [&](int64_t j0, int64_t m) {
          score_tile(j0, m, true);
          exp_tile(m, buf_.shift);
          for (int64_t r = 0; r < n_; ++r)
            tile_row(buf_.p.data(), r, m) *= buf_.l(r) > 0 ? Acc(1) / buf_.l(r) : Acc(0);
          accumulate_pv(j0, m);
        },
        false);
  }
  // FlashAttention's single pass:
  //   m_new = max(m, rowmax(S)); alpha = exp(m - m_new); P = exp(S - m_new);
  //   l = alpha * l + rowsum(P);  O = alpha * O + P * V
  void pass_flash() {
    for_each_key_block(
        [&](int64_t j0, int64_t m) {
          score_tile(j0, m, true);
          update_max_and_rescale(m);
          add_rescaled_row_sums(m);
          scale_rows(buf_.o.data(), n_, dv_, buf_.alpha);
          accumulate_pv(j0, m);
        },
        true);
  }

  // Attention sink (problem.sinks): folds the head's sink logit into each row's m and l once the keys are
  // done, and rescales O by alpha = e^(m_old - m_new) (three- and two-pass call it before their output pass,
  // with O still zero). m' = max(m, s); l' = l alpha + e^(s - m'); O' = alpha O
  void add_sink() {
    if (!ctx_.p.sinks) return;
    const Acc sink = ctx_.sink<Acc>(hv_.h);
    for (int64_t r = 0; r < n_; ++r) {
      const Acc alpha = fold_sink(buf_.m(r), buf_.l(r), sink);
      tile_row(buf_.o.data(), r, dv_) *= alpha;
    }
  }

  // Split-KV: this split's normalized partial o_s = O / l and lse_s = m + log(l) (o_s = 0, lse_s = -inf where
  // the split holds no visible key), kept in the accumulator type (fp32 when emulating, as the kernels' fp32
  // partial buffers), into rows r of po [rows, dv] and pl [rows].
  void store_partial(Acc* po, Acc* pl) const {
    for (int64_t r = 0; r < n_; ++r) {
      const Acc l = buf_.l(r), inv = l > 0 ? Acc(1) / l : Acc(0);
      for (int64_t c = 0; c < dv_; ++c) po[r * dv_ + c] = buf_.o(r, c) * inv;
      pl[r] = row_lse(buf_.m(r), l);
    }
  }

  // Writes o (divided by l unless already normalized) and lse = m + log(l).
  void store(ForwardResult& out, bool divide_by_l) {
    for (int64_t r = 0; r < n_; ++r) {
      const Acc l = buf_.l(r);
      const Acc inv = divide_by_l ? (l > 0 ? Acc(1) / l : Acc(0)) : Acc(1);
      for (int64_t c = 0; c < dv_; ++c)
        out.o[hv_.q_index(i0_ + r, dv_, c)] = stored_output<Acc>(buf_.o(r, c) * inv, ctx_);
      out.lse[hv_.lse_index(i0_ + r)] = static_cast<double>(row_lse(buf_.m(r), l));
    }
    if (auto* obs = ctx_.observer()) {
      if (q_loaded_) obs->release(TensorId::Q);
      obs->access({AccessKind::Store, TensorId::O, hv_.b, hv_.h, i0_, n_, 0, dv_});
      obs->access({AccessKind::Store, TensorId::Lse, hv_.b, hv_.h, i0_, n_, 0, 1});
    }
  }

 private:
  // l = alpha * l + rowsum(P)
  void add_rescaled_row_sums(int64_t m) {
    for (int64_t r = 0; r < n_; ++r)
      buf_.l(r) = buf_.l(r) * buf_.alpha(r) + tile_row(buf_.p.data(), r, m).sum();
  }
  // m_new = max(m, rowmax(S)); alpha = exp(m - m_new); P = exp(S - m_new); m = m_new.
  void update_max_and_rescale(int64_t m) {
    row_max(buf_.s.data(), n_, m, buf_.m_new);
    buf_.m_new.head(n_) = buf_.m.head(n_).max(buf_.m_new.head(n_));
    for (int64_t r = 0; r < n_; ++r) {
      buf_.shift(r) = safe_shift(buf_.m_new(r));
      buf_.alpha(r) = safe_exp_diff(buf_.m(r), buf_.shift(r));
    }
    exp_tile(m, buf_.shift);
    buf_.m.head(n_) = buf_.m_new.head(n_);
  }

  const HeadView<Acc>& hv_;
  const ProblemContext& ctx_;
  const TileConfig& tile_;
  const int64_t i0_, n_;
  RowBlockBuffers<Acc>& buf_;
  const int64_t dv_;
  int64_t kbegin_ = 0, kend_ = 0;
  int64_t lo_ = 0, hi_ = std::numeric_limits<int64_t>::max();  // restrict_keys
  bool may_have_neg_inf_ = true;
  bool q_loaded_ = false;
};

// The (query block, sequence, head) tasks of a forward in the launch order of FlashAttention-2's grid: query
// block fastest, then batch, then head.
class QueryBlockTasks {
 public:
  QueryBlockTasks(const AttentionProblem& p, int64_t block_q) : block_start_(p.batch + 1, 0) {
    for (int64_t b = 0; b < p.batch; ++b)  // prefix sum of query blocks per sequence
      block_start_[b + 1] = block_start_[b] + num_blocks(p.len_q(b), block_q);
    count = block_start_.back() * p.heads_q;
  }
  // Task t as (sequence b, head h, query block blk).
  void decode(int64_t t, int64_t& b, int64_t& h, int64_t& blk) const {
    h = t / block_start_.back();
    const int64_t rest = t % block_start_.back();
    b = std::upper_bound(block_start_.begin(), block_start_.end(), rest) - block_start_.begin() - 1;
    blk = rest - block_start_[b];
  }
  int64_t count = 0;

 private:
  std::vector<int64_t> block_start_;
};

// Runs f(hv, b, h, blk, i0, n, buf) for every task (query rows [i0, i0 + n) of query block blk of head h of
// sequence b), in parallel, with one RowBlockBuffers per thread; returns the sum of the threads' tile counts.
template <class Acc, class F>
TileCounter run_tasks(const ProblemContext& ctx, const TileConfig& tile, F&& f) {
  const QueryBlockTasks tasks(ctx.p, tile.block_q);
  TileCounter total;
#pragma omp parallel num_threads(ctx.threads())
  {
    RowBlockBuffers<Acc> buf(tile, ctx.p);
#pragma omp for schedule(dynamic, 1)
    for (int64_t t = 0; t < tasks.count; ++t) {
      int64_t b, h, blk;
      tasks.decode(t, b, h, blk);
      const HeadView<Acc> hv(ctx, b, h);
      const int64_t i0 = blk * tile.block_q, n = std::min(tile.block_q, hv.lq - i0);
      f(hv, b, h, blk, i0, n, buf);
    }
    buf.counts.add_to(total);
  }
  return total;
}

}  // namespace

template <class Acc>
void forward_streaming(const ProblemContext& ctx, const TileConfig& tile, Algorithm algo,
                       ForwardResult& out) {
  if (auto* obs = ctx.observer()) obs->kernel_begin({algo, Pass::Forward, 0});
  const TileCounter counts = run_tasks<Acc>(ctx, tile,
                                            [&](const HeadView<Acc>& hv, int64_t b, int64_t h, int64_t blk,
                                                int64_t i0, int64_t n, RowBlockBuffers<Acc>& buf) {
                                              if (auto* obs = ctx.observer()) obs->cta_begin(b, h, blk);
                                              RowBlockTask<Acc> task(hv, tile, i0, n, buf);
                                              switch (algo) {
                                                case Algorithm::ThreePass:
                                                  task.pass_max();
                                                  task.pass_sum();
                                                  task.add_sink();
                                                  task.pass_output();
                                                  task.store(out, false);
                                                  break;
                                                case Algorithm::TwoPass:
                                                  task.pass_online_stats();
                                                  task.add_sink();
                                                  task.pass_output();
                                                  task.store(out, false);
                                                  break;
                                                default:
                                                  task.pass_flash();
                                                  task.add_sink();
                                                  task.store(out, true);
                                                  break;
                                              }
                                              if (auto* obs = ctx.observer()) obs->cta_end();
                                            });
  if (auto* obs = ctx.observer()) obs->kernel_end();
  out.tiles_skipped = counts.skipped;
  out.tiles_computed = counts.computed;
}

namespace {

// One task of the split-KV forward: FA2 over each split's keys into the partials, then their combine into out.
template <class Acc>
void split_kv_task(const HeadView<Acc>& hv, const TileConfig& tile, int64_t splits, int64_t i0, int64_t n,
                   RowBlockBuffers<Acc>& buf, SplitKvResult& out) {
  const ProblemContext& ctx = hv.ctx();
  const int64_t dv = ctx.p.head_dim_v, bq = tile.block_q;
  std::vector<Acc>& po = buf.split_o;    // [splits][bq][dv]
  std::vector<Acc>& pl = buf.split_lse;  // [splits][bq]
  po.resize(splits * bq * dv);
  pl.resize(splits * bq);
  RowBlockTask<Acc> task(hv, tile, i0, n, buf);
  // Split s: key blocks [s * per, (s + 1) * per) of the sequence's ceil(lk / Bc), per = ceil(blocks / splits)
  // (flash-attention's num_n_blocks_per_split); the last splits may hold none.
  const int64_t per = std::max<int64_t>(1, (num_blocks(hv.lk, tile.block_k) + splits - 1) / splits);
  for (int64_t s = 0; s < splits; ++s) {
    task.restrict_keys(s * per * tile.block_k, (s + 1) * per * tile.block_k);
    task.pass_flash();
    task.store_partial(po.data() + s * bq * dv, pl.data() + s * bq);
  }
  // An attention sink joins the combine once, as one more partial with lse_s = sink and o_s = 0 (the splits'
  // partials leave it out).
  const bool has_sink = ctx.p.sinks;
  const Acc sink = has_sink ? ctx.sink<Acc>(hv.h) : neg_inf<Acc>();
  for (int64_t r = 0; r < n; ++r) {
    // lse = log (e^sink + sum_s exp(lse_s)), shifted by the largest; o = sum_s exp(lse_s - lse) o_s
    Acc mx = sink, sum = 0;
    for (int64_t s = 0; s < splits; ++s) mx = std::max(mx, pl[s * bq + r]);
    const Acc shift = safe_shift(mx);
    if (has_sink) sum += std::exp(sink - shift);
    for (int64_t s = 0; s < splits; ++s) sum += safe_exp_diff(pl[s * bq + r], shift);
    const Acc lse = sum > 0 ? shift + std::log(sum) : neg_inf<Acc>();
    out.combined.lse[hv.lse_index(i0 + r)] = static_cast<double>(lse);
    for (int64_t s = 0; s < splits; ++s) {  // lse_s out, then its slot holds the weight exp(lse_s - lse)
      Acc& w = pl[s * bq + r];
      out.partial_lse[s * ctx.p.lse_elems() + hv.lse_index(i0 + r)] = w;
      w = sum > 0 ? safe_exp_diff(w, lse) : Acc(0);
    }
    for (int64_t c = 0; c < dv; ++c) {
      Acc acc = 0;
      for (int64_t s = 0; s < splits; ++s) {
        const Acc o_s = po[(s * bq + r) * dv + c];
        out.partial_o[s * ctx.p.o_elems() + hv.q_index(i0 + r, dv, c)] = o_s;
        acc += pl[s * bq + r] * o_s;
      }
      out.combined.o[hv.q_index(i0 + r, dv, c)] = stored_output<Acc>(acc, ctx);
    }
  }
}

}  // namespace

template <class Acc>
void forward_split_kv(const ProblemContext& ctx, const TileConfig& tile, int num_splits, SplitKvResult& out) {
  const TileCounter counts = run_tasks<Acc>(
      ctx, tile,
      [&](const HeadView<Acc>& hv, int64_t, int64_t, int64_t, int64_t i0, int64_t n,
          RowBlockBuffers<Acc>& buf) { split_kv_task(hv, tile, num_splits, i0, n, buf, out); });
  out.combined.tiles_skipped = counts.skipped;
  out.combined.tiles_computed = counts.computed;
}

template void forward_split_kv<float>(const ProblemContext&, const TileConfig&, int, SplitKvResult&);
template void forward_split_kv<double>(const ProblemContext&, const TileConfig&, int, SplitKvResult&);
template void forward_streaming<float>(const ProblemContext&, const TileConfig&, Algorithm, ForwardResult&);
template void forward_streaming<double>(const ProblemContext&, const TileConfig&, Algorithm, ForwardResult&);

}  // namespace flashsim::ref::detail
