#pragma once
// A kernel model: everything the simulator knows of one GPU kernel, defined in one file under
// tiling_sim/src/kernels/ and registered in one table (kernels/registry.cpp) that every part of flashsim
// reads: the closed-form counts (analytic.cpp), the executed schedule and its L2 model, the DRAM/time model,
// `traffic compare` (which kernel an ncu row is, and its tile config), the command line (`sim kernels`,
// `sim predict`) and the counting observer of the CPU reference (which kernel a reference step is).
#include <algorithm>
#include <array>
#include <optional>
#include <regex>
#include <string>
#include <string_view>
#include <vector>

#include "flashsim/algorithm.h"
#include "flashsim/sim/counts.h"

namespace flashsim::sim {

// Builds one CTA's tile moves and work (what the executed simulator runs).
struct CtaBuilder {
  const AttentionProblem& p;
  int e;  // bytes of an input element (the problem's dtype)
  // Bytes of an O element: the output dtype's (bf16 for FP8 inputs, whose q, k, v take 1 byte an element).
  int out_e() const { return dtype_bytes(p.output_dtype()); }
  CtaWork* w;
  const ProblemData* data = nullptr;  // block table and block mask (set whenever the problem has them)
  void add(ref::AccessKind k, ref::TensorId t, int64_t b, int64_t h, int64_t row0, int64_t rows, int64_t cols,
           int eb) {
    if (rows > 0) w->moves.push_back(Move{k, t, b, h, row0, rows, cols, eb});
  }
  // Rows of a TMA load box past the tensor's end (Move::zero_fill): L2 -> SM bytes without memory.
  void add_zero_fill(ref::TensorId t, int64_t b, int64_t h, int64_t row0, int64_t rows, int64_t cols,
                     int eb) {
    if (rows > 0)
      w->moves.push_back(Move{ref::AccessKind::Load, t, b, h, row0, rows, cols, eb, -1, 0, 0, true});
  }
  // The first `cols` of each of the rows of a tensor whose rows hold `row_elems` elements (MLA: V read apart
  // from K is K's first head_dim_v columns).
  void add_columns(ref::AccessKind k, ref::TensorId t, int64_t b, int64_t h, int64_t row0, int64_t rows,
                   int64_t cols, int64_t row_elems, int eb) {
    if (rows > 0) w->moves.push_back(Move{k, t, b, h, row0, rows, cols, eb, -1, 0, row_elems});
  }
  // Keys [k0, k0 + n) of sequence b, kv head hk, in the paged cache (t: tensor::KCache or VCache, `dim`
  // elements a row): one move per run of keys within a page, at the rows the block table gives.
  void add_paged(ref::AccessKind k, ref::TensorId t, int64_t b, int64_t hk, int64_t k0, int64_t n,
                 int64_t dim);
  // Entries [first, first + n) of sequence b's row of the block table (int32, contiguous).
  void add_table(int64_t b, int64_t first, int64_t n);
  // Whether the tile of query rows [q0, q0 + nq) and keys [k0, k0 + nk) of (b, query head h) is computed under
  // the block mask (tile_active); counts it as computed or skipped.
  bool tile(int64_t b, int64_t h, int64_t q0, int64_t nq, int64_t k0, int64_t nk);
};

// Adds the closed-form counts of one sequence for one query head: bytes and 32-byte sectors per tensor and
// direction (each row of a BSHD tile is contiguous and sector aligned), the work, and each CTA's matrix FLOPs
// in launch order when the analytic model asks for them.
struct SequenceCounter {
  KernelCounts& k;
  std::vector<double>* work = nullptr;
  // With a block mask the analytic model counts every (sequence, head) on its own: the head counted (a kv
  // head for per_kv_head models), and the mask.
  int64_t head = 0;
  const ProblemData* data = nullptr;
  // The widest row moved of each tensor, in bytes: its footprint's row (a kernel that reads MLA's V apart from
  // K touches only the first head_dim_v columns of K's rows); and the widest loaded or reduced (MLA's dK read
  // back for its first head_dim_v columns alone, then stored whole).
  std::array<int64_t, kNumTensors> row_bytes{}, read_row_bytes{};
  void load(ref::TensorId t, int64_t rows, int64_t cols, int eb) {
    add(&TensorTraffic::load, t, rows, cols, eb);
  }
  void store(ref::TensorId t, int64_t rows, int64_t cols, int eb) {
    add(&TensorTraffic::store, t, rows, cols, eb);
  }
  void reduce(ref::TensorId t, int64_t rows, int64_t cols, int eb) {
    add(&TensorTraffic::reduce, t, rows, cols, eb);
  }
  void add(DirectionBytes TensorTraffic::*dir, ref::TensorId t, int64_t rows, int64_t cols, int eb) {
    auto& d = k.tensors[static_cast<size_t>(t)].*dir;
    d.bytes += rows * cols * eb;
    d.sectors += rows * ((cols * eb + 31) / 32);  // sectors per row: ceil(row bytes / 32)
    if (rows <= 0) return;
    const auto i = static_cast<size_t>(t);
    row_bytes[i] = std::max(row_bytes[i], cols * eb);
    if (dir != &TensorTraffic::store) read_row_bytes[i] = std::max(read_row_bytes[i], cols * eb);
  }
  void cta_work(double mma_flops) {
    if (work) work->push_back(mma_flops);
  }
  // The closed form's tile test: tile_active, counted as computed or skipped.
  bool tile(const AttentionProblem& p, int64_t b, int64_t h, int64_t q0, int64_t nq, int64_t k0, int64_t nk) {
    const bool active = !data || tile_active(p, *data, b, h, q0, nq, k0, nk);
    ++(active ? k.tiles : k.skipped_tiles);
    return active;
  }
};

// Which of TileConfig's block sizes cut a launch into CTAs whose work differs under masks, varlen or partial
// tiles (the time model then deals those CTAs to the SMs one by one); None: every CTA does the same work.
enum class WorkBlocks { None, Forward, Backward };

struct CtaTime;  // cta_model.h
struct HardwareProfile;

// An ncu kernel name a model answers to: an ECMAScript regex searched in the demangled name, and the tile
// config its submatches (the kernel's template arguments) give.
struct NcuName {
  const char* pattern;  // a string literal (its address keys the compiled regex)
  TileConfig (*config)(const std::smatch& m, const std::string& name);
  // The pattern's groups that hold what the kernel was compiled for, which traffic compare checks the problem
  // flags against (0: the name does not say): the head dim, and FlashAttention-2's Is_causal and Is_local
  // template flags (an optional tail of the pattern: a group that did not match says nothing).
  int head_dim_group = 0, causal_group = 0, local_group = 0;
  // FlashAttention-2's kernels run a head dim on the smallest one compiled that holds it (32, 64, 96, 128, 160,
  // 192, 224, 256: a d80 problem runs the d96 kernel); flashsim's only on their own.
  bool pads_head_dim = false;
};

// A tile a kernel cannot run: the TileConfig field ("block_q") and why, in the command line's terms.
struct TileRuleBreak {
  std::string field;
  std::string message;
};

struct KernelModel {
  std::string name;  // "fwd_fa2": its id in predictions, traffic compare and the CLI
  std::optional<Algorithm>
      algorithm;  // whose pass runs it; none: predicted by name only (sim predict --kernel)
  Pass pass = Pass::Forward;
  std::string summary;  // one line: what the kernel computes
  std::vector<NcuName> ncu_names;
  WorkBlocks work_blocks = WorkBlocks::None;
  bool backward_mma_rate = false;  // time model: the profile's measured FA2 backward MMA rate, else forward's
  // The kernel honours a block-sparse mask: tiles whose mask tiles are all inactive move nothing and do no
  // work (or it never reads keys against queries: nothing to skip). sim predict refuses a block-mask problem
  // for a kernel without it.
  bool block_sparse = false;
  // Time model: a CTA streams DRAM at most at the rate its loads in flight allow (launch.inflight_bytes over the
  // profile's cta_dram_latency_s, at most sm_dram_bytes_per_s; without those, one SM's share of the bandwidth),
  // so a launch of few CTAs cannot reach the full bandwidth (the split-KV kernel; counts.cta_bytes gives the
  // CTAs' bytes).
  bool dram_cta_share = false;
  // The grid's z spans the kv heads (not the query heads): CTA (b, hk, block) moves the data of kv head hk's
  // whole group of query heads (counted once per kv head, and dK / dV footprints per kv head).
  bool per_kv_head = false;
  // The grid is not always (blocks, batch, heads) or (blocks, heads, batch): a flat list of rows or a persistent
  // grid of one CTA a SM. traffic compare does not read the problem (batch, heads, length, mask) from this
  // kernel's grid and bytes.
  bool grid_not_problem_shaped = false;
  // dQ's partial sums leave through the TMA unit (cp.reduce.async.bulk, or cp.async.bulk to slabs), not the
  // load/store unit: traffic compare leaves the DqAccum bytes out of the LSU's store and reduce metrics and
  // holds its reduces to the L2's reduce sectors (lts__t_sectors_srcunit_tex_op_red).
  bool dq_by_bulk_copy = false;
  // The pass clears a buffer with a memset right before this kernel (fa3-v1's dq_accum before dot_do_o): as
  // after an earlier kernel of an ncu report, the memset's dirty lines that ncu's replay leaves in L2 come out
  // as this kernel's DRAM writes (traffic compare allows them, calibration h100.ncu_replay_write_bytes).
  bool follows_memset = false;
  // Where traffic compare reads a profiled launch's split count (the template arguments do not carry it): the
  // report's grid y (gpu/decode's split kernels: grid (m blocks, splits, batch x kv heads)), or the split
  // kernel recognized before it in the report (the combine).
  enum class NcuSplits { None, GridY, PreviousKernel };
  NcuSplits ncu_splits = NcuSplits::None;
  // Each row's stores are instructions of their own (gpu/decode: a warp a row, its lse written by one lane):
  // the load/store unit moves every store as whole 32-byte sectors, so traffic compare holds its store bytes
  // (l1tex__t_bytes_pipe_lsu_mem_global_op_st) to the stores' sectors x 32 (a 4-byte lse: 32 bytes), not
  // their bytes. Measured on the H100: decode-v2's and its combine's stores exceed the bytes by exactly 28 a
  // row (calibration decode.lsu_stores_h100).
  bool lsu_store_sectors = false;
  // Rows of a 4-byte row statistic (lse, D) one warp's store instruction writes, contiguous (FlashAttention-2's
  // forward: the 8 lanes of an m16 tile's first column); nullptr: not modelled. The LSU moves each
  // instruction's sectors whole, so where a (batch, head) plane of the [batch, heads, seqlen] statistic does not
  // start on a 32-byte boundary (a length not a multiple of 8) a group straddles two sectors: traffic compare
  // adds those sectors' bytes (ncu: 1.026x the bytes at d64 and odd lengths without them, issue 31).
  int (*lsu_row_stat_rows)(const TileConfig& c) = nullptr;
  // Grid, threads, registers and shared-memory buffers (launch() sets the model).
  KernelLaunch (*launch)(const AttentionProblem& p, const TileConfig& c) = nullptr;
  // Under a block mask, which launch() does not see: each CTA's steps (KernelLaunch::ws) from the mask's active
  // tiles, for the measured time model (measured_steps.h); launch(m, p, c, data) calls it where the problem has
  // a block mask. nullptr: none listed (the per-CTA chain times such a launch).
  void (*list_block_mask_steps)(KernelLaunch& l, const AttentionProblem& p, const TileConfig& c,
                                const ProblemData& d) = nullptr;
  // The moves and work of CTA (b, h, block) of the grid (b < grid_y, h < grid_z, block < grid_x; h a kv head
  // when per_kv_head).
  void (*cta)(CtaBuilder& x, const TileConfig& c, int64_t b, int64_t h, int64_t block) = nullptr;
  // The closed form: sequence b's counts for one query head (per_kv_head: one kv head), without building its
  // CTAs. nullptr: the CTAs of (b, head 0) are built and counted (fine for kernels with one or a few CTAs per
  // sequence and head).
  void (*sequence)(SequenceCounter& x, const AttentionProblem& p, const TileConfig& c, int64_t b) = nullptr;
  // A closed form of the whole launch (instead of sequence): bytes and sectors, work, footprints, and the CTAs'
  // work and bytes in launch order (the decode kernels, whose grid is not (blocks, batch, heads)). k.launch is
  // set.
  void (*counts)(KernelCounts& k, const AttentionProblem& p, const TileConfig& c,
                 const ProblemData& d) = nullptr;
  // The kernel's own per-CTA time model (a warp-specialized kernel: producer and consumer warpgroups, wgmma
  // and TMA rates), in place of cta_model.h's; called as cta_time is (the launch's occupancy and load
  // imbalance). nullptr: cta_time.
  CtaTime (*time_model)(const KernelCounts& k, int ctas_per_sm, double imbalance,
                        const HardwareProfile& hw) = nullptr;
  // The tiles the kernel's warp partition can run: the first rule c breaks, with the TileConfig field (and its
  // flag) it names; nullptr or nullopt: any tile that TileConfig::validate passes.
  std::optional<TileRuleBreak> (*tile_rule)(const TileConfig& c) = nullptr;
};

// The first tile rule of the kernel that c breaks (KernelModel::tile_rule), with its message naming the kernel;
// check_tile throws it as InputError(field, message).
std::optional<TileRuleBreak> tile_misfit(const KernelModel& m, const TileConfig& c);
void check_tile(const KernelModel& m, const TileConfig& c);

// The registry: the built-in kernels, each algorithm's passes in launch order, then any registered later.
const std::vector<const KernelModel*>& kernel_models();
// The model of that name; throws InputError("kernel") listing the known names.
const KernelModel& kernel_model(std::string_view name);
// The kernels of an algorithm's pass in launch order; the backward of an algorithm without one is FA2's
// (has_backward).
std::vector<const KernelModel*> kernels_of(Algorithm a, Pass pass);
// The model a CPU reference step is reported as (ref::TrafficObserver::kernel_begin).
const KernelModel& kernel_model(const KernelStep& step);
// Adds a model (a user's own kernel, a test's toy) after the built-in ones; throws InputError("kernel") when
// its name is taken or it lacks a launch or a CTA function.
const KernelModel& register_kernel_model(KernelModel m);

// The kernel name a pattern answers to, for messages: its leading identifier ("flash_fwd_kernel").
std::string ncu_name_hint(const NcuName& n);

// A config parsed from ncu template arguments: throws InputError("ncu") naming the kernel when an argument has
// more than 9 digits or the config is impossible.
int64_t ncu_template_int(const std::ssub_match& s, const std::string& name);
TileConfig checked_ncu_config(const TileConfig& c, const std::string& name);

}  // namespace flashsim::sim
