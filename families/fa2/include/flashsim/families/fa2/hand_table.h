#pragma once
// fa2-v1's launch table before the generated one (launch_table.h): per head dim and score path, the
// fastest measured tile without register spills at d <= 128. gpu/ launches it where the generated table has no
// entry and `flashsim-gpu autotune` marks it `hand`; `flashsim sim tune` keeps it in the generated table unless
// the model predicts another config clearly faster (tune.h, kTuneResolution).
#include <cstdint>

#include "flashsim/tile_config.h"

namespace flashsim {

// pipeline: the score-pipeline kernels (bias, mask, softcap or ALiBi).
inline TileConfig fa2_hand_launch_tile(int64_t head_dim, bool pipeline) {
  TileConfig c;  // Br128 Bc64 w4 stages 1; backward Br64 Bc128 with 8 warps
  switch (head_dim) {
    case 64:
      c.stages = 2;  // K/V of the next block prefetched: faster than one buffer (calibration fa2.hand_table)
      break;
    case 96:
      if (!pipeline)
        break;  // Bc64 st1: plain kernel spill-free, faster than Bc32 (calibration fa2.hand_table)
      [[fallthrough]];
    case 128:
      // Bc32 with K/V prefetch: 2 x (d / 8 + 4) x 4 accumulators (128 at d96, 160 at d128) leave ptxas room
      // for the fragments; Bc64 (160 / 192) spills in the key loop of the plain d128 kernel (~60 bytes
      // reloaded every key block) and of the d96 / d128 score-pipeline kernels. Bc32 costs the d128 plain
      // forward (calibration fa2.hand_table: twice the rescales and barriers per key).
      c.block_k = 32;
      c.stages = 2;
      break;
    case 256:
      c.block_q = 64;      // 16 query rows a warp: 128 O + 32 S accumulators (Br128 would need 320)
      c.bwd_block_k = 64;  // the backward's d256 tile: two warps per key tile split the head dim
      break;
    default:
      break;
  }
  // The backward's d128 score-pipeline kernel at Bc128 spills 72 bytes in its query loop (bias / mask
  // indexing on top of 192 accumulators); at Bc64 two warps share a key tile's head dim (128 accumulators),
  // spill-free but with 1.4x the tensor-core work: slower on the plain d128 problem (calibration
  // fa2.hand_table), the price of the launch table's no-spill rule (--bwd-block-k 128 runs the spilling,
  // faster kernel).
  if (head_dim == 128 && pipeline) c.bwd_block_k = 64;
  return c;
}

}  // namespace flashsim
