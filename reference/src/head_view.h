#pragma once
// HeadView: one (batch, q head) of a problem seen as tiles: loading Q/K/V/dO row blocks into contiguous
// buffers of the accumulator type, and computing score tiles through the whole score pipeline.
#include <Eigen/Core>
#include <algorithm>
#include <cstdint>

#include "gemm.h"
#include "problem_context.h"

namespace flashsim::ref::detail {

template <class Acc>
using TileArray = Eigen::Array<Acc, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
template <class Acc>
using TileMap = Eigen::Map<TileArray<Acc>>;
template <class Acc>
using ColArray = Eigen::Array<Acc, Eigen::Dynamic, 1>;

// How a kernel reads V: with the K tile of the same keys, or alone. It matters to MLA's traffic only (V the
// first head_dim_v columns of K's rows): with K's tile nothing more is read, alone those columns of K.
enum class ValuesRead { WithKeys, Alone };

template <class Acc>
class HeadView {
 public:
  HeadView(const ProblemContext& ctx, int64_t batch, int64_t head)
      : ctx_(ctx),
        p_(ctx.p),
        b(batch),
        h(head),
        hk(ctx.p.kv_head(head)),
        lq(ctx.cu_q[batch + 1] - ctx.cu_q[batch]),
        lk(ctx.cu_k[batch + 1] - ctx.cu_k[batch]),
        bm_(ctx.block_mask_plane(batch, head)) {}

  void load_q(int64_t i0, int64_t n, Acc* dst) const {
    load(TensorId::Q, ctx_.in.q, ctx_.cu_q[b], p_.heads_q, h, p_.head_dim, i0, n, dst);
  }
  void load_do(int64_t i0, int64_t n, Acc* dst) const {
    load(TensorId::dO, ctx_.in.dout, ctx_.cu_q[b], p_.heads_q, h, p_.head_dim_v, i0, n, dst);
  }
  void load_k(int64_t j0, int64_t m, Acc* dst) const {
    load(TensorId::K, ctx_.in.k, ctx_.cu_k[b], p_.heads_kv, hk, p_.head_dim, j0, m, dst);
  }
  // FP8 inputs: V is dequantized as it is loaded (times v_descale, exact in fp64; one fp32 rounding when
  // emulating, where FlashAttention-3 scales O by v_descale once at the end: 2^-24 apart, far below P's FP8
  // rounding). Q and K stay as stored: their descales scale the scores (scores()). MLA: the values are K's
  // first head_dim_v columns (AttentionInputs::v holds that view), reported as the read `how` makes them.
  void load_v(int64_t j0, int64_t m, Acc* dst, ValuesRead how) const {
    if (!p_.mla) {
      load(TensorId::V, ctx_.in.v, ctx_.cu_k[b], p_.heads_kv, hk, p_.head_dim_v, j0, m, dst);
    } else {
      auto* obs = ctx_.observer();
      if (obs && how == ValuesRead::Alone)
        obs->access({AccessKind::Load, TensorId::K, b, hk, j0, m, 0, p_.head_dim_v});
      copy_rows(ctx_.in.v, ctx_.cu_k[b], p_.heads_kv, hk, p_.head_dim_v, j0, m, dst);
    }
    if (ctx_.in.v_descale.empty()) return;
    const Acc vd = static_cast<Acc>(ctx_.in.v_descale[p_.descale_index(b, hk)]);
    for (int64_t n = 0; n < m * p_.head_dim_v; ++n) dst[n] *= vd;
  }
  // Rows [i0, i0+n) of a [total_q, heads_q, dim_v] tensor of this head (o, or dq-like outputs).
  void load_o(const std::vector<double>& o, int64_t i0, int64_t n, Acc* dst) const {
    load(TensorId::O, o, ctx_.cu_q[b], p_.heads_q, h, p_.head_dim_v, i0, n, dst);
  }

  // Position of element (i, c) of this head in a [total_q, heads_q, dim] tensor.
  int64_t q_index(int64_t i, int64_t dim, int64_t c) const {
    return ((ctx_.cu_q[b] + i) * p_.heads_q + h) * dim + c;
  }
  // Position of element (j, c) of this kv head in a [total_k, heads_kv, dim] tensor.
  int64_t k_index(int64_t j, int64_t dim, int64_t c) const {
    return ((ctx_.cu_k[b] + j) * p_.heads_kv + hk) * dim + c;
  }
  // Position of row i of this head in lse (problem.h: [batch, heads_q, seqlen_q], or [heads_q, total_q]
  // varlen).
  int64_t lse_index(int64_t i) const {
    return p_.varlen() ? h * ctx_.cu_q.back() + ctx_.cu_q[b] + i : (b * p_.heads_q + h) * p_.seqlen_q + i;
  }

  // Keys [kbegin, kend) that query rows [i0, i0+n) may see by the window (empty when kbegin >= kend).
  void key_range(int64_t i0, int64_t n, int64_t& kbegin, int64_t& kend) const {
    kbegin = row_first(i0);
    kend = std::min(lk, row_last(i0 + n - 1) + 1);
    kbegin = std::max<int64_t>(0, std::min(kbegin, lk));
    if (kend < kbegin) kend = kbegin;
  }
  // Queries [qbegin, qend) that may see any of keys [j0, j0+m) by the window.
  void query_range(int64_t j0, int64_t m, int64_t& qbegin, int64_t& qend) const {
    const int64_t shift = lk - lq;  // diag(i) = i + shift
    // Row i sees j iff diag(i) - wl <= j <= diag(i) + wr, i.e. j - wr - shift <= i <= j + wl - shift.
    qbegin = p_.window_right >= 0 ? j0 - p_.window_right - shift : 0;
    qend = p_.window_left >= 0 ? j0 + m - 1 + p_.window_left - shift + 1 : lq;
    qbegin = std::clamp<int64_t>(qbegin, 0, lq);
    qend = std::clamp<int64_t>(qend, qbegin, lq);
  }
  // True when the window hides no (i, j) of the tile.
  bool window_covers(int64_t i0, int64_t n, int64_t j0, int64_t m) const {
    return row_first(i0 + n - 1) <= j0 && row_last(i0) >= j0 + m - 1;
  }

  // The block mask (problem.h: [batch|1, heads_q|1, q blocks, k blocks], positions within this sequence) on
  // rows [i0, i0+n) x keys [j0, j0+m): whether any / every mask tile the rectangle overlaps is active (without
  // a block mask: true). An empty rectangle overlaps no tile (any: false, every: true).
  bool block_any(int64_t i0, int64_t n, int64_t j0, int64_t m) const {
    return block_tiles(i0, n, j0, m, true);
  }
  bool block_all(int64_t i0, int64_t n, int64_t j0, int64_t m) const {
    return block_tiles(i0, n, j0, m, false);
  }
  // Whether a tiled algorithm computes the (rows [i0, i0+n), keys [j0, j0+m)) tile: false when every block-mask
  // tile it overlaps is inactive (its scores are all -inf, so skipping it changes nothing).
  bool tile_active(int64_t i0, int64_t n, int64_t j0, int64_t m) const { return block_any(i0, n, j0, m); }
  // True when neither the window nor the block mask hides any (i, j) of the tile.
  bool fully_visible(int64_t i0, int64_t n, int64_t j0, int64_t m) const {
    return window_covers(i0, n, j0, m) && block_all(i0, n, j0, m);
  }

  // The factor of q.k in the scores: the softmax scale, times q_descale * k_descale with FP8 inputs (as
  // FlashAttention-3 folds them into softmax_scale_log2, hopper/flash_fwd_kernel_sm90.h).
  Acc score_scale() const {
    double a = ctx_.scale;
    if (!ctx_.in.q_descale.empty())
      a *= ctx_.in.q_descale[p_.descale_index(b, hk)] * ctx_.in.k_descale[p_.descale_index(b, hk)];
    return static_cast<Acc>(a);
  }

  // S (n x m, row-major) = the scores of query rows [i0, i0+n) (tile Qt) against keys [j0, j0+m) (tile Kt):
  // scale * q.k (times the FP8 descales), then softcap, + bias + ALiBi, then -inf where the window, the block
  // mask or the mask hides the key. dcap (optional, n x m) receives d softcap(x)/dx = 1 - tanh^2(x / c).
  void scores(const Acc* qt, int64_t i0, int64_t n, const Acc* kt, int64_t j0, int64_t m, Acc* s,
              Acc* dcap = nullptr) const {
    gemm<Acc>(ctx_.opt.use_blas, Trans::No, Trans::Yes, n, m, p_.head_dim, score_scale(), qt, p_.head_dim, kt,
              p_.head_dim, Acc(0), s, m);
    const bool covered = fully_visible(i0, n, j0, m);
    if (!ctx_.elementwise_scores() && covered) return;
    if (auto* obs = ctx_.observer()) {
      if (p_.bias != BroadcastShape::None)
        obs->access({AccessKind::Load, TensorId::Bias, b, h, i0, n, j0, m});
      if (p_.mask != BroadcastShape::None)
        obs->access({AccessKind::Load, TensorId::Mask, b, h, i0, n, j0, m});
    }
    const Acc cap = static_cast<Acc>(p_.softcap);
    const double slope = p_.alibi ? ctx_.in.alibi_slopes[h] : 0.0;
    for (int64_t r = 0; r < n; ++r) {
      const int64_t i = i0 + r;
      const int64_t first = row_first(i), last = row_last(i);
      // This row's tiles of the block mask (nullptr: no block mask, or the whole tile is active).
      const uint8_t* bm_row = bm_ && !covered ? bm_ + (i / p_.block_mask_q) * ctx_.bm_k_blocks : nullptr;
      Acc* srow = s + r * m;
      for (int64_t c = 0; c < m; ++c) {
        const int64_t j = j0 + c;
        Acc x = srow[c];
        if (cap > 0) {
          const Acc t = std::tanh(x / cap);  // s = c * tanh(s / c)
          x = cap * t;
          if (dcap) dcap[r * m + c] = Acc(1) - t * t;
        }
        if (p_.bias != BroadcastShape::None)
          x += static_cast<Acc>(ctx_.in.bias[p_.broadcast_index(p_.bias, b, h, i, j)]);
        if (p_.alibi) {
          const int64_t dist = i + lk - lq - j;  // bias = -slope * |i + len_k - len_q - j|
          x += static_cast<Acc>(-slope * static_cast<double>(dist < 0 ? -dist : dist));
        }
        const bool visible =
            j >= first && j <= last && (!bm_row || bm_row[j / p_.block_mask_k]) &&
            (p_.mask == BroadcastShape::None || ctx_.in.mask[p_.broadcast_index(p_.mask, b, h, i, j)]);
        srow[c] = visible ? x : neg_inf<Acc>();
      }
    }
  }

  // Dropout (problem.dropout_p) on a row-major n x m tile of P for rows [i0, i0+n) x keys [j0, j0+m):
  //   x(r, c) = keep(i0 + r, j0 + c) ? x(r, c) / (1 - p) : 0   (nothing without dropout)
  void apply_dropout(Acc* x, int64_t i0, int64_t n, int64_t j0, int64_t m) const {
    if (!p_.dropout()) return;
    const Acc scale = static_cast<Acc>(1.0 / (1.0 - p_.dropout_p));
    for (int64_t r = 0; r < n; ++r) {
      const uint8_t* keep =
          ctx_.in.dropout_keep.data() + p_.broadcast_index(BroadcastShape::BHQK, b, h, i0 + r, j0);
      for (int64_t c = 0; c < m; ++c) x[r * m + c] = keep[c] ? x[r * m + c] * scale : Acc(0);
    }
  }

  const ProblemContext& ctx() const { return ctx_; }

 private:
  // First and last key the window lets row i see (not clamped to [0, lk)).
  int64_t row_first(int64_t i) const {
    return p_.window_left >= 0 ? i + lk - lq - p_.window_left : std::numeric_limits<int64_t>::min() / 4;
  }
  int64_t row_last(int64_t i) const {
    return p_.window_right >= 0 ? i + lk - lq + p_.window_right : std::numeric_limits<int64_t>::max() / 4;
  }

  // block_any (any = true) or block_all (any = false) over the mask tiles rows [i0, i0+n) x keys [j0, j0+m)
  // overlap.
  bool block_tiles(int64_t i0, int64_t n, int64_t j0, int64_t m, bool any) const {
    if (n <= 0 || m <= 0) return !any;
    if (!bm_) return true;
    const int64_t bq = p_.block_mask_q, bk = p_.block_mask_k;
    for (int64_t qb = i0 / bq; qb <= (i0 + n - 1) / bq; ++qb) {
      const uint8_t* row = bm_ + qb * ctx_.bm_k_blocks;
      for (int64_t kb = j0 / bk; kb <= (j0 + m - 1) / bk; ++kb)
        if ((row[kb] != 0) == any) return any;
    }
    return !any;
  }

  void load(TensorId id, const std::vector<double>& src, int64_t row_offset, int64_t heads, int64_t head,
            int64_t dim, int64_t row0, int64_t rows, Acc* dst) const {
    if (auto* obs = ctx_.observer()) obs->access({AccessKind::Load, id, b, head, row0, rows, 0, dim});
    copy_rows(src, row_offset, heads, head, dim, row0, rows, dst);
  }
  void copy_rows(const std::vector<double>& src, int64_t row_offset, int64_t heads, int64_t head, int64_t dim,
                 int64_t row0, int64_t rows, Acc* dst) const {
    for (int64_t r = 0; r < rows; ++r) {
      const double* from = src.data() + ((row_offset + row0 + r) * heads + head) * dim;
      Acc* to = dst + r * dim;
      for (int64_t c = 0; c < dim; ++c) to[c] = static_cast<Acc>(from[c]);
    }
  }

  const ProblemContext& ctx_;
  const AttentionProblem& p_;

 public:
  const int64_t b, h, hk;  // batch, q head, kv head
  const int64_t lq, lk;    // this sequence's lengths

 private:
  const uint8_t* bm_;  // this (batch, head)'s block-mask plane [q blocks, k blocks], or nullptr
};

}  // namespace flashsim::ref::detail
