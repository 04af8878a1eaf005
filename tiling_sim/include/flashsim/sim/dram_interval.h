#pragma once
// The range of DRAM bytes a kernel can move on a correct L2, for `traffic compare`: the point prediction
// (predict_kernel) sits inside [lower, upper], and only a measured figure outside it says something about the
// kernel rather than about the L2's replacement and write-back policy.
//   lower: the compulsory bytes. Reads: every loaded or reduced byte once (cold L2). Writes: every dirty byte
//          less the most the L2 can keep dirty at kernel end (l2_dirty_bytes). A causal forward's reads, where
//          its upper end is the partitioned L2's: what the executed schedule reads through the optimum cache of
//          the whole L2 (l2_sim.h's simulate_l2_optimal_reads), where more (and its walk short enough to keep).
//   upper: the executed schedule through an adverse but measured L2: an LRU of l2_adverse_reuse_bytes (the
//          capacity at which FlashAttention-forward mimics' executed schedules re-read what they did on the
//          GPU; unmeasured: l2_reuse_bytes, what data read again by other SMs survives, shrunk by the share of L2
//          the kernel's dirty lines can hold, up to l2_dirty_bytes), plus the kernel's code (kernel_code_bytes:
//          ncu flushes the caches, the code is read again). Register-spill frames: a kernel's known stack frame
//          is walked with the schedule (each CTA's stored at its start, loaded at its end, at its slot's local
//          memory), its reads back no more than the report's DRAM writes over their lower end (a spill line
//          comes back from DRAM only after the L2 wrote it back); a frame estimated from the spill stores is
//          hot, the resident CTAs' off the capacity. Writes: every dirty byte plus each CTA's frame written back
//          once, or that LRU's write-backs where more.
//          A causal forward's reads: the smaller of that LRU's and the partitioned L2's at the profile's
//          l2_partitioned_adverse_bytes (l2_sim.h), where the profile has it and the kernel's spill frame is
//          known (its stack frame given, or a report that counts no spill stores).
#include <string>

#include "flashsim/sim/model.h"

namespace flashsim::sim {

struct DramBound {
  double lower = 0, upper = 0;
  double compulsory = 0;  // every byte once; lower where no schedule raises it
  // The tensor an excess most likely comes from: the one the schedule moves most often per byte of its
  // footprint (its re-reads grow fastest), the larger on a tie.
  std::string suspect;
  double suspect_factor = 0;  // its bytes between L2 and the SMs over its footprint
};

// What is known of a kernel's register spills.
struct SpillFacts {
  double store_bytes_per_cta = -1;  // ncu's local-memory store bytes over the CTAs; < 0: no such counter
  double stack_bytes_per_thread =
      -1;                            // the kernel's stack frame (cuobjdump -res-usage's STACK); < 0: unknown
  double measured_write_bytes = -1;  // the report's DRAM writes; < 0: none
};

struct DramInterval {
  DramBound read, write;
  double adverse_l2_bytes = 0;      // the LRU capacity of the upper bounds
  double partitioned_l2_bytes = 0;  // the partitioned L2's capacity of the read upper bound; 0: not used
  double spill_read_bytes = 0;      // the spill frames' reads back from DRAM in the read upper bound (capped)
  double spill_frame_bytes_cta =
      0;                     // a CTA's register-spill frame: its stack frame where known, or its spill
                             // stores over its main-loop steps where more
  bool frame_known = false;  // the frame above is the kernel's whole frame (or it spills nothing)
  bool executed = false;     // upper reads from the executed schedule; false: every load misses
};

// The adverse L2's capacity before a kernel's own terms: the measured l2_adverse_reuse_bytes or, unmeasured,
// l2_reuse_bytes (half of l2_effective_bytes when that is unmeasured too), which dram_interval shrinks by the
// kernel's dirty share. Both then lose the resident CTAs' spill frames.
double adverse_l2_base_bytes(const HardwareProfile& hw);

// prediction: predict_kernel of the model's analytic counts for (p, c). No ncu replay term: the caller adds it.
DramInterval dram_interval(const KernelModel& m, const AttentionProblem& p, const TileConfig& c,
                           const KernelPrediction& prediction, const HardwareProfile& hw,
                           const SpillFacts& spills, const ProblemData* data = nullptr);

}  // namespace flashsim::sim
