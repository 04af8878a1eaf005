#pragma once
// Hardware profiles: the numbers of a GPU the memory model needs. Built-ins come from
// tiling_sim/profiles/*.json (embedded at build time); "host" describes this machine's CPU through hwloc.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace flashsim::sim {

// The partitioned L2's set replacements (HardwareProfile::l2_replacement; l2_sim.cpp's PartitionedL2)
inline const std::vector<std::string> kL2Replacements{"lru", "srrip", "drrip"};

// A streaming kernel's costs at one load (MeasuredSteps::load): with `ctas` CTAs streaming at once, a step (key
// tile) takes step_s and a CTA its fixed cta_s beyond its steps (its start, first loads, and epilogue).
struct StreamLoadPoint {
  double ctas = 0, step_s = 0, cta_s = 0;
};

// The costs at one page size (rows a cache page; 0: a contiguous cache), points in increasing ctas.
struct StreamLoad {
  int page_size = 0;
  std::vector<StreamLoadPoint> points;
};

// One compiled kernel instance's measured costs (HardwareProfile::measured_steps): an SM's seconds for a tile (a
// CTA's work unit) of n steps at a few n, tile_s_by_steps = {{n, seconds}, ...} in increasing n (two at least).
struct MeasuredSteps {
  std::string kernel;  // the kernel model's name: "fwd_fa3", "bwd_fa3", "fwd_fa2_v1", "bwd_dq_dk_dv"
  int head_dim = 0, block_q = 0, block_k = 0, stages = 0;
  bool persistent = false;  // the grid it was measured with: persistent CTAs, or one CTA a tile
  std::vector<std::pair<double, double>> tile_s_by_steps;
  // What a step that masks scores element by element (a causal diagonal's, a window edge's, the keys' end) adds
  // to a tile, measured on causal problems (may be negative: a masked step that skips work); 0: not measured.
  double masked_step_s = 0;
  // The profile it was measured with when inherited ("measured_on" in the JSON; "": the profile's own GPU).
  std::string measured_on;
  // A tile of n steps: linear between the measured n, the last two's slope past them, the first two's below
  // (at least 0).
  double tile_s(double steps) const;
  double step_s() const;  // the slope of the last two: a step of a long tile
  // A streaming kernel (the split-KV decode) measured under load: a CTA's step and fixed time against the CTAs
  // streaming at once, at one or more page sizes (calibration decode.load_h200). Empty: not measured.
  std::vector<StreamLoad> load;
  // (step_s, cta_s) with `ctas` CTAs streaming, pages of page_size rows (0: contiguous) and block_k-key steps:
  // linear in ctas between the points (the ends held beyond them), and between the measured page sizes linear
  // in the table lookups a step makes, block_k / page_size (the nearest held beyond them). {0, 0} without load.
  std::pair<double, double> at_load(double ctas, int page_size) const;
};

struct HardwareProfile {
  std::string name, description;
  std::string inherits;  // the built-in profile whose fields this one starts from ("": none)
  std::vector<std::string>
      inherited_fields;  // the fields taken from `inherits` (this profile does not set them)
  // Where a measured field was measured: "this GPU", or "the <parent>" for a field taken from `inherits`.
  std::string measured_on(std::string_view field) const;
  int sms = 1;
  int64_t shared_memory_per_sm = 0, shared_memory_per_block = 0, shared_memory_reserved_per_block = 0;
  int64_t registers_per_sm = 65536;
  int max_threads_per_sm = 2048, max_ctas_per_sm = 32;
  int64_t l2_bytes = 0;
  int64_t l2_effective_bytes = 0;  // what one kernel's data can keep (partitioning, set conflicts)
  int64_t l2_dirty_bytes = 0;  // the most dirty data L2 keeps (calibration h100.l2_dirty_bytes); 0: no limit
  // How much other traffic data read again by CTAs on other SMs survives (calibration h100.l2_reuse_bytes: on
  // the H100 about half the L2, the two partitions each keeping a copy); the adverse L2 of `traffic compare`'s
  // DRAM interval (dram_interval.h). 0: not measured, half of l2_effective_bytes.
  int64_t l2_reuse_bytes = 0;
  // The LRU capacity of that adverse L2: the largest at which the executed schedule of FlashAttention-forward
  // mimics walking K/V backwards (l2_probe.cu's causal_mimic) re-reads at least what they re-read on the GPU
  // (calibration h100.l2_adverse_reuse_bytes). 0: not measured; the adverse L2 is then l2_reuse_bytes less the
  // share of it the kernel's dirty lines may hold.
  int64_t l2_adverse_reuse_bytes = 0;
  // The L2's build: its partitions (a line homed in one; an SM's partition keeps copies of the other's lines) and
  // the ways of a set (l2_sim.h's simulate_l2_partitioned_reads).
  int l2_partitions = 1, l2_ways = 16;
  // How a set of that partitioned L2 picks its victim: "lru", "srrip" or "drrip" (l2_sim.h; calibration
  // h200.l2_replacement: the one whose reuse-probe curve is nearer the card's, `run.py derive l2-replacement`).
  std::string l2_replacement = "lru";  // one of kL2Replacements
  // The capacity of that partitioned L2 at which its reads bound a causal forward's on the card: the largest at
  // which the executed schedule reads at least what SDPA's FlashAttention-2 forward read, on the fit problems
  // with the kernels' stack frames (calibration h200.l2_partitioned_adverse; dram_interval uses it only where a
  // kernel's frame is known). 0: unset, the upper bound is the adverse LRU's alone (the H100's: the frames of the
  // PyTorch build its forwards ran are not recorded).
  int64_t l2_partitioned_adverse_bytes = 0;
  // A kernel's code read from DRAM once per profiled run (ncu flushes the caches before each kernel): the
  // largest sm_90 attention kernel's .text in our build (fa2-v1's forward, 184 KB by cuobjdump); added to the
  // upper bound of `traffic compare`'s DRAM reads. 0: no allowance.
  int64_t kernel_code_bytes = 0;
  int sector_bytes = 32, line_bytes = 128;
  double dram_bytes_per_s = 0, l2_bytes_per_s = 0, tensor_flops_fp16 = 0, fp32_flops = 0, exp_per_s = 0;
  // Matrix FLOP/s that FlashAttention-2-class kernels (mma.sync, softmax between the MMAs of a warp) achieve,
  // forward and backward, measured (see the profile's "achieved_source"); 0: not calibrated, the tensor peak
  // is used and the time is a lower bound.
  double achieved_mma_flops_fwd = 0, achieved_mma_flops_bwd = 0;
  double achieved_dram_bytes_per_s = 0;  // measured copy bandwidth (read + write); 0: dram_bytes_per_s
  std::string achieved_source;
  std::string l2_source;  // where l2_effective_bytes and l2_dirty_bytes come from
  // DRAM writes that Nsight Compute adds to a kernel it replays (several metric passes), except the first
  // kernel it profiles: dirty data its replay leaves in L2, which the kernel then evicts (measured: the same
  // kernels with 16 metrics and alone: calibration h100.ncu_replay_write_bytes). 0: not measured.
  double ncu_replay_write_bytes = 0;
  std::string ncu_replay_source;
  // How far ncu's DRAM counters of one kernel differ between runs of the same kernels, as a fraction of the
  // kernel's DRAM bytes (read + write): `traffic compare` holds a DRAM figure within 10% of the prediction or
  // within this much of the kernel's measured DRAM bytes, whichever is wider. 0: not measured (10% only).
  double ncu_dram_repeatability = 0;
  // The same for a causal forward's read figure, whose K/V re-reads move more between runs (0: not measured).
  double ncu_dram_reread_repeatability = 0;
  std::string ncu_dram_repeatability_source;
  // Fixed time of a kernel launch as ncu's gpu__time_duration counts it (start, bandwidth ramp-up, drain),
  // added to every kernel's roofline time; measured as what copy kernels take beyond their DRAM bytes at the
  // copy bandwidth (calibration h100.kernel_latency_s). 0: not measured.
  double kernel_latency_s = 0;
  std::string kernel_latency_source;
  // How fast one CTA streams DRAM (calibration h100.cta_dram_latency_s and h100.sm_dram_bytes_per_s): a CTA
  // keeping B bytes of loads in flight moves B / cta_dram_latency_s bytes a second (Little's law), at most
  // sm_dram_bytes_per_s. The decode kernels' time (KernelModel::dram_cta_share) holds their CTAs to it. 0: not
  // measured (a CTA then gets one SM's share of the bandwidth, an assumption).
  double cta_dram_latency_s = 0, sm_dram_bytes_per_s = 0;
  std::string cta_dram_source;
  // The per-CTA time model (cta_model.h); 0: not modelled (the roofline times every kernel).
  //   mma_sync_flops: dense bf16 / fp16 mma.sync (m16n8k16, fp32 accumulate) FLOP/s of the whole GPU;
  //   smem_bytes_per_s: shared-memory bandwidth of all SMs (128 bytes a clock an SM);
  //   clock_hz: the SM clock under a tensor-core load; schedulers_per_sm: warp schedulers (4 since Volta);
  //   l2_latency_s: an L2 hit's load latency; step_overhead_cycles: what one CTA barrier of a main-loop step
  //   costs (the wait for the slowest warp, the barrier itself, the loop's address arithmetic).
  //   mma_sync_warp_cycles: the cycles between two independent m16n8k16 MMAs of one warp (its issue limit:
  //   a lone warp cannot fill its scheduler's tensor pipe).
  double mma_sync_flops = 0, smem_bytes_per_s = 0, clock_hz = 0, l2_latency_s = 0, step_overhead_cycles = 0;
  double mma_sync_warp_cycles = 0;
  double direct_load_inflight_bytes = 0;  // bias / mask bytes a warp keeps in flight (cta_model.h); 0: none
  double warp_cpi = 0;  // cycles per instruction of one warp in an FA2 main loop (cta_model.h); 0: not used
  // a warp's cycles per instruction when its CTA is alone on the SM with >= 2 warps a scheduler, over warp_cpi
  // (cta_model.h); 0 or 1: none
  double lockstep_cpi_factor = 0;
  double overlap_norm = 0;  // how the tensor, shared-memory and ALU times combine (cta_model.h); 0: their max
  int schedulers_per_sm = 4;
  std::string cta_model_source;
  // The Hopper per-CTA model of warp-specialized kernels (fa3-v1's forward: tiling_sim/src/kernels/fa3_forward.cpp),
  // from bench/gpu/probes/wgmma_probe.cu (calibration ids h100.wgmma_rates, h100.tma_rates, h100.barrier_cycles):
  //   wgmma_ss_flops_per_clock, wgmma_rs_flops_per_clock: dense 16-bit wgmma m64nNk16 (fp32 accumulate) FLOPs a
  //   clock an SM at N = 64, 128, 256, two warpgroups issuing in turn; A from shared memory (SS: S = Q K^T) or
  //   registers (RS: O += P V); empty: the model is off (the roofline times the kernel);
  //   tma_latency_s: a TMA tile load's fixed time, issue to its mbarrier's completion, less its bytes at
  //   tma_bytes_per_s (one SM's TMA bandwidth from L2, tiles in flight);
  //   mbarrier_cycles: an mbarrier's arrive seen by a warp waiting on it (one way); named_barrier_cycles: a
  //   bar.arrive seen by the warpgroup in bar.sync on it (one way: the ping-pong's hand-off).
  std::vector<double> wgmma_ss_flops_per_clock, wgmma_rs_flops_per_clock;
  double tma_latency_s = 0, tma_bytes_per_s = 0, mbarrier_cycles = 0, named_barrier_cycles = 0;
  std::string hopper_source;  // where they come from (placeholders say so)
  // Measured main-loop costs of compiled warp-specialized kernels (calibration fa3.step_costs_h100,
  // bench/gpu/fa3_calib.sh): on shapes none of the bench grid's, the slope of a kernel's time over its steps
  // (key blocks of the forward, query blocks of the backward) and the intercept, per SM. Where an entry matches
  // a launch (kernel, tile, grid), the kernel's time model takes these instead of its component estimate.
  std::vector<MeasuredSteps> measured_steps;
  std::string measured_steps_source;
  // The SASS architecture gpu/'s build runs on this GPU ("sm_80" for sm_80 .. sm_89, "sm_90"): whose compiled
  // kernels' registers (kernel_resources.h) set fa2-v1's occupancy. Empty: the model's register estimate.
  std::string kernel_arch;
};

HardwareProfile profile_from_json(const nlohmann::json& j);  // throws InputError("hw") on missing fields
nlohmann::json to_json(const HardwareProfile& p);

std::vector<std::string> profile_names();             // built-ins, then "host"
HardwareProfile load_profile(std::string_view name);  // a built-in, "host", or a path to a .json file
HardwareProfile host_profile();                       // from hwloc

}  // namespace flashsim::sim
