// flashsim hw list|show, flashsim sim predict|sweep, flashsim traffic compare: thin wrappers over
// flashsim::sim.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <functional>
#include <memory>
#include <tuple>

#include "commands.h"
#include "flashsim/app/problem_flags.h"
#include "flashsim/app/sim_report.h"
#include "flashsim/error.h"
#include "flashsim/sim/dram_interval.h"
#include "flashsim/sim/l2_sim.h"
#include "flashsim/sim/model.h"
#include "flashsim/sim/ncu.h"
#include "flashsim/sim/problem_data.h"
#include "flashsim/sim/sweep.h"

namespace flashsim::cli {

using app::MemoryFlag;
using app::PredictRequest;
using app::ProblemFlags;
using app::run_predict;
using app::run_sweep;
using app::sweep_passes;
using app::SweepReport;
using app::TileFlags;
using app::to_json;

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

// The GPU the simulator commands model unless --hw says otherwise.
constexpr const char* kDefaultHw = "H100-SXM5-80GB";

void add_hw(CLI::App& app) {
  auto* hw = app.add_subcommand("hw", "Hardware profiles");
  hw->require_subcommand(1);
  auto* list = hw->add_subcommand("list", "List the hardware profiles (* the default of --hw)");
  list->callback([] {
    fmt::print("  {:<16} {:>4} {:>9} {:>11} {:>10} {:>10}  {}\n", "profile", "SMs", "DRAM TB/s",
               "tensor TF/s", "smem/SM", "L2", "description");
    for (const auto& n : sim::profile_names()) {
      const auto p = sim::load_profile(n);
      fmt::print("{} {:<16} {:>4} {:>9.2f} {:>11.0f} {:>10} {:>10}  {}\n", p.name == kDefaultHw ? '*' : ' ',
                 p.name, p.sms, p.dram_bytes_per_s / 1e12, p.tensor_flops_fp16 / 1e12,
                 human(double(p.shared_memory_per_sm)), human(double(p.l2_bytes)), p.description);
    }
    fmt::print("DRAM: peak bandwidth; tensor: dense fp16/bf16 peak; `hw show NAME` prints every field\n");
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
      hw.kernel_latency_s > 0 ? fmt::format("plus {:.1f} us per launch (measured on {})",
                                            hw.kernel_latency_s * 1e6, hw.measured_on("kernel_latency_s"))
                              : std::string("no launch latency (not measured for this profile)"),
      calibrated ? fmt::format("MMA at the FA2 rate measured on {} ({:.0f} / {:.0f} TFLOP/s fwd / bwd), "
                               "validated: calibration h100.achieved_mma_flops",
                               hw.measured_on("achieved_mma_flops_fwd"), hw.achieved_mma_flops_fwd / 1e12,
                               hw.achieved_mma_flops_bwd / 1e12)
                 : std::string("MMA at the tensor peak (no measured rate for this profile): a lower bound"));
  if (std::any_of(ks.begin(), ks.end(), [](const auto& k) { return k.cta.modelled; }))
    fmt::print(
        "      the FA2 main loops by the per-CTA model instead of MMA + exp + vector work: mma.sync, shared "
        "memory and softmax combined, or the CTAs' step chain when longer (docs/simulator.md, `sim predict "
        "--json`: cta_model)\n");
  std::vector<std::string> where;  // the GPUs the costs used were measured on
  for (const auto& k : ks)
    if (k.cta.bound == "measured steps" &&
        std::find(where.begin(), where.end(), k.cta.measured_on) == where.end())
      where.push_back(k.cta.measured_on);
  if (!where.empty())
    fmt::print(
        "      measured steps: the kernel's CTAs dealt to the SMs at its instance's measured per-CTA costs, "
        "measured on {} (the profile's measured_steps, docs/simulator.md)\n",
        fmt::join(where, " and "));
}

// The occupancy limiter in a word for the CTA/SM column ("2 smem"): what stops one more CTA on an SM.
std::string occupancy_text(const sim::Occupancy& o) {
  const std::string& l = o.limiter;
  const char* word = l == "shared memory" ? "smem"
                     : l == "registers"   ? "regs"
                     : l == "threads"     ? "thr"
                                          : "slots";
  return fmt::format("{} {}", o.ctas_per_sm, word);
}

void print_row(const std::string& name, int64_t load, int64_t store, int64_t reduce, int64_t dram_read,
               int64_t dram_write, const std::string& smem, const std::string& occ, const std::string& waves,
               double flops, double time_s, const std::string& bound, size_t width) {
  fmt::print("{:<{}} {:>11} {:>11} {:>11} {:>11} {:>11} {:>8} {:>8} {:>6} {:>8.3f} {:>9.1f} {:>8.1f} {:>8}\n",
             name, width, human(double(load)), human(double(store)), human(double(reduce)),
             human(double(dram_read)), human(double(dram_write)), smem, occ, waves, flops / 1e12,
             time_s * 1e6, time_s > 0 ? flops / time_s / 1e12 : 0.0, bound);
}

// waves = CTAs / (SMs x CTA/SM): under one, part of the GPU idles and the bound's unit runs on the busy SMs only.
void print_waves_note(const std::vector<sim::KernelPrediction>& ks, const sim::HardwareProfile& hw) {
  for (const auto& k : ks)
    if (k.occ.fits && k.waves < 0.5) {
      fmt::print(
          "waves: {} launches {} CTAs for {} resident slots ({} SMs x {}): {:.0f}% of the GPU works, so its "
          "'{}' bound is that of the busy SMs and its TFLOP/s a fraction of the GPU's\n",
          k.name, k.counts.launch.ctas(), k.occ.resident_ctas, hw.sms, k.occ.ctas_per_sm,
          100 * std::min(1.0, static_cast<double>(k.counts.launch.ctas()) / static_cast<double>(hw.sms)),
          k.bound);
    }
}

// One row per kernel (and its tensors), then a total per pass: the pass's bytes, FLOPs and time summed, and
// the TFLOP/s the pass achieves.
void print_predictions(const std::vector<sim::KernelPrediction>& ks) {
  size_t w = 16;  // the kernel column: the longest name
  for (const auto& k : ks) w = std::max(w, k.name.size());
  fmt::print("{:<{}} {:>11} {:>11} {:>11} {:>11} {:>11} {:>8} {:>8} {:>6} {:>8} {:>9} {:>8} {:>8}\n",
             "kernel", w, "load", "store", "reduce", "dram read", "dram write", "smem/CTA", "CTA/SM", "waves",
             "TFLOP", "time us", "TFLOP/s", "bound");
  for (size_t i = 0; i < ks.size(); ++i) {
    const auto& k = ks[i];
    if (!k.occ.fits) {
      fmt::print("{:<{}} does not fit: {}\n", k.name, w, k.occ.reason);
    } else {
      print_row(k.name, k.counts.load_bytes(), k.counts.store_bytes(), k.counts.reduce_bytes(), k.dram_read,
                k.dram_write, std::to_string(k.counts.launch.smem_bytes()), occupancy_text(k.occ),
                fmt::format("{:.2f}", k.waves), k.counts.mma_flops, k.time_s, k.bound, w);
      for (size_t t = 0; t < k.counts.tensors.size(); ++t) {
        const auto& tt = k.counts.tensors[t];
        if (tt.load.bytes + tt.store.bytes + tt.reduce.bytes == 0) continue;
        fmt::print("  {:<{}} {:>11} {:>11} {:>11}\n", sim::tensor_name(static_cast<ref::TensorId>(t)), w - 2,
                   human(double(tt.load.bytes)), human(double(tt.store.bytes)),
                   human(double(tt.reduce.bytes)));
      }
      if (k.block_sparse && k.counts.tiles + k.counts.skipped_tiles > 0)
        fmt::print(
            "  {:<{}} {} of {} (query block, key block) tiles skipped by the block mask, {} computed\n",
            "tiles", w - 2, k.counts.skipped_tiles, k.counts.tiles + k.counts.skipped_tiles, k.counts.tiles);
    }
    const Pass pass = k.counts.launch.model->pass;
    if (i + 1 < ks.size() && ks[i + 1].counts.launch.model->pass == pass) continue;
    int64_t load = 0, store = 0, reduce = 0, dr = 0, dw = 0;
    double flops = 0, time = 0;
    size_t n = 0;
    for (const auto& x : ks) {
      if (x.counts.launch.model->pass != pass) continue;
      load += x.counts.load_bytes();
      store += x.counts.store_bytes();
      reduce += x.counts.reduce_bytes();
      dr += x.dram_read;
      dw += x.dram_write;
      flops += x.counts.mma_flops;
      time += x.time_s;
      ++n;
    }
    if (n > 1)
      print_row(fmt::format("{} total", pass_name(pass)), load, store, reduce, dr, dw, "", "", "", flops,
                time, "", w);
  }
}

// The simulator's commands model GPU kernels, which run in bf16 or fp16: bf16 unless --dtype says otherwise.
ProblemFlags kernel_problem_flags() {
  ProblemFlags pf;
  pf.dtype = "bf16";
  return pf;
}

std::vector<std::string> algorithm_names() {
  std::vector<std::string> names;
  for (auto a : all_algorithms()) names.emplace_back(algorithm_name(a));
  return names;
}

struct PredictState {
  ProblemFlags pf = kernel_problem_flags();
  TileFlags tf;
  std::string hw = kDefaultHw, pass = "both", algorithm = "fa2";
  std::vector<std::string> kernels;
  bool json = false, executed = false;
  MemoryFlag memory;  // for --executed
  std::string vs;     // --vs: the other tile's flags
};

// --vs "FLAGS": the tile flags of the other config, over this command's tile (flags it does not give keep
// this command's values); InputError("vs") for anything but tile flags.
std::function<TileConfig(const TileConfig&)> vs_tile(
    const std::string& text, const std::function<TileConfig(const TileConfig&)>& mine) {
  // the parser outlives this call: TileFlags::over reads which of its options were given
  auto parser = std::make_shared<CLI::App>("--vs", "--vs");
  auto flags = std::make_shared<TileFlags>();
  flags->add_to(parser.get());
  try {
    parser->parse(text, false);
  } catch (const CLI::ParseError& e) {
    throw InputError("vs", fmt::format("'{}': {} (--vs takes tile flags only: --block-q --block-k "
                                       "--bwd-block-q --bwd-block-k --warps --stages --q-in-registers "
                                       "--kv-shared --dq-strategy --num-splits)",
                                       text, e.what()));
  }
  return [parser, flags, mine](const TileConfig& base) { return flags->over(mine(base)); };
}

// The knobs that differ between two tiles, of the passes shown ("block_q 128 -> 64, warps 4 -> 8").
std::string tile_differences(const TileConfig& a, const TileConfig& b, const std::string& pass) {
  std::vector<std::string> seen, out;
  for (const Pass ps : {Pass::Forward, Pass::Backward}) {
    if (pass != "both" && pass != pass_name(ps)) continue;
    const auto ka = sim::pass_knobs(a, ps), kb = sim::pass_knobs(b, ps);
    for (size_t i = 0; i < ka.size(); ++i) {
      if (std::find(seen.begin(), seen.end(), ka[i].first) != seen.end()) continue;
      seen.push_back(ka[i].first);
      if (ka[i].second != kb[i].second)
        out.push_back(fmt::format("{} {} -> {}", ka[i].first, ka[i].second, kb[i].second));
    }
  }
  if (out.empty()) return "none (the same tile)";
  std::string joined;
  for (const auto& d : out) joined += (joined.empty() ? "" : ", ") + d;
  return joined;
}

// sim predict --vs: the two tiles' kernels side by side (time, DRAM bytes, shared memory, occupancy, bound),
// a total per pass and overall, B / A.
void print_versus(const app::PredictReport& a, const app::PredictReport& b, const std::string& vs,
                  const std::string& pass) {
  fmt::print("{}\nhardware: {}\nA: {}\nB: {}   (--vs \"{}\")\ndiffers: {}\n", a.problem.describe(), a.hw.name,
             a.config, b.config, vs, tile_differences(a.tile, b.tile, pass));
  size_t w = 16;
  for (const auto& k : a.kernels) w = std::max(w, k.name.size());
  fmt::print("{:<{}} {:>10} {:>10} {:>6} {:>11} {:>11} {:>8} {:>8} {:>8} {:>8} {:>14} {:>14}\n", "kernel", w,
             "time us A", "time us B", "B/A", "DRAM A", "DRAM B", "smem A", "smem B", "CTA/SM A", "CTA/SM B",
             "bound A", "bound B");
  double ta = 0, tb = 0, pa = 0, pb = 0;
  const auto total = [&](const std::string& name, double x, double y) {
    fmt::print("{:<{}} {:>10.1f} {:>10.1f} {:>6.2f}\n", name, w, x * 1e6, y * 1e6, x > 0 ? y / x : 0.0);
  };
  for (size_t i = 0; i < a.kernels.size() && i < b.kernels.size(); ++i) {
    const auto &x = a.kernels[i], &y = b.kernels[i];
    if (!y.occ.fits) {
      fmt::print("{:<{}} {:>10.1f} {:>10} B does not fit: {}\n", x.name, w, x.time_s * 1e6, "-",
                 y.occ.reason);
    } else {
      fmt::print("{:<{}} {:>10.1f} {:>10.1f} {:>6.2f} {:>11} {:>11} {:>8} {:>8} {:>8} {:>8} {:>14} {:>14}\n",
                 x.name, w, x.time_s * 1e6, y.time_s * 1e6, x.time_s > 0 ? y.time_s / x.time_s : 0.0,
                 human(double(x.dram_read + x.dram_write)), human(double(y.dram_read + y.dram_write)),
                 x.counts.launch.smem_bytes(), y.counts.launch.smem_bytes(), occupancy_text(x.occ),
                 occupancy_text(y.occ), x.bound, y.bound);
    }
    ta += x.time_s;
    tb += y.time_s;
    pa += x.time_s;
    pb += y.time_s;
    const Pass ps = x.counts.launch.model->pass;
    if (i + 1 == a.kernels.size() || a.kernels[i + 1].counts.launch.model->pass != ps) {
      total(fmt::format("{} total", pass_name(ps)), pa, pb);
      pa = pb = 0;
    }
  }
  if (pass == "both") total("total", ta, tb);
  fmt::print("DRAM: bytes read + written; B/A: B's time over A's (under 1: B is faster)\n");
}

struct SweepState {
  ProblemFlags pf = kernel_problem_flags();
  std::string hw = kDefaultHw, pass = "fwd", algorithm = "fa2";
  bool json = false, csv = false, progress = false, rejected = false;
  int top = 20;
};

// The configs a sweep dropped, each with the kernel that does not fit and why: text or CSV (knobs, flags).
void print_rejected(const SweepReport& r, bool csv) {
  const auto& rows = r.ranked.rejected;
  if (csv) {
    std::string knobs;
    for (const auto& [key, value] : sim::pass_knobs(TileConfig{}, r.pass)) knobs += "," + key;
    fmt::print("config{},flags,reason\n", knobs);
    for (const auto& row : rows) {
      std::string values;
      for (const auto& [key, value] : sim::pass_knobs(row.config, r.pass)) values += "," + value;
      fmt::print("\"{}\"{},\"{}\",\"{}\"\n", sim::describe_pass(row.config, r.algorithm, r.pass), values,
                 sim::pass_flags(row.config, r.pass), row.misfit);
    }
    return;
  }
  fmt::print("{} on {}: {} of {} configs do not fit\n", r.problem.describe(), r.hw.name, rows.size(),
             r.ranked.configs);
  for (const auto& row : rows)
    fmt::print("{:<48} {}\n", sim::describe_pass(row.config, r.algorithm, r.pass), row.misfit);
}

// The split-KV sweep of a decode problem as text or CSV: per split count the predicted time, bytes and what
// bounds the split kernel (DRAM time against MMA + exp + vector time).
void print_split_sweep(const AttentionProblem& p, const sim::HardwareProfile& hw,
                       const sim::SplitSweepResult& r, bool csv) {
  const auto& rows = r.rows;
  if (csv) {
    fmt::print(
        "num_splits,heuristic,ctas,time_s,split_time_s,combine_time_s,load_bytes,dram_bytes,t_dram_s,t_"
        "compute_s,"
        "bound,memory_bound\n");
    for (const auto& x : rows)
      fmt::print("{},{},{},{:.6e},{:.6e},{:.6e},{},{},{:.6e},{:.6e},{},{}\n", x.num_splits,
                 x.heuristic ? 1 : 0, x.ctas, x.time_s, x.split_time_s, x.combine_time_s, x.load_bytes,
                 x.dram_bytes, x.t_dram_s, x.t_compute_s, x.bound, x.memory_bound ? 1 : 0);
    return;
  }
  fmt::print("{} on {}\n", p.describe(), hw.name);
  fmt::print(
      "split-KV forward: fwd_splitkv {} (FA2's split-KV tile), the group's {} query heads packed per CTA, "
      "then "
      "fwd_splitkv_combine when split\n",
      sim::describe_pass(r.tile, Algorithm::Fa2, Pass::Forward), p.group_size());
  fmt::print(
      "K and V to read: {} ({:.3f} GB); at {:.2f} TB/s (the profile's {}DRAM bandwidth) that takes {:.1f} "
      "us\n",
      human(r.kv_bytes), r.kv_bytes / 1e9, r.dram_rate / 1e12,
      hw.achieved_dram_bytes_per_s > 0 ? "measured " : "peak ", r.floor_s * 1e6);
  fmt::print("{:>6} {:>7} {:>9} {:>9} {:>10} {:>11} {:>11} {:>9} {:>10} {:>8} {}\n", "splits", "CTAs",
             "time us", "split us", "combine us", "L2<->SM", "dram", "dram us", "compute us", "bound",
             "memory-bound");
  for (const auto& x : rows)
    fmt::print("{:>5}{} {:>7} {:>9.1f} {:>9.1f} {:>10.1f} {:>11} {:>11} {:>9.1f} {:>10.1f} {:>8} {}\n",
               x.num_splits, x.heuristic ? '*' : ' ', x.ctas, x.time_s * 1e6, x.split_time_s * 1e6,
               x.combine_time_s * 1e6, human(double(x.load_bytes)), human(double(x.dram_bytes)),
               x.t_dram_s * 1e6, x.t_compute_s * 1e6, x.fits ? x.bound : std::string("misfit"),
               x.memory_bound ? "yes" : "no");
  fmt::print("* FlashAttention-2's num_splits heuristic picks {}\n", r.heuristic);
  std::string yes, no, not_bound;
  for (const auto& x : rows) {
    (x.memory_bound ? yes : no) +=
        fmt::format("{}{}", (x.memory_bound ? yes : no).empty() ? "" : ", ", x.num_splits);
    if (!x.memory_bound && not_bound.find(x.bound) == std::string::npos)
      not_bound += (not_bound.empty() ? "" : ", ") + x.bound;
  }
  fmt::print("memory-bound (the split kernel's DRAM time over its MMA + exp + vector time): {}{}\n",
             yes.empty() ? "at no split count" : fmt::format("at {} splits", yes),
             no.empty() ? "" : fmt::format("; not at {} ({})", no, not_bound));
  fmt::print(
      "time: an estimate; a split-KV CTA streams DRAM at most at what its loads in flight allow ({}), so few "
      "CTAs "
      "cannot reach the bandwidth (docs/simulator.md#decode-paged-and-block-sparse-schedules)\n",
      hw.cta_dram_latency_s > 0
          ? fmt::format("one {} KiB K/V tile over {:.0f} ns, measured on {}",
                        r.tile.block_k * std::max(p.head_dim, p.head_dim_v) * dtype_bytes(p.dtype) / 1024,
                        hw.cta_dram_latency_s * 1e9, hw.measured_on("cta_dram_latency_s"))
          : std::string("one SM's share of the bandwidth: not measured for this profile"));
}

// One pass's sweep as text or CSV; the config shows the pass's own knobs (describe_pass).
void print_sweep(const SweepReport& r, int top, bool csv) {
  const auto& p = r.problem;
  const auto& hw = r.hw;
  if (r.split) {
    print_split_sweep(p, hw, r.splits, csv);
    return;
  }
  const Algorithm algo = r.algorithm;
  const Pass pass = r.pass;
  const auto& rows = r.ranked.ranked;
  const size_t n = top > 0 ? std::min(rows.size(), static_cast<size_t>(top)) : rows.size();
  if (csv) {  // the config's knobs a column each, and the flags that give sim predict the same tile, last
    std::string knobs;
    for (const auto& [key, value] : sim::pass_knobs(TileConfig{}, pass)) knobs += "," + key;
    fmt::print("rank,config,time_s,load_bytes,dram_bytes,smem_bytes,ctas_per_sm,bound{},flags\n", knobs);
    for (size_t i = 0; i < n; ++i) {
      std::string values;
      for (const auto& [key, value] : sim::pass_knobs(rows[i].config, pass)) values += "," + value;
      fmt::print("{},\"{}\",{:.6e},{},{},{},{},{}{},\"{}\"\n", i + 1,
                 sim::describe_pass(rows[i].config, algo, pass), rows[i].time_s, rows[i].load_bytes,
                 rows[i].dram_bytes, rows[i].smem_bytes, rows[i].ctas_per_sm, rows[i].bound, values,
                 sim::pass_flags(rows[i].config, pass));
    }
    return;
  }
  fmt::print("{} on {}: {} configs, {} fit; FlashAttention lower bound on DRAM traffic {}\n", p.describe(),
             hw.name, r.ranked.configs, rows.size(), human(r.lower_bound_dram));
  const auto below = std::count_if(
      rows.begin(), rows.begin() + static_cast<std::ptrdiff_t>(n),
      [&](const auto& row) { return static_cast<double>(row.dram_bytes) < r.lower_bound_dram; });
  if (below > 0)  // the bound writes every output to DRAM; the model leaves the last dirty lines in the L2
    fmt::print(
        "({} rows predict less DRAM traffic than the bound: the outputs' last lines are still dirty in the "
        "L2 "
        "when the kernel ends, written back after it)\n",
        below);
  fmt::print("{:>4} {:<48} {:>10} {:>12} {:>12} {:>8} {:>8} {}\n", "rank", "config", "time us", "load",
             "dram", "smem", "CTA/SM", "bound");
  for (size_t i = 0; i < n; ++i) {
    sim::Occupancy occ;  // the slowest kernel's CTAs an SM and what caps them
    occ.ctas_per_sm = rows[i].ctas_per_sm;
    occ.limiter = rows[i].limiter;
    fmt::print("{:>4} {:<48} {:>10.1f} {:>12} {:>12} {:>8} {:>8} {}\n", i + 1,
               sim::describe_pass(rows[i].config, algo, pass), rows[i].time_s * 1e6,
               human(double(rows[i].load_bytes)), human(double(rows[i].dram_bytes)), rows[i].smem_bytes,
               occupancy_text(occ), rows[i].bound);
  }
  const bool calibrated =
      (pass == Pass::Backward ? hw.achieved_mma_flops_bwd : hw.achieved_mma_flops_fwd) > 0;
  fmt::print(
      "time: an estimate ({}{}); equal times ranked by CTAs an SM (more first), then DRAM bytes, L2 bytes, "
      "shared memory; CTA/SM: the slowest kernel's, and what caps it\n",
      calibrated ? "MMA at the FA2 rate measured on " + hw.measured_on("achieved_mma_flops_fwd")
                 : std::string("MMA at the tensor peak: a lower bound"),
      hw.mma_sync_flops > 0 && algo == Algorithm::Fa2 ? "; FA2's main loops by the per-CTA model" : "");
}

void add_sweep(CLI::App* sim) {
  auto* sw =
      sim->add_subcommand("sweep",
                          "Every legal tile config for a problem, ranked by predicted time (a paged KV "
                          "cache: FA2's split-KV kernel at each split count)");
  auto st = std::make_shared<SweepState>();
  st->pf.add_to(sw);
  sw->add_option("--hw", st->hw, "Hardware profile (flashsim hw list)")->capture_default_str();
  sw->add_option("--pass", st->pass, "fwd, bwd or both (each pass ranked on its own)")
      ->check(CLI::IsMember({"fwd", "bwd", "both"}))
      ->capture_default_str();
  sw->add_option("--algorithm", st->algorithm, "The algorithm whose kernels are tiled")
      ->check(CLI::IsMember(algorithm_names()))
      ->capture_default_str();
  sw->add_option("--top", st->top, "Rows to print (0: all)")->capture_default_str();
  sw->add_flag("--json", st->json, "JSON output");
  sw->add_flag("--csv", st->csv, "CSV output");
  sw->add_flag("--progress", st->progress, "Progress bar on stderr");
  sw->add_flag(
      "--rejected", st->rejected,
      "List the configs that do not fit, each with the kernel and the resource that overflows, instead "
      "of the ranking (JSON: a \"rejected\" array beside it)");
  sw->callback([st] {
    const auto p = st->pf.problem();
    const auto progress = [&](size_t done, size_t total) {
      fmt::print(stderr, "\rsweep [{:<40}] {}/{}", std::string(done * 40 / total, '#'), done, total);
    };
    std::string note;
    std::vector<SweepReport> reports;
    for (const auto& pass : sweep_passes(p, st->pass, note)) {
      reports.push_back(run_sweep(p, st->pf.seed, st->hw, st->algorithm, pass,
                                  st->progress ? progress : std::function<void(size_t, size_t)>()));
      if (st->progress && !reports.back().split) fmt::print(stderr, "\n");
    }
    if (!note.empty()) fmt::print(stderr, "flashsim: note: {}\n", note);
    if (st->rejected && reports.front().split)
      throw InputError("rejected", "the split-KV sweep lists every split count, a misfit marked in its row");
    if (st->json) {
      fmt::print("{}\n", to_json(reports, st->top, st->rejected).dump(2));
      return;
    }
    for (const auto& r : reports) {
      if (reports.size() > 1)
        fmt::print("{}== {} ==\n", &r == &reports.front() ? "" : "\n", pass_name(r.pass));
      if (st->rejected)
        print_rejected(r, st->csv);
      else
        print_sweep(r, st->top, st->csv);
    }
  });
}

struct L2ReuseState {
  std::string hw = "H200", replacement;
  double capacity_mib = 0;
  std::vector<double> buffers_mib{8, 16, 20, 24, 28, 32, 36, 40, 44, 48, 56, 64, 96};  // l2_probe.cu's
  int ctas_per_sm = 8;  // reuse_read's 256-thread CTAs: 2048 threads an SM
  bool json = false;
};

// `sim l2-reuse`: the L2 probe's read-reuse pattern through the partitioned L2 model, its miss per re-read for each
// buffer size (the curve `run.py derive l2-replacement` sets beside the measured one).
void add_l2_reuse(CLI::App* sim) {
  auto st = std::make_shared<L2ReuseState>();
  auto* cmd = sim->add_subcommand(
      "l2-reuse",
      "The L2 probe's read reuse (a buffer read 3 times in 64 KB chunks, each by other SMs) through the "
      "partitioned L2 model: miss per re-read for each buffer size");
  cmd->add_option("--hw", st->hw, "Hardware profile (its partitions, ways, replacement, l2_bytes)")
      ->capture_default_str();
  cmd->add_option("--capacity-mib", st->capacity_mib,
                  "The partitioned L2's capacity in MiB (default: l2_bytes)")
      ->check(CLI::Range(1.0, 1e6));
  cmd->add_option("--replacement", st->replacement, "A set's replacement instead of the profile's")
      ->check(CLI::IsMember(sim::kL2Replacements));
  cmd->add_option("--buffers-mib", st->buffers_mib, "Buffer sizes in MiB, comma-separated (each at least 1)")
      ->delimiter(',')
      ->check(CLI::Range(1.0, 1e6))
      ->capture_default_str();
  cmd->add_option("--ctas-per-sm", st->ctas_per_sm, "Resident CTAs an SM")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  cmd->add_flag("--json", st->json, "Print JSON");
  cmd->callback([st] {
    auto hw = sim::load_profile(st->hw);
    if (!st->replacement.empty()) hw.l2_replacement = st->replacement;
    const auto capacity =
        st->capacity_mib > 0 ? static_cast<int64_t>(st->capacity_mib * 1048576.0) : hw.l2_bytes;
    nlohmann::json rows = nlohmann::json::array();
    if (!st->json)
      fmt::print("{} L2 model: {} partitions of {}-way {} sets, {:.2f} MiB; {} CTAs an SM\n", hw.name,
                 hw.l2_partitions, hw.l2_ways, hw.l2_replacement, static_cast<double>(capacity) / 1048576.0,
                 st->ctas_per_sm);
    for (double mib : st->buffers_mib) {
      const double miss =
          sim::simulate_l2_reuse_probe(hw, capacity, static_cast<int64_t>(mib * 1048576.0), st->ctas_per_sm);
      rows.push_back({{"buffer_mib", mib}, {"miss_per_reread", miss}});
      if (!st->json) fmt::print("  buffer {:6.1f} MiB read 3x -> miss per re-read {:.3f}\n", mib, miss);
    }
    if (st->json)
      fmt::print("{}\n", nlohmann::json{{"hw", hw.name},
                                        {"l2_replacement", hw.l2_replacement},
                                        {"capacity_bytes", capacity},
                                        {"ctas_per_sm", st->ctas_per_sm},
                                        {"rows", rows}}
                             .dump(2));
  });
}

void add_sim(CLI::App& app) {
  auto* sim = app.add_subcommand("sim", "Tiling simulator");
  sim->require_subcommand(1);
  add_tune_command(sim);
  auto* pr =
      sim->add_subcommand("predict",
                          "Predict the traffic, occupancy and time of an algorithm's kernels (or of named "
                          "kernel models)");
  auto st = std::make_shared<PredictState>();
  st->pf.add_to(pr);
  st->tf.add_to(pr);
  pr->add_option("--hw", st->hw, "Hardware profile (flashsim hw list)")->capture_default_str();
  pr->add_option("--pass", st->pass, "fwd, bwd or both")
      ->check(CLI::IsMember({"fwd", "bwd", "both"}))
      ->capture_default_str();
  pr->add_option("--algorithm", st->algorithm,
                 "naive, three-pass, two-pass, fa1 or fa2: its kernels (three-pass, two-pass and fa1 have no "
                 "backward of their own: theirs is fa2's)")
      ->check(CLI::IsMember(algorithm_names()))
      ->capture_default_str();
  pr->add_option(
        "--kernel", st->kernels,
        "Kernel models by name instead of an algorithm (repeatable; flashsim sim kernels lists them)")
      ->delimiter(',');
  pr->add_flag("--json", st->json, "JSON output");
  pr->add_flag("--executed", st->executed, "Run the full schedule instead of the closed form");
  pr->add_option("--vs", st->vs,
                 "Another tile as tile flags (\"--block-q 64 --warps 8\"; the ones not given keep this "
                 "command's): both predicted, side by side with their differences");
  st->memory.add_to(pr);
  pr->callback([st] {
    PredictRequest req;
    req.problem = st->pf.problem();
    req.seed = st->pf.seed;
    req.given = st->tf.config();
    req.apply_given = [st](const TileConfig& base) { return st->tf.over(base); };
    req.hw = st->hw;
    req.pass = st->pass;
    req.algorithm = st->algorithm;
    req.kernels = st->kernels;
    req.executed = st->executed;
    req.max_memory_bytes = st->memory.bytes();
    const auto r = run_predict(req);
    if (!st->vs.empty()) {
      PredictRequest other = req;
      other.apply_given = vs_tile(st->vs, req.apply_given);
      other.given = other.apply_given(TileConfig{});
      app::PredictReport rb;
      try {
        rb = run_predict(other);
      } catch (const InputError& e) {
        throw InputError("vs", fmt::format("'{}': {}", st->vs, e.what()));
      }
      if (!r.fits) throw InputError("tile", r.misfit);
      if (st->json)
        fmt::print("{}\n", nlohmann::json{{"a", to_json(r)},
                                          {"b", to_json(rb)},
                                          {"differs", tile_differences(r.tile, rb.tile, st->pass)}}
                               .dump(2));
      else
        print_versus(r, rb, st->vs, st->pass);
      if (!rb.fits) {
        std::fprintf(stderr, "flashsim: error: vs: %s\n", rb.misfit.c_str());
        set_exit_code(2);
      }
      return;
    }
    const auto& p = r.problem;
    const auto& hw = r.hw;
    const auto& c = r.tile;
    // A config that does not fit is bad input (exit 2): one line, except that --json still prints the counts
    // (explorers such as bench/sim_charts.py chart them) before the error line on stderr.
    if (!r.fits && !st->json) throw InputError("tile", r.misfit);
    if (st->json) {
      fmt::print("{}\n", to_json(r).dump(2));
    } else {
      fmt::print("{}\n{}\nhardware: {}\n", p.describe(), r.config, hw.name);
      if (r.split)
        fmt::print(
            "split-KV forward: {} split{}, the group's {} query heads packed per CTA; K and V to read {}; "
            "FA2's heuristic would pick {} split{}\n",
            c.num_splits, c.num_splits > 1 ? "s" : "", p.group_size(), human(sim::kv_cache_bytes(p)),
            sim::splitkv_heuristic(p, c, hw), sim::splitkv_heuristic(p, c, hw) > 1 ? "s" : "");
      print_predictions(r.kernels);
      print_waves_note(r.kernels, hw);
      if (r.masked)
        fmt::print("block mask: {} of {} tiles skipped (no K/V bytes, no FLOPs), {} computed\n", r.skipped,
                   r.tiles + r.skipped, r.tiles);
      if (!r.note.empty()) fmt::print("{}\n", r.note);
      print_time_note(r.kernels, hw);
    }
    if (!r.fits) {
      std::fprintf(stderr, "flashsim: error: tile: %s\n", r.misfit.c_str());
      set_exit_code(2);
    }
  });
  auto* list = sim->add_subcommand("kernels", "List the kernel models: name, algorithm, pass, ncu names");
  list->callback([] {
    size_t w = 18;  // the longest kernel name
    for (const auto* m : sim::kernel_models()) w = std::max(w, m->name.size());
    fmt::print("{:<{}} {:<10} {:<4} {:<44} {}\n", "kernel", w, "algorithm", "pass", "ncu kernel names",
               "what it does");
    for (const auto* m : sim::kernel_models()) {
      std::string ncu;
      for (const auto& n : m->ncu_names) {
        if (!ncu.empty()) ncu += ' ';
        ncu += sim::ncu_name_hint(n);
      }
      fmt::print("{:<{}} {:<10} {:<4} {:<44} {}\n", m->name, w,
                 m->algorithm ? algorithm_name(*m->algorithm) : std::string_view("-"), pass_name(m->pass),
                 ncu.empty() ? "-" : ncu, m->summary);
    }
  });
  add_sweep(sim);
  add_l2_reuse(sim);
}

struct CompareState {
  ProblemFlags pf = kernel_problem_flags();
  std::string ncu, ncu_dram, hw = kDefaultHw, replayed = "auto";
  double stack_bytes = -1;
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
  cmp->add_option("--hw", st->hw, "Hardware profile (flashsim hw list)")->capture_default_str();
  cmp->add_option(
         "--stack-bytes", st->stack_bytes,
         "The profiled kernels' stack frame in bytes a thread (cuobjdump -res-usage's STACK, or ptxas "
         "-v's 'bytes stack frame'; the largest when they differ): the L2 models walk each CTA's frame "
         "(stored at its start, loaded at its end) and read back what they evict, and a causal forward's "
         "partitioned-L2 read bound needs it when the kernel "
         "spills (unknown: the bound is left out)")
      ->check(CLI::Range(0.0, 1048576.0));
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
    // the problem: the flags given, the rest from the report (what its grids, template arguments and SM-side
    // bytes determine)
    app::ProblemFlags flags = st->pf;
    // --heads-kv alone: the default --heads is a placeholder the report's grid replaces (kept valid meanwhile)
    if (!st->pf.given("--heads") && st->pf.given("--heads-kv")) flags.heads = st->pf.heads_kv;
    const sim::ProblemFromReport from = sim::problem_from_report(
        kernels, flags.problem(), [st](const std::string& f) { return st->pf.given(f); });
    const AttentionProblem& p = from.problem;
    // the block table and block mask of the profiled run's inputs (--seed: flashsim-gpu's are seed 1)
    const sim::ProblemData data = sim::problem_data(p, st->pf.seed);
    const auto c = sim::compare_ncu(kernels, p, hw, replayed, &data, st->stack_bytes);
    if (st->json) {
      auto j = sim::to_json(c);
      if (!from.from_report.empty())  // the flags left something to the report
        j["problem"] = {
            {"describe", p.describe()}, {"from_report", from.from_report}, {"assumed", from.assumed}};
      j["dram_counters"] = !st->ncu_dram.empty() ? "one-pass report (--ncu-dram)"
                           : replayed            ? "replayed (collected with other metrics)"
                                                 : "one pass";
      fmt::print("{}\n", j.dump(2));
    } else {
      if (!from.from_report.empty()) {
        fmt::print("problem: {}\n  from the report: {}\n", p.describe(), fmt::join(from.from_report, "; "));
        if (!from.assumed.empty()) fmt::print("  assumed: {}\n", fmt::join(from.assumed, "; "));
      }
      for (const auto& k : c.kernels) {
        fmt::print("{}\n", k.name);
        if (!k.recognized) {
          fmt::print("  (not recognized: skipped)\n");
          continue;
        }
        fmt::print("  {:<48} {:>16} {:>16} {:>8} {:>22} {}\n", "metric", "measured", "predicted", "ratio",
                   "tol / DRAM range (MB)", "verdict");
        // tol: the relative tolerance; DRAM figures: the range the figure was judged against, in MB (10^6
        // bytes): the range a correct L2 allows widened by the counters' spread on each side
        const auto tol = [](const sim::MetricComparison& m) {
          if (m.interval)
            return fmt::format("{:.1f} .. {:.1f}", std::max(0.0, m.lower - m.floor) / 1e6,
                               (m.upper + m.floor) / 1e6);
          if (m.tolerance <= 0) return std::string("-");
          return fmt::format("{:.0f}%", m.tolerance * 100);
        };
        // rows without a verdict: the time (an estimate) and the local-memory (spill) bytes, which the model
        // takes as none
        const auto verdict = [](const sim::MetricComparison& m) -> std::string {
          if (!m.verdict.empty()) return m.verdict;
          if (m.metric == "gpu__time_duration.sum") return "estimate (ns), not held";
          return m.measured == 0 ? "ok (no spills)" : "unexplained (spills: the model counts none)";
        };
        for (const auto& m : k.metrics)
          fmt::print("  {:<48} {:>16.0f} {:>16.0f} {:>8.4f} {:>22} {}\n", m.metric, m.measured, m.predicted,
                     m.ratio, tol(m), verdict(m));
      }
      fmt::print("{}\n", c.ok ? "all metrics within tolerance (DRAM: within the L2's range)"
                              : "SOME METRICS OUT OF TOLERANCE OR OUT OF THE L2'S RANGE");
      // The adverse L2's capacity: measured (the FlashAttention mimics' re-reads) or, unmeasured, what data
      // re-read by other SMs survives, less what the kernel's dirty lines may hold.
      const bool measured = hw.l2_adverse_reuse_bytes > 0;
      fmt::print(
          "DRAM range: from the compulsory bytes (each tensor once; dirty bytes less what L2 can keep dirty) "
          "to the schedule through an adverse L2 ({}: an LRU of {:.2f} MiB, {}, less what spill frames hold; "
          "reads plus {:.0f} KiB of kernel code), widened on each side by the counters' run-to-run spread "
          "({:.1f}% of the kernel's measured DRAM bytes){}\n",
          hw.name, sim::adverse_l2_base_bytes(hw) / 1048576.0,
          measured ? "what FlashAttention-like re-reads were measured to survive"
                   : "what data re-read by other SMs survives, less what the dirty lines hold",
          static_cast<double>(hw.kernel_code_bytes) / 1024.0, hw.ncu_dram_repeatability * 100,
          hw.ncu_dram_repeatability_source.empty()
              ? std::string(", not measured for this profile")
              : fmt::format(", {}", hw.ncu_dram_repeatability_source.substr(
                                        0, hw.ncu_dram_repeatability_source.find(':'))));
      if (replayed)
        fmt::print(
            "note: the DRAM counters come from a replayed ncu run (collected with other metrics): the "
            "predicted DRAM writes of every kernel after the first (and of a kernel after a memset of its "
            "pass) include {:.1f} MB that the replay "
            "leaves dirty in L2 (measured on the H100: calibration h100.ncu_replay_write_bytes){}; "
            "--replayed no drops it; for one-pass counters profile the run again with only "
            "dram__bytes_read.sum,dram__bytes_write.sum and pass it with --ncu-dram\n",
            hw.ncu_replay_write_bytes / 1e6,
            hw.ncu_replay_write_bytes > 0 ? "" : ", not measured for this profile");
    }
    // A wrong --heads-kv moves the compulsory K / V bytes: the DRAM figures then read as the kernel's EXCESS or
    // BELOW. Where the DRAM reads alone say other kv heads, the note names the flag (a kernel that re-reads K / V
    // could say more kv heads too: a note, not an error).
    if (!c.ok && st->pf.given("--heads-kv")) {
      const auto alone = sim::problem_from_report(
          kernels, p, [st](const std::string& f) { return f != "--heads-kv" && st->pf.given(f); });
      if (alone.problem.heads_kv != p.heads_kv)
        fmt::print(
            stderr,
            "note: --heads-kv says {}; the report's DRAM reads fit {} kv heads (the most whose "
            "compulsory reads fit under them): a wrong --heads-kv reads as the kernel's EXCESS or BELOW\n",
            p.heads_kv, alone.problem.heads_kv);
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
