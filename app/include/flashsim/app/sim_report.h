#pragma once
// `sim predict` and `sim sweep` as functions: what they compute and their JSON, shared by the command line and
// the Python package (flashsim.sim), so both answer the same question with the same bytes.
#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "flashsim/sim/model.h"
#include "flashsim/sim/sweep.h"

namespace flashsim::app {

struct PredictRequest {
  AttentionProblem problem;
  uint64_t seed = 0;  // of the block mask the schedule reads
  // The tile: `given` is the caller's config; a split-KV / paged-cache problem runs FA2's split-KV tile with the
  // fields the caller set replaced (apply_given(base)).
  TileConfig given;
  std::function<TileConfig(const TileConfig& base)> apply_given;
  std::string hw, pass = "both", algorithm = "fa2";  // pass: fwd, bwd or both
  std::vector<std::string> kernels;                  // kernel models by name instead of an algorithm's
  bool executed = false;                             // the full schedule instead of the closed form
  int64_t max_memory_bytes = 0;                      // for executed
};

struct PredictReport {
  AttentionProblem problem;
  TileConfig tile;
  sim::HardwareProfile hw;
  std::vector<sim::KernelPrediction> kernels;
  std::string config;  // the tile as the report shows it
  std::string note;    // why a pass was left out
  std::string misfit;  // the first kernel that does not fit, and why
  bool split = false, masked = false, fits = true;
  int64_t tiles = 0, skipped = 0;  // block-mask tiles computed and skipped
};

// Throws InputError for an unsupported problem / algorithm / kernel name.
PredictReport run_predict(const PredictRequest& r);
nlohmann::json to_json(const PredictReport& r);

// The sweep of a problem: FA2's split-KV kernel at each split count for a paged-cache problem, else every
// legal tile config ranked.
struct SweepReport {
  AttentionProblem problem;
  sim::HardwareProfile hw;
  Algorithm algorithm = Algorithm::Fa2;
  Pass pass = Pass::Forward;
  bool split = false;
  sim::SplitSweepResult splits;  // split
  sim::SweepResult ranked;       // !split
  double lower_bound_dram = 0;   // FlashAttention's DRAM lower bound (!split)
};
SweepReport run_sweep(const AttentionProblem& p, uint64_t seed, const std::string& hw,
                      const std::string& algorithm, const std::string& pass,
                      const std::function<void(size_t, size_t)>& progress = {});
// top: the ranked rows shown (0: all).
nlohmann::json to_json(const SweepReport& r, int top);

// The passes a sweep's --pass names: fwd, bwd, or both (fwd then bwd; a paged-cache problem has its forward only,
// the split-KV kernel, and `note` says so). InputError for another name.
std::vector<std::string> sweep_passes(const AttentionProblem& p, const std::string& pass, std::string& note);
// Several passes' reports: one pass as to_json(r, top), several as {"fwd": ..., "bwd": ...}.
// rejected: each dense pass also lists the configs that do not fit ("rejected": config, tile, reason).
nlohmann::json to_json(const std::vector<SweepReport>& reports, int top, bool rejected = false);

}  // namespace flashsim::app
