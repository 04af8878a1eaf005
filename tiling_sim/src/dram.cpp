// Occupancy, the L2/DRAM model and the roofline time.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>

#include "flashsim/error.h"
#include "flashsim/memory.h"
#include "flashsim/sim/l2_sim.h"
#include "flashsim/sim/model.h"
#include "flashsim/sim/schedule.h"
#include "kernels/measured_steps.h"

namespace flashsim::sim {

Occupancy occupancy(const KernelLaunch& l, const HardwareProfile& hw) {
  Occupancy o;
  const int64_t smem = l.smem_bytes();
  if (smem > hw.shared_memory_per_block) {
    o.fits = false;
    std::string bufs;
    for (const auto& b : l.smem) bufs += fmt::format("{}{} {} B", bufs.empty() ? "" : " + ", b.name, b.bytes);
    o.reason = fmt::format("shared memory per CTA {} B ({}) exceeds the {} B per block by {} B", smem, bufs,
                           hw.shared_memory_per_block, smem - hw.shared_memory_per_block);
    return o;
  }
  // Accumulators live in registers: a thread holds its share of the fp32 tiles its warp accumulates (forward:
  // the warp's Br/warps rows of O and of S/P; backward: dK and dV of the Bc key rows and S, dP of the tile).
  // A thread has at most 255 registers; beyond that the kernel spills every iteration or cannot be built.
  if (l.accumulator_elems > 0 && l.threads > 0) {
    const int64_t regs = (l.accumulator_elems + l.threads - 1) / l.threads;
    if (regs > 255) {
      o.fits = false;
      o.reason = fmt::format(
          "the fp32 accumulators need {} registers per thread ({} elements over {} threads), more than 255",
          regs, l.accumulator_elems, l.threads);
      return o;
    }
  }
  int best = hw.max_ctas_per_sm;
  o.limiter = "CTA slots";
  auto limit = [&](int64_t n, const char* why) {
    if (n < best) {
      best = static_cast<int>(n);
      o.limiter = why;
    }
  };
  if (smem > 0)
    limit(hw.shared_memory_per_sm / (smem + hw.shared_memory_reserved_per_block), "shared memory");
  limit(hw.max_threads_per_sm / std::max(1, l.threads), "threads");
  if (l.regs_per_thread > 0) {
    const int64_t per_warp = (l.regs_per_thread + 7) / 8 * 8 * 32;
    limit(hw.registers_per_sm / (per_warp * ((l.threads + 31) / 32)), "registers");
  }
  o.ctas_per_sm = std::max(best, 0);
  if (o.ctas_per_sm == 0) {
    o.fits = false;
    o.reason = "no CTA fits on an SM (" + o.limiter + ")";
  }
  o.resident_ctas = static_cast<int64_t>(o.ctas_per_sm) * hw.sms;
  return o;
}

// CTAs dealt in launch order to `resident` slots, each taking the next CTA when its last one ends (a min-heap
// of slot end times, the top replaced in place). Long launches: the CTAs before the last 2 x resident keep
// every slot busy (balanced), so only that tail is scheduled, from equal start times. Returns the makespan
// over the perfectly balanced time.
// DRAM bytes per second a kernel can move: the measured copy bandwidth where the profile has one.
static double dram_rate(const HardwareProfile& hw) {
  return hw.achieved_dram_bytes_per_s > 0 ? hw.achieved_dram_bytes_per_s : hw.dram_bytes_per_s;
}

static double list_schedule_imbalance(const std::vector<double>& pattern, int64_t repeat, int64_t resident) {
  const auto m = static_cast<int64_t>(pattern.size());
  const int64_t n = m * repeat;
  const auto work = [&](int64_t i) { return pattern[static_cast<size_t>(i % m)]; };
  const int64_t tail = std::min(n, 2 * resident);
  double once = 0, prefix = 0;
  for (const double w : pattern) once += w;
  const double total = once * static_cast<double>(repeat);
  for (int64_t i = n - tail; i < n; ++i) prefix -= work(i);
  prefix += total;
  if (total <= 0) return 1.0;
  const double start = prefix / static_cast<double>(resident);
  std::vector<double> heap;  // slot end times, smallest on top
  heap.reserve(static_cast<size_t>(resident));
  double makespan = start;
  for (int64_t i = n - tail; i < n; ++i) {
    const double w = work(i);
    if (static_cast<int64_t>(heap.size()) < resident) {
      heap.push_back(start + w);
      std::push_heap(heap.begin(), heap.end(), std::greater<>());
      makespan = std::max(makespan, start + w);
      continue;
    }
    std::pop_heap(heap.begin(), heap.end(), std::greater<>());
    heap.back() += w;
    makespan = std::max(makespan, heap.back());
    std::push_heap(heap.begin(), heap.end(), std::greater<>());
  }
  return makespan * static_cast<double>(resident) / total;
}

// The profile's measured entry of the launch's streaming loop (a split-KV kernel's key tile); nullptr where none.
static const MeasuredSteps* measured_stream(const KernelLaunch& l, const HardwareProfile& hw) {
  if (l.step_bytes <= 0 || !l.model) return nullptr;
  for (const MeasuredSteps& m : hw.measured_steps)
    if (m.kernel == l.model->name && m.head_dim == l.step_head_dim && m.block_q == l.step_block_q &&
        m.block_k == l.step_block_k && m.stages == l.step_stages && !m.persistent)
      return &m;
  return nullptr;
}

// A measured step time of the launch's streaming loop, 0 where the profile has none.
static double measured_step_s(const KernelLaunch& l, const HardwareProfile& hw) {
  const MeasuredSteps* m = measured_stream(l, hw);
  return m ? m->step_s() : 0;
}

// A streaming kernel measured under load (MeasuredSteps::load, calibration decode.load_h200): with A of its CTAs
// streaming at once, a CTA of n steps takes cta_s(A) + n step_s(A) at the launch's page size. The CTAs are dealt
// to the resident slots in launch order, each slot taking the next when its last one ends (the block
// scheduler), A = the slots; the CTAs past the launch's whole waves (a partial last wave) stream with only
// their own number at once and take that load's costs. The busiest slot's seconds. step_s(A) holds both limits
// the probe met: a CTA's own loop where few stream, the kernel's share of the DRAM bandwidth where every slot
// does. A CTA without steps (an empty split) is taken as free.
static double measured_load_time(const KernelCounts& k, const MeasuredSteps& m, int64_t resident) {
  const int64_t ctas = k.launch.ctas();
  if (ctas <= 0) return 0;
  const int64_t slots = std::max<int64_t>(1, std::min(ctas, resident));
  const int64_t last = ctas > slots ? ctas % slots : 0;  // the CTAs of a partial last wave
  const int page = static_cast<int>(k.launch.step_page_size);
  // (step_s, cta_s) at the slots' load and at the last wave's (plain pairs: a lambda can't capture a binding)
  const std::pair<double, double> full = m.at_load(static_cast<double>(slots), page);
  const std::pair<double, double> tail = m.at_load(static_cast<double>(std::max<int64_t>(1, last)), page);
  const bool listed = static_cast<int64_t>(k.cta_steps.size()) == ctas;
  const double even = static_cast<double>(k.tiles) / static_cast<double>(ctas);  // the steps spread evenly
  return kernels::dealt_makespan(ctas, slots, [&](int64_t i) {
    const double n = listed ? k.cta_steps[static_cast<size_t>(i)] : even;
    const auto& [step, fixed] = i >= ctas - last ? tail : full;
    return n <= 0 ? 0.0 : fixed + n * step;
  });
}

// The bytes a second one CTA can stream: its loads in flight over the DRAM latency (Little's law), at most an
// SM's rate, as measured for the profile; without those measurements one SM's share of the bandwidth. Where the
// profile has the kernel's measured step (a CTA alone, calibration decode.cta_stream_h100), at most a step's
// bytes a step: what a CTA whose loop issues too few loads, or waits on its own instructions, reaches.
static double cta_dram_rate(const KernelLaunch& l, const HardwareProfile& hw) {
  double r = dram_rate(hw) / static_cast<double>(std::max(1, hw.sms));
  if (hw.cta_dram_latency_s > 0 && l.inflight_bytes > 0) {
    r = static_cast<double>(l.inflight_bytes) / hw.cta_dram_latency_s;
    if (hw.sm_dram_bytes_per_s > 0) r = std::min(r, hw.sm_dram_bytes_per_s);
  }
  if (const double step = measured_step_s(l, hw); step > 0)
    r = std::min(r, static_cast<double>(l.step_bytes) / step);
  return r;
}

// The DRAM time when each CTA streams at most at cta_dram_rate: the CTAs' bytes between L2 and the SM (scaled by
// the kernel's DRAM / L2 ratio) dealt to the resident slots as the block scheduler deals them, the busiest
// slot's bytes at that rate. Few CTAs (a decode launch without splits) cannot reach the full bandwidth; a full
// machine is bounded by the bandwidth itself (t_dram). Where the kernel was measured under load, that instead.
static double cta_share_time(const KernelPrediction& r, const HardwareProfile& hw) {
  const KernelCounts& k = r.counts;
  if (const MeasuredSteps* m = measured_stream(k.launch, hw); m && !m->load.empty())
    return measured_load_time(k, *m, r.occ.resident_ctas);
  const double l2 = static_cast<double>(k.load_bytes() + k.store_bytes() + k.reduce_bytes());
  const auto ctas = static_cast<double>(std::max<int64_t>(1, k.launch.ctas()));
  const auto resident = static_cast<double>(std::max<int64_t>(1, r.occ.resident_ctas));
  if (l2 <= 0) return 0;
  const double imbalance =
      k.cta_bytes.empty()
          ? std::ceil(ctas / resident) / (ctas / resident)
          : list_schedule_imbalance(k.cta_bytes, 1, std::max<int64_t>(1, r.occ.resident_ctas));
  const double makespan_bytes = imbalance * l2 / resident;  // the busiest slot's bytes
  const double dram = static_cast<double>(r.dram_read + r.dram_write);
  return makespan_bytes * (dram / l2) / cta_dram_rate(k.launch, hw);
}

// A warp of an FA2-class kernel runs its MMAs and its softmax (exp, rescale) in turn, so they add; memory
// traffic overlaps with both. The launch's fixed time (start, ramp-up, drain) comes on top.
// With the per-CTA model, its time stands for the compute (MMA, softmax, shared memory, the CTAs' step chain).
static void finish_time(KernelPrediction& r) {
  const double compute = r.cta.modelled ? r.cta.time_s : r.t_mma + r.t_exp + r.t_vec;
  const double busy = std::max({r.t_dram, r.t_l2, compute});
  r.time_s = r.t_latency + busy;
  const std::string cta_bound = r.cta.bound == "alu" ? "softmax" : r.cta.bound;
  r.bound = r.t_latency > busy             ? "latency"
            : busy == r.t_dram             ? "memory"
            : busy == r.t_l2               ? "l2"
            : r.cta.modelled               ? cta_bound
            : r.t_mma >= r.t_exp + r.t_vec ? "tensor"
                                           : "softmax";
}

KernelPrediction predict_kernel(const KernelCounts& k, const HardwareProfile& hw, const L2Context& ctx) {
  KernelPrediction r;
  r.name = k.launch.name();
  r.counts = k;
  r.occ = occupancy(k.launch, hw);
  const int64_t ctas = k.launch.ctas();
  const int64_t resident = std::max<int64_t>(1, r.occ.resident_ctas);
  // CTAs of the last wave: their dirty lines (plain stores and the lines their atomics reduced into) were
  // touched last and are still in L2 when the kernel ends.
  const int64_t full_waves = (ctas + resident - 1) / resident - 1;
  const int64_t last_ctas = std::max<int64_t>(0, ctas - full_waves * resident);
  const auto last_wave_dirty =
      static_cast<int64_t>(static_cast<double>(k.unique_dirty()) * static_cast<double>(last_ctas) /
                           static_cast<double>(std::max<int64_t>(1, ctas)));
  r.dram_read = k.unique_loaded();
  const double l2 = static_cast<double>(hw.l2_effective_bytes);
  double retained = 0;
  // Spilled registers of the resident CTAs, when they alone fill L2, push the dirty lines out.
  if (ctx.spill_store_bytes_per_cta * static_cast<double>(resident) < l2 && k.unique_total() > 0) {
    // What stays is the newest part of L2: at most the dirty share of its capacity, and no more dirty data
    // than L2 keeps dirty at all (calibration h100.l2_dirty_bytes).
    const double share = static_cast<double>(k.unique_dirty()) / static_cast<double>(k.unique_total());
    retained = std::min(l2 * share, static_cast<double>(last_wave_dirty));
    if (hw.l2_dirty_bytes > 0) retained = std::min(retained, static_cast<double>(hw.l2_dirty_bytes));
  }
  r.dram_write = std::max<int64_t>(0, k.unique_dirty() - static_cast<int64_t>(retained));
  r.waves = static_cast<double>(ctas) / static_cast<double>(resident);
  // Load imbalance: equal CTAs fill ceil(waves) waves; unequal ones (causal, windows, partial tiles, varlen)
  // are dealt to the resident slots in launch order as the block scheduler does, each slot taking the next
  // CTA when its last one ends; the makespan against the perfectly balanced time.
  double imbalance = r.waves > 0 ? std::ceil(r.waves) / r.waves : 1.0;
  if (!k.cta_work.empty()) imbalance = list_schedule_imbalance(k.cta_work, k.cta_work_repeat, resident);
  r.imbalance = imbalance;
  // The matrix rate FA2-class kernels achieve on this GPU (calibrated), else the tensor peak.
  const bool backward = k.launch.model && k.launch.model->backward_mma_rate;
  const double achieved = backward ? hw.achieved_mma_flops_bwd : hw.achieved_mma_flops_fwd;
  r.calibrated = achieved > 0;
  const double mma_rate = r.calibrated ? achieved : hw.tensor_flops_fp16;
  r.t_dram = static_cast<double>(r.dram_read + r.dram_write) / dram_rate(hw);
  if (k.launch.model && k.launch.model->dram_cta_share) {
    r.t_dram_cta = cta_share_time(r, hw);
    r.t_dram = std::max(r.t_dram, r.t_dram_cta);
  }
  r.t_l2 = static_cast<double>(k.load_bytes() + k.store_bytes() + k.reduce_bytes()) / hw.l2_bytes_per_s;
  r.t_mma = k.mma_flops / mma_rate * imbalance;
  r.t_exp = k.exp_ops / hw.exp_per_s * imbalance;
  r.t_vec = k.vector_ops / (hw.fp32_flops / 2) * imbalance;  // one op per FMA slot
  r.t_latency = hw.kernel_latency_s;
  if (r.occ.fits)
    r.cta = k.launch.model && k.launch.model->time_model
                ? k.launch.model->time_model(k, r.occ.ctas_per_sm, imbalance, hw)
                : cta_time(k, r.occ.ctas_per_sm, imbalance, hw);
  finish_time(r);
  return r;
}

int64_t executed_schedule_bytes(const KernelCounts& analytic, const AttentionProblem& p,
                                const TileConfig& c) {
  const int64_t smallest =
      std::max<int64_t>(1, std::min({c.block_q, c.block_k, c.bwd_block_q, c.bwd_block_k}));
  const double blocks =
      std::ceil(static_cast<double>(std::max(p.seqlen_q, p.seqlen_k)) / static_cast<double>(smallest)) + 1;
  // A paged key tile is one move per page run (K, V, their appended rows' stores); a combine CTA moves each
  // split's partials of its rows.
  const double per_block =
      8 + (p.kv_cache()
               ? 4.0 * (std::ceil(static_cast<double>(c.block_k) / static_cast<double>(p.page_size)) + 1)
               : 0.0);
  const double per_cta =
      per_block * blocks + (c.num_splits > 1 ? 64.0 * static_cast<double>(c.num_splits) : 0.0);
  const double ctas = static_cast<double>(analytic.launch.ctas());
  const double bytes =
      ctas * (static_cast<double>(sizeof(CtaWork)) + per_cta * static_cast<double>(sizeof(Move)));
  return bytes > 9e18 ? INT64_MAX : static_cast<int64_t>(bytes);
}

std::vector<KernelPrediction> predict(const AttentionProblem& p, const TileConfig& c,
                                      const HardwareProfile& hw,
                                      const std::vector<const KernelModel*>& kernels, bool executed,
                                      int64_t max_memory_bytes, const ProblemData* data) {
  const int64_t limit = max_memory_bytes > 0 ? max_memory_bytes : default_memory_limit();
  ProblemData storage;
  const ProblemData& d = resolve_data(p, data, storage);
  const bool masked = p.block_mask != BroadcastShape::None;
  std::vector<KernelPrediction> out;
  for (const KernelModel* kind : kernels) {
    if (masked && !kind->block_sparse)
      throw InputError("block_mask", fmt::format("kernel {} cannot skip block-mask tiles", kind->name));
    if (!executed) {
      out.push_back(predict_kernel(analytic_counts(*kind, p, c, &d), hw));
      out.back().block_sparse = masked;
      continue;
    }
    const KernelCounts analytic = analytic_counts(*kind, p, c, &d);
    const int64_t need = executed_schedule_bytes(analytic, p, c);
    if (need > limit)
      throw MemoryLimitError(
          fmt::format("the executed schedule of {} needs up to {} bytes ({:.2f} GiB), over the "
                      "memory limit of {} bytes ({:.2f} GiB); the analytic model (without "
                      "--executed) needs none",
                      kind->name, need, static_cast<double>(need) / (1 << 30), limit,
                      static_cast<double>(limit) / (1 << 30)));
    const KernelSchedule s = schedule(*kind, p, c, &d);
    const KernelCounts k = execute_counts(s);
    const Occupancy o = occupancy(s.launch, hw);
    KernelPrediction pr = predict_kernel(k, hw, {});
    pr.block_sparse = masked;
    if (o.fits) {  // the executed L2 model replaces the closed-form DRAM estimate
      const L2Result l2 = simulate_l2(s, p, hw, o.resident_ctas);
      pr.dram_read = l2.dram_read;
      pr.dram_write = l2.dram_write;
      pr.t_dram = static_cast<double>(pr.dram_read + pr.dram_write) / dram_rate(hw);
      if (kind->dram_cta_share) {
        pr.t_dram_cta = cta_share_time(pr, hw);
        pr.t_dram = std::max(pr.t_dram, pr.t_dram_cta);
      }
      finish_time(pr);
    }
    out.push_back(std::move(pr));
  }
  return out;
}

nlohmann::json to_json(const KernelPrediction& k) {
  nlohmann::json tensors = nlohmann::json::object();
  for (size_t t = 0; t < k.counts.tensors.size(); ++t) {
    const auto& tt = k.counts.tensors[t];
    if (tt.load.bytes + tt.store.bytes + tt.reduce.bytes == 0) continue;
    tensors[std::string(sim::tensor_name(static_cast<ref::TensorId>(t)))] = {
        {"load_bytes", tt.load.bytes},     {"load_sectors", tt.load.sectors},
        {"store_bytes", tt.store.bytes},   {"store_sectors", tt.store.sectors},
        {"reduce_bytes", tt.reduce.bytes}, {"footprint_bytes", tt.unique_bytes}};
  }
  nlohmann::json smem = nlohmann::json::array();
  for (const auto& b : k.counts.launch.smem) smem.push_back({{"buffer", b.name}, {"bytes", b.bytes}});
  nlohmann::json j = {
      {"kernel", k.name},
      {"grid", {k.counts.launch.grid_x, k.counts.launch.grid_y, k.counts.launch.grid_z}},
      {"threads", k.counts.launch.threads},
      {"shared_memory_bytes", k.counts.launch.smem_bytes()},
      {"shared_memory_buffers", smem},
      {"fits", k.occ.fits},
      {"reason", k.occ.reason},
      {"ctas_per_sm", k.occ.ctas_per_sm},
      {"occupancy_limiter", k.occ.limiter},
      {"load_bytes", k.counts.load_bytes()},
      {"store_bytes", k.counts.store_bytes()},
      {"reduce_bytes", k.counts.reduce_bytes()},
      {"dram_read_bytes", k.dram_read},
      {"dram_write_bytes", k.dram_write},
      {"mma_flops", k.counts.mma_flops},
      {"exp_ops", k.counts.exp_ops},
      {"vector_ops", k.counts.vector_ops},
      {"t_dram_s", k.t_dram},
      {"t_l2_s", k.t_l2},
      {"t_mma_s", k.t_mma},
      {"t_exp_s", k.t_exp},
      {"t_vector_s", k.t_vec},
      {"t_latency_s", k.t_latency},
      {"intensity_flop_per_dram_byte",
       k.counts.mma_flops / std::max<double>(1.0, static_cast<double>(k.dram_read + k.dram_write))},
      {"waves", k.waves},
      {"time_s", k.time_s},
      {"time_is_estimate", true},
      {"time_calibrated", k.calibrated},
      {"imbalance", k.imbalance},
      {"bound", k.bound},
      {"tensors", tensors}};
  // Keys of the decode and block-sparse features, only where they are in use (dense outputs keep their bytes).
  if (k.block_sparse) {
    j["tiles_computed"] = k.counts.tiles;
    j["tiles_skipped"] = k.counts.skipped_tiles;
  }
  if (k.counts.launch.model && k.counts.launch.model->dram_cta_share) j["t_dram_cta_share_s"] = k.t_dram_cta;
  if (k.cta.modelled)
    j["cta_model"] = {{"registers_per_thread", k.cta.regs},
                      {"spill_bytes_per_thread_step", k.cta.spill_bytes},
                      {"warps_per_scheduler", k.cta.warps_per_scheduler},
                      {"steps", k.cta.steps},
                      {"t_tensor_s", k.cta.t_tensor},
                      {"t_smem_s", k.cta.t_smem},
                      {"t_alu_s", k.cta.t_alu},
                      {"t_chain_s", k.cta.t_chain},
                      {"chain_step_s", k.cta.chain_step_s},
                      {"exposed_load_s", k.cta.exposed_load_s},
                      {"time_s", k.cta.time_s},
                      {"bound", k.cta.bound}};
  return j;
}

}  // namespace flashsim::sim
