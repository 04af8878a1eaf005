#pragma once
// Generating, merging and checking golden suite folders.
#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>

#include "flashsim/golden/manifest.h"
#include "flashsim/golden/suite.h"
#include "flashsim/ref/options.h"

namespace flashsim::golden {

struct Progress {
  int64_t done = 0, total = 0;           // cases
  double work_done = 0, work_total = 0;  // estimated FLOPs, for the ETA
  std::string current;                   // the case being generated
};
using ProgressFn = std::function<void(const Progress&)>;

struct GenerateOptions {
  ref::RunOptions run;  // threads, memory limit (precision is set per output)
  Shard shard;          // 0/1: the whole suite
  bool force = false;   // replace an existing output folder
  ProgressFn progress;  // called before each case and at the end
};

// The FLOPs one case's generation costs (exact + emulated runs, forward and backward): for the ETA.
double generation_work(const GoldenCase& c);

// Bytes one case's generation holds at once, beyond the reference's own workspace (which it guards itself):
// inputs as doubles and their rounded copy, exact and emulated outputs, the file in memory and serialized.
int64_t generation_memory_bytes(const GoldenCase& c);

// Writes the suite (or one shard of it) into out: into a temporary folder beside it, renamed when complete.
// Throws InputError when out exists and !force, MemoryLimitError when a case would need more than the memory
// limit (opt.run.max_memory_bytes, default 80% of available); nothing is written then.
Manifest generate_suite(const SuiteSpec& spec, const std::filesystem::path& out, const GenerateOptions& opt);

// Assembles shard folders of one suite into out (byte-identical to a suite generated in one go). Checks that
// they come from the same spec and generator, that every case is present exactly once and every sha256.
Manifest merge_shards(const std::vector<std::filesystem::path>& shards, const std::filesystem::path& out,
                      bool force);

// golden check: every file's sha256 against the manifest, and the exact outputs recomputed by the current
// reference from the stored inputs (relative difference <= kCheckTolerance of each output's magnitude).
constexpr double kCheckTolerance = 1e-12;  // the reference's own algorithms agree to ~1e-15 (tests/)
struct CheckedCase {
  std::string name;
  bool sha_ok = false;
  double worst_rel = 0;  // max |recomputed - stored| / max|stored| over outputs
  std::string worst_output;
  std::string problem;  // empty when ok
  bool ok() const { return sha_ok && problem.empty() && worst_rel <= kCheckTolerance; }
};
std::vector<CheckedCase> check_suite(const std::filesystem::path& dir, const ref::RunOptions& run,
                                     const ProgressFn& progress = {});

}  // namespace flashsim::golden
