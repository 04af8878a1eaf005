#pragma once
// What a kernel moves: bytes and 32-byte sectors by tensor and direction (global <-> SM, i.e. L2 requests),
// the unique footprint the DRAM model needs, and the work.
#include <array>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <vector>

#include "flashsim/sim/schedule.h"

namespace flashsim::sim {

inline constexpr int kNumTensors = static_cast<int>(ref::TensorId::RowSum) + 1;

struct DirectionBytes {
  int64_t bytes = 0, sectors = 0;
  bool operator==(const DirectionBytes&) const = default;
};

struct TensorTraffic {
  DirectionBytes load, store, reduce;
  int64_t unique_bytes = 0;  // footprint touched (any direction)
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

  int64_t load_bytes() const;
  int64_t store_bytes() const;
  int64_t reduce_bytes() const;
  int64_t unique_loaded() const;  // footprint of tensors only loaded or reduced (read from DRAM when cold)
  int64_t unique_dirty() const;   // footprint of stored or reduced tensors
  int64_t unique_stored() const;  // footprint of plainly stored tensors
  int64_t unique_total() const;
};

// Run a schedule: sum its moves (the executed simulator's counting part).
KernelCounts execute_counts(const KernelSchedule& s);
// The same numbers in closed form, without building the schedule.
KernelCounts analytic_counts(const KernelModel& m, const AttentionProblem& p, const TileConfig& c);

}  // namespace flashsim::sim
