#include "flashsim/app/sim_report.h"

#include <fmt/format.h>

#include <algorithm>

#include "flashsim/error.h"
#include "flashsim/sim/problem_data.h"

namespace flashsim::app {

PredictReport run_predict(const PredictRequest& r) {
  PredictReport out;
  const AttentionProblem& p = r.problem;
  out.problem = p;
  // FA2's split-KV kernel runs at its own tile; the fields the caller set replace its fields.
  out.split = p.kv_cache() || r.given.num_splits > 1;
  const TileConfig c = out.split ? r.apply_given(sim::splitkv_tile(p)) : r.given;
  out.tile = c;
  out.hw = sim::load_profile(r.hw);
  const Algorithm algo = parse_algorithm(r.algorithm);
  const auto data = sim::problem_data(p, r.seed);
  std::vector<const sim::KernelModel*> models;
  if (!r.kernels.empty()) {
    for (const auto& name : r.kernels) models.push_back(&sim::kernel_model(name));
  } else {
    if (r.pass != "fwd" && r.pass != "bwd" && r.pass != "both")
      throw InputError("pass", fmt::format("'{}': expected fwd, bwd or both", r.pass));
    for (const Pass pass : {Pass::Forward, Pass::Backward}) {
      if (r.pass != "both" && r.pass != pass_name(pass)) continue;
      if (pass == Pass::Backward && r.pass == "both" && out.split) {
        out.note = "no backward: the split-KV / paged-cache forward is an inference kernel (--pass fwd)";
        continue;
      }
      if (pass == Pass::Backward && r.pass == "both" && p.fp8()) {
        out.note = "no backward: FP8 inputs are forward only (FP8 attention kernels have none)";
        continue;
      }
      sim::check_supported(p, c, algo, pass);
      for (const auto* m : sim::kernels_for(p, c, algo, pass)) models.push_back(m);
    }
  }
  for (const auto* m : models) sim::check_tile(*m, c);
  out.kernels = sim::predict(p, c, out.hw, models, r.executed, r.max_memory_bytes, &data);
  // A one-pass prediction (split-KV is forward-only) shows that pass's knobs; both passes every knob (recorded).
  out.config = !r.kernels.empty()                        ? c.describe()
               : out.split || r.pass == "fwd" || p.fp8() ? sim::describe_pass(c, algo, Pass::Forward)
               : r.pass == "bwd"                         ? sim::describe_pass(c, algo, Pass::Backward)
                                                         : c.describe(algo);
  // A warp-specialized model (fa3-v1's) runs its own tile where the given one is not of its shape: say which.
  if (!r.kernels.empty())
    for (const auto& k : out.kernels)
      if (const auto& w = k.counts.launch.ws; w.block_q > 0)
        out.config += fmt::format("; {} runs Br{} Bc{} st{}", k.name, w.block_q, w.block_k, w.stages);
  for (const auto& k : out.kernels) {
    if (!k.occ.fits && out.misfit.empty())
      out.misfit = fmt::format("{} does not fit: {}", k.name, k.occ.reason);
    out.fits = out.fits && k.occ.fits;
    out.tiles += k.counts.tiles;
    out.skipped += k.counts.skipped_tiles;
  }
  out.masked = p.block_mask != BroadcastShape::None;
  return out;
}

nlohmann::json to_json(const PredictReport& r) {
  const AttentionProblem& p = r.problem;
  nlohmann::json j = {
      {"problem", p.describe()},
      {"config", r.config},
      {"hw", r.hw.name},
      {"fits", r.fits},
      {"time_note",
       "time_s is an estimate: max(DRAM, L2, MMA + exp + vector work) with load imbalance; MMA "
       "at the profile's measured FA2 rate where it has one (time_calibrated), else at the "
       "tensor peak (a lower bound)"}};
  // Keys of the new features only where they are in use (dense outputs keep their bytes).
  if (r.split)
    j["split_kv"] = {{"num_splits", r.tile.num_splits},
                     {"packed_query_heads", p.group_size()},
                     {"heuristic_num_splits", sim::splitkv_heuristic(p, r.tile, r.hw)},
                     {"kv_cache_bytes", sim::kv_cache_bytes(p)}};
  if (r.masked) j["block_mask"] = {{"tiles_computed", r.tiles}, {"tiles_skipped", r.skipped}};
  if (!r.note.empty()) j["note"] = r.note;
  for (const auto& k : r.kernels) j["kernels"].push_back(sim::to_json(k));
  return j;
}

SweepReport run_sweep(const AttentionProblem& p, uint64_t seed, const std::string& hw,
                      const std::string& algorithm, const std::string& pass,
                      const std::function<void(size_t, size_t)>& progress) {
  SweepReport r;
  r.problem = p;
  r.hw = sim::load_profile(hw);
  if (pass != "fwd" && pass != "bwd")
    throw InputError("pass", fmt::format("'{}': expected fwd or bwd", pass));
  r.pass = pass == "bwd" ? Pass::Backward : Pass::Forward;
  r.algorithm = parse_algorithm(algorithm);
  const auto data = sim::problem_data(p, seed);
  r.split = p.kv_cache();
  if (r.split) {  // a decode problem: FA2's split-KV kernel at each split count
    sim::check_supported(p, sim::splitkv_tile(p), r.algorithm, r.pass);
    r.splits = sim::sweep_splits(p, r.hw, &data);
    return r;
  }
  sim::check_supported(p, TileConfig{}, r.algorithm, r.pass);
  r.ranked = sim::sweep(p, r.hw, r.algorithm, r.pass, progress, &data);
  r.lower_bound_dram = sim::dram_lower_bound(p, r.pass);
  return r;
}

nlohmann::json to_json(const SweepReport& r, int top) {
  const AttentionProblem& p = r.problem;
  if (r.split) {
    const auto& s = r.splits;
    nlohmann::json j = {{"problem", p.describe()},
                        {"hw", r.hw.name},
                        {"kernels", {"fwd_splitkv", "fwd_splitkv_combine"}},
                        {"tile", sim::describe_pass(s.tile, Algorithm::Fa2, Pass::Forward)},
                        {"packed_query_heads", p.group_size()},
                        {"heuristic_num_splits", s.heuristic},
                        {"kv_cache_bytes", s.kv_bytes},
                        {"dram_bytes_per_s", s.dram_rate},
                        {"dram_floor_s", s.floor_s},
                        {"time_is_estimate", true}};
    j["rows"] = nlohmann::json::array();
    for (const auto& x : s.rows)
      j["rows"].push_back({{"num_splits", x.num_splits},
                           {"heuristic", x.heuristic},
                           {"fits", x.fits},
                           {"ctas", x.ctas},
                           {"time_s", x.time_s},
                           {"split_time_s", x.split_time_s},
                           {"combine_time_s", x.combine_time_s},
                           {"load_bytes", x.load_bytes},
                           {"dram_bytes", x.dram_bytes},
                           {"t_dram_s", x.t_dram_s},
                           {"t_compute_s", x.t_compute_s},
                           {"bound", x.bound},
                           {"memory_bound", x.memory_bound}});
    return j;
  }
  const auto& rows = r.ranked.ranked;
  const size_t n = top > 0 ? std::min(rows.size(), static_cast<size_t>(top)) : rows.size();
  const bool bwd = r.pass == Pass::Backward;
  nlohmann::json j = {
      {"problem", p.describe()},
      {"hw", r.hw.name},
      {"configs", r.ranked.configs},
      {"legal", rows.size()},
      {"lower_bound_dram_bytes", r.lower_bound_dram},
      {"time_is_estimate", true},
      {"time_calibrated", (bwd ? r.hw.achieved_mma_flops_bwd : r.hw.achieved_mma_flops_fwd) > 0}};
  j["ranked"] = nlohmann::json::array();
  for (size_t i = 0; i < n; ++i)
    j["ranked"].push_back({{"config", sim::describe_pass(rows[i].config, r.algorithm, r.pass)},
                           {"tile", sim::pass_knobs_json(rows[i].config, r.pass)},
                           {"time_s", rows[i].time_s},
                           {"load_bytes", rows[i].load_bytes},
                           {"dram_bytes", rows[i].dram_bytes},
                           {"smem_bytes", rows[i].smem_bytes},
                           {"ctas_per_sm", rows[i].ctas_per_sm},
                           {"bound", rows[i].bound}});
  return j;
}

std::vector<std::string> sweep_passes(const AttentionProblem& p, const std::string& pass, std::string& note) {
  if (pass == "fwd" || pass == "bwd") return {pass};
  if (pass != "both") throw InputError("pass", fmt::format("'{}': expected fwd, bwd or both", pass));
  if (p.kv_cache()) {
    note = "no backward: the split-KV / paged-cache forward is an inference kernel (--pass fwd)";
    return {"fwd"};
  }
  if (p.fp8()) {
    note = "no backward: FP8 inputs are forward only (FP8 attention kernels have none)";
    return {"fwd"};
  }
  return {"fwd", "bwd"};
}

nlohmann::json to_json(const std::vector<SweepReport>& reports, int top, bool rejected) {
  const auto one = [&](const SweepReport& r) {
    nlohmann::json j = to_json(r, top);
    if (rejected && !r.split) {
      j["rejected"] = nlohmann::json::array();
      for (const auto& row : r.ranked.rejected)
        j["rejected"].push_back({{"config", sim::describe_pass(row.config, r.algorithm, r.pass)},
                                 {"tile", sim::pass_knobs_json(row.config, r.pass)},
                                 {"reason", row.misfit}});
    }
    return j;
  };
  if (reports.size() == 1) return one(reports.front());
  nlohmann::json j = nlohmann::json::object();
  for (const auto& r : reports) j[std::string(pass_name(r.pass))] = one(r);
  return j;
}

}  // namespace flashsim::app
