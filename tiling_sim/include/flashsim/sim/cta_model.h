#pragma once
// The per-CTA time model: what separates tile configs that move the same bytes and do the same FLOPs. A
// kernel's main loop (KernelLaunch::step, one key block of the forward, one query block of the backward) is
// timed on the SM that runs it, term by term:
//   tensor   the step's MMAs at the profile's mma.sync rate (mma_sync_flops), all SMs busy;
//   smem     the step's shared-memory bytes (every warp's ldmatrix reads of the tiles it multiplies, the
//            tiles' cp.async writes, spilled registers) at the SMs' shared-memory bandwidth;
//   alu      exp and fp32 vector work (softmax, rescaling) at the profile's SFU and FP32 rates;
//   chain    one CTA's step as its warps run it: a warp issues its MMAs and its softmax in turn (they only
//            overlap across warps sharing a scheduler), plus the step's barriers (step_overhead_cycles each)
//            and the part of the next tile's L2 load the step's work does not hide (stages); the resident
//            CTAs of an SM (occupancy: shared memory, threads, the register estimate) run their chains side
//            by side;
// and the kernel takes the largest of the four, times its CTAs' wave / load imbalance.
#include <algorithm>
#include <string>

#include "flashsim/sim/counts.h"
#include "flashsim/sim/hardware.h"

namespace flashsim::sim {

// Registers a thread needs beyond its fp32 accumulators (fragments ptxas keeps in flight ahead of the MMAs,
// softmax statistics, copy / ldmatrix addresses, loop state), from fa2-v1's 232 kernels on sm_90
// (calibration fa2.register_overhead, ptxas -res-usage): where ptxas did not reach the 255 cap it used the
// median overhead (kRegisterOverhead: the estimate that sets occupancy); where it did, it got by with less
// (kMinRegisterOverhead), spilling a few registers in
// the loop at most. So a kernel spills once its accumulators pass 255 - 63 = 192 (the traits' limit).
inline constexpr int kRegisterOverhead = 102;
inline constexpr int kMinRegisterOverhead = 63;
inline constexpr int kMaxRegistersPerThread = 255;
// The score-pipeline kernels (bias, mask, softcap, ALiBi) hold their element indexing on top, and beyond 64 score
// registers a thread one bias / mask register per further score: in the same CSV the pipeline kernels spill
// 0 .. 8 registers more than the plain ones (stack bytes / 4) where a thread holds <= 64 scores, and the one
// holding 128 (d64 Br128 Bc128 w4) spills 72 where its plain kernel spills none.
inline constexpr int kPipelineRegisters = 8;
inline double pipeline_registers(double score_regs) {
  return std::max<double>(kPipelineRegisters, score_regs - 64);
}
// Cycles a spilled register costs a step: stored and reloaded through L1 (an L1 hit's ~33-cycle latency,
// published microbenchmarks of the H100), not hidden by the warp's own work.
inline constexpr double kSpillCycles = 33;

// A thread's register estimate (occupancy) from its accumulator registers, at most 255.
inline int register_estimate(double accumulator_regs) {
  return std::min(kMaxRegistersPerThread, static_cast<int>(accumulator_regs + 0.5) + kRegisterOverhead);
}
// Registers a thread spills (stored and reloaded every step): what its accumulators and the least overhead need
// beyond 255.
inline int spilled_registers(double accumulator_regs) {
  return std::max(0,
                  static_cast<int>(accumulator_regs + 0.5) + kMinRegisterOverhead - kMaxRegistersPerThread);
}

// Bytes of the bias (input dtype) and boolean mask (1 byte) elements of a Br x Bc score tile: what the
// score-pipeline kernels load per step with plain global loads.
inline double score_tile_bytes(const AttentionProblem& p, int64_t br, int64_t bc) {
  const double elems = static_cast<double>(br) * static_cast<double>(bc);
  return (p.bias != BroadcastShape::None ? elems * dtype_bytes(p.dtype) : 0.0) +
         (p.mask != BroadcastShape::None ? elems : 0.0);
}

// A step's register fields from its fp32 accumulator registers (pipeline_registers more for a score-pipeline
// kernel: bias, mask, softcap or ALiBi).
// score_regs: the S (or S^T) accumulators among them.
inline void set_step_registers(CtaStep& s, const AttentionProblem& p, double accumulator_regs,
                               double score_regs) {
  const bool pipeline =
      p.bias != BroadcastShape::None || p.mask != BroadcastShape::None || p.softcap > 0 || p.alibi;
  s.accumulator_regs = accumulator_regs + (pipeline ? pipeline_registers(score_regs) : 0);
  s.regs = register_estimate(s.accumulator_regs);
}

struct CtaTime {
  bool modelled = false;    // the kernel has a CtaStep and the profile the rates it needs
  double steps = 0;         // main-loop iterations over all CTAs (the algorithm's FLOPs / a full step's)
  int regs = 0;             // registers per thread, estimated
  int64_t spill_bytes = 0;  // per thread and step: registers over 255, stored and reloaded
  double warps_per_scheduler = 0;
  double t_tensor = 0, t_smem = 0, t_alu = 0, t_chain = 0;
  double chain_step_s = 0;    // one CTA's step
  double exposed_load_s = 0;  // of which the next tile's load not hidden by work
  double direct_load_s = 0;   // of which a warp's bias / mask loads
  double time_s = 0;          // max of the four terms x imbalance
  std::string bound;          // "tensor", "smem", "alu" or "chain"; "measured steps" by the profile's costs,
  std::string measured_on;    // then the GPU they were measured on ("this GPU", "the H100-SXM5-80GB")
};

// The model of one kernel (counts, its occupancy and imbalance from the roofline model).
CtaTime cta_time(const KernelCounts& k, int ctas_per_sm, double imbalance, const HardwareProfile& hw);

}  // namespace flashsim::sim
