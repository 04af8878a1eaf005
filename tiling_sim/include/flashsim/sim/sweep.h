#pragma once
// Every tile config of a space for one problem, predicted by the closed-form model and ranked by time.
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "flashsim/sim/kernel_resources.h"
#include "flashsim/sim/model.h"

namespace flashsim::sim {

struct SweepRow {
  TileConfig config;
  double time_s = 0;                       // summed over the pass's kernels
  int64_t load_bytes = 0, dram_bytes = 0;  // L2 -> SM loads; DRAM read + write
  int64_t smem_bytes = 0;                  // the largest kernel's shared memory per CTA
  int ctas_per_sm = 0;                     // of the slowest kernel
  std::string bound;                       // the slowest kernel and what bounds it: "fwd_fa2:tensor"
  std::string kernel_bound;                // what bounds the slowest kernel: "tensor"
  std::string limiter;                     // what caps the slowest kernel's CTAs per SM
  int regs = 0;        // the slowest kernel's registers per thread (per-CTA model; 0: none)
  std::string misfit;  // when it does not fit: the first kernel that does not and why ("fwd_fa2: ...")
};

// One config over a pass's kernels (analytic counts): times and bytes summed, the largest shared memory, the
// slowest kernel's occupancy and bound. fits: every kernel fits. compiled: the registers of fa2-v1's compiled
// kernels, which replace the estimate of the pass's main kernel (the one with a per-CTA step) where the config
// is one of them.
SweepRow predict_config(const AttentionProblem& p, const TileConfig& c, const HardwareProfile& hw,
                        const std::vector<const KernelModel*>& kernels, const ProblemData* data, bool& fits,
                        const KernelResources* compiled = nullptr);
// The profile sweep and tune rank tiles on: the FA2 kernels' measured costs (calibration fa2.step_costs_h100:
// fwd_fa2, fwd_fa2_v1 and the main backward kernels) left out, as they cover one tile a head dim (FlashAttention-2's
// and fa2-v1's launch tiles) and would set it apart from the chain-modelled others; fa3's kept (every instance
// of its family is measured).
HardwareProfile ranking_profile(const HardwareProfile& hw);
// The ranking order of sweep and tune: faster first; equal times by more resident CTAs an SM (independent CTAs
// fill each other's stalls: a CTA alone on its SM issues ~1.2x slower, lockstep_cpi_factor), then less DRAM
// traffic, fewer L2 bytes, less shared memory.
bool ranks_before(const SweepRow& x, const SweepRow& y);

struct SweepResult {
  int64_t configs = 0;             // configs tried
  std::vector<SweepRow> ranked;    // those that fit every kernel, fastest first
  std::vector<SweepRow> rejected;  // the others, in sweep order, each with its misfit
};

// The space: Br and Bc in {16, 32, 64, 128, 192, 256} (powers of two and FA2's 192 for small head dims),
// warps {2, 4, 8}, K/V stages {1, 2, 3}, Q in registers or not, K and V sharing a buffer or not; the
// backward's (Br, Bc, warps) only: FlashAttention-2's backward has none of the other variants.
std::vector<TileConfig> sweep_space(Pass pass);

// Ranks by predicted time; equal times (compute-bound configs of the same FLOPs) by less DRAM traffic, then
// fewer L2 bytes, then less shared memory. progress(done, total) is called every 64 configs and at the end.
// `data`: the block mask (nullptr: that of seed 0).
SweepResult sweep(const AttentionProblem& p, const HardwareProfile& hw, Algorithm a, Pass pass,
                  const std::function<void(size_t, size_t)>& progress = {},
                  const ProblemData* data = nullptr);

// A config as a pass's sweep row shows it: the forward's knobs (Br, Bc, warps, stages, Q in registers, shared
// K/V buffer) and the algorithm for the forward; the backward's (Br, Bc, warps, dQ strategy) for the backward.
std::string describe_pass(const TileConfig& c, Algorithm a, Pass pass);

// The same knobs as data: (field, value) pairs named as TileConfig's fields (block_q, block_k, warps, stages,
// q_in_registers, kv_shared, num_splits for the forward; bwd_block_q, bwd_block_k, warps, dq_strategy for the
// backward), and as the command-line flags that give `sim predict` (and flashsim-gpu) that tile.
// pass_knobs_json: the pairs as a JSON object (numbers, q_in_registers / kv_shared as booleans, dq_strategy a
// string) with "flags" added.
std::vector<std::pair<std::string, std::string>> pass_knobs(const TileConfig& c, Pass pass);
std::string pass_flags(const TileConfig& c, Pass pass);
nlohmann::json pass_knobs_json(const TileConfig& c, Pass pass);

// The split-KV sweep of a decode problem (a paged KV cache): FA2's split-KV tile (splitkv_tile) at num_splits
// 1, 2, 4, ... up to min(128, key blocks), and FA2's heuristic choice; per split count the split kernel and
// its combine predicted.
struct SplitSweepRow {
  int64_t num_splits = 1;
  bool heuristic = false;  // FlashAttention-2's num_splits_heuristic picks this count
  bool fits = true;
  double time_s = 0;  // the split kernel and, with > 1 split, the combine
  double split_time_s = 0, combine_time_s = 0;
  int64_t load_bytes = 0, dram_bytes = 0;  // L2 <-> SM bytes (load + store + reduce); DRAM read + write
  int64_t ctas = 0;                        // of both kernels
  int64_t split_resident_ctas = 0;         // the split kernel's CTAs resident at once (its slots)
  double t_dram_s = 0, t_compute_s = 0;    // the split kernel's DRAM time and MMA + exp + vector time
  std::string bound;                       // the split kernel's
  bool memory_bound = false;               // the split kernel's DRAM time bounds it
};
struct SplitSweepResult {
  TileConfig tile;        // the split kernel's tile (num_splits 1)
  int64_t heuristic = 1;  // FA2's choice
  double kv_bytes = 0;    // K and V of every sequence, read once: the decode's DRAM floor
  double dram_rate = 0;   // the profile's DRAM bandwidth (measured where it has one)
  double floor_s = 0;     // kv_bytes / dram_rate
  std::vector<SplitSweepRow> rows;
};
SplitSweepResult sweep_splits(const AttentionProblem& p, const HardwareProfile& hw,
                              const ProblemData* data = nullptr, const TileConfig& base = {});
// The same sweep of gpu/decode's split kernel launched with its own tile (block_q packed rows, block_k keys a
// tile, warps, stages; num_splits ignored) and its own combine (decode_combine): decode-v1's and decode-v2's,
// whose launches take pick_splits' count.
SplitSweepResult sweep_splits_of_tile(const AttentionProblem& p, const HardwareProfile& hw,
                                      const TileConfig& tile, const ProblemData* data = nullptr);
// The split count a launch takes: the fewest splits predicted within kTuneResolution (tune.h) of the fastest
// row, as a launch table keeps the hand-kept tile unless another is predicted that much faster. Splitting adds
// a combine kernel and partials the model prices only roughly: it should be predicted to pay. (Against every
// recorded split count, H100 and H200 decode grids, 2026-11-29: decode-v2's pick within 5% of the measured
// best in 30 / 30 cells on both cards, where the fastest row's was 30 / 30 and 26 / 30; decode-v1's 28 and 29
// of 30, were 27 and 27. Those grids had been seen: not a blind check.)
int64_t pick_splits(const SplitSweepResult& r);
// K and V bytes of every sequence's keys (cache and appended): what a decode step must read (MLA: K's alone, V
// being its first head_dim_v columns).
double kv_cache_bytes(const AttentionProblem& p);

// FlashAttention's lower bound on HBM traffic: every input read and every output written once (forward: q, k,
// v read, o written; backward: q, k, v, o, do read, dq, dk, dv written).
double dram_lower_bound(const AttentionProblem& p, Pass pass);

}  // namespace flashsim::sim
