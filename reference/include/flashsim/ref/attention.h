#pragma once
// Exact attention forward and backward on the CPU. Every algorithm computes the same function (the score
// pipeline in docs/design.md: scale, softcap, bias + ALiBi, window, block and boolean masks, softmax (with
// attention sinks), dropout by the given keep mask, P*V) and
// differs only in how it gets there.
#include <cstdint>
#include <string_view>
#include <vector>

#include "flashsim/algorithm.h"
#include "flashsim/inputs.h"
#include "flashsim/problem.h"
#include "flashsim/ref/options.h"
#include "flashsim/tile_config.h"

namespace flashsim::ref {

// Block-sparse masks (problem.block_mask): every algorithm hides the keys of inactive mask tiles (ANDed with
// the window and the boolean mask). The tiled algorithms also skip a (query tile, key tile) pair of their own
// tiles (Br x Bc, which need not match the mask's tile) when every mask tile it overlaps is inactive for that
// (batch, head): no GEMM, no work and no tile moves reported to the observer (traffic.h), and the same result.
// tiles_skipped / tiles_computed count the (query tile, key tile, q head) pairs the tiled loop visited (those
// the window leaves: the key blocks of each query block's window range, or the query blocks of each key
// block's) and skipped or computed; skipped + computed is the same with or without a block mask, and skipped
// is 0 without one. Each pair counts once however many passes visit it (three-pass, two-pass); split-KV counts
// each pair in its one split. fa2, two-pass, three-pass and split-KV count forward tiles (block_q x block_k),
// fa1 its own loop's (the same pairs), the fa2 backward its (bwd_block_q x bwd_block_k) tiles; the naive
// algorithms tile nothing and leave both 0.
struct ForwardResult {
  std::vector<double> o;       // problem.o_shape()
  std::vector<double> lse;     // natural-log sum-exp of each row's scores (and its sink); -inf for a row with
                               // no visible key (its sink's logit with sinks)
  int64_t tiles_skipped = 0;   // pairs skipped by the block mask (above)
  int64_t tiles_computed = 0;  // pairs computed
};

struct Gradients {
  // MLA (problem.mla): dk is the gradient of the one latent K tensor, dV added into its first head_dim_v
  // columns (V is a view of K), and dv is empty.
  std::vector<double> dq, dk, dv;
  std::vector<double> dbias;   // problem.bias shape (reduced over broadcast dims), empty without a bias
  std::vector<double> dsinks;  // [heads_q]: d loss / d sink_h (problem.sinks), empty without sinks
  int64_t tiles_skipped = 0;   // the backward's pairs skipped by the block mask (above)
  int64_t tiles_computed = 0;  // and computed
};

// Forward by any algorithm. `tile` is used by the tiled and streaming algorithms (block_q, block_k); the naive
// one ignores it.
ForwardResult forward(const AttentionProblem& p, const AttentionInputs& in, Algorithm algo,
                      const TileConfig& tile = {}, const RunOptions& opt = {});

// Flash-Decoding's split-KV forward: the key blocks (tile.block_k) of each sequence are split into num_splits
// runs of ceil(blocks / num_splits) blocks (flash-attention's num_n_blocks_per_split; trailing splits may be
// empty); each split runs FA2's forward over its keys and keeps a normalized partial o_s and lse_s (-inf, o_s = 0
// where the split sees no key), in the accumulator type (fp32 when emulated), and the combine gives
//   lse = log sum_s exp(lse_s),  o = sum_s exp(lse_s - lse) o_s
// (shifted by the largest lse_s; an attention sink enters the combine once, as one more partial with lse_s =
// sink and o_s = 0, never in a split's partial). Equal to the other algorithms to rounding for every split count.
struct SplitKvResult {
  ForwardResult combined;
  std::vector<double> partial_o;    // [num_splits][o layout]
  std::vector<double> partial_lse;  // [num_splits][lse layout]
};
SplitKvResult forward_split_kv(const AttentionProblem& p, const AttentionInputs& in, int num_splits,
                               const TileConfig& tile = {}, const RunOptions& opt = {});

// Backward from the forward's o and lse (computed by any algorithm at the same precision) and in.dout, by an
// algorithm with a backward of its own (naive: P materialized, dP = dO*V^T, dS = P o (dP - rowsum(dO o O));
// fa2: key blocks outer, P recomputed per tile from lse, dQ accumulated across key blocks). Throws InputError
// for the others (has_backward).
Gradients backward(const AttentionProblem& p, const AttentionInputs& in, const ForwardResult& fwd,
                   Algorithm algo, const TileConfig& tile = {}, const RunOptions& opt = {});

}  // namespace flashsim::ref
