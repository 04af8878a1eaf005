// flashsim-gpu: our CUDA kernel versions on golden suites. `list` the versions; `check` runs each on every
// case it supports, verified in process (the rule, report and exit codes of `flashsim golden verify`).
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <memory>

#include "flashsim/error.h"
#include "flashsim/golden/report.h"
#include "flashsim/gpu/harness.h"
#include "help_format.h"
#include "problem_flags.h"

namespace {

using namespace flashsim;

void add_list(CLI::App& app) {
  auto* cmd =
      app.add_subcommand("list", "List the kernel versions: name, algorithm, backend, simulator kernels");
  cmd->callback([] {
    std::string why;
    const bool cuda = gpu::cuda_available(&why);
    fmt::print("{:<18} {:<10} {:<5} {}\n", "version", "algorithm", "runs", "what it does");
    for (const auto& v : gpu::kernel_versions()) {
      fmt::print("{:<18} {:<10} {:<5} {}\n", v.name, algorithm_name(v.algorithm),
                 v.backend == gpu::Backend::Cuda ? "cuda" : "host", v.summary);
      if (!v.sim_kernels.empty()) {
        std::string ks;
        for (const auto& k : v.sim_kernels) ks += (ks.empty() ? "" : " ") + k;
        fmt::print("{:<18} simulator kernels: {}\n", "", ks);
      }
    }
    fmt::print("CUDA device: {}\n", cuda ? "available" : "none (" + why + ")");
  });
}

void add_check(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand("check", "Run kernel versions on a golden suite, verified in process");
  struct State {
    std::string golden;
    std::vector<std::string> kernels, cases;
    bool quiet = false;
    cli::TileFlags tile;
    cli::MemoryFlag memory;
  };
  auto st = std::make_shared<State>();
  cmd->add_option("--golden", st->golden, "Golden suite folder (flashsim golden generate)")->required();
  cmd->add_option("--kernel", st->kernels,
                  "Kernel versions (repeatable; default: every version whose backend is here)")
      ->delimiter(',');
  cmd->add_option("--case", st->cases, "Only cases whose name matches this glob (repeatable)");
  cmd->add_flag("--quiet", st->quiet, "Print only failing outputs and the summaries");
  st->tile.add_to(cmd);
  st->memory.add_to(cmd);
  cmd->callback([st, &exit_code] {
    gpu::CheckOptions opt;
    opt.golden = st->golden;
    opt.kernels = st->kernels;
    opt.cases = st->cases;
    opt.config = st->tile.config();
    opt.max_memory_bytes = st->memory.bytes();
    bool pass = true;
    for (const auto& r : gpu::check(opt)) {
      fmt::print("== {} ({}, {}): {} cases run, {} skipped\n", r.version->name,
                 algorithm_name(r.version->algorithm),
                 r.version->backend == gpu::Backend::Cuda ? "cuda" : "host", r.report.cases.size(),
                 r.skipped.size());
      fmt::print("{}", golden::format_report(r.report, st->quiet));
      for (const auto& [name, why] : r.skipped) fmt::print("skipped {}: {}\n", name, why);
      pass = pass && r.report.pass();
    }
    exit_code = pass ? 0 : 1;
  });
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"flashsim-gpu: flashsim's CUDA kernel versions checked against golden suites", "flashsim-gpu"};
  app.formatter(std::make_shared<flashsim::cli::HelpFormatter>());
  app.option_defaults()->always_capture_default();
  app.require_subcommand(1);
  int exit_code = 0;
  add_list(app);
  add_check(app, exit_code);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "flashsim-gpu: error: %s (see --help)\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "flashsim-gpu: error: %s\n", e.what());
    return 2;
  }
  return exit_code;
}
