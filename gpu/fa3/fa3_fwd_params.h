#pragma once
// What fa3-v1's forward kernel takes, as plain numbers and pointers (no flashsim header: the kernel headers
// also build in bench/gpu's standalone driver). Layouts are the goldens' (flashsim/gpu/params.h): q, o
// [total_q, heads_q, d], k, v [total_k, heads_kv, d] with d contiguous; lse [batch, heads_q, seqlen_q], or
// [heads_q, total_q] with variable lengths.
#include <cstdint>

namespace flashsim::gpu::fa3 {

struct Fa3FwdParams {
  const void *q = nullptr, *k = nullptr, *v = nullptr;
  void* o = nullptr;
  float* lse = nullptr;
  const int32_t *cu_seqlens_q = nullptr, *cu_seqlens_k = nullptr;  // batch + 1 each, with varlen
  int batch = 1, heads_q = 1, heads_kv = 1, group = 1;             // group = heads_q / heads_kv
  int seqlen_q = 0, seqlen_k = 0;  // per sequence; with varlen the longest (the grid's extent)
  int64_t total_q = 0, total_k = 0;
  int head_dim = 0;
  bool varlen = false;
  float scale = 1.f;                        // s = scale * q.k (> 0)
  float softcap = 0.f;                      // > 0: s = softcap * tanh(scale * q.k / softcap)
  int window_left = -1, window_right = -1;  // bottom-right aligned, -1 unbounded; causal = (-1, 0)
  // Schedule: persistent (one CTA a SM walking the tiles) or one CTA a tile; ping-pong between the consumer
  // warpgroups or not. The launch table (flashsim/families/fa3) sets both; the dev driver times the others.
  bool persistent = false;
  bool pingpong = true;
  // Tile order: 0 walks each (batch, head)'s query blocks from the last; G > 0 takes (batch, head)s G at a time
  // and, within the G, the query blocks from the last with the heads fastest (heavy causal tiles of G heads
  // first, whose K and V stay in L2 together).
  int head_group = 0;
  // The persistent grid's balanced walk (flashsim/families/fa3/walk.h: grid + 1 offsets into the array, then the
  // tiles; CTA i runs walk[walk[i]] .. walk[walk[i + 1] - 1]); nullptr: the static walk (CTA i runs tiles i,
  // i + gridDim.x, ...).
  const int32_t* walk = nullptr;
  int walk_ctas = 0;  // the CTAs the walk deals to: the launch's grid with a walk
  // The instance (flashsim/families/fa3/instances.h) of head_dim with this Bc and stage count; 0, 0: the head
  // dim's hand-kept one. Br is 128 in every instance.
  int block_k = 0, stages = 0;
};

}  // namespace flashsim::gpu::fa3
