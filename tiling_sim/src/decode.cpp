// Which kernels run a problem (the split-KV forward for a paged cache or num_splits > 1), the combinations no
// modelled kernel runs, FA2's split-KV tile and num_splits heuristic, and the split-count sweep (model.h,
// sweep.h).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "flashsim/error.h"
#include "flashsim/sim/model.h"
#include "flashsim/sim/sweep.h"
#include "flashsim/sim/tune.h"
#include "int_math.h"

namespace flashsim::sim {

namespace {
bool split_forward(const AttentionProblem& p, const TileConfig& c) {
  return p.kv_cache() || c.num_splits > 1;
}
}  // namespace

std::vector<const KernelModel*> kernels_for(const AttentionProblem& p, const TileConfig& c, Algorithm a,
                                            Pass pass) {
  if (pass == Pass::Forward && a == Algorithm::Fa2 && split_forward(p, c)) {
    std::vector<const KernelModel*> ks = {&kernel_model("fwd_splitkv")};
    if (c.num_splits > 1) ks.push_back(&kernel_model("fwd_splitkv_combine"));
    return ks;
  }
  return kernels_of(a, pass);
}

void check_supported(const AttentionProblem& p, const TileConfig& c, Algorithm a, Pass pass) {
  if (pass == Pass::Backward && p.kv_cache())
    throw InputError("pass",
                     "a paged KV cache is inference only (flash_attn_with_kvcache has no backward): use "
                     "--pass fwd");
  if (pass == Pass::Backward && p.fp8())
    throw InputError("pass",
                     "FP8 inputs are forward only (FP8 attention kernels have no backward): use --pass fwd");
  if (pass == Pass::Backward && c.num_splits > 1)
    throw InputError("num-splits",
                     fmt::format("split-KV ({} splits) is a forward technique: the backward has "
                                 "no splits (use --pass fwd, or --num-splits 1)",
                                 c.num_splits));
  if (pass == Pass::Forward && split_forward(p, c) && a != Algorithm::Fa2)
    throw InputError(
        "algorithm",
        fmt::format("the split-KV / paged-cache forward is FlashAttention-2's (fwd_splitkv), not {}",
                    algorithm_name(a)));
  if (p.block_mask != BroadcastShape::None)
    for (const KernelModel* k : kernels_for(p, c, a, pass))
      if (!k->block_sparse)
        throw InputError("block-mask",
                         fmt::format("{} computes every score ({} materializes them): it cannot skip "
                                     "block-mask tiles; use fa2, fa1, two-pass or three-pass",
                                     algorithm_name(a), k->name));
}

TileConfig splitkv_tile(const AttentionProblem& p, TileConfig base) {
  base.block_q = 64;
  base.block_k = p.head_dim <= 64 ? 256 : p.head_dim <= 128 ? 128 : 64;
  base.warps = 4;
  base.stages = 1;
  base.q_in_registers = false;
  base.kv_shared_buffer = false;
  return base;
}

int64_t splitkv_heuristic(const AttentionProblem& p, const TileConfig& c, const HardwareProfile& hw) {
  // flash_api.cpp: batch x heads x m blocks with the query heads packed (seqlenq_ngroups_swapped), the key
  // blocks of seqlen_k, at most 128 splits, "num_sm * 2" slots (two 128-thread CTAs an SM).
  const int64_t ctas = p.batch * p.heads_kv * ceil_div(p.seqlen_q * p.group_size(), c.block_q);
  const int64_t n_blocks = ceil_div(p.seqlen_k, c.block_k), slots = 2 * static_cast<int64_t>(hw.sms);
  if (static_cast<double>(ctas) >= 0.8 * static_cast<double>(slots)) return 1;
  const int64_t max_splits = std::min<int64_t>({128, slots, n_blocks});
  std::vector<double> eff(static_cast<size_t>(std::max<int64_t>(0, max_splits)), 0.0);
  double best = 0;
  const auto eligible = [&](int64_t s) {
    return s == 1 || ceil_div(n_blocks, s) != ceil_div(n_blocks, s - 1);
  };
  for (int64_t s = 1; s <= max_splits; ++s) {
    if (!eligible(s)) continue;
    const double waves = static_cast<double>(ctas * s) / static_cast<double>(slots);
    eff[static_cast<size_t>(s - 1)] = static_cast<double>(static_cast<float>(waves / std::ceil(waves)));
    best = std::max(best, eff[static_cast<size_t>(s - 1)]);
  }
  for (int64_t s = 1; s <= max_splits; ++s)
    if (eligible(s) && eff[static_cast<size_t>(s - 1)] >= 0.85 * best) return s;
  return 1;
}

double kv_cache_bytes(const AttentionProblem& p) {
  double keys = 0;
  for (int64_t b = 0; b < p.batch; ++b) keys += static_cast<double>(p.len_k(b));
  // MLA: V is the latent cache's first head_dim_v columns, read with K
  const int64_t row = p.mla ? p.head_dim : p.head_dim + p.head_dim_v;
  return keys * static_cast<double>(p.heads_kv * row * dtype_bytes(p.dtype));
}

int64_t pick_splits(const SplitSweepResult& r) {
  double fastest = 0;
  for (const auto& row : r.rows)
    if (row.fits && (fastest == 0 || row.time_s < fastest)) fastest = row.time_s;
  int64_t pick = 0;
  for (const auto& row : r.rows)  // the fewest splits within the model's resolution of the fastest
    if (row.fits && row.time_s <= (1 + kTuneResolution) * fastest && (pick == 0 || row.num_splits < pick))
      pick = row.num_splits;
  return pick > 0 ? pick : 1;
}

namespace {
// The sweep of a split kernel's tile, its splits merged by `combine`.
SplitSweepResult sweep_with(const AttentionProblem& p, const HardwareProfile& hw, const TileConfig& tile,
                            const ProblemData* data, const KernelModel& combine) {
  SplitSweepResult r;
  r.tile = tile;
  r.tile.num_splits = 1;
  r.heuristic = splitkv_heuristic(p, r.tile, hw);
  r.kv_bytes = kv_cache_bytes(p);
  r.dram_rate = hw.achieved_dram_bytes_per_s > 0 ? hw.achieved_dram_bytes_per_s : hw.dram_bytes_per_s;
  r.floor_s = r.kv_bytes / r.dram_rate;
  const int64_t bound = std::max<int64_t>(1, std::min<int64_t>(128, ceil_div(p.seqlen_k, r.tile.block_k)));
  std::vector<int64_t> counts;
  for (int64_t s = 1; s <= bound; s *= 2) counts.push_back(s);
  if (std::find(counts.begin(), counts.end(), r.heuristic) == counts.end()) counts.push_back(r.heuristic);
  std::sort(counts.begin(), counts.end());
  for (const int64_t s : counts) {
    TileConfig c = r.tile;
    c.num_splits = s;
    check_supported(p, c, Algorithm::Fa2, Pass::Forward);
    std::vector<const KernelModel*> kernels = kernels_for(p, c, Algorithm::Fa2, Pass::Forward);
    if (kernels.size() > 1) kernels[1] = &combine;
    const auto ks = predict(p, c, hw, kernels, false, 0, data);
    SplitSweepRow row;
    row.num_splits = s;
    row.heuristic = s == r.heuristic;
    for (const auto& k : ks) {
      row.fits = row.fits && k.occ.fits;
      row.time_s += k.time_s;
      row.load_bytes += k.counts.load_bytes() + k.counts.store_bytes() + k.counts.reduce_bytes();
      row.dram_bytes += k.dram_read + k.dram_write;
      row.ctas += k.counts.launch.ctas();
    }
    const auto& split = ks.front();
    row.split_time_s = split.time_s;
    row.split_resident_ctas = split.occ.resident_ctas;
    row.combine_time_s = ks.size() > 1 ? ks[1].time_s : 0.0;
    row.t_dram_s = split.t_dram;
    row.t_compute_s = split.t_mma + split.t_exp + split.t_vec;
    row.bound = split.bound;
    row.memory_bound = split.bound == "memory";
    r.rows.push_back(row);
  }
  return r;
}

}  // namespace

SplitSweepResult sweep_splits(const AttentionProblem& p, const HardwareProfile& hw, const ProblemData* data,
                              const TileConfig& base) {
  return sweep_with(p, hw, splitkv_tile(p, base), data, kernel_model("fwd_splitkv_combine"));
}

SplitSweepResult sweep_splits_of_tile(const AttentionProblem& p, const HardwareProfile& hw,
                                      const TileConfig& tile, const ProblemData* data) {
  return sweep_with(p, hw, tile, data, kernel_model("decode_combine"));
}

}  // namespace flashsim::sim
