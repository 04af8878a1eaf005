// Google Benchmark of the tiling simulator: the executed simulator (schedules + counts + L2 model) on FA2's
// forward and backward at a long sequence, the analytic model's rate over a sweep of tile configs, our kernels'
// models at 1M and 16M keys, and the
// decode (paged KV cache, split-KV) predictions per split count, whose counters are the predicted numbers
// (bench/results/decode_sim_2026-11-24/README.md).
#include <benchmark/benchmark.h>

#include <vector>

#include "flashsim/sim/model.h"
#include "flashsim/sim/problem_data.h"
#include "flashsim/sim/sweep.h"

using namespace flashsim;

namespace {

AttentionProblem problem(int64_t batch, int64_t heads, int64_t seqlen, int64_t head_dim) {
  AttentionProblem p;
  p.batch = batch;
  p.heads_q = p.heads_kv = heads;
  p.seqlen_q = p.seqlen_k = seqlen;
  p.head_dim = p.head_dim_v = head_dim;
  p.dtype = DType::BF16;
  return p;
}

// `flashsim sim predict --batch 1 --heads 16 --seqlen 16384 --head-dim 128 --dtype bf16 --executed`: every
// CTA's moves built, counted and run through the L2 model, forward then backward.
void BM_ExecutedFa2FwdBwd(benchmark::State& state) {
  const auto p = problem(1, 16, state.range(0), 128);
  const auto hw = sim::load_profile("H100-SXM5-80GB");
  const TileConfig c;
  int64_t dram = 0;
  for (auto _ : state) {
    for (const Pass pass : {Pass::Forward, Pass::Backward})
      for (const auto& k : sim::predict(p, c, hw, sim::kernels_of(Algorithm::Fa2, pass), /*executed=*/true))
        dram += k.dram_read + k.dram_write;
    benchmark::DoNotOptimize(dram);
  }
  state.counters["seqlen"] = static_cast<double>(state.range(0));
}
BENCHMARK(BM_ExecutedFa2FwdBwd)->Arg(4096)->Arg(16384)->Unit(benchmark::kMillisecond);

// The configs `flashsim sim sweep` evaluates (Br, Bc in {16..256}, warps, stages, Q in registers, K/V
// sharing), each through the closed form and the DRAM/occupancy/roofline model.
void BM_AnalyticSweep(benchmark::State& state) {
  auto p = problem(2, 16, 4096, 128);
  if (state.range(0) != 0) p.window_right = 0;  // causal: unequal CTAs, list-scheduled for the time
  const auto hw = sim::load_profile("H100-SXM5-80GB");
  const auto configs = sim::sweep_space(Pass::Forward);
  const auto& fwd = sim::kernel_model("fwd_fa2");
  double t = 0;
  for (auto _ : state) {
    for (const auto& c : configs) t += sim::predict_kernel(sim::analytic_counts(fwd, p, c), hw).time_s;
    benchmark::DoNotOptimize(t);
  }
  state.counters["configs_per_s"] =
      benchmark::Counter(static_cast<double>(configs.size()), benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_AnalyticSweep)->ArgName("causal")->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);

// `flashsim sim predict --kernel K --seqlen N --causal` for our kernels' models at long contexts (b1 h8 d128 bf16,
// H100): fa3-v1's forward (its balanced walk included) and backward, fa2-v1's forward and backward. Their counts
// are closed forms per query or key block (a 16M-key problem has 1.3e5 blocks a row of tiles).
void BM_LongContextModels(benchmark::State& state) {
  auto p = problem(1, 8, state.range(0), 128);
  p.window_right = 0;  // causal: unequal tiles, the balanced walk, the masked blocks
  const auto hw = sim::load_profile("H100-SXM5-80GB");
  std::vector<const sim::KernelModel*> models;
  for (const char* name : {"fwd_fa3", "bwd_fa3", "fwd_fa2_v1", "bwd_dq_dk_dv_group"})
    models.push_back(&sim::kernel_model(name));
  double t = 0;
  for (auto _ : state) {
    for (const auto& k : sim::predict(p, TileConfig{}, hw, models, /*executed=*/false)) t += k.time_s;
    benchmark::DoNotOptimize(t);
  }
  state.counters["seqlen"] = static_cast<double>(state.range(0));
}
BENCHMARK(BM_LongContextModels)->Arg(1 << 20)->Arg(1 << 24)->Unit(benchmark::kMillisecond);

// A block-masked problem (b2 h16 n8192 d128 bf16, a random 1hqk mask over 128 x 128 tiles keeping half, seed 1):
// `flashsim sim sweep ... --block-mask random:keep=0.5` over the forward's configs (range 0; each config's
// tiles tested against the mask, no CTA steps listed: the ranking has no measured costs), and `sim predict` of
// fa2-v1's four kernels (range 1; their CTAs' computed tiles listed from the mask for the measured costs).
void BM_BlockMask(benchmark::State& state) {
  auto p = problem(2, 16, 8192, 128);
  p.block_mask = BroadcastShape::OneHQK;
  p.block_mask_spec = "random:keep=0.5";
  p.block_mask_q = p.block_mask_k = 128;
  p.validate();
  const auto hw = sim::load_profile("H100-SXM5-80GB");
  const auto data = sim::problem_data(p, 1);
  std::vector<const sim::KernelModel*> models;
  for (const char* name : {"fwd_fa2_v1", "bwd_dot_do_o_lse", "bwd_dq_dk_dv_group", "bwd_convert_dq_rows"})
    models.push_back(&sim::kernel_model(name));
  double t = 0;
  for (auto _ : state) {
    if (state.range(0) == 0)
      t += static_cast<double>(sim::sweep(p, hw, Algorithm::Fa2, Pass::Forward, {}, &data).ranked.size());
    else
      for (const auto& k : sim::predict(p, TileConfig{}, hw, models, false, 0, &data)) t += k.time_s;
    benchmark::DoNotOptimize(t);
  }
}
BENCHMARK(BM_BlockMask)->ArgName("predict")->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);

// Decode: batch 64, 32 query heads over 8 kv heads, 8192 cached keys each, head dim 128, bf16, pages of
// state.range(0) rows, state.range(1) splits: `flashsim sim sweep --batch 64 --heads 32 --heads-kv 8
// --seqlen-q 1 --cache-seqlens 8192 --page-size 256 --head-dim 128 --dtype bf16` (one row of it). The loop
// times the closed form (block table, split and combine kernels, DRAM and time model); the counters are what
// it predicts for an H100.
AttentionProblem decode_problem(int64_t page) {
  auto p = problem(64, 32, 1, 128);
  p.heads_kv = 8;
  p.seqlen_k = 8192;
  p.page_size = page;
  p.cache_seqlens.assign(64, 8192);
  return p;
}

void BM_DecodeSplitKv(benchmark::State& state) {
  const auto p = decode_problem(state.range(0));
  const auto hw = sim::load_profile("H100-SXM5-80GB");
  TileConfig c = sim::splitkv_tile(p);
  c.num_splits = state.range(1);
  const auto data = sim::problem_data(p, 0);
  const auto kernels = sim::kernels_for(p, c, Algorithm::Fa2, Pass::Forward);
  std::vector<sim::KernelPrediction> ks;
  for (auto _ : state) {
    ks = sim::predict(p, c, hw, kernels, false, 0, &data);
    benchmark::DoNotOptimize(ks.data());
  }
  double time = 0, dram = 0, l2 = 0;
  for (const auto& k : ks) {
    time += k.time_s;
    dram += static_cast<double>(k.dram_read + k.dram_write);
    l2 += static_cast<double>(k.counts.load_bytes() + k.counts.store_bytes() + k.counts.reduce_bytes());
  }
  const auto& split = ks.front();
  state.counters["pred_us"] = time * 1e6;
  state.counters["pred_split_us"] = split.time_s * 1e6;
  state.counters["pred_dram_MB"] = dram / 1e6;
  state.counters["pred_l2_MB"] = l2 / 1e6;
  state.counters["pred_t_dram_us"] = split.t_dram * 1e6;
  state.counters["pred_t_compute_us"] = (split.t_mma + split.t_exp + split.t_vec) * 1e6;
  state.counters["memory_bound"] = split.bound == "memory" ? 1 : 0;
  state.counters["floor_us"] = sim::kv_cache_bytes(p) / hw.achieved_dram_bytes_per_s * 1e6;
}
BENCHMARK(BM_DecodeSplitKv)
    ->ArgNames({"page", "splits"})
    ->ArgsProduct({{16, 256}, {1, 2, 4, 8, 16, 32, 64}})
    ->Unit(benchmark::kMillisecond);

// The executed schedule of the same decode (every CTA's page runs and table reads, the L2 model), one split.
void BM_DecodeExecuted(benchmark::State& state) {
  const auto p = decode_problem(state.range(0));
  const auto hw = sim::load_profile("H100-SXM5-80GB");
  const TileConfig c = sim::splitkv_tile(p);
  const auto data = sim::problem_data(p, 0);
  int64_t dram = 0;
  for (auto _ : state) {
    for (const auto& k :
         sim::predict(p, c, hw, sim::kernels_for(p, c, Algorithm::Fa2, Pass::Forward), true, 0, &data))
      dram += k.dram_read + k.dram_write;
    benchmark::DoNotOptimize(dram);
  }
}
BENCHMARK(BM_DecodeExecuted)->ArgName("page")->Arg(16)->Arg(256)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
