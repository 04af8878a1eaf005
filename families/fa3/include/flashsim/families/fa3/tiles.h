#pragma once
// fa3-v1's instances as flashsim's tile configs (the harness, autotune and `sim tune` name tiles so): not in
// instances.h, which the CUDA translation units include without flashsim's core headers.
#include "flashsim/families/fa3/instances.h"
#include "flashsim/tile_config.h"

namespace flashsim {

// A forward instance as a tile: Br, Bc, its 12 warps (a producer and two consumer warpgroups), stages; and the
// backward's tile of the head dim (of a softcapped problem: fa3_bwd_instance) where it has one.
inline TileConfig fa3_instance_tile(const Fa3FwdInstance& e, bool softcap = false) {
  TileConfig c;
  c.block_q = e.block_q;
  c.block_k = e.block_k;
  c.warps = kFa3Threads / 32;
  c.stages = e.stages;
  if (const Fa3BwdInstance* b = fa3_bwd_instance(e.head_dim, softcap)) {
    c.bwd_block_q = b->block_q;
    c.bwd_block_k = b->block_k;
  }
  return c;
}

}  // namespace flashsim
