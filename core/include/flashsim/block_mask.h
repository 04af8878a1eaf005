#pragma once
// Block-sparse attention masks: which (query block, key block) tiles a kernel computes.
//   block_mask : [batch | 1, heads_q | 1, ceil(seqlen_q / block_q), ceil(seqlen_k / block_k)], one byte a tile
//                (!= 0: the tile is computed), combined with causal / window masks by AND.
// Patterns from a short spec (parse_block_mask_spec):
//   s2:local=L,stride=S          S2-Attention's (DKernel's) per-head local-stride pattern: causal at block level,
//                                the L most recent key blocks, and every key block kb with
//                                (kb + h * max(1, S / heads) + 1) % S == 0 (the stride shifted per head)
//   s2-homo:local=L,stride=S     the same stride offset for every head
//   local-sink:local=L,sink=G    the L most recent key blocks (causal at block level) and the first G
//   random:keep=P                each tile kept with probability P (seeded)
// Query block qb sits at row qb + (key blocks - query blocks) of the square block grid (bottom-right aligned, as
// DKernel takes the last query blocks when seqlen_q < seqlen_k).
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace flashsim {

struct BlockMaskSpec {
  enum class Kind { S2, S2Homo, LocalSink, Random };
  Kind kind = Kind::S2;
  int64_t local = 0;         // recent key blocks (s2, s2-homo, local-sink)
  int64_t stride = 1;        // vertical stride (s2, s2-homo)
  int64_t sink = 0;          // first key blocks (local-sink)
  double keep = 1.0;         // random
  std::string text() const;  // the spec, normalized
};

// Throws InputError("block_mask") naming what is wrong (unknown pattern, missing or bad parameter).
BlockMaskSpec parse_block_mask_spec(std::string_view spec);

// The mask [heads, q_blocks, k_blocks] of a spec (random: from `seed`; the same for any thread count).
std::vector<uint8_t> make_block_mask(const BlockMaskSpec& spec, int64_t heads, int64_t q_blocks,
                                     int64_t k_blocks, uint64_t seed = 0);

// Whether query row i, key j of (batch b, head h) lies in an active tile of `block_mask` of shape
// [bm_batch (1 or batch), bm_heads (1 or heads), q_blocks, k_blocks].
inline bool block_active(const std::vector<uint8_t>& block_mask, int64_t bm_batch, int64_t bm_heads,
                         int64_t q_blocks, int64_t k_blocks, int64_t block_q, int64_t block_k, int64_t b,
                         int64_t h, int64_t i, int64_t j) {
  const int64_t bb = bm_batch == 1 ? 0 : b, hh = bm_heads == 1 ? 0 : h;
  return block_mask[((bb * bm_heads + hh) * q_blocks + i / block_q) * k_blocks + j / block_k] != 0;
}

}  // namespace flashsim
