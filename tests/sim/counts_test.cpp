// Analytic counts equal the executed schedule exactly, over a grid of shapes and configs.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <tuple>

#include "flashsim/error.h"
#include "flashsim/sim/kernel_model.h"
#include "flashsim/sim/model.h"
#include "flashsim/sim/sweep.h"
#include "problem_builder.h"
#include "run_cli.h"
#include "traffic_expect.h"

using namespace flashsim;
using namespace flashsim::sim;
using flashsim::test::expect_same_counts;
using flashsim::test::ProblemBuilder;

namespace {}  // namespace

TEST(Counts, AnalyticEqualsExecutedGrid) {
  struct Win {
    int64_t l, r;
  };
  int cases = 0;
  for (int64_t sq : {1, 100, 256, 300})
    for (int64_t sk : {64, 257, 300})
      for (Win w : {Win{-1, -1}, Win{-1, 0}, Win{32, 0}, Win{17, 40}})
        for (auto [hq, hk] : {std::pair<int64_t, int64_t>{4, 4}, {4, 1}})
          for (auto [bq, bk] : {std::pair<int64_t, int64_t>{128, 64}, {64, 128}, {32, 32}}) {
            const AttentionProblem p = ProblemBuilder()
                                           .batch(2)
                                           .heads(hq, hk)
                                           .seqlen(sq, sk)
                                           .head_dim(64)
                                           .window(w.l, w.r)
                                           .dtype(DType::BF16)
                                           .build();
            TileConfig c;
            c.block_q = bq;
            c.block_k = bk;
            c.bwd_block_q = bk;
            c.bwd_block_k = bq;
            for (const KernelModel* k :
                 {&kernel_model("fwd_fa2"), &kernel_model("bwd_dot_do_o"), &kernel_model("bwd_dot_do_o_lse"),
                  &kernel_model("bwd_dq_dk_dv"), &kernel_model("bwd_dq_dk_dv_group"),
                  &kernel_model("bwd_convert_dq"), &kernel_model("fwd_three_pass"),
                  &kernel_model("fwd_two_pass"), &kernel_model("fwd_fa1"), &kernel_model("naive_scores"),
                  &kernel_model("naive_softmax"), &kernel_model("naive_pv"),
                  &kernel_model("naive_bwd_scores"), &kernel_model("naive_bwd_softmax"),
                  &kernel_model("naive_bwd_dp"), &kernel_model("naive_bwd_ds"), &kernel_model("naive_bwd_dv"),
                  &kernel_model("naive_bwd_dq"), &kernel_model("naive_bwd_dk")}) {
              expect_same_counts(analytic_counts(*k, p, c), execute_counts(schedule(*k, p, c)),
                                 p.describe() + " " + c.describe() + " " + k->name);
              ++cases;
            }
            TileConfig partials = c;  // deterministic dQ: per-key-block partials and a reduction kernel
            partials.dq_strategy = DqStrategy::Partials;
            auto bwd = kernels_of(Algorithm::Fa2, Pass::Backward);
            bwd.push_back(&kernel_model("bwd_dq_dk_dv_group"));
            bwd.push_back(&kernel_model("bwd_dot_do_o_lse"));
            bwd.push_back(&kernel_model("bwd_convert_dq_rows"));
            for (const KernelModel* k : bwd) {
              expect_same_counts(analytic_counts(*k, p, partials), execute_counts(schedule(*k, p, partials)),
                                 p.describe() + " " + partials.describe() + " " + k->name);
              ++cases;
            }
          }
  EXPECT_GT(cases, 500);
}

TEST(Counts, Varlen) {
  const AttentionProblem p =
      ProblemBuilder().heads(2).varlen({100, 7, 300}, {50, 400, 300}).causal().dtype(DType::F16).build();
  TileConfig c;
  for (const KernelModel* k :
       {&kernel_model("fwd_fa2"), &kernel_model("bwd_dot_do_o"), &kernel_model("bwd_dot_do_o_lse"),
        &kernel_model("bwd_dq_dk_dv"), &kernel_model("bwd_dq_dk_dv_group"), &kernel_model("bwd_convert_dq"),
        &kernel_model("fwd_fa1"), &kernel_model("naive_scores"), &kernel_model("naive_pv"),
        &kernel_model("naive_bwd_ds"), &kernel_model("naive_bwd_dk")})
    expect_same_counts(analytic_counts(*k, p, c), execute_counts(schedule(*k, p, c)), "varlen");
}

// flashsim's dot kernel reads FA2's O and dO plus the forward's lse (4 bytes a row), once; it writes the same.
TEST(Counts, OwnDotKernelReadsTheLseOnce) {
  const AttentionProblem p =
      ProblemBuilder().batch(2).heads(3).seqlen(300).head_dim(64).dtype(DType::BF16).build();
  const TileConfig c;
  const auto fa2 = analytic_counts(kernel_model("bwd_dot_do_o"), p, c);
  const auto own = analytic_counts(kernel_model("bwd_dot_do_o_lse"), p, c);
  const auto lse = static_cast<size_t>(ref::TensorId::Lse);
  EXPECT_EQ(fa2.tensors[lse].load.bytes, 0);
  EXPECT_EQ(own.tensors[lse].load.bytes, 2 * 3 * 300 * 4);
  for (size_t t = 0; t < own.tensors.size(); ++t) {
    EXPECT_EQ(own.tensors[t].store.bytes, fa2.tensors[t].store.bytes) << t;
    if (t != lse) {
      EXPECT_EQ(own.tensors[t].load.bytes, fa2.tensors[t].load.bytes) << t;
    }
  }
}

TEST(Counts, ForwardIsQPlusKvPerQueryBlock) {
  const AttentionProblem p =
      ProblemBuilder().batch(2).heads(16).seqlen(4096).head_dim(128).dtype(DType::BF16).build();
  TileConfig c;  // 128 x 64
  const auto k = analytic_counts(kernel_model("fwd_fa2"), p, c);
  const int64_t q = 2 * 16 * 4096 * 128 * 2;
  EXPECT_EQ(k.load_bytes(), q + 2 * q * 32);
  EXPECT_EQ(k.store_bytes(), q + 2 * 16 * 4096 * 4);
}

// FP8 inputs: q, k, v take 1 byte an element, o stays 2 (bf16, as FlashAttention-3's FP8 forward stores it): the
// Q, K, V traffic of every forward kernel is half bf16's, O's and lse's the same; the closed form equals the
// executed schedule.
TEST(Counts, Fp8HalvesQkvTrafficNotO) {
  using ref::TensorId;
  for (DType t : {DType::E4M3, DType::E5M2}) {
    const AttentionProblem bf16 = ProblemBuilder()
                                      .batch(2)
                                      .heads(8, 2)
                                      .seqlen(1000, 1500)
                                      .head_dim(128)
                                      .causal()
                                      .dtype(DType::BF16)
                                      .build();
    const AttentionProblem fp8 = ProblemBuilder(bf16).fp8(t, Descale::PerHead).build();
    TileConfig c;
    for (const char* name : {"fwd_fa2", "fwd_fa1", "fwd_two_pass", "fwd_three_pass", "fwd_fa3"}) {
      const KernelModel& k = kernel_model(name);
      const auto a = analytic_counts(k, bf16, c), b = analytic_counts(k, fp8, c);
      for (TensorId id : {TensorId::Q, TensorId::K, TensorId::V}) {
        const auto i = static_cast<size_t>(id);
        EXPECT_GT(a.tensors[i].load.bytes, 0) << name;
        EXPECT_EQ(b.tensors[i].load.bytes * 2, a.tensors[i].load.bytes)
            << name << " " << static_cast<int>(id);
      }
      for (TensorId id : {TensorId::O, TensorId::Lse}) {
        const auto i = static_cast<size_t>(id);
        EXPECT_EQ(b.tensors[i].store.bytes, a.tensors[i].store.bytes) << name;
        EXPECT_EQ(b.tensors[i].load.bytes, a.tensors[i].load.bytes) << name;
      }
      expect_same_counts(b, execute_counts(schedule(k, fp8, c)), std::string("fp8 ") + name);
    }
  }
}

TEST(Counts, CausalSkipsHalf) {
  const AttentionProblem p = ProblemBuilder().seqlen(1024).causal().build();
  TileConfig c;
  c.block_q = c.block_k = 64;
  const auto k = analytic_counts(kernel_model("fwd_fa2"), p, c);
  // 16 query blocks; block m sees m + 1 key blocks.
  EXPECT_EQ(k.tensors[static_cast<size_t>(ref::TensorId::K)].load.bytes, 136LL * 64 * 64 * 4);
}

TEST(Model, SharedMemoryOverflowRejected) {
  const AttentionProblem p = ProblemBuilder().head_dim(256).dtype(DType::BF16).build();
  TileConfig c;
  c.block_q = 256;
  c.block_k = 256;
  c.stages = 2;
  const auto ks = predict(p, c, load_profile("H100-SXM5-80GB"), kernels_of(Algorithm::Fa2, Pass::Forward));
  ASSERT_EQ(ks.size(), 1u);
  EXPECT_FALSE(ks[0].occ.fits);
  EXPECT_NE(ks[0].occ.reason.find("exceeds"), std::string::npos);
}

// The partials strategy trades the atomics for plain stores: no reductions, the same dQ, and the reduction
// kernel reads each partial row the main kernel wrote exactly once.
TEST(Counts, PartialsStoreWhatTheReductionReads) {
  const AttentionProblem p =
      ProblemBuilder().batch(2).heads(4).seqlen(1000).head_dim(128).causal().dtype(DType::BF16).build();
  TileConfig c;
  c.dq_strategy = DqStrategy::Partials;
  const auto main = analytic_counts(kernel_model("bwd_dq_dk_dv"), p, c);
  const auto red = analytic_counts(kernel_model("bwd_convert_dq"), p, c);
  const auto acc = static_cast<size_t>(ref::TensorId::DqAccum);
  EXPECT_EQ(main.reduce_bytes(), 0);
  EXPECT_GT(main.tensors[acc].store.bytes, 0);
  EXPECT_EQ(main.tensors[acc].store.bytes, red.tensors[acc].load.bytes);
  EXPECT_EQ(analytic_counts(kernel_model("bwd_dot_do_o"), p, c).tensors[acc].store.bytes, 0);
}

// A thread holds at most 255 registers: FA2's own tiles fit, 2 warps holding 256 query rows of O and S do
// not.
TEST(Model, AccumulatorRegistersLimitTiles) {
  const AttentionProblem p = ProblemBuilder().head_dim(128).seqlen(4096).dtype(DType::BF16).build();
  const auto hw = load_profile("H100-SXM5-80GB");
  TileConfig fa2;  // Br128 Bc64 4 warps forward, Br64 Bc128 8 warps backward
  for (const auto& k : predict(p, fa2, hw, kernels_of(Algorithm::Fa2, Pass::Forward)))
    EXPECT_TRUE(k.occ.fits) << k.occ.reason;
  for (const auto& k : predict(p, fa2, hw, kernels_of(Algorithm::Fa2, Pass::Backward)))
    EXPECT_TRUE(k.occ.fits) << k.occ.reason;
  TileConfig wide = fa2;
  wide.block_q = 256;
  wide.block_k = 64;
  wide.warps = 2;
  const auto ks = predict(p, wide, hw, kernels_of(Algorithm::Fa2, Pass::Forward));
  EXPECT_FALSE(ks[0].occ.fits);
  EXPECT_NE(ks[0].occ.reason.find("registers per thread"), std::string::npos);
}

// The time model's load imbalance: equal CTAs give ceil(waves) / waves; unequal ones (causal, partial tiles,
// varlen) are list-scheduled, and the closed form's per-CTA work gives the same imbalance as the schedule's.
TEST(Model, ImbalanceAnalyticEqualsExecuted) {
  const auto hw = load_profile("H100-SXM5-80GB");
  const AttentionProblem p =
      ProblemBuilder().batch(2).heads(16).seqlen(4096).head_dim(128).dtype(DType::BF16).build();
  TileConfig c;
  const auto uniform = predict_kernel(analytic_counts(kernel_model("fwd_fa2"), p, c), hw);
  EXPECT_DOUBLE_EQ(uniform.imbalance, std::ceil(uniform.waves) / uniform.waves);
  for (int shape = 0; shape < 3; ++shape) {
    AttentionProblem q = p;
    if (shape == 0) q.window_right = 0;              // causal
    if (shape == 1) q.seqlen_q = q.seqlen_k = 1000;  // partial tiles
    if (shape == 2) {                                // varlen, causal
      q.seqlens_q = q.seqlens_k = {300, 2000};
      q.seqlen_q = q.seqlen_k = 2000;
      q.window_right = 0;
    }
    for (const KernelModel* k : {&kernel_model("fwd_fa2"), &kernel_model("bwd_dq_dk_dv")}) {
      const auto a = predict_kernel(analytic_counts(*k, q, c), hw);
      const auto e = predict_kernel(execute_counts(schedule(*k, q, c)), hw);
      EXPECT_NEAR(a.imbalance, e.imbalance, 1e-9) << q.describe() << " " << k->name;
      EXPECT_NEAR(a.time_s, e.time_s, 1e-9 * e.time_s) << q.describe();
      if (shape == 0) {
        EXPECT_GT(a.imbalance, 1.1) << k->name;  // long CTAs launched last
      }
    }
  }
}

TEST(Counts, GroupBackwardLoadsKvOncePerKvHead) {
  // flashsim's main backward kernel (a CTA per kv head, its group's query heads in turn) moves FA2's bytes for
  // MHA; with GQA it reads K and V and stores dK and dV once per kv head, where FA2's reads them per query head.
  TileConfig c;
  const auto mha =
      ProblemBuilder().batch(2).heads(8, 8).seqlen(300, 300).head_dim(64).dtype(DType::BF16).build();
  const auto gqa =
      ProblemBuilder().batch(2).heads(8, 2).seqlen(300, 300).head_dim(64).dtype(DType::BF16).build();
  const auto& fa2 = kernel_model("bwd_dq_dk_dv");
  const auto& group = kernel_model("bwd_dq_dk_dv_group");
  const auto bytes = [](const KernelCounts& k, ref::TensorId t, bool load) {
    const auto& tt = k.tensors[static_cast<size_t>(t)];
    return load ? tt.load.bytes : tt.store.bytes;
  };
  for (auto t : {ref::TensorId::K, ref::TensorId::V, ref::TensorId::Q, ref::TensorId::dO})
    EXPECT_EQ(bytes(analytic_counts(group, mha, c), t, true), bytes(analytic_counts(fa2, mha, c), t, true));
  const auto g = analytic_counts(group, gqa, c), f = analytic_counts(fa2, gqa, c);
  for (auto t : {ref::TensorId::K, ref::TensorId::V}) EXPECT_EQ(4 * bytes(g, t, true), bytes(f, t, true));
  for (auto t : {ref::TensorId::dK, ref::TensorId::dV}) EXPECT_EQ(4 * bytes(g, t, false), bytes(f, t, false));
  for (auto t : {ref::TensorId::Q, ref::TensorId::dO}) EXPECT_EQ(bytes(g, t, true), bytes(f, t, true));
  EXPECT_EQ(g.launch.grid_z, 2);
  EXPECT_DOUBLE_EQ(g.mma_flops, f.mma_flops);
}

// --- Decode: the paged KV cache, split-KV and its combine (fwd_splitkv, fwd_splitkv_combine) -----------------

namespace {

// A decode problem: queries [batch, seqlen_q], keys from a paged cache of page_size rows, cache_seqlens per
// sequence, seqlen_new appended.
AttentionProblem paged_problem(const std::vector<int64_t>& cache, int64_t page, int64_t hq, int64_t hk,
                               int64_t d, DType dt, int64_t sq = 1, int64_t fresh = 0) {
  int64_t longest = 1;
  for (const int64_t n : cache) longest = std::max(longest, n + fresh);
  AttentionProblem p = ProblemBuilder()
                           .batch(static_cast<int64_t>(cache.size()))
                           .heads(hq, hk)
                           .seqlen(sq, longest)
                           .head_dim(d)
                           .dtype(dt)
                           .build();
  p.page_size = page;
  p.cache_seqlens = cache;
  p.seqlen_new = fresh;
  p.validate();
  return p;
}

const TensorTraffic& tensor_of(const KernelCounts& k, ref::TensorId t) {
  return k.tensors[static_cast<size_t>(t)];
}

// Analytic == executed for every kernel of the split forward, traffic, work, tile counts and the time model's
// inputs (the CTAs' work and bytes in launch order, hence the same time).
void expect_decode_agrees(const AttentionProblem& p, const TileConfig& c, const ProblemData& d,
                          const std::string& what) {
  const auto hw = load_profile("H100-SXM5-80GB");
  for (const KernelModel* k : kernels_for(p, c, Algorithm::Fa2, Pass::Forward)) {
    const auto a = analytic_counts(*k, p, c, &d);
    const auto e = execute_counts(schedule(*k, p, c, &d));
    const std::string w = what + " " + k->name;
    expect_same_counts(a, e, w);
    EXPECT_EQ(a.tiles, e.tiles) << w;
    EXPECT_EQ(a.skipped_tiles, e.skipped_tiles) << w;
    if (k->counts) {  // the decode kernels list every CTA (the dense forward a repeated pattern)
      EXPECT_EQ(a.cta_work, e.cta_work) << w;
      EXPECT_EQ(a.cta_bytes, e.cta_bytes) << w;
    }
    EXPECT_EQ(a.launch.ctas(), e.launch.ctas()) << w;
    // The same CTAs' work and bytes on the SMs, so the same time from the same footprints (the closed form's
    // footprints are whole tensors, the executed count's the rows touched: given the closed form's, the
    // executed counts must time the same).
    auto same_footprints = e;
    for (size_t t = 0; t < e.tensors.size(); ++t) {
      same_footprints.tensors[t].unique_bytes = a.tensors[t].unique_bytes;
      same_footprints.tensors[t].read_bytes = a.tensors[t].read_bytes;
      same_footprints.tensors[t].dirty_bytes = a.tensors[t].dirty_bytes;
    }
    const auto pa = predict_kernel(a, hw), pe = predict_kernel(same_footprints, hw);
    EXPECT_NEAR(pa.imbalance, pe.imbalance, 1e-12) << w;
    EXPECT_NEAR(pa.time_s, pe.time_s, 1e-9 * pe.time_s) << w;
  }
}

}  // namespace

TEST(Decode, KernelsForPickTheSplitKernels) {
  const auto p = paged_problem({100, 200}, 16, 8, 2, 64, DType::BF16);
  TileConfig c = splitkv_tile(p);
  auto ks = kernels_for(p, c, Algorithm::Fa2, Pass::Forward);
  ASSERT_EQ(ks.size(), 1u);
  EXPECT_EQ(ks[0]->name, "fwd_splitkv");
  c.num_splits = 3;
  ks = kernels_for(p, c, Algorithm::Fa2, Pass::Forward);
  ASSERT_EQ(ks.size(), 2u);
  EXPECT_EQ(ks[1]->name, "fwd_splitkv_combine");
  const auto dense = ProblemBuilder().seqlen(300).build();
  EXPECT_EQ(kernels_for(dense, TileConfig{}, Algorithm::Fa2, Pass::Forward)[0]->name, "fwd_fa2");
}

// Page sizes 1, 7, 16, 256 over shuffled tables, ragged cache lengths with 0 and 1 keys, appended keys,
// speculative queries, GQA and MQA, head rows that are not whole sectors.
TEST(Decode, PagedAnalyticEqualsExecuted) {
  int cases = 0;
  for (const int64_t page : {1, 7, 16, 256})
    for (const int64_t fresh : {0, 3})
      for (const int64_t sq : {1, 3})
        for (const auto& [hq, hk, d, dt] :
             {std::tuple<int64_t, int64_t, int64_t, DType>{8, 2, 64, DType::BF16},
              {4, 1, 17, DType::F16},
              {4, 4, 8, DType::BF16}})
          for (const int64_t splits : {1, 3, 16}) {
            const auto p = paged_problem({0, 1, 37, 300, 129}, page, hq, hk, d, dt, sq, fresh);
            TileConfig c = splitkv_tile(p);
            c.block_k = 32;  // several key blocks per sequence even at these lengths
            c.num_splits = splits;
            for (const uint64_t seed : {1u, 7u})
              expect_decode_agrees(p, c, problem_data(p, seed),
                                   fmt::format("{} {} seed {}", p.describe(), c.describe(), seed));
            ++cases;
          }
  EXPECT_EQ(cases, 4 * 2 * 2 * 3 * 3);
}

// Split-KV without a cache: 1 to 16 splits over sequences of a few key blocks (trailing splits hold none), with
// windows, GQA and variable lengths.
TEST(Decode, SplitKvAnalyticEqualsExecuted) {
  struct Win {
    int64_t l, r;
  };
  for (int64_t splits = 1; splits <= 16; ++splits)
    for (Win w : {Win{-1, -1}, Win{-1, 0}, Win{40, 0}})
      for (const bool varlen : {false, true}) {
        ProblemBuilder b = ProblemBuilder().heads(6, 2).head_dim(32).window(w.l, w.r).dtype(DType::BF16);
        if (varlen) {
          b.varlen({1, 70, 5}, {0, 300, 90});
        } else {
          b.batch(2).seqlen(70, 300);
        }
        const AttentionProblem p = b.build();
        TileConfig c;
        c.block_q = 64;
        c.block_k = 64;
        c.num_splits = splits;
        expect_decode_agrees(p, c, ProblemData{}, p.describe() + " " + c.describe());
      }
}

// One sequence, page_size 16, head dim 128 in bf16, two kv heads: a page row holds heads_kv x 256 bytes, a kv
// head's 256 bytes of it start on a sector boundary, so K and V cost 8 sectors a key; the block table is read
// once per key tile for the pages it spans.
TEST(Decode, PagedBytesFromFirstPrinciples) {
  const int64_t keys = 100, hk = 2, d = 128, e = 2, page = 16;
  const auto p = paged_problem({keys}, page, 8, hk, d, DType::BF16);
  const TileConfig c = splitkv_tile(p);  // Bc 128: one key tile of 100 keys
  ASSERT_EQ(c.block_k, 128);
  const auto k = analytic_counts(kernel_model("fwd_splitkv"), p, c);
  const auto& kc = tensor_of(k, tensor::KCache);
  EXPECT_EQ(kc.load.bytes, hk * keys * d * e);           // once per kv head (the 4 query heads packed)
  EXPECT_EQ(kc.load.sectors, hk * keys * (d * e / 32));  // 8 a key
  EXPECT_EQ(tensor_of(k, tensor::VCache).load.bytes, hk * keys * d * e);
  const int64_t pages = (keys + page - 1) / page;  // 7 pages, their 7 int32 entries contiguous in the table
  EXPECT_EQ(tensor_of(k, tensor::BlockTable).load.bytes, hk * pages * 4);
  EXPECT_EQ(tensor_of(k, tensor::BlockTable).load.sectors, hk * 1);  // 28 bytes from the row's start
  EXPECT_EQ(tensor_of(k, ref::TensorId::Q).load.bytes, 8 * d * e);
  EXPECT_EQ(k.launch.ctas(), hk);  // one query block of 4 packed rows per kv head
  EXPECT_EQ(tensor_of(k, tensor::KCache).unique_bytes, keys * hk * d * e);
}

// Head rows smaller than a sector: with one kv head of 8 fp16 (16 bytes) a page of 1 row costs a sector a key,
// where a contiguous (or 16-row page) layout packs two keys a sector; and with 17 bf16 (34 bytes) in pages of 7
// the sectors are those the bytes at the table's addresses touch, counted here byte by byte.
TEST(Decode, PagedSectorsAtTheTableAddresses) {
  {
    const int64_t keys = 10;
    const auto one = paged_problem({keys}, 1, 1, 1, 8, DType::F16);
    const auto k1 = analytic_counts(kernel_model("fwd_splitkv"), one, splitkv_tile(one));
    EXPECT_EQ(tensor_of(k1, tensor::KCache).load.bytes, keys * 16);
    EXPECT_EQ(tensor_of(k1, tensor::KCache).load.sectors, keys);  // a 16-byte page at 16 x page: one sector
    const auto sixteen = paged_problem({keys}, 16, 1, 1, 8, DType::F16);
    const auto k16 = analytic_counts(kernel_model("fwd_splitkv"), sixteen, splitkv_tile(sixteen));
    EXPECT_EQ(tensor_of(k16, tensor::KCache).load.sectors, keys * 16 / 32);  // one page: 160 contiguous bytes
  }
  const int64_t d = 17, e = 2, page = 7;
  const auto p = paged_problem({5, 40, 23}, page, 2, 1, d, DType::BF16, 1, 0);
  TileConfig c = splitkv_tile(p);
  c.block_k = 16;  // tiles cut pages: each tile's page runs are counted on their own
  const auto data = problem_data(p, 3);
  int64_t want = 0;
  for (int64_t b = 0; b < p.batch; ++b)
    for (int64_t k0 = 0; k0 < p.len_k(b); k0 += c.block_k)
      for (int64_t j = k0; j < std::min(p.len_k(b), k0 + c.block_k);) {
        const int64_t pg = data.block_table[static_cast<size_t>(b * p.max_blocks_per_seq() + j / page)];
        std::set<int64_t> sectors;  // the bytes of this page's run of keys within the tile
        int64_t jj = j;
        for (; jj < std::min({p.len_k(b), k0 + c.block_k, (j / page + 1) * page}); ++jj)
          for (int64_t byte = 0; byte < d * e; ++byte)
            sectors.insert(((pg * page + jj % page) * d * e + byte) / 32);
        want += static_cast<int64_t>(sectors.size());
        j = jj;
      }
  const auto k = analytic_counts(kernel_model("fwd_splitkv"), p, c, &data);
  EXPECT_EQ(tensor_of(k, tensor::KCache).load.sectors, want);
  EXPECT_EQ(execute_counts(schedule(kernel_model("fwd_splitkv"), p, c, &data))
                .tensors[size_t(tensor::KCache)]
                .load.sectors,
            want);
  EXPECT_GT(want, (5 + 40 + 23) * d * e / 32);  // more than the contiguous count
}

// The appended keys: read from k_new / v_new and written into the cache by the CTA whose split holds them, then
// read back with the tile.
TEST(Decode, AppendReadsNewKeysAndWritesThemIntoTheCache) {
  const int64_t fresh = 5, hk = 2, d = 64, e = 2;
  const auto p = paged_problem({20, 61}, 16, 4, hk, d, DType::BF16, 1, fresh);
  TileConfig c = splitkv_tile(p);
  c.num_splits = 4;
  const auto k = analytic_counts(kernel_model("fwd_splitkv"), p, c);
  const int64_t appended = 2 * fresh * hk * d * e;  // every new row once: one CTA per kv head holds it
  EXPECT_EQ(tensor_of(k, tensor::KNew).load.bytes, appended);
  EXPECT_EQ(tensor_of(k, tensor::VNew).load.bytes, appended);
  EXPECT_EQ(tensor_of(k, tensor::KCache).store.bytes, appended);
  EXPECT_EQ(tensor_of(k, tensor::KCache).load.bytes, (20 + 61 + 2 * fresh) * hk * d * e);
  EXPECT_EQ(tensor_of(k, tensor::KCache).dirty_bytes, appended);  // written back; the rest only read
}

// MLA (one latent KV head, V its first head_dim_v columns): the split kernel reads each key's latent row once,
// as FlashMLA reads its compressed cache: no V-cache or v_new traffic, the K cache's bytes those of the same
// problem without MLA, each row once (the 16 query heads packed into one tile); appended rows read from k_new
// and written once; V takes no shared memory of its own; the decode floor counts the row once, and a cold L2's
// DRAM reads stay within it and the table and q; closed form == executed.
TEST(Decode, MlaReadsTheLatentCacheOnce) {
  const int64_t d = 96, dv = 64, e = 2;
  for (const int64_t fresh : {0, 2}) {
    AttentionProblem p = paged_problem({100, 1000, 63}, 64, 16, 1, d, DType::BF16, 1, fresh);
    p.head_dim_v = dv;
    p.mla = true;
    p.validate();
    AttentionProblem plain = p;
    plain.mla = false;
    TileConfig c = splitkv_tile(p);
    c.num_splits = 3;
    ASSERT_GE(c.block_q, p.heads_q);  // every query head in one tile: a latent row is read once per split
    const auto data = problem_data(p, 3);
    expect_decode_agrees(p, c, data, p.describe() + " " + c.describe());
    const auto k = analytic_counts(kernel_model("fwd_splitkv"), p, c, &data);
    const auto kp = analytic_counts(kernel_model("fwd_splitkv"), plain, c, &data);
    for (const auto t : {tensor::VCache, tensor::VNew, ref::TensorId::V}) {
      EXPECT_EQ(tensor_of(k, t).load.bytes, 0) << fresh;
      EXPECT_EQ(tensor_of(k, t).store.bytes, 0) << fresh;
    }
    EXPECT_GT(tensor_of(kp, tensor::VCache).load.bytes, 0);
    const int64_t keys = 100 + 1000 + 63 + 3 * fresh;
    EXPECT_EQ(tensor_of(k, tensor::KCache).load.bytes, keys * d * e) << fresh;
    EXPECT_EQ(tensor_of(k, tensor::KCache).load.bytes, tensor_of(kp, tensor::KCache).load.bytes);
    EXPECT_EQ(tensor_of(k, tensor::KNew).load.bytes, 3 * fresh * d * e);
    EXPECT_EQ(tensor_of(k, tensor::KCache).store.bytes, 3 * fresh * d * e);
    EXPECT_EQ(kv_cache_bytes(p), static_cast<double>(keys * d * e));
    EXPECT_EQ(kv_cache_bytes(plain), static_cast<double>(keys * (d + dv) * e));
    const KernelLaunch l = kernel_model("fwd_splitkv").launch(p, c);
    for (const auto& buf : l.smem) EXPECT_NE(buf.name, "V");
    EXPECT_LT(l.smem_bytes(), kernel_model("fwd_splitkv").launch(plain, c).smem_bytes());
    const auto hw = load_profile("H100-SXM5-80GB");
    const auto ks = predict(p, c, hw, kernels_for(p, c, Algorithm::Fa2, Pass::Forward), true, 0, &data);
    EXPECT_GE(static_cast<double>(ks[0].dram_read),
              kv_cache_bytes(p) - static_cast<double>(3 * fresh * d * e))
        << fresh;
    EXPECT_LE(static_cast<double>(ks[0].dram_read), kv_cache_bytes(p) + 64 * 1024)
        << fresh;  // + q, the table
  }
}

// --- Dense MLA: a prefill without a cache through the dense models ---------------------------------------------

namespace {

// DeepSeek's latent head (d 576: 512 latent + 64 rotary columns; dv 512) shared by 16 query heads, 1000 queries
// and keys, bf16; `mla` false: the same shapes with V a tensor of its own.
constexpr int64_t kMlaBatch = 2, kMlaHeads = 16, kMlaLen = 1000, kMlaD = 576, kMlaDv = 512, kMlaE = 2;

AttentionProblem dense_mla(bool causal, bool mla) {
  ProblemBuilder b = ProblemBuilder()
                         .batch(kMlaBatch)
                         .heads(kMlaHeads, 1)
                         .seqlen(kMlaLen)
                         .head_dim(kMlaD, kMlaDv)
                         .dtype(DType::BF16);
  if (causal) b.causal();
  AttentionProblem p = b.build();
  p.mla = mla;
  p.validate();
  return p;
}

// Key rows the query blocks (Br rows) of one sequence of n queries and n keys read, in key blocks of Bc: every
// key, or (causal) the key blocks up to the one holding the diagonal of the block's last row.
int64_t key_rows_read(int64_t n, int64_t br, int64_t bc, bool causal) {
  int64_t rows = 0;
  for (int64_t q0 = 0; q0 < n; q0 += br) {
    const int64_t last = std::min(n, q0 + br) - 1;  // the block's last row sees keys [0, last]
    rows += causal ? std::min(n, (last / bc + 1) * bc) : n;
  }
  return rows;
}

// Bytes between L2 and the SMs.
int64_t l2_bytes(const KernelCounts& k) {
  return k.load_bytes() + k.store_bytes() + k.reduce_bytes();
}

bool has_buffer(const KernelLaunch& l, const std::string& name) {
  return std::any_of(l.smem.begin(), l.smem.end(), [&](const SmemBuffer& b) { return b.name == name; });
}

// No byte of tensor t moved, no footprint.
void expect_untouched(const KernelCounts& k, ref::TensorId t, const std::string& what) {
  const auto& tt = tensor_of(k, t);
  EXPECT_EQ(tt.load.bytes + tt.store.bytes + tt.reduce.bytes, 0) << what;
  EXPECT_EQ(tt.unique_bytes, 0) << what;
}

}  // namespace

// FA2's forward on a dense MLA prefill: V is the first 512 columns of the K tile it loads anyway, so no V is
// loaded and V has no shared-memory buffer; K is read as without MLA (each query block's visible key rows once);
// the traffic is the plain problem's less exactly V's bytes (those key rows x dv x 2 bytes, for every query head)
// and the cold footprint less V's (one latent head); a step loads K alone; closed form == executed.
TEST(DenseMla, Fa2ForwardReadsTheKeyTileAlone) {
  using ref::TensorId;
  const auto& fa2 = kernel_model("fwd_fa2");
  for (const bool causal : {false, true}) {
    const auto p = dense_mla(causal, true), plain = dense_mla(causal, false);
    const std::string what = p.describe();
    TileConfig c;  // Br 128, Bc 64, one stage
    const auto k = analytic_counts(fa2, p, c), kp = analytic_counts(fa2, plain, c);
    expect_same_counts(k, execute_counts(schedule(fa2, p, c)), what);
    expect_untouched(k, TensorId::V, what);
    const int64_t rows = kMlaBatch * kMlaHeads * key_rows_read(kMlaLen, c.block_q, c.block_k, causal);
    EXPECT_EQ(tensor_of(kp, TensorId::K).load.bytes, rows * kMlaD * kMlaE) << what;
    EXPECT_EQ(tensor_of(kp, TensorId::V).load.bytes, rows * kMlaDv * kMlaE) << what;
    EXPECT_EQ(tensor_of(k, TensorId::K).load, tensor_of(kp, TensorId::K).load) << what;
    EXPECT_EQ(l2_bytes(k), l2_bytes(kp) - rows * kMlaDv * kMlaE) << what;
    EXPECT_EQ(k.unique_loaded(), kp.unique_loaded() - kMlaBatch * kMlaLen * kMlaDv * kMlaE) << what;
    EXPECT_EQ(k.unique_dirty(), kp.unique_dirty()) << what;
    const KernelLaunch l = launch(fa2, p, c), lp = launch(fa2, plain, c);
    EXPECT_FALSE(has_buffer(l, "V")) << what;
    EXPECT_TRUE(has_buffer(lp, "V")) << what;
    EXPECT_EQ(l.smem_bytes(), lp.smem_bytes() - c.block_k * kMlaDv * kMlaE * c.stages) << what;
    EXPECT_DOUBLE_EQ(l.step.load_bytes, static_cast<double>(c.block_k * kMlaD * kMlaE)) << what;
    EXPECT_DOUBLE_EQ(lp.step.load_bytes, static_cast<double>(c.block_k * (kMlaD + kMlaDv) * kMlaE)) << what;
  }
}

// The other forwards that take a dense MLA problem: those that load V with the K tile of the same keys (three-
// and two-pass in their last pass, FA1, flashsim's FA2, fa3-v1's) load K alone, as without MLA, and hold no V
// buffer: their traffic is the plain problem's less V's loads; standard attention's P V reads the first dv
// columns of K's rows instead of V (the same bytes, now K's, and K's footprint those columns); closed form ==
// executed, and no V byte or footprint anywhere.
TEST(DenseMla, EveryForwardMovesNoV) {
  using ref::TensorId;
  for (const bool causal : {false, true}) {
    const auto p = dense_mla(causal, true), plain = dense_mla(causal, false);
    TileConfig c;
    for (const char* name : {"fwd_three_pass", "fwd_two_pass", "fwd_fa1", "fwd_fa2_v1", "fwd_fa3",
                             "naive_scores", "naive_softmax", "naive_pv"}) {
      const auto& m = kernel_model(name);
      const std::string what = p.describe() + " " + name;
      const auto k = analytic_counts(m, p, c), kp = analytic_counts(m, plain, c);
      expect_same_counts(k, execute_counts(schedule(m, p, c)), what);
      expect_untouched(k, TensorId::V, what);
      const int64_t v = tensor_of(kp, TensorId::V).load.bytes;
      if (std::string(name) == "naive_pv") {  // K's first dv columns, once per query head
        EXPECT_EQ(v, kMlaBatch * kMlaHeads * kMlaLen * kMlaDv * kMlaE) << what;
        EXPECT_EQ(tensor_of(k, TensorId::K).load.bytes, v) << what;
        EXPECT_EQ(l2_bytes(k), l2_bytes(kp)) << what;
        EXPECT_EQ(tensor_of(k, TensorId::K).unique_bytes, kMlaBatch * kMlaLen * kMlaDv * kMlaE) << what;
        continue;
      }
      if (std::string(name).find("pass") != std::string::npos) {  // V once, in the last pass
        EXPECT_EQ(
            v, kMlaBatch * kMlaHeads * key_rows_read(kMlaLen, c.block_q, c.block_k, causal) * kMlaDv * kMlaE)
            << what;
      }
      EXPECT_EQ(tensor_of(k, TensorId::K).load, tensor_of(kp, TensorId::K).load) << what;
      EXPECT_EQ(l2_bytes(k), l2_bytes(kp) - v) << what;
      EXPECT_EQ(k.unique_total(), kp.unique_total() - (v > 0 ? tensor_of(kp, TensorId::V).unique_bytes : 0))
          << what;
      const KernelLaunch l = launch(m, p, c);
      EXPECT_FALSE(has_buffer(l, "V")) << what;
      EXPECT_FALSE(has_buffer(l, "KV")) << what;
    }
    // fa3-v1's step loads K alone (the time model's TMA bytes)
    EXPECT_TRUE(launch(kernel_model("fwd_fa3"), p, c).ws.mla);
  }
}

// FA2's backward on a dense MLA prefill: every key block's CTA loads its K tile once (V its first dv columns,
// no V load or buffer), accumulates V's gradient into dK's first dv columns and stores dK alone (576 columns, as
// without MLA; no dV). With every key block seen by some query block, FA2's plain backward loads V and stores dV
// for every key row of every query head (dV expanded per query head as FA2 does for a group): the traffic is the
// plain problem's less exactly those bytes, the cold footprints less V's (one latent head) and dV's (per query
// head); dK and dV's accumulators lose dV's columns. flashsim's group kernel likewise, once per kv head. The dot
// and convert kernels move no K or V: the same as without MLA. Closed form == executed.
TEST(DenseMla, Fa2BackwardLoadsKOnceAndStoresDkAlone) {
  using ref::TensorId;
  const auto& main = kernel_model("bwd_dq_dk_dv");
  for (const bool causal : {false, true}) {
    const auto p = dense_mla(causal, true), plain = dense_mla(causal, false);
    const std::string what = p.describe();
    TileConfig c;  // backward Br 64, Bc 128
    const auto k = analytic_counts(main, p, c), kp = analytic_counts(main, plain, c);
    expect_same_counts(k, execute_counts(schedule(main, p, c)), what);
    expect_untouched(k, TensorId::V, what);
    expect_untouched(k, TensorId::dV, what);
    const int64_t keys = kMlaBatch * kMlaHeads * kMlaLen;  // key rows of every query head's CTAs
    EXPECT_EQ(tensor_of(kp, TensorId::V).load.bytes, keys * kMlaDv * kMlaE) << what;
    EXPECT_EQ(tensor_of(kp, TensorId::dV).store.bytes, keys * kMlaDv * kMlaE) << what;
    EXPECT_EQ(tensor_of(k, TensorId::K).load.bytes, keys * kMlaD * kMlaE) << what;
    EXPECT_EQ(tensor_of(k, TensorId::K).load, tensor_of(kp, TensorId::K).load) << what;
    EXPECT_EQ(tensor_of(k, TensorId::dK).store, tensor_of(kp, TensorId::dK).store) << what;
    EXPECT_EQ(l2_bytes(k), l2_bytes(kp) - 2 * keys * kMlaDv * kMlaE) << what;
    EXPECT_EQ(k.unique_loaded(), kp.unique_loaded() - kMlaBatch * kMlaLen * kMlaDv * kMlaE) << what;
    EXPECT_EQ(k.unique_dirty(), kp.unique_dirty() - keys * kMlaDv * kMlaE) << what;
    const KernelLaunch l = launch(main, p, c), lp = launch(main, plain, c);
    EXPECT_FALSE(has_buffer(l, "V")) << what;
    EXPECT_EQ(l.smem_bytes(), lp.smem_bytes() - c.bwd_block_k * kMlaDv * kMlaE) << what;
    EXPECT_EQ(l.accumulator_elems, lp.accumulator_elems - c.bwd_block_k * kMlaDv) << what;
    EXPECT_LT(l.step.accumulator_regs, lp.step.accumulator_regs) << what;
    EXPECT_DOUBLE_EQ(l.step.load_bytes, lp.step.load_bytes) << what;  // a step loads Q and dO, as without MLA

    const auto& group = kernel_model("bwd_dq_dk_dv_group");
    const auto g = analytic_counts(group, p, c);
    expect_same_counts(g, execute_counts(schedule(group, p, c)), what + " group");
    expect_untouched(g, TensorId::V, what + " group");
    expect_untouched(g, TensorId::dV, what + " group");
    EXPECT_EQ(tensor_of(g, TensorId::K).load.bytes, kMlaBatch * kMlaLen * kMlaD * kMlaE) << what;
    EXPECT_EQ(tensor_of(g, TensorId::dK).store.bytes, kMlaBatch * kMlaLen * kMlaD * kMlaE) << what;
    EXPECT_EQ(l2_bytes(g),
              l2_bytes(analytic_counts(group, plain, c)) - 2 * kMlaBatch * kMlaLen * kMlaDv * kMlaE)
        << what;

    for (const char* name : {"bwd_dot_do_o", "bwd_convert_dq"}) {
      const auto& m = kernel_model(name);
      const auto a = analytic_counts(m, p, c), ap = analytic_counts(m, plain, c);
      expect_same_counts(a, ap, what + " " + name);
      EXPECT_EQ(a.unique_total(), ap.unique_total()) << what << " " << name;
    }
  }
}

// Standard attention's backward on MLA: dO V^T reads the first dv columns of K's rows, dV = P^T dO is written
// into dK's first dv columns, and dK's kernel reads them back to add dS^T Q: no V or dV tensor, the same bytes
// but that read-back (dv columns of every key row, per query head); closed form == executed.
TEST(DenseMla, NaiveBackwardWritesTheValueGradientIntoDk) {
  using ref::TensorId;
  const auto p = dense_mla(true, true), plain = dense_mla(true, false);
  const TileConfig c;
  const int64_t part = kMlaBatch * kMlaHeads * kMlaLen * kMlaDv * kMlaE;  // dv columns of every key row
  for (const KernelModel* m : kernels_of(Algorithm::Naive, Pass::Backward)) {
    const std::string what = m->name;
    const auto k = analytic_counts(*m, p, c), kp = analytic_counts(*m, plain, c);
    expect_same_counts(k, execute_counts(schedule(*m, p, c)), what);
    expect_untouched(k, TensorId::V, what);
    expect_untouched(k, TensorId::dV, what);
    EXPECT_EQ(l2_bytes(k), l2_bytes(kp) + (m->name == "naive_bwd_dk" ? part : 0)) << what;
  }
  EXPECT_EQ(tensor_of(analytic_counts(kernel_model("naive_bwd_dp"), p, c), TensorId::K).load.bytes, part);
  const auto dv = analytic_counts(kernel_model("naive_bwd_dv"), p, c);
  EXPECT_EQ(tensor_of(dv, TensorId::dK).store.bytes, part);
  EXPECT_EQ(tensor_of(dv, TensorId::dK).unique_bytes, part);  // dK's first dv columns, per query head
  const auto dk = analytic_counts(kernel_model("naive_bwd_dk"), p, c);
  EXPECT_EQ(tensor_of(dk, TensorId::dK).load.bytes, part);
  EXPECT_EQ(tensor_of(dk, TensorId::dK).store.bytes, part / kMlaDv * kMlaD);
  EXPECT_EQ(tensor_of(dk, TensorId::dK).unique_bytes, part / kMlaDv * kMlaD);  // written whole
  EXPECT_EQ(tensor_of(dk, TensorId::dK).read_bytes, part);  // a cold L2 reads V's gradient alone back
}

// fa3-v1's backward has no MLA form: refused, naming MLA.
TEST(DenseMla, Fa3BackwardRefusesMla) {
  const auto p = dense_mla(false, true);
  for (const char* name : {"bwd_fa3_dot_do_o", "bwd_fa3", "bwd_fa3_convert"}) {
    try {
      (void)launch(kernel_model(name), p, TileConfig{});
      ADD_FAILURE() << name << " took an MLA problem";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("MLA"), std::string::npos) << e.what();
    }
  }
}

// With one split (and no cache) the split kernel reads the plain forward's K and V: query heads one a CTA
// (MHA); with GQA it packs the group and reads them once per kv head.
TEST(Decode, OneSplitReadsThePlainForwardsKv) {
  for (const auto& [sq, sk] : {std::pair<int64_t, int64_t>{1, 1000}, {200, 333}, {64, 64}}) {
    const auto mha =
        ProblemBuilder().batch(3).heads(4).seqlen(sq, sk).head_dim(64).dtype(DType::BF16).build();
    TileConfig c;
    c.block_q = 64;
    c.block_k = 128;
    const auto plain = analytic_counts(kernel_model("fwd_fa2"), mha, c);
    const auto split = analytic_counts(kernel_model("fwd_splitkv"), mha, c);
    for (auto t :
         {ref::TensorId::K, ref::TensorId::V, ref::TensorId::Q, ref::TensorId::O, ref::TensorId::Lse})
      EXPECT_EQ(tensor_of(split, t).load, tensor_of(plain, t).load) << sq << " " << ref::tensor_name(t);
    EXPECT_EQ(split.load_bytes(), plain.load_bytes());
    EXPECT_EQ(split.store_bytes(), plain.store_bytes());
  }
  const auto gqa =
      ProblemBuilder().batch(3).heads(8, 2).seqlen(1, 1000).head_dim(64).dtype(DType::BF16).build();
  TileConfig c;
  c.block_q = 64;
  c.block_k = 128;
  const auto plain = analytic_counts(kernel_model("fwd_fa2"), gqa, c);
  const auto split = analytic_counts(kernel_model("fwd_splitkv"), gqa, c);
  EXPECT_EQ(4 * tensor_of(split, ref::TensorId::K).load.bytes, tensor_of(plain, ref::TensorId::K).load.bytes);
  EXPECT_EQ(4 * tensor_of(split, ref::TensorId::V).load.bytes, tensor_of(plain, ref::TensorId::V).load.bytes);
}

// The split kernel writes every split's fp32 partials (empty splits too); the combine reads them all and writes
// O in the problem's dtype and lse in fp32.
TEST(Decode, CombineReadsThePartialsAndWritesO) {
  const int64_t batch = 3, hq = 8, hk = 2, dv = 128, e = 2;
  for (const int64_t splits : {2, 5, 16, 64}) {
    const auto p = paged_problem({100, 1000, 3}, 16, hq, hk, dv, DType::BF16, 2);
    TileConfig c = splitkv_tile(p);
    c.num_splits = splits;
    const int64_t rows = batch * hq * 2;  // (b, h, i)
    const auto split = analytic_counts(kernel_model("fwd_splitkv"), p, c);
    EXPECT_EQ(tensor_of(split, tensor::OAccum).store.bytes, splits * rows * dv * 4);
    EXPECT_EQ(tensor_of(split, tensor::LseAccum).store.bytes, splits * rows * 4);
    EXPECT_EQ(tensor_of(split, ref::TensorId::O).store.bytes, 0);
    const auto comb = analytic_counts(kernel_model("fwd_splitkv_combine"), p, c);
    EXPECT_EQ(comb.load_bytes(), splits * rows * (dv * 4 + 4));
    EXPECT_EQ(comb.store_bytes(), rows * (dv * e + 4));
    EXPECT_EQ(comb.launch.ctas(), (rows + 3) / 4);  // kBlockM 4 rows for head dim 128
    EXPECT_EQ(comb.load_bytes(), split.store_bytes());
  }
}

// FlashAttention-2's num_splits_heuristic (flash_api.cpp, called with 2 x SMs = 264 slots), worked by hand:
// batch 1, 8 kv heads, one packed query block: 8 CTAs; 8192 keys in 64 blocks of 128. The eligible counts
// (where ceil(64 / s) changes) 1 .. 8, 10, 11, 13, 16, 22, 32, 64 have wave efficiency w / ceil(w),
// w = 8s / 264: best 256/264 (s = 32, 64); the first within 85% of it is 32 (22: 176/264 = 0.67). The same
// rule gives 4 at batch 8 (32 / 264 CTAs a split: 256 / 264 at 4 splits), 2 at batch 16 with 4096 keys, 29 at
// batch 1 with 32768 keys (256 blocks: 29 is eligible, 232/264 = 0.88; 27 gives 0.82, 28 is not eligible), 1 at
// batch 64 (512 CTAs fill 80% of the slots). PyTorch's FA2 kernels on an H100 launched the combine for at most
// 32, 4, 2 and 32 splits at those four shapes (calibration h100.sdpa_decode_splits).
TEST(Decode, SplitHeuristicAsFlashAttention) {
  const auto hw = load_profile("H100-SXM5-80GB");
  ASSERT_EQ(hw.sms, 132);
  const auto splits = [&](int64_t batch, int64_t keys) {
    const auto p =
        paged_problem(std::vector<int64_t>(static_cast<size_t>(batch), keys), 256, 32, 8, 128, DType::BF16);
    return splitkv_heuristic(p, splitkv_tile(p), hw);
  };
  EXPECT_EQ(splits(1, 8192), 32);
  EXPECT_EQ(splits(8, 8192), 4);
  EXPECT_EQ(splits(16, 4096), 2);
  EXPECT_EQ(splits(1, 32768), 29);
  EXPECT_EQ(splits(64, 8192), 1);
}

// The time model: a launch of a few CTAs cannot stream DRAM at the full rate (each CTA at most one SM's share),
// so splitting helps a batch-1 decode; a launch that fills the GPU gains nothing from splits.
TEST(Decode, SplitsHelpOnlyWhenFewCtas) {
  const auto hw = load_profile("H100-SXM5-80GB");
  const auto one = paged_problem({8192}, 256, 32, 8, 128, DType::BF16);
  const auto r1 = sweep_splits(one, hw);
  ASSERT_GE(r1.rows.size(), 5u);
  EXPECT_EQ(r1.rows[0].num_splits, 1);
  const auto at = [](const SplitSweepResult& r, int64_t s) {
    for (const auto& x : r.rows)
      if (x.num_splits == s) return x;
    ADD_FAILURE() << "no row for " << s << " splits";
    return SplitSweepRow{};
  };
  EXPECT_LT(at(r1, 16).time_s, at(r1, 1).time_s / 4);
  // K and V of 8192 keys x 8 kv heads x 128 x 2 x bf16, read once whatever the split.
  EXPECT_DOUBLE_EQ(r1.kv_bytes, 8192.0 * 8 * 128 * 2 * 2);
  for (const auto& x : r1.rows) EXPECT_GE(x.time_s, r1.floor_s) << x.num_splits;
  const auto many = paged_problem(std::vector<int64_t>(64, 8192), 256, 32, 8, 128, DType::BF16);
  const auto r64 = sweep_splits(many, hw);
  for (const auto& x : r64.rows) {
    EXPECT_GE(x.time_s, r64.rows[0].time_s) << x.num_splits;
    EXPECT_TRUE(x.memory_bound) << x.num_splits;
  }
}

// A tile the profile has a measured step for (decode-v2's, calibration decode.cta_stream_h100) holds each CTA to
// a tile's bytes a measured step: a lone CTA takes at least its tiles' steps; without the entry the in-flight
// rule alone lets it stream several times faster. A launch that fills the GPU stays at the DRAM floor.
TEST(Decode, MeasuredStepHoldsALoneCta) {
  const auto hw = load_profile("H100-SXM5-80GB");
  auto unmeasured = hw;
  unmeasured.measured_steps.clear();
  TileConfig tile;  // decode-v2's d128 bf16 tile
  tile.block_q = 16;
  tile.block_k = 64;
  tile.warps = 4;
  tile.stages = 3;
  const MeasuredSteps* step = nullptr;
  for (const auto& m : hw.measured_steps)
    if (m.kernel == "fwd_splitkv" && m.block_q == 16 && m.block_k == 64 && m.stages == 3 && m.head_dim == 128)
      step = &m;
  ASSERT_NE(step, nullptr) << "the H100 profile has decode-v2's step";
  const auto lone = paged_problem({32768}, 16, 4, 1, 128, DType::BF16);  // one CTA at 1 split, 512 tiles
  const auto measured = sweep_splits_of_tile(lone, hw, tile);
  const auto plain = sweep_splits_of_tile(lone, unmeasured, tile);
  ASSERT_EQ(measured.rows[0].num_splits, 1);
  EXPECT_GE(measured.rows[0].split_time_s, 0.95 * 512 * step->step_s());
  EXPECT_LT(plain.rows[0].split_time_s, measured.rows[0].split_time_s / 2);
  // so the model splits a lone sequence further than the in-flight rule alone would
  EXPECT_GT(pick_splits(measured), 1);
  const auto full = paged_problem(std::vector<int64_t>(64, 8192), 16, 32, 8, 128, DType::BF16);
  const auto r = sweep_splits_of_tile(full, hw, tile);
  EXPECT_EQ(pick_splits(r), 1);
  EXPECT_LT(r.rows[0].time_s, 1.05 * sweep_splits_of_tile(full, unmeasured, tile).rows[0].time_s);
}

// A decode tile measured under load (calibration decode.load_h200): a CTA of n key tiles takes cta_s + n step_s at
// the CTAs streaming at once and the launch's page size, the CTAs dealt to the resident slots. Checked against
// the arithmetic by hand on a profile whose costs are made up (so the DRAM floor stays below them).
TEST(Decode, LoadCostsTimeTheLaunchByHand) {
  auto hw = load_profile("H100-SXM5-80GB");
  TileConfig tile;  // decode-v2's d128 bf16 tile
  tile.block_q = 16;
  tile.block_k = 64;
  tile.warps = 4;
  tile.stages = 3;
  MeasuredSteps* m = nullptr;
  for (auto& e : hw.measured_steps)
    if (e.kernel == "fwd_splitkv" && e.block_q == 16 && e.block_k == 64 && e.stages == 3 && e.head_dim == 128)
      m = &e;
  ASSERT_NE(m, nullptr);
  // one CTA: 10 us a step, 40 us fixed; 100 CTAs: 20 and 60 (page 16); page 256 half of each
  m->load = {{16, {{1, 10e-6, 40e-6}, {100, 20e-6, 60e-6}}}, {256, {{1, 5e-6, 20e-6}, {100, 10e-6, 30e-6}}}};
  // between the points linear in the CTAs, past them held; between the pages linear in block_k / page
  EXPECT_NEAR(m->at_load(50.5, 16).first, 15e-6, 1e-12);
  EXPECT_NEAR(m->at_load(50.5, 16).second, 50e-6, 1e-12);
  EXPECT_NEAR(m->at_load(1000, 256).first, 10e-6, 1e-12);
  EXPECT_NEAR(m->at_load(1, 4).first, 10e-6, 1e-12);  // 16 lookups a step: page 16's, held
  EXPECT_NEAR(m->at_load(1, 0).first, 5e-6, 1e-12);   // a contiguous cache: none, page 256's
  EXPECT_NEAR(m->at_load(1, 64).first, 6e-6, 1e-12);  // 1 lookup a step: a fifth of the way from 0.25 to 4
  EXPECT_NEAR(m->at_load(1, 32).second, 29.33333e-6, 1e-10);  // 2 lookups: 7 / 15 of the way
  const int64_t slots = [&] {
    const auto one = paged_problem({64 * 10}, 16, 4, 1, 128, DType::BF16);
    return occupancy(kernel_model("fwd_splitkv").launch(one, tile), hw).resident_ctas;
  }();
  ASSERT_GT(slots, 1);
  const auto split_time = [&](const AttentionProblem& p) {
    const auto r = sweep_splits_of_tile(p, hw, tile);
    EXPECT_EQ(r.rows[0].num_splits, 1);
    return r.rows[0].split_time_s;
  };
  // one CTA of 10 tiles, page 16: 40 + 10 x 10 us after the launch's latency
  EXPECT_NEAR(split_time(paged_problem({640}, 16, 4, 1, 128, DType::BF16)), hw.kernel_latency_s + 140e-6,
              1e-9);
  // 50 sequences of 10 tiles and 50 of 5, page 256: 100 CTAs at once, the longest 30 + 10 x 10 us
  std::vector<int64_t> mixed(100, 640);
  for (size_t i = 50; i < 100; ++i) mixed[i] = 320;
  EXPECT_NEAR(split_time(paged_problem(mixed, 256, 4, 1, 128, DType::BF16)), hw.kernel_latency_s + 130e-6,
              1e-9);
  // twice the slots of equal CTAs: two on each slot, at the last point's costs
  const auto twice =
      paged_problem(std::vector<int64_t>(static_cast<size_t>(2 * slots), 640), 256, 4, 1, 128, DType::BF16);
  EXPECT_NEAR(split_time(twice), hw.kernel_latency_s + 2 * (30e-6 + 10 * 10e-6), 1e-9);
  // the slots and 10 more: a whole wave at the last point's costs, then 10 CTAs streaming alone at 10 CTAs'
  // (a step 5 + 5 x 9 / 99 us, the fixed time 20 + 10 x 9 / 99 us)
  ASSERT_GT(slots, 100);
  const auto partial =
      paged_problem(std::vector<int64_t>(static_cast<size_t>(slots + 10), 640), 256, 4, 1, 128, DType::BF16);
  EXPECT_NEAR(split_time(partial),
              hw.kernel_latency_s + 130e-6 + (20e-6 + 10e-6 * 9 / 99) + 10 * (5e-6 + 5e-6 * 9 / 99), 1e-9);
  // without the load points the launch is timed as before
  m->load.clear();
  EXPECT_LT(split_time(paged_problem({640}, 16, 4, 1, 128, DType::BF16)), hw.kernel_latency_s + 100e-6);
}

// A launch splits only where the model predicts it pays: the fewest splits within kTuneResolution of the
// fastest row; rows that do not fit are never picked.
TEST(DecodeSplits, PickTheFewestSplitsWithinTheModelsResolution) {
  const auto sweep = [](std::vector<std::pair<int64_t, double>> rows, int64_t unfit = 0) {
    SplitSweepResult r;
    for (const auto& [splits, t] : rows) {
      SplitSweepRow row;
      row.num_splits = splits;
      row.time_s = t;
      row.fits = splits != unfit;
      r.rows.push_back(row);
    }
    return r;
  };
  EXPECT_EQ(pick_splits(sweep({{1, 1.00}, {2, 0.98}, {4, 0.96}})), 1);  // 4% faster: not worth a split
  EXPECT_EQ(pick_splits(sweep({{1, 1.00}, {2, 0.94}, {4, 0.90}})), 2);  // 2 within 5% of the fastest (4)
  EXPECT_EQ(pick_splits(sweep({{1, 1.00}, {2, 0.50}, {4, 0.40}})), 4);
  EXPECT_EQ(pick_splits(sweep({{1, 0.90}, {2, 1.00}})), 1);
  EXPECT_EQ(pick_splits(sweep({{1, 0.50}, {2, 1.00}, {4, 0.90}}, 1)), 4);  // 1 does not fit
  EXPECT_EQ(pick_splits(sweep({})), 1);
}

// gpu/decode's combine (decode_combine): FA2's combine's bytes; its time the chain of its split loop, a warp a row
// reading each split's lse three times and then, for each of its lanes' dv / 32 columns, the splits' O partials
// one after another: (3 + dv / 32 x splits) L2 round trips while the rows fit the resident warps at once.
TEST(DecodeCombine, LatencyChainOfItsSplitLoop) {
  const HardwareProfile hw = load_profile("H100-SXM5-80GB");
  const auto p = paged_problem({1024}, 16, 32, 8, 128, DType::BF16);  // 32 rows: 8 CTAs of 4 warps
  const auto at = [&](const std::string& model, int64_t splits) {
    TileConfig c;
    c.num_splits = splits;
    return predict_kernel(analytic_counts(kernel_model(model), p, c), hw);
  };
  for (const int s : {2, 8, 16}) {
    const KernelPrediction ours = at("decode_combine", s), fa2 = at("fwd_splitkv_combine", s);
    expect_same_counts(ours.counts, fa2.counts, "decode_combine against fwd_splitkv_combine");
    EXPECT_NEAR(ours.time_s, hw.kernel_latency_s + (3 + 4.0 * s) * hw.l2_latency_s, 1e-12) << s;
    EXPECT_LT(fa2.time_s, ours.time_s) << s;  // FA2's: a 16-byte load a thread a split, bytes-bound here
  }
  // 2048 rows: fewer than the resident CTAs' warps, one round still
  const auto many = paged_problem(std::vector<int64_t>(64, 1024), 16, 32, 8, 128, DType::BF16);
  TileConfig c;
  c.num_splits = 4;
  const KernelPrediction k = predict_kernel(analytic_counts(kernel_model("decode_combine"), many, c), hw);
  EXPECT_GE(k.time_s, hw.kernel_latency_s + (3 + 4.0 * 4) * hw.l2_latency_s - 1e-12);
  // gpu/decode's launches choose their split count with it (sweep_splits_of_tile), FA2's sweep with its own
  TileConfig tile;
  tile.block_q = 16;
  tile.block_k = 64;
  tile.warps = 4;
  tile.stages = 3;
  for (const SplitSweepRow& row : sweep_splits_of_tile(p, hw, tile).rows) {
    if (row.num_splits > 1) {
      EXPECT_NEAR(row.combine_time_s, at("decode_combine", row.num_splits).time_s, 1e-12) << row.num_splits;
    }
  }
  for (const SplitSweepRow& row : sweep_splits(p, hw).rows) {
    if (row.num_splits > 1) {
      EXPECT_NEAR(row.combine_time_s, at("fwd_splitkv_combine", row.num_splits).time_s, 1e-12)
          << row.num_splits;
    }
  }
}

// --- Block-sparse: tiles whose block-mask tiles are all inactive move no K/V and do no work ---------------------

namespace {

// Every kernel that honours a block mask, forward and backward.
std::vector<const KernelModel*> sparse_kernels() {
  return {&kernel_model("fwd_fa2"),        &kernel_model("fwd_three_pass"),
          &kernel_model("fwd_two_pass"),   &kernel_model("fwd_fa1"),
          &kernel_model("bwd_dot_do_o"),   &kernel_model("bwd_dot_do_o_lse"),
          &kernel_model("bwd_dq_dk_dv"),   &kernel_model("bwd_dq_dk_dv_group"),
          &kernel_model("bwd_convert_dq"), &kernel_model("bwd_convert_dq_rows")};
}

AttentionProblem with_mask(AttentionProblem p, BroadcastShape shape, const std::string& spec, int64_t tq,
                           int64_t tk) {
  p.block_mask = shape;
  p.block_mask_spec = spec;
  p.block_mask_q = tq;
  p.block_mask_k = tk;
  p.validate();
  return p;
}

}  // namespace

TEST(BlockSparse, AnalyticEqualsExecuted) {
  int cases = 0;
  for (const bool varlen : {false, true})
    for (const bool causal : {false, true})
      for (const auto& [spec, shape] :
           {std::pair<std::string, BroadcastShape>{"s2:local=1,stride=3", BroadcastShape::OneHQK},
            {"random:keep=0.4", BroadcastShape::BHQK},
            {"local-sink:local=2,sink=1", BroadcastShape::OneOneQK}})
        for (const auto& [tq, tk] : {std::pair<int64_t, int64_t>{64, 64}, {32, 128}})
          for (const auto strategy : {DqStrategy::Atomic, DqStrategy::Partials}) {
            ProblemBuilder b = ProblemBuilder().heads(4, 2).head_dim(32).dtype(DType::BF16);
            if (varlen) {
              b.varlen({100, 7, 300}, {250, 40, 300});
            } else {
              b.batch(2).seqlen(300, 333);
            }
            if (causal) b.causal();
            const auto p = with_mask(b.build(), shape, spec, tq, tk);
            TileConfig c;
            c.block_q = 64;
            c.block_k = 32;
            c.bwd_block_q = 32;
            c.bwd_block_k = 64;
            c.dq_strategy = strategy;
            const auto d = problem_data(p, 5);
            for (const KernelModel* k : sparse_kernels()) {
              const auto a = analytic_counts(*k, p, c, &d);
              const auto e = execute_counts(schedule(*k, p, c, &d));
              const std::string w = p.describe() + " " + c.describe() + " " + k->name;
              expect_same_counts(a, e, w);
              EXPECT_EQ(a.tiles, e.tiles) << w;
              EXPECT_EQ(a.skipped_tiles, e.skipped_tiles) << w;
              EXPECT_EQ(a.cta_work, e.cta_work) << w;
              ++cases;
            }
          }
  EXPECT_EQ(cases, 2 * 2 * 3 * 2 * 2 * static_cast<int>(sparse_kernels().size()));
}

// A mask with every tile active moves exactly what the dense kernels move; one with every tile inactive moves
// no K, V (or Q, dO against them) and does no matrix work, while the outputs are still written.
TEST(BlockSparse, AllActiveIsDenseAllInactiveMovesNoKv) {
  for (const bool causal : {false, true}) {
    ProblemBuilder b = ProblemBuilder().batch(2).heads(4, 2).seqlen(300, 333).head_dim(32).dtype(DType::BF16);
    if (causal) b.causal();
    const AttentionProblem dense = b.build();
    const auto p = with_mask(dense, BroadcastShape::BHQK, "random:keep=0.5", 64, 64);
    TileConfig c;
    ProblemData all, none;
    all.block_mask.assign(static_cast<size_t>(p.block_mask_elems()), 1);
    none.block_mask.assign(static_cast<size_t>(p.block_mask_elems()), 0);
    for (const KernelModel* k : sparse_kernels()) {
      const auto d = analytic_counts(*k, dense, c);
      const auto a = analytic_counts(*k, p, c, &all);
      expect_same_counts(a, d, k->name + " all active");
      EXPECT_EQ(a.skipped_tiles, 0) << k->name;
      const auto n = analytic_counts(*k, p, c, &none);
      EXPECT_EQ(n.tiles, 0) << k->name;
      EXPECT_EQ(n.skipped_tiles, d.tiles) << k->name;
      EXPECT_EQ(n.mma_flops, 0.0) << k->name;
      for (auto t : {ref::TensorId::K, ref::TensorId::V}) EXPECT_EQ(tensor_of(n, t).load.bytes, 0) << k->name;
      if (k->name == "bwd_dq_dk_dv" || k->name == "bwd_dq_dk_dv_group") {
        for (auto t : {ref::TensorId::Q, ref::TensorId::dO})
          EXPECT_EQ(tensor_of(n, t).load.bytes, 0) << k->name;
        EXPECT_EQ(n.reduce_bytes(), 0) << k->name;
        EXPECT_EQ(tensor_of(n, ref::TensorId::dK).store.bytes, tensor_of(d, ref::TensorId::dK).store.bytes);
      }
      if (k->pass == Pass::Forward) {
        EXPECT_EQ(tensor_of(n, ref::TensorId::Q).load.bytes, 0) << k->name;
        EXPECT_EQ(tensor_of(n, ref::TensorId::O).store.bytes,
                  k->name == "fwd_fa1" ? 0 : tensor_of(d, ref::TensorId::O).store.bytes)
            << k->name;
      }
      // the same with the executed schedule
      const auto ne = execute_counts(schedule(*k, p, c, &none));
      expect_same_counts(ne, n, k->name + " all inactive, executed");
    }
  }
}

// A split-KV decode under a block mask: a packed tile is skipped only when every packed head's mask tile is
// inactive.
TEST(BlockSparse, PagedSplitKvSkipsTiles) {
  auto p = paged_problem({300, 77}, 16, 4, 2, 32, DType::BF16, 2);
  p = with_mask(p, BroadcastShape::BHQK, "random:keep=0.3", 1, 32);
  TileConfig c = splitkv_tile(p);
  c.block_k = 32;
  for (const int64_t splits : {1, 4}) {
    c.num_splits = splits;
    const auto d = problem_data(p, 11);
    expect_decode_agrees(p, c, d, "paged block mask " + std::to_string(splits));
    const auto k = analytic_counts(kernel_model("fwd_splitkv"), p, c, &d);
    EXPECT_GT(k.skipped_tiles, 0);
    EXPECT_GT(k.tiles, 0);
  }
}

// The time uses the computed tiles only: a mask keeping a quarter of the tiles of a compute-bound forward cuts
// its matrix work to a quarter.
TEST(BlockSparse, TimeUsesComputedTiles) {
  const AttentionProblem dense =
      ProblemBuilder().batch(2).heads(16).seqlen(4096).head_dim(128).dtype(DType::BF16).build();
  const auto p = with_mask(dense, BroadcastShape::OneHQK, "s2:local=8,stride=8", 128, 64);
  const TileConfig c;  // Br 128, Bc 64: one kernel tile per mask tile
  const auto d = problem_data(p, 0);
  const auto k = analytic_counts(kernel_model("fwd_fa2"), p, c, &d);
  const auto full = analytic_counts(kernel_model("fwd_fa2"), dense, c);
  EXPECT_EQ(k.tiles + k.skipped_tiles, full.tiles);
  EXPECT_DOUBLE_EQ(k.mma_flops / full.mma_flops,
                   static_cast<double>(k.tiles) / static_cast<double>(full.tiles));
  const auto hw = load_profile("H100-SXM5-80GB");
  EXPECT_LT(predict_kernel(k, hw).time_s, predict_kernel(full, hw).time_s);
}

// --- The sim commands: decode and block-sparse problems, one-line errors -------------------------------------

TEST(SimCommands, PredictReportsSkippedTilesAndSplits) {
  auto r = test::run_cli(
      "sim predict --batch 2 --heads 4 --seqlen 1024 --head-dim 64 --dtype bf16 --block-mask "
      "s2:local=2,stride=4 "
      "--json");
  ASSERT_EQ(r.code, 0) << r.out;
  auto j = nlohmann::json::parse(r.out);
  ASSERT_TRUE(j.contains("block_mask"));
  EXPECT_GT(j["block_mask"]["tiles_skipped"].get<int64_t>(), 0);
  EXPECT_TRUE(j["kernels"][0].contains("tiles_skipped"));
  r = test::run_cli(
      "sim predict --batch 2 --heads 4 --seqlen 1024 --head-dim 64 --dtype bf16 "
      "--block-mask s2:local=2,stride=4");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("tiles skipped by the block mask"), std::string::npos) << r.out;
  r = test::run_cli(
      "sim predict --batch 4 --heads 8 --heads-kv 2 --seqlen-q 1 --cache-seqlens 1000 "
      "--page-size 16 --head-dim 128 --num-splits 4 --json");
  ASSERT_EQ(r.code, 0) << r.out;
  j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["kernels"].size(), 2u);  // forward only: no backward of a KV cache
  EXPECT_EQ(j["kernels"][0]["kernel"], "fwd_splitkv");
  EXPECT_EQ(j["kernels"][1]["kernel"], "fwd_splitkv_combine");
  EXPECT_EQ(j["split_kv"]["num_splits"], 4);
  EXPECT_EQ(j["kernels"][0]["grid"], nlohmann::json({1, 4, 8}));  // (m blocks, splits, batch x kv heads)
  // dense predictions have none of the new keys
  r = test::run_cli("sim predict --batch 1 --heads 2 --seqlen 256 --json");
  j = nlohmann::json::parse(r.out);
  EXPECT_FALSE(j.contains("split_kv") || j.contains("block_mask") || j.contains("note"));
  EXPECT_FALSE(j["kernels"][0].contains("tiles_skipped"));
}

TEST(SimCommands, DecodeSweepVariesSplits) {
  const auto r = test::run_cli(
      "sim sweep --batch 2 --heads 32 --heads-kv 8 --seqlen-q 1 --cache-seqlens 4096 "
      "--page-size 256 --head-dim 128 --dtype bf16 --csv");
  ASSERT_EQ(r.code, 0) << r.out;
  std::vector<std::string> splits;
  std::istringstream in(r.out);
  std::string line;
  std::getline(in, line);
  EXPECT_EQ(line.rfind("num_splits,", 0), 0u) << line;
  while (std::getline(in, line)) splits.push_back(line.substr(0, line.find(',')));
  // 4096 keys in blocks of 128: 32 blocks, so powers of two to 32; FA2's heuristic picks 16 (16 CTAs, wave
  // efficiency over 264 slots 256/264 at 16 splits, 176/264 at the eligible 11 before it).
  EXPECT_EQ(splits, (std::vector<std::string>{"1", "2", "4", "8", "16", "32"}));
  EXPECT_NE(r.out.find("\n16,1,"), std::string::npos) << r.out;
}

TEST(SimCommands, ForwardSweepRowsShowNoBackwardTiles) {
  const auto r = test::run_cli("sim sweep --batch 1 --heads 2 --seqlen 256 --head-dim 64 --pass fwd --top 3");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(r.out.find(" bwd "), std::string::npos) << r.out;
  const auto b = test::run_cli("sim sweep --batch 1 --heads 2 --seqlen 256 --head-dim 64 --pass bwd --top 3");
  ASSERT_EQ(b.code, 0) << b.out;
  EXPECT_EQ(b.out.find(" st1 "), std::string::npos) << b.out;
  // The CSV too: its config column shows the swept pass's knobs only.
  const auto c =
      test::run_cli("sim sweep --batch 1 --heads 2 --seqlen 256 --head-dim 64 --pass fwd --top 3 --csv");
  ASSERT_EQ(c.code, 0) << c.out;
  EXPECT_EQ(c.out.find(" bwd "), std::string::npos) << c.out;
}

// --pass both: the forward's ranking, then the backward's, each exactly as its own --pass gives it.
TEST(SimCommands, SweepBothPassesIsEachPassInTurn) {
  const std::string prob = "sim sweep --batch 1 --heads 2 --seqlen 256 --head-dim 64 --top 4 --csv";
  const auto both = test::run_cli(prob + " --pass both");
  const auto fwd = test::run_cli(prob + " --pass fwd");
  const auto bwd = test::run_cli(prob + " --pass bwd");
  ASSERT_EQ(both.code, 0) << both.out;
  EXPECT_EQ(both.out, "== fwd ==\n" + fwd.out + "\n== bwd ==\n" + bwd.out);
  const auto decode = test::run_cli(
      "sim sweep --batch 2 --heads 8 --heads-kv 2 --seqlen-q 1 --cache-seqlens 1024 --page-size 64 "
      "--head-dim 64 "
      "--pass both --csv");
  ASSERT_EQ(decode.code, 0) << decode.out;
  EXPECT_NE(decode.out.find("num_splits,"), std::string::npos) << decode.out;
  EXPECT_NE(decode.out.find("no backward"), std::string::npos) << decode.out;  // the note, on stderr
}

TEST(SimCommands, BadCombinationsAreOneLineErrors) {
  const std::string decode =
      "--batch 2 --heads 8 --heads-kv 2 --seqlen-q 1 --cache-seqlens 500 --page-size 16";
  for (const std::string& args : std::vector<std::string>{
           "sim predict --num-splits 4 --pass bwd", "sim predict " + decode + " --pass bwd",
           "sim predict " + decode + " --algorithm fa1 --pass fwd", "sim sweep " + decode + " --pass bwd",
           "sim sweep " + decode + " --algorithm naive",
           "sim predict --seqlen 512 --block-mask s2:local=1,stride=2 --algorithm naive",
           "sim sweep --seqlen 512 --block-mask s2:local=1,stride=2 --algorithm naive",
           "sim predict --seqlen 512 --block-mask s2:local=1,stride=2 --kernel naive_scores"}) {
    const auto r = test::run_cli(args);
    EXPECT_EQ(r.code, 2) << args << "\n" << r.out;
    EXPECT_EQ(test::count_lines(r.out), 1) << args << "\n" << r.out;
    EXPECT_EQ(r.out.rfind("flashsim: error: ", 0), 0u) << r.out;
  }
}

// The executed L2 model on a decode: a cold L2 reads each cached key's rows once (the 128-byte lines of the
// pages the CTAs touch), whatever the page size, and the combine reads back every partial the split kernel
// wrote.
TEST(Decode, ExecutedReadsTheCacheOnce) {
  const auto hw = load_profile("H100-SXM5-80GB");
  for (const int64_t page : {1, 16, 256}) {
    const auto p = paged_problem({1000, 513, 77, 2048}, page, 8, 2, 64, DType::BF16);
    TileConfig c = splitkv_tile(p);
    c.num_splits = 3;
    const auto d = problem_data(p, 2);
    const auto ks = predict(p, c, hw, kernels_for(p, c, Algorithm::Fa2, Pass::Forward), true, 0, &d);
    ASSERT_EQ(ks.size(), 2u);
    const double kv =
        kv_cache_bytes(p);  // whole 128-byte rows (2 kv heads x 64 x bf16 = 256 bytes a page row)
    EXPECT_GE(static_cast<double>(ks[0].dram_read), kv) << page;
    EXPECT_LE(static_cast<double>(ks[0].dram_read), kv + 64 * 1024) << page;  // + q and the table
    const auto& partials = ks[0].counts.tensors[static_cast<size_t>(tensor::OAccum)].store.bytes;
    EXPECT_GE(ks[1].dram_read, partials) << page;
  }
}
