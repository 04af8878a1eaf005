#pragma once
// The hook through which the tiled algorithms report every tile they move between global memory and their
// on-chip buffers. Nothing here counts: tiling_sim/ implements an observer that counts bytes and checks that
// the live tiles fit a bounded shared memory, so the algorithm that computes the numbers is the one counted.
// With an observer attached, an algorithm runs on one thread, CTA by CTA in launch order.
// Block-sparse masks (attention.h): a (query tile, key tile) pair the block mask hides entirely is skipped and
// reports nothing (no K, V, Q, dO, lse, D, bias or mask load, no O/m/l or dQ/dBias move of the pair). A tile
// loaded once for several pairs is loaded only when one of them is computed (as FlashAttention-2's early exit,
// with or without a block mask): Q of a forward query block (three-pass, two-pass, fa2), K and V of an fa1 key
// block and of an fa2 backward CTA. CTAs themselves are never skipped: their O, lse (forward) and dK, dV
// (backward) stores stay.
// MLA (problem.mla, V the first head_dim_v columns of K's rows): no V or dV tile is reported. A V read with the K
// tile of the same keys moves nothing more; one apart (standard attention's P V and dO V^T) is reported as K's
// tile of head_dim_v columns; V's gradient is written into (and read back from) dK's first head_dim_v columns.
#include <cstdint>
#include <string_view>

#include "flashsim/algorithm.h"

namespace flashsim::ref {

// Global tensors. Elements: inputs in the problem dtype; Lse, Delta (D = rowsum(dO o O)), DqAccum in fp32;
// Scores/Probs are the naive algorithm's materialized S and P (accumulator type).
enum class TensorId {
  Q,
  K,
  V,
  O,
  Lse,
  dO,
  Delta,
  dQ,
  dK,
  dV,
  DqAccum,
  Bias,
  Mask,
  dBias,
  Scores,
  Probs,
  RowMax,
  RowSum
};
std::string_view tensor_name(TensorId t);

enum class AccessKind { Load, Store, Reduce };

// A rectangular tile of a tensor for one (batch, head): rows [row0, row0 + rows) of the sequence dim (for
// bias/mask/scores: query rows) and columns [col0, col0 + cols) (head-dim elements; for bias/mask/scores:
// key positions). head is the tensor's own head index (a kv head for K and V).
struct TileAccess {
  AccessKind kind;
  TensorId tensor;
  int64_t batch, head;
  int64_t row0, rows;
  int64_t col0, cols;
};

class TrafficObserver {
 public:
  virtual ~TrafficObserver() = default;
  // A kernel launch: the step.index-th kernel of the algorithm's pass (the simulator's registry names it).
  virtual void kernel_begin(const KernelStep& step) = 0;
  virtual void kernel_end() = 0;
  // One CTA: (batch, head, block) of the launch grid.
  virtual void cta_begin(int64_t batch, int64_t head, int64_t block) = 0;
  virtual void cta_end() = 0;
  // A tile moved between global memory and the CTA's buffers. A load occupies `on_chip_bytes` of shared
  // memory until the matching release (0 for data kept in registers).
  virtual void access(const TileAccess& tile) = 0;
  // The tile buffer loaded by the last access to `tensor` is no longer needed.
  virtual void release(TensorId tensor) = 0;
};

}  // namespace flashsim::ref
