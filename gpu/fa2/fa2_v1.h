#pragma once
// fa2-v1: FlashAttention-2's forward (fa2_fwd_v1.cu) and backward (fa2_bwd_v1.cu) as one kernel version
// (fa2_v1.cpp registers it). Host-side entry points of the two launch files.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "flashsim/gpu/kernel.h"
#include "flashsim/gpu/params.h"

namespace flashsim::gpu::fa2 {

// make_params(p) with the window sides that hide no key (>= Sq + Sk) made -1, as naive-v1 does: the window
// arithmetic then stays far from int overflow.
AttentionParams params_of(const AttentionProblem& p);

// Throws InputError("fa2-v1", "missing device buffer: what") unless ok.
void require(bool ok, const char* what);
// Throws InputError("fa2-v1") unless ptr is 16-byte aligned (16-byte cp.async loads and stores).
void require_aligned(const void* ptr, const char* what);
// The inputs every fa2-v1 launch reads: q, k, v (16-byte aligned) and the buffers of the problem's features.
void require_inputs(const AttentionProblem& p, const DeviceArgs& args);

// Whether the kernels run the full per-element score pipeline (softcap, bias, mask, ALiBi, or scale <= 0): the
// plain path takes the row max of unscaled scores and applies the scale in the exponent (scale > 0 only).
inline bool uses_score_pipeline(const AttentionParams& a) {
  return a.softcap > 0.f || a.has_bias || a.has_mask || a.alibi || !(a.scale > 0.f);
}

// fa2-v1's launch table (KernelVersion::launch_tile): the tile `flashsim sim tune` ranks first for the
// problem's head dim, dtype, causal and score-pipeline flags at the nearest seqlen (fa2's launch_table.h,
// generated), per pass; the hand-kept table for what it does not cover.
TileConfig launch_tile(const AttentionProblem& p, Pass pass);
// The launch table before the generated one (per head dim and score path, the fastest measured tile without
// register spills at d <= 128): what `flashsim-gpu autotune` compares the generated table with.
TileConfig hand_launch_tile(const AttentionProblem& p);
// The tiles fa2-v1 is built for (instances.h) of a head dim and pass: what autotune times
// (KernelVersion::tune_tiles).
std::vector<TileConfig> tune_tiles(int64_t head_dim, Pass pass);

// The problem and the inputs every fa2-v1 kernel reads, into its parameters (Fa2FwdParams, Fa2BwdParams): sizes,
// q, k, v, the features' pointers (nullptr where off), the row strides, and which score path runs.
template <class Params>
void set_problem(Params& prm, const AttentionProblem& p, const DeviceArgs& args) {
  prm.a = params_of(p);
  prm.q = args.q;
  prm.k = args.k;
  prm.v = args.v;
  prm.bias = prm.a.has_bias ? args.bias : nullptr;
  prm.mask = prm.a.has_mask ? args.mask : nullptr;
  prm.slopes = prm.a.alibi ? args.alibi_slopes : nullptr;
  prm.block_mask = prm.a.has_block_mask ? args.block_mask : nullptr;
  prm.tile_counts = prm.a.has_block_mask ? args.tile_counts : nullptr;
  prm.cu_q = p.varlen() ? args.cu_seqlens_q : nullptr;
  prm.cu_k = p.varlen() ? args.cu_seqlens_k : nullptr;
  prm.pipeline = uses_score_pipeline(prm.a);
  prm.q_stride = static_cast<int64_t>(prm.a.heads_q) * prm.a.head_dim;
  prm.kv_stride = static_cast<int64_t>(prm.a.heads_kv) * prm.a.head_dim;
}

// Why neither pass can run this problem, whatever the tile ("" when both can at some tile): dtype, head dims,
// heads, grid limits.
std::string problem_unsupported(const AttentionProblem& p);
// Why the forward / backward cannot run this case ("" when it can): problem_unsupported, then the tile (an
// instance of fa2's instances.h whose shared memory this device allows). The backward's tile is
// (bwd_block_q, bwd_block_k, warps), whatever the forward's fields.
std::string forward_unsupported(const AttentionProblem& p, const TileConfig& c);
std::string backward_unsupported(const AttentionProblem& p, const TileConfig& c);
// Bytes of the backward's workspace (lse shift, D, the fp32 dQ accumulator or partials, dS for a broadcast bias).
size_t backward_workspace_bytes(const AttentionProblem& p, const TileConfig& c);

void forward(const AttentionProblem& p, const TileConfig& c, const DeviceArgs& args);
// The same kernels launched with the (batch, head) index fastest (fa2-v1-heads-first, a planted traffic bug).
void forward_heads_first(const AttentionProblem& p, const TileConfig& c, const DeviceArgs& args);
void backward(const AttentionProblem& p, const TileConfig& c, const DeviceArgs& args);

}  // namespace flashsim::gpu::fa2
