// flashsim hw list|show, flashsim sim predict|sweep, flashsim traffic compare: thin wrappers over
// flashsim::sim.
#include <fmt/format.h>

#include <fstream>
#include <memory>

#include "commands.h"
#include "flashsim/error.h"
#include "flashsim/sim/model.h"
#include "flashsim/sim/ncu.h"
#include "problem_flags.h"

namespace flashsim::cli {

namespace {

std::string human(double b) {
  const char* u[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int i = 0;
  while (std::fabs(b) >= 1024 && i < 4) {
    b /= 1024;
    ++i;
  }
  return fmt::format("{:.2f} {}", b, u[i]);
}

void add_hw(CLI::App& app) {
  auto* hw = app.add_subcommand("hw", "Hardware profiles");
  hw->require_subcommand(1);
  auto* list = hw->add_subcommand("list", "List the hardware profiles");
  list->callback([] {
    for (const auto& n : sim::profile_names()) {
      const auto p = sim::load_profile(n);
      fmt::print("{:<16} {:>4} SMs  L2 {:>10}  smem/SM {:>10}  {}\n", p.name, p.sms,
                 human(double(p.l2_bytes)), human(double(p.shared_memory_per_sm)), p.description);
    }
  });
  auto* show = hw->add_subcommand("show", "Print one hardware profile as JSON");
  auto name = std::make_shared<std::string>();
  show->add_option("name", *name, "Profile name (see hw list) or a .json file")->required();
  show->callback([name] { fmt::print("{}\n", sim::to_json(sim::load_profile(*name)).dump(2)); });
}

void print_predictions(const std::vector<sim::KernelPrediction>& ks) {
  fmt::print("{:<16} {:>12} {:>12} {:>12} {:>12} {:>12} {:>10} {:>6} {:>12} {:>10} {:>8}\n", "kernel", "load",
             "store", "reduce", "dram read", "dram write", "smem/CTA", "CTA/SM", "TFLOP", "time us", "bound");
  for (const auto& k : ks) {
    if (!k.occ.fits) {
      fmt::print("{:<16} does not fit: {}\n", k.name, k.occ.reason);
      continue;
    }
    fmt::print("{:<16} {:>12} {:>12} {:>12} {:>12} {:>12} {:>10} {:>6} {:>12.3f} {:>10.1f} {:>8}\n", k.name,
               human(double(k.counts.load_bytes())), human(double(k.counts.store_bytes())),
               human(double(k.counts.reduce_bytes())), human(double(k.dram_read)),
               human(double(k.dram_write)), k.counts.launch.smem_bytes(), k.occ.ctas_per_sm,
               k.counts.mma_flops / 1e12, k.time_s * 1e6, k.bound);
    for (size_t t = 0; t < k.counts.tensors.size(); ++t) {
      const auto& tt = k.counts.tensors[t];
      if (tt.load.bytes + tt.store.bytes + tt.reduce.bytes == 0) continue;
      fmt::print("  {:<14} {:>12} {:>12} {:>12}\n", ref::tensor_name(static_cast<ref::TensorId>(t)),
                 human(double(tt.load.bytes)), human(double(tt.store.bytes)), human(double(tt.reduce.bytes)));
    }
  }
}

struct PredictState {
  ProblemFlags pf;
  TileFlags tf;
  std::string hw = "H100-SXM5-80GB", pass = "both";
  bool json = false, executed = false;
};

void add_sim(CLI::App& app) {
  auto* sim = app.add_subcommand("sim", "Tiling simulator");
  sim->require_subcommand(1);
  auto* pr = sim->add_subcommand("predict", "Predict the traffic, occupancy and time of FA2's kernels");
  auto st = std::make_shared<PredictState>();
  st->pf.add_to(pr);
  st->tf.add_to(pr);
  pr->add_option("--hw", st->hw, "Hardware profile (flashsim hw list)");
  pr->add_option("--pass", st->pass, "fwd, bwd or both")->check(CLI::IsMember({"fwd", "bwd", "both"}));
  pr->add_flag("--json", st->json, "JSON output");
  pr->add_flag("--executed", st->executed, "Run the full schedule instead of the closed form");
  pr->callback([st] {
    const auto p = st->pf.problem();
    const auto c = st->tf.config();
    const auto hw = sim::load_profile(st->hw);
    std::vector<sim::KernelPrediction> ks;
    if (st->pass != "bwd") ks = sim::predict(p, c, hw, false, st->executed);
    if (st->pass != "fwd")
      for (auto& k : sim::predict(p, c, hw, true, st->executed)) ks.push_back(std::move(k));
    bool fits = true;
    for (const auto& k : ks) fits = fits && k.occ.fits;
    if (st->json) {
      nlohmann::json j = {
          {"problem", p.describe()}, {"config", c.describe()}, {"hw", hw.name}, {"fits", fits}};
      for (const auto& k : ks) j["kernels"].push_back(sim::to_json(k));
      fmt::print("{}\n", j.dump(2));
    } else {
      fmt::print("{}\n{}\nhardware: {}\n", p.describe(), c.describe(), hw.name);
      print_predictions(ks);
    }
    if (!fits) set_exit_code(1);
  });
}

struct CompareState {
  ProblemFlags pf;
  std::string ncu, hw = "H100-SXM5-80GB";
  bool json = false;
};

void add_traffic(CLI::App& app) {
  auto* tr = app.add_subcommand("traffic", "Measured traffic against the model");
  tr->require_subcommand(1);
  auto* cmp = tr->add_subcommand("compare", "Compare an Nsight Compute CSV report with the prediction");
  auto st = std::make_shared<CompareState>();
  st->pf.add_to(cmp);
  cmp->add_option("--ncu", st->ncu, "ncu --csv report")->required();
  cmp->add_option("--hw", st->hw, "Hardware profile");
  cmp->add_flag("--json", st->json, "JSON output");
  cmp->callback([st] {
    std::ifstream in(st->ncu);
    if (!in) throw InputError("ncu", "cannot open " + st->ncu);
    const auto c = sim::compare_ncu(sim::parse_ncu_csv(in), st->pf.problem(), sim::load_profile(st->hw));
    if (st->json) {
      fmt::print("{}\n", sim::to_json(c).dump(2));
    } else {
      for (const auto& k : c.kernels) {
        fmt::print("{}\n", k.name);
        if (!k.recognized) {
          fmt::print("  (not recognized: skipped)\n");
          continue;
        }
        fmt::print("  {:<48} {:>16} {:>16} {:>8} {:>6} {}\n", "metric", "measured", "predicted", "ratio",
                   "tol", "ok");
        for (const auto& m : k.metrics)
          fmt::print("  {:<48} {:>16.0f} {:>16.0f} {:>8.4f} {:>6} {}\n", m.metric, m.measured, m.predicted,
                     m.ratio, m.tolerance > 0 ? fmt::format("{:.0f}%", m.tolerance * 100) : "-",
                     m.tolerance > 0 ? (m.ok ? "ok" : "FAIL") : "unexplained (spills)");
      }
      fmt::print("{}\n", c.ok ? "all metrics within tolerance" : "SOME METRICS OUT OF TOLERANCE");
    }
    if (!c.ok) set_exit_code(1);
  });
}

}  // namespace

void add_sim_commands(CLI::App& app) {
  add_hw(app);
  add_sim(app);
  add_traffic(app);
}

}  // namespace flashsim::cli
