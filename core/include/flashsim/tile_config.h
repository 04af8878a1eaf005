#pragma once
// TileConfig: one tiling of attention. The same value drives the CPU tiled algorithms (reference/), the
// memory-hierarchy simulator (tiling_sim/) and the CUDA kernels (gpu/), so a prediction is always for exactly
// the configuration that ran.
#include <cstdint>
#include <string>
#include <string_view>

#include "flashsim/algorithm.h"

namespace flashsim {

// Backward dQ: fp32 atomics into an accumulator plus a convert kernel (FlashAttention-2), or deterministic
// per-key-split partials plus a reduction kernel.
enum class DqStrategy { Atomic, Partials };

struct TileConfig {
  int64_t block_q = 128;          // Br: query rows per tile
  int64_t block_k = 64;           // Bc: key rows per tile
  int warps = 4;                  // warps per CTA
  int stages = 1;                 // pipeline stages of the K/V tile buffers (1: no prefetch)
  bool q_in_registers = false;    // Q tile kept in registers (no shared-memory buffer) after its load
  bool kv_shared_buffer = false;  // K and V tiles share one shared-memory buffer
  DqStrategy dq_strategy = DqStrategy::Atomic;
  // Backward tile sizes (FlashAttention-2 uses its own, usually smaller, tiles for the backward).
  int64_t bwd_block_q = 64;
  int64_t bwd_block_k = 128;
  // Split-KV (Flash-Decoding): each row's key blocks split into num_splits runs whose partial O and LSE a
  // combine kernel merges (1: no split).
  int64_t num_splits = 1;

  // Throws InputError naming the field when a size is < 1 or absurd.
  void validate() const;
  // "Br128 Bc64 w4 st1 bwd Br64 Bc128 dq:atomic"; with an algorithm, its name after the forward knobs
  // ("... st1 fa2 bwd ..."): the tiles as that algorithm's kernels run them.
  std::string describe() const;
  std::string describe(Algorithm a) const;
  std::string splits_text() const;  // " splits4", or "" without a split
};

// The FlashAttention-2 backward's fp32 dQ accumulator reserves each sequence's query rows rounded up to a
// multiple of 128 (the largest backward Br it launches with), whatever the tile: kernels that clear, reduce
// into or convert it touch these rows.
inline int64_t dq_accum_padded_rows(int64_t len) {
  return (len + 127) / 128 * 128;
}

std::string_view dq_strategy_name(DqStrategy d);
DqStrategy parse_dq_strategy(std::string_view s);

}  // namespace flashsim
