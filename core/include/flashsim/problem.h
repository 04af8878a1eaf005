#pragma once
// AttentionProblem: the shapes and semantics every algorithm, the simulator and the golden files share.
//
// Tensor layouts (row-major):
//   q, do, o, dq : [total_q, heads_q, head_dim | head_dim_v]  (BSHD, batch and seqlen packed: total_q rows)
//   k, v, dk, dv : [total_k, heads_kv, head_dim | head_dim_v]
//   lse          : [batch, heads_q, seqlen_q]; varlen: [heads_q, total_q] (flash-attention's varlen layout)
//   bias, mask   : [batch|1, heads_q|1, seqlen_q, seqlen_k]
// lse_index() gives the position of (b, h, i) in either lse layout. With variable lengths, sequence b uses
// the top-left len_q(b) x len_k(b) corner of its bias / mask [seqlen_q, seqlen_k] slice (seqlen_* = longest).
// Without variable lengths total_q = batch * seqlen_q and row (b, i) is b * seqlen_q + i: plain BSHD.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "flashsim/dtype.h"

namespace flashsim {

// Which dims a bias or mask has: the others are broadcast (size 1).
enum class BroadcastShape { None, BHQK, OneHQK, BOneQK, OneOneQK };
std::string_view broadcast_name(BroadcastShape s);  // "none", "bhqk", "1hqk", "b1qk", "11qk"
BroadcastShape parse_broadcast(std::string_view name, const std::string& field);

struct AttentionProblem {
  int64_t batch = 1;
  int64_t heads_q = 1;
  int64_t heads_kv = 1;
  int64_t seqlen_q = 128;  // with variable lengths: the largest len_q
  int64_t seqlen_k = 128;
  int64_t head_dim = 64;
  int64_t head_dim_v = 64;
  std::optional<double> scale;  // softmax scale; default 1/sqrt(head_dim)
  double softcap = 0.0;         // c > 0: s = c * tanh(s / c)
  int64_t window_left = -1;     // -1: unbounded
  int64_t window_right = -1;    // 0 with window_left -1: causal
  BroadcastShape bias = BroadcastShape::None;
  BroadcastShape mask = BroadcastShape::None;
  double mask_keep = 0.8;  // probability that a generated mask entry keeps its score
  bool alibi = false;
  // Variable lengths: per-sequence lengths (empty: every sequence has seqlen_q / seqlen_k).
  std::vector<int64_t> seqlens_q;
  std::vector<int64_t> seqlens_k;
  DType dtype = DType::F32;

  // Throws InputError naming the field for any inconsistency.
  void validate() const;

  bool causal() const { return window_right == 0; }
  bool varlen() const { return !seqlens_q.empty(); }
  double softmax_scale() const;
  int64_t group_size() const { return heads_q / heads_kv; }  // q heads per kv head
  int64_t kv_head(int64_t h) const { return h / group_size(); }

  int64_t len_q(int64_t b) const { return varlen() ? seqlens_q[b] : seqlen_q; }
  int64_t len_k(int64_t b) const { return varlen() ? seqlens_k[b] : seqlen_k; }
  int64_t offset_q(int64_t b) const;  // first row of sequence b in q (cu_seqlens_q[b])
  int64_t offset_k(int64_t b) const;
  int64_t total_q() const { return offset_q(batch); }
  int64_t total_k() const { return offset_k(batch); }
  std::vector<int64_t> cu_seqlens_q() const;  // batch + 1 offsets
  std::vector<int64_t> cu_seqlens_k() const;

  // Element counts of each tensor (layouts above).
  int64_t q_elems() const { return total_q() * heads_q * head_dim; }
  int64_t k_elems() const { return total_k() * heads_kv * head_dim; }
  int64_t v_elems() const { return total_k() * heads_kv * head_dim_v; }
  int64_t o_elems() const { return total_q() * heads_q * head_dim_v; }
  int64_t lse_elems() const { return heads_q * total_q(); }
  int64_t bias_elems() const { return broadcast_elems(bias); }
  int64_t mask_elems() const { return broadcast_elems(mask); }
  int64_t broadcast_elems(BroadcastShape s) const;

  // Shapes as written to files: {batch, seqlen, heads, dim} without varlen, {total, heads, dim} with it.
  std::vector<int64_t> q_shape() const;
  std::vector<int64_t> k_shape() const;
  std::vector<int64_t> v_shape() const;
  std::vector<int64_t> o_shape() const;
  std::vector<int64_t> lse_shape() const;  // {batch, heads_q, seqlen_q} or {heads_q, total_q}
  std::vector<int64_t> broadcast_shape(BroadcastShape s) const;

  int64_t lse_index(int64_t b, int64_t h, int64_t i) const {
    return varlen() ? h * total_q() + offset_q(b) + i : (b * heads_q + h) * seqlen_q + i;
  }
  // Index of (b, h, i, j) in a bias or mask of shape s.
  int64_t broadcast_index(BroadcastShape s, int64_t b, int64_t h, int64_t i, int64_t j) const;

  // Visibility by the window: query i sees key j iff
  //   i + len_k - len_q - window_left <= j <= i + len_k - len_q + window_right   (bottom-right aligned).
  bool window_visible(int64_t b, int64_t i, int64_t j) const;
  // The range [first, last] of keys row i may see by the window alone (may be empty: first > last).
  void window_range(int64_t b, int64_t i, int64_t& first, int64_t& last) const;

  // ALiBi slope of q head h (the ALiBi paper's geometric sequence, extended for non-powers of two).
  double alibi_slope(int64_t h) const;

  // A one-line description: "b2 h8/2 q128 k256 d64 causal bf16 ...".
  std::string describe() const;
  // FLOPs of the forward (4 * visible (i,j) pairs * d per head, counting dv for P*V) and backward (2.5x).
  double forward_flops() const;
  double backward_flops() const { return 2.5 * forward_flops(); }
  // Number of (i, j) pairs visible by the window, summed over batch and q heads.
  double visible_pairs() const;
};

}  // namespace flashsim
