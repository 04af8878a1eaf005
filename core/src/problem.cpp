#include "flashsim/problem.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "flashsim/block_mask.h"
#include "flashsim/error.h"

namespace flashsim {

std::string_view broadcast_name(BroadcastShape s) {
  switch (s) {
    case BroadcastShape::None:
      return "none";
    case BroadcastShape::BHQK:
      return "bhqk";
    case BroadcastShape::OneHQK:
      return "1hqk";
    case BroadcastShape::BOneQK:
      return "b1qk";
    case BroadcastShape::OneOneQK:
      return "11qk";
  }
  return "?";
}

BroadcastShape parse_broadcast(std::string_view name, const std::string& field) {
  for (auto s : {BroadcastShape::None, BroadcastShape::BHQK, BroadcastShape::OneHQK, BroadcastShape::BOneQK,
                 BroadcastShape::OneOneQK}) {
    if (name == broadcast_name(s)) return s;
  }
  throw InputError(field,
                   "unknown shape '" + std::string(name) + "' (expected none, bhqk, 1hqk, b1qk or 11qk)");
}

std::string_view descale_name(Descale d) {
  switch (d) {
    case Descale::None:
      return "none";
    case Descale::PerTensor:
      return "per-tensor";
    case Descale::PerHead:
      return "per-head";
  }
  return "?";
}

Descale parse_descale(std::string_view name, const std::string& field) {
  for (auto d : {Descale::None, Descale::PerTensor, Descale::PerHead})
    if (name == descale_name(d)) return d;
  throw InputError(field,
                   "unknown descale '" + std::string(name) + "' (expected none, per-tensor or per-head)");
}

namespace {

// Largest element count any one tensor may have: products of dims are checked against it so that no size
// computation can overflow int64 (2^62 leaves room for byte counts of 8-byte elements... checked separately).
constexpr int64_t kMaxElems = int64_t{1} << 56;

int64_t checked_mul(int64_t a, int64_t b, const char* field) {
  if (a != 0 && b > kMaxElems / a) throw InputError(field, "tensor too large: element count overflows");
  return a * b;
}

void require_positive(int64_t v, const char* field) {
  if (v < 1) throw InputError(field, fmt::format("must be >= 1, got {}", v));
}

}  // namespace

void AttentionProblem::validate() const {
  require_positive(batch, "batch");
  require_positive(heads_q, "heads_q");
  require_positive(heads_kv, "heads_kv");
  require_positive(head_dim, "head_dim");
  require_positive(head_dim_v, "head_dim_v");
  if (heads_q % heads_kv != 0)
    throw InputError("heads_kv",
                     fmt::format("heads_q ({}) is not a multiple of heads_kv ({})", heads_q, heads_kv));
  if (varlen()) {
    if (static_cast<int64_t>(seqlens_q.size()) != batch || seqlens_k.size() != seqlens_q.size())
      throw InputError("varlen", fmt::format("{} q lengths and {} k lengths for batch {}", seqlens_q.size(),
                                             seqlens_k.size(), batch));
    int64_t sum_q = 0, sum_k = 0;
    for (size_t b = 0; b < seqlens_q.size(); ++b) {
      if (seqlens_q[b] < 0 || seqlens_k[b] < 0) throw InputError("varlen", "sequence lengths must be >= 0");
      if (seqlens_q[b] > seqlen_q || seqlens_k[b] > seqlen_k)
        throw InputError("varlen", "a sequence is longer than seqlen_q/seqlen_k (the maximum lengths)");
      sum_q += seqlens_q[b];
      sum_k += seqlens_k[b];
      if (sum_q > kMaxElems || sum_k > kMaxElems) throw InputError("varlen", "total length overflows");
    }
    if (sum_q < 1) throw InputError("varlen", "every query length is 0");
  } else if (kv_cache()) {
    require_positive(seqlen_q, "seqlen_q");
  } else {
    require_positive(seqlen_q, "seqlen_q");
    require_positive(seqlen_k, "seqlen_k");
  }
  if (seqlen_q < 0 || seqlen_k < 0) throw InputError("seqlen", "must be >= 0");
  if (kv_cache()) validate_kv_cache();
  if (block_mask != BroadcastShape::None) {
    if (block_mask_q < 1 || block_mask_k < 1)
      throw InputError("block_mask", fmt::format("tile {}x{}: block_q and block_k must be >= 1", block_mask_q,
                                                 block_mask_k));
    parse_block_mask_spec(block_mask_spec);  // throws InputError("block_mask") naming the problem
  }
  if (scale && !(std::isfinite(*scale) && *scale > 0))
    throw InputError("scale", fmt::format("must be finite and > 0, got {}", *scale));
  if (!(std::isfinite(softcap) && softcap >= 0))
    throw InputError("softcap", fmt::format("must be finite and >= 0, got {}", softcap));
  if (window_left < -1) throw InputError("window_left", "must be >= 0, or -1 for unbounded");
  if (window_right < -1) throw InputError("window_right", "must be >= 0, or -1 for unbounded");
  if (!(mask_keep >= 0 && mask_keep <= 1)) throw InputError("mask_keep", "must be in [0, 1]");
  if (!(dropout_p >= 0 && dropout_p < 1))
    throw InputError("dropout_p", fmt::format("must be in [0, 1), got {}", dropout_p));
  if (descale != Descale::None && !fp8())
    throw InputError(
        "descale", fmt::format("descale factors are for FP8 inputs (e4m3, e5m2), not {}", dtype_name(dtype)));
  if (!(amax_fraction > 0 && amax_fraction <= 1))
    throw InputError("amax_fraction", fmt::format("must be in (0, 1], got {}", amax_fraction));
  if (amax_fraction != 1 && descale == Descale::None)
    throw InputError("amax_fraction", "only inputs with descale factors (per-tensor, per-head) take it");
  if (fp8()) {  // what FlashAttention-3's FP8 forward has no form for
    if (bias != BroadcastShape::None)
      throw InputError("bias", "FP8 inputs take no bias (FP8 attention kernels have none)");
    if (dropout())
      throw InputError("dropout_p", "FP8 inputs take no dropout (FP8 attention kernels have none)");
    if (kv_cache()) throw InputError("page_size", "a paged KV cache in FP8 is not supported");
  }
  if (mla) {  // one latent KV head whose first head_dim_v columns are the values
    if (heads_kv != 1)
      throw InputError(
          "heads_kv",
          fmt::format("an MLA problem has one latent KV head shared by every q head, got {}", heads_kv));
    if (head_dim_v >= head_dim)
      throw InputError(
          "head_dim_v",
          fmt::format("an MLA problem's values are the first head_dim_v (d_latent) of the head_dim "
                      "(d_latent + d_rope) key columns: head_dim_v ({}) must be < head_dim ({})",
                      head_dim_v, head_dim));
    if (fp8()) throw InputError("mla", "MLA with FP8 inputs is not supported");
  }
  // Every tensor's element count must fit: this also bounds every index computed from these dims.
  const int64_t tq = checked_mul(std::max<int64_t>(seqlen_q, 1), batch, "seqlen_q");
  const int64_t tk = checked_mul(std::max<int64_t>(seqlen_k, 1), batch, "seqlen_k");
  checked_mul(checked_mul(tq, heads_q, "heads_q"), std::max(head_dim, head_dim_v), "head_dim");
  checked_mul(checked_mul(tk, heads_kv, "heads_kv"), std::max(head_dim, head_dim_v), "head_dim");
  if (bias != BroadcastShape::None || mask != BroadcastShape::None || dropout())
    checked_mul(
        checked_mul(checked_mul(batch, heads_q, "heads_q"), std::max<int64_t>(seqlen_q, 1), "seqlen_q"),
        std::max<int64_t>(seqlen_k, 1), "bias");
}

void AttentionProblem::validate_kv_cache() const {
  if (varlen())
    throw InputError("varlen",
                     "a KV-cache problem has queries [batch, seqlen_q]: variable query lengths "
                     "do not combine with a cache (cache_seqlens give the key lengths)");
  if (page_size > (int64_t{1} << 20))
    throw InputError("page_size", fmt::format("must be in [1, 1048576], got {}", page_size));
  if (static_cast<int64_t>(cache_seqlens.size()) != batch)
    throw InputError("cache_seqlens",
                     fmt::format("has {} entries for batch {}", cache_seqlens.size(), batch));
  if (seqlen_new < 0) throw InputError("seqlen_new", fmt::format("must be >= 0, got {}", seqlen_new));
  int64_t pages = 0;
  for (int64_t b = 0; b < batch; ++b) {
    if (cache_seqlens[b] < 0 || cache_seqlens[b] > kMaxElems)
      throw InputError("cache_seqlens", fmt::format("sequence {}: {} is out of range", b, cache_seqlens[b]));
    if (len_k(b) > seqlen_k)
      throw InputError("cache_seqlens",
                       fmt::format("sequence {}: {} keys (cache_seqlens {} + {} new) exceed seqlen_k {}, the "
                                   "table's capacity",
                                   b, len_k(b), cache_seqlens[b], seqlen_new, seqlen_k));
    pages += cache_pages(b);
  }
  if (num_blocks < 0) throw InputError("num_blocks", fmt::format("must be >= 0, got {}", num_blocks));
  if (num_blocks > 0 && num_blocks < pages)
    throw InputError("num_blocks",
                     fmt::format("{} pages hold fewer than the {} the sequences use", num_blocks, pages));
  checked_mul(checked_mul(std::max<int64_t>(pages, num_blocks), page_size, "page_size"),
              heads_kv * std::max(head_dim, head_dim_v), "num_blocks");
}

int64_t AttentionProblem::cache_num_blocks() const {
  if (num_blocks > 0) return num_blocks;
  int64_t pages = 0;
  for (int64_t b = 0; b < batch; ++b) pages += cache_pages(b);
  return std::max<int64_t>(pages, 1);
}

int64_t AttentionProblem::block_mask_elems() const {
  if (block_mask == BroadcastShape::None) return 0;
  const auto s = block_mask_shape();
  return s[0] * s[1] * s[2] * s[3];
}

std::vector<int64_t> AttentionProblem::block_mask_shape() const {
  auto s = broadcast_shape(block_mask);
  s[2] = mask_q_blocks();
  s[3] = mask_k_blocks();
  return s;
}

bool AttentionProblem::block_mask_active(const std::vector<uint8_t>& m, int64_t b, int64_t h, int64_t i,
                                         int64_t j) const {
  if (block_mask == BroadcastShape::None) return true;
  const auto s = block_mask_shape();
  return block_active(m, s[0], s[1], s[2], s[3], block_mask_q, block_mask_k, b, h, i, j);
}

double AttentionProblem::softmax_scale() const {
  return scale ? *scale : 1.0 / std::sqrt(static_cast<double>(head_dim));
}

int64_t AttentionProblem::offset_q(int64_t b) const {
  if (!varlen()) return b * seqlen_q;
  int64_t s = 0;
  for (int64_t i = 0; i < b; ++i) s += seqlens_q[i];
  return s;
}

int64_t AttentionProblem::offset_k(int64_t b) const {
  if (!keys_vary()) return b * seqlen_k;
  int64_t s = 0;
  for (int64_t i = 0; i < b; ++i) s += len_k(i);
  return s;
}

std::vector<int64_t> AttentionProblem::cu_seqlens_q() const {
  std::vector<int64_t> cu(batch + 1);
  for (int64_t b = 0; b <= batch; ++b) cu[b] = offset_q(b);
  return cu;
}

std::vector<int64_t> AttentionProblem::cu_seqlens_k() const {
  std::vector<int64_t> cu(batch + 1);
  for (int64_t b = 0; b <= batch; ++b) cu[b] = offset_k(b);
  return cu;
}

int64_t AttentionProblem::broadcast_elems(BroadcastShape s) const {
  if (s == BroadcastShape::None) return 0;
  const auto shape = broadcast_shape(s);
  return shape[0] * shape[1] * shape[2] * shape[3];
}

std::vector<int64_t> AttentionProblem::q_shape() const {
  if (varlen()) return {total_q(), heads_q, head_dim};
  return {batch, seqlen_q, heads_q, head_dim};
}
std::vector<int64_t> AttentionProblem::k_shape() const {
  if (keys_vary()) return {total_k(), heads_kv, head_dim};
  return {batch, seqlen_k, heads_kv, head_dim};
}
std::vector<int64_t> AttentionProblem::v_shape() const {
  if (keys_vary()) return {total_k(), heads_kv, head_dim_v};
  return {batch, seqlen_k, heads_kv, head_dim_v};
}
std::vector<int64_t> AttentionProblem::o_shape() const {
  if (varlen()) return {total_q(), heads_q, head_dim_v};
  return {batch, seqlen_q, heads_q, head_dim_v};
}
std::vector<int64_t> AttentionProblem::lse_shape() const {
  if (varlen()) return {heads_q, total_q()};
  return {batch, heads_q, seqlen_q};
}

std::vector<int64_t> AttentionProblem::broadcast_shape(BroadcastShape s) const {
  const bool has_b = s == BroadcastShape::BHQK || s == BroadcastShape::BOneQK;
  const bool has_h = s == BroadcastShape::BHQK || s == BroadcastShape::OneHQK;
  return {has_b ? batch : 1, has_h ? heads_q : 1, seqlen_q, seqlen_k};
}

int64_t AttentionProblem::broadcast_index(BroadcastShape s, int64_t b, int64_t h, int64_t i,
                                          int64_t j) const {
  const bool has_b = s == BroadcastShape::BHQK || s == BroadcastShape::BOneQK;
  const bool has_h = s == BroadcastShape::BHQK || s == BroadcastShape::OneHQK;
  const int64_t bb = has_b ? b : 0;
  const int64_t hh = has_h ? h : 0;
  const int64_t nh = has_h ? heads_q : 1;
  return ((bb * nh + hh) * seqlen_q + i) * seqlen_k + j;
}

bool AttentionProblem::window_visible(int64_t b, int64_t i, int64_t j) const {
  const int64_t diag = i + len_k(b) - len_q(b);  // the key aligned with query i (bottom-right)
  if (window_left >= 0 && j < diag - window_left) return false;
  if (window_right >= 0 && j > diag + window_right) return false;
  return true;
}

void AttentionProblem::window_range(int64_t b, int64_t i, int64_t& first, int64_t& last) const {
  const int64_t diag = i + len_k(b) - len_q(b);
  first = window_left >= 0 ? std::max<int64_t>(0, diag - window_left) : 0;
  last = window_right >= 0 ? std::min<int64_t>(len_k(b) - 1, diag + window_right) : len_k(b) - 1;
}

double AttentionProblem::alibi_slope(int64_t h) const {
  // Slopes for n heads, n a power of two: 2^(-8 (h+1) / n). Otherwise the first n' = 2^floor(log2 n) of
  // those, then every other slope of the sequence for 2n' heads (as the ALiBi reference implementation).
  int64_t n2 = 1;
  while (n2 * 2 <= heads_q) n2 *= 2;
  if (h < n2) return std::exp2(-8.0 * static_cast<double>(h + 1) / static_cast<double>(n2));
  const int64_t extra = h - n2;
  return std::exp2(-8.0 * static_cast<double>(2 * extra + 1) / static_cast<double>(2 * n2));
}

double AttentionProblem::visible_pairs() const {
  double pairs = 0;
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t i = 0; i < len_q(b); ++i) {
      int64_t first, last;
      window_range(b, i, first, last);
      if (last >= first) pairs += static_cast<double>(last - first + 1);
    }
  }
  return pairs * static_cast<double>(heads_q);
}

double AttentionProblem::forward_flops() const {
  // S = Q K^T: 2 d flops per pair; O = P V: 2 dv flops per pair.
  return visible_pairs() * 2.0 * static_cast<double>(head_dim + head_dim_v);
}

std::string AttentionProblem::describe() const {
  std::string s = fmt::format("b{} h{}", batch, heads_q);
  if (heads_kv != heads_q) s += fmt::format("/{}", heads_kv);
  s += fmt::format(" q{} k{} d{}", seqlen_q, seqlen_k, head_dim);
  if (head_dim_v != head_dim) s += fmt::format(" dv{}", head_dim_v);
  if (varlen()) s += " varlen";
  if (kv_cache()) {
    s += fmt::format(" paged{}", page_size);
    if (seqlen_new > 0) s += fmt::format(" new{}", seqlen_new);
  }
  if (causal() && window_left < 0) {
    s += " causal";
  } else if (window_left >= 0 || window_right >= 0) {
    s += fmt::format(" window({},{})", window_left, window_right);
  }
  if (softcap > 0) s += fmt::format(" softcap{}", softcap);
  if (bias != BroadcastShape::None) s += fmt::format(" bias:{}", broadcast_name(bias));
  if (mask != BroadcastShape::None) s += fmt::format(" mask:{}", broadcast_name(mask));
  if (alibi) s += " alibi";
  if (mla) s += " mla";
  if (sinks) s += " sinks";
  if (dropout()) s += fmt::format(" dropout{}", dropout_p);
  if (descale != Descale::None) s += fmt::format(" descale:{}", descale_name(descale));
  if (amax_fraction != 1) s += fmt::format(" amax{}", amax_fraction);
  if (block_mask != BroadcastShape::None)
    s += fmt::format(" block_mask:{}:{}x{}:{}", broadcast_name(block_mask), block_mask_q, block_mask_k,
                     block_mask_spec);
  if (scale) s += fmt::format(" scale{}", *scale);
  s += fmt::format(" {}", dtype_name(dtype));
  return s;
}

}  // namespace flashsim
