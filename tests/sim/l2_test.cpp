#include <gtest/gtest.h>

#include "flashsim/sim/counts.h"
#include "flashsim/sim/kernel_model.h"
#include "flashsim/sim/l2_sim.h"
#include "problem_builder.h"

using namespace flashsim;
using namespace flashsim::sim;
using flashsim::test::ProblemBuilder;

namespace {
AttentionProblem small() {
  return ProblemBuilder().batch(2).heads(2).seqlen(256).head_dim(64).dtype(DType::BF16).build();
}
}  // namespace

TEST(L2, ColdReadsEachLineOnceWhenItFits) {
  const auto p = small();
  const auto s = schedule(kernel_model("fwd_fa2"), p, TileConfig{});
  const auto k = execute_counts(s);
  const auto r = simulate_l2(s, p, load_profile("H100-SXM5-80GB"), 264);
  EXPECT_EQ(r.dram_read, k.unique_loaded());
  EXPECT_EQ(r.dram_write, 0);  // everything still in L2 at kernel end
  EXPECT_EQ(r.dirty_at_end, k.unique_dirty());
}

TEST(L2, TinyCacheWritesBackAndRereads) {
  const auto p = small();
  auto hw = load_profile("H100-SXM5-80GB");
  hw.l2_effective_bytes = 4 * 128;
  const auto s = schedule(kernel_model("fwd_fa2"), p, TileConfig{});
  const auto k = execute_counts(s);
  const auto r = simulate_l2(s, p, hw, 1);
  EXPECT_GT(r.dram_read, k.unique_loaded());  // K and V re-read per query block
  EXPECT_EQ(r.dram_write + r.dirty_at_end, k.unique_dirty());
}

TEST(L2, DirtyLimitWritesBackOldestDirtyLinesThatStayCached) {
  const auto p = small();
  auto hw = load_profile("H100-SXM5-80GB");
  const int64_t limit =
      32 * 1024;  // well under O's 128 KiB: most of O must be written back during the kernel
  hw.l2_dirty_bytes = limit;
  const auto s = schedule(kernel_model("fwd_fa2"), p, TileConfig{});
  const auto k = execute_counts(s);
  ASSERT_GT(k.unique_dirty(), 2 * limit);
  const auto r = simulate_l2(s, p, hw, 264);
  EXPECT_EQ(r.dram_read, k.unique_loaded());  // written-back lines stay cached: nothing is read twice
  EXPECT_LE(r.dirty_at_end, limit);
  EXPECT_GE(r.dirty_at_end, limit - 16 * 64 * 2);  // at most one 16-row chunk of O below the limit
  EXPECT_EQ(r.dram_write + r.dirty_at_end, k.unique_dirty());
}

// MLA's V read apart from K (standard attention's kernels) is the first head_dim_v columns of K's rows, at K's row
// pitch: dK's kernel reads V's gradient back from dK's first columns and stores whole dK rows, and with the L2 cold
// and large enough each line is missed once: the store finds the read-back's lines (misses x 128 = the footprint,
// dK's whole rows; DRAM reads the first columns alone), and P V reads K's first columns alone from DRAM.
TEST(L2, MlaValueColumnsShareTheKeyRowsLines) {
  AttentionProblem p =
      ProblemBuilder().batch(2).heads(2, 1).seqlen(64).head_dim(128, 64).dtype(DType::BF16).build();
  p.mla = true;
  p.validate();
  const auto hw = load_profile("H100-SXM5-80GB");
  const auto dk = schedule(kernel_model("naive_bwd_dk"), p, TileConfig{});
  const auto kdk = execute_counts(dk);
  const auto r = simulate_l2(dk, p, hw, 264);
  EXPECT_EQ(r.misses * 128, kdk.unique_total());
  EXPECT_EQ(r.dram_read, kdk.unique_loaded());  // dK's first columns alone read back
  EXPECT_EQ(kdk.tensors[static_cast<size_t>(ref::TensorId::dK)].unique_bytes, 2 * 2 * 64 * 128 * 2);
  const auto pv = schedule(kernel_model("naive_pv"), p, TileConfig{});
  const auto kpv = execute_counts(pv);
  const int64_t k_half = 2 * 64 * 64 * 2;  // the first 64 of K's 128 columns, 64 rows of 2 sequences
  EXPECT_EQ(kpv.tensors[static_cast<size_t>(ref::TensorId::K)].unique_bytes, k_half);
  EXPECT_EQ(simulate_l2(pv, p, hw, 264).dram_read, kpv.unique_loaded());
}

// The partitioned L2 (l2_sim.h): a line read by SMs of both partitions is read from DRAM once (the near partition
// copies it from its home over the fabric), so with room for everything it reads the compulsory bytes.
TEST(PartitionedL2, ColdReadsEachLineOnceWhenItFits) {
  const auto p =
      ProblemBuilder().batch(2).heads(4).seqlen(2048).head_dim(128).dtype(DType::BF16).causal().build();
  const auto hw = load_profile("H100-SXM5-80GB");
  ASSERT_EQ(hw.l2_partitions, 2);
  const auto s = schedule(kernel_model("fwd_fa2"), p, TileConfig{});
  EXPECT_EQ(simulate_l2_partitioned_reads(s, p, hw, 264, hw.l2_bytes).dram_read,
            execute_counts(s).unique_loaded());
}

// With one partition and one set (as many ways as the capacity has entries) it is an LRU over the same entries:
// simulate_l2's LRU (its own code) reads the same bytes at the same capacity, whatever the capacity.
TEST(PartitionedL2, OnePartitionOneSetIsTheLru) {
  const auto p =
      ProblemBuilder().batch(1).heads(8, 2).seqlen(3000).head_dim(64).dtype(DType::BF16).causal().build();
  auto hw = load_profile("H100-SXM5-80GB");
  hw.l2_partitions = 1;
  const auto s = schedule(kernel_model("fwd_fa2"), p, TileConfig{});
  for (const int64_t capacity : {int64_t{128} << 10, int64_t{256} << 10, int64_t{1} << 20}) {
    hw.l2_ways = static_cast<int>(capacity / (16 * 128));  // entries of 16 rows of one 128-byte line (d64)
    hw.l2_effective_bytes = capacity;
    hw.l2_dirty_bytes = 0;
    const auto lru = simulate_l2(s, p, hw, 264).dram_read;
    EXPECT_GT(lru, execute_counts(s).unique_loaded()) << capacity;  // the case re-reads
    EXPECT_EQ(simulate_l2_partitioned_reads(s, p, hw, 264, capacity).dram_read, lru) << capacity;
  }
}

// A long causal forward re-reads K and V more as the capacity shrinks, and two partitions keeping copies of
// each other's lines re-read more than one partition of their total capacity.
TEST(PartitionedL2, RereadsGrowAsTheCapacityShrinksAndWithCopies) {
  const auto p =
      ProblemBuilder().batch(2).heads(8).seqlen(8192).head_dim(128).dtype(DType::BF16).causal().build();
  const auto hw = load_profile("H100-SXM5-80GB");
  const auto s = schedule(kernel_model("fwd_fa2"), p, TileConfig{});
  const auto compulsory = execute_counts(s).unique_loaded();
  const auto at = [&](int64_t mib, int parts) {
    auto h = hw;
    h.l2_partitions = parts;
    return simulate_l2_partitioned_reads(s, p, h, 264, mib << 20).dram_read;
  };
  EXPECT_GT(at(8, 2), at(16, 2));
  EXPECT_GT(at(16, 2), at(40, 2));
  EXPECT_GE(at(40, 2), compulsory);
  EXPECT_GT(at(16, 2), at(16, 1));
}

// Register-spill frames walked with the schedule (l2_sim.h): each CTA stores its frame when it starts and loads it
// when it ends, at its slot's local memory. With room for everything no frame comes back from DRAM, and the
// slots' frames (not every CTA's) are what stays dirty; in a cache too small to keep a frame through a CTA's main
// loop each CTA's frame is read back, and no more.
TEST(L2, SpillFramesComeBackOnlyWhenEvicted) {
  const auto p =
      ProblemBuilder().batch(2).heads(4).seqlen(2048).head_dim(128).dtype(DType::BF16).causal().build();
  const auto s = schedule(kernel_model("fwd_fa2"), p, TileConfig{});
  const auto k = execute_counts(s);
  const auto ctas = static_cast<int64_t>(s.ctas.size());
  const int64_t frame = 376 * s.launch.threads, slots = 16;  // SDPA's d128 frame (bytes a thread), 16 slots
  ASSERT_GT(ctas, slots);
  auto hw = load_profile("H100-SXM5-80GB");
  const auto roomy = simulate_l2(s, p, hw, slots, frame);
  EXPECT_EQ(roomy.frame_read, 0);
  EXPECT_EQ(roomy.dram_read, k.unique_loaded());
  EXPECT_EQ(roomy.dirty_at_end, k.unique_dirty() + slots * frame);  // 376 x 128 threads: whole lines
  EXPECT_EQ(simulate_l2_partitioned_reads(s, p, hw, slots, hw.l2_bytes, frame).dram_read, k.unique_loaded());
  // 64 KiB: less than a CTA's K and V, so each frame ages out before its CTA ends
  hw.l2_effective_bytes = 64 << 10;
  hw.l2_dirty_bytes = 0;
  const auto tight = simulate_l2(s, p, hw, 1, frame);
  EXPECT_EQ(tight.frame_read, ctas * frame);
  EXPECT_EQ(tight.dram_read - tight.frame_read, simulate_l2(s, p, hw, 1).dram_read);  // a CTA at a time
  hw.l2_ways = 16;
  const auto part = simulate_l2_partitioned_reads(s, p, hw, 1, 64 << 10, frame);
  EXPECT_EQ(part.frame_read, ctas * frame);
  EXPECT_GT(part.dram_read, part.frame_read);
}

// The L2 probe's read reuse (simulate_l2_reuse_probe: a buffer read 3 times in 64 KB chunks, each chunk by CTAs on
// other SMs) through the partitioned L2. Either replacement: no re-read misses while the buffer fits a partition
// with the other's copies, nearly every one at twice the capacity, more as the buffer grows. Just past half the
// H200's L2 SRRIP misses far fewer re-reads than LRU (a line that was hit outlives the copies and lines read
// once), as the card's probe does (calibration h200.l2_replacement).
TEST(PartitionedL2, ReuseProbeMissesGrowWithTheBufferAndSrripKeepsMore) {
  auto hw = load_profile("H200");
  const int64_t mib = 1 << 20, capacity = hw.l2_bytes;
  for (const char* policy : {"lru", "srrip"}) {
    hw.l2_replacement = policy;
    EXPECT_EQ(simulate_l2_reuse_probe(hw, capacity, 8 * mib, 8), 0.0) << policy;
    EXPECT_GE(simulate_l2_reuse_probe(hw, capacity, 2 * capacity, 8), 0.95) << policy;
    double last = 0;
    for (int64_t b : {16, 36, 52, 80}) {
      const double miss = simulate_l2_reuse_probe(hw, capacity, b * mib, 8);
      EXPECT_GE(miss, last - 0.01) << policy << " " << b << " MiB";
      EXPECT_LE(miss, 1.0) << policy << " " << b << " MiB";
      last = miss;
    }
  }
  hw.l2_replacement = "lru";
  const double lru36 = simulate_l2_reuse_probe(hw, capacity, 36 * mib, 8);
  hw.l2_replacement = "srrip";
  EXPECT_LT(simulate_l2_reuse_probe(hw, capacity, 36 * mib, 8), 0.6 * lru36);
}

// DRRIP's duel: a buffer read over and over that is larger than the L2 thrashes SRRIP's sets (every re-read of
// twice the capacity misses), while the bimodal sets keep part of it, so the followers turn bimodal and some
// re-reads hit (about a third at 2x); a buffer that fits misses no more than under SRRIP. (The card's probe misses 93% at 64 MiB:
// its L2 does not duel, calibration h200.l2_replacement.)
TEST(PartitionedL2, DrripKeepsPartOfALoopLargerThanTheCache) {
  auto hw = load_profile("H200");
  const int64_t mib = 1 << 20, capacity = hw.l2_bytes;
  hw.l2_replacement = "srrip";
  const double srrip_fits = simulate_l2_reuse_probe(hw, capacity, 16 * mib, 8);
  EXPECT_GE(simulate_l2_reuse_probe(hw, capacity, 2 * capacity, 8), 0.95);
  hw.l2_replacement = "drrip";
  EXPECT_LE(simulate_l2_reuse_probe(hw, capacity, 16 * mib, 8), srrip_fits + 0.01);
  EXPECT_LT(simulate_l2_reuse_probe(hw, capacity, 2 * capacity, 8), 0.8);
}

// The optimum cache (simulate_l2_optimal_reads): with room for everything it reads the compulsory bytes; it never
// reads more than an LRU (simulate_l2) or the partitioned L2 of the same capacity, and less as the capacity grows.
TEST(OptimalL2, ReadsNoMoreThanAnyReplacementAndTheCompulsoryBytesWhenItFits) {
  const auto p =
      ProblemBuilder().batch(1).heads(8, 2).seqlen(3000).head_dim(64).dtype(DType::BF16).causal().build();
  auto hw = load_profile("H200");
  const auto s = schedule(kernel_model("fwd_fa2"), p, TileConfig{});
  const auto compulsory = execute_counts(s).unique_loaded();
  EXPECT_EQ(simulate_l2_optimal_reads(s, p, hw, 264, hw.l2_bytes), compulsory);
  int64_t before = INT64_MAX;
  for (const int64_t capacity : {int64_t{64} << 10, int64_t{256} << 10, int64_t{1} << 20, int64_t{4} << 20}) {
    hw.l2_effective_bytes = capacity;
    hw.l2_dirty_bytes = 0;
    const int64_t best = simulate_l2_optimal_reads(s, p, hw, 264, capacity).value();
    EXPECT_GE(best, compulsory) << capacity;
    EXPECT_LE(best, simulate_l2(s, p, hw, 264).dram_read) << capacity;
    EXPECT_LE(best, simulate_l2_partitioned_reads(s, p, hw, 264, capacity).dram_read) << capacity;
    EXPECT_LT(best, before) << capacity;
    before = best;
  }
}

// K and V of one kv head at d96 (192-byte rows, not whole lines): their rows lie back to back, so through a cache
// that holds everything every model reads the compulsory bytes (with the query heads' stride each row took a line
// and a half: 1.07x on SDPA's b8 h8/1 n2176 d96 forward, which the H200 read at 1.00x).
TEST(OptimalL2, GqaRowsThatAreNotWholeLinesReadTheCompulsoryBytesWhenTheyFit) {
  const auto p =
      ProblemBuilder().batch(2).heads(8, 1).seqlen(2176).head_dim(96).dtype(DType::BF16).causal().build();
  const auto hw = load_profile("H200");
  const auto s = schedule(kernel_model("fwd_fa2"), p, TileConfig{});
  const auto compulsory = execute_counts(s).unique_loaded();
  EXPECT_EQ(simulate_l2_optimal_reads(s, p, hw, 264, hw.l2_bytes), compulsory);
  EXPECT_EQ(simulate_l2_partitioned_reads(s, p, hw, 264, hw.l2_bytes).dram_read, compulsory);
  EXPECT_EQ(simulate_l2(s, p, hw, 264).dram_read, compulsory);
}

// A loop: one CTA at a time, each of a head's 8 query blocks reading all of K and V (256 KiB) in the same order,
// through a cache of half of them. Each pass reads 256 KiB of distinct lines and at most the cache's 128 KiB can
// be there when it starts, so no cache misses fewer than 128 KiB a pass after the first; keeping one half for good
// misses exactly that (an LRU misses every line: each is the least recently used when it comes back).
TEST(OptimalL2, ALoopMissesWhatDoesNotFitEachPass) {
  const auto p = ProblemBuilder().batch(1).heads(1).seqlen(1024).head_dim(64).dtype(DType::BF16).build();
  auto hw = load_profile("H200");
  TileConfig c;
  c.block_q = 128;
  c.block_k = 64;
  const auto s = schedule(kernel_model("fwd_fa2"), p, c);
  ASSERT_EQ(s.ctas.size(), 8u);
  const int64_t q = 1024 * 64 * 2, kv = 2 * q, capacity = 128 << 10;
  ASSERT_EQ(execute_counts(s).unique_loaded(), q + kv);
  EXPECT_EQ(simulate_l2_optimal_reads(s, p, hw, 1, capacity), q + kv + 7 * (kv - capacity));
  hw.l2_effective_bytes = capacity;
  hw.l2_dirty_bytes = 0;
  EXPECT_EQ(simulate_l2(s, p, hw, 1).dram_read, q + 8 * kv);
}

// The optimum keeps the walk's whole read order: a walk of more reads than it may keep gives nothing (its caller
// keeps the compulsory bytes) rather than a slow, memory-hungry answer; one read fewer than the walk has is too
// few, exactly as many is enough.
TEST(OptimalL2, AWalkLongerThanItsReadBudgetGivesNothing) {
  const auto p = ProblemBuilder().batch(1).heads(1).seqlen(1024).head_dim(64).dtype(DType::BF16).build();
  const auto hw = load_profile("H200");
  TileConfig c;
  c.block_q = 128;
  c.block_k = 64;
  const auto s = schedule(kernel_model("fwd_fa2"), p, c);
  // 8 CTAs: each its Q block (8 chunks of 16 rows) and all of K and V (64 chunks each)
  const int64_t reads = 8 * (8 + 2 * 64);
  EXPECT_FALSE(simulate_l2_optimal_reads(s, p, hw, 1, 128 << 10, reads - 1).has_value());
  EXPECT_EQ(simulate_l2_optimal_reads(s, p, hw, 1, 128 << 10, reads),
            simulate_l2_optimal_reads(s, p, hw, 1, 128 << 10));
}
