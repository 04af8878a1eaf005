#pragma once
// From a kernel's counts to what the hardware does: shared-memory capacity check, occupancy, the L2/DRAM
// model and a roofline time.
#include <string>
#include <vector>

#include "flashsim/sim/counts.h"
#include "flashsim/sim/cta_model.h"
#include "flashsim/sim/hardware.h"
#include "flashsim/sim/kernel_model.h"

namespace flashsim::sim {

struct Occupancy {
  bool fits = true;
  std::string reason;  // when it does not fit: the buffers and the overflow in bytes
  int ctas_per_sm = 0;
  int64_t resident_ctas = 0;  // SMs x ctas_per_sm
  std::string limiter;        // "shared memory", "registers", "threads", "CTA slots"
};
Occupancy occupancy(const KernelLaunch& l, const HardwareProfile& hw);

// Extra knowledge of the run (from a profile): register spills keep L2 lines busy.
struct L2Context {
  double spill_store_bytes_per_cta = 0;
};

struct KernelPrediction {
  std::string name;
  KernelCounts counts;
  Occupancy occ;
  int64_t dram_read = 0, dram_write = 0;
  double t_dram = 0, t_l2 = 0, t_mma = 0, t_exp = 0, t_vec = 0, time_s = 0, waves = 0;
  double t_latency = 0;       // the profile's fixed time per kernel launch, added to the bound's time
  double imbalance = 1;       // makespan of the CTAs on the resident slots / perfectly balanced time
  bool calibrated = false;    // the matrix rate is a measured FA2 rate (else the peak: a lower bound)
  bool block_sparse = false;  // the problem has a block mask: counts.tiles / skipped_tiles are reported
  double t_dram_cta = 0;      // dram_cta_share models: the DRAM time at one SM's share per CTA (in t_dram)
  // The per-CTA model (cta_model.h) of kernels with a main-loop step: its time replaces MMA + exp + vector.
  CtaTime cta;
  // "memory" (DRAM), "l2", "tensor" (MMA), "softmax" (exp + vector work), "latency" (the fixed time per
  // launch is more than all of these); with the per-CTA model also "smem" (shared-memory bandwidth) and "chain"
  // (the CTAs' serial step time at this occupancy)
  std::string bound;
};

// The closed-form L2/DRAM model and the time estimate of one kernel.
// DRAM: L2 is cold at kernel start (ncu's default): every byte of the footprint of loaded (or atomically
// reduced) tensors is read from DRAM once, the resident CTAs' working set assumed to fit. Every dirty byte
// (plain stores, lines reduced into) is written back, except those still in L2 at kernel end, which ncu does
// not count: the dirty lines of the last wave's CTAs, at most the dirty share of L2's effective capacity;
// none when register spills of the resident CTAs fill L2 (ctx, from a profile). Time: max(DRAM, L2, MMA + exp
// + vector work) x the CTAs' load imbalance on the resident slots; MMA at the profile's measured FA2 rate
// where it has one, else at the tensor peak.
KernelPrediction predict_kernel(const KernelCounts& k, const HardwareProfile& hw, const L2Context& ctx = {});

// Kernels of a problem (kernels_of(algorithm, pass), or any registered models), analytic counts (fast) or
// executed schedule. The executed schedule holds every CTA's moves: before building one, its size is bounded from the launch
// (executed_schedule_bytes) and a MemoryLimitError thrown when that exceeds max_memory_bytes (0: 80% of the
// memory available).
// `data`: the block table and block mask (nullptr: those of seed 0). Throws InputError("block_mask") for a
// block-mask problem and a kernel that cannot skip tiles (KernelModel::block_sparse).
std::vector<KernelPrediction> predict(const AttentionProblem& p, const TileConfig& c,
                                      const HardwareProfile& hw,
                                      const std::vector<const KernelModel*>& kernels, bool executed = false,
                                      int64_t max_memory_bytes = 0, const ProblemData* data = nullptr);

// The kernels that run an algorithm's pass for this problem and config: kernels_of(a, pass), except FA2's
// forward of a paged KV cache or of num_splits > 1, which is the split-KV kernel (fwd_splitkv) and, with
// more than one split, its combine kernel (fwd_splitkv_combine).
std::vector<const KernelModel*> kernels_for(const AttentionProblem& p, const TileConfig& c, Algorithm a,
                                            Pass pass);
// Throws InputError (one line, naming the field) for a combination no modelled kernel runs: a paged KV cache
// or num_splits > 1 with the backward pass or an algorithm other than fa2; a block mask with an algorithm
// whose kernels cannot skip tiles (naive).
void check_supported(const AttentionProblem& p, const TileConfig& c, Algorithm a, Pass pass);
// The split-KV kernel's tile as FlashAttention-2 launches it (run_mha_fwd_splitkv_dispatch): Br 64, Bc 256 for
// head dim <= 64, 128 for <= 128, else 64; 4 warps; the other fields as `base`.
TileConfig splitkv_tile(const AttentionProblem& p, TileConfig base = {});
// FlashAttention-2's num_splits_heuristic (flash_api.cpp) for this launch: 1 when the CTAs without splits
// (batch x kv heads x query blocks, query heads packed) fill 80% of 2 x SMs slots, else the fewest splits
// whose wave efficiency over those slots is within 85% of the best, at most min(128, 2 x SMs, key blocks).
int64_t splitkv_heuristic(const AttentionProblem& p, const TileConfig& c, const HardwareProfile& hw);

// An upper bound on the bytes an executed schedule of the kernel holds: every CTA's record plus at most
// 8 moves per key or query block it loops over (the FA2 backward moves 6 per query block: Q, dO, lse, D, the
// dQ reduction, and one spare; the forward 2 per key block).
int64_t executed_schedule_bytes(const KernelCounts& analytic, const AttentionProblem& p, const TileConfig& c);

nlohmann::json to_json(const KernelPrediction& k);

}  // namespace flashsim::sim
