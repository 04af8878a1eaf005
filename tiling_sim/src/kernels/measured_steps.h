#pragma once
// The time of a warp-specialized launch from its instance's measured costs (HardwareProfile::measured_steps,
// calibration fa3.step_costs_h100): the fa3 family's forward and backward time models take it where the profile
// has their tile, and their component estimate elsewhere.
#include <cstdint>
#include <string_view>
#include <utility>
#include <vector>

#include "flashsim/sim/counts.h"
#include "flashsim/sim/cta_model.h"
#include "flashsim/sim/hardware.h"
#include "flashsim/sim/schedule.h"

namespace flashsim::sim::kernels {

// The entry of `kernel` measured with w's tile (Br, Bc, stages, head dim) and grid (persistent or one CTA a
// tile); nullptr when the profile has none.
const MeasuredSteps* find_measured_steps(const HardwareProfile& hw, std::string_view kernel,
                                         const WarpSpecializedWork& w);

// Seconds from the first CTA's start to the last CTA's end: CTA i costs tiles_i tile_s(steps_i / tiles_i) +
// steps_i step_extra_s + masked_i masked_extra_s; one CTA a tile deals the CTAs in launch order to `slots` resident slots (each slot
// takes the next CTA when its last one ends: the block scheduler); a persistent grid (<= slots CTAs) starts
// them all at once. Without w's per-CTA lists: the totals over the slots, times `imbalance`.
double measured_makespan(const WarpSpecializedWork& w, const MeasuredSteps& m, double step_extra_s,
                         double masked_extra_s, int64_t slots, double imbalance);

// Fills w's totals and (up to WarpSpecializedWork::kMaxListedCtas CTAs) its per-CTA lists from each sequence's
// blocks: blocks[b][x] = (steps, masked steps) of grid block x of sequence b (one list for every sequence when
// blocks has one), repeated over the launch's grid in its order (x fastest, then y: the batch, then z: the heads).
// w's tile (Br, Bc, stages: the measured entries' key) and head dims are set from the arguments.
void list_ctas(WarpSpecializedWork& w, const KernelLaunch& l, const AttentionProblem& p, int64_t block_q,
               int64_t block_k, int stages,
               const std::vector<std::vector<std::pair<int64_t, int64_t>>>& blocks);

// The same from one period of the launch order: period[i] = (steps, masked steps) of its i-th CTA, the launch
// running the period `repeat` times over (a block mask's launch lists every CTA: repeat 1).
void list_period(WarpSpecializedWork& w, const KernelLaunch& l, const AttentionProblem& p, int64_t block_q,
                 int64_t block_k, int stages, const std::vector<std::pair<int64_t, int64_t>>& period,
                 int64_t repeat);

// Calls f(b, h, x) for each CTA of the launch's grid in launch order: x fastest, then the batch (y), then the
// heads (z); the heads before the batch where the launch says so (KernelLaunch::heads_then_batch), as
// schedule() builds them.
template <class F>
void for_each_cta(const KernelLaunch& l, F&& f) {
  const bool heads_first = l.heads_then_batch;
  const int64_t outer = heads_first ? l.grid_y : l.grid_z, inner = heads_first ? l.grid_z : l.grid_y;
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i)
      for (int64_t x = 0; x < l.grid_x; ++x) f(heads_first ? o : i, heads_first ? i : o, x);
}

// The time of a kernel whose launch lists its CTAs' steps (KernelLaunch::ws): where the profile has the
// instance's measured costs (an SM's seconds for a CTA of n steps, measured with every SM full: the FA2 family's
// forward and backward main kernels, calibration fa2.step_costs_h100), the CTAs dealt in launch order to the
// SMs, each taking the next CTA when its last one ends, a masked step adding masked_step_s; else the per-CTA
// chain (cta_model.h).
CtaTime measured_or_chain_time(const KernelCounts& k, int ctas_per_sm, double imbalance,
                               const HardwareProfile& hw);

}  // namespace flashsim::sim::kernels
