#pragma once
// `sim tune --kernel splitkv`: the split count of a decode step (a paged KV cache, split-KV with a combine) per
// (head dim, dtype, page size, batch, cache length) entry of a grid, every power of two up to the key blocks
// ranked by the model (sweep_splits_of_tile), beside FlashAttention-2's heuristic and one split. gpu/'s decode
// versions make the same choice at run time (the sweep's fastest count), so the table shows what they launch.
#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <vector>

#include "flashsim/sim/hardware.h"
#include "flashsim/sim/sweep.h"

namespace flashsim::sim {

struct TuneSplitsRequest {
  std::vector<int64_t> head_dims = {128};
  std::vector<DType> dtypes = {DType::BF16};
  std::vector<int64_t> page_sizes = {16, 256};
  std::vector<int64_t> batches = {1, 8, 32, 64, 128};
  std::vector<int64_t> cache_lens = {1024, 8192, 32768};
  int64_t heads_q = 32, heads_kv = 8;  // Llama-3-8B's 32 query heads over 8 kv heads
  int64_t seqlen_q = 1;                // query rows a sequence: 1 decodes, more speculate
  // The split kernel's tile (block_q packed rows, block_k, warps, stages); none: FA2's split-KV tile
  // (splitkv_tile) for each problem.
  std::optional<TileConfig> tile;
};

struct TuneSplitsEntry {
  AttentionProblem problem;
  SplitSweepResult sweep;
  int64_t best = 1;        // pick_splits(sweep)
  double best_s = 0;       // its time
  double heuristic_s = 0;  // FA2's heuristic count's time
  double one_split_s = 0;  // num_splits 1
};
struct TuneSplitsResult {
  TuneSplitsRequest request;
  HardwareProfile hw;
  std::vector<TuneSplitsEntry> entries;
};

// The problem of an entry: batch sequences of cache_len cached keys each, seqlen_q query rows, no append.
AttentionProblem tune_splits_problem(const TuneSplitsRequest& r, int64_t head_dim, DType dtype,
                                     int64_t page_size, int64_t batch, int64_t cache_len);
// Throws InputError naming the field for an empty or out-of-range grid value. progress(done, total) after
// each entry.
TuneSplitsResult tune_splits(const TuneSplitsRequest& r, const HardwareProfile& hw,
                             const std::function<void(size_t, size_t)>& progress = {});
nlohmann::json to_json(const TuneSplitsResult& r);

}  // namespace flashsim::sim
