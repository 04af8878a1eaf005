// flashsim golden generate | merge | list | check | verify | candidate: golden suites for kernel authors.
#include <fmt/format.h>

#include <cmath>
#include <filesystem>

#include "commands.h"
#include "flashsim/app/problem_flags.h"
#include "flashsim/app/progress_bar.h"
#include "flashsim/error.h"
#include "flashsim/golden/candidate.h"
#include "flashsim/golden/generate.h"
#include "flashsim/golden/report.h"
#include "flashsim/golden/verify.h"

namespace flashsim::cli {

using app::MemoryFlag;
using app::ProgressBar;
using app::TileFlags;

namespace fs = std::filesystem;

namespace {

void add_generate(CLI::App* golden) {
  auto* cmd =
      golden->add_subcommand("generate", "Generate a golden suite (or one shard of it) into a folder");
  struct State {
    std::string suite, out, shard = "0/1";
    int threads = 0;
    bool force = false;
    MemoryFlag memory;
  };
  auto st = std::make_shared<State>();
  cmd->add_option(
         "--suite", st->suite,
         "Built-in suite name (smoke, default, long, decode, sparse, norm) or a suite spec JSON file")
      ->required();
  cmd->add_option("--out", st->out, "Output folder (written to a temporary folder, renamed when complete)")
      ->required();
  cmd->add_option("--threads", st->threads,
                  "OpenMP threads (0: all cores); files are identical for any count");
  cmd->add_option("--shard", st->shard,
                  "I/N: generate every N-th case starting at I (merge with `golden merge`)")
      ->capture_default_str();
  cmd->add_flag("--force", st->force, "Replace the output folder if it exists");
  st->memory.add_to(cmd);
  cmd->callback([st] {
    const golden::SuiteSpec spec = golden::load_suite_spec(st->suite);
    golden::GenerateOptions opt;
    opt.run.threads = st->threads;
    opt.run.max_memory_bytes = st->memory.bytes();
    opt.shard = golden::parse_shard(st->shard);
    opt.force = st->force;
    opt.progress = ProgressBar("generate " + spec.name);
    const auto t0 = std::chrono::steady_clock::now();
    const golden::Manifest m = golden::generate_suite(spec, st->out, opt);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    fmt::print("wrote {} of the {} cases of suite '{}' v{} to {}{} in {:.1f} s\n", m.cases.size(),
               m.case_count, m.suite, m.version, st->out,
               m.shard ? fmt::format(" (shard {})", st->shard) : "", s);
  });
}

void add_merge(CLI::App* golden) {
  auto* cmd = golden->add_subcommand("merge", "Assemble shard folders into one suite folder");
  struct State {
    std::string out;
    std::vector<std::string> shards;
    bool force = false;
  };
  auto st = std::make_shared<State>();
  cmd->add_option("out", st->out, "Output folder")->required();
  cmd->add_option("shards", st->shards, "Shard folders written by `golden generate --shard I/N`")->required();
  cmd->add_flag("--force", st->force, "Replace the output folder if it exists");
  cmd->callback([st] {
    std::vector<fs::path> shards(st->shards.begin(), st->shards.end());
    const golden::Manifest m = golden::merge_shards(shards, st->out, st->force);
    fmt::print("merged {} shards: {} cases of suite '{}' v{} in {}\n", shards.size(), m.cases.size(), m.suite,
               m.version, st->out);
  });
}

void add_list(CLI::App* golden) {
  auto* cmd = golden->add_subcommand("list", "List a suite folder's cases");
  auto dir = std::make_shared<std::string>();
  cmd->add_option("dir", *dir, "Suite folder")->required();
  cmd->callback([dir] {
    const golden::Manifest m = golden::read_manifest(*dir);
    fmt::print(
        "suite {} v{}: {} cases{}  ({})\n", m.suite, m.version, m.cases.size(),
        m.shard ? fmt::format(" (shard {}/{} of {})", m.shard->index, m.shard->count, m.case_count) : "",
        m.generator);
    if (!m.description.empty()) fmt::print("{}\n", m.description);
    fmt::print("\n{:>5}  {:<44} {:>10}  {}\n", "index", "case", "bytes", "description");
    std::error_code ec;
    for (const auto& c : m.cases) {
      const auto size = fs::file_size(fs::path(*dir) / c.file, ec);
      fmt::print("{:>5}  {:<44} {:>10}  {}\n", c.index, c.name,
                 ec ? std::string("missing") : std::to_string(size), c.description);
    }
  });
}

void add_check(CLI::App* golden) {
  auto* cmd = golden->add_subcommand(
      "check", "Check a suite folder: every sha256, and the exact outputs against the current reference");
  struct State {
    std::string dir;
    int threads = 0;
    MemoryFlag memory;
  };
  auto st = std::make_shared<State>();
  cmd->add_option("dir", st->dir, "Suite folder")->required();
  cmd->add_option("--threads", st->threads, "OpenMP threads (0: all cores)");
  st->memory.add_to(cmd);
  cmd->callback([st] {
    ref::RunOptions run;
    run.threads = st->threads;
    run.max_memory_bytes = st->memory.bytes();
    const auto checked = golden::check_suite(st->dir, run, ProgressBar("check"));
    int bad = 0;
    double worst = 0;
    for (const auto& c : checked) {
      worst = std::max(worst, c.worst_rel);
      if (c.ok()) continue;
      ++bad;
      fmt::print("FAIL {}: {}\n", c.name,
                 !c.problem.empty() ? c.problem
                                    : fmt::format("{} differs from the current reference by {:.2e} relative",
                                                  c.worst_output, c.worst_rel));
    }
    fmt::print(
        "{} cases: {} ok, {} failed (sha256 and recomputed exact outputs; largest relative difference "
        "{:.2e}, limit {:.0e})\n",
        checked.size(), checked.size() - bad, bad, worst, golden::kCheckTolerance);
    set_exit_code(bad ? 1 : 0);
  });
}

std::vector<std::string> split_commas(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= s.size()) {
    const size_t comma = s.find(',', start);
    const std::string part = s.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (!part.empty()) out.push_back(part);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

void add_verify(CLI::App* golden) {
  auto* cmd = golden->add_subcommand(
      "verify",
      "Check a candidate's outputs against a golden suite (exit 0 all pass, 1 any fails, 2 bad input)");
  struct State {
    std::string golden, candidate, as, outputs;
    std::vector<std::string> cases;
    bool json = false, quiet = false;
    MemoryFlag memory;
  };
  auto st = std::make_shared<State>();
  cmd->add_option("--golden", st->golden, "Golden suite folder")->required();
  cmd->add_option(
         "--candidate", st->candidate,
         "Folder of candidate safetensors files named as the golden cases, holding o lse dq dk dv "
         "(dbias, dsinks) in any float dtype (a norm case: y h rstd mean dx dweight dbias dresidual)")
      ->required();
  cmd->add_option("--as", st->as,
                  "The dtype the candidate computed in (picks the tolerance; default: the candidate file's "
                  "__metadata__[\"flashsim.compute_dtype\"], else the case's input dtype)");
  cmd->add_option("--outputs", st->outputs,
                  "Comma-separated outputs to check (default: all, e.g. o,lse for a "
                  "forward-only kernel; cases with none of them are skipped)");
  cmd->add_option("--case", st->cases, "Only cases whose name matches this glob (repeatable)");
  cmd->add_flag("--json", st->json, "Print the report as JSON");
  cmd->add_flag("--quiet", st->quiet, "Print only failing outputs and the summary");
  st->memory.add_to(cmd);
  cmd->callback([st] {
    golden::VerifyOptions opt;
    if (!st->as.empty()) opt.compute = parse_dtype(st->as);
    opt.outputs = split_commas(st->outputs);
    opt.cases = st->cases;
    opt.max_memory_bytes = st->memory.bytes();
    const golden::VerifyReport r = golden::verify_suite(st->golden, st->candidate, opt);
    if (st->json)
      fmt::print("{}\n", golden::to_json(r).dump(2));
    else
      fmt::print("{}", golden::format_report(r, st->quiet));
    set_exit_code(r.pass() ? 0 : 1);
  });
}

void add_candidate(CLI::App* golden) {
  auto* cmd = golden->add_subcommand(
      "candidate",
      "Write the reference's emulated kernel pipeline as a candidate folder (a real candidate for `verify`)");
  struct State {
    std::string golden, out, dtype = "bf16", forward = "two-pass", backward = "naive";
    int threads = 0;
    bool force = false;
    MemoryFlag memory;
    TileFlags tile;
  };
  auto st = std::make_shared<State>();
  cmd->add_option("--golden", st->golden, "Golden suite folder")->required();
  cmd->add_option("--out", st->out, "Candidate folder to write")->required();
  cmd->add_option("--dtype", st->dtype, "Compute dtype of the emulated pipeline (inputs rounded to it)")
      ->capture_default_str();
  cmd->add_option("--forward", st->forward,
                  "Forward algorithm: naive, three-pass, two-pass, fa1, fa2 (attention cases; a norm case's "
                  "candidate is its emulated pipeline in a kernel's tree summation order)")
      ->capture_default_str();
  cmd->add_option("--backward", st->backward, "Backward algorithm: naive or fa2")->capture_default_str();
  cmd->add_option("--threads", st->threads, "OpenMP threads (0: all cores)");
  cmd->add_flag("--force", st->force, "Replace the output folder if it exists");
  st->memory.add_to(cmd);
  st->tile.add_to(cmd);
  cmd->callback([st] {
    golden::CandidateOptions opt;
    opt.compute = parse_dtype(st->dtype);
    opt.forward = parse_algorithm(st->forward, "forward");
    if (st->backward != "naive" && st->backward != "fa2")  // the algorithms with a backward (has_backward)
      throw InputError("backward", fmt::format("'{}' is not naive or fa2", st->backward));
    opt.backward = parse_algorithm(st->backward, "backward");
    opt.tile = st->tile.config();
    opt.run.threads = st->threads;
    opt.run.max_memory_bytes = st->memory.bytes();
    opt.force = st->force;
    opt.progress = ProgressBar("candidate");
    const int64_t n = golden::write_reference_candidate(st->golden, st->out, opt);
    fmt::print("wrote {} candidate files ({} forward, {} backward, emulated {}) to {}\n", n, st->forward,
               st->backward, st->dtype, st->out);
  });
}

}  // namespace

void add_golden_commands(CLI::App& app) {
  auto* golden =
      app.add_subcommand("golden", "Golden test suites: generate, merge, list, check, verify, candidate");
  golden->require_subcommand(1);
  add_generate(golden);
  add_merge(golden);
  add_list(golden);
  add_check(golden);
  add_verify(golden);
  add_candidate(golden);
}

}  // namespace flashsim::cli
