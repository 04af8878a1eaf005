// Block-sparse masks in the reference: every algorithm, forward and backward, equals the dense problem whose
// element mask is the block mask written out (and the independent oracle, which reads the block mask element
// by element); the tiled loops skip exactly the pairs of their tiles that the mask hides, count them, and
// report no tile moves for them; skipping changes no bit of the streaming algorithms' results.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <set>
#include <tuple>

#include "block_sparse_cases.h"
#include "flashsim/ref/attention.h"
#include "flashsim/ref/traffic.h"
#include "oracle.h"
#include "test_util.h"

namespace flashsim::test {
namespace {

using namespace flashsim::ref;

constexpr double kNegInf = -std::numeric_limits<double>::infinity();

class BlockSparse : public ::testing::TestWithParam<Case> {};

TEST_P(BlockSparse, ForwardEqualsTheDenseProblemAndTheOracle) {
  const Case& c = GetParam();
  const AttentionInputs in = make_random_inputs(c.problem, 31);
  const auto [dp, din] = expand_block_mask(c.problem, in);
  const ForwardResult dense = forward(dp, din, Algorithm::Naive, c.tile);
  // The oracle with the block mask and with the expanded element mask: the same decisions, the same bits.
  const OracleOutput sparse_oracle = oracle_forward(c.problem, in), dense_oracle = oracle_forward(dp, din);
  EXPECT_EQ(sparse_oracle.o, dense_oracle.o);
  EXPECT_EQ(sparse_oracle.lse, dense_oracle.lse);
  EXPECT_LE(rel_error(dense.o, sparse_oracle.o), 1e-12);
  EXPECT_LE(rel_error(dense.lse, sparse_oracle.lse), 1e-12);
  for (auto algo : all_algorithms()) {
    const ForwardResult r = forward(c.problem, in, algo, c.tile);
    EXPECT_LE(rel_error(r.o, dense.o), 1e-12) << algorithm_name(algo);
    EXPECT_LE(rel_error(r.lse, dense.lse), 1e-12) << algorithm_name(algo);
  }
  for (const int splits : {1, 3, 64}) {
    const SplitKvResult r = forward_split_kv(c.problem, in, splits, c.tile);
    EXPECT_LE(rel_error(r.combined.o, dense.o), 1e-12) << splits << " splits";
    EXPECT_LE(rel_error(r.combined.lse, dense.lse), 1e-12) << splits << " splits";
  }
}

TEST_P(BlockSparse, BackwardEqualsTheDenseProblem) {
  const Case& c = GetParam();
  const AttentionInputs in = make_random_inputs(c.problem, 32);
  const auto [dp, din] = expand_block_mask(c.problem, in);
  const ForwardResult dense_fwd = forward(dp, din, Algorithm::Naive, c.tile);
  const Gradients dense = backward(dp, din, dense_fwd, Algorithm::Naive, c.tile);
  const ForwardResult fwd = forward(c.problem, in, Algorithm::Fa2, c.tile);
  for (auto algo : {Algorithm::Naive, Algorithm::Fa2}) {
    const Gradients g = backward(c.problem, in, fwd, algo, c.tile);
    EXPECT_LE(rel_error(g.dq, dense.dq), 1e-12) << algorithm_name(algo);
    EXPECT_LE(rel_error(g.dk, dense.dk), 1e-12) << algorithm_name(algo);
    EXPECT_LE(rel_error(g.dv, dense.dv), 1e-12) << algorithm_name(algo);
    EXPECT_EQ(g.dbias.size(), static_cast<size_t>(c.problem.bias_elems()));
    EXPECT_LE(rel_error(g.dbias, dense.dbias), 1e-12) << algorithm_name(algo);
  }
}

// tiles_skipped / tiles_computed equal the pairs counted here from the mask, element by element; the dense
// problem (no block mask) skips none and visits the same pairs; naive counts nothing.
TEST_P(BlockSparse, TileCountsMatchTheMask) {
  const Case& c = GetParam();
  const AttentionInputs in = make_random_inputs(c.problem, 33);
  const auto [dp, din] = expand_block_mask(c.problem, in);
  const PairCount fwd_want = expected_pairs(c.problem, in, c.tile.block_q, c.tile.block_k);
  const PairCount bwd_want = expected_pairs(c.problem, in, c.tile.bwd_block_q, c.tile.bwd_block_k);
  for (auto algo : all_algorithms()) {
    const ForwardResult r = forward(c.problem, in, algo, c.tile);
    const ForwardResult d = forward(dp, din, algo, c.tile);
    const bool tiled = algo != Algorithm::Naive;
    EXPECT_EQ(r.tiles_skipped, tiled ? fwd_want.skipped : 0) << algorithm_name(algo);
    EXPECT_EQ(r.tiles_computed, tiled ? fwd_want.computed : 0) << algorithm_name(algo);
    EXPECT_EQ(d.tiles_skipped, 0) << algorithm_name(algo);
    EXPECT_EQ(d.tiles_computed, tiled ? fwd_want.total() : 0) << algorithm_name(algo);
  }
  const SplitKvResult s = forward_split_kv(c.problem, in, 3, c.tile);
  EXPECT_EQ(s.combined.tiles_skipped, fwd_want.skipped);
  EXPECT_EQ(s.combined.tiles_computed, fwd_want.computed);
  const ForwardResult fwd = forward(c.problem, in, Algorithm::Fa2, c.tile);
  const Gradients g = backward(c.problem, in, fwd, Algorithm::Fa2, c.tile);
  EXPECT_EQ(g.tiles_skipped, bwd_want.skipped);
  EXPECT_EQ(g.tiles_computed, bwd_want.computed);
  const Gradients gn = backward(c.problem, in, fwd, Algorithm::Naive, c.tile);
  EXPECT_EQ(gn.tiles_skipped + gn.tiles_computed, 0);
  const Gradients gd = backward(dp, din, fwd, Algorithm::Fa2, c.tile);
  EXPECT_EQ(gd.tiles_skipped, 0);
  EXPECT_EQ(gd.tiles_computed, bwd_want.total());
}

INSTANTIATE_TEST_SUITE_P(Grid, BlockSparse, ::testing::ValuesIn(block_sparse_grid()),
                         [](const auto& pinfo) { return pinfo.param.name; });

// local-sink (local 2, sink 1), causal, 8 x 8 mask tiles of 16 equal to the algorithm's tiles: query block q
// keeps key blocks {0, q - 1, q} of the q + 1 the window leaves, so 1 + 2 + 6 * 3 = 21 of 36 pairs are computed
// and 15 skipped per (batch, head).
TEST(BlockSparseCounts, LocalSinkSkipsTheTilesItHides) {
  const AttentionProblem p = with_block_mask(base(128, 128, 16).causal().build(), BroadcastShape::OneHQK, 16,
                                             16, "local-sink:local=2,sink=1");
  const AttentionInputs in = make_random_inputs(p, 34);
  const TileConfig t = tiles(16, 16);
  const int64_t heads = p.batch * p.heads_q;  // 4
  for (auto algo : {Algorithm::Fa2, Algorithm::Fa1, Algorithm::TwoPass, Algorithm::ThreePass}) {
    const ForwardResult r = forward(p, in, algo, t);
    EXPECT_EQ(r.tiles_skipped, 15 * heads) << algorithm_name(algo);
    EXPECT_EQ(r.tiles_computed, 21 * heads) << algorithm_name(algo);
  }
  const ForwardResult f = forward(p, in, Algorithm::Fa2, t);
  const Gradients g = backward(p, in, f, Algorithm::Fa2, t);
  EXPECT_EQ(g.tiles_skipped, 15 * heads);
  EXPECT_EQ(g.tiles_computed, 21 * heads);
  // Without the block mask: nothing skipped, the 36 window pairs computed.
  AttentionProblem dense = p;
  dense.block_mask = BroadcastShape::None;
  AttentionInputs din = in;
  din.block_mask.clear();
  const ForwardResult d = forward(dense, din, Algorithm::Fa2, t);
  EXPECT_EQ(d.tiles_skipped, 0);
  EXPECT_EQ(d.tiles_computed, 36 * heads);
  const Gradients gd = backward(dense, din, d, Algorithm::Fa2, t);
  EXPECT_EQ(gd.tiles_skipped, 0);
  EXPECT_EQ(gd.tiles_computed, 36 * heads);
}

// Records the loads of each kernel with the CTA that made them.
class LoadRecorder : public TrafficObserver {
 public:
  struct Load {
    KernelStep step;
    int64_t cta_b, cta_h, cta_block;
    TileAccess tile;
  };
  std::vector<Load> loads;

  void kernel_begin(const KernelStep& step) override { step_ = step; }
  void kernel_end() override {}
  void cta_begin(int64_t b, int64_t h, int64_t block) override {
    b_ = b;
    h_ = h;
    block_ = block;
  }
  void cta_end() override {}
  void access(const TileAccess& t) override {
    if (t.kind == AccessKind::Load) loads.push_back({step_, b_, h_, block_, t});
  }
  void release(TensorId) override {}

  int64_t count(TensorId id, int index = 0) const {
    int64_t n = 0;
    for (const Load& l : loads) n += l.tile.tensor == id && l.step.index == index;
    return n;
  }

 private:
  KernelStep step_{Algorithm::Naive, Pass::Forward, 0};
  int64_t b_ = 0, h_ = 0, block_ = 0;
};

// A skipped tile moves nothing: K and V are loaded only for the computed pairs (each load's pair checked
// against the mask), fa1 loads a key block only when one of its pairs is computed, and the fa2 backward's CTAs
// with no pair to compute (all skipped, or none in the window) load no K or V.
TEST(BlockSparseTraffic, SkippedTilesLoadNothing) {
  const AttentionProblem p = with_block_mask(base(60, 100, 16).heads(4, 2).window(20, 0).build(),
                                             BroadcastShape::BHQK, 16, 16, "s2:local=1,stride=3");
  const AttentionInputs in = make_random_inputs(p, 35);
  const TileConfig t = tiles(12, 20);  // misaligned with the mask's 16 x 16
  std::set<std::tuple<int64_t, int64_t, int64_t, int64_t>> fwd_active, bwd_active;
  std::map<std::tuple<int64_t, int64_t, int64_t>, std::pair<int64_t, int64_t>> fa1_kblocks, bwd_kblocks;
  for_each_window_pair(p, in, t.block_q, t.block_k,
                       [&](int64_t b, int64_t h, int64_t qi, int64_t kj, bool a) {
                         if (a) fwd_active.insert({b, h, qi, kj});
                         auto& [visited, active] = fa1_kblocks[{b, h, kj}];
                         ++visited;
                         active += a;
                       });
  for_each_window_pair(p, in, t.bwd_block_q, t.bwd_block_k,
                       [&](int64_t b, int64_t h, int64_t qi, int64_t kj, bool a) {
                         if (a) bwd_active.insert({b, h, qi, kj});
                         auto& [visited, active] = bwd_kblocks[{b, h, kj}];
                         ++visited;
                         active += a;
                       });
  const int64_t computed = static_cast<int64_t>(fwd_active.size());
  ASSERT_GT(expected_pairs(p, in, t.block_q, t.block_k).skipped, 0);

  // fa2 forward: CTA (b, h, query block); one K and one V load per computed pair.
  for (auto [algo, k_passes] :
       {std::pair{Algorithm::Fa2, 1}, std::pair{Algorithm::TwoPass, 2}, std::pair{Algorithm::ThreePass, 3}}) {
    LoadRecorder rec;
    RunOptions opt;
    opt.observer = &rec;
    forward(p, in, algo, t, opt);
    EXPECT_EQ(rec.count(TensorId::K), k_passes * computed) << algorithm_name(algo);
    EXPECT_EQ(rec.count(TensorId::V), computed) << algorithm_name(algo);
    for (const auto& l : rec.loads)
      if (l.tile.tensor == TensorId::K || l.tile.tensor == TensorId::V) {
        EXPECT_TRUE(fwd_active.count({l.cta_b, l.cta_h, l.cta_block, l.tile.row0 / t.block_k}))
            << algorithm_name(algo) << " loaded a skipped tile";
      }
  }
  // fa1: CTA (b, h); a key block is loaded when one of its pairs is computed, a Q block per computed pair.
  {
    LoadRecorder rec;
    RunOptions opt;
    opt.observer = &rec;
    forward(p, in, Algorithm::Fa1, t, opt);
    int64_t kblocks = 0;
    for (const auto& [key, va] : fa1_kblocks) kblocks += va.second > 0;
    EXPECT_EQ(rec.count(TensorId::K), kblocks);
    EXPECT_EQ(rec.count(TensorId::V), kblocks);
    EXPECT_EQ(rec.count(TensorId::Q), computed);
    int64_t kblock = -1;
    for (const auto& l : rec.loads) {
      if (l.tile.tensor == TensorId::K) kblock = l.tile.row0 / t.block_k;
      if (l.tile.tensor == TensorId::Q) {
        EXPECT_TRUE(fwd_active.count({l.cta_b, l.cta_h, l.tile.row0 / t.block_q, kblock}))
            << "fa1 computed a skipped tile";
      }
    }
  }
  // fa2 backward, main kernel: CTA (b, h, key block); Q, dO, lse and D per computed pair; K and V when the CTA
  // computes some pair (not when the window leaves it none, nor when the block mask skips all it leaves).
  {
    const ForwardResult f = forward(p, in, Algorithm::Fa2, t);
    LoadRecorder rec;
    RunOptions opt;
    opt.observer = &rec;
    backward(p, in, f, Algorithm::Fa2, t, opt);
    int64_t ctas = 0, computing = 0, all_skipped = 0;
    for (int64_t b = 0; b < p.batch; ++b)
      ctas += p.heads_q * ((p.len_k(b) + t.bwd_block_k - 1) / t.bwd_block_k);
    for (const auto& [key, va] : bwd_kblocks) {
      computing += va.second > 0;
      all_skipped += va.second == 0;
    }
    ASSERT_GT(all_skipped, 0) << "the case should have CTAs whose pairs are all skipped";
    ASSERT_GT(ctas, static_cast<int64_t>(bwd_kblocks.size())) << "and CTAs the window leaves no pair";
    EXPECT_EQ(rec.count(TensorId::K, 1), computing);
    EXPECT_EQ(rec.count(TensorId::V, 1), computing);
    const auto bwd_computed = static_cast<int64_t>(bwd_active.size());
    for (auto id : {TensorId::Q, TensorId::dO, TensorId::Lse, TensorId::Delta})
      EXPECT_EQ(rec.count(id, 1), bwd_computed) << tensor_name(id);
    for (const auto& l : rec.loads)
      if (l.step.index == 1 && l.tile.tensor == TensorId::Q) {
        EXPECT_TRUE(bwd_active.count({l.cta_b, l.cta_h, l.tile.row0 / t.bwd_block_q, l.cta_block}))
            << "the backward loaded a skipped tile";
      }
  }
}

bool all_zero(const std::vector<double>& x, int64_t begin = 0, int64_t end = -1) {
  for (int64_t n = begin; n < (end < 0 ? static_cast<int64_t>(x.size()) : end); ++n)
    if (x[n] != 0.0) return false;
  return true;
}

// Rows whose every key the block mask hides give o = 0, lse = -inf and zero gradients (their dq rows, and no
// contribution to dk, dv, dbias), in every algorithm and precision; a mask that hides everything gives zero
// outputs and gradients and computes no tile.
TEST(BlockSparseRows, RowsThatSeeNothing) {
  AttentionProblem p = with_block_mask(base(48, 40, 16).bias(BroadcastShape::OneHQK).build(),
                                       BroadcastShape::OneHQK, 16, 8, "random:keep=1");
  p.dtype = DType::BF16;
  AttentionInputs in = make_random_inputs(p, 36);
  // Head 0: query block 1 (rows 16-31) sees nothing; head 1: only key block 2 for every row.
  const int64_t kb = 5;
  for (int64_t j = 0; j < kb; ++j) in.block_mask[(0 * 3 + 1) * kb + j] = 0;
  for (int64_t r = 0; r < 3; ++r)
    for (int64_t j = 0; j < kb; ++j) in.block_mask[(1 * 3 + r) * kb + j] = j == 2;
  const TileConfig t = tiles(8, 16);
  for (auto prec : {Precision::Exact, Precision::Emulated}) {
    RunOptions opt;
    opt.precision = prec;
    for (auto algo : all_algorithms()) {
      const ForwardResult r = forward(p, in, algo, t, opt);
      for (int64_t b = 0; b < p.batch; ++b)
        for (int64_t i = 0; i < p.seqlen_q; ++i) {
          const bool hidden = i >= 16 && i < 32;
          const double lse0 = r.lse[p.lse_index(b, 0, i)], lse1 = r.lse[p.lse_index(b, 1, i)];
          EXPECT_EQ(hidden, lse0 == kNegInf) << algorithm_name(algo) << " row " << i;
          EXPECT_TRUE(std::isfinite(lse1)) << algorithm_name(algo);
          const int64_t o0 = ((b * p.seqlen_q + i) * p.heads_q) * p.head_dim_v;
          if (hidden) {
            EXPECT_TRUE(all_zero(r.o, o0, o0 + p.head_dim_v)) << algorithm_name(algo);
          }
        }
      for (auto balgo : {Algorithm::Naive, Algorithm::Fa2}) {
        const Gradients g = backward(p, in, r, balgo, t, opt);
        for (int64_t b = 0; b < p.batch; ++b)
          for (int64_t i = 16; i < 32; ++i) {
            const int64_t q0 = ((b * p.seqlen_q + i) * p.heads_q) * p.head_dim;
            EXPECT_TRUE(all_zero(g.dq, q0, q0 + p.head_dim)) << algorithm_name(balgo);
          }
        // dbias [1, 2, 48, 40]: head 0's hidden rows, and head 1 outside key block 2 (keys 16-23), are 0.
        for (int64_t i = 0; i < p.seqlen_q; ++i)
          for (int64_t j = 0; j < p.seqlen_k; ++j) {
            if (i >= 16 && i < 32) {
              EXPECT_EQ(g.dbias[i * p.seqlen_k + j], 0.0);
            }
            if (j < 16 || j >= 24) {
              EXPECT_EQ(g.dbias[(p.seqlen_q + i) * p.seqlen_k + j], 0.0);
            }
          }
        // dk, dv of kv head 1 (q head 1) outside keys 16-23 are 0.
        for (int64_t b = 0; b < p.batch; ++b)
          for (int64_t j = 0; j < p.seqlen_k; ++j)
            if (j < 16 || j >= 24) {
              const int64_t k0 = ((b * p.seqlen_k + j) * p.heads_kv + 1) * p.head_dim;
              EXPECT_TRUE(all_zero(g.dk, k0, k0 + p.head_dim)) << algorithm_name(balgo) << " key " << j;
              EXPECT_TRUE(all_zero(g.dv, k0, k0 + p.head_dim)) << algorithm_name(balgo) << " key " << j;
            }
      }
    }
  }
  // fa2's tile moves: 6 query blocks of 8 rows a (batch, head), 3 key blocks of 16. Head 0's query blocks 2
  // and 3 compute nothing: no Q, K or V load; its other 4 blocks load all 3 key blocks; head 1's 6 load only
  // key block 1 (keys 16-31, holding mask tile 2).
  {
    LoadRecorder rec;
    RunOptions opt;
    opt.observer = &rec;
    forward(p, in, Algorithm::Fa2, t, opt);
    EXPECT_EQ(rec.count(TensorId::Q), p.batch * (4 + 6));
    EXPECT_EQ(rec.count(TensorId::K), p.batch * (4 * 3 + 6 * 1));
    for (const auto& l : rec.loads)
      EXPECT_FALSE(l.cta_h == 0 && (l.cta_block == 2 || l.cta_block == 3)) << tensor_name(l.tile.tensor);
  }
  // Everything hidden: nothing computed, nothing loaded but the backward's dot(dO, O).
  std::fill(in.block_mask.begin(), in.block_mask.end(), uint8_t{0});
  {
    LoadRecorder fwd_rec, bwd_rec;
    RunOptions fopt, bopt;
    fopt.observer = &fwd_rec;
    bopt.observer = &bwd_rec;
    const ForwardResult r = forward(p, in, Algorithm::Fa2, t, fopt);
    EXPECT_TRUE(fwd_rec.loads.empty());
    backward(p, in, r, Algorithm::Fa2, t, bopt);
    for (const auto& l : bwd_rec.loads) EXPECT_NE(l.step.index, 1) << tensor_name(l.tile.tensor);
  }
  for (auto algo : all_algorithms()) {
    const ForwardResult r = forward(p, in, algo, t);
    EXPECT_TRUE(all_zero(r.o)) << algorithm_name(algo);
    for (double x : r.lse) EXPECT_EQ(x, kNegInf) << algorithm_name(algo);
    EXPECT_EQ(r.tiles_computed, 0) << algorithm_name(algo);
    for (auto balgo : {Algorithm::Naive, Algorithm::Fa2}) {
      const Gradients g = backward(p, in, r, balgo, t);
      EXPECT_TRUE(all_zero(g.dq) && all_zero(g.dk) && all_zero(g.dv) && all_zero(g.dbias))
          << algorithm_name(balgo);
    }
  }
  const SplitKvResult s = forward_split_kv(p, in, 2, t);
  EXPECT_TRUE(all_zero(s.combined.o));
  for (double x : s.combined.lse) EXPECT_EQ(x, kNegInf);
}

// Skipping a tile whose scores are all -inf leaves the streaming algorithms' m, l and O as computing it would
// (alpha = 1, P = 0): equal, element for element, to the same algorithm on the dense problem, in the emulated
// bf16 pipeline too; so are the fa2 backward's gradients (P = 0 and dS = 0 there).
TEST(BlockSparseEmulated, SkippingChangesNoBit) {
  AttentionProblem p =
      with_block_mask(base(100, 90, 32).heads(4, 2).causal().bias(BroadcastShape::BOneQK).build(),
                      BroadcastShape::BHQK, 16, 16, "s2:local=1,stride=3");
  p.dtype = DType::BF16;
  const AttentionInputs in = make_random_inputs(p, 37);
  const auto [dp, din] = expand_block_mask(p, in);
  const TileConfig t = tiles(16, 32);
  RunOptions emu;
  emu.precision = Precision::Emulated;
  for (auto algo : {Algorithm::Fa2, Algorithm::TwoPass, Algorithm::ThreePass}) {
    const ForwardResult s = forward(p, in, algo, t, emu), d = forward(dp, din, algo, t, emu);
    EXPECT_GT(s.tiles_skipped, 0);
    EXPECT_EQ(s.o, d.o) << algorithm_name(algo);
    EXPECT_EQ(s.lse, d.lse) << algorithm_name(algo);
  }
  const SplitKvResult s = forward_split_kv(p, in, 3, t, emu), d = forward_split_kv(dp, din, 3, t, emu);
  EXPECT_EQ(s.combined.o, d.combined.o);
  EXPECT_EQ(s.combined.lse, d.combined.lse);
  const ForwardResult f = forward(p, in, Algorithm::Fa2, t, emu);
  const Gradients gs = backward(p, in, f, Algorithm::Fa2, t, emu),
                  gd = backward(dp, din, f, Algorithm::Fa2, t, emu);
  EXPECT_EQ(gs.dq, gd.dq);
  EXPECT_EQ(gs.dk, gd.dk);
  EXPECT_EQ(gs.dv, gd.dv);
  EXPECT_EQ(gs.dbias, gd.dbias);
  // fa1 rescales O by l_old / l_new per pair, so there skipping is equal to rounding only.
  const ForwardResult s1 = forward(p, in, Algorithm::Fa1, t, emu),
                      d1 = forward(dp, din, Algorithm::Fa1, t, emu);
  EXPECT_LE(rel_error(s1.o, d1.o), 1e-2);
}

bool same_bytes(const std::vector<double>& a, const std::vector<double>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(double)) == 0;
}

TEST(BlockSparseThreads, ResultsAndCountsAreTheSameFor1_2And16Threads) {
  const AttentionProblem p =
      with_block_mask(base(150, 130, 32).heads(4, 2).causal().bias(BroadcastShape::OneHQK).build(),
                      BroadcastShape::OneHQK, 16, 16, "s2:local=2,stride=3");
  const AttentionInputs in = make_random_inputs(p, 38);
  const TileConfig t = tiles(32, 16);
  for (auto prec : {Precision::Exact, Precision::Emulated}) {
    RunOptions one, two, sixteen;
    one.precision = two.precision = sixteen.precision = prec;
    one.threads = 1;
    two.threads = 2;
    sixteen.threads = 16;
    for (auto algo : all_algorithms()) {
      const ForwardResult a = forward(p, in, algo, t, one), b = forward(p, in, algo, t, two),
                          c = forward(p, in, algo, t, sixteen);
      EXPECT_TRUE(same_bytes(a.o, b.o) && same_bytes(a.o, c.o)) << algorithm_name(algo);
      EXPECT_TRUE(same_bytes(a.lse, b.lse) && same_bytes(a.lse, c.lse)) << algorithm_name(algo);
      EXPECT_TRUE(a.tiles_skipped == b.tiles_skipped && a.tiles_skipped == c.tiles_skipped);
      EXPECT_TRUE(a.tiles_computed == b.tiles_computed && a.tiles_computed == c.tiles_computed);
    }
    const ForwardResult f = forward(p, in, Algorithm::Fa2, t, one);
    const Gradients a = backward(p, in, f, Algorithm::Fa2, t, one),
                    b = backward(p, in, f, Algorithm::Fa2, t, two),
                    c = backward(p, in, f, Algorithm::Fa2, t, sixteen);
    for (auto [x, y, z] : {std::tuple{&a.dq, &b.dq, &c.dq},
                           {&a.dk, &b.dk, &c.dk},
                           {&a.dv, &b.dv, &c.dv},
                           {&a.dbias, &b.dbias, &c.dbias}})
      EXPECT_TRUE(same_bytes(*x, *y) && same_bytes(*x, *z));
    EXPECT_TRUE(a.tiles_skipped == b.tiles_skipped && a.tiles_skipped == c.tiles_skipped);
    EXPECT_GT(a.tiles_skipped, 0);
  }
}

TEST(BlockSparseLoops, PlainLoopsMatchBlas) {
  const AttentionProblem p = with_block_mask(base(97, 97, 24).causal().softcap(2.0).build(),
                                             BroadcastShape::BHQK, 16, 16, "local-sink:local=2,sink=1");
  const AttentionInputs in = make_random_inputs(p, 39);
  const TileConfig t = tiles(12, 20);
  RunOptions loops;
  loops.use_blas = false;
  for (auto algo : all_algorithms()) {
    const ForwardResult a = forward(p, in, algo, t), b = forward(p, in, algo, t, loops);
    EXPECT_LE(rel_error(b.o, a.o), 1e-12) << algorithm_name(algo);
    EXPECT_LE(rel_error(b.lse, a.lse), 1e-12) << algorithm_name(algo);
  }
  const ForwardResult f = forward(p, in, Algorithm::Fa2, t);
  const Gradients ga = backward(p, in, f, Algorithm::Fa2, t),
                  gb = backward(p, in, f, Algorithm::Fa2, t, loops);
  EXPECT_LE(rel_error(gb.dq, ga.dq), 1e-12);
  EXPECT_LE(rel_error(gb.dk, ga.dk), 1e-12);
  EXPECT_LE(rel_error(gb.dv, ga.dv), 1e-12);
}

}  // namespace
}  // namespace flashsim::test
