// The per-CTA time model (cta_model.h).
#include "flashsim/sim/cta_model.h"

#include <algorithm>
#include <cmath>

namespace flashsim::sim {

CtaTime cta_time(const KernelCounts& k, int ctas_per_sm, double imbalance, const HardwareProfile& hw) {
  CtaTime t;
  const CtaStep& s = k.launch.step;
  if (s.warps <= 0 || s.algorithm_flops <= 0 || k.mma_flops <= 0 || hw.mma_sync_flops <= 0 ||
      hw.smem_bytes_per_s <= 0 || hw.clock_hz <= 0 || ctas_per_sm <= 0)
    return t;
  t.modelled = true;
  const double sms = std::max(1, hw.sms);
  const double schedulers = std::max(1, hw.schedulers_per_sm);
  t.steps = k.mma_flops / s.algorithm_flops;
  t.regs = s.regs;
  const int threads = s.warps * 32;
  t.spill_bytes = 8 * spilled_registers(s.accumulator_regs);  // 4 bytes a register, stored and reloaded
  const double smem = s.smem_bytes + static_cast<double>(t.spill_bytes) * threads;
  // A step's exp and vector work, as seconds of the whole GPU.
  const double alu = (k.exp_ops / hw.exp_per_s + k.vector_ops / (hw.fp32_flops / 2)) / t.steps;
  t.t_tensor = t.steps * s.mma_flops / hw.mma_sync_flops;
  t.t_smem = t.steps * smem / hw.smem_bytes_per_s;
  t.t_alu = t.steps * alu;
  // One CTA's step on a scheduler: its warps there (own) issue their MMAs through the scheduler's tensor pipe
  // (the GPU's mma.sync rate / SMs / schedulers).
  const double own = std::max(1.0, s.warps / schedulers);
  const double pipe = own * s.mma_flops / s.warps / hw.mma_sync_flops * sms * schedulers;
  double work = pipe;
  if (hw.warp_cpi > 0 && s.warp_instructions > 0) {
    // Where the model counts a warp's instructions: a scheduler interleaves the warps it holds, whether they come
    // from one CTA or from several, and issues for them at the measured rate (warp_cpi is a warp's cycles per
    // instruction with 2 warps a scheduler: 2 / warp_cpi instructions a cycle). A round in which each resident
    // CTA runs one step takes max(W, 2) x instructions x warp_cpi / 2, W = the warps a scheduler holds (fewer than
    // 2 are taken to issue no faster: a lone warp waits on its own dependencies); no faster than the tensor pipe.
    const double held = std::max(2.0, ctas_per_sm * s.warps / schedulers);
    // A CTA alone on its SM whose warps share schedulers runs them in phase (its barriers line them up): they want
    // the tensor pipe and shared memory at the same moments, where two CTAs drift apart and take turns.
    const bool lockstep = ctas_per_sm == 1 && s.warps >= 2 * schedulers && hw.lockstep_cpi_factor > 1;
    const double cpi = hw.warp_cpi * (lockstep ? hw.lockstep_cpi_factor : 1.0);
    work = std::max(pipe, held * s.warp_instructions * cpi / 2 / hw.clock_hz);
  } else {
    // Otherwise a warp issues at most one m16n8k16 every mma_sync_warp_cycles and runs its MMAs and its softmax
    // in turn; the CTA's warps on one scheduler overlap them.
    const double hmma_per_warp = s.mma_flops / s.warps / (2.0 * 16 * 8 * 16);  // m16n8k16s a warp issues
    const double issue =
        hw.mma_sync_warp_cycles > 0 ? hmma_per_warp * hw.mma_sync_warp_cycles / hw.clock_hz : 0;
    const double alu1 = alu * sms * schedulers / s.warps;  // a warp's exp + vector work at a scheduler's rate
    work = std::max({pipe, own * alu1, std::max(issue, pipe / own) + alu1});
  }
  // The next tile's load: L2's latency plus its bytes at one SM's share of L2 bandwidth, less the work that
  // runs between its issue and its use.
  const double load = hw.l2_latency_s + s.load_bytes / (hw.l2_bytes_per_s / sms);
  t.exposed_load_s = std::max(0.0, load - s.hide_steps * work);
  // Bias / mask elements come from DRAM (each is read once) through plain loads whose results the step needs
  // right away: a warp streams them at the bytes it keeps in flight over the DRAM latency (Little's law).
  // A spilling score-pipeline kernel reloads its spilled registers (4 bytes a lane) through the same load path
  // with as many bytes in flight, from L2 at its latency: the bias stream leaves them no room in L1.
  if (s.direct_bytes > 0 && hw.direct_load_inflight_bytes > 0 && hw.cta_dram_latency_s > 0) {
    const double reloads = 4.0 * 32 * spilled_registers(s.accumulator_regs);
    t.direct_load_s = (s.direct_bytes / s.warps * hw.cta_dram_latency_s + reloads * hw.l2_latency_s) /
                      hw.direct_load_inflight_bytes;
  }
  t.chain_step_s = work +
                   (s.syncs * hw.step_overhead_cycles +
                    (s.warp_instructions > 0 ? 0 : spilled_registers(s.accumulator_regs) * kSpillCycles)) /
                       hw.clock_hz +
                   t.exposed_load_s + t.direct_load_s;
  t.t_chain = t.steps * t.chain_step_s / (ctas_per_sm * sms);
  t.warps_per_scheduler = ctas_per_sm * s.warps / schedulers;
  // The tensor pipe, shared memory and the ALUs overlap, but not perfectly: the SM's issue slots and the
  // dependencies between a step's loads, MMAs and softmax keep them from running at their peaks together. Their
  // combination is a p-norm (p = overlap_norm: infinity = perfect overlap, 1 = none), calibrated on measured runs.
  const double top = std::max({t.t_tensor, t.t_smem, t.t_alu});
  double busy = top;
  if (hw.overlap_norm > 0) {
    const double q = hw.overlap_norm;
    busy = std::pow(std::pow(t.t_tensor, q) + std::pow(t.t_smem, q) + std::pow(t.t_alu, q), 1 / q);
  }
  busy = std::max(busy, t.t_chain);
  t.bound = busy == t.t_chain && t.t_chain > top ? "chain"
            : top == t.t_tensor                  ? "tensor"
            : top == t.t_smem                    ? "smem"
                                                 : "alu";
  t.time_s = busy * imbalance;
  return t;
}

}  // namespace flashsim::sim
