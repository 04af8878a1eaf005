#pragma once
// The executed L2 model: the schedule's moves run through an LRU cache of 128-byte lines of the profile's
// effective L2 capacity. CTAs run in launch order, `resident` at a time, their moves interleaved round-robin.
// Cold at kernel start; loads and reductions that miss read the line from DRAM; stores allocate without
// reading; evicted dirty lines are written back, and so are the oldest dirty lines beyond the profile's
// l2_dirty_bytes (they stay cached, clean); dirty lines still in L2 at kernel end are not counted (as ncu).
#include <cstdint>
#include <functional>
#include <vector>

#include "flashsim/sim/hardware.h"
#include "flashsim/sim/schedule.h"

namespace flashsim::sim {

struct L2Result {
  int64_t dram_read = 0, dram_write = 0;
  int64_t hits = 0, misses = 0;  // line lookups
  int64_t dirty_at_end = 0;      // bytes
};

L2Result simulate_l2(const KernelSchedule& s, const AttentionProblem& p, const HardwareProfile& hw,
                     int64_t resident_ctas);

// The executed schedule's L2 reuse, policy-free: the bytes loaded or reduced first (cold) and each re-read's LRU
// stack distance (the bytes of distinct lines loaded or reduced since the line's previous touch), binned. An LRU
// of capacity C misses the re-reads at distances >= C; a measured miss curve (l2_reuse_curve) gives the rest.
struct ReuseProfile {
  static constexpr int64_t kBinBytes = int64_t{1} << 17;  // 128 KiB: the curve's points are MiB apart
  static constexpr int64_t kBins = 2048;                  // to 256 MiB; the last bin holds every farther one
  int64_t cold_read_bytes = 0;
  double bin_bytes = 0;
  std::vector<int64_t> reread_bytes;
  // cold + sum over the bins of re-read bytes x miss(the bin's middle distance in bytes)
  double read_bytes(const std::function<double(double)>& miss) const;
};

ReuseProfile reuse_profile(const KernelSchedule& s, const AttentionProblem& p, const HardwareProfile& hw,
                           int64_t resident_ctas);

}  // namespace flashsim::sim
