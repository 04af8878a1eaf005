// The paged KV cache (core/include/flashsim/kv_cache.h): a paged cache with any page size and a shuffled block
// table holds exactly the contiguous keys (gather inverts scatter bit for bit), the append lands where
// flash_attn_with_kvcache writes it, attention over the gathered keys equals the contiguous problem's, and bad
// tables are InputErrors naming the field.
#include "flashsim/kv_cache.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <random>

#include "flashsim/error.h"
#include "flashsim/ref/attention.h"
#include "problem_builder.h"
#include "test_util.h"

namespace flashsim::test {
namespace {

// A shuffled table giving each sequence ceil(lens[b] / page) pages (+ `spare` more), all pages distinct.
std::vector<int32_t> shuffled_table(const std::vector<int64_t>& lens, int64_t page, int64_t spare,
                                    int64_t& max_blocks, int64_t& num_blocks, uint32_t seed) {
  max_blocks = 0;
  for (const int64_t n : lens) max_blocks = std::max(max_blocks, (n + page - 1) / page + spare);
  num_blocks = static_cast<int64_t>(lens.size()) * max_blocks + 3;  // 3 pages nobody uses
  std::vector<int32_t> pages(num_blocks);
  std::iota(pages.begin(), pages.end(), 0);
  std::shuffle(pages.begin(), pages.end(), std::mt19937(seed));
  pages.resize(lens.size() * max_blocks);
  return pages;
}

TEST(KvCache, PagedAndContiguousHoldIdenticalKeys) {
  const std::vector<int64_t> lens{300, 1, 0, 129, 17};
  const AttentionProblem p =
      ProblemBuilder().heads(8, 2).varlen({1, 1, 1, 1, 1}, lens).head_dim(64, 32).build();
  const AttentionInputs in = make_random_inputs(p, 31);
  for (const int64_t page : {1, 7, 16, 256}) {
    int64_t max_blocks = 0, num_blocks = 0;
    const auto table = shuffled_table(lens, page, 1, max_blocks, num_blocks, 5 + static_cast<uint32_t>(page));
    const KvCache c =
        scatter_keys(in.k, in.v, lens, p.heads_kv, p.head_dim, p.head_dim_v, num_blocks, page, table);
    std::vector<double> k, v;
    gather_keys(c, p, k, v);
    EXPECT_EQ(k, in.k) << "page " << page;  // bit for bit
    EXPECT_EQ(v, in.v) << "page " << page;
    // And the attention on them: decoding one query per sequence.
    AttentionInputs paged = in;
    paged.k = k;
    paged.v = v;
    EXPECT_EQ(ref::forward(p, paged, Algorithm::Naive).o, ref::forward(p, in, Algorithm::Naive).o);
  }
}

TEST(KvCache, AppendWritesTheNewKeysAfterTheCachedOnes) {
  KvCache c;
  KvCacheLayout& l = c.layout;
  l.num_blocks = 6;
  l.page_size = 3;
  l.max_blocks_per_seq = 2;
  l.seqlen_new = 2;
  l.block_table = {4, 1, /*seq 1*/ 0, 5};
  l.cache_seqlens = {2, 4};  // seq 0: rows 0-1 of page 4, appends row 2 of page 4 and row 0 of page 1
  const int64_t hk = 1, d = 2;
  c.k_cache.assign(6 * 3 * hk * d, -1.0);
  c.v_cache = c.k_cache;
  c.k_new = {10, 11, 20, 21, /*seq 1*/ 30, 31, 40, 41};
  c.v_new = c.k_new;
  const KvCache a = appended(c, hk, d, d);
  EXPECT_EQ(a.layout.cache_seqlens, (std::vector<int32_t>{4, 6}));
  EXPECT_EQ(a.k_cache[(4 * 3 + 2) * d], 10);      // seq 0, key 2: page 4 row 2
  EXPECT_EQ(a.k_cache[(1 * 3 + 0) * d + 1], 21);  // seq 0, key 3: page 1 row 0
  EXPECT_EQ(a.k_cache[(5 * 3 + 1) * d], 30);      // seq 1, key 4: page 5 row 1
  EXPECT_EQ(a.k_cache[(5 * 3 + 2) * d], 40);      // seq 1, key 5: page 5 row 2
  EXPECT_EQ(a.k_cache[(4 * 3 + 0) * d], -1);      // cached rows untouched
  AttentionProblem p = ProblemBuilder().heads(1, 1).head_dim(2).build();
  std::vector<double> k, v;
  gather_keys(c, p, k, v);
  EXPECT_EQ(k.size(), static_cast<size_t>((4 + 6) * d));
  EXPECT_EQ(k[2 * d], 10);               // seq 0's third key is the first new one
  std::vector<double> k_after, v_after;  // gathering reads k_new where the append writes it
  gather_keys(a, p, k_after, v_after);
  EXPECT_EQ(k, k_after);
  EXPECT_EQ(v, v_after);
}

TEST(KvCache, BadTablesAreInputErrorsNamingTheField) {
  const auto field_of = [](const KvCache& c) {
    try {
      c.validate(1, 2, 2);
    } catch (const InputError& e) {
      return e.field();
    }
    return std::string("none");
  };
  KvCache good;
  good.layout.num_blocks = 4;
  good.layout.page_size = 2;
  good.layout.max_blocks_per_seq = 2;
  good.layout.block_table = {0, 1, 2, 3};
  good.layout.cache_seqlens = {3, 4};
  good.k_cache.assign(4 * 2 * 2, 0.0);
  good.v_cache = good.k_cache;
  EXPECT_EQ(field_of(good), "none");
  auto past_end = good;
  past_end.layout.block_table[3] = 4;  // page 4 of 4
  EXPECT_EQ(field_of(past_end), "block_table");
  auto too_long = good;
  too_long.layout.cache_seqlens[0] = 5;  // 2 pages of 2 rows
  EXPECT_EQ(field_of(too_long), "cache_seqlens");
  auto negative = good;
  negative.layout.cache_seqlens[1] = -1;
  EXPECT_EQ(field_of(negative), "cache_seqlens");
  auto short_cache = good;
  short_cache.k_cache.pop_back();
  EXPECT_EQ(field_of(short_cache), "k_cache");
  auto clash = good;  // both sequences append into page 1 row 1
  clash.layout.block_table = {0, 1, 0, 1};
  clash.layout.cache_seqlens = {3, 3};
  clash.layout.seqlen_new = 1;
  clash.k_new.assign(2 * 2, 0.0);
  clash.v_new = clash.k_new;
  EXPECT_EQ(field_of(clash), "block_table");
  auto reads_appended = good;  // sequence 1 appends into page 1 row 0, which sequence 0 reads as its key 2
  reads_appended.layout.max_blocks_per_seq = 3;
  reads_appended.layout.block_table = {0, 1, 3, /*seq 1*/ 2, 1, 3};
  reads_appended.layout.cache_seqlens = {4, 2};
  reads_appended.layout.seqlen_new = 1;
  reads_appended.k_new.assign(2 * 2, 0.0);
  reads_appended.v_new = reads_appended.k_new;
  EXPECT_EQ(field_of(reads_appended), "block_table");
  auto zero_page = good;
  zero_page.layout.page_size = 0;
  EXPECT_EQ(field_of(zero_page), "page_size");
}

}  // namespace
}  // namespace flashsim::test
