#pragma once
// The time of a warp-specialized launch from its instance's measured costs (HardwareProfile::measured_steps,
// calibration fa3.step_costs_h100): the fa3 family's forward and backward time models take it where the profile
// has their tile, and their component estimate elsewhere.
#include <algorithm>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "flashsim/sim/counts.h"
#include "flashsim/sim/cta_model.h"
#include "flashsim/sim/hardware.h"
#include "flashsim/sim/schedule.h"

namespace flashsim::sim::kernels {

// Seconds from the first CTA's start to the last one's end when n CTAs of cost(i) seconds are dealt in launch
// order to `slots` resident slots, each slot taking the next CTA when its last one ends (the block scheduler).
template <class Cost>
double dealt_makespan(int64_t n, int64_t slots, Cost&& cost) {
  std::vector<double> heap(static_cast<size_t>(std::max<int64_t>(1, std::min(slots, n))), 0.0);  // end times
  for (int64_t i = 0; i < n; ++i) {  // the earliest-ending slot on top
    std::pop_heap(heap.begin(), heap.end(), std::greater<>());
    heap.back() += cost(i);
    std::push_heap(heap.begin(), heap.end(), std::greater<>());
  }
  return *std::max_element(heap.begin(), heap.end());
}

// The entry of `kernel` measured with w's tile (Br, Bc, stages, head dim) and grid (persistent or one CTA a
// tile); nullptr when the profile has none.
const MeasuredSteps* find_measured_steps(const HardwareProfile& hw, std::string_view kernel,
                                         const WarpSpecializedWork& w);

// Where an entry was measured, as `sim` prints it: "this GPU", or "the <profile>" it was inherited from.
inline std::string measured_where(const MeasuredSteps& m) {
  return m.measured_on.empty() ? "this GPU" : "the " + m.measured_on;
}

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

// The time of a kernel whose launch lists its CTAs' steps (KernelLaunch::ws): where the profile has the
// instance's measured costs (an SM's seconds for a CTA of n steps, measured with every SM full: the FA2 family's
// forward and backward main kernels, calibration fa2.step_costs_h100), the CTAs dealt in launch order to the
// SMs, each taking the next CTA when its last one ends, a masked step adding masked_step_s; else the per-CTA
// chain (cta_model.h).
CtaTime measured_or_chain_time(const KernelCounts& k, int ctas_per_sm, double imbalance,
                               const HardwareProfile& hw);

}  // namespace flashsim::sim::kernels
