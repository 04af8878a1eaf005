// Speed and memory of the reference algorithms (Google Benchmark).
//   GFLOPs      conventional attention FLOPs per second: 4 N^2 d per head forward, 2.5x backward, half causal
//   gemm_ratio  GFLOPs over OpenBLAS sgemm/dgemm GFLOP/s measured in this binary, all cores, at the shape of
//               the attention's Q K^T product (M = N = seqlen, K = head_dim)
//   peak_MB     growth of the resident set during the call (VmHWM reset before it): outputs + workspace
// Run: build/default/bench/reference_bench --benchmark_filter=... (see bench/README.md).
#include <benchmark/benchmark.h>
#include <cblas.h>
#include <omp.h>

#include <chrono>
#include <fstream>
#include <map>
#include <vector>

#include "flashsim/memory.h"
#include "flashsim/ref/attention.h"

namespace {

using namespace flashsim;
using namespace flashsim::ref;

AttentionProblem bench_problem(int64_t seqlen, int64_t d, bool fp64) {
  AttentionProblem p;
  p.batch = 1;
  p.heads_q = p.heads_kv = 8;  // batch * heads = 8
  p.seqlen_q = p.seqlen_k = seqlen;
  p.head_dim = p.head_dim_v = d;
  p.dtype = fp64 ? DType::F64 : DType::F32;
  return p;
}

// The CPU tiling: large tiles keep each tile GEMM near OpenBLAS's efficiency (the GPU-sized 128x64 default
// works too, slower).
TileConfig bench_tiles() {
  TileConfig t;
  t.block_q = 256;
  t.block_k = 256;
  t.bwd_block_q = 256;
  t.bwd_block_k = 256;
  return t;
}

double conventional_flops(const AttentionProblem& p, bool backward) {
  const double fwd = 4.0 * static_cast<double>(p.seqlen_q * p.seqlen_k * p.head_dim * p.batch * p.heads_q);
  return backward ? 2.5 * fwd : fwd;
}

// OpenBLAS GEMM GFLOP/s with all cores at M = N = seqlen, K = d (cached per shape).
double blas_gflops(int64_t seqlen, int64_t d, bool fp64) {
  static std::map<std::tuple<int64_t, int64_t, bool>, double> cache;
  const auto key = std::make_tuple(seqlen, d, fp64);
  if (auto it = cache.find(key); it != cache.end()) return it->second;
  const int n = static_cast<int>(seqlen), k = static_cast<int>(d);
  std::vector<double> ad(fp64 ? size_t(n) * k : 0, 0.5), cd(fp64 ? size_t(n) * n : 0);
  std::vector<float> af(fp64 ? 0 : size_t(n) * k, 0.5f), cf(fp64 ? 0 : size_t(n) * n);
  auto once = [&] {
    if (fp64) {
      cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n, n, k, 1.0, ad.data(), k, ad.data(), k, 0.0,
                  cd.data(), n);
    } else {
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n, n, k, 1.f, af.data(), k, af.data(), k, 0.f,
                  cf.data(), n);
    }
  };
  once();  // warm-up
  const int reps = 5;
  const auto t0 = std::chrono::steady_clock::now();
  for (int r = 0; r < reps; ++r) once();
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return cache[key] = reps * 2.0 * n * n * k / s * 1e-9;
}

// Times each iteration of `body` (wall clock, all threads) and sets GFLOPs, blas_GFLOPs and gemm_ratio.
template <class F>
void run_timed(benchmark::State& state, const AttentionProblem& p, bool backward, F&& body) {
  double seconds = 0;
  int64_t iters = 0;
  for (auto _ : state) {
    const auto t0 = std::chrono::steady_clock::now();
    body();
    seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    ++iters;
  }
  const double gflops = conventional_flops(p, backward) * static_cast<double>(iters) / seconds * 1e-9;
  const double blas = blas_gflops(p.seqlen_q, p.head_dim, p.dtype == DType::F64);
  state.counters["GFLOPs"] = gflops;
  state.counters["blas_GFLOPs"] = blas;
  state.counters["gemm_ratio"] = gflops / blas;
}

void BM_Forward(benchmark::State& state) {
  const auto algo = all_algorithms()[static_cast<size_t>(state.range(0))];
  const bool fp64 = state.range(3) != 0;
  const AttentionProblem p = bench_problem(state.range(1), state.range(2), fp64);
  const AttentionInputs in = make_random_inputs(p, 1);
  RunOptions opt;
  opt.precision = fp64 ? Precision::Exact : Precision::Fp32;
  run_timed(state, p, false, [&] { benchmark::DoNotOptimize(forward(p, in, algo, bench_tiles(), opt)); });
  state.SetLabel(std::string(algorithm_name(algo)) + (fp64 ? " fp64" : " fp32"));
}

void BM_Backward(benchmark::State& state) {
  const auto algo = state.range(0) == 0 ? Algorithm::Naive : Algorithm::Fa2;  // the two with a backward
  const bool fp64 = state.range(3) != 0;
  const AttentionProblem p = bench_problem(state.range(1), state.range(2), fp64);
  const AttentionInputs in = make_random_inputs(p, 1);
  RunOptions opt;
  opt.precision = fp64 ? Precision::Exact : Precision::Fp32;
  const ForwardResult fwd = forward(p, in, Algorithm::Fa2, bench_tiles(), opt);
  run_timed(state, p, true,
            [&] { benchmark::DoNotOptimize(backward(p, in, fwd, algo, bench_tiles(), opt)); });
  state.SetLabel(std::string(algorithm_name(algo)) + (fp64 ? " fp64" : " fp32"));
}

// The C++ call behind flashsim.attention's default (bench/python_overhead.py times both): b1 h16 s4096 d128, exact
// fa2 forward at the default tile (Br 128, Bc 64), all cores. widen 0: inputs already in double, as the reference
// takes them; widen 1: fp32 inputs converted to double in each call, the one copy the Python call makes too.
void BM_PythonBaseline(benchmark::State& state) {
  AttentionProblem p = bench_problem(4096, 128, false);
  p.heads_q = p.heads_kv = 16;
  const AttentionInputs in = make_random_inputs(p, 1);
  const bool widen = state.range(0) != 0;
  const std::vector<float> q(in.q.begin(), in.q.end()), k(in.k.begin(), in.k.end()),
      v(in.v.begin(), in.v.end());
  run_timed(state, p, false, [&] {
    if (!widen) {
      benchmark::DoNotOptimize(forward(p, in, Algorithm::Fa2, TileConfig{}, {}));
      return;
    }
    AttentionInputs w;
    w.q.assign(q.begin(), q.end());  // float -> double, one pass
    w.k.assign(k.begin(), k.end());
    w.v.assign(v.begin(), v.end());
    benchmark::DoNotOptimize(forward(p, w, Algorithm::Fa2, TileConfig{}, {}));
  });
  state.SetLabel(widen ? "fa2 exact, fp32 inputs widened per call" : "fa2 exact, double inputs");
}

// Peak resident memory of the tiled algorithms: the growth of VmHWM over the resident set before the call.
int64_t rss_bytes() {
  std::ifstream f("/proc/self/statm");
  int64_t pages = 0, resident = 0;
  f >> pages >> resident;
  return resident * 4096;
}
void reset_peak_rss() {
  std::ofstream("/proc/self/clear_refs") << "5";
}  // Linux >= 4.0: VmHWM := VmRSS

void BM_TiledMemory(benchmark::State& state) {
  const bool backward_pass = state.range(0) != 0;
  const AttentionProblem p = bench_problem(state.range(1), 128, false);
  const AttentionInputs in = make_random_inputs(p, 1);
  RunOptions opt;
  opt.precision = Precision::Fp32;
  ForwardResult fwd;
  if (backward_pass) fwd = forward(p, in, Algorithm::Fa2, bench_tiles(), opt);
  double peak_mb = 0, outputs_mb = 0;
  run_timed(state, p, backward_pass, [&] {
    reset_peak_rss();
    const int64_t before = rss_bytes();
    if (backward_pass) {
      const Gradients g = backward(p, in, fwd, Algorithm::Fa2, bench_tiles(), opt);
      outputs_mb = static_cast<double>((g.dq.size() + g.dk.size() + g.dv.size()) * sizeof(double)) / 1e6;
    } else {
      const ForwardResult r = forward(p, in, Algorithm::Fa2, bench_tiles(), opt);
      outputs_mb = static_cast<double>((r.o.size() + r.lse.size()) * sizeof(double)) / 1e6;
    }
    peak_mb = static_cast<double>(peak_rss_bytes() - before) / 1e6;
  });
  state.SetLabel(backward_pass ? "tiled backward fp32" : "tiled-fa2 forward fp32");
  state.counters["peak_MB"] = peak_mb;
  state.counters["outputs_MB"] = outputs_mb;
  state.counters["workspace_MB"] = peak_mb - outputs_mb;
}

// {algorithm index, seqlen, head dim, fp64} for `algorithms` algorithms.
template <int64_t algorithms>
void grid_args(benchmark::internal::Benchmark* b) {
  for (int64_t algo = 0; algo < algorithms; ++algo)
    for (int64_t n : {1024, 4096})
      for (int64_t d : {64, 128})
        for (int64_t fp64 : {0, 1}) b->Args({algo, n, d, fp64});
}

BENCHMARK(BM_Forward)
    ->Apply(grid_args<5>)
    ->ArgNames({"algo", "N", "d", "fp64"})
    ->Unit(benchmark::kMillisecond)
    ->MinTime(0.5)
    ->UseRealTime();
BENCHMARK(BM_Backward)
    ->Apply(grid_args<2>)
    ->ArgNames({"algo", "N", "d", "fp64"})
    ->Unit(benchmark::kMillisecond)
    ->MinTime(0.5)
    ->UseRealTime();
BENCHMARK(BM_PythonBaseline)
    ->ArgName("widen")
    ->Arg(0)
    ->Arg(1)
    ->Iterations(3)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_TiledMemory)
    ->Args({0, 16384})
    ->Args({1, 16384})
    ->ArgNames({"bwd", "N"})
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
