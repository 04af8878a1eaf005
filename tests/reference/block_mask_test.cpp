// Block-sparse mask patterns (core/include/flashsim/block_mask.h) against masks written out by hand from
// S2-Attention's definition, the local + sink pattern, the random one, the spec parser's errors and the indexing.
#include "flashsim/block_mask.h"

#include <gtest/gtest.h>

#include "flashsim/error.h"

namespace flashsim {
namespace {

std::vector<uint8_t> rows(std::initializer_list<std::vector<uint8_t>> r) {
  std::vector<uint8_t> out;
  for (const auto& x : r) out.insert(out.end(), x.begin(), x.end());
  return out;
}

TEST(BlockMask, S2ShiftsTheVerticalStrideByHead) {
  // 2 heads, stride 4: head step max(1, 4 / 2) = 2. Head 0 keeps key block 3 ((3 + 0 + 1) % 4 == 0), head 1
  // key blocks 1 and 5 ((kb + 2 + 1) % 4 == 0); local=1 keeps the diagonal; nothing above it (causal).
  const auto m = make_block_mask(parse_block_mask_spec("s2:local=1,stride=4"), 2, 6, 6);
  const auto head0 = rows({{1, 0, 0, 0, 0, 0},
                           {0, 1, 0, 0, 0, 0},
                           {0, 0, 1, 0, 0, 0},
                           {0, 0, 0, 1, 0, 0},
                           {0, 0, 0, 1, 1, 0},
                           {0, 0, 0, 1, 0, 1}});
  const auto head1 = rows({{1, 0, 0, 0, 0, 0},
                           {0, 1, 0, 0, 0, 0},
                           {0, 1, 1, 0, 0, 0},
                           {0, 1, 0, 1, 0, 0},
                           {0, 1, 0, 0, 1, 0},
                           {0, 1, 0, 0, 0, 1}});
  EXPECT_EQ(std::vector<uint8_t>(m.begin(), m.begin() + 36), head0);
  EXPECT_EQ(std::vector<uint8_t>(m.begin() + 36, m.end()), head1);
  // s2-homo: every head as head 0.
  const auto homo = make_block_mask(parse_block_mask_spec("s2-homo:local=1,stride=4"), 2, 6, 6);
  EXPECT_EQ(std::vector<uint8_t>(homo.begin() + 36, homo.end()), head0);
}

TEST(BlockMask, FewerQueryBlocksTakeTheLastRowsOfTheSquare) {
  const auto full = make_block_mask(parse_block_mask_spec("s2:local=2,stride=3"), 3, 7, 7);
  const auto last2 = make_block_mask(parse_block_mask_spec("s2:local=2,stride=3"), 3, 2, 7);
  for (int64_t h = 0; h < 3; ++h)
    for (int64_t qb = 0; qb < 2; ++qb)
      for (int64_t kb = 0; kb < 7; ++kb)
        EXPECT_EQ(last2[(h * 2 + qb) * 7 + kb], full[(h * 7 + qb + 5) * 7 + kb])
            << h << " " << qb << " " << kb;
}

TEST(BlockMask, LocalSinkKeepsRecentAndFirstBlocks) {
  const auto m = make_block_mask(parse_block_mask_spec("local-sink:local=2,sink=1"), 1, 5, 5);
  EXPECT_EQ(m, rows({{1, 0, 0, 0, 0}, {1, 1, 0, 0, 0}, {1, 1, 1, 0, 0}, {1, 0, 1, 1, 0}, {1, 0, 0, 1, 1}}));
}

TEST(BlockMask, RandomKeepsItsFractionAndIsSeeded) {
  const auto spec = parse_block_mask_spec("random:keep=0.3");
  const auto a = make_block_mask(spec, 4, 50, 50, 9), b = make_block_mask(spec, 4, 50, 50, 9);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, make_block_mask(spec, 4, 50, 50, 10));
  int64_t kept = 0;
  for (const uint8_t x : a) kept += x;
  EXPECT_NEAR(static_cast<double>(kept) / static_cast<double>(a.size()), 0.3,
              0.03);  // 10000 draws: 3 sigma ~0.014
}

TEST(BlockMask, BadSpecsAreInputErrors) {
  for (const char* bad : {"s3:local=1,stride=2", "s2:local=1", "s2:local=1,stride=0", "s2:local=-1,stride=2",
                          "s2:local=1,stride=2,extra=3", "local-sink:local=x,sink=1", "random:keep=1.5",
                          "random:keep=", "random", "s2:local"})
    EXPECT_THROW(parse_block_mask_spec(bad), InputError) << bad;
  EXPECT_EQ(parse_block_mask_spec("s2:stride=8,local=4").text(), "s2:local=4,stride=8");
}

TEST(BlockMask, ActiveTilesIndexWithBroadcastDims) {
  // [1, 2, 2, 3] mask (batch broadcast): head 1 keeps only tile (1, 2).
  std::vector<uint8_t> m(12, 0);
  m[(1 * 2 + 1) * 3 + 2] = 1;
  EXPECT_TRUE(block_active(m, 1, 2, 2, 3, 16, 8, /*b*/ 5, /*h*/ 1, /*i*/ 16, /*j*/ 23));
  EXPECT_FALSE(block_active(m, 1, 2, 2, 3, 16, 8, 5, 1, 15, 23));
  EXPECT_FALSE(block_active(m, 1, 2, 2, 3, 16, 8, 5, 0, 16, 23));
}

}  // namespace
}  // namespace flashsim
