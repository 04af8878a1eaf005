#include "oracle.h"

#include <cmath>
#include <limits>

namespace flashsim::test {

OracleOutput oracle_forward(const AttentionProblem& p, const AttentionInputs& in) {
  OracleOutput out;
  out.o.assign(p.o_elems(), 0.0);
  out.lse.assign(p.lse_elems(), -std::numeric_limits<double>::infinity());
  const double scale = p.scale ? *p.scale : 1.0 / std::sqrt(double(p.head_dim));
  int64_t q_start = 0, k_start = 0;
  for (int64_t b = 0; b < p.batch; ++b) {
    const int64_t lq = p.varlen() ? p.seqlens_q[b] : p.seqlen_q;
    const int64_t lk = p.varlen() ? p.seqlens_k[b] : p.seqlen_k;
    for (int64_t h = 0; h < p.heads_q; ++h) {
      const int64_t hk = h / (p.heads_q / p.heads_kv);
      // FP8 descale factors: the real value of a stored element is stored * descale, one factor per tensor
      // ([1]) or per (batch, kv head) ([batch, heads_kv]); 1 without descales.
      auto descale = [&](const std::vector<double>& d) {
        return d.empty() ? 1.0 : d[d.size() == 1 ? 0 : b * p.heads_kv + hk];
      };
      const double qd = descale(in.q_descale), kd = descale(in.k_descale), vd = descale(in.v_descale);
      for (int64_t i = 0; i < lq; ++i) {
        std::vector<double> s(lk);
        std::vector<bool> keep(lk);
        double mx = -std::numeric_limits<double>::infinity();
        for (int64_t j = 0; j < lk; ++j) {
          double dot = 0;
          for (int64_t c = 0; c < p.head_dim; ++c)
            dot += (in.q[((q_start + i) * p.heads_q + h) * p.head_dim + c] * qd) *
                   (in.k[((k_start + j) * p.heads_kv + hk) * p.head_dim + c] * kd);
          double x = scale * dot;
          if (p.softcap > 0) x = p.softcap * std::tanh(x / p.softcap);
          auto idx = [&](BroadcastShape sh) {
            const bool hb = sh == BroadcastShape::BHQK || sh == BroadcastShape::BOneQK;
            const bool hh = sh == BroadcastShape::BHQK || sh == BroadcastShape::OneHQK;
            return (((hb ? b : 0) * (hh ? p.heads_q : 1) + (hh ? h : 0)) * p.seqlen_q + i) * p.seqlen_k + j;
          };
          if (p.bias != BroadcastShape::None) x += in.bias[idx(p.bias)];
          if (p.alibi) x -= in.alibi_slopes[h] * std::abs(double(i + lk - lq - j));
          bool vis = true;
          if (p.window_left >= 0 && j < i + lk - lq - p.window_left) vis = false;
          if (p.window_right >= 0 && j > i + lk - lq + p.window_right) vis = false;
          if (p.mask != BroadcastShape::None && in.mask[idx(p.mask)] == 0) vis = false;
          if (p.block_mask != BroadcastShape::None) {
            // One byte per block_mask_q x block_mask_k tile of the longest sequences' grid, positions within
            // sequence b (its top-left corner with variable lengths), broadcast like a bias.
            const bool hb = p.block_mask == BroadcastShape::BHQK || p.block_mask == BroadcastShape::BOneQK;
            const bool hh = p.block_mask == BroadcastShape::BHQK || p.block_mask == BroadcastShape::OneHQK;
            const int64_t rows = (p.seqlen_q + p.block_mask_q - 1) / p.block_mask_q;
            const int64_t cols = (p.seqlen_k + p.block_mask_k - 1) / p.block_mask_k;
            const int64_t plane = (hb ? b : 0) * (hh ? p.heads_q : 1) + (hh ? h : 0);
            if (in.block_mask[(plane * rows + i / p.block_mask_q) * cols + j / p.block_mask_k] == 0)
              vis = false;
          }
          s[j] = x;
          keep[j] = vis;
          if (vis) mx = std::max(mx, x);
        }
        // An attention sink (docs/design.md) is one more logit in the row's softmax with no value vector.
        const bool sink = p.sinks;
        const double sink_logit = sink ? in.sinks[h] : 0.0;
        if (sink) mx = std::max(mx, sink_logit);
        if (mx == -std::numeric_limits<double>::infinity()) continue;  // no visible key: o = 0, lse = -inf
        double l = sink ? std::exp(sink_logit - mx) : 0.0;
        for (int64_t j = 0; j < lk; ++j)
          if (keep[j]) l += std::exp(s[j] - mx);
        out.lse[p.varlen() ? h * p.total_q() + q_start + i : (b * p.heads_q + h) * p.seqlen_q + i] =
            mx + std::log(l);
        // Dropout: O takes P_j keep_j / (1 - p) (the keep mask [batch, heads_q, seqlen_q, seqlen_k]); lse does not.
        const double drop_scale = p.dropout_p > 0 ? 1.0 / (1.0 - p.dropout_p) : 1.0;
        for (int64_t j = 0; j < lk; ++j) {
          if (!keep[j]) continue;
          if (p.dropout_p > 0 &&
              in.dropout_keep[((b * p.heads_q + h) * p.seqlen_q + i) * p.seqlen_k + j] == 0)
            continue;
          const double pj = std::exp(s[j] - mx) / l * drop_scale;
          for (int64_t c = 0; c < p.head_dim_v; ++c)
            out.o[((q_start + i) * p.heads_q + h) * p.head_dim_v + c] +=
                pj * (in.v[((k_start + j) * p.heads_kv + hk) * p.head_dim_v + c] * vd);
        }
      }
    }
    q_start += lq;
    k_start += lk;
  }
  return out;
}

double oracle_loss(const AttentionProblem& p, const AttentionInputs& in) {
  const OracleOutput out = oracle_forward(p, in);
  double loss = 0;
  for (size_t n = 0; n < out.o.size(); ++n) loss += out.o[n] * in.dout[n];
  return loss;
}

}  // namespace flashsim::test
