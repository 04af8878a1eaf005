// Google Benchmark of the tiling simulator: the executed simulator (schedules + counts + L2 model) on FA2's
// forward and backward at a long sequence, and the analytic model's rate over a sweep of tile configs.
#include <benchmark/benchmark.h>

#include <vector>

#include "flashsim/sim/model.h"
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

}  // namespace

BENCHMARK_MAIN();
