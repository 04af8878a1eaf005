#pragma once
// What decode-v1's kernels take by value (host and device): the problem's numbers (params.h), the paged cache,
// the split count and the partials' buffers.
#include <cstdint>

#include "flashsim/gpu/params.h"

namespace flashsim::gpu::decode {

struct DecodeParams {
  AttentionParams a;              // scale, softcap, window, alibi, heads and dims (make_params)
  const void* q = nullptr;        // [batch * seqlen_q, heads_q, d]
  void* o = nullptr;              // [batch * seqlen_q, heads_q, dv]
  float* lse = nullptr;           // [batch, heads_q, seqlen_q]
  const float* slopes = nullptr;  // ALiBi [heads_q] or nullptr
  // The cache (flashsim/kv_cache.h): k_cache / v_cache [num_blocks, page_size, heads_kv, d | dv], the block
  // table [batch, max_blocks], cache_seqlens [batch] (before the append), k_new / v_new
  // [batch, seqlen_new, heads_kv, d | dv].
  void *k_cache = nullptr, *v_cache = nullptr;
  const int32_t *block_table = nullptr, *cache_seqlens = nullptr;
  const void *k_new = nullptr, *v_new = nullptr;
  int page_size = 1, max_blocks = 1, seqlen_new = 0;
  int num_splits = 1;
  // With more than one split: O (normalized by its split's sum) and lse of every split,
  // [num_splits, batch, heads_q, seqlen_q, dv] and [num_splits, batch, heads_q, seqlen_q], fp32.
  float* o_accum = nullptr;
  float* lse_accum = nullptr;
};

}  // namespace flashsim::gpu::decode
