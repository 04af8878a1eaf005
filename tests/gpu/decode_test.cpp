// decode-v1's host side, where no GPU is: which cases it takes and refuses (with the reason), its launch tile (the
// compiled instance's, with the simulator's fastest split count), its workspace, and the harness's skips of the
// decode suite's cases by versions without a paged cache.
#include <gtest/gtest.h>

#include <algorithm>

#include "flashsim/error.h"
#include "flashsim/families/decode/tiles.h"
#include "flashsim/gpu/decode_bench.h"
#include "flashsim/gpu/harness.h"
#include "flashsim/gpu/params.h"
#include "flashsim/kv_cache.h"
#include "flashsim/sim/hardware.h"
#include "flashsim/sim/sweep.h"
#include "problem_builder.h"

using namespace flashsim;
using flashsim::test::ProblemBuilder;

namespace {

// b sequences of `cache` cached keys each, 32 query heads over 8 kv heads, d128, page size 16, one query row.
AttentionProblem decode_problem(int64_t b, int64_t cache, int64_t seqlen_q = 1) {
  AttentionProblem p = ProblemBuilder().batch(b).heads(32, 8).seqlen(seqlen_q, cache).head_dim(128).build();
  p.dtype = DType::BF16;
  p.page_size = 16;
  p.cache_seqlens.assign(static_cast<size_t>(b), cache);
  p.validate();
  return p;
}

const gpu::KernelVersion& decode() {
  return gpu::kernel_version("decode-v1");
}

}  // namespace

// No version takes DeepSeek's MLA (V a view of K's first head_dim_v columns): the harness skips an MLA decode and
// an MLA prefill case for every version, the reason naming MLA, not the paged cache decode-v1 would read.
TEST(GpuDecode, EveryVersionSkipsMla) {
  AttentionProblem decode = ProblemBuilder().batch(2).heads(16, 1).seqlen(1, 1000).head_dim(576, 512).build();
  decode.dtype = DType::BF16;
  decode.mla = true;
  decode.page_size = 64;
  decode.cache_seqlens = {100, 1000};
  decode.validate();
  AttentionProblem prefill = ProblemBuilder().heads(16, 1).seqlen(64).head_dim(576, 512).causal().build();
  prefill.dtype = DType::BF16;
  prefill.mla = true;
  prefill.validate();
  for (const auto& v : gpu::kernel_versions()) {
    EXPECT_FALSE(v.features & gpu::kFeatureMla) << v.name;
    for (const AttentionProblem* p : {&decode, &prefill})
      EXPECT_EQ(gpu::missing_gpu_feature(*p, v.features).rfind("MLA", 0), 0u)
          << v.name << " " << p->describe();
  }
}

TEST(GpuDecode, TakesPagedCachesOnlyAndSaysWhyNot) {
  const auto& v = decode();
  EXPECT_TRUE(v.features & gpu::kFeatureKvCache);
  const AttentionProblem p = decode_problem(4, 1000);
  EXPECT_EQ(gpu::missing_gpu_feature(p, v.features), "");
  EXPECT_EQ(v.unsupported(p, gpu::tile_for(v, p)), "");
  // Every other version skips a paged cache, naming decode-v1.
  for (const auto& other : gpu::kernel_versions()) {
    if (other.features & gpu::kFeatureKvCache) continue;
    EXPECT_NE(gpu::missing_gpu_feature(p, other.features).find("decode-v1"), std::string::npos) << other.name;
  }
  // A dense problem, a bias, a mask, fp64, an odd head dim: refused with a reason, never run.
  AttentionProblem dense = ProblemBuilder().heads(8, 2).seqlen(1, 64).head_dim(128).build();
  dense.dtype = DType::BF16;
  EXPECT_NE(v.unsupported(dense, TileConfig{}).find("not a paged KV cache"), std::string::npos);
  AttentionProblem biased = p;
  biased.bias = BroadcastShape::BHQK;
  EXPECT_NE(v.unsupported(biased, TileConfig{}).find("bias"), std::string::npos);
  AttentionProblem f64 = p;
  f64.dtype = DType::F64;
  EXPECT_NE(v.unsupported(f64, TileConfig{}).find("dtype"), std::string::npos);
  AttentionProblem d96 = p;
  d96.head_dim = d96.head_dim_v = 96;
  EXPECT_NE(v.unsupported(d96, TileConfig{}).find("head dims"), std::string::npos);
  TileConfig many = gpu::tile_for(v, p);
  many.num_splits = 129;
  EXPECT_NE(v.unsupported(p, many).find("at most 128"), std::string::npos);
}

TEST(GpuDecode, LaunchTileIsTheInstancesWithTheModelsFastestSplits) {
  const auto& v = decode();
  const auto hw = sim::load_profile("H100-SXM5-80GB");  // no device here: the profile decode-v1 falls back on
  for (const auto& [b, cache] : {std::pair<int64_t, int64_t>{1, 8192}, {8, 1024}, {64, 8192}}) {
    const AttentionProblem p = decode_problem(b, cache);
    const TileConfig c = gpu::tile_for(v, p);
    EXPECT_EQ(c.block_q, 4);   // 1 query row x 4 query heads a kv head, packed
    EXPECT_EQ(c.block_k, 64);  // a 32 KiB stage of d128 bf16 K and V
    TileConfig one = c;
    one.num_splits = 1;
    EXPECT_EQ(c.num_splits, sim::pick_splits(sim::sweep_splits_of_tile(p, hw, one))) << p.describe();
  }
  // A long single sequence splits (one CTA a kv head would stream 8K keys alone); more rows pack 8 or 16 a CTA.
  EXPECT_GT(gpu::tile_for(v, decode_problem(1, 32768)).num_splits, 1);
  EXPECT_EQ(gpu::tile_for(v, decode_problem(2, 100, 2)).block_q, 8);
  EXPECT_EQ(gpu::tile_for(v, decode_problem(2, 100, 4)).block_q, 16);
}

// Every split-kernel instance has its compiled registers in the family's table (registers_sm90.h), and the
// model's occupancy of a decode tile follows them: decode-v2's d64 instance (127 registers, 52 KiB) holds four
// CTAs an SM, where a generic split-KV tile's 255 registers would hold two.
TEST(GpuDecode, EveryInstanceHasItsRegistersAndTheModelUsesThem) {
  namespace dec = gpu::decode;
  for (const auto& [d, dv] : {std::pair{64, 64}, {128, 128}, {128, 64}, {256, 256}}) {
    const dec::DecodeTile v2 = dec::decode_tile(dec::Split::TensorCores, 2, d, dv, 1);
    EXPECT_GT(v2.registers, 0) << d;
    EXPECT_LE(v2.registers, 255) << d;
    for (const int e : {2, 4})
      for (const int64_t rows : {4, 8, 16})
        EXPECT_GT(dec::decode_tile(dec::Split::CudaCores, e, d, dv, rows).registers, 0)
            << d << " " << e << " " << rows;
  }
  const auto hw = sim::load_profile("H200");
  TileConfig tile;  // decode-v2's d64 tile
  tile.block_q = 16;
  tile.block_k = 64;
  tile.warps = 4;
  tile.stages = 3;
  AttentionProblem p = decode_problem(1, 1024);
  p.head_dim = p.head_dim_v = 64;
  const auto r = sim::sweep_splits_of_tile(p, hw, tile);
  EXPECT_EQ(r.rows[0].split_resident_ctas, 4 * hw.sms);
  tile.stages = 2;  // no instance of the family: FA2's 255 registers, two CTAs an SM
  EXPECT_EQ(sim::sweep_splits_of_tile(p, hw, tile).rows[0].split_resident_ctas, 2 * hw.sms);
}

TEST(GpuDecode, WorkspaceHoldsEverySplitsPartials) {
  const auto& v = decode();
  const AttentionProblem p = decode_problem(3, 500, 2);
  TileConfig c = gpu::tile_for(v, p);
  c.num_splits = 1;
  EXPECT_EQ(v.workspace_bytes(p, c), 0u);  // one split writes o and lse directly
  c.num_splits = 5;
  // o_accum [5, 3, 32, 2, 128] and lse_accum [5, 3, 32, 2], fp32
  EXPECT_EQ(v.workspace_bytes(p, c), static_cast<size_t>(5 * 3 * 32 * 2) * (128 + 1) * 4);
}

TEST(GpuDecode, OnlyTheSplitCountMayBeOverridden) {
  const auto& v = decode();
  const AttentionProblem p = decode_problem(2, 300);
  TileConfig c = gpu::tile_for(v, p);
  c.block_k = 128;
  gpu::DeviceArgs none;
  EXPECT_THROW(v.forward(p, c, none), InputError);
}

// decode-bench --pages in-order: each sequence's pages follow one another (page k of a sequence is the one after
// page k - 1), every page used once, within the cache's blocks, with sequences of different lengths; the
// shuffled table (the default) uses the same pages in another order.
TEST(GpuDecode, InOrderBlockTableLaysEachSequenceOutContiguously) {
  AttentionProblem p = decode_problem(3, 100);
  p.cache_seqlens = {100, 17, 64};  // 7, 2 and 4 pages of 16
  p.validate();
  const std::vector<int32_t> t = gpu::in_order_block_table(p);
  const int64_t cols = p.max_blocks_per_seq();
  ASSERT_EQ(t.size(), static_cast<size_t>(p.batch * cols));
  std::vector<int32_t> used;
  for (int64_t b = 0; b < p.batch; ++b)
    for (int64_t i = 0; i < p.cache_pages(b); ++i) {
      const int32_t page = t[static_cast<size_t>(b * cols + i)];
      if (i > 0) {
        EXPECT_EQ(page, t[static_cast<size_t>(b * cols + i - 1)] + 1) << b << " " << i;
      }
      used.push_back(page);
    }
  std::vector<int32_t> shuffled_used;
  const std::vector<int32_t> s = make_block_table(p, 7);
  for (int64_t b = 0; b < p.batch; ++b)
    for (int64_t i = 0; i < p.cache_pages(b); ++i)
      shuffled_used.push_back(s[static_cast<size_t>(b * cols + i)]);
  std::sort(used.begin(), used.end());
  std::sort(shuffled_used.begin(), shuffled_used.end());
  EXPECT_EQ(used, shuffled_used);  // the same pages, 0 .. num_blocks - 1 once each
  EXPECT_EQ(used.front(), 0);
  EXPECT_EQ(used.back(), p.cache_num_blocks() - 1);
  EXPECT_EQ(std::adjacent_find(used.begin(), used.end()), used.end());
}
