#pragma once
// The executed L2 model: the schedule's moves run through an LRU cache of 128-byte lines of the profile's
// effective L2 capacity. CTAs run in launch order, `resident` at a time, their moves interleaved round-robin.
// Cold at kernel start; loads and reductions that miss read the line from DRAM; stores allocate without
// reading; evicted dirty lines are written back, and so are the oldest dirty lines beyond the profile's
// l2_dirty_bytes (they stay cached, clean); dirty lines still in L2 at kernel end are not counted (as ncu).
#include <cstdint>
#include <optional>

#include "flashsim/sim/hardware.h"
#include "flashsim/sim/schedule.h"

namespace flashsim::sim {

struct L2Result {
  int64_t dram_read = 0, dram_write = 0;
  int64_t hits = 0, misses = 0;  // line lookups
  int64_t dirty_at_end = 0;      // bytes
  int64_t frame_read = 0;        // of dram_read, the spill frames' lines read back
};

struct PartitionedReads {
  int64_t dram_read = 0;
  int64_t frame_read = 0;  // of dram_read, the spill frames' lines read back
};

// frame_bytes: each CTA's register-spill stack frame (all its threads'), stored when it starts and loaded when
// it ends, at its slot's local memory (0: none).
L2Result simulate_l2(const KernelSchedule& s, const AttentionProblem& p, const HardwareProfile& hw,
                     int64_t resident_ctas, int64_t frame_bytes = 0);

// The DRAM bytes the schedule reads through the partitioned L2 of the profile (l2_partitions partitions of
// l2_ways-way sets replacing by l2_replacement, `capacity_bytes` in all; a line has a home partition by its
// address, an SM's partition keeps copies of lines homed in the other and asks the home over the fabric on a miss;
// only a miss at home reads DRAM). The same walk of the moves as simulate_l2, slot k on SM k mod sms, SMs split
// evenly over the partitions.
PartitionedReads simulate_l2_partitioned_reads(const KernelSchedule& s, const AttentionProblem& p,
                                               const HardwareProfile& hw, int64_t resident_ctas,
                                               int64_t capacity_bytes, int64_t frame_bytes = 0);

// The least DRAM bytes the schedule's loads and reductions can read through any cache of `capacity_bytes` (one
// cache, no partition keeping copies), with the same walk of the moves as simulate_l2: Belady's optimum, which on
// a miss evicts the entries used again furthest ahead, or keeps no copy of the line when that is the missed line.
// Stores and register-spill frames take no room (they need read nothing). `traffic compare`'s lower bound.
// It keeps the walk's whole read order (24 bytes a read): nullopt, having kept no more than kOptimalMaxReads, for a
// longer walk (a long forward whose rows are not whole lines, touched line by line: SDPA's b5 h32/4 n13888 d96
// causal forward walks ~0.5 G reads, 20 GB); its caller then keeps the compulsory bytes.
inline constexpr int64_t kOptimalMaxReads = int64_t{1}
                                            << 25;  // 0.8 GB; the longest chunked forward recorded: ~6 M
std::optional<int64_t> simulate_l2_optimal_reads(const KernelSchedule& s, const AttentionProblem& p,
                                                 const HardwareProfile& hw, int64_t resident_ctas,
                                                 int64_t capacity_bytes,
                                                 int64_t max_reads = kOptimalMaxReads);

// l2_probe.cu's reuse_read (calibration h200.l2_replacement): a buffer of `buffer_bytes` read kReuseProbePasses
// times over in chunks of kReuseProbeChunkBytes, CTA b reading chunk b mod chunks, `ctas_per_sm` CTAs an SM, through
// the partitioned L2 of `capacity_bytes` with the profile's partitions, ways and replacement. Returns the DRAM
// reads beyond the first pass over those of a pass (the probe table's "miss per re-read").
inline constexpr int64_t kReuseProbeChunkBytes = 64 << 10;  // l2_probe.cu's chunk: 64 KB
inline constexpr int kReuseProbePasses = 3;
double simulate_l2_reuse_probe(const HardwareProfile& hw, int64_t capacity_bytes, int64_t buffer_bytes,
                               int ctas_per_sm);

}  // namespace flashsim::sim
