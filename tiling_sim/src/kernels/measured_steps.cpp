#include "measured_steps.h"

#include <algorithm>
#include <functional>
#include <vector>

namespace flashsim::sim::kernels {

const MeasuredSteps* find_measured_steps(const HardwareProfile& hw, std::string_view kernel,
                                         const WarpSpecializedWork& w) {
  for (const MeasuredSteps& m : hw.measured_steps)
    if (m.kernel == kernel && m.head_dim == w.head_dim && m.block_q == w.block_q && m.block_k == w.block_k &&
        m.stages == w.stages && m.persistent == w.persistent)
      return &m;
  return nullptr;
}

double measured_makespan(const WarpSpecializedWork& w, const MeasuredSteps& m, double step_extra_s,
                         double masked_extra_s, int64_t slots, double imbalance) {
  slots = std::max<int64_t>(1, slots);
  // A CTA of `tiles` tiles and `steps` steps: its tiles taken as equal (a persistent CTA's tiles differ little
  // where it runs persistent: the non-causal schedule).
  const auto cost = [&](double tiles, double steps, double masked) {
    return tiles > 0 ? tiles * m.tile_s(steps / tiles) + steps * step_extra_s + masked * masked_extra_s : 0.0;
  };
  const size_t n = w.cta_tiles.size();
  if (n == 0 || w.cta_steps.size() != n || w.cta_masked.size() != n)
    return cost(w.tiles, w.steps, w.masked_steps) / static_cast<double>(slots) * imbalance;
  // one period's costs, dealt cta_repeat times over in launch order
  std::vector<double> period(n);
  for (size_t i = 0; i < n; ++i) period[i] = cost(w.cta_tiles[i], w.cta_steps[i], w.cta_masked[i]);
  const auto total = std::max<int64_t>(1, w.cta_repeat) * static_cast<int64_t>(n);
  return dealt_makespan(total, slots, [&](int64_t i) { return period[static_cast<size_t>(i) % n]; });
}

void list_period(WarpSpecializedWork& w, const KernelLaunch& l, const AttentionProblem& p, int64_t block_q,
                 int64_t block_k, int stages, const std::vector<std::pair<int64_t, int64_t>>& period,
                 int64_t repeat) {
  w.block_q = block_q;
  w.block_k = block_k;
  w.head_dim = p.head_dim;
  w.head_dim_v = p.head_dim_v;
  w.stages = stages;
  const bool listed = l.ctas() <= WarpSpecializedWork::kMaxListedCtas;
  double tiles = 0, steps = 0, masked = 0;
  for (const auto& [n_steps, n_masked] : period) {
    const double s = static_cast<double>(n_steps), mk = static_cast<double>(n_masked);
    tiles += s > 0 ? 1 : 0;
    steps += s;
    masked += mk;
    if (!listed) continue;
    w.cta_tiles.push_back(s > 0 ? 1 : 0);
    w.cta_steps.push_back(s);
    w.cta_masked.push_back(mk);
  }
  const auto times = static_cast<double>(repeat);
  w.tiles += tiles * times;
  w.steps += steps * times;
  w.masked_steps += masked * times;
  w.cta_repeat = repeat;
}

void list_ctas(WarpSpecializedWork& w, const KernelLaunch& l, const AttentionProblem& p, int64_t block_q,
               int64_t block_k, int stages,
               const std::vector<std::vector<std::pair<int64_t, int64_t>>>& blocks) {
  // The period: the sequences' blocks in order (one list for every sequence: its blocks alone), then repeated
  // over the heads (and the batch).
  const int64_t batches = blocks.size() > 1 ? l.grid_y : 1, repeat = l.grid_z * (l.grid_y / batches);
  std::vector<std::pair<int64_t, int64_t>> period;
  for (int64_t b = 0; b < batches; ++b)
    period.insert(period.end(), blocks[static_cast<size_t>(b)].begin(), blocks[static_cast<size_t>(b)].end());
  list_period(w, l, p, block_q, block_k, stages, period, repeat);
}

CtaTime measured_or_chain_time(const KernelCounts& k, int ctas_per_sm, double imbalance,
                               const HardwareProfile& hw) {
  CtaTime t = cta_time(k, ctas_per_sm, imbalance, hw);
  const WarpSpecializedWork& w = k.launch.ws;
  const MeasuredSteps* m = w.tiles > 0 ? find_measured_steps(hw, k.launch.name(), w) : nullptr;
  if (!m) return t;
  t.modelled = true;
  t.time_s = measured_makespan(w, *m, 0.0, m->masked_step_s, std::max(1, hw.sms), imbalance);
  t.chain_step_s = m->step_s();
  t.t_chain = t.time_s;
  t.bound = "measured steps";
  t.measured_on = measured_where(*m);
  return t;
}

}  // namespace flashsim::sim::kernels
