#pragma once
// What a kernel moves: bytes and 32-byte sectors by tensor and direction (global <-> SM, i.e. L2 requests),
// the unique footprint the DRAM model needs, and the work.
#include <array>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string_view>
#include <vector>

#include "flashsim/sim/schedule.h"

namespace flashsim::sim {

// The tensors the decode kernels move that the CPU reference has no id for (it attends to gathered keys and
// keeps its split-KV partials in its own buffers): simulator-only ids, numbered after a gap that leaves the
// reference's enum room to grow.
namespace tensor {
inline constexpr int kFirstSimOnly = 24;
static_assert(static_cast<int>(ref::TensorId::RowSum) < kFirstSimOnly);
// The paged cache [num_blocks, page_size, heads_kv, dim]: moves name (batch 0, kv head, cache row, rows) and
// carry their element address (Move::addr0, Move::pitch).
inline constexpr ref::TensorId KCache = static_cast<ref::TensorId>(kFirstSimOnly + 0);
inline constexpr ref::TensorId VCache = static_cast<ref::TensorId>(kFirstSimOnly + 1);
// The appended keys [batch, seqlen_new, heads_kv, dim] (flash_attn_with_kvcache's k / v arguments).
inline constexpr ref::TensorId KNew = static_cast<ref::TensorId>(kFirstSimOnly + 2);
inline constexpr ref::TensorId VNew = static_cast<ref::TensorId>(kFirstSimOnly + 3);
// int32 [batch, max_blocks_per_seq]: rows are table columns (one entry each), contiguous.
inline constexpr ref::TensorId BlockTable = static_cast<ref::TensorId>(kFirstSimOnly + 4);
// Split-KV partials, fp32 (flash-attention's oaccum / softmax_lseaccum): per (batch, query head) row
// split * seqlen_q + i.
inline constexpr ref::TensorId OAccum = static_cast<ref::TensorId>(kFirstSimOnly + 5);
inline constexpr ref::TensorId LseAccum = static_cast<ref::TensorId>(kFirstSimOnly + 6);
}  // namespace tensor

inline constexpr int kNumTensors = tensor::kFirstSimOnly + 7;

// A tensor's name in predictions: the reference's names, and k_cache, v_cache, k_new, v_new, block_table,
// o_accum, lse_accum for the simulator's own.
std::string_view tensor_name(ref::TensorId t);

struct DirectionBytes {
  int64_t bytes = 0, sectors = 0;
  bool operator==(const DirectionBytes&) const = default;
};

struct TensorTraffic {
  DirectionBytes load, store, reduce;
  int64_t unique_bytes = 0;  // footprint touched (any direction)
  // A tensor read and written where not all of it is both (a paged cache with appended rows): the part read
  // from DRAM and the part written back (-1: the whole footprint).
  int64_t read_bytes = -1, dirty_bytes = -1;
  bool operator==(const TensorTraffic&) const = default;
};

struct KernelCounts {
  KernelLaunch launch;
  std::array<TensorTraffic, kNumTensors> tensors{};
  double mma_flops = 0, exp_ops = 0;
  double vector_ops = 0;  // fp32 non-matrix work: softmax max/scale/sum per score, rescaling O per key block
  // Matrix FLOPs of each CTA in launch order, when the CTAs differ (causal or windowed blocks, varlen); empty
  // when all CTAs do the same work. The time model schedules them on the resident slots.
  std::vector<double> cta_work;
  int64_t cta_work_repeat = 1;  // the launch's CTAs are cta_work repeated this many times
  // Models with dram_cta_share: each CTA's bytes between L2 and the SM in launch order, when they differ
  // (empty: equal CTAs).
  std::vector<double> cta_bytes;
  // A streaming kernel's steps (key tiles) each CTA computes, in launch order (the split-KV decode; empty: the
  // steps spread evenly over the CTAs).
  std::vector<double> cta_steps;
  // Models that skip block-mask tiles (KernelModel::block_sparse): (query block, key block) tiles computed
  // and skipped (every block-mask tile they overlap inactive), over every CTA.
  int64_t tiles = 0, skipped_tiles = 0;

  int64_t load_bytes() const;
  int64_t store_bytes() const;
  int64_t store_sectors() const;  // the stores' 32-byte sectors (each row's stores apart)
  int64_t reduce_bytes() const;
  int64_t unique_loaded() const;  // footprint of tensors only loaded or reduced (read from DRAM when cold)
  int64_t unique_dirty() const;   // footprint of stored or reduced tensors
  int64_t unique_stored() const;  // footprint of plainly stored tensors
  int64_t unique_total() const;
};

// Run a schedule: sum its moves (the executed simulator's counting part).
KernelCounts execute_counts(const KernelSchedule& s);
// The same numbers in closed form, without building the schedule. `data`: the block table and block mask
// (nullptr: those of seed 0, built when the problem has them). list_block_mask_steps false: a block-masked
// launch's CTA steps are not listed (a profile without the kernel's measured costs has no use for them, and
// listing them tests every tile again: a sweep's configs).
KernelCounts analytic_counts(const KernelModel& m, const AttentionProblem& p, const TileConfig& c,
                             const ProblemData* data = nullptr, bool list_block_mask_steps = true);

}  // namespace flashsim::sim
