// fa3-v1's forward model (fwd_fa3, tiling_sim/src/kernels/fa3_forward.cpp): its launch, its TMA tile moves
// against counts worked out by hand (whole boxes cross to the SM, the rows past the tensor's end as zeros; rows
// past the sequence inside the tensor read), the closed form against the executed schedule, its ncu names, and
// that `sim predict` and `traffic compare` find it.
#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "flashsim/app/sim_report.h"
#include "flashsim/error.h"
#include "flashsim/sim/counts.h"
#include "flashsim/sim/hardware.h"
#include "flashsim/sim/kernel_model.h"
#include "flashsim/sim/model.h"
#include "flashsim/sim/ncu.h"
#include "flashsim/sim/schedule.h"
#include "problem_builder.h"

using namespace flashsim;
using namespace flashsim::sim;
using flashsim::test::ProblemBuilder;
using ref::TensorId;

namespace {

const KernelModel& fa3() {
  return kernel_model("fwd_fa3");
}

const TensorTraffic& traffic(const KernelCounts& k, TensorId t) {
  return k.tensors[static_cast<size_t>(t)];
}

// The analytic counts, after checking them against the executed schedule's (bytes and sectors, each
// direction, each tensor; the work).
KernelCounts counted(const AttentionProblem& p, const TileConfig& c = {}) {
  const KernelCounts a = analytic_counts(fa3(), p, c);
  const KernelCounts x = execute_counts(schedule(fa3(), p, c));
  for (size_t t = 0; t < a.tensors.size(); ++t) {
    EXPECT_EQ(a.tensors[t].load, x.tensors[t].load) << "tensor " << t;
    EXPECT_EQ(a.tensors[t].store, x.tensors[t].store) << "tensor " << t;
    EXPECT_EQ(a.tensors[t].reduce, x.tensors[t].reduce) << "tensor " << t;
  }
  EXPECT_DOUBLE_EQ(a.mma_flops, x.mma_flops);
  EXPECT_DOUBLE_EQ(a.exp_ops, x.exp_ops);
  EXPECT_DOUBLE_EQ(a.vector_ops, x.vector_ops);
  EXPECT_EQ(a.cta_work, x.cta_work);
  return a;
}

// The bytes of `rows` rows of `d` 2-byte elements, times `heads`.
int64_t rows_bytes(int64_t rows, int64_t d, int64_t heads) {
  return rows * d * 2 * heads;
}

}  // namespace

TEST(Fa3Model, LaunchFollowsTheSpec) {
  // d128, non-causal: the persistent grid, one CTA an SM of the H100 (132), 384 threads, Q + 2 x (K, V) stages.
  const auto p = ProblemBuilder().batch(2).heads(16).seqlen(4096).head_dim(128).dtype(DType::BF16).build();
  const KernelLaunch l = launch(fa3(), p, TileConfig{});
  EXPECT_EQ(l.ctas(), 132);
  EXPECT_EQ(l.threads, 384);
  EXPECT_EQ(l.regs_per_thread, 168);
  EXPECT_EQ(l.smem_bytes(), (128 + 2 * 2 * 128) * 128 * 2);  // 160 KiB
  EXPECT_EQ(l.ws.block_k, 128);
  EXPECT_TRUE(l.ws.persistent);
  EXPECT_DOUBLE_EQ(l.ws.tiles, 32 * 16 * 2);
  EXPECT_DOUBLE_EQ(l.ws.steps, 32 * 32 * 16 * 2);
  EXPECT_DOUBLE_EQ(l.ws.masked_steps, 0);
  EXPECT_EQ(occupancy(l, load_profile("H100-SXM5-80GB")).ctas_per_sm, 1);
  // d256: Bc64; causal: one CTA a tile (the schedule rule), the diagonal blocks masked (2 a tile at Bc64).
  const auto c = ProblemBuilder(p).head_dim(256).causal().build();
  const KernelLaunch lc = launch(fa3(), c, TileConfig{});
  EXPECT_EQ(lc.ws.block_k, 64);
  EXPECT_EQ(lc.ctas(), 32 * 16 * 2);
  EXPECT_FALSE(lc.ws.persistent);
  EXPECT_EQ(lc.smem_bytes(), (128 + 2 * 2 * 64) * 256 * 2);  // 192 KiB
  EXPECT_DOUBLE_EQ(lc.ws.masked_steps, 2 * 32 * 16 * 2);
  // Causal below 4096 keys with 8 tiles an SM or more: persistent, the (batch, head)s 16 at a time; with
  // fewer tiles (b2 h16 n2048: 512 of them, under 8 x 132), one CTA a tile.
  const KernelLaunch ls =
      launch(fa3(), ProblemBuilder(p).batch(8).seqlen(2048).causal().build(), TileConfig{});
  EXPECT_TRUE(ls.ws.persistent);
  EXPECT_EQ(ls.ctas(), 132);
  EXPECT_FALSE(launch(fa3(), ProblemBuilder(p).seqlen(2048).causal().build(), TileConfig{}).ws.persistent);
  // A window: one CTA a tile, whatever its length.
  EXPECT_FALSE(
      launch(fa3(), ProblemBuilder(p).seqlen(2048).window(100, 0).build(), TileConfig{}).ws.persistent);
  // Fewer tiles than SMs: one persistent CTA a tile.
  const auto small = ProblemBuilder(p).batch(1).heads(2).seqlen(1000).build();
  EXPECT_EQ(launch(fa3(), small, TileConfig{}).ctas(), 8 * 2);
}

TEST(Fa3Model, NonCausalD128BytesByHand) {
  // Q once (32 MiB); each of the 1024 tiles reads all 32 key blocks of K and V (1 MiB each); O, lse once.
  const auto p = ProblemBuilder().batch(2).heads(16).seqlen(4096).head_dim(128).dtype(DType::BF16).build();
  const KernelCounts k = counted(p);
  EXPECT_EQ(traffic(k, TensorId::Q).load.bytes, int64_t{32} << 20);
  EXPECT_EQ(traffic(k, TensorId::K).load.bytes, int64_t{1} << 30);
  EXPECT_EQ(traffic(k, TensorId::V).load.bytes, int64_t{1} << 30);
  EXPECT_EQ(traffic(k, TensorId::O).store.bytes,
            int64_t{64} << 20);  // each O sector stored twice (half each)
  EXPECT_EQ(traffic(k, TensorId::Lse).store.bytes, 2 * 16 * 4096 * 4);
  EXPECT_EQ(traffic(k, TensorId::K).load.sectors, (int64_t{1} << 30) / 32);
  // 1024 equal tiles over 132 persistent CTAs: 100 take 8, 32 take 7.
  ASSERT_EQ(k.cta_work.size(), 132u);
  const auto pred = predict_kernel(k, load_profile("H100-SXM5-80GB"));
  EXPECT_DOUBLE_EQ(pred.imbalance, 8.0 * 132 / 1024);
  EXPECT_TRUE(pred.cta.modelled);
  EXPECT_GT(pred.time_s, 0);
}

TEST(Fa3Model, CausalD64OneSequenceByHand) {
  // b1 h2 n1000 d64 causal: 8 query blocks (the last of 104 rows), block m sees key blocks 0..m. Whole boxes:
  // K's rows are 128 (1 + ... + 8) = 4608 a head, Q's 8 x 128 = 1024, the 24 rows past the tensor's end of each
  // last box zeros (L2 -> SM bytes; no L2 line, no footprint).
  const auto p =
      ProblemBuilder().batch(1).heads(2).seqlen(1000).head_dim(64).causal().dtype(DType::BF16).build();
  const KernelCounts k = counted(p);
  EXPECT_EQ(k.launch.ctas(), 16);
  EXPECT_EQ(traffic(k, TensorId::Q).load.bytes, rows_bytes(1024, 64, 2));
  EXPECT_EQ(traffic(k, TensorId::K).load.bytes, rows_bytes(4608, 64, 2));
  EXPECT_EQ(traffic(k, TensorId::V).load.bytes, rows_bytes(4608, 64, 2));
  EXPECT_EQ(traffic(k, TensorId::Q).unique_bytes,
            rows_bytes(1000, 64, 2));  // the footprint: the tensor's rows
  EXPECT_EQ(traffic(k, TensorId::K).unique_bytes, rows_bytes(1000, 64, 2));
  EXPECT_EQ(traffic(k, TensorId::O).store.bytes, 2 * rows_bytes(1000, 64, 2));
  EXPECT_EQ(traffic(k, TensorId::Lse).store.bytes, 1000 * 2 * 4);
}

TEST(Fa3Model, CausalGqaReadsPastTheSequence) {
  // b2 h8/2 n1000 d64 causal: batch 0's last query block and key block 7 run 24 rows into batch 1's rows, which
  // TMA reads (they are inside the tensor); batch 1's run 24 rows past the tensor's end (zeros). K: 128 x 36 a
  // batch and query head (each query head's tiles load their kv head's blocks); Q: 1024 rows a batch and head.
  const auto p =
      ProblemBuilder().batch(2).heads(8, 2).seqlen(1000).head_dim(64).causal().dtype(DType::BF16).build();
  const KernelCounts k = counted(p);
  EXPECT_EQ(k.launch.ctas(), 8 * 8 * 2);
  EXPECT_EQ(traffic(k, TensorId::Q).load.bytes, rows_bytes(1024 + 1024, 64, 8));
  EXPECT_EQ(traffic(k, TensorId::K).load.bytes, rows_bytes(128 * 36 * 2, 64, 8));
  EXPECT_EQ(traffic(k, TensorId::V).load.bytes, rows_bytes(128 * 36 * 2, 64, 8));
  EXPECT_EQ(traffic(k, TensorId::O).store.bytes, 2 * rows_bytes(2000, 64, 8));
  EXPECT_EQ(traffic(k, TensorId::Lse).store.bytes, 2000 * 8 * 4);
  // FA2's forward stops at the sequence: 24 rows fewer for each batch's last block of Q.
  const KernelCounts f = analytic_counts(kernel_model("fwd_fa2"), p, TileConfig{128, 128});
  EXPECT_EQ(traffic(k, TensorId::Q).load.bytes - traffic(f, TensorId::Q).load.bytes, rows_bytes(48, 64, 8));
}

TEST(Fa3Model, VarlenOddLengthsD256ByHand) {
  // Sequences of 100, 300 and 37 (437 packed rows), d256 (Bc64), 2 heads, non-causal. Boxes (rows to the SM;
  // past the tensor's end, at 437, zeros):
  //   seq 0 (rows 0..99):    Q 128;               K blocks at 0, 64: 64 + 64
  //   seq 1 (rows 100..399): Q 128, 128, 128;     K blocks at 100 .. 356: 5 x 64, for each of its 3 tiles
  //   seq 2 (rows 400..436): Q 128;               K block at 400: 64
  const auto p = ProblemBuilder()
                     .varlen({100, 300, 37}, {100, 300, 37})
                     .heads(2)
                     .head_dim(256)
                     .dtype(DType::BF16)
                     .build();
  const KernelCounts k = counted(p);
  EXPECT_EQ(k.launch.ctas(), 3 * 2 * 3);  // the grid spans the longest sequence's 3 query blocks
  EXPECT_EQ(traffic(k, TensorId::Q).load.bytes, rows_bytes(5 * 128, 256, 2));
  EXPECT_EQ(traffic(k, TensorId::K).load.bytes, rows_bytes(128 + 3 * 320 + 64, 256, 2));
  EXPECT_EQ(traffic(k, TensorId::V).load.bytes, rows_bytes(128 + 3 * 320 + 64, 256, 2));
  EXPECT_EQ(traffic(k, TensorId::K).unique_bytes, rows_bytes(437, 256, 2));
  EXPECT_EQ(traffic(k, TensorId::O).store.bytes, 2 * rows_bytes(437, 256, 2));
  EXPECT_EQ(traffic(k, TensorId::Lse).store.bytes, 437 * 2 * 4);
  EXPECT_FALSE(k.cta_work.empty());  // tiles past a short sequence do nothing
}

TEST(Fa3Model, SequenceShorterThanATileD96ByHand) {
  // b3 h1 n50 d96: one query block a sequence; its box of 128 rows reads to the tensor's end (150 rows) and
  // carries zeros past it: 3 x 128 rows of Q, the same of K and of V; 192-byte rows, 6 sectors each.
  const auto p = ProblemBuilder().batch(3).heads(1).seqlen(50).head_dim(96).dtype(DType::BF16).build();
  const KernelCounts k = counted(p);
  EXPECT_EQ(traffic(k, TensorId::Q).load.bytes, rows_bytes(384, 96, 1));
  EXPECT_EQ(traffic(k, TensorId::K).load.bytes, rows_bytes(384, 96, 1));
  EXPECT_EQ(traffic(k, TensorId::V).load.bytes, rows_bytes(384, 96, 1));
  EXPECT_EQ(traffic(k, TensorId::Q).load.sectors, 384 * 6);
  EXPECT_EQ(traffic(k, TensorId::O).store.bytes, 2 * rows_bytes(150, 96, 1));
}

TEST(Fa3Model, WindowsAndOtherShapesMatchTheExecutedSchedule) {
  counted(ProblemBuilder().batch(2).heads(4).seqlen(700, 900).head_dim(128).window(200, 0).build());
  counted(ProblemBuilder().batch(3).heads(6, 3).seqlen(333).head_dim(64).window(-1, 50).build());
  counted(ProblemBuilder().varlen({5, 260, 129}, {300, 7, 140}).heads(2).head_dim(128).causal().build());
  // A window that leaves a query block no key: O and lse are still written (zeros, -inf).
  counted(ProblemBuilder().batch(1).heads(1).seqlen(256, 64).head_dim(64).window(0, 0).build());
}

TEST(Fa3Model, RecognizesItsNcuNames) {
  const auto want = [](const std::string& name, int64_t br, int64_t bc, int stages) {
    const auto r = recognize_kernel(name);
    ASSERT_TRUE(r.has_value()) << name;
    EXPECT_EQ(r->model->name, "fwd_fa3") << name;
    EXPECT_EQ(r->config.block_q, br) << name;
    EXPECT_EQ(r->config.block_k, bc) << name;
    EXPECT_EQ(r->config.stages, stages) << name;
    EXPECT_EQ(r->config.warps, 12) << name;
  };
  want(
      "void flashsim::gpu::fa3::flashsim_fa3_fwd_kernel<flashsim::gpu::fa3::Fa3FwdTraits<128, 128, 128, 2, "
      "cutlass::bfloat16_t>, "
      "false>(flashsim::gpu::fa3::Fa3FwdKernelParams<flashsim::gpu::fa3::Fa3FwdTraits<128, "
      "128, 128, 2, cutlass::bfloat16_t>>)",
      128, 128, 2);
  want("flashsim_fa3_fwd_kernel<Fa3FwdTraits<256,128,64,2,cutlass::half_t>,true>", 128, 64, 2);
  want("flashsim_fa3_fwd_kernel< Fa3FwdTraits<(int)96, (int)128, (int)128, (int)2, bfloat16_t>, (bool)0>",
       128, 128, 2);
  EXPECT_EQ(
      recognize_kernel("void flashsim_fa2_fwd_kernel<128, 128, 64, 4, 1, __nv_bfloat16, false>")->model->name,
      "fwd_fa2_v1");
  EXPECT_THROW(recognize_kernel("flashsim_fa3_fwd_kernel<Fa3FwdTraits<128, 96, 128, 2, half_t>, false>"),
               InputError);  // a query tile of 1.5 warpgroups
}

TEST(Fa3Model, FoundBySimPredict) {
  app::PredictRequest req;  // sim predict --kernel fwd_fa3 --json
  req.problem = ProblemBuilder().batch(2).heads(16).seqlen(4096).head_dim(128).dtype(DType::BF16).build();
  req.apply_given = [](const TileConfig& base) { return base; };
  req.hw = "H100-SXM5-80GB";
  req.kernels = {"fwd_fa3"};
  for (const bool executed : {false, true}) {
    req.executed = executed;
    const auto j = app::to_json(app::run_predict(req));
    ASSERT_EQ(j["kernels"].size(), 1u);
    const auto& k = j["kernels"][0];
    EXPECT_EQ(k["kernel"], "fwd_fa3");
    EXPECT_EQ(k["grid"], nlohmann::json({132, 1, 1}));
    EXPECT_EQ(k["load_bytes"], (int64_t{32} << 20) + (int64_t{2} << 30));
    EXPECT_TRUE(k.contains("cta_model"));
    EXPECT_GT(k["time_s"].get<double>(), 0);
  }
  // The report names the tile the model runs, not only the caller's (which is not of fa3's shape here).
  EXPECT_NE(app::run_predict(req).config.find("fwd_fa3 runs Br128 Bc128 st2"), std::string::npos)
      << app::run_predict(req).config;
  req.kernels = {"bwd_fa3"};
  req.problem.head_dim = req.problem.head_dim_v = 256;
  EXPECT_NE(app::run_predict(req).config.find("bwd_fa3 runs Br64 Bc64 st1"), std::string::npos);
  req.kernels = {"fwd_fa3"};
  req.problem.head_dim = req.problem.head_dim_v = 128;
  // A profile without the Hopper rates: the roofline times it.
  req.executed = false;
  req.hw = "A100-SXM4-80GB";
  EXPECT_FALSE(app::to_json(app::run_predict(req))["kernels"][0].contains("cta_model"));
}

TEST(Fa3Model, ComparedByTrafficCompare) {
  const auto p = ProblemBuilder().batch(2).heads(16).seqlen(4096).head_dim(128).dtype(DType::BF16).build();
  const int64_t loads = (int64_t{32} << 20) + (int64_t{2} << 30),
                stores = (int64_t{64} << 20) + 2 * 16 * 4096 * 4;
  const auto compare = [&](double read_bytes, const std::string& grid) {
    std::stringstream f;
    f << "\"ID\",\"Kernel Name\",\"Block Size\",\"Grid Size\",\"Metric Name\",\"Metric Unit\",\"Metric "
         "Value\"\n";
    for (const auto& [metric, value] : std::vector<std::pair<std::string, double>>{
             {"l1tex__m_xbar2l1tex_read_bytes.sum", read_bytes},
             {"l1tex__t_bytes_pipe_lsu_mem_global_op_st.sum", static_cast<double>(stores)}})
      f << "\"0\",\"void flashsim::gpu::fa3::flashsim_fa3_fwd_kernel<flashsim::gpu::fa3::Fa3FwdTraits<128, "
           "128, "
           "128, 2, cutlass::bfloat16_t>, false>(flashsim::gpu::fa3::Fa3FwdKernelParams<>)\",\"(384, 1, "
           "1)\",\""
        << grid << "\",\"" << metric << "\",\"byte\",\"" << static_cast<int64_t>(value) << "\"\n";
    const auto kernels = parse_ncu_csv(f);
    return to_json(compare_ncu(kernels, p, load_profile("H100-SXM5-80GB"), dram_counters_replayed(kernels)));
  };
  const auto j = compare(static_cast<double>(loads), "(132, 1, 1)");
  EXPECT_TRUE(j["ok"].get<bool>()) << j.dump(2);
  EXPECT_EQ(j["kernels"][0]["name"], "fwd_fa3 (void flashsim::gpu::fa3::flashsim_fa3_fwd_kernel)");
  EXPECT_FALSE(compare(1.03 * static_cast<double>(loads), "(132, 1, 1)")["ok"].get<bool>());  // 3% over
  EXPECT_THROW(compare(static_cast<double>(loads), "(1024, 1, 1)"), InputError);  // another launch
}

namespace {

// block_needs_mask of the kernels (gpu/fa3, gpu/fa2), block by block: key block n of query block [q0, q0 + Br)
// runs past the sequence's keys or crosses a window edge of some row of the box.
bool needs_mask(const AttentionProblem& p, int64_t b, int64_t q0, int64_t br, int64_t n, int64_t bc) {
  const int64_t lk = p.len_k(b), shift = lk - p.len_q(b), first_col = n * bc, last_col = first_col + bc - 1;
  return last_col >= lk || (p.window_right >= 0 && last_col > q0 + shift + p.window_right) ||
         (p.window_left >= 0 && first_col < q0 + br - 1 + shift - p.window_left);
}

// The launch's masked steps, one visible key block at a time.
double masked_steps_by_block(const AttentionProblem& p, int64_t br, int64_t bc) {
  double masked = 0;
  for (int64_t b = 0; b < p.batch; ++b)
    for (int64_t q0 = 0; q0 < p.len_q(b); q0 += br) {
      const auto [n0, n1] = visible_key_blocks(p, b, q0, std::min(p.len_q(b), q0 + br), bc);
      for (int64_t n = n0; n < n1; ++n)
        masked += needs_mask(p, b, q0, br, n, bc) ? static_cast<double>(p.heads_q) : 0.0;
    }
  return masked;
}

}  // namespace

TEST(Fa3Model, MaskedStepsInClosedFormAreTheKernelsBlockTests) {
  // The models count masked steps in O(1) a tile (a 10M-key problem has 1e5 key blocks a tile); against the
  // kernels' test of each block, over problems with mask edges on and beside every block boundary, for fwd_fa3
  // and fwd_fa2_v1. The bytes of some are checked against the executed schedule (counted) too: the K / V rows
  // read come in closed form as well.
  std::mt19937 rng(29);
  for (int i = 0; i < 400; ++i) {
    const AttentionProblem p = flashsim::test::masked_edges_problem(rng, i, 2, 2);
    const KernelLaunch l3 = launch(fa3(), p, TileConfig{});
    EXPECT_DOUBLE_EQ(l3.ws.masked_steps, masked_steps_by_block(p, l3.ws.block_q, l3.ws.block_k)) << i;
    if (i % 10 == 0 || i % 20 == 3) counted(p);
    TileConfig c2;
    c2.block_q = 128;
    c2.block_k = i % 2 ? 64 : 32;
    c2.warps = 4;
    c2.stages = 2;
    const KernelLaunch l2 = launch(kernel_model("fwd_fa2_v1"), p, c2);
    EXPECT_DOUBLE_EQ(l2.ws.masked_steps, masked_steps_by_block(p, c2.block_q, c2.block_k)) << i;
  }
}
