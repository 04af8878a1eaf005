// The problem an ncu report profiled (ncu.h: problem_from_report): what its kernels' grids and template
// arguments say, and the sequence length (and a padded head dim, or a causal mask the name does not carry)
// from the SM-side byte counts, which the model predicts exactly for a correct kernel.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "flashsim/error.h"
#include "flashsim/sim/counts.h"
#include "ncu_detail.h"

namespace flashsim::sim {

namespace {

// The DRAM read counters' spread a kernel's compulsory reads may exceed them by (the profile's
// ncu_dram_repeatability is 1% of a kernel's DRAM bytes on the H100: twice that).
constexpr double kDramReadSlack = 0.02;

struct ReportKernel {
  const NcuKernel* kernel;
  RecognizedKernel rec;
  std::vector<int64_t> grid;  // empty: the report has no grid column
};

// The grid x a problem launches, or -1 when the kernel's launch cannot be built for it.
int64_t grid_x(const ReportKernel& k, const AttentionProblem& p) {
  try {
    return k.rec.model->launch(p, k.rec.config).grid_x;
  } catch (const InputError&) {
    return -1;
  }
}

// The query (and key) lengths whose launch has the report's grid x, [lo, hi], or {0, 0} when the kernel's grid
// x is not ceil(length / block) for a block the launch shows. The block is the shortest length that launches two
// CTAs along x, less one, found on short lengths (a launch lists its CTAs: a long one is costly to build).
std::pair<int64_t, int64_t> lengths_for_grid(const ReportKernel& k, AttentionProblem p) {
  const auto at = [&](int64_t n) {
    p.seqlen_q = p.seqlen_k = n;
    return grid_x(k, p);
  };
  if (k.grid.empty() || at(1) != 1) return {0, 0};
  constexpr int64_t kMaxBlock = 65536;  // TileConfig::validate's largest block
  int64_t block = 1;
  while (block <= kMaxBlock && at(2 * block) == 1) block *= 2;  // at(block + 1) == 2 lies in (block, 2 block]
  if (block > kMaxBlock) return {0, 0};
  int64_t lo = block, hi = 2 * block;  // at(lo) == 1, at(hi) == 2
  while (hi - lo > 1) {
    const int64_t mid = lo + (hi - lo) / 2;
    (at(mid) == 1 ? lo : hi) = mid;
  }
  block = lo;
  const int64_t gx = k.grid[0];
  if (at(2 * block) != 2 || at(2 * block + 1) != 3) return {0, 0};  // not ceil(n / block)
  return {(gx - 1) * block + 1, gx * block};
}

// How far a candidate problem's SM-side prediction is from the report: the summed relative differences of
// every SM-side figure the report has; infinity when a kernel's grid differs or the problem is invalid.
double distance(const std::vector<ReportKernel>& ks, const AttentionProblem& p) {
  double d = 0;
  for (const ReportKernel& k : ks) {
    try {
      const KernelCounts counts = analytic_counts(*k.rec.model, p, k.rec.config, nullptr);
      const KernelLaunch& l = counts.launch;
      if (k.grid.size() == 3) {
        const std::vector<int64_t> want = l.heads_then_batch
                                              ? std::vector<int64_t>{l.grid_x, l.grid_z, l.grid_y}
                                              : std::vector<int64_t>{l.grid_x, l.grid_y, l.grid_z};
        if (want != k.grid) return std::numeric_limits<double>::infinity();
      }
      const SmSidePrediction sm = sm_side_prediction(*k.rec.model, counts, p, k.rec.config);
      const std::pair<const char*, double> figures[] = {
          {"l1tex__m_xbar2l1tex_read_bytes.sum", sm.load},
          {"l1tex__t_bytes_pipe_lsu_mem_global_op_st.sum", sm.stores},
          {"l1tex__t_bytes_pipe_lsu_mem_global_op_red.sum", sm.reduces}};
      for (const auto& [metric, predicted] : figures)
        if (const auto it = k.kernel->metrics.find(metric); it != k.kernel->metrics.end())
          d += std::fabs(it->second - predicted) / std::max(it->second, 1.0);
    } catch (const InputError&) {
      return std::numeric_limits<double>::infinity();
    }
  }
  return d;
}

// The first kernel's predicted bytes from L2 to the SMs minus its measured ones (NaN when not measured or the
// launch cannot be built): grows with the sequence length, so a binary search finds where it crosses zero.
double load_excess(const ReportKernel& k, const AttentionProblem& p) {
  const auto it = k.kernel->metrics.find("l1tex__m_xbar2l1tex_read_bytes.sum");
  if (it == k.kernel->metrics.end()) return std::numeric_limits<double>::quiet_NaN();
  try {
    return static_cast<double>(analytic_counts(*k.rec.model, p, k.rec.config, nullptr).load_bytes()) -
           it->second;
  } catch (const InputError&) {
    return std::numeric_limits<double>::quiet_NaN();
  }
}

bool has_sm_side_figures(const std::vector<ReportKernel>& ks) {
  for (const ReportKernel& k : ks)
    for (const char* m :
         {"l1tex__m_xbar2l1tex_read_bytes.sum", "l1tex__t_bytes_pipe_lsu_mem_global_op_st.sum"})
      if (k.kernel->metrics.count(m)) return true;
  return false;
}

}  // namespace

ProblemFromReport problem_from_report(const std::vector<NcuKernel>& kernels, const AttentionProblem& flags,
                                      const std::function<bool(const std::string&)>& given) {
  ProblemFromReport out;
  out.problem = flags;
  AttentionProblem& p = out.problem;
  if (p.varlen() || p.kv_cache() || p.block_mask != BroadcastShape::None) return out;  // their flags say all
  std::vector<ReportKernel> ks;
  for (const NcuKernel& k : kernels)
    if (auto rec = recognize_kernel(k.name))
      if (!rec->model->grid_not_problem_shaped && rec->model->ncu_splits == KernelModel::NcuSplits::None)
        ks.push_back({&k, *rec, parse_dim3(k.grid)});
  if (ks.empty()) return out;
  const auto note = [&](std::vector<std::string>& to, std::string text) { to.push_back(std::move(text)); };

  // The grid: (blocks, batch, heads) or (blocks, heads, batch); a kernel per kv head gives the kv heads.
  bool grid_seen = false, heads_seen = false;
  for (const ReportKernel& k : ks) {
    if (k.grid.size() != 3) continue;
    grid_seen = true;
    heads_seen = heads_seen || !k.rec.model->per_kv_head;
    const bool hb = k.rec.model->launch(p, k.rec.config).heads_then_batch;
    const int64_t batch = k.grid[hb ? 2 : 1], heads = k.grid[hb ? 1 : 2];
    if (!given("--batch") && p.batch != batch) p.batch = batch;
    if (k.rec.model->per_kv_head) {
      if (!given("--heads-kv")) p.heads_kv = heads;
    } else if (!given("--heads")) {
      p.heads_q = heads;
    }
  }
  const bool kv_from_grid = std::any_of(
      ks.begin(), ks.end(), [](const auto& k) { return k.rec.model->per_kv_head && k.grid.size() == 3; });
  // without a grid column (ncu's --page raw without launch__grid_size) the flags' values stay, said
  if (!given("--batch"))
    note(grid_seen ? out.from_report : out.assumed,
         fmt::format("--batch {} ({})", p.batch,
                     grid_seen ? "the grid" : "the report has no grid: pass --batch"));
  if (!given("--heads"))
    note(heads_seen ? out.from_report : out.assumed,
         fmt::format("--heads {} ({})", p.heads_q,
                     heads_seen ? "the grid" : "the report has no grid: pass --heads"));
  if (!given("--heads-kv")) {
    if (kv_from_grid) {
      note(out.from_report, fmt::format("--heads-kv {} (the grid of a kernel per kv head)", p.heads_kv));
    } else {
      p.heads_kv = p.heads_q;  // until the DRAM reads below say otherwise
    }
  }

  // The template arguments: the dtype, FlashAttention-2's causal / local flags, the head dim.
  if (!given("--dtype")) {
    const std::string& name = ks.front().kernel->name;
    if (name.find("bfloat16") != std::string::npos) {
      p.dtype = DType::BF16;
      note(out.from_report, "--dtype bf16 (the template arguments)");
    } else if (name.find("half") != std::string::npos) {
      p.dtype = DType::F16;
      note(out.from_report, "--dtype fp16 (the template arguments)");
    } else {
      note(out.assumed, fmt::format("--dtype {} (the kernel names do not say)", dtype_name(p.dtype)));
    }
  }
  const bool mask_given = given("--causal") || given("--window");
  std::vector<bool> causal_candidates{false};  // without a mask flag: causal or no mask
  if (!mask_given) {
    std::optional<bool> causal, local;
    for (const ReportKernel& k : ks) {
      if (k.rec.causal) causal = *k.rec.causal;
      if (k.rec.local) local = *k.rec.local;
    }
    if (local && *local)
      throw InputError("window", fmt::format("kernel {} was compiled with a sliding window (Is_local), whose "
                                             "sizes the report does not show: pass --window LEFT,RIGHT",
                                             ks.front().kernel->id));
    if (causal) {  // no mask is the flags' default: said only when the report is causal
      causal_candidates = {*causal};
      if (*causal) note(out.from_report, "--causal (Is_causal in the template arguments)");
    } else {
      causal_candidates = {false, true};  // told apart by the bytes below
    }
  }
  std::vector<int64_t> dims{p.head_dim};
  bool dim_from_bytes = false;
  if (!given("--head-dim")) {
    const auto it = std::find_if(ks.begin(), ks.end(), [](const auto& k) { return k.rec.head_dim > 0; });
    if (it != ks.end()) {
      dims = {it->rec.head_dim};
      if (it->rec.pads_head_dim) {  // FA2 runs d on the smallest compiled head dim that holds it, d % 8 == 0
        dims.clear();
        for (int64_t d = it->rec.head_dim; d > std::max<int64_t>(0, it->rec.head_dim - 32); d -= 8)
          dims.push_back(d);
        dim_from_bytes = dims.size() > 1;
      }
      if (!dim_from_bytes)
        note(out.from_report, fmt::format("--head-dim {} (the template arguments)", dims.front()));
    }
  }

  const bool length_given = given("--seqlen") || given("--seqlen-q") || given("--seqlen-k");
  const auto with = [&](AttentionProblem c, int64_t n, int64_t dim, bool causal) {
    if (!length_given) c.seqlen_q = c.seqlen_k = n;
    if (!given("--head-dim")) c.head_dim = dim;
    if (!given("--head-dim-v") && !given("--head-dim")) c.head_dim_v = dim;
    if (!mask_given) {
      c.window_left = -1;
      c.window_right = causal ? 0 : -1;
    }
    return c;
  };
  p = with(p, p.seqlen_q, dims.front(), causal_candidates.front());

  // The lengths: the grid bounds them to a tile, the SM-side bytes pick one.
  std::pair<int64_t, int64_t> range{p.seqlen_q, p.seqlen_q};
  if (!length_given) {
    range = {1, int64_t(1) << 24};
    const AttentionProblem probe = p;
    for (const ReportKernel& k : ks)
      if (const auto [lo, hi] = lengths_for_grid(k, probe); hi > 0) {
        range.first = std::max(range.first, lo);
        range.second = std::min(range.second, hi);
      }
    if (range.first > range.second)
      throw InputError("seqlen",
                       "the report's kernels ran grids that no one sequence length gives (a "
                       "cross-attention or varlen run?): pass --seqlen-q and --seqlen-k or --varlen");
    if (range.second - range.first > 1024)
      throw InputError("seqlen", "the report's grids do not bound the sequence length: pass --seqlen");
  }
  if (!has_sm_side_figures(ks)) {  // a DRAM-only report: the compiled head dim, no mask, a length given
    if (range.first != range.second)
      throw InputError("seqlen",
                       "the report has no SM-side byte counts (l1tex__*) to tell the sequence length "
                       "within its grid's tile: pass --seqlen");
    if (dim_from_bytes)
      note(out.assumed,
           fmt::format("--head-dim {} (the kernel's compiled head dim; without SM-side byte counts "
                       "the report cannot tell {} .. {} apart)",
                       dims.front(), dims.back(), dims.front()));
    if (causal_candidates.size() > 1)
      note(out.assumed,
           "no mask (the kernel names do not say, and without SM-side byte counts the report "
           "cannot tell): pass --causal for a causal run");
    dims.resize(1);
    causal_candidates.resize(1);
    dim_from_bytes = false;
  }
  const bool search = !length_given || dim_from_bytes || causal_candidates.size() > 1;
  if (search) {
    struct Candidate {
      double d;
      AttentionProblem p;
    };
    Candidate best{std::numeric_limits<double>::infinity(), p}, second = best;
    const auto consider = [&](const AttentionProblem& c) {
      if (c.seqlen_q == best.p.seqlen_q && c.head_dim == best.p.head_dim &&
          c.window_right == best.p.window_right && std::isfinite(best.d))
        return;  // already the best
      try {
        c.validate();
      } catch (const InputError&) {
        return;
      }
      const double d = distance(ks, c);
      if (d < best.d) {
        second = best;
        best = {d, c};
      } else if (d < second.d && !(c.seqlen_q == second.p.seqlen_q && c.head_dim == second.p.head_dim &&
                                   c.window_right == second.p.window_right)) {
        second = {d, c};
      }
    };
    // 1. Per head dim and mask: the length where the first measured kernel's predicted L2 -> SM bytes (which grow
    // with it) reach the measured ones, by bisection over the grid's range, and a few rows either side.
    const auto measured = std::find_if(ks.begin(), ks.end(), [](const ReportKernel& k) {
      return k.kernel->metrics.count("l1tex__m_xbar2l1tex_read_bytes.sum") > 0;
    });
    constexpr int64_t kNeighbours = 4;  // rows either side of the bisection's length
    for (const int64_t dim : dims)
      for (const bool causal : causal_candidates) {
        int64_t lo = range.first, hi = range.second;
        if (measured != ks.end())
          while (lo < hi) {
            const int64_t mid = lo + (hi - lo) / 2;
            const double e = load_excess(*measured, with(p, mid, dim, causal));
            if (!(e < 0))  // NaN (no launch) counts as past the crossing
              hi = mid;
            else
              lo = mid + 1;
          }
        for (int64_t n = std::max(range.first, lo - kNeighbours);
             n <= std::min(range.second, lo + kNeighbours); ++n)
          consider(with(p, n, dim, causal));
      }
    // 2. Every length of the grid's tile at the best head dim and mask: a causal kernel's loads grow in steps
    // (whole key tiles), so the bisection can land rows away from the length.
    if (std::isfinite(best.d)) {
      const AttentionProblem at = best.p;
      for (int64_t n = range.first; n <= range.second; ++n)
        consider(with(at, n, at.head_dim, at.window_right == 0));
    }
    // No candidate launches the report's grids: a flag given disagrees with the report; compare_ncu's checks
    // name it (the problem stays the flags' and the report's first reading).
    if (!std::isfinite(best.d)) return out;
    // Two candidates the counters cannot tell apart (within a part in 10^5 of every figure): the flag decides.
    if (std::isfinite(second.d) && second.d - best.d < 1e-5 * static_cast<double>(ks.size())) {
      const AttentionProblem &a = best.p, &b = second.p;
      const std::string flag = a.seqlen_q != b.seqlen_q   ? "--seqlen"
                               : a.head_dim != b.head_dim ? "--head-dim"
                                                          : "--causal";
      throw InputError(flag.substr(2), fmt::format("the report fits {} and {} equally: pass {}", a.describe(),
                                                   b.describe(), flag));
    }
    p = best.p;
    if (!length_given)
      note(out.from_report,
           fmt::format("--seqlen {} (the grid, and the SM-side bytes within its tile)", p.seqlen_q));
    if (dim_from_bytes)
      note(out.from_report,
           fmt::format("--head-dim {} (the SM-side bytes: FlashAttention-2 runs head dims {} .. {} on "
                       "this kernel)",
                       p.head_dim, dims.back(), dims.front()));
    if (causal_candidates.size() > 1 && p.window_right == 0 && p.window_left < 0)
      note(out.from_report, "--causal (the SM-side bytes)");
  }
  // The kv heads, where no grid shows them: the most whose compulsory DRAM reads (each loaded tensor once) fit
  // under every kernel's measured reads. A correct kernel reads its inputs at least once, and K / V take a share
  // of the compulsory bytes proportional to the kv heads; its re-reads could pass for more kv heads only
  // beyond that share (a GQA ratio 2 forward re-reading 1.5x its inputs).
  if (!given("--heads-kv") && !kv_from_grid) {
    int64_t found = 0;
    for (int64_t hkv = p.heads_q; hkv >= 1 && found == 0; --hkv) {
      if (p.heads_q % hkv != 0) continue;
      AttentionProblem c = p;
      c.heads_kv = hkv;
      bool fits = true, measured = false;
      for (const ReportKernel& k : ks) {
        const auto it = k.kernel->metrics.find("dram__bytes_read.sum");
        if (it == k.kernel->metrics.end()) continue;
        measured = true;
        const auto compulsory =
            static_cast<double>(analytic_counts(*k.rec.model, c, k.rec.config, nullptr).unique_loaded());
        fits = fits && compulsory <= it->second * (1 + kDramReadSlack);
      }
      if (!measured) break;
      if (fits) found = hkv;
    }
    if (found > 0 && found != p.heads_q) {
      p.heads_kv = found;
      note(out.from_report, fmt::format("--heads-kv {} (the DRAM reads: the most kv heads whose compulsory "
                                        "reads fit under them)",
                                        found));
    } else if (found > 0) {
      // As many kv heads as query heads fit: no GQA, or a GQA kernel whose K / V re-reads from DRAM (a long
      // causal forward's: 2.4x its compulsory bytes on the H100) pass for the missing kv heads' first reads.
      note(out.assumed,
           fmt::format("--heads-kv {} (the DRAM reads fit as many kv heads as query heads; a GQA kernel that "
                       "re-reads K / V from DRAM can read as much: pass --heads-kv for a GQA run)",
                       p.heads_q));
    } else {
      note(out.assumed,
           "--heads-kv = --heads (no GQA: the report shows no kv heads; pass --heads-kv for a GQA "
           "run)");
    }
  }
  p.validate();
  return out;
}

}  // namespace flashsim::sim
