#pragma once
// TileConfig: one tiling of attention. The same value drives the CPU tiled algorithms (reference/), the
// memory-hierarchy simulator (tiling_sim/) and the CUDA kernels (gpu/), so a prediction is always for exactly
// the configuration that ran.
#include <cstdint>
#include <string>
#include <string_view>

namespace flashsim {

// Forward loop order: FA2 keeps a query block resident and streams key blocks (O written once);
// FA1 streams query blocks inside each key block (O and its statistics re-read and re-written).
enum class LoopOrder { QueryOuter, KeyOuter };
// Launch order of the forward grid's CTAs: which index varies fastest.
//   QueryBlockFastest: (q block, head, batch) as FlashAttention-2's grid (m_block, b, h) with m fastest.
//   HeadFastest: all heads of one query block launch together.
enum class Raster { QueryBlockFastest, HeadFastest };
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
  LoopOrder loop_order = LoopOrder::QueryOuter;
  Raster raster = Raster::QueryBlockFastest;
  DqStrategy dq_strategy = DqStrategy::Atomic;
  // Backward tile sizes (FlashAttention-2 uses its own, usually smaller, tiles for the backward).
  int64_t bwd_block_q = 64;
  int64_t bwd_block_k = 128;

  // Throws InputError naming the field when a size is < 1 or absurd.
  void validate() const;
  std::string describe() const;
};

std::string_view loop_order_name(LoopOrder o);  // "fa2" (query outer), "fa1" (key outer)
LoopOrder parse_loop_order(std::string_view s);
std::string_view raster_name(Raster r);
Raster parse_raster(std::string_view s);
std::string_view dq_strategy_name(DqStrategy d);
DqStrategy parse_dq_strategy(std::string_view s);

}  // namespace flashsim
