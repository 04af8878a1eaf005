#pragma once
// Tile schedules: per kernel launch, per CTA in launch order, the tile moves it makes between global memory
// and the CTA (load, store, atomic reduction). The FA2 schedules follow FlashAttention-2's kernels as
// profiled.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "flashsim/problem.h"
#include "flashsim/ref/traffic.h"
#include "flashsim/tile_config.h"

namespace flashsim::sim {

struct Move {
  ref::AccessKind kind;
  ref::TensorId tensor;
  int64_t batch, head;  // the tensor's own head index
  int64_t row0, rows;   // sequence rows (of the tensor's own, possibly padded, layout)
  int64_t cols;         // elements per row
  int elem_bytes;
};

struct CtaWork {
  int64_t batch = 0, head = 0, block = 0;
  std::vector<Move> moves;
  double mma_flops = 0, exp_ops = 0, vector_ops = 0;
};

struct SmemBuffer {
  std::string name;
  int64_t bytes;
};

// Which kernel of an algorithm; selects the analytic formula.
enum class KernelKind {
  Fa2Forward,
  Fa2DotDoO,
  Fa2DqDkDv,
  Fa2ConvertDq,
  ThreePassForward,
  TwoPassForward,
  Fa1Forward,    // key blocks outer, one CTA per (batch, head): O, m, l re-read and re-written per key block
  NaiveScores,   // S = scale * Q K^T materialized (fp32), one CTA per (batch, head)
  NaiveSoftmax,  // P = softmax(S) materialized, lse
  NaivePv,       // O = P V
  // Standard attention's backward, every matrix materialized (dP and dS reuse S's buffer, "scores"):
  NaiveBwdScores,   // S = scale * Q K^T again
  NaiveBwdSoftmax,  // P = softmax(S)
  NaiveBwdDp,       // dP = dO V^T
  NaiveBwdDs,       // dS = P o (dP - rowsum(dO o O))
  NaiveBwdDv,       // dV = P^T dO
  NaiveBwdDq,       // dQ = scale dS K
  NaiveBwdDk,       // dK = scale dS^T Q
};
// Passes over the key blocks a forward kernel makes (K is loaded in each, V in the last): 1, 3 or 2.
int key_passes(KernelKind k);
std::string_view kernel_kind_name(
    KernelKind k);  // "fwd_fa2", "bwd_dot_do_o", "bwd_dq_dk_dv", "bwd_convert_dq"

// Launch shape of a kernel (no moves).
struct KernelLaunch {
  KernelKind kind;
  int64_t grid_x = 1, grid_y = 1, grid_z = 1;
  int threads = 128;
  int regs_per_thread = 0;        // 0: not modeled (occupancy from shared memory and threads only)
  int64_t accumulator_elems = 0;  // fp32 elements a CTA accumulates in registers (0: not modeled)
  std::vector<SmemBuffer> smem;
  int64_t ctas() const { return grid_x * grid_y * grid_z; }
  int64_t smem_bytes() const;
};

struct KernelSchedule {
  KernelLaunch launch;
  std::vector<CtaWork> ctas;  // launch order: grid_x fastest
};

// Launch shapes, as FlashAttention-2 chooses them for (problem, config).
KernelLaunch fa2_launch(KernelKind kind, const AttentionProblem& p, const TileConfig& c);
std::vector<KernelKind> fa2_forward_kernels();
std::vector<KernelKind> fa2_backward_kernels();
std::vector<KernelKind> naive_forward_kernels();
std::vector<KernelKind> naive_backward_kernels();

// The full schedule of one kernel.
KernelSchedule fa2_schedule(KernelKind kind, const AttentionProblem& p, const TileConfig& c);

// Query rows the FA2 dQ accumulator reserves per sequence (seqlen rounded up to a multiple of 128).
inline int64_t fa2_padded_rows(int64_t len) {
  return (len + 127) / 128 * 128;
}

// The partials dQ strategy: key block n's fp32 partial of query row q lives at this row of the DqAccum
// tensor (one padded sequence per key block).
inline int64_t dq_partial_row(const AttentionProblem& p, int64_t b, int64_t n, int64_t q) {
  return n * fa2_padded_rows(p.len_q(b)) + q;
}

// Visible block ranges under causal / sliding windows (bottom-right aligned): [first, last) block indices.
std::pair<int64_t, int64_t> visible_key_blocks(const AttentionProblem& p, int64_t b, int64_t q0, int64_t q1,
                                               int64_t block_k);
std::pair<int64_t, int64_t> visible_query_blocks(const AttentionProblem& p, int64_t b, int64_t k0, int64_t k1,
                                                 int64_t block_q);

}  // namespace flashsim::sim
