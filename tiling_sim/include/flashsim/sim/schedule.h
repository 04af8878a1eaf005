#pragma once
// Tile schedules: per kernel launch, per CTA in launch order, the tile moves it makes between global memory
// and the CTA (load, store, atomic reduction). Each kernel's own moves live in its model
// (tiling_sim/src/kernels/, kernel_model.h); this header holds what every schedule is made of.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "flashsim/problem.h"
#include "flashsim/ref/traffic.h"
#include "flashsim/sim/problem_data.h"
#include "flashsim/tile_config.h"

namespace flashsim::sim {

struct KernelModel;

struct Move {
  ref::AccessKind kind;
  ref::TensorId tensor;
  int64_t batch, head;  // the tensor's own head index
  int64_t row0, rows;   // sequence rows (of the tensor's own, possibly padded, layout)
  int64_t cols;         // elements per row
  int elem_bytes;
  // -1: the row convention of BSHD tiles (each row contiguous and sector aligned: ceil(row bytes / 32) sectors
  // a row). Otherwise the element address of the first row in its tensor and the elements from one row's
  // start to the next: the sectors are those the rows' bytes touch there (the paged cache, the block table).
  int64_t addr0 = -1, pitch = 0;
  // With the row convention: the tensor's elements a row when the move touches only the first `cols` of each
  // (MLA's V, the first head_dim_v columns of K's rows; its gradient, of dK's); 0: cols, whole rows.
  int64_t row_elems = 0;
  // Rows a TMA box carries past its tensor's end: zeros that cross to the SM (L2 -> SM bytes, ncu's
  // l1tex__m_xbar2l1tex_read_bytes) but that no memory backs (no L2 line, no footprint, no DRAM).
  bool zero_fill = false;
};

struct CtaWork {
  int64_t batch = 0, head = 0, block = 0;
  std::vector<Move> moves;
  double mma_flops = 0, exp_ops = 0, vector_ops = 0;
  int64_t tiles = 0, skipped_tiles = 0;  // block-sparse models: tiles computed, tiles skipped by the mask
};

struct SmemBuffer {
  std::string name;
  int64_t bytes;
};

// One main-loop iteration of a CTA (a key block of the forward, a query block of the backward) of a kernel
// whose time the per-CTA model times (cta_model.h). warps == 0: not modelled (the roofline alone times it).
struct CtaStep {
  int warps = 0;               // warps the CTA launches
  double algorithm_flops = 0;  // the step's share of the algorithm's matrix FLOPs (KernelCounts::mma_flops)
  double mma_flops = 0;        // tensor-core FLOPs the CTA issues a step (recomputed products included)
  double smem_bytes = 0;  // shared-memory traffic a step: ldmatrix reads by every warp (backward: and fills)
  double load_bytes = 0;  // global -> shared bytes a step waits for (the next K/V or Q/dO tile)
  double direct_bytes = 0;       // bias / mask bytes the warps load straight into registers a step
  int syncs = 0;                 // CTA barriers a step
  double hide_steps = 0;         // how much of a step's work runs between a tile's load and its first use
  double accumulator_regs = 0;   // fp32 accumulator registers a thread keeps across the loop
  double warp_instructions = 0;  // instructions a warp issues a step (0: not modelled)
  int regs = 0;                  // registers per thread (cta_model.h's estimate)
};

// A warp-specialized kernel's work as its own time model sees it (KernelModel::time_model; fa3_forward.cpp): the
// tile its consumer warpgroups multiply, and over the whole launch its work tiles (a persistent CTA walks
// several), their main-loop steps (key blocks) and the steps that mask scores element by element. tiles 0: none.
struct WarpSpecializedWork {
  int64_t block_q = 0, block_k = 0, head_dim = 0, head_dim_v = 0, stages = 0;
  int consumers = 0;        // consumer warpgroups (64 query rows each)
  bool persistent = false;  // CTAs walk tiles gridDim apart (grid < tiles)
  bool softcap = false;     // the score pipeline's tanh (one more MUFU a score)
  bool mla = false;         // MLA: V is the K tile's first head_dim_v columns (a step loads K alone)
  double tiles = 0, steps = 0, masked_steps = 0;
  // Each CTA's tiles, steps and masked steps in launch order (the closed form fills them, up to
  // kMaxListedCtas CTAs; empty: the totals above alone): one period of the order, which the launch runs
  // cta_repeat times over (a grid whose sequences and heads repeat one pattern lists it once: a sweep builds
  // these for every config).
  std::vector<double> cta_tiles, cta_steps, cta_masked;
  int64_t cta_repeat = 1;
  static constexpr int64_t kMaxListedCtas = int64_t{1} << 22;  // 4M CTAs: 96 MiB of lists at most
  // One of the lists over the whole launch order.
  std::vector<double> whole(const std::vector<double>& list) const {
    std::vector<double> out;
    for (int64_t r = 0; r < cta_repeat; ++r) out.insert(out.end(), list.begin(), list.end());
    return out;
  }
};

// Launch shape of a kernel (no moves).
struct KernelLaunch {
  const KernelModel* model = nullptr;  // the kernel launched (its name; which MMA rate the time model uses)
  int64_t grid_x = 1, grid_y = 1, grid_z = 1;
  // The kernel itself launches (grid_x, grid_z, grid_y): heads along y and the batch along z, where the CTA
  // builder's grid has the batch along y (fa3-v1's backward); ncu's grid is checked against that.
  bool heads_then_batch = false;
  int threads = 128;
  int regs_per_thread = 0;        // 0: not modeled (occupancy from shared memory and threads only)
  int64_t accumulator_elems = 0;  // fp32 elements a CTA accumulates in registers (0: not modeled)
  int64_t inflight_bytes = 0;     // bytes of loads a CTA keeps in flight (dram_cta_share models)
  // A streaming main loop's step (the split-KV kernel's key tile): the bytes a step loads and the tile a measured
  // per-step time is keyed by (HardwareProfile::measured_steps); a CTA then streams at most step_bytes a
  // measured step. step_bytes 0: none.
  int64_t step_bytes = 0, step_head_dim = 0, step_block_q = 0, step_block_k = 0, step_stages = 0;
  int64_t step_page_size = 0;  // rows a page of the paged cache the steps read (0: contiguous)
  CtaStep step;                // the per-CTA time model's view of the main loop (warps 0: none)
  WarpSpecializedWork ws;      // warp-specialized kernels' tiles and steps (tiles 0: none)
  std::vector<SmemBuffer> smem;
  int64_t ctas() const { return grid_x * grid_y * grid_z; }
  int64_t smem_bytes() const;
  const std::string& name() const;
};

// Calls f(b, h, x) for each CTA of the launch's grid in launch order: x fastest, then the batch (y), then the
// heads (z); the heads before the batch where the launch says so (KernelLaunch::heads_then_batch).
template <class F>
void for_each_cta(const KernelLaunch& l, F&& f) {
  const bool heads_first = l.heads_then_batch;
  const int64_t outer = heads_first ? l.grid_y : l.grid_z, inner = heads_first ? l.grid_z : l.grid_y;
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i)
      for (int64_t x = 0; x < l.grid_x; ++x) f(heads_first ? o : i, heads_first ? i : o, x);
}

struct KernelSchedule {
  KernelLaunch launch;
  std::vector<CtaWork> ctas;  // launch order: grid_x fastest, then grid_y (batch), then grid_z (head)
};

// The launch of a kernel for (problem, config), as the kernel chooses it; with the problem's data, a block-mask
// launch's CTA steps listed (KernelModel::list_block_mask_steps).
KernelLaunch launch(const KernelModel& m, const AttentionProblem& p, const TileConfig& c,
                    const ProblemData* data = nullptr);
// The full schedule of one kernel: every CTA's moves, in launch order. `data`: the block table and block mask
// (nullptr: those of seed 0, built when the problem has them).
KernelSchedule schedule(const KernelModel& m, const AttentionProblem& p, const TileConfig& c,
                        const ProblemData* data = nullptr);
// data, or, when null, `storage` filled with problem_data(p, 0) when the problem needs one (checked).
const ProblemData& resolve_data(const AttentionProblem& p, const ProblemData* data, ProblemData& storage);

// The partials dQ strategy: key block n's fp32 partial of query row q lives at this row of the DqAccum
// tensor (one padded sequence per key block).
inline int64_t dq_partial_row(const AttentionProblem& p, int64_t b, int64_t n, int64_t q) {
  return n * dq_accum_padded_rows(p.len_q(b)) + q;
}

// Visible block ranges under causal / sliding windows (bottom-right aligned): [first, last) block indices.
std::pair<int64_t, int64_t> visible_key_blocks(const AttentionProblem& p, int64_t b, int64_t q0, int64_t q1,
                                               int64_t block_k);
std::pair<int64_t, int64_t> visible_query_blocks(const AttentionProblem& p, int64_t b, int64_t k0, int64_t k1,
                                                 int64_t block_q);

// fa3-v1's forward: the balanced walk (flashsim/families/fa3/walk.h) of its Br x Bc tiles in the order of
// `head_group` over `grid` persistent CTAs, each tile costing its visible key blocks plus the fill and epilogue
// (fa3_tile_overhead_blocks); the launch (gpu/fa3/fa3_v1.cpp) hands it to the kernel, the fwd_fa3 model
// walks it.
std::vector<int32_t> fa3_forward_walk(const AttentionProblem& p, int64_t block_q, int64_t block_k,
                                      int64_t head_group, int64_t grid);

}  // namespace flashsim::sim
