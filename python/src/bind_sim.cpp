// flashsim.sim's native half: `sim predict` and `sim sweep` (flashsim/app/sim_report.h, the command line's own
// code) on a problem given as case JSON and a tile given as a dict of TileConfig fields; results as the
// commands' JSON.
#include <fmt/format.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <functional>
#include <map>

#include "bindings.h"
#include "flashsim/app/sim_report.h"
#include "flashsim/error.h"
#include "flashsim/golden/suite.h"

namespace flashsim::py {

namespace {

using Setter = std::function<void(TileConfig&, nb::handle)>;

template <typename T, typename F>
Setter field(F TileConfig::*member) {
  return [member](TileConfig& c, nb::handle v) { c.*member = static_cast<F>(nb::cast<T>(v)); };
}

const std::map<std::string, Setter>& tile_fields() {
  static const std::map<std::string, Setter> fields = {
      {"block_q", field<int64_t>(&TileConfig::block_q)},
      {"block_k", field<int64_t>(&TileConfig::block_k)},
      {"warps", field<int64_t>(&TileConfig::warps)},
      {"stages", field<int64_t>(&TileConfig::stages)},
      {"q_in_registers", field<bool>(&TileConfig::q_in_registers)},
      {"kv_shared_buffer", field<bool>(&TileConfig::kv_shared_buffer)},
      {"dq_strategy",
       [](TileConfig& c, nb::handle v) { c.dq_strategy = parse_dq_strategy(nb::cast<std::string>(v)); }},
      {"bwd_block_q", field<int64_t>(&TileConfig::bwd_block_q)},
      {"bwd_block_k", field<int64_t>(&TileConfig::bwd_block_k)},
      {"num_splits", field<int64_t>(&TileConfig::num_splits)},
  };
  return fields;
}

// base with the dict's fields replaced, validated.
TileConfig over(TileConfig base, const nb::dict& tile) {
  for (const auto& [key, value] : tile) {
    const std::string name = nb::cast<std::string>(key);
    const auto it = tile_fields().find(name);
    if (it == tile_fields().end()) {
      std::string known;
      for (const auto& [n, s] : tile_fields()) known += (known.empty() ? "" : ", ") + n;
      throw InputError("tile", fmt::format("unknown field '{}' (fields: {})", name, known));
    }
    try {
      it->second(base, value);
    } catch (const nb::cast_error&) {
      throw InputError(name, fmt::format("'{}' is not a value of this field", nb::str(value).c_str()));
    }
  }
  base.validate();
  return base;
}

golden::GoldenCase parse_case(const std::string& case_json) {
  return golden::case_from_json(nlohmann::json::parse(case_json), "problem");
}

std::string predict(const std::string& case_json, const nb::dict& tile, const std::string& hw,
                    const std::string& algorithm, const std::string& pass,
                    const std::vector<std::string>& kernels, bool executed, int64_t max_memory_bytes) {
  const auto c = parse_case(case_json);
  app::PredictRequest r;
  r.problem = c.problem;
  r.seed = c.seed;
  r.given = over(TileConfig{}, tile);
  r.apply_given = [&tile](const TileConfig& base) { return over(base, tile); };
  r.hw = hw;
  r.algorithm = algorithm;
  r.pass = pass;
  r.kernels = kernels;
  r.executed = executed;
  r.max_memory_bytes = max_memory_bytes;
  return app::to_json(app::run_predict(r)).dump();
}

std::string sweep(const std::string& case_json, const std::string& hw, const std::string& algorithm,
                  const std::string& pass, int top) {
  const auto c = parse_case(case_json);
  nb::gil_scoped_release unlocked;
  std::string note;  // a paged-cache problem's "both" is its forward
  std::vector<app::SweepReport> reports;
  for (const auto& one : app::sweep_passes(c.problem, pass, note))
    reports.push_back(app::run_sweep(c.problem, c.seed, hw, algorithm, one));
  return app::to_json(reports, top).dump();
}

}  // namespace

void bind_sim(nb::module_& m) {
  using namespace nb::literals;
  m.def("sim_predict", &predict, "case_json"_a, "tile"_a, "hw"_a, "algorithm"_a, "pass_"_a, "kernels"_a,
        "executed"_a, "max_memory_bytes"_a,
        "`flashsim sim predict --json` on a case's problem and a tile (dict of TileConfig fields).");
  m.def("sim_sweep", &sweep, "case_json"_a, "hw"_a, "algorithm"_a, "pass_"_a, "top"_a,
        "`flashsim sim sweep --json` on a case's problem.");
  m.def("hw_profiles", &sim::profile_names, "The hardware profiles' names.");
}

}  // namespace flashsim::py
