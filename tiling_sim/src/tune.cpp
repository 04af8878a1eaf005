// `sim tune` and its check against a measured autotune (tune.h).
#include "flashsim/sim/tune.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <numeric>
#include <sstream>
#include <tuple>
#include <vector>

#include "flashsim/error.h"
#include "flashsim/families/fa2/hand_table.h"
#include "flashsim/families/fa2/instances.h"
#include "flashsim/families/fa3/instances.h"
#include "flashsim/families/fa3/tiles.h"
#include "flashsim/sim/kernel_model.h"
#include "flashsim/sim/ncu.h"  // split_csv
#include "flashsim/sim/sweep.h"

namespace flashsim::sim {

std::string_view tune_kernel_name(TuneKernel k) {
  return k == TuneKernel::Fa2Fwd ? "fa2-fwd" : k == TuneKernel::Fa2Bwd ? "fa2-bwd" : "fa3-fwd";
}

TuneKernel parse_tune_kernel(std::string_view s) {
  for (TuneKernel k : {TuneKernel::Fa2Fwd, TuneKernel::Fa2Bwd, TuneKernel::Fa3Fwd})
    if (s == tune_kernel_name(k)) return k;
  throw InputError("kernel", fmt::format("unknown kernel '{}' (known: fa2-fwd, fa2-bwd, fa3-fwd)", s));
}

std::vector<std::string> default_tune_features(TuneKernel k) {
  if (k == TuneKernel::Fa3Fwd) return {"causal"};
  return {"causal", "bias"};
}

std::string TuneFeatures::name() const {
  std::string out;
  for (auto [on, n] :
       {std::pair{causal, "causal"}, {bias, "bias"}, {mask, "mask"}, {softcap, "softcap"}, {alibi, "alibi"}})
    if (on) {
      if (!out.empty()) out += '+';
      out += n;
    }
  return out.empty() ? "plain" : out;
}

namespace {
// A feature's flag in TuneFeatures; nullptr for an unknown name.
bool TuneFeatures::*feature_field(std::string_view n) {
  return n == "causal"                 ? &TuneFeatures::causal
         : n == "bias" || n == "dbias" ? &TuneFeatures::bias
         : n == "mask"                 ? &TuneFeatures::mask
         : n == "softcap"              ? &TuneFeatures::softcap
         : n == "alibi"                ? &TuneFeatures::alibi
                                       : nullptr;
}
InputError unknown_feature(std::string_view n) {
  return InputError(
      "features", fmt::format("unknown feature '{}' (known: causal, bias, dbias, mask, softcap, alibi)", n));
}
}  // namespace

TuneFeatures parse_tune_features(std::string_view s) {
  TuneFeatures t;
  if (s == "plain") return t;
  size_t start = 0;
  while (start <= s.size()) {
    const size_t end = std::min(s.find('+', start), s.size());
    bool TuneFeatures::*f = feature_field(s.substr(start, end - start));
    if (!f) throw unknown_feature(s.substr(start, end - start));
    t.*f = true;
    start = end + 1;
  }
  return t;
}

std::vector<TuneFeatures> feature_combinations(const std::vector<std::string>& names) {
  std::vector<bool TuneFeatures::*> fields;
  for (const auto& n : names) {
    bool TuneFeatures::*f = feature_field(n);
    if (!f) throw unknown_feature(n);
    if (std::find(fields.begin(), fields.end(), f) == fields.end()) fields.push_back(f);
  }
  std::vector<TuneFeatures> out;
  for (size_t bits = 0; bits < (size_t{1} << fields.size()); ++bits) {
    TuneFeatures t;
    for (size_t i = 0; i < fields.size(); ++i)
      if (bits & (size_t{1} << i)) t.*fields[i] = true;
    out.push_back(t);
  }
  return out;
}

AttentionProblem tune_problem(int64_t batch, int64_t heads, int64_t head_dim, DType dtype,
                              const TuneFeatures& f, int64_t seqlen) {
  AttentionProblem p;
  p.batch = batch;
  p.heads_q = p.heads_kv = heads;
  p.seqlen_q = p.seqlen_k = seqlen;
  p.head_dim = p.head_dim_v = head_dim;
  p.dtype = dtype;
  if (f.causal) p.window_right = 0;
  if (f.bias) p.bias = BroadcastShape::BHQK;
  if (f.mask) p.mask = BroadcastShape::BHQK;
  if (f.softcap) p.softcap = 30;  // Gemma-2's attention softcap
  p.alibi = f.alibi;
  p.validate();
  return p;
}

AttentionProblem tune_problem(const TuneRequest& r, int64_t head_dim, DType dtype, const TuneFeatures& f,
                              int64_t seqlen) {
  return tune_problem(std::max<int64_t>(1, r.tokens / std::max<int64_t>(1, seqlen)),
                      std::max<int64_t>(1, r.width / head_dim), head_dim, dtype, f, seqlen);
}

std::vector<TileConfig> tune_space(TuneKernel k, TuneSpace s, int64_t head_dim) {
  std::vector<TileConfig> out;
  if (k == TuneKernel::Fa3Fwd) {  // its instances in either space: sweep_space's tiles are fa2's
    for (const Fa3FwdInstance& e : kFa3FwdInstances)
      if (e.head_dim == head_dim) out.push_back(fa3_instance_tile(e));
    return out;
  }
  const Pass pass = k == TuneKernel::Fa2Fwd ? Pass::Forward : Pass::Backward;
  if (s == TuneSpace::All) return sweep_space(pass);
  if (k == TuneKernel::Fa2Fwd) {
    for (const Fa2FwdInstance& e : kFa2FwdInstances)
      for (int st = kFa2FwdMinStages; st <= kFa2FwdMaxStages; ++st)
        if (e.head_dim == head_dim && fa2_fwd_instantiated(e.head_dim, e.block_q, e.block_k, e.warps, st)) {
          TileConfig c;
          c.block_q = e.block_q;
          c.block_k = e.block_k;
          c.warps = e.warps;
          c.stages = st;
          out.push_back(c);
        }
  } else {
    for (const Fa2BwdInstance& e : kFa2BwdInstances)
      if (e.head_dim == head_dim) {
        TileConfig c;
        c.bwd_block_q = e.block_q;
        c.bwd_block_k = e.block_k;
        c.warps = e.warps;
        out.push_back(c);
      }
  }
  return out;
}

std::string tune_config_name(TuneKernel k, const TileConfig& c) {
  if (k == TuneKernel::Fa2Bwd) return fmt::format("Br{} Bc{} w{}", c.bwd_block_q, c.bwd_block_k, c.warps);
  return fmt::format("Br{} Bc{} w{} st{}{}{}", c.block_q, c.block_k, c.warps, c.stages,
                     c.q_in_registers ? " Qreg" : "", c.kv_shared_buffer ? " KVshared" : "");
}

namespace {

Pass pass_of(TuneKernel k) {
  return k == TuneKernel::Fa2Bwd ? Pass::Backward : Pass::Forward;
}

// The pass's kernels predicted (analytic counts); fits: every kernel fits. fa3-fwd: fa3-v1's forward model
// (its registers are the instance arithmetic's: the compiled table holds fa2-v1's).
TuneRow predict_row(TuneKernel k, const AttentionProblem& p, const TileConfig& c, const HardwareProfile& hw,
                    const KernelResources& compiled, bool& fits) {
  if (k == TuneKernel::Fa3Fwd)
    return predict_config(p, c, hw, {&kernel_model("fwd_fa3")}, nullptr, fits, nullptr);
  return predict_config(p, c, hw, kernels_of(Algorithm::Fa2, pass_of(k)), nullptr, fits,
                        compiled.empty() ? nullptr : &compiled);
}

// The pick between the model's best and the hand-kept config (kTuneResolution); index into ranked.
size_t table_index(const std::vector<TuneRow>& ranked, int hand) {
  return hand > 0 && ranked[static_cast<size_t>(hand)].time_s < (1 + kTuneResolution) * ranked[0].time_s
             ? static_cast<size_t>(hand)
             : 0;
}

bool same_tile(TuneKernel k, const TileConfig& a, const TileConfig& b) {
  if (k == TuneKernel::Fa2Bwd)
    return a.bwd_block_q == b.bwd_block_q && a.bwd_block_k == b.bwd_block_k && a.warps == b.warps;
  return a.block_q == b.block_q && a.block_k == b.block_k && a.warps == b.warps && a.stages == b.stages &&
         a.q_in_registers == b.q_in_registers && a.kv_shared_buffer == b.kv_shared_buffer;
}
// The hand-kept config's index in a ranking (-1: not there).
int hand_index(TuneKernel k, const std::vector<TuneRow>& ranked, int64_t head_dim, const TuneFeatures& f) {
  const Fa3FwdInstance* fa3_hand = fa3_fwd_instance(static_cast<int>(head_dim));
  if (k == TuneKernel::Fa3Fwd && !fa3_hand) return -1;
  const TileConfig hand =
      k == TuneKernel::Fa3Fwd ? fa3_instance_tile(*fa3_hand) : fa2_hand_launch_tile(head_dim, f.pipeline());
  for (size_t i = 0; i < ranked.size(); ++i)
    if (same_tile(k, ranked[i].config, hand)) return static_cast<int>(i);
  return -1;
}

}  // namespace

const TuneRow& TuneEntry::table_pick() const {
  return ranked.at(table_index(ranked, hand));
}

bool TuneEntry::keeps_hand() const {
  return !ranked.empty() && table_index(ranked, hand) != 0;
}

std::string TuneEntry::reason() const {
  if (ranked.empty()) return "no config fits";
  const TuneRow& b = table_pick();
  std::string s =
      fmt::format("{:.1f} us, {}-bound, {} CTA/SM ({}), {} regs, {:.0f} MB DRAM, {:.0f} MB L2->SM",
                  b.time_s * 1e6, b.kernel_bound, b.ctas_per_sm, b.limiter, b.regs,
                  static_cast<double>(b.dram_bytes) / 1e6, static_cast<double>(b.load_bytes) / 1e6);
  if (keeps_hand())
    s += fmt::format("; the hand-kept config, kept: {} is predicted only {:.1f}% faster (< {:.0f}%)",
                     tune_config_name(kernel, ranked[0].config), (b.time_s / ranked[0].time_s - 1) * 100,
                     kTuneResolution * 100);
  else if (ranked.size() > 1)
    s += fmt::format("; runner-up {} +{:.1f}%", tune_config_name(kernel, ranked[1].config),
                     (ranked[1].time_s / b.time_s - 1) * 100);
  return s;
}

KernelResources tune_resources(const TuneRequest& r, const HardwareProfile& hw) {
  if (r.space != TuneSpace::Instances) return {};
  return r.resources_file.empty() ? KernelResources::builtin(hw.kernel_arch)
                                  : KernelResources::from_file(r.resources_file);
}

TuneResult tune(const TuneRequest& r, const HardwareProfile& hw,
                const std::function<void(size_t, size_t)>& progress) {
  const KernelResources compiled = tune_resources(r, hw);
  TuneResult out;
  out.request = r;
  out.hw = hw;
  const size_t total = r.head_dims.size() * r.dtypes.size() * r.features.size() * r.seqlens.size();
  // A head dim fa2-v1 has no instance of: nothing to rank (an error, not "0 of 0 configs fit").
  for (int64_t d : r.head_dims)
    if (r.space == TuneSpace::Instances && tune_space(r.kernel, r.space, d).empty()) {
      std::vector<int> dims;  // the instance tables' head dims, in order, once each
      if (r.kernel == TuneKernel::Fa3Fwd)
        for (const Fa3FwdInstance& e : kFa3FwdInstances) dims.push_back(e.head_dim);
      else if (r.kernel == TuneKernel::Fa2Fwd)
        for (const Fa2FwdInstance& e : kFa2FwdInstances) dims.push_back(e.head_dim);
      else
        for (const Fa2BwdInstance& e : kFa2BwdInstances) dims.push_back(e.head_dim);
      std::sort(dims.begin(), dims.end());
      dims.erase(std::unique(dims.begin(), dims.end()), dims.end());
      const std::string have = fmt::format("{}", fmt::join(dims, ", "));
      throw InputError(
          "head_dims",
          fmt::format("head dim {}: {} has no {} instance of it (it compiles head "
                      "dims {}{})",
                      d, r.kernel == TuneKernel::Fa3Fwd ? "fa3-v1" : "fa2-v1",
                      r.kernel == TuneKernel::Fa2Bwd ? "backward" : "forward", have,
                      r.kernel == TuneKernel::Fa3Fwd ? "" : "; --space all ranks any head dim's configs"));
    }
  // fa3-v1's score pipeline has scale, softcap and windows: a feature it lacks is an error, not a ranking of
  // kernels that cannot run it.
  if (r.kernel == TuneKernel::Fa3Fwd)
    for (const TuneFeatures& f : r.features)
      if (f.bias || f.mask || f.alibi)
        throw InputError("features",
                         fmt::format("fa3-fwd: fa3-v1 runs no {} (its features: causal, softcap)", f.name()));
  const HardwareProfile rank_hw = ranking_profile(hw);
  for (int64_t d : r.head_dims)
    for (DType t : r.dtypes)
      for (const TuneFeatures& f : r.features)
        for (int64_t n : r.seqlens) {
          TuneEntry e;
          e.kernel = r.kernel;
          e.head_dim = d;
          e.dtype = t;
          e.features = f;
          e.seqlen = n;
          e.problem = tune_problem(r, d, t, f, n);
          const auto configs = tune_space(r.kernel, r.space, d);
          e.configs = static_cast<int64_t>(configs.size());
          for (const TileConfig& c : configs) {
            // an fa3-v1 instance without a softcapped kernel (instances.h) does not run a softcap
            if (r.kernel == TuneKernel::Fa3Fwd && f.softcap &&
                !fa3_fwd_instance(static_cast<int>(d), static_cast<int>(c.block_q),
                                  static_cast<int>(c.block_k), c.stages)
                     ->softcap)
              continue;
            bool fits = true;
            TuneRow row = predict_row(r.kernel, e.problem, c, rank_hw, compiled, fits);
            if (fits) e.ranked.push_back(std::move(row));
          }
          std::stable_sort(e.ranked.begin(), e.ranked.end(), ranks_before);
          e.hand = hand_index(r.kernel, e.ranked, d, f);
          out.entries.push_back(std::move(e));
          if (progress) progress(out.entries.size(), total);
        }
  return out;
}

nlohmann::json to_json(const TuneResult& r, int top) {
  nlohmann::json entries = nlohmann::json::array();
  for (const TuneEntry& e : r.entries) {
    nlohmann::json rows = nlohmann::json::array();
    for (size_t i = 0; i < e.ranked.size() && (top <= 0 || static_cast<int>(i) < top); ++i) {
      const TuneRow& w = e.ranked[i];
      rows.push_back({{"config", tune_config_name(r.request.kernel, w.config)},
                      {"tile", pass_knobs_json(w.config, pass_of(r.request.kernel))},
                      {"time_s", w.time_s},
                      {"bound", w.kernel_bound},
                      {"ctas_per_sm", w.ctas_per_sm},
                      {"occupancy_limiter", w.limiter},
                      {"registers_per_thread", w.regs},
                      {"shared_memory_bytes", w.smem_bytes},
                      {"dram_bytes", w.dram_bytes},
                      {"load_bytes", w.load_bytes}});
    }
    entries.push_back(
        {{"head_dim", e.head_dim},
         {"dtype", dtype_name(e.dtype)},
         {"features", e.features.name()},
         {"seqlen", e.seqlen},
         {"problem", e.problem.describe()},
         {"configs_tried", e.configs},
         {"configs_fit", e.ranked.size()},
         {"best", e.ranked.empty() ? "" : tune_config_name(r.request.kernel, e.ranked[0].config)},
         {"table", e.ranked.empty() ? "" : tune_config_name(r.request.kernel, e.table_pick().config)},
         {"reason", e.reason()},
         {"ranked", rows}});
  }
  return {{"kernel", tune_kernel_name(r.request.kernel)},
          {"hw", r.hw.name},
          {"space", r.request.space == TuneSpace::Instances ? "instances" : "all"},
          {"entries", entries}};
}

std::string launch_table_entries(const TuneResult& r) {
  std::string s;
  const bool fwd = r.request.kernel != TuneKernel::Fa2Bwd;
  for (const TuneEntry& e : r.entries) {
    if (e.ranked.empty()) continue;
    const TileConfig& c = e.table_pick().config;
    s += fmt::format("    // d{} {} {} n{}: {}\n", e.head_dim, dtype_name(e.dtype), e.features.name(),
                     e.seqlen, e.reason());
    if (r.request.kernel == TuneKernel::Fa3Fwd) {  // families/fa3's Fa3LaunchEntry: no score-pipeline flag
      s += fmt::format("    {{{}, {}, {}, {}, {}, {}, {}}},\n", e.head_dim,
                       e.dtype == DType::BF16 ? "true" : "false", e.features.causal ? "true" : "false",
                       e.seqlen, c.block_q, c.block_k, c.stages);
      continue;
    }
    s += fmt::format("    {{{}, {}, {}, {}, {}, {}, {}, {}, {}}},\n", e.head_dim,
                     e.dtype == DType::BF16 ? "true" : "false", e.features.causal ? "true" : "false",
                     e.features.pipeline() ? "true" : "false", e.seqlen, fwd ? c.block_q : c.bwd_block_q,
                     fwd ? c.block_k : c.bwd_block_k, c.warps, fwd ? c.stages : 1);
  }
  return s;
}

// ---- the check against a measured autotune

namespace {

// Average ranks (1-based) of x, ties sharing their mean rank.
std::vector<double> ranks(const std::vector<double>& x) {
  std::vector<size_t> idx(x.size());
  std::iota(idx.begin(), idx.end(), 0);
  std::sort(idx.begin(), idx.end(), [&](size_t a, size_t b) { return x[a] < x[b]; });
  std::vector<double> r(x.size());
  for (size_t i = 0; i < idx.size();) {
    size_t j = i;
    while (j + 1 < idx.size() && x[idx[j + 1]] == x[idx[i]]) ++j;
    const double mean = (static_cast<double>(i) + static_cast<double>(j)) / 2 + 1;
    for (size_t k = i; k <= j; ++k) r[idx[k]] = mean;
    i = j + 1;
  }
  return r;
}

}  // namespace

double spearman(const std::vector<double>& x, const std::vector<double>& y) {
  if (x.size() != y.size() || x.size() < 2) return 0;
  const auto rx = ranks(x), ry = ranks(y);
  const double n = static_cast<double>(x.size());
  const double mx = std::accumulate(rx.begin(), rx.end(), 0.0) / n;
  const double my = std::accumulate(ry.begin(), ry.end(), 0.0) / n;
  double sxy = 0, sxx = 0, syy = 0;
  for (size_t i = 0; i < rx.size(); ++i) {
    sxy += (rx[i] - mx) * (ry[i] - my);
    sxx += (rx[i] - mx) * (rx[i] - mx);
    syy += (ry[i] - my) * (ry[i] - my);
  }
  return sxx > 0 && syy > 0 ? sxy / std::sqrt(sxx * syy) : 0;
}

std::vector<MeasuredRow> read_autotune_csv(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw InputError("measured", "cannot open " + path);
  std::string line;
  if (!std::getline(in, line)) throw InputError("measured", path + ": empty file");
  const auto header = split_csv(line);
  auto col = [&](const char* name) -> int {
    const auto it = std::find(header.begin(), header.end(), name);
    return it == header.end() ? -1 : static_cast<int>(it - header.begin());
  };
  for (const char* need : {"pass", "head_dim", "dtype", "seqlen_q", "batch", "heads", "causal", "bias", "ms"})
    if (col(need) < 0)
      throw InputError(
          "measured",
          fmt::format("{}: no column '{}' in the header (flashsim-gpu autotune's CSV)", path, need));
  std::vector<MeasuredRow> out;
  int lineno = 1;
  while (std::getline(in, line)) {
    ++lineno;
    if (line.empty()) continue;
    const auto f = split_csv(line);
    auto get = [&](const char* name) -> std::string {
      const int i = col(name);
      return i >= 0 && i < static_cast<int>(f.size()) ? f[static_cast<size_t>(i)] : std::string();
    };
    if (!get("skipped").empty() || get("ms").empty()) continue;
    try {
      MeasuredRow r;
      // the version (a CSV from before the column: fa2-v1); fa3-v1's backward has one tile, nothing to rank
      const std::string version = get("kernel").empty() ? "fa2-v1" : get("kernel");
      if (version != "fa2-v1" && version != "fa3-v1")
        throw InputError("measured",
                         fmt::format("kernel '{}': tune ranks fa2-v1's and fa3-v1's tiles", version));
      if (version == "fa3-v1" && get("pass") == "bwd") continue;
      r.kernel = version == "fa3-v1"    ? TuneKernel::Fa3Fwd
                 : get("pass") == "bwd" ? TuneKernel::Fa2Bwd
                                        : TuneKernel::Fa2Fwd;
      r.head_dim = std::stoll(get("head_dim"));
      r.seqlen = std::stoll(get("seqlen_q"));
      r.batch = std::stoll(get("batch"));
      r.heads = std::stoll(get("heads"));
      r.dtype = parse_dtype(get("dtype"));
      r.features.causal = get("causal") == "1";
      r.features.bias = get("bias") == "1";
      if (r.kernel != TuneKernel::Fa2Bwd) {
        r.config.block_q = std::stoll(get("block_q"));
        r.config.block_k = std::stoll(get("block_k"));
        r.config.stages = std::stoi(get("stages"));
      } else {
        r.config.bwd_block_q = std::stoll(get("bwd_block_q"));
        r.config.bwd_block_k = std::stoll(get("bwd_block_k"));
      }
      r.config.warps = std::stoi(get("warps"));
      r.ms = std::stod(get("ms"));
      r.hand = get("hand") == "1";
      r.table = get("table") == "1";
      if (!(r.ms > 0)) continue;
      out.push_back(r);
    } catch (const std::exception& e) {
      throw InputError("measured", fmt::format("{}:{}: {}", path, lineno, e.what()));
    }
  }
  return out;
}

TuneCheck check_tune(const std::vector<MeasuredRow>& rows, const HardwareProfile& hw,
                     const KernelResources& compiled) {
  // entries: (kernel, head dim, dtype, features, seqlen, batch, heads) -> their rows
  using Key = std::tuple<int, int64_t, int, std::string, int64_t, int64_t, int64_t>;
  std::map<Key, std::vector<const MeasuredRow*>> entries;
  for (const MeasuredRow& r : rows)
    entries[{static_cast<int>(r.kernel), r.head_dim, static_cast<int>(r.dtype), r.features.name(), r.seqlen,
             r.batch, r.heads}]
        .push_back(&r);
  std::map<std::tuple<int, int64_t, int>, std::vector<std::pair<std::vector<double>, std::vector<double>>>>
      groups;
  std::map<std::tuple<int, int64_t, int>, TuneCheckGroup> stats;
  TuneCheck out;
  for (const auto& [key, list] : entries) {
    const MeasuredRow& first = *list.front();
    const AttentionProblem p =
        tune_problem(first.batch, first.heads, first.head_dim, first.dtype, first.features, first.seqlen);
    std::vector<double> measured;
    std::vector<TuneRow> rows_predicted;
    double hand_ms = 0, table_ms = 0;
    for (const MeasuredRow* r : list) {
      bool fits = true;
      TuneRow row = predict_row(first.kernel, p, r->config, ranking_profile(hw), compiled, fits);
      if (!fits) row.time_s = 1e30;
      rows_predicted.push_back(std::move(row));
      measured.push_back(r->ms);
      if (r->hand) hand_ms = r->ms;
      if (r->table) table_ms = r->ms;
    }
    if (hand_ms > 0 && table_ms > 0) {
      ++out.table_entries;
      out.table_vs_hand_geomean += std::log(table_ms / hand_ms);
      out.table_vs_hand_worst = std::max(out.table_vs_hand_worst, table_ms / hand_ms);
      if (table_ms <= 1.02 * hand_ms) ++out.table_not_slower_than_hand;
    }
    const auto gk =
        std::make_tuple(static_cast<int>(first.kernel), first.head_dim, static_cast<int>(first.dtype));
    TuneCheckGroup& g = stats[gk];
    g.kernel = first.kernel;
    g.head_dim = first.head_dim;
    g.dtype = first.dtype;
    ++g.entries;
    ++out.entries;
    // tune's pick: the first in its ranking order (equal times broken as tune breaks them); the table's pick:
    // the hand-kept config unless that one beats it by kTuneResolution
    std::vector<size_t> order(list.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return ranks_before(rows_predicted[a], rows_predicted[b]); });
    const size_t pick = order[0];
    std::vector<TuneRow> sorted;
    for (size_t i : order) sorted.push_back(rows_predicted[i]);
    const int hand_rank = hand_index(first.kernel, sorted, first.head_dim, first.features);
    std::vector<double> predicted;
    for (const TuneRow& row : rows_predicted) predicted.push_back(row.time_s);
    const size_t rule_pick = order[table_index(sorted, hand_rank)];
    const double best = *std::min_element(measured.begin(), measured.end());
    const double ratio = measured[pick] / best;
    g.worst_pick_ratio = std::max(g.worst_pick_ratio, ratio);
    if (ratio <= 1.05) ++g.pick_within_5, ++out.within_5;
    if (ratio <= 1.10) ++g.pick_within_10, ++out.within_10;
    const double rule_ratio = measured[rule_pick] / best;
    out.rule_worst_pick_ratio = std::max(out.rule_worst_pick_ratio, rule_ratio);
    if (rule_ratio <= 1.05) ++out.rule_within_5;
    if (rule_ratio <= 1.10) ++out.rule_within_10;
    if (hand_ms > 0) {
      const double rule = measured[rule_pick] / hand_ms;
      out.rule_vs_hand_geomean += std::log(rule);
      out.rule_vs_hand_worst = std::max(out.rule_vs_hand_worst, rule);
      if (rule <= 1.02) ++out.rule_not_slower_than_hand;
      ++g.hand_entries;
      ++out.hand_entries;
      g.worst_vs_hand = std::max(g.worst_vs_hand, measured[pick] / hand_ms);
      if (measured[pick] <= 1.02 * hand_ms) ++out.not_slower_than_hand;
    }
    groups[gk].emplace_back(std::move(predicted), std::move(measured));
  }
  if (out.hand_entries > 0) out.rule_vs_hand_geomean = std::exp(out.rule_vs_hand_geomean / out.hand_entries);
  if (out.table_entries > 0)
    out.table_vs_hand_geomean = std::exp(out.table_vs_hand_geomean / out.table_entries);
  for (auto& [gk, list] : groups) {
    TuneCheckGroup& g = stats[gk];
    std::vector<double> all_p, all_m;
    double sum = 0, lo = 1;
    for (const auto& [p, m] : list) {
      const double s = spearman(p, m);
      sum += s;
      lo = std::min(lo, s);
      // pooled: each entry's times relative to its fastest measured, so entries of different sizes compare
      const double best = *std::min_element(m.begin(), m.end());
      const double best_p = *std::min_element(p.begin(), p.end());
      for (size_t i = 0; i < p.size(); ++i) {
        all_p.push_back(p[i] / best_p);
        all_m.push_back(m[i] / best);
      }
    }
    g.spearman_mean = sum / static_cast<double>(list.size());
    g.spearman_min = lo;
    g.spearman_pooled = spearman(all_p, all_m);
    out.groups.push_back(g);
  }
  return out;
}

nlohmann::json to_json(const TuneCheck& c) {
  nlohmann::json groups = nlohmann::json::array();
  for (const TuneCheckGroup& g : c.groups)
    groups.push_back({{"kernel", tune_kernel_name(g.kernel)},
                      {"head_dim", g.head_dim},
                      {"dtype", dtype_name(g.dtype)},
                      {"entries", g.entries},
                      {"spearman_pooled", g.spearman_pooled},
                      {"spearman_mean", g.spearman_mean},
                      {"spearman_min", g.spearman_min},
                      {"pick_within_5pct", g.pick_within_5},
                      {"pick_within_10pct", g.pick_within_10},
                      {"worst_pick_over_best", g.worst_pick_ratio},
                      {"hand_entries", g.hand_entries},
                      {"worst_pick_over_hand", g.worst_vs_hand}});
  return {{"entries", c.entries},
          {"pick_within_5pct", c.within_5},
          {"pick_within_10pct", c.within_10},
          {"hand_entries", c.hand_entries},
          {"pick_not_slower_than_hand_by_2pct", c.not_slower_than_hand},
          {"rule_not_slower_than_hand_by_2pct", c.rule_not_slower_than_hand},
          {"rule_pick_within_5pct", c.rule_within_5},
          {"rule_pick_within_10pct", c.rule_within_10},
          {"rule_worst_pick_over_best", c.rule_worst_pick_ratio},
          {"rule_over_hand_geomean", c.rule_vs_hand_geomean},
          {"rule_over_hand_worst", c.rule_vs_hand_worst},
          {"table_entries", c.table_entries},
          {"table_not_slower_than_hand_by_2pct", c.table_not_slower_than_hand},
          {"table_over_hand_geomean", c.table_vs_hand_geomean},
          {"table_over_hand_worst", c.table_vs_hand_worst},
          {"groups", groups}};
}

}  // namespace flashsim::sim
