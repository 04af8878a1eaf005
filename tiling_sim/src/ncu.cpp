// Reading Nsight Compute CSV and comparing its traffic metrics with the model's prediction.
#include "flashsim/sim/ncu.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <regex>
#include <unordered_map>

#include "flashsim/error.h"
#include "flashsim/sim/dram_interval.h"
#include "flashsim/sim/l2_sim.h"
#include "ncu_detail.h"

namespace flashsim::sim {

std::vector<std::string> split_csv(const std::string& line) {
  std::vector<std::string> out;
  std::string cur;
  bool quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    const char ch = line[i];
    if (quoted) {
      if (ch == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        cur += '"';
        ++i;
      } else if (ch == '"') {
        quoted = false;
      } else {
        cur += ch;
      }
    } else if (ch == '"') {
      quoted = true;
    } else if (ch == ',') {
      out.push_back(cur);
      cur.clear();
    } else if (ch != '\r') {
      cur += ch;
    }
  }
  out.push_back(cur);
  return out;
}

namespace {

// The factor from a value in unit `u` to base units (bytes, sectors, nanoseconds, plain counts), or none when
// `u` is not a unit ncu writes for the metrics flashsim reads. ncu writes a SI or binary prefix and a base:
// "Kbyte", "Mibyte", "usecond", "Msector"; the details page before 2023 also "KB", "MiB", "us".
std::optional<double> unit_scale(const std::string& u) {
  static const std::map<std::string, double> whole = {{"", 1},
                                                      {"byte", 1},
                                                      {"sector", 1},
                                                      {"request", 1},
                                                      {"cycle", 1},
                                                      {"inst", 1},
                                                      {"warp", 1},
                                                      {"thread", 1},
                                                      {"block", 1},
                                                      {"register/thread", 1},
                                                      {"%", 1},
                                                      {"SM", 1},
                                                      {"cluster", 1},
                                                      {"pass", 1},
                                                      {"byte/block", 1},
                                                      {"nsecond", 1},
                                                      {"usecond", 1e3},
                                                      {"msecond", 1e6},
                                                      {"second", 1e9},
                                                      {"ns", 1},
                                                      {"us", 1e3},
                                                      {"ms", 1e6},
                                                      {"s", 1e9},
                                                      {"B", 1},
                                                      {"KB", 1e3},
                                                      {"MB", 1e6},
                                                      {"GB", 1e9},
                                                      {"TB", 1e12},
                                                      {"KiB", 1024.0},
                                                      {"MiB", 1048576.0},
                                                      {"GiB", 1073741824.0}};
  if (auto it = whole.find(u); it != whole.end()) return it->second;
  static const std::pair<const char*, double> prefixes[] = {
      {"Ki", 1024.0}, {"Mi", 1048576.0}, {"Gi", 1073741824.0}, {"Ti", 1099511627776.0},
      {"K", 1e3},     {"M", 1e6},        {"G", 1e9},           {"T", 1e12}};
  for (const auto& [prefix, factor] : prefixes) {
    const std::string pre(prefix);
    if (u.size() > pre.size() && u.compare(0, pre.size(), pre) == 0) {
      const std::string base = u.substr(pre.size());
      if (base == "byte" || base == "sector" || base == "request" || base == "cycle" || base == "inst")
        return factor;
    }
  }
  return std::nullopt;
}

// ncu's numbers carry thousands separators ("6,257,664"); "n/a" and empty cells are not numbers.
std::optional<double> parse_number(const std::string& text) {
  std::string v;
  for (char ch : text)
    if (ch != ',') v += ch;
  if (v.empty()) return std::nullopt;
  try {
    size_t used = 0;
    const double d = std::stod(v, &used);
    return used == v.size() ? std::optional<double>(d) : std::nullopt;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

void add_metric(NcuKernel& k, const std::string& metric, const std::string& unit, const std::string& value) {
  const auto v = parse_number(value);
  if (!v) return;
  const auto scale = unit_scale(unit);
  if (!scale) {
    k.unknown_units[metric] = unit;
    return;
  }
  k.metrics[metric] = *v * *scale;
}

}  // namespace

std::vector<NcuKernel> parse_ncu_csv(std::istream& in) {
  std::vector<NcuKernel> out;
  std::map<std::string, size_t> col;
  std::vector<std::string> header, units;  // the raw page: every column's name and (next row) unit
  bool raw = false;
  size_t columns = 0;  // fields a row needs: one past the largest column index used (names may repeat)
  std::string line;
  const auto start_kernel = [&](const std::vector<std::string>& f) -> NcuKernel& {
    NcuKernel k;
    k.id = f[col["ID"]];
    k.name = f[col["Kernel Name"]];
    if (col.count("Block Size")) k.block = f[col["Block Size"]];
    if (col.count("Grid Size")) k.grid = f[col["Grid Size"]];
    if (col.count("CC")) k.compute_capability = f[col["CC"]];
    out.push_back(std::move(k));
    return out.back();
  };
  while (std::getline(in, line)) {
    if (line.empty() || line.rfind("==", 0) == 0) continue;
    // Before the header, lines that are not quoted CSV are the profiled program's own output on the same
    // stdout.
    if (col.empty() && line[0] != '"') continue;
    auto f = split_csv(line);
    if (col.empty()) {
      for (size_t i = 0; i < f.size(); ++i) col[f[i]] = i;
      for (const char* need : {"ID", "Kernel Name"})
        if (!col.count(need))
          throw InputError("ncu", std::string("no '") + need + "' column in the CSV header");
      // The details page (the default) has a row per kernel and metric; the raw page (--page raw) a column
      // per metric, with the units in the row under the header.
      raw = !col.count("Metric Name");
      if (!raw)
        for (const char* need : {"Metric Unit", "Metric Value"})
          if (!col.count(need))
            throw InputError("ncu", std::string("no '") + need + "' column in the CSV header");
      if (raw) {
        header = f;
        if (std::none_of(f.begin(), f.end(),
                         [](const std::string& c) { return c.find("__") != std::string::npos; }))
          throw InputError("ncu",
                           "no 'Metric Name' column and no metric columns (unit__counter) in the CSV header: "
                           "neither ncu's details page nor its raw page");
      }
      for (const auto& [name, i] : col) columns = std::max(columns, i + 1);
      continue;
    }
    if (f.size() < columns) continue;
    if (raw) {
      if (units.empty() && f[col["ID"]].empty()) {  // the units row
        units = f;
        continue;
      }
      NcuKernel& k = start_kernel(f);
      for (size_t i = 0; i < header.size() && i < f.size(); ++i)
        if (header[i].find("__") != std::string::npos)  // metric names: unit__counter.rollup
          add_metric(k, header[i], i < units.size() ? units[i] : "", f[i]);
      continue;
    }
    if (out.empty() || out.back().id != f[col["ID"]]) start_kernel(f);
    add_metric(out.back(), f[col["Metric Name"]], f[col["Metric Unit"]], f[col["Metric Value"]]);
  }
  if (col.empty()) throw InputError("ncu", "no CSV header found (expected ncu --csv output)");
  return out;
}

std::optional<RecognizedKernel> recognize_kernel(const std::string& name) {
  // Each pattern compiled once (a report has a row per kernel and metric; the fuzzer calls this millions of
  // times); patterns are the models' string literals, so their addresses are stable keys.
  thread_local std::unordered_map<const char*, std::regex> compiled;
  for (const KernelModel* m : kernel_models())
    for (const NcuName& n : m->ncu_names) {
      auto it = compiled.find(n.pattern);
      if (it == compiled.end()) it = compiled.emplace(n.pattern, std::regex(n.pattern)).first;
      std::smatch match;
      if (!std::regex_search(name, match, it->second)) continue;
      RecognizedKernel r;
      r.model = m;
      r.config = n.config(match, name);
      if (n.head_dim_group > 0) r.head_dim = ncu_template_int(match[n.head_dim_group], name);
      r.pads_head_dim = n.pads_head_dim;
      const auto flag = [&](int group) -> std::optional<bool> {
        if (group <= 0 || !match[group].matched) return std::nullopt;
        return ncu_template_int(match[group], name) != 0;
      };
      r.causal = flag(n.causal_group);
      r.local = flag(n.local_group);
      return r;
    }
  return std::nullopt;
}

std::vector<NcuKernel> with_dram_counters(std::vector<NcuKernel> full, const std::vector<NcuKernel>& dram) {
  if (full.size() != dram.size())
    throw InputError("ncu-dram", "the DRAM report has " + std::to_string(dram.size()) +
                                     " kernels, the report " + std::to_string(full.size()) +
                                     ": profile the same run with the same -k filter");
  for (size_t i = 0; i < full.size(); ++i) {
    if (full[i].name != dram[i].name)
      throw InputError("ncu-dram", "kernel " + std::to_string(i + 1) + " differs between the reports ('" +
                                       full[i].name.substr(0, 60) + "' vs '" + dram[i].name.substr(0, 60) +
                                       "')");
    for (const char* m : {"dram__bytes_read.sum", "dram__bytes_write.sum"}) {
      const auto it = dram[i].metrics.find(m);
      if (it == dram[i].metrics.end())
        throw InputError("ncu-dram",
                         std::string("the DRAM report has no ") + m + " for kernel " + std::to_string(i + 1));
      full[i].metrics[m] = it->second;
    }
  }
  return full;
}

bool dram_counters_replayed(const std::vector<NcuKernel>& kernels) {
  for (const auto& k : kernels) {
    if (!k.metrics.count("dram__bytes_write.sum") && !k.metrics.count("dram__bytes_read.sum")) continue;
    for (const auto& [name, v] : k.metrics)
      if (name.rfind("dram__", 0) != 0 && name.rfind("lts__", 0) != 0 &&
          name.rfind("gpu__time_duration", 0) != 0)
        return true;
  }
  return false;
}

namespace {

// The kernel names the registered models answer to: each pattern's leading identifier.
std::string known_ncu_names() {
  std::string out;
  for (const KernelModel* m : kernel_models())
    for (const NcuName& n : m->ncu_names) out += (out.empty() ? "" : ", ") + ncu_name_hint(n);
  return out;
}

}  // namespace

std::vector<int64_t> parse_dim3(const std::string& text) {
  static const std::regex dim3(R"(^\s*\(\s*(\d+),\s*(\d+),\s*(\d+)\s*\)\s*$)");
  std::smatch m;
  if (!std::regex_match(text, m, dim3) || m[1].length() > 12 || m[2].length() > 12 || m[3].length() > 12)
    return {};
  return {std::stoll(m[1]), std::stoll(m[2]), std::stoll(m[3])};
}

namespace {

// The report's launch (grid and block, when it has them) against the problem's: a different grid means the
// problem flags are not the problem that was profiled, and every figure would be compared with the wrong
// prediction.
void check_launch(const NcuKernel& k, const KernelLaunch& l, const KernelModel& m,
                  const AttentionProblem& p) {
  const std::string& kind = m.name;
  const auto grid = parse_dim3(k.grid);
  const std::vector<int64_t> want = l.heads_then_batch ? std::vector<int64_t>{l.grid_x, l.grid_z, l.grid_y}
                                                       : std::vector<int64_t>{l.grid_x, l.grid_y, l.grid_z};
  if (!grid.empty() && grid.size() == 3 && grid != want) {
    // Where the grid is (blocks, batch, heads), say which flags disagree with it.
    std::vector<std::string> why;
    if (!m.counts && m.ncu_splits == KernelModel::NcuSplits::None) {
      const size_t yb = l.heads_then_batch ? 2 : 1, zh = l.heads_then_batch ? 1 : 2;
      const bool key_blocks = m.work_blocks == WorkBlocks::Backward;  // a backward main kernel: key blocks
      if (grid[0] != want[0])
        why.push_back(fmt::format("{} gives {} {} blocks, the report ran {}",
                                  key_blocks ? "--seqlen-k" : "--seqlen-q (or --seqlen)", want[0],
                                  key_blocks ? "key" : "query", grid[0]));
      if (grid[yb] != want[yb])
        why.push_back(fmt::format("--batch says {}, the report ran {}", p.batch, grid[yb]));
      if (grid[zh] != want[zh])
        why.push_back(fmt::format(
            "{} says {}, the report ran {} {}", m.per_kv_head ? "--heads-kv" : "--heads",
            m.per_kv_head ? p.heads_kv : p.heads_q, grid[zh], m.per_kv_head ? "kv heads" : "heads"));
    }
    throw InputError(
        "ncu", fmt::format("kernel {} ({}) ran a grid of {}, the problem given launches ({}, {}, {}){}", k.id,
                           kind, k.grid, want[0], want[1], want[2],
                           why.empty() ? std::string(": the problem flags (--batch, --heads, --seqlen, "
                                                     "...) are not the problem that was profiled")
                                       : ": " + fmt::format("{}", fmt::join(why, "; "))));
  }
  const auto block = parse_dim3(k.block);
  if (!block.empty() && block[0] * block[1] * block[2] != l.threads)
    throw InputError(
        "ncu", fmt::format("kernel {} ({}) ran {} threads per CTA ({}), its template arguments say {}", k.id,
                           kind, block[0] * block[1] * block[2], k.block, l.threads));
}

// What the report says the kernel was compiled for and ran on, against the flags: its head dim (the template
// arguments), FlashAttention-2's causal / local flags, and the GPU's compute capability against --hw's
// profile. A disagreement is the flags' (exit 2, naming the flag), not the kernel's.
void check_compiled_for(const NcuKernel& k, const RecognizedKernel& r, const AttentionProblem& p,
                        const HardwareProfile& hw) {
  const std::string what = fmt::format("kernel {} ({})", k.id, r.model->name);
  int64_t runs_on = p.head_dim;  // the kernel head dim the flags' head dim runs on
  if (r.pads_head_dim)
    for (const int64_t d : {32, 64, 96, 128, 160, 192, 224, 256})
      if (d >= p.head_dim) {
        runs_on = d;
        break;
      }
  if (r.head_dim > 0 && r.head_dim != runs_on)
    throw InputError(
        "head-dim",
        fmt::format("{} was compiled for head dim {}; --head-dim says {}{}", what, r.head_dim, p.head_dim,
                    runs_on != p.head_dim
                        ? fmt::format(" (FlashAttention-2 runs it on its d{} kernel)", runs_on)
                        : std::string()));
  const bool causal = p.window_left < 0 && p.window_right == 0;
  const bool window = !causal && (p.window_left >= 0 || p.window_right >= 0);
  if (r.causal && *r.causal != causal && !(r.local && *r.local && window))
    throw InputError("causal", fmt::format("{} was compiled {} a causal mask; the flags say {}", what,
                                           *r.causal ? "with" : "without",
                                           causal   ? "--causal"
                                           : window ? "a --window"
                                                    : "no mask"));
  if (r.local && *r.local != window && !(r.causal && *r.causal && causal))
    throw InputError("window", fmt::format("{} was compiled {} a sliding window (Is_local); the flags say {}",
                                           what, *r.local ? "with" : "without",
                                           window   ? "--window"
                                           : causal ? "--causal"
                                                    : "no window"));
  // ncu's CC column ("9.0") against the profile's sm_XY: the major versions must agree.
  if (!k.compute_capability.empty() && hw.kernel_arch.rfind("sm_", 0) == 0 && hw.kernel_arch.size() >= 4) {
    const std::string major = k.compute_capability.substr(0, k.compute_capability.find('.'));
    if (major != hw.kernel_arch.substr(3, hw.kernel_arch.size() - 4))
      throw InputError("hw", fmt::format("{} ran on a compute capability {} GPU; --hw {} profiles an {} GPU "
                                         "(flashsim hw list names the profiles)",
                                         what, k.compute_capability, hw.name, hw.kernel_arch));
  }
}

// The bytes a kernel's row-statistic stores (lse, D, the row sum: 4-byte rows in [batch, heads, seqlen], varlen
// [heads, total rows]) move through the LSU beyond their own: each store instruction writes `group` contiguous
// rows and the LSU moves every sector it touches whole (KernelModel::lsu_row_stat_rows): counted per
// instruction, where strided_sectors counts the union of the sectors a move touches.
double row_stat_store_excess(const KernelCounts& counts, const AttentionProblem& p, int group) {
  int tensors = 0;
  for (const ref::TensorId t : {ref::TensorId::Lse, ref::TensorId::Delta, ref::TensorId::RowSum})
    tensors += counts.tensors[static_cast<size_t>(t)].store.bytes > 0 ? 1 : 0;
  if (tensors == 0 || group <= 0) return 0;
  const std::vector<int64_t> cu = p.cu_seqlens_q();
  const int64_t total = cu.back();
  double excess = 0;
  for (int64_t h = 0; h < p.heads_q; ++h)
    for (int64_t b = 0; b < p.batch; ++b) {
      const int64_t len = p.len_q(b);
      const int64_t start =
          p.varlen() ? h * total + cu[static_cast<size_t>(b)] : (b * p.heads_q + h) * p.seqlen_q;
      for (int64_t r = 0; r < len; r += group) {
        const int64_t a = (start + r) * 4, bytes = std::min<int64_t>(group, len - r) * 4;
        excess += static_cast<double>(((a + bytes - 1) / 32 - a / 32 + 1) * 32 - bytes);
      }
    }
  return excess * tensors;
}

}  // namespace

SmSidePrediction sm_side_prediction(const KernelModel& m, const KernelCounts& counts,
                                    const AttentionProblem& p, const TileConfig& c) {
  // dQ by bulk copies: the TMA unit's, not the LSU's; its reduces are the L2's reduce sectors.
  const TensorTraffic& dq = counts.tensors[static_cast<size_t>(ref::TensorId::DqAccum)];
  const bool bulk = m.dq_by_bulk_copy;
  SmSidePrediction r;
  r.load = static_cast<double>(counts.load_bytes());
  r.stores = (m.lsu_store_sectors ? 32.0 * static_cast<double>(counts.store_sectors())
                                  : static_cast<double>(counts.store_bytes() - (bulk ? dq.store.bytes : 0))) +
             (m.lsu_row_stat_rows ? row_stat_store_excess(counts, p, m.lsu_row_stat_rows(c)) : 0.0);
  r.reduces = static_cast<double>(counts.reduce_bytes() - (bulk ? dq.reduce.bytes : 0));
  r.bulk_reduce_sectors = bulk ? static_cast<double>(dq.reduce.bytes) / 32 : -1;
  return r;
}

namespace {

// A DRAM figure against its interval: ok inside [lower - floor, upper + floor]; above, a finding about the
// kernel naming the tensor whose traffic the schedule says grows fastest (and, for a kernel that spills, its
// spill frames: written back, or read back where the range does not know the frame); below, fewer bytes than
// the compulsory ones. spill_bytes: ncu's local-memory store bytes, < 0 when the report has no such counter.
// frame_known: the range holds the kernel's stack frame (DramInterval::frame_known).
void judge_dram(MetricComparison& m, const DramBound& b, double floor, bool reads, double spill_bytes,
                bool frame_known) {
  m.interval = true;
  m.lower = b.lower;
  m.compulsory = b.compulsory;
  m.upper = b.upper;
  m.floor = floor;
  m.suspect = b.suspect;
  const char* what = reads ? "reads" : "writes";
  if (m.measured > b.upper + floor) {
    m.ok = false;
    m.verdict = fmt::format(
        "EXCESS: {} {:.2f}x more than any L2 behaviour explains: look at {} (the schedule moves it {:.0f}x "
        "its footprint)",
        what, m.measured / std::max(b.upper, 1.0), b.suspect, b.suspect_factor);
    if (spill_bytes > 0 && !reads)
      m.verdict += fmt::format(
          "; or its register-spill frames ({:.1f} MB of spill stores), which the range lets each CTA write "
          "back once",
          spill_bytes / 1e6);
    if (spill_bytes > 0 && reads && !frame_known)
      m.verdict += fmt::format(
          "; or its register-spill frames ({:.1f} MB of spill stores) read back from DRAM: give the kernel's "
          "--stack-bytes",
          spill_bytes / 1e6);
    if (spill_bytes < 0)
      m.verdict +=
          "; or register-spill frames, which this report cannot show (no "
          "l1tex__t_bytes_pipe_lsu_mem_local_op_st.sum: pass it as --ncu-dram with a full report, or give "
          "the kernel's --stack-bytes)";
  } else if (m.measured < b.lower - floor) {
    m.ok = false;
    const double over_lower = m.measured / std::max(b.lower, 1.0);
    m.verdict = b.lower > b.compulsory
                    ? fmt::format(
                          "BELOW: {} {:.2f}x what the schedule reads through the best cache of the whole "
                          "L2 ({:.2f}x the compulsory bytes): the profiled problem is not the flags', the "
                          "kernel skips work or runs another order",
                          what, over_lower, m.measured / std::max(b.compulsory, 1.0))
                    : fmt::format(
                          "BELOW: {} {:.2f}x the compulsory bytes: the profiled problem is not the "
                          "flags' or the kernel skips work",
                          what, over_lower);
  } else {
    m.verdict = "ok (within the L2's range)";
  }
}

}  // namespace

Comparison compare_ncu(const std::vector<NcuKernel>& kernels, const AttentionProblem& p,
                       const HardwareProfile& hw, bool replayed, const ProblemData* data,
                       double stack_bytes_per_thread) {
  Comparison c;
  int64_t last_splits = 1;  // the split count of the last split kernel recognized (NcuSplits::PreviousKernel)
  for (size_t i = 0; i < kernels.size(); ++i) {
    const NcuKernel& k = kernels[i];
    KernelComparison kc;
    kc.name = k.name;
    auto rec = recognize_kernel(k.name);
    kc.recognized = rec.has_value();
    if (rec) {
      if (rec->model->ncu_splits == KernelModel::NcuSplits::GridY) {
        if (const auto grid = parse_dim3(k.grid); !grid.empty()) rec->config.num_splits = grid[1];
        last_splits = rec->config.num_splits;
      } else if (rec->model->ncu_splits == KernelModel::NcuSplits::PreviousKernel) {
        rec->config.num_splits = last_splits;
      }
      check_compiled_for(k, *rec, p, hw);
      const KernelCounts counts = analytic_counts(*rec->model, p, rec->config, data);
      check_launch(k, counts.launch, *rec->model, p);
      L2Context ctx;
      SpillFacts spills;
      spills.stack_bytes_per_thread = stack_bytes_per_thread;
      if (auto w = k.metrics.find("dram__bytes_write.sum"); w != k.metrics.end())
        spills.measured_write_bytes = w->second;
      double spill_stores = -1;  // ncu's local-memory store bytes; < 0: the report has no such counter
      if (auto it = k.metrics.find("l1tex__t_bytes_pipe_lsu_mem_local_op_st.sum"); it != k.metrics.end()) {
        spill_stores = it->second;
        ctx.spill_store_bytes_per_cta =
            spill_stores / static_cast<double>(std::max<int64_t>(1, counts.launch.ctas()));
        spills.store_bytes_per_cta = ctx.spill_store_bytes_per_cta;
      }
      KernelPrediction pr = predict_kernel(counts, hw, ctx);
      if (replayed &&
          (i > 0 ||
           rec->model->follows_memset)) {  // ncu's replay leaves dirty data in L2 that this kernel evicts
        kc.replay_write_bytes = hw.ncu_replay_write_bytes;
        pr.dram_write += static_cast<int64_t>(hw.ncu_replay_write_bytes);
      }
      kc.name = rec->model->name + " (" + k.name.substr(0, k.name.find('<')) + ")";
      DramInterval range = dram_interval(*rec->model, p, rec->config, pr, hw, spills, data);
      // The replay's dirty data is ncu's, not the kernel's: it raises the upper bound only (its amount varies
      // between kernels: 1.9 .. 3.4 MB on SDPA's, less on fa2-v1's).
      range.write.upper += kc.replay_write_bytes;
      const SmSidePrediction sm = sm_side_prediction(*rec->model, counts, p, rec->config);
      const std::pair<const char*, std::pair<double, double>> rows[] = {
          {"l1tex__m_xbar2l1tex_read_bytes.sum", {sm.load, 0.02}},
          {"l1tex__t_bytes_pipe_lsu_mem_global_op_st.sum", {sm.stores, 0.02}},
          {"l1tex__t_bytes_pipe_lsu_mem_global_op_red.sum", {sm.reduces, 0.02}},
          {sm.bulk_reduce_sectors >= 0 ? "lts__t_sectors_srcunit_tex_op_red.sum" : "",
           {sm.bulk_reduce_sectors, 0.02}},
          {"dram__bytes_read.sum", {static_cast<double>(pr.dram_read), 0}},
          {"dram__bytes_write.sum", {static_cast<double>(pr.dram_write), 0}},
          {"l1tex__t_bytes_pipe_lsu_mem_local_op_ld.sum", {0.0, 0.0}},
          {"l1tex__t_bytes_pipe_lsu_mem_local_op_st.sum", {0.0, 0.0}},
          {"gpu__time_duration.sum", {pr.time_s * 1e9, 0.0}}};
      // DRAM figures: also within the counters' run-to-run spread, a share of the kernel's measured DRAM
      // bytes (a figure of a few hundred KB out of tens of MB cannot be held to its own size).
      // A causal forward's reads take the larger spread its K/V re-reads showed between runs (measured on the
      // forward alone: other kernels, and forward kernels that read no keys, keep the 1%).
      double dram_floor = 0, read_floor = 0;
      if (auto r = k.metrics.find("dram__bytes_read.sum"), w = k.metrics.find("dram__bytes_write.sum");
          r != k.metrics.end() && w != k.metrics.end()) {
        const bool causal_forward = p.window_right == 0 && p.window_left < 0 &&
                                    rec->model->pass == Pass::Forward &&
                                    counts.tensors[static_cast<size_t>(ref::TensorId::K)].load.bytes > 0;
        dram_floor = hw.ncu_dram_repeatability * (r->second + w->second);
        read_floor = causal_forward
                         ? std::max(hw.ncu_dram_reread_repeatability * (r->second + w->second), dram_floor)
                         : dram_floor;
      }
      for (const auto& [metric, pt] : rows) {
        if (*metric == '\0') continue;
        if (auto u = k.unknown_units.find(metric); u != k.unknown_units.end())
          throw InputError("ncu", "kernel " + k.id + ": " + metric + " is in '" + u->second +
                                      "', a unit flashsim cannot convert to base units");
        auto it = k.metrics.find(metric);
        if (it == k.metrics.end()) continue;
        MetricComparison m;
        m.metric = metric;
        m.measured = it->second;
        m.predicted = pt.first;
        m.tolerance = pt.second;
        m.ratio = m.predicted != 0 ? m.measured / m.predicted : (m.measured == 0 ? 1.0 : INFINITY);
        if (m.metric.rfind("dram__", 0) == 0) {
          const bool reads = m.metric == "dram__bytes_read.sum";
          judge_dram(m, reads ? range.read : range.write, reads ? read_floor : dram_floor, reads,
                     spill_stores, range.frame_known);
        } else if (m.tolerance > 0) {
          m.ok = std::fabs(m.measured - m.predicted) <= m.tolerance * m.predicted;
          m.verdict = m.ok ? "ok" : "FAIL";
        }
        c.ok = c.ok && m.ok;
        kc.metrics.push_back(m);
      }
    }
    c.kernels.push_back(std::move(kc));
  }
  if (kernels.empty())
    throw InputError("ncu",
                     "the report has no kernel rows: ncu profiled nothing (check its -k filter) or the file "
                     "holds only its header");
  if (std::none_of(c.kernels.begin(), c.kernels.end(), [](const auto& k) { return k.recognized; }))
    throw InputError("ncu",
                     fmt::format("none of the report's {} kernels is a kernel flashsim models ({}, with "
                                 "their template arguments; `flashsim sim kernels` lists them); the "
                                 "first is '{}'",
                                 kernels.size(), known_ncu_names(), kernels[0].name.substr(0, 80)));
  if (std::all_of(c.kernels.begin(), c.kernels.end(), [](const auto& k) { return k.metrics.empty(); }))
    throw InputError(
        "ncu",
        "the report has none of the metrics flashsim compares (l1tex__m_xbar2l1tex_read_bytes.sum, "
        "l1tex__t_bytes_pipe_lsu_mem_global_op_st/red.sum, dram__bytes_read/write.sum, ...): "
        "profile with --metrics as bench/gpu/run.py traffic does");
  return c;
}

nlohmann::json to_json(const Comparison& c) {
  nlohmann::json ks = nlohmann::json::array();
  for (const auto& k : c.kernels) {
    nlohmann::json ms = nlohmann::json::array();
    for (const auto& m : k.metrics)
      ms.push_back({{"metric", m.metric},
                    {"measured", m.measured},
                    {"predicted", m.predicted},
                    {"ratio", std::isfinite(m.ratio) ? nlohmann::json(m.ratio) : nlohmann::json(nullptr)},
                    {"tolerance", m.tolerance > 0 ? nlohmann::json(m.tolerance) : nlohmann::json(nullptr)},
                    {"tolerance_floor", m.floor},
                    {"lower", m.interval ? nlohmann::json(m.lower) : nlohmann::json(nullptr)},
                    {"upper", m.interval ? nlohmann::json(m.upper) : nlohmann::json(nullptr)},
                    {"compulsory", m.interval ? nlohmann::json(m.compulsory) : nlohmann::json(nullptr)},
                    {"verdict", m.verdict.empty() ? nlohmann::json(nullptr) : nlohmann::json(m.verdict)},
                    {"suspect", m.suspect.empty() ? nlohmann::json(nullptr) : nlohmann::json(m.suspect)},
                    {"ok", m.ok}});
    ks.push_back({{"name", k.name},
                  {"recognized", k.recognized},
                  {"replay_write_bytes", k.replay_write_bytes},
                  {"metrics", ms}});
  }
  return {{"ok", c.ok}, {"kernels", ks}};
}

}  // namespace flashsim::sim
