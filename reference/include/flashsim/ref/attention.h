#pragma once
// Exact attention forward and backward on the CPU. Every algorithm computes the same function (the score
// pipeline in docs/design.md: scale, softcap, bias + ALiBi, window and boolean masks, softmax, P*V) and differs
// only in how it gets there.
#include <string_view>
#include <vector>

#include "flashsim/algorithm.h"
#include "flashsim/inputs.h"
#include "flashsim/problem.h"
#include "flashsim/ref/options.h"
#include "flashsim/tile_config.h"

namespace flashsim::ref {

struct ForwardResult {
  std::vector<double> o;    // problem.o_shape()
  std::vector<double> lse;  // natural-log sum-exp of each row's scores; -inf for a row with no visible key
};

struct Gradients {
  std::vector<double> dq, dk, dv;
  std::vector<double> dbias;  // problem.bias shape (reduced over broadcast dims), empty without a bias
};

// Forward by any algorithm. `tile` is used by the tiled and streaming algorithms (block_q, block_k); the naive
// one ignores it.
ForwardResult forward(const AttentionProblem& p, const AttentionInputs& in, Algorithm algo,
                      const TileConfig& tile = {}, const RunOptions& opt = {});

// Backward from the forward's o and lse (computed by any algorithm at the same precision) and in.dout, by an
// algorithm with a backward of its own (naive: P materialized, dP = dO*V^T, dS = P o (dP - rowsum(dO o O));
// fa2: key blocks outer, P recomputed per tile from lse, dQ accumulated across key blocks). Throws InputError
// for the others (has_backward).
Gradients backward(const AttentionProblem& p, const AttentionInputs& in, const ForwardResult& fwd,
                   Algorithm algo, const TileConfig& tile = {}, const RunOptions& opt = {});

}  // namespace flashsim::ref
