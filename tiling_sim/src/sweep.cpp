// The tile-config sweep (sweep.h).
#include "flashsim/sim/sweep.h"

#include <fmt/format.h>

#include <algorithm>
#include <tuple>

namespace flashsim::sim {

std::vector<TileConfig> sweep_space(Pass pass) {
  const bool bwd = pass == Pass::Backward;
  std::vector<TileConfig> configs;
  const int64_t blocks[] = {16, 32, 64, 128, 192, 256};
  for (int64_t bq : blocks)
    for (int64_t bk : blocks)
      for (int warps : {2, 4, 8})
        for (int stages : {1, 2, 3})
          for (bool qr : {false, true})
            for (bool kvs : {false, true}) {
              if (bwd && (stages > 1 || qr || kvs)) continue;  // the FA2 backward has no such variants
              TileConfig c;
              (bwd ? c.bwd_block_q : c.block_q) = bq;
              (bwd ? c.bwd_block_k : c.block_k) = bk;
              c.warps = warps;
              c.stages = stages;
              c.q_in_registers = qr;
              c.kv_shared_buffer = kvs;
              configs.push_back(c);
            }
  return configs;
}

SweepRow predict_config(const AttentionProblem& p, const TileConfig& c, const HardwareProfile& hw,
                        const std::vector<const KernelModel*>& kernels, const ProblemData* data, bool& fits,
                        const KernelResources* compiled) {
  SweepRow row;
  row.config = c;
  fits = true;
  double worst = -1;
  for (const KernelModel* m : kernels)  // a tile the kernels' warp partition cannot run is no config
    if (const auto broken = tile_misfit(*m, c)) {
      row.misfit = broken->message;
      fits = false;
      return row;
    }
  for (const KernelModel* m : kernels) {
    // a block-masked launch's step lists, only where the profile can time them (listing tests every tile)
    const bool list_steps = p.block_mask != BroadcastShape::None &&
                            std::any_of(hw.measured_steps.begin(), hw.measured_steps.end(),
                                        [&](const MeasuredSteps& e) { return e.kernel == m->name; });
    KernelCounts counts = analytic_counts(*m, p, c, data, list_steps);
    // the pass's main loop (the kernel with a per-CTA step) is the one fa2-v1 compiles per tile config
    if (compiled && counts.launch.step.warps > 0)
      if (const CompiledKernel* ck = compiled->find(m->pass, p, c)) {
        // ptxas's registers set the occupancy instead of the estimate
        counts.launch.regs_per_thread = ck->registers;
        counts.launch.step.regs = ck->registers;
      }
    const auto k = predict_kernel(counts, hw);
    if (!k.occ.fits && fits) row.misfit = fmt::format("{}: {}", k.name, k.occ.reason);
    fits = fits && k.occ.fits;
    row.time_s += k.time_s;
    row.load_bytes += k.counts.load_bytes();
    row.dram_bytes += k.dram_read + k.dram_write;
    row.smem_bytes = std::max(row.smem_bytes, k.counts.launch.smem_bytes());
    if (k.time_s > worst) {
      worst = k.time_s;
      row.ctas_per_sm = k.occ.ctas_per_sm;
      row.bound = k.name + ":" + k.bound;
      row.kernel_bound = k.bound;
      row.limiter = k.occ.limiter;
      row.regs = k.cta.regs;
    }
  }
  return row;
}

bool ranks_before(const SweepRow& x, const SweepRow& y) {
  return std::tie(x.time_s, y.ctas_per_sm, x.dram_bytes, x.load_bytes, x.smem_bytes) <
         std::tie(y.time_s, x.ctas_per_sm, y.dram_bytes, y.load_bytes, y.smem_bytes);
}

HardwareProfile ranking_profile(const HardwareProfile& hw) {
  HardwareProfile out = hw;
  std::erase_if(out.measured_steps, [](const MeasuredSteps& m) {
    return m.kernel == "fwd_fa2" || m.kernel == "fwd_fa2_v1" || m.kernel.starts_with("bwd_dq_dk_dv");
  });
  return out;
}

SweepResult sweep(const AttentionProblem& p, const HardwareProfile& profile, Algorithm a, Pass pass,
                  const std::function<void(size_t, size_t)>& progress, const ProblemData* data) {
  const HardwareProfile hw = ranking_profile(profile);
  const auto configs = sweep_space(pass);
  const auto kernels = kernels_of(a, pass);
  ProblemData storage;
  const ProblemData& d = resolve_data(p, data, storage);
  SweepResult r;
  r.configs = static_cast<int64_t>(configs.size());
  for (size_t i = 0; i < configs.size(); ++i) {
    if (progress && (i % 64 == 0 || i + 1 == configs.size())) progress(i + 1, configs.size());
    bool fits = true;
    SweepRow row = predict_config(p, configs[i], hw, kernels, &d, fits);
    (fits ? r.ranked : r.rejected).push_back(std::move(row));
  }
  std::stable_sort(r.ranked.begin(), r.ranked.end(), ranks_before);
  return r;
}

std::string describe_pass(const TileConfig& c, Algorithm a, Pass pass) {
  if (pass == Pass::Backward)
    return fmt::format("{} bwd Br{} Bc{} w{} dq:{}", algorithm_name(a), c.bwd_block_q, c.bwd_block_k, c.warps,
                       dq_strategy_name(c.dq_strategy));
  return fmt::format("Br{} Bc{} w{} st{}{}{}{} {}", c.block_q, c.block_k, c.warps, c.stages,
                     c.q_in_registers ? " Qreg" : "", c.kv_shared_buffer ? " KVshared" : "", c.splits_text(),
                     algorithm_name(a));
}

std::vector<std::pair<std::string, std::string>> pass_knobs(const TileConfig& c, Pass pass) {
  const auto yes_no = [](bool b) { return std::string(b ? "1" : "0"); };
  if (pass == Pass::Backward)
    return {{"bwd_block_q", std::to_string(c.bwd_block_q)},
            {"bwd_block_k", std::to_string(c.bwd_block_k)},
            {"warps", std::to_string(c.warps)},
            {"dq_strategy", std::string(dq_strategy_name(c.dq_strategy))}};
  return {{"block_q", std::to_string(c.block_q)},       {"block_k", std::to_string(c.block_k)},
          {"warps", std::to_string(c.warps)},           {"stages", std::to_string(c.stages)},
          {"q_in_registers", yes_no(c.q_in_registers)}, {"kv_shared", yes_no(c.kv_shared_buffer)},
          {"num_splits", std::to_string(c.num_splits)}};
}

std::string pass_flags(const TileConfig& c, Pass pass) {
  if (pass == Pass::Backward)
    return fmt::format("--bwd-block-q {} --bwd-block-k {} --warps {} --dq-strategy {}", c.bwd_block_q,
                       c.bwd_block_k, c.warps, dq_strategy_name(c.dq_strategy));
  return fmt::format("--block-q {} --block-k {} --warps {} --stages {}{}{}{}", c.block_q, c.block_k, c.warps,
                     c.stages, c.q_in_registers ? " --q-in-registers" : "",
                     c.kv_shared_buffer ? " --kv-shared" : "",
                     c.num_splits > 1 ? fmt::format(" --num-splits {}", c.num_splits) : std::string());
}

nlohmann::json pass_knobs_json(const TileConfig& c, Pass pass) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [key, value] : pass_knobs(c, pass)) {
    if (key == "dq_strategy")
      j[key] = value;
    else if (key == "q_in_registers" || key == "kv_shared")
      j[key] = value == "1";
    else
      j[key] = std::stoll(value);
  }
  j["flags"] = pass_flags(c, pass);
  return j;
}

double dram_lower_bound(const AttentionProblem& p, Pass pass) {
  const int e = dtype_bytes(p.dtype);
  const int64_t inputs = p.q_elems() + p.k_elems() + p.v_elems();
  return static_cast<double>(pass == Pass::Backward ? (inputs + 2 * p.o_elems()) * e + inputs * e
                                                    : (inputs + p.o_elems()) * e);
}

}  // namespace flashsim::sim
