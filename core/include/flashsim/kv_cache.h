#pragma once
// A paged KV cache, as flash-attention's flash_attn_with_kvcache, vLLM and FlashInfer lay it out:
//   k_cache, v_cache : [num_blocks, page_size, heads_kv, head_dim | head_dim_v]
//   block_table      : [batch, max_blocks_per_seq] int32, page indices into k_cache / v_cache
//   cache_seqlens    : [batch] int32, the keys already cached for each sequence
//   k_new, v_new     : [batch, seqlen_new, heads_kv, head_dim | head_dim_v], optional, appended at
//                      cache_seqlens[b] before attending (the cache is updated in place)
// The keys of sequence b are rows 0 .. cache_seqlens[b] + seqlen_new - 1 of its pages in table order: key j is
// row j % page_size of page block_table[b][j / page_size]. Pages may be shared, shuffled or unused.
#include <cstdint>
#include <vector>

#include "flashsim/problem.h"

namespace flashsim {

struct KvCacheLayout {
  int64_t num_blocks = 0;
  int64_t page_size = 16;
  int64_t max_blocks_per_seq = 0;
  int64_t seqlen_new = 0;              // rows of k_new / v_new per sequence (0: none)
  std::vector<int32_t> block_table;    // [batch, max_blocks_per_seq]
  std::vector<int32_t> cache_seqlens;  // [batch]

  int64_t batch() const { return static_cast<int64_t>(cache_seqlens.size()); }
  int64_t keys(int64_t b) const { return cache_seqlens[b] + seqlen_new; }  // after the append
  // Row of key j of sequence b in the [num_blocks * page_size] rows of the cache.
  int64_t cache_row(int64_t b, int64_t j) const {
    return int64_t{block_table[b * max_blocks_per_seq + j / page_size]} * page_size + j % page_size;
  }
  // Throws InputError naming the field: sizes, a page index outside [0, num_blocks) among the pages a
  // sequence uses, more keys than its table's pages hold, an append to a row that another append writes or a
  // sequence reads as a cached key (shared prefix pages are fine without appends into them).
  void validate() const;
};

struct KvCache {
  KvCacheLayout layout;
  std::vector<double> k_cache, v_cache;  // [num_blocks, page_size, heads_kv, dim]
  std::vector<double> k_new, v_new;      // [batch, seqlen_new, heads_kv, dim] or empty

  // Throws InputError for a layout error or a tensor whose size does not match it and dims.
  void validate(int64_t heads_kv, int64_t head_dim, int64_t head_dim_v) const;
};

// The cache after the append: k_new / v_new written into rows cache_seqlens[b] .. of each sequence's pages.
KvCache appended(const KvCache& cache, int64_t heads_kv, int64_t head_dim, int64_t head_dim_v);

// The contiguous keys and values of every sequence (after the append), packed as a varlen k / v
// [sum keys(b), heads_kv, dim]: the dense inputs of the same attention. `p` gives heads_kv and the dims.
void gather_keys(const KvCache& cache, const AttentionProblem& p, std::vector<double>& k,
                 std::vector<double>& v);

// The paged cache holding the packed keys k / v [sum lens[b], heads_kv, dim] of sequences of lengths `lens` in
// the pages of `block_table` ([batch, max_blocks_per_seq], page_size rows a page, num_blocks pages; unused
// rows 0): the inverse of gather_keys without an append, for tables whose sequences use disjoint pages.
// The layout of problem p's cache (p.kv_cache()) with the given block table.
KvCacheLayout kv_cache_layout(const AttentionProblem& p, std::vector<int32_t> block_table);

// A seeded page assignment: the pages of all sequences (in order) are a shuffled draw of distinct pages from
// [0, p.cache_num_blocks()), so tables are non-contiguous and pages unused by any sequence stay free; table
// entries past a sequence's pages are 0. Independent of thread counts.
std::vector<int32_t> make_block_table(const AttentionProblem& p, uint64_t seed);

KvCache scatter_keys(const std::vector<double>& k, const std::vector<double>& v,
                     const std::vector<int64_t>& lens, int64_t heads_kv, int64_t head_dim, int64_t head_dim_v,
                     int64_t num_blocks, int64_t page_size, const std::vector<int32_t>& block_table);

}  // namespace flashsim
