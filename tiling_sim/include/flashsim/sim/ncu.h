#pragma once
// Nsight Compute CSV reports (`ncu --csv --metrics ...`) and their comparison with the model.
#include <functional>
#include <istream>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "flashsim/sim/model.h"

namespace flashsim::sim {

struct NcuKernel {
  std::string id, name, block, grid;
  std::string compute_capability;         // ncu's "CC" column ("9.0"); empty when the report has none
  std::map<std::string, double> metrics;  // values in base units (bytes, sectors, ns)
  std::map<std::string, std::string> unknown_units;  // metrics whose unit could not be converted: the unit
};

// Parses ncu's CSV: `==PROF==`-style lines skipped; the details page (the default: one row per kernel and
// metric, a unit per row) or the raw page (`--page raw`: one row per kernel, a column per metric, a row of
// units under the header); thousands separators; prefixed units (Kbyte, Mibyte, usecond...) to base units.
// Throws InputError("ncu") on a malformed file.
std::vector<NcuKernel> parse_ncu_csv(std::istream& in);
// One CSV line's fields: quoted fields keep their commas, "" inside quotes is a quote (ncu's and autotune's CSV).
std::vector<std::string> split_csv(const std::string& line);

// Takes the DRAM counters (dram__bytes_read/write) of each kernel from `dram`, a report of the same kernels
// in the same order that collected only them: ncu then needs one pass, while with more metrics it replays
// each kernel, and every kernel after the first one profiled writes about 2.4 MB more
// (calibration h100.ncu_replay_write_bytes). Throws InputError("ncu-dram") when the kernels differ.
std::vector<NcuKernel> with_dram_counters(std::vector<NcuKernel> full, const std::vector<NcuKernel>& dram);

// A kernel recognized by name (a registered model's ncu_names), with the tile config from its template
// arguments; throws InputError("ncu") for template arguments that give no valid config.
struct RecognizedKernel {
  const KernelModel* model = nullptr;
  TileConfig config;
  int64_t head_dim = 0;        // the head dim its name says it was compiled for (0: not said)
  bool pads_head_dim = false;  // it runs smaller head dims padded (NcuName::pads_head_dim)
  std::optional<bool> causal;  // FlashAttention-2's Is_causal template flag, where the name has it
  std::optional<bool> local;   // ... and its Is_local (a sliding window)
};
std::optional<RecognizedKernel> recognize_kernel(const std::string& name);

struct MetricComparison {
  std::string metric;
  double measured = 0, predicted = 0, ratio = 0, tolerance = 0;  // tolerance 0: informational
  // Bytes between L2 and the SMs: ok when |measured - predicted| <= tolerance * predicted.
  // DRAM bytes (interval): ok when lower - floor <= measured <= upper + floor, the range a correct L2 allows
  // (dram_interval.h; predicted inside it); floor (bytes): the DRAM counters' run-to-run spread for this kernel
  // (the profile's ncu_dram_repeatability of its measured DRAM bytes).
  bool interval = false;
  double lower = 0, upper = 0, floor = 0;
  double compulsory = 0;  // DRAM: every byte once (lower, or below it where a schedule raises lower)
  // The verdict in words: "ok", "FAIL", "ok (within the L2's range)", "EXCESS: ..." (above the upper bound:
  // the kernel moves more than any L2 behaviour explains, `suspect` the tensor to look at), "BELOW: ..." (under
  // the compulsory bytes: another problem than the flags say, or a kernel that skips work).
  std::string verdict, suspect;
  bool ok = true;
};
struct KernelComparison {
  std::string name;
  bool recognized = false;
  double replay_write_bytes = 0;  // added to the predicted DRAM writes for ncu's replay (compare_ncu)
  std::vector<MetricComparison> metrics;
};
struct Comparison {
  bool ok = true;
  std::vector<KernelComparison> kernels;
};

// replayed: the report's DRAM counters come from a replayed (multi-pass) ncu run; every kernel after the
// first then gets the profile's ncu_replay_write_bytes added to its predicted DRAM writes. data: the block
// table and block mask of the profiled run (nullptr: those of seed 0). stack_bytes_per_thread: the profiled
// kernels' stack frame (cuobjdump -res-usage's STACK, the largest of them), < 0 unknown (dram_interval.h).
Comparison compare_ncu(const std::vector<NcuKernel>& kernels, const AttentionProblem& p,
                       const HardwareProfile& hw, bool replayed = false, const ProblemData* data = nullptr,
                       double stack_bytes_per_thread = -1);
// Whether ncu collected a report's DRAM counters in a replayed run: some kernel has DRAM counters and a
// metric other than dram__*, lts__* and gpu__time_duration* (on the H100, the DRAM counters alone and with
// the L2 sector counters and the time were collected in one pass; with the L1 and launch metrics, replayed).
bool dram_counters_replayed(const std::vector<NcuKernel>& kernels);

// The problem a report profiled, where it says: the fields whose flag `given` says was not given come from the
// report (batch and heads from the grids, kv heads from a kernel per kv head, the dtype, head dim and
// FlashAttention-2's causal flag from the template arguments, the sequence length from the grid and, within its
// tile, the SM-side byte counts, which also pick a padded head dim and a mask the names do not carry); the given
// ones are kept (compare_ncu checks them). Throws InputError naming the flag the report cannot determine.
struct ProblemFromReport {
  AttentionProblem problem;
  std::vector<std::string> from_report;  // "--batch 4 (the grid)", ...
  std::vector<std::string> assumed;      // fields the report does not show, taken from the flags' defaults
};
ProblemFromReport problem_from_report(const std::vector<NcuKernel>& kernels, const AttentionProblem& flags,
                                      const std::function<bool(const std::string&)>& given);
nlohmann::json to_json(const Comparison& c);

}  // namespace flashsim::sim
