#pragma once
// `sim tune`: for every (head dim, dtype, features, sequence length) entry of a grid, every tile config of a
// kernel that fits the GPU ranked by the model's predicted time, and the best one with the reason: the launch
// table gpu/ reads (fa2's launch_table.h) is generated from it. And the check of such a ranking against a
// measured autotune (flashsim-gpu autotune's CSV).
#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "flashsim/sim/model.h"
#include "flashsim/sim/sweep.h"

namespace flashsim::sim {

// fa2-v1's forward and backward; fa3-v1's forward (its backward has one tile: nothing to rank).
enum class TuneKernel { Fa2Fwd, Fa2Bwd, Fa3Fwd };
std::string_view tune_kernel_name(TuneKernel k);   // "fa2-fwd", "fa2-bwd", "fa3-fwd"
TuneKernel parse_tune_kernel(std::string_view s);  // InputError("kernel") naming the choices
// The features a kernel's entries combine by default (feature_combinations' names): fa2's causal and bias; fa3-fwd's
// causal (fa3-v1 has no bias).
std::vector<std::string> default_tune_features(TuneKernel k);

// Which configs a kernel can run: the instances its version is compiled for (fa2's instances.h, fa3's), or
// every config of sweep_space (what an fa2 kernel could be built for; fa3-fwd: its instances either way).
enum class TuneSpace { Instances, All };

// A feature set of an entry: the problem's causal mask and its score-pipeline features. bias: a [B, H, Sq, Sk]
// bias (the backward computes its gradient, dbias); mask: a [B, H, Sq, Sk] boolean mask; softcap 30; alibi.
struct TuneFeatures {
  bool causal = false, bias = false, mask = false, softcap = false, alibi = false;
  std::string name() const;                                           // "plain", "causal", "causal+bias", ...
  bool pipeline() const { return bias || mask || softcap || alibi; }  // fa2-v1's score-pipeline kernel
};
// "plain", or feature names joined by '+' ("causal+bias"): InputError("features") for an unknown name.
TuneFeatures parse_tune_features(std::string_view s);
// Every combination of the listed features ("causal", "bias", "dbias" (= bias), "mask", "softcap", "alibi"):
// 2^n sets, the plain one first. InputError("features") for an unknown name.
std::vector<TuneFeatures> feature_combinations(const std::vector<std::string>& names);

struct TuneRequest {
  TuneKernel kernel = TuneKernel::Fa2Fwd;
  std::vector<int64_t> head_dims = {64, 96, 128, 256};
  std::vector<DType> dtypes = {DType::BF16, DType::F16};
  std::vector<TuneFeatures> features = feature_combinations(default_tune_features(TuneKernel::Fa2Fwd));
  std::vector<int64_t> seqlens = {1024, 4096, 16384};
  TuneSpace space = TuneSpace::Instances;
  // FlashAttention's benchmark convention: batch x seqlen = tokens, heads x head dim = width.
  int64_t tokens = 16384, width = 2048;
  // The compiled kernels' registers (kernel_resources.h) for the Instances space: this CSV, or, when empty, the
  // built-in table of the profile's kernel_arch.
  std::string resources_file;
};
// The resources tune uses for a request on hw (empty for the All space: its configs are not compiled).
KernelResources tune_resources(const TuneRequest& r, const HardwareProfile& hw);

// The problem of an entry: batch = max(1, tokens / seqlen), heads = max(1, width / head_dim), seqlen_q =
// seqlen_k = seqlen, the features applied.
AttentionProblem tune_problem(const TuneRequest& r, int64_t head_dim, DType dtype, const TuneFeatures& f,
                              int64_t seqlen);
// The same for a given batch and head count (flashsim-gpu autotune times exactly these problems).
AttentionProblem tune_problem(int64_t batch, int64_t heads, int64_t head_dim, DType dtype,
                              const TuneFeatures& f, int64_t seqlen);
// The configs of the space for a head dim (forward: Br, Bc, warps, stages; backward: bwd Br, Bc, warps).
// fa3-fwd: fa3-v1's forward instances (Br, Bc, 12 warps, stages), the hand-kept one first.
std::vector<TileConfig> tune_space(TuneKernel k, TuneSpace s, int64_t head_dim);

// The model's resolution: below it, which of two configs is faster is no longer reliably predicted (every pair of
// configs of an entry, predicted against the H100 timings: calibration fa2.tune_resolution). The generated
// launch table keeps the hand-kept
// config (fa2's hand_table.h) unless the model's best beats it by this much.
inline constexpr double kTuneResolution = 0.05;

using TuneRow = SweepRow;  // a config's prediction, as sim sweep ranks it
struct TuneEntry {
  TuneKernel kernel = TuneKernel::Fa2Fwd;
  int64_t head_dim = 0;
  DType dtype = DType::BF16;
  TuneFeatures features;
  int64_t seqlen = 0;
  AttentionProblem problem;
  int64_t configs = 0;          // tried
  std::vector<TuneRow> ranked;  // those that fit, fastest first (ties: sweep's ranks_before)
  int hand = -1;  // the hand-kept config's index in ranked (-1: it does not fit or is not tried)
  // The launch table's config: ranked[0], or the hand-kept one when ranked[0] is predicted faster than it by
  // less than kTuneResolution. Requires a non-empty ranking.
  const TuneRow& table_pick() const;
  bool keeps_hand() const;     // table_pick is the hand-kept config though another ranks first
  std::string reason() const;  // the table's config and why: time, bound, occupancy, bytes, runner-up margin
};
struct TuneResult {
  TuneRequest request;
  HardwareProfile hw;
  std::vector<TuneEntry> entries;
};

// progress(done, total) after each entry.
TuneResult tune(const TuneRequest& r, const HardwareProfile& hw,
                const std::function<void(size_t, size_t)>& progress = {});

// A config as tune shows it: "Br128 Bc64 w4 st2" (forward), "Br64 Bc128 w4" (backward).
std::string tune_config_name(TuneKernel k, const TileConfig& c);

nlohmann::json to_json(const TuneResult& r, int top);
// The C++ launch table (fa2's launch_table.h's part for this kernel): one entry per (head dim, dtype,
// causal, score pipeline, seqlen) with its reason as a comment; fa3-fwd: fa3's launch_table.h's entries (head
// dim, dtype, causal, seqlen, Br, Bc, stages).
std::string launch_table_entries(const TuneResult& r);

// ---- The check against a measured autotune (flashsim-gpu autotune --out FILE.csv).
struct MeasuredRow {
  TuneKernel kernel = TuneKernel::Fa2Fwd;
  int64_t head_dim = 0, seqlen = 0, batch = 0, heads = 0;
  DType dtype = DType::BF16;
  TuneFeatures features;
  TileConfig config;
  double ms = 0;
  bool hand = false;   // the config the hand-kept launch table picked
  bool table = false;  // the config the launch table gpu/ was built with picked (the generated one)
};
// Reads the autotune CSV (its header names the columns); skipped rows are left out. InputError naming the line.
std::vector<MeasuredRow> read_autotune_csv(const std::string& path);

struct TuneCheckGroup {
  TuneKernel kernel = TuneKernel::Fa2Fwd;
  int64_t head_dim = 0;
  DType dtype = DType::BF16;
  int entries = 0;
  double spearman_pooled = 0;  // over every (entry, config) of the group
  double spearman_mean = 0;    // the mean over entries of the within-entry rank correlation
  double spearman_min = 0;
  int pick_within_5 = 0,
      pick_within_10 = 0;       // entries whose predicted best is within 5% / 10% of the fastest
  double worst_pick_ratio = 1;  // measured time of the pick / the fastest, the worst entry
  int hand_entries = 0;         // entries with a measured hand-picked config
  double worst_vs_hand = 0;     // measured time of the pick / the hand pick's, the worst entry
};
struct TuneCheck {
  std::vector<TuneCheckGroup> groups;
  int entries = 0, within_5 = 0, within_10 = 0, hand_entries = 0, not_slower_than_hand = 0;
  // The table tune generates from this model (table_pick) against the hand-kept config, both measured in the file.
  int rule_not_slower_than_hand = 0;
  int rule_within_5 = 0, rule_within_10 = 0;  // the table's pick within 5% / 10% of the measured best
  double rule_worst_pick_ratio = 1;
  double rule_vs_hand_geomean = 0, rule_vs_hand_worst = 0;
  // The launch table the timed binary was built with against the hand-kept one, measured in the same run
  // (entries with both marked): table / hand time per entry.
  int table_entries = 0, table_not_slower_than_hand = 0;
  double table_vs_hand_geomean = 0, table_vs_hand_worst = 0;
};
// Predicts every measured (entry, config) on hw and compares the rankings. compiled: the registers of the
// binary that was timed (KernelResources::builtin(hw.kernel_arch) for the current build).
TuneCheck check_tune(const std::vector<MeasuredRow>& rows, const HardwareProfile& hw,
                     const KernelResources& compiled);
nlohmann::json to_json(const TuneCheck& c);

// Spearman's rank correlation (average ranks for ties); 0 with fewer than 2 values.
double spearman(const std::vector<double>& x, const std::vector<double>& y);

}  // namespace flashsim::sim
