// flashsim ref: one problem through every reference algorithm, compared with the naive fp64 result.
#include <fmt/format.h>

#include <chrono>
#include <cmath>

#include "commands.h"
#include "flashsim/app/problem_flags.h"
#include "flashsim/ref/attention.h"
#include "ref_table.h"

namespace flashsim::cli {

using app::MemoryFlag;
using app::ProblemFlags;
using app::TileFlags;

namespace {

struct Diff {
  double abs = 0, scale = 0;  // max |a - b| over finite-or-matching elements, max |b|
  bool nonfinite_mismatch = false;
};

Diff max_diff(const std::vector<double>& got, const std::vector<double>& exact) {
  Diff d;
  for (size_t n = 0; n < got.size(); ++n) {
    if (std::isinf(exact[n]) && got[n] == exact[n]) continue;  // both -inf (lse of a fully masked row)
    if (!std::isfinite(got[n])) {
      d.nonfinite_mismatch = true;
      continue;
    }
    d.abs = std::max(d.abs, std::fabs(got[n] - exact[n]));
    d.scale = std::max(d.scale, std::fabs(exact[n]));
  }
  return d;
}

std::string cell(const Diff& d) {
  return d.nonfinite_mismatch ? "NaN/Inf!" : fmt::format("{:.2e}", d.abs);
}

template <class F>
double seconds(F&& f) {
  const auto t0 = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

double print_reference_table(const AttentionProblem& p, uint64_t seed, const TileConfig& tile,
                             const ref::RunOptions& opt, bool backward) {
  using namespace flashsim::ref;
  const AttentionInputs in = make_random_inputs(p, seed);
  RunOptions exact_opt = opt;
  exact_opt.precision = Precision::Exact;
  ForwardResult exact;
  const double t_exact = seconds([&] { exact = forward(p, in, Algorithm::Naive, tile, exact_opt); });
  fmt::print("problem   {}  (seed {})\n", p.describe(), seed);
  fmt::print("tiles     {}\n", tile.describe());
  fmt::print("precision {} (compared with naive fp64: {:.3f} s)\n\n", precision_name(opt.precision), t_exact);
  fmt::print("{:<12} {:>10} {:>10} {:>9} {:>9}\n", "forward", "max|Δo|", "max|Δlse|", "time s", "GFLOP/s");
  double worst = 0;
  auto track = [&](const Diff& d) {
    if (d.nonfinite_mismatch) worst = INFINITY;
    if (d.scale > 0) worst = std::max(worst, d.abs / d.scale);
  };
  ForwardResult tiled_fwd;
  for (auto algo : all_algorithms()) {
    ForwardResult r;
    const double t = seconds([&] { r = forward(p, in, algo, tile, opt); });
    const Diff d_o = max_diff(r.o, exact.o), d_lse = max_diff(r.lse, exact.lse);
    track(d_o);
    track(d_lse);
    fmt::print("{:<12} {:>10} {:>10} {:>9.3f} {:>9.2f}\n", algorithm_name(algo), cell(d_o), cell(d_lse), t,
               p.forward_flops() / t * 1e-9);
    if (algo == Algorithm::Fa2) tiled_fwd = std::move(r);
  }
  if (backward) {
    const Gradients g_exact = ref::backward(p, in, exact, Algorithm::Naive, tile, exact_opt);
    // With sinks a last column: dsinks (the other problems' tables are as before); MLA's dv is "-" (in dk).
    fmt::print("\n{:<12} {:>10} {:>10} {:>10} {:>10} {:>9} {:>9}{}\n", "backward", "max|Δdq|", "max|Δdk|",
               "max|Δdv|", "max|Δdbias|", "time s", "GFLOP/s",
               p.sinks ? fmt::format(" {:>12}", "max|Δdsinks|") : "");
    for (auto algo : {Algorithm::Naive, Algorithm::Fa2}) {
      Gradients g;
      const double t = seconds([&] { g = ref::backward(p, in, tiled_fwd, algo, tile, opt); });
      const Diff dq = max_diff(g.dq, g_exact.dq), dk = max_diff(g.dk, g_exact.dk),
                 dv = max_diff(g.dv, g_exact.dv);
      const Diff db = max_diff(g.dbias, g_exact.dbias), ds = max_diff(g.dsinks, g_exact.dsinks);
      for (const Diff* d : {&dq, &dk, &dv, &db, &ds}) track(*d);
      fmt::print("{:<12} {:>10} {:>10} {:>10} {:>10} {:>9.3f} {:>9.2f}{}\n", algorithm_name(algo), cell(dq),
                 cell(dk), g.dv.empty() ? "-" : cell(dv), g.dbias.empty() ? "-" : cell(db), t,
                 p.backward_flops() / t * 1e-9, p.sinks ? fmt::format(" {:>12}", cell(ds)) : "");
    }
  }
  fmt::print("\nlargest difference relative to the largest exact value: {:.2e}\n", worst);
  return worst;
}

void add_ref_command(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "ref", "Run one problem through every reference algorithm; print agreement and time");
  struct State {
    ProblemFlags problem;
    TileFlags tile;
    std::string precision = "exact";
    int threads = 0;
    bool no_blas = false, no_backward = false;
    MemoryFlag memory;
  };
  auto st = std::make_shared<State>();
  st->problem.add_to(cmd);
  st->tile.add_to(cmd);
  cmd->add_option("--precision", st->precision, "exact (fp64), fp32, or emulated (a GPU kernel's pipeline)")
      ->capture_default_str();
  cmd->add_option("--threads", st->threads, "OpenMP threads (0: all cores)");
  cmd->add_flag("--no-blas", st->no_blas, "Plain loops instead of OpenBLAS for the matrix products");
  cmd->add_flag("--no-backward", st->no_backward, "Forward only");
  st->memory.add_to(cmd);
  cmd->callback([st] {
    ref::RunOptions opt;
    opt.precision = ref::parse_precision(st->precision);
    opt.threads = st->threads;
    opt.use_blas = !st->no_blas;
    opt.max_memory_bytes = st->memory.bytes();
    const AttentionProblem p = st->problem.problem();
    // FP8 inputs are forward only (as FP8 kernels): no backward table
    const double worst =
        print_reference_table(p, st->problem.seed, st->tile.config(), opt, !st->no_backward && !p.fp8());
    set_exit_code(std::isfinite(worst) ? 0 : 1);
  });
}

}  // namespace flashsim::cli
