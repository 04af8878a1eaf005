#pragma once
// AttentionProblem: the shapes and semantics every algorithm, the simulator and the golden files share.
//
// Tensor layouts (row-major):
//   q, do, o, dq : [total_q, heads_q, head_dim | head_dim_v]  (BSHD, batch and seqlen packed: total_q rows)
//   k, v, dk, dv : [total_k, heads_kv, head_dim | head_dim_v]
//   lse          : [batch, heads_q, seqlen_q]; varlen: [heads_q, total_q] (flash-attention's varlen layout)
//   bias, mask   : [batch|1, heads_q|1, seqlen_q, seqlen_k]
//   block_mask   : [batch|1, heads_q|1, ceil(seqlen_q / block_mask_q), ceil(seqlen_k / block_mask_k)] (bool),
//                  one entry per block_mask_q x block_mask_k tile, ANDed with the window and the mask
//   dropout_keep : [batch, heads_q, seqlen_q, seqlen_k] (bool) with dropout_p > 0: != 0 keeps P(i, j) (scaled
//                  by 1 / (1 - dropout_p)); varlen: the top-left corner per sequence, as bias
//   sinks        : [heads_q] (fp32 values): attention sinks, one logit per q head that joins every row's
//                  softmax denominator (and lse) with no value vector (docs/design.md, "Attention sinks")
//   q_descale, k_descale, v_descale : FP8 inputs' descale factors (fp32 values, > 0): [1] per tensor,
//                  [batch, heads_kv] per (batch, kv head) as FlashAttention-3 takes them; the real value of a
//                  stored element is stored * descale (docs/design.md, "FP8 inputs")
// With a paged KV cache (page_size > 0, flashsim/kv_cache.h) the keys of sequence b are its cache_seqlens[b]
// cached keys and seqlen_new appended ones; q, o, lse keep their plain layouts ([batch, seqlen_q] rows) and k, v
// mean the keys gathered from the cache, packed as with variable lengths ([total_k, heads_kv, dim]).
// lse_index() gives the position of (b, h, i) in either lse layout. With variable lengths, sequence b uses
// the top-left len_q(b) x len_k(b) corner of its bias / mask [seqlen_q, seqlen_k] slice (seqlen_* = longest).
// Without variable lengths total_q = batch * seqlen_q and row (b, i) is b * seqlen_q + i: plain BSHD.
#include <algorithm>
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

// FP8 descale factors' granularity: none (every factor 1: no tensors), one per tensor, one per (batch, kv head).
enum class Descale { None, PerTensor, PerHead };
std::string_view descale_name(Descale d);  // "none", "per-tensor", "per-head"
Descale parse_descale(std::string_view name, const std::string& field);

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
  // Attention sinks (gpt-oss): a logit s_h per q head in each row's softmax, P_j = e^(x_j) / (e^(s_h) +
  // sum_k e^(x_k)), lse = log(e^(s_h) + sum_k e^(x_k)); a row with no visible key has o = 0 and lse = s_h.
  bool sinks = false;
  // Dropout (FlashAttention-2's): P' = P o keep / (1 - dropout_p) after the softmax (lse without dropout),
  // O = P' V; the keep mask is an input (AttentionInputs::dropout_keep), so no result depends on an RNG.
  double dropout_p = 0.0;
  // FP8 inputs (dtype e4m3 or e5m2): the descale factors' granularity, and the fraction of a group's largest
  // |value| that the generator maps onto the FP8 maximum (1: nothing saturates; 0.5: values beyond half the
  // group's amax saturate to +-max). Forward only; the emulated output is bf16 (FlashAttention-3's).
  Descale descale = Descale::None;
  double amax_fraction = 1.0;
  // DeepSeek's multi-head latent attention (MLA), as FlashMLA and FlashInfer's MLA take it: one latent KV head
  // (heads_kv = 1) shared by every q head, head_dim = d_latent + d_rope (q and k: the latent part, then the
  // rotary part), head_dim_v = d_latent < head_dim, and V a view of K: v = k[..., :head_dim_v] (with a paged
  // cache one compressed cache [num_blocks, page_size, 1, head_dim] read as both). AttentionInputs::v holds
  // that view (validated equal), golden files store no v, and the backward's dk is the gradient of the one K
  // tensor: dV folded into its first head_dim_v columns, dv empty (docs/design.md, "MLA").
  bool mla = false;
  // Variable lengths: per-sequence lengths (empty: every sequence has seqlen_q / seqlen_k).
  std::vector<int64_t> seqlens_q;
  std::vector<int64_t> seqlens_k;
  DType dtype = DType::F32;
  // Block-sparse mask (flashsim/block_mask.h): which dims it has (as bias's), its tile, and the pattern the
  // input generator draws it from.
  BroadcastShape block_mask = BroadcastShape::None;
  int64_t block_mask_q = 128;  // rows of a mask tile (S2-Attention's and FlashAttention's Br)
  int64_t block_mask_k = 128;
  std::string block_mask_spec = "random:keep=0.5";
  // Paged KV cache (page_size > 0): num_blocks pages of page_size rows (0: exactly the pages the sequences
  // use), cache_seqlens[b] keys cached for sequence b, seqlen_new keys appended to each before attending.
  int64_t page_size = 0;
  int64_t num_blocks = 0;
  int64_t seqlen_new = 0;
  std::vector<int64_t> cache_seqlens;

  // Throws InputError naming the field for any inconsistency.
  void validate() const;
  void validate_kv_cache() const;  // the cache fields (part of validate())

  bool causal() const { return window_right == 0; }
  bool varlen() const { return !seqlens_q.empty(); }  // packed query rows (cu_seqlens_q)
  bool kv_cache() const { return page_size > 0; }
  bool dropout() const { return dropout_p > 0; }
  int64_t dropout_keep_elems() const { return dropout() ? broadcast_elems(BroadcastShape::BHQK) : 0; }
  bool fp8() const { return is_fp8(dtype); }
  // Cases with no backward: decode (a paged KV cache) and FP8 inputs, as the kernels (MLA prefill has one).
  bool forward_only() const { return kv_cache() || fp8(); }
  // The dtype a kernel stores o in: bf16 for FP8 inputs (FlashAttention-3's FP8 forward), else the input's.
  DType output_dtype() const { return fp8() ? DType::BF16 : dtype; }
  int64_t descale_elems() const {
    return descale == Descale::PerHead ? batch * heads_kv : descale == Descale::PerTensor ? 1 : 0;
  }
  std::vector<int64_t> descale_shape() const {  // {1} or {batch, heads_kv}
    return descale == Descale::PerHead ? std::vector<int64_t>{batch, heads_kv} : std::vector<int64_t>{1};
  }
  // The descale factor of (batch b, kv head hk) in a descale tensor.
  int64_t descale_index(int64_t b, int64_t hk) const {
    return descale == Descale::PerHead ? b * heads_kv + hk : 0;
  }
  bool keys_vary() const { return varlen() || kv_cache(); }  // packed key rows (cu_seqlens_k)
  double softmax_scale() const;
  int64_t group_size() const { return heads_q / heads_kv; }  // q heads per kv head
  int64_t kv_head(int64_t h) const { return h / group_size(); }

  int64_t len_q(int64_t b) const { return varlen() ? seqlens_q[b] : seqlen_q; }
  int64_t len_k(int64_t b) const {
    return kv_cache() ? cache_seqlens[b] + seqlen_new : varlen() ? seqlens_k[b] : seqlen_k;
  }
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
  int64_t block_mask_elems() const;

  // Block mask grid: tiles along the (longest) query and key sequence.
  int64_t mask_q_blocks() const { return (seqlen_q + block_mask_q - 1) / block_mask_q; }
  int64_t mask_k_blocks() const { return (seqlen_k + block_mask_k - 1) / block_mask_k; }
  std::vector<int64_t> block_mask_shape() const;  // {batch|1, heads_q|1, q blocks, k blocks}
  // Whether (b, h, i, j) lies in an active tile of block_mask (true without one).
  bool block_mask_active(const std::vector<uint8_t>& block_mask, int64_t b, int64_t h, int64_t i,
                         int64_t j) const;

  // Paged KV cache: pages sequence b uses (after the append), pages in the cache, block_table columns.
  int64_t cache_pages(int64_t b) const { return (len_k(b) + page_size - 1) / page_size; }
  int64_t cache_num_blocks() const;
  int64_t max_blocks_per_seq() const { return std::max<int64_t>(1, (seqlen_k + page_size - 1) / page_size); }
  std::vector<int64_t> k_cache_shape() const { return {cache_num_blocks(), page_size, heads_kv, head_dim}; }
  std::vector<int64_t> v_cache_shape() const { return {cache_num_blocks(), page_size, heads_kv, head_dim_v}; }

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
