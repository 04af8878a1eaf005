// `sim tune --kernel splitkv` (tune_splits.h).
#include "flashsim/sim/tune_splits.h"

#include <fmt/format.h>

#include "flashsim/error.h"
#include "flashsim/sim/model.h"  // splitkv_tile

namespace flashsim::sim {

namespace {

void require_range(const std::vector<int64_t>& values, const char* field, int64_t lo, int64_t hi) {
  if (values.empty()) throw InputError(field, "needs at least one value");
  for (const int64_t v : values)
    if (v < lo || v > hi) throw InputError(field, fmt::format("{} is out of range {}..{}", v, lo, hi));
}

// The time of the sweep's row with `splits` (0 when the sweep has none that fits).
double time_at(const SplitSweepResult& s, int64_t splits) {
  for (const SplitSweepRow& row : s.rows)
    if (row.num_splits == splits && row.fits) return row.time_s;
  return 0;
}

}  // namespace

AttentionProblem tune_splits_problem(const TuneSplitsRequest& r, int64_t head_dim, DType dtype,
                                     int64_t page_size, int64_t batch, int64_t cache_len) {
  AttentionProblem p;
  p.batch = batch;
  p.heads_q = r.heads_q;
  p.heads_kv = r.heads_kv;
  p.seqlen_q = r.seqlen_q;
  p.seqlen_k = cache_len;
  p.head_dim = p.head_dim_v = head_dim;
  p.dtype = dtype;
  p.page_size = page_size;
  p.cache_seqlens.assign(static_cast<size_t>(batch), cache_len);
  p.validate();  // an InputError naming the field (heads_q not a multiple of heads_kv, ...)
  return p;
}

TuneSplitsResult tune_splits(const TuneSplitsRequest& r, const HardwareProfile& hw,
                             const std::function<void(size_t, size_t)>& progress) {
  require_range(r.head_dims, "head_dims", 1, 1024);
  require_range(r.page_sizes, "page_sizes", 1, 1 << 16);
  require_range(r.batches, "batches", 1, 1 << 16);
  require_range(r.cache_lens, "cache_lens", 1, int64_t{1} << 24);
  if (r.dtypes.empty()) throw InputError("dtypes", "needs at least one value");
  if (r.tile) r.tile->validate();
  TuneSplitsResult out;
  out.request = r;
  out.hw = hw;
  const size_t total =
      r.head_dims.size() * r.dtypes.size() * r.page_sizes.size() * r.batches.size() * r.cache_lens.size();
  for (const int64_t d : r.head_dims)
    for (const DType t : r.dtypes)
      for (const int64_t page : r.page_sizes)
        for (const int64_t b : r.batches)
          for (const int64_t n : r.cache_lens) {
            TuneSplitsEntry e;
            e.problem = tune_splits_problem(r, d, t, page, b, n);
            e.sweep = r.tile ? sweep_splits_of_tile(e.problem, hw, *r.tile) : sweep_splits(e.problem, hw);
            e.best = pick_splits(e.sweep);
            e.best_s = time_at(e.sweep, e.best);
            e.heuristic_s = time_at(e.sweep, e.sweep.heuristic);
            e.one_split_s = time_at(e.sweep, 1);
            out.entries.push_back(std::move(e));
            if (progress) progress(out.entries.size(), total);
          }
  return out;
}

nlohmann::json to_json(const TuneSplitsResult& r) {
  nlohmann::json entries = nlohmann::json::array();
  for (const TuneSplitsEntry& e : r.entries) {
    nlohmann::json rows = nlohmann::json::array();
    for (const SplitSweepRow& row : e.sweep.rows)
      rows.push_back({{"num_splits", row.num_splits},
                      {"fits", row.fits},
                      {"time_us", row.time_s * 1e6},
                      {"split_us", row.split_time_s * 1e6},
                      {"combine_us", row.combine_time_s * 1e6},
                      {"split_resident_ctas", row.split_resident_ctas},
                      {"dram_bytes", row.dram_bytes},
                      {"bound", row.bound}});
    entries.push_back({{"problem", e.problem.describe()},
                       {"head_dim", e.problem.head_dim},
                       {"dtype", dtype_name(e.problem.dtype)},
                       {"page_size", e.problem.page_size},
                       {"batch", e.problem.batch},
                       {"cache_len", e.problem.seqlen_k},
                       {"tile", e.sweep.tile.describe()},
                       {"best_splits", e.best},
                       {"best_us", e.best_s * 1e6},
                       {"heuristic_splits", e.sweep.heuristic},
                       {"heuristic_us", e.heuristic_s * 1e6},
                       {"one_split_us", e.one_split_s * 1e6},
                       {"floor_us", e.sweep.floor_s * 1e6},
                       {"splits", rows}});
  }
  return {{"kernel", "splitkv"}, {"hw", r.hw.name}, {"entries", entries}};
}

}  // namespace flashsim::sim
