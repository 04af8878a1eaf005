// The paged KV cache (kv_cache.h): validation, the append, gather to contiguous keys and its inverse.
#include "flashsim/kv_cache.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <utility>

#include "flashsim/error.h"
#include "flashsim/inputs.h"
#include "flashsim/random.h"

namespace flashsim {

namespace {

// Rows [0, n) of a [rows, heads, dim] tensor's row r: heads * dim values.
void copy_row(const std::vector<double>& src, int64_t src_row, std::vector<double>& dst, int64_t dst_row,
              int64_t row_elems) {
  std::copy_n(src.begin() + src_row * row_elems, row_elems, dst.begin() + dst_row * row_elems);
}

void require_size(const std::vector<double>& t, int64_t elems, const char* field) {
  if (static_cast<int64_t>(t.size()) != elems)
    throw InputError(field, fmt::format("has {} elements, the cache layout needs {}", t.size(), elems));
}

}  // namespace

void KvCacheLayout::validate() const {
  if (num_blocks < 1) throw InputError("num_blocks", fmt::format("must be >= 1, got {}", num_blocks));
  if (page_size < 1 || page_size > (1 << 20))
    throw InputError("page_size", fmt::format("must be in [1, 1048576], got {}", page_size));
  if (max_blocks_per_seq < 1)
    throw InputError("block_table", fmt::format("needs >= 1 page a sequence, got {}", max_blocks_per_seq));
  if (seqlen_new < 0) throw InputError("k_new", fmt::format("seqlen_new must be >= 0, got {}", seqlen_new));
  if (cache_seqlens.empty()) throw InputError("cache_seqlens", "is empty (one entry per sequence)");
  if (static_cast<int64_t>(block_table.size()) != batch() * max_blocks_per_seq)
    throw InputError("block_table", fmt::format("has {} entries, batch {} x max_blocks_per_seq {} expected",
                                                block_table.size(), batch(), max_blocks_per_seq));
  // Cache rows read as cached keys (1) and written by an append (2): an append must own its row, else the
  // attention would depend on the order of the writes and the reads (a race in a kernel).
  std::vector<uint8_t> use(num_blocks * page_size, 0);
  for (int64_t b = 0; b < batch(); ++b) {
    if (cache_seqlens[b] < 0)
      throw InputError("cache_seqlens", fmt::format("sequence {}: {} is negative", b, cache_seqlens[b]));
    if (keys(b) > max_blocks_per_seq * page_size)
      throw InputError(
          "cache_seqlens",
          fmt::format("sequence {}: {} keys (cache_seqlens {} + {} new) exceed the table's {} pages "
                      "of {} rows",
                      b, keys(b), cache_seqlens[b], seqlen_new, max_blocks_per_seq, page_size));
    const int64_t pages = (keys(b) + page_size - 1) / page_size;
    for (int64_t i = 0; i < pages; ++i) {
      const int32_t page = block_table[b * max_blocks_per_seq + i];
      if (page < 0 || page >= num_blocks)
        throw InputError("block_table",
                         fmt::format("sequence {}, entry {}: page {} is outside [0, num_blocks = {})", b, i,
                                     page, num_blocks));
    }
    for (int64_t j = 0; j < cache_seqlens[b]; ++j) use[cache_row(b, j)] |= 1;
  }
  for (int64_t b = 0; b < batch(); ++b)
    for (int64_t j = cache_seqlens[b]; j < keys(b); ++j) {
      uint8_t& u = use[cache_row(b, j)];
      if (u != 0)
        throw InputError(
            "block_table",
            fmt::format("sequence {} appends key {} to a cache row (page {}, row {}) that {} also", b, j,
                        cache_row(b, j) / page_size, cache_row(b, j) % page_size,
                        u == 1 ? "a sequence reads as a cached key" : "another append writes"));
      u = 2;
    }
}

void KvCache::validate(int64_t heads_kv, int64_t head_dim, int64_t head_dim_v) const {
  layout.validate();
  const int64_t rows = layout.num_blocks * layout.page_size, nb = layout.batch() * layout.seqlen_new;
  require_size(k_cache, rows * heads_kv * head_dim, "k_cache");
  require_size(v_cache, rows * heads_kv * head_dim_v, "v_cache");
  require_size(k_new, nb * heads_kv * head_dim, "k_new");
  require_size(v_new, nb * heads_kv * head_dim_v, "v_new");
}

KvCache appended(const KvCache& cache, int64_t heads_kv, int64_t head_dim, int64_t head_dim_v) {
  cache.validate(heads_kv, head_dim, head_dim_v);
  KvCache out = cache;
  const KvCacheLayout& l = cache.layout;
  for (int64_t b = 0; b < l.batch(); ++b)
    for (int64_t n = 0; n < l.seqlen_new; ++n) {
      const int64_t row = l.cache_row(b, l.cache_seqlens[b] + n), src = b * l.seqlen_new + n;
      copy_row(cache.k_new, src, out.k_cache, row, heads_kv * head_dim);
      copy_row(cache.v_new, src, out.v_cache, row, heads_kv * head_dim_v);
    }
  out.layout.cache_seqlens.clear();  // the new keys are cached now
  for (int64_t b = 0; b < l.batch(); ++b) out.layout.cache_seqlens.push_back(static_cast<int32_t>(l.keys(b)));
  out.layout.seqlen_new = 0;
  out.k_new.clear();
  out.v_new.clear();
  return out;
}

void gather_keys(const KvCache& cache, const AttentionProblem& p, std::vector<double>& k,
                 std::vector<double>& v) {
  cache.validate(p.heads_kv, p.head_dim, p.head_dim_v);
  const KvCacheLayout& l = cache.layout;
  int64_t total = 0;
  for (int64_t b = 0; b < l.batch(); ++b) total += l.keys(b);
  const int64_t kr = p.heads_kv * p.head_dim, vr = p.heads_kv * p.head_dim_v;
  k.assign(total * kr, 0.0);
  v.assign(total * vr, 0.0);
  int64_t row = 0;
  for (int64_t b = 0; b < l.batch(); ++b)
    for (int64_t j = 0; j < l.keys(b); ++j, ++row) {
      // the cached keys from their pages, then the appended ones (where appended() would write them)
      const bool cached = j < l.cache_seqlens[b];
      const int64_t src = cached ? l.cache_row(b, j) : b * l.seqlen_new + j - l.cache_seqlens[b];
      copy_row(cached ? cache.k_cache : cache.k_new, src, k, row, kr);
      copy_row(cached ? cache.v_cache : cache.v_new, src, v, row, vr);
    }
}

KvCacheLayout kv_cache_layout(const AttentionProblem& p, std::vector<int32_t> block_table) {
  KvCacheLayout l;
  l.num_blocks = p.cache_num_blocks();
  l.page_size = p.page_size;
  l.max_blocks_per_seq = p.max_blocks_per_seq();
  l.seqlen_new = p.seqlen_new;
  l.block_table = std::move(block_table);
  for (const int64_t n : p.cache_seqlens) l.cache_seqlens.push_back(static_cast<int32_t>(n));
  return l;
}

std::vector<int32_t> make_block_table(const AttentionProblem& p, uint64_t seed) {
  const int64_t pages = p.cache_num_blocks(), cols = p.max_blocks_per_seq();
  if (pages > std::numeric_limits<int32_t>::max())
    throw InputError("num_blocks", fmt::format("{} pages do not fit int32 page indices", pages));
  // Fisher-Yates over [0, pages) with draws from the BlockTable stream: page n of the permutation.
  std::vector<int32_t> perm(pages);
  for (int64_t n = 0; n < pages; ++n) perm[n] = static_cast<int32_t>(n);
  for (int64_t n = pages - 1; n > 0; --n) {
    const double u =
        uniform_open01(seed, static_cast<uint64_t>(InputStream::BlockTable), static_cast<uint64_t>(n));
    const auto r = std::min<int64_t>(n, static_cast<int64_t>(u * static_cast<double>(n + 1)));
    std::swap(perm[n], perm[r]);
  }
  std::vector<int32_t> table(p.batch * cols, 0);
  int64_t next = 0;
  for (int64_t b = 0; b < p.batch; ++b)
    for (int64_t i = 0; i < p.cache_pages(b); ++i) table[b * cols + i] = perm[next++];
  return table;
}

KvCache scatter_keys(const std::vector<double>& k, const std::vector<double>& v,
                     const std::vector<int64_t>& lens, int64_t heads_kv, int64_t head_dim, int64_t head_dim_v,
                     int64_t num_blocks, int64_t page_size, const std::vector<int32_t>& block_table) {
  KvCache c;
  KvCacheLayout& l = c.layout;
  l.num_blocks = num_blocks;
  l.page_size = page_size;
  l.block_table = block_table;
  l.max_blocks_per_seq = lens.empty() ? 0 : static_cast<int64_t>(block_table.size() / lens.size());
  for (const int64_t n : lens) l.cache_seqlens.push_back(static_cast<int32_t>(n));
  l.validate();
  const int64_t kr = heads_kv * head_dim, vr = heads_kv * head_dim_v;
  int64_t total = 0;
  for (const int64_t n : lens) total += n;
  if (static_cast<int64_t>(k.size()) != total * kr || static_cast<int64_t>(v.size()) != total * vr)
    throw InputError("k",
                     fmt::format("k / v hold {} / {} values, {} keys of heads_kv {} x dims {} / {} expected",
                                 k.size(), v.size(), total, heads_kv, head_dim, head_dim_v));
  c.k_cache.assign(num_blocks * page_size * kr, 0.0);
  c.v_cache.assign(num_blocks * page_size * vr, 0.0);
  int64_t row = 0;
  for (int64_t b = 0; b < l.batch(); ++b)
    for (int64_t j = 0; j < lens[b]; ++j, ++row) {
      copy_row(k, row, c.k_cache, l.cache_row(b, j), kr);
      copy_row(v, row, c.v_cache, l.cache_row(b, j), vr);
    }
  return c;
}

}  // namespace flashsim
