// AttentionParams from an AttentionProblem (params.h).
#include "flashsim/gpu/params.h"

#include <limits>
#include <vector>

#include "flashsim/error.h"
#include "flashsim/gpu/kernel.h"  // GpuFeature

namespace flashsim::gpu {

namespace {
int narrow(int64_t v, const char* field) {
  if (v < 0 || v > std::numeric_limits<int>::max())
    throw InputError(field, "is past what the GPU kernels index with 32-bit ints");
  return static_cast<int>(v);
}
}  // namespace

std::string missing_gpu_feature(const AttentionProblem& p, unsigned features) {
  if (p.mla &&
      !(features & kFeatureMla))  // first: an MLA decode case's paged cache is not what decode-v1 reads
    return "MLA (no latent-attention kernel in gpu/ yet: one KV head whose first head_dim_v columns are V)";
  if (p.kv_cache() && !(features & kFeatureKvCache))
    return "a paged KV cache (this version reads dense k / v; decode-v1 reads paged caches)";
  if (p.block_mask != BroadcastShape::None && !(features & kFeatureBlockMask))
    return "a block-sparse mask (this version takes none; fa2-v1 skips inactive tiles, naive-v1, "
           "three-pass-v1 "
           "and two-pass-v1 mask them)";
  if (p.sinks && !(features & kFeatureSinks))
    return "attention sinks (no kernel in gpu/ takes a sink logit yet)";
  if (p.dropout() && !(features & kFeatureDropout))
    return "dropout (no kernel in gpu/ takes a keep mask yet)";
  if (p.fp8()) return "FP8 inputs (no kernel in gpu/ reads e4m3 / e5m2 with descales yet)";
  return "";
}

AttentionParams make_params(const AttentionProblem& p) {
  p.validate();
  AttentionParams a;
  a.batch = narrow(p.batch, "batch");
  a.heads_q = narrow(p.heads_q, "heads_q");
  a.heads_kv = narrow(p.heads_kv, "heads_kv");
  a.group = narrow(p.group_size(), "heads_q");
  a.seqlen_q = narrow(p.seqlen_q, "seqlen_q");
  a.seqlen_k = narrow(p.seqlen_k, "seqlen_k");
  a.head_dim = narrow(p.head_dim, "head_dim");
  a.head_dim_v = narrow(p.head_dim_v, "head_dim_v");
  a.total_q = p.total_q();
  a.total_k = p.total_k();
  a.scale = static_cast<float>(p.softmax_scale());
  a.softcap = static_cast<float>(p.softcap);
  a.window_left = narrow(p.window_left + 1, "window_left") - 1;  // -1 (unbounded) stays -1
  a.window_right = narrow(p.window_right + 1, "window_right") - 1;
  a.varlen = p.varlen();
  a.has_bias = p.bias != BroadcastShape::None;
  a.has_mask = p.mask != BroadcastShape::None;
  a.alibi = p.alibi;
  // Strides of a [b|1, h|1, seqlen_q, seqlen_k] tensor: 0 along its broadcast dims (as broadcast_index).
  const auto strides = [&](BroadcastShape s, int64_t& sb, int64_t& sh, int64_t& sq) {
    if (s == BroadcastShape::None) return;
    const bool has_b = s == BroadcastShape::BHQK || s == BroadcastShape::BOneQK;
    const bool has_h = s == BroadcastShape::BHQK || s == BroadcastShape::OneHQK;
    sq = p.seqlen_k;
    sh = has_h ? p.seqlen_q * p.seqlen_k : 0;
    sb = has_b ? (has_h ? p.heads_q : 1) * p.seqlen_q * p.seqlen_k : 0;
  };
  strides(p.bias, a.bias_stride_b, a.bias_stride_h, a.bias_stride_q);
  strides(p.mask, a.mask_stride_b, a.mask_stride_h, a.mask_stride_q);
  if (p.block_mask != BroadcastShape::None) {
    const std::vector<int64_t> s = p.block_mask_shape();  // {b|1, h|1, q blocks, k blocks}
    a.has_block_mask = true;
    a.bm_block_q = narrow(p.block_mask_q, "block_mask_q");
    a.bm_block_k = narrow(p.block_mask_k, "block_mask_k");
    a.bm_k_blocks = narrow(s[3], "block_mask_k");
    a.bm_stride_h = s[1] == 1 ? 0 : s[2] * s[3];
    a.bm_stride_b = s[0] == 1 ? 0 : s[1] * s[2] * s[3];
  }
  return a;
}

}  // namespace flashsim::gpu
