// flashsim hw list|show, flashsim sim predict|sweep, flashsim traffic compare: thin wrappers over
// flashsim::sim.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <memory>
#include <tuple>

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

void print_time_note(const std::vector<sim::KernelPrediction>& ks, const sim::HardwareProfile& hw) {
  const bool calibrated = std::any_of(ks.begin(), ks.end(), [](const auto& k) { return k.calibrated; });
  fmt::print(
      "time: an estimate, max(DRAM, L2, MMA + exp + vector work) per kernel with the CTAs' load imbalance, "
      "{}; {}\n",
      hw.kernel_latency_s > 0
          ? fmt::format("plus {:.1f} us per launch (measured on this GPU)", hw.kernel_latency_s * 1e6)
          : std::string("no launch latency (not measured for this profile)"),
      calibrated
          ? fmt::format("MMA at the FA2 rate measured on this GPU ({:.0f} / {:.0f} TFLOP/s fwd / bwd), "
                        "validated in bench/results/ncu_h100_2026-11-22/README.md",
                        hw.achieved_mma_flops_fwd / 1e12, hw.achieved_mma_flops_bwd / 1e12)
          : std::string("MMA at the tensor peak (no measured rate for this profile): a lower bound"));
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
  std::string hw = "H100-SXM5-80GB", pass = "both", algorithm = "fa2";
  bool json = false, executed = false;
  MemoryFlag memory;  // for --executed
};

struct SweepState {
  ProblemFlags pf;
  std::string hw = "H100-SXM5-80GB", pass = "fwd";
  bool json = false, csv = false, progress = false;
  int top = 20;
};

struct SweepRow {
  TileConfig c;
  double time_s = 0;
  int64_t load = 0, dram = 0, smem = 0;
  int occ = 0;
  std::string bound;
};

void add_sweep(CLI::App* sim) {
  auto* sw = sim->add_subcommand("sweep", "Every legal tile config for a problem, ranked by predicted time");
  auto st = std::make_shared<SweepState>();
  st->pf.add_to(sw);
  sw->add_option("--hw", st->hw, "Hardware profile");
  sw->add_option("--pass", st->pass, "fwd or bwd")->check(CLI::IsMember({"fwd", "bwd"}));
  sw->add_option("--top", st->top, "Rows to print (0: all)");
  sw->add_flag("--json", st->json, "JSON output");
  sw->add_flag("--csv", st->csv, "CSV output");
  sw->add_flag("--progress", st->progress, "Progress bar on stderr");
  sw->callback([st] {
    const auto p = st->pf.problem();
    const auto hw = sim::load_profile(st->hw);
    const bool bwd = st->pass == "bwd";
    std::vector<TileConfig> configs;
    const int64_t blocks[] = {16, 32, 64, 128, 192, 256};
    for (int64_t bq : blocks)
      for (int64_t bk : blocks)
        for (int warps : {2, 4, 8})
          for (int stages : {1, 2, 3})
            for (bool qr : {false, true})
              for (bool kvs : {false, true}) {
                if (bwd && (stages > 1 || qr || kvs)) continue;  // the FA2 backward has no such variants
                TileConfig c;
                (bwd ? c.bwd_block_q : c.block_q) = bq;
                (bwd ? c.bwd_block_k : c.block_k) = bk;
                c.warps = warps;
                c.stages = stages;
                c.q_in_registers = qr;
                c.kv_shared_buffer = kvs;
                configs.push_back(c);
              }
    std::vector<SweepRow> rows;
    const auto kinds = bwd ? sim::fa2_backward_kernels() : sim::fa2_forward_kernels();
    for (size_t i = 0; i < configs.size(); ++i) {
      if (st->progress && (i % 64 == 0 || i + 1 == configs.size()))
        fmt::print(stderr, "\rsweep [{:<40}] {}/{}", std::string((i + 1) * 40 / configs.size(), '#'), i + 1,
                   configs.size());
      SweepRow r{configs[i], 0, 0, 0, 0, 0, ""};
      bool fits = true;
      double worst = -1;
      for (auto kind : kinds) {
        const auto k = sim::predict_kernel(sim::analytic_counts(kind, p, configs[i]), hw);
        fits = fits && k.occ.fits;
        r.time_s += k.time_s;
        r.load += k.counts.load_bytes();
        r.dram += k.dram_read + k.dram_write;
        r.smem = std::max(r.smem, k.counts.launch.smem_bytes());
        if (k.time_s > worst) {
          worst = k.time_s;
          r.occ = k.occ.ctas_per_sm;
          r.bound = k.name + ":" + k.bound;
        }
      }
      if (fits) rows.push_back(r);
    }
    if (st->progress) fmt::print(stderr, "\n");
    // Equal times (compute-bound configs of the same FLOPs): less DRAM traffic, then less shared memory
    // first.
    std::stable_sort(rows.begin(), rows.end(), [](const SweepRow& a, const SweepRow& b) {
      return std::tie(a.time_s, a.dram, a.load, a.smem) < std::tie(b.time_s, b.dram, b.load, b.smem);
    });
    // FlashAttention lower bound on HBM traffic: every input read and every output written once.
    const int e = dtype_bytes(p.dtype);
    const double lb =
        static_cast<double>(bwd ? (p.q_elems() + p.k_elems() + p.v_elems() + 2 * p.o_elems()) * e +
                                      (p.q_elems() + p.k_elems() + p.v_elems()) * e
                                : (p.q_elems() + p.k_elems() + p.v_elems() + p.o_elems()) * e);
    const size_t n = st->top > 0 ? std::min(rows.size(), static_cast<size_t>(st->top)) : rows.size();
    if (st->json) {
      nlohmann::json j = {
          {"problem", p.describe()},
          {"hw", hw.name},
          {"configs", configs.size()},
          {"legal", rows.size()},
          {"lower_bound_dram_bytes", lb},
          {"time_is_estimate", true},
          {"time_calibrated", (bwd ? hw.achieved_mma_flops_bwd : hw.achieved_mma_flops_fwd) > 0}};
      j["ranked"] = nlohmann::json::array();
      for (size_t i = 0; i < n; ++i)
        j["ranked"].push_back({{"config", rows[i].c.describe()},
                               {"time_s", rows[i].time_s},
                               {"load_bytes", rows[i].load},
                               {"dram_bytes", rows[i].dram},
                               {"smem_bytes", rows[i].smem},
                               {"ctas_per_sm", rows[i].occ},
                               {"bound", rows[i].bound}});
      fmt::print("{}\n", j.dump(2));
    } else if (st->csv) {
      fmt::print("rank,config,time_s,load_bytes,dram_bytes,smem_bytes,ctas_per_sm,bound\n");
      for (size_t i = 0; i < n; ++i)
        fmt::print("{},\"{}\",{:.6e},{},{},{},{},{}\n", i + 1, rows[i].c.describe(), rows[i].time_s,
                   rows[i].load, rows[i].dram, rows[i].smem, rows[i].occ, rows[i].bound);
    } else {
      fmt::print("{} on {}: {} configs, {} fit; FlashAttention lower bound on DRAM traffic {}\n",
                 p.describe(), hw.name, configs.size(), rows.size(), human(lb));
      fmt::print("{:>4} {:<48} {:>10} {:>12} {:>12} {:>8} {:>4} {}\n", "rank", "config", "time us", "load",
                 "dram", "smem", "occ", "bound");
      for (size_t i = 0; i < n; ++i)
        fmt::print("{:>4} {:<48} {:>10.1f} {:>12} {:>12} {:>8} {:>4} {}\n", i + 1, rows[i].c.describe(),
                   rows[i].time_s * 1e6, human(double(rows[i].load)), human(double(rows[i].dram)),
                   rows[i].smem, rows[i].occ, rows[i].bound);
      fmt::print("time: an estimate ({}); equal times ranked by DRAM bytes, L2 bytes, then shared memory\n",
                 hw.achieved_mma_flops_fwd > 0 ? "MMA at the FA2 rate measured on this GPU"
                                               : "MMA at the tensor peak: a lower bound");
    }
  });
}

void add_sim(CLI::App& app) {
  auto* sim = app.add_subcommand("sim", "Tiling simulator");
  sim->require_subcommand(1);
  auto* pr = sim->add_subcommand("predict", "Predict the traffic, occupancy and time of FA2's kernels");
  auto st = std::make_shared<PredictState>();
  st->pf.add_to(pr);
  st->tf.add_to(pr);
  pr->add_option("--hw", st->hw, "Hardware profile (flashsim hw list)");
  pr->add_option("--pass", st->pass, "fwd, bwd or both")->check(CLI::IsMember({"fwd", "bwd", "both"}));
  pr->add_option(
        "--algorithm", st->algorithm,
        "Forward kernel: fa2, fa1, three-pass, two-pass or naive (naive: standard attention, forward and "
        "backward; the others use FA2's backward)")
      ->check(CLI::IsMember({"fa2", "fa1", "three-pass", "two-pass", "naive"}));
  pr->add_flag("--json", st->json, "JSON output");
  pr->add_flag("--executed", st->executed, "Run the full schedule instead of the closed form");
  st->memory.add_to(pr);
  pr->callback([st] {
    const auto p = st->pf.problem();
    const auto c = st->tf.config();
    const auto hw = sim::load_profile(st->hw);
    std::vector<sim::KernelPrediction> ks;
    const auto fk = st->algorithm == "three-pass" ? sim::KernelKind::ThreePassForward
                    : st->algorithm == "two-pass" ? sim::KernelKind::TwoPassForward
                    : st->algorithm == "fa1"      ? sim::KernelKind::Fa1Forward
                    : st->algorithm == "naive"    ? sim::KernelKind::NaiveScores
                                                  : sim::KernelKind::Fa2Forward;
    const int64_t max_memory = st->memory.bytes();
    if (st->pass != "bwd") ks = sim::predict(p, c, hw, false, st->executed, fk, max_memory);
    if (st->pass != "fwd")
      for (auto& k :
           sim::predict(p, c, hw, true, st->executed,
                        fk == sim::KernelKind::NaiveScores ? fk : sim::KernelKind::Fa2Forward, max_memory))
        ks.push_back(std::move(k));
    bool fits = true;
    std::string misfit;  // the first kernel that does not fit, and why
    for (const auto& k : ks) {
      if (!k.occ.fits && misfit.empty()) misfit = fmt::format("{} does not fit: {}", k.name, k.occ.reason);
      fits = fits && k.occ.fits;
    }
    // A config that does not fit is bad input (exit 2): one line, except that --json still prints the counts
    // (explorers such as bench/sim_charts.py chart them) before the error line on stderr.
    if (!fits && !st->json) throw InputError("tile", misfit);
    if (st->json) {
      nlohmann::json j = {
          {"problem", p.describe()},
          {"config", c.describe()},
          {"hw", hw.name},
          {"fits", fits},
          {"time_note",
           "time_s is an estimate: max(DRAM, L2, MMA + exp + vector work) with load imbalance; MMA "
           "at the profile's measured FA2 rate where it has one (time_calibrated), else at the "
           "tensor peak (a lower bound)"}};
      for (const auto& k : ks) j["kernels"].push_back(sim::to_json(k));
      fmt::print("{}\n", j.dump(2));
    } else {
      fmt::print("{}\n{}\nhardware: {}\n", p.describe(), c.describe(), hw.name);
      print_predictions(ks);
      print_time_note(ks, hw);
    }
    if (!fits) {
      std::fprintf(stderr, "flashsim: error: tile: %s\n", misfit.c_str());
      set_exit_code(2);
    }
  });
  add_sweep(sim);
}

struct CompareState {
  ProblemFlags pf;
  std::string ncu, ncu_dram, hw = "H100-SXM5-80GB", replayed = "auto";
  bool json = false;
};

void add_traffic(CLI::App& app) {
  auto* tr = app.add_subcommand("traffic", "Measured traffic against the model");
  tr->require_subcommand(1);
  auto* cmp = tr->add_subcommand("compare", "Compare an Nsight Compute CSV report with the prediction");
  auto st = std::make_shared<CompareState>();
  st->pf.add_to(cmp);
  cmp->add_option("--ncu", st->ncu, "ncu --csv report")->required();
  cmp->add_option("--ncu-dram", st->ncu_dram,
                  "ncu --csv report of the same kernels with only dram__bytes_read.sum,dram__bytes_write.sum "
                  "(one replay pass): its DRAM bytes replace the --ncu report's");
  cmp->add_option(
         "--replayed", st->replayed,
         "Whether ncu replayed the kernels for the report's DRAM counters (several metric passes): "
         "auto (when the report has metrics other than dram__*, lts__*, gpu__time_duration*), yes, no; "
         "replayed kernels after the first get the profile's ncu_replay_write_bytes added to their "
         "predicted DRAM writes")
      ->check(CLI::IsMember({"auto", "yes", "no"}));
  cmp->add_option("--hw", st->hw, "Hardware profile");
  cmp->add_flag("--json", st->json, "JSON output");
  cmp->callback([st] {
    std::ifstream in(st->ncu);
    if (!in) throw InputError("ncu", "cannot open " + st->ncu);
    auto kernels = sim::parse_ncu_csv(in);
    if (!st->ncu_dram.empty()) {
      std::ifstream din(st->ncu_dram);
      if (!din) throw InputError("ncu-dram", "cannot open " + st->ncu_dram);
      kernels = sim::with_dram_counters(std::move(kernels), sim::parse_ncu_csv(din));
    }
    // One-pass DRAM counters (--ncu-dram) are never replayed; otherwise as the flag or the metric list says.
    const bool replayed =
        st->ncu_dram.empty() &&
        (st->replayed == "yes" || (st->replayed == "auto" && sim::dram_counters_replayed(kernels)));
    const auto hw = sim::load_profile(st->hw);
    const auto c = sim::compare_ncu(kernels, st->pf.problem(), hw, replayed);
    if (st->json) {
      auto j = sim::to_json(c);
      j["dram_counters"] = !st->ncu_dram.empty() ? "one-pass report (--ncu-dram)"
                           : replayed            ? "replayed (collected with other metrics)"
                                                 : "one pass";
      fmt::print("{}\n", j.dump(2));
    } else {
      for (const auto& k : c.kernels) {
        fmt::print("{}\n", k.name);
        if (!k.recognized) {
          fmt::print("  (not recognized: skipped)\n");
          continue;
        }
        fmt::print("  {:<48} {:>16} {:>16} {:>8} {:>7} {}\n", "metric", "measured", "predicted", "ratio",
                   "tol", "ok");
        // tol: the relative tolerance, or the DRAM counters' run-to-run spread in MB where that is wider
        const auto tol = [](const sim::MetricComparison& m) {
          if (m.tolerance <= 0) return std::string("-");
          if (m.floor > m.tolerance * m.predicted) return fmt::format("{:.2f}MB", m.floor / 1e6);
          return fmt::format("{:.0f}%", m.tolerance * 100);
        };
        for (const auto& m : k.metrics)
          fmt::print("  {:<48} {:>16.0f} {:>16.0f} {:>8.4f} {:>7} {}\n", m.metric, m.measured, m.predicted,
                     m.ratio, tol(m),
                     m.tolerance > 0                        ? (m.ok ? "ok" : "FAIL")
                     : m.metric == "gpu__time_duration.sum" ? "estimate (ns), not held"
                                                            : "unexplained (spills)");
      }
      fmt::print("{}\n", c.ok ? "all metrics within tolerance" : "SOME METRICS OUT OF TOLERANCE");
      if (replayed)
        fmt::print(
            "note: the DRAM counters come from a replayed ncu run (collected with other metrics): the "
            "predicted DRAM writes of every kernel after the first include {:.1f} MB that the replay "
            "leaves dirty in L2 (measured on the H100: bench/results/ncu_h100_2026-11-22/README.md){}; "
            "--replayed no drops it; for one-pass counters profile the run again with only "
            "dram__bytes_read.sum,dram__bytes_write.sum and pass it with --ncu-dram\n",
            hw.ncu_replay_write_bytes / 1e6,
            hw.ncu_replay_write_bytes > 0 ? "" : ", not measured for this profile");
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
