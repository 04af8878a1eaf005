#pragma once
// Exact attention forward and backward on the CPU. Every algorithm computes the same function (the score
// pipeline in DESIGN.md: scale, softcap, bias + ALiBi, window and boolean masks, softmax, P*V) and differs
// only in how it gets there.
#include <string_view>
#include <vector>

#include "flashsim/inputs.h"
#include "flashsim/problem.h"
#include "flashsim/ref/options.h"
#include "flashsim/tile_config.h"

namespace flashsim::ref {

enum class ForwardAlgorithm {
  Naive,      // S = scale*Q*K^T and P = softmax(S) materialized, O = P*V
  ThreePass,  // safe softmax: row max; row sum of exp(s - m); normalize and multiply by V
  TwoPass,    // online softmax: running max and rescaled sum in one pass over keys, then the output pass
  TiledFa1,   // FlashAttention, key blocks outer: O, m, l re-read and re-written per key block
  TiledFa2,   // FlashAttention, query blocks outer: O rescaled in place and written once
};
enum class BackwardAlgorithm {
  Naive,  // P materialized, dP = dO*V^T, dS = P o (dP - rowsum(dO o O))
  Tiled,  // FlashAttention-2: key blocks outer, P recomputed per tile from lse, dQ accumulated across key
          // blocks
};

std::string_view algorithm_name(ForwardAlgorithm a);  // "naive", "three-pass", "two-pass", "tiled-fa1", ...
std::string_view algorithm_name(BackwardAlgorithm a);
ForwardAlgorithm parse_forward_algorithm(std::string_view s);
const std::vector<ForwardAlgorithm>& all_forward_algorithms();

struct ForwardResult {
  std::vector<double> o;    // problem.o_shape()
  std::vector<double> lse;  // natural-log sum-exp of each row's scores; -inf for a row with no visible key
};

struct Gradients {
  std::vector<double> dq, dk, dv;
  std::vector<double> dbias;  // problem.bias shape (reduced over broadcast dims), empty without a bias
};

// Forward. `tile` is used by the tiled and streaming algorithms (block_q, block_k); the naive one ignores it.
ForwardResult forward(const AttentionProblem& p, const AttentionInputs& in, ForwardAlgorithm algo,
                      const TileConfig& tile = {}, const RunOptions& opt = {});

// Backward from the forward's o and lse (computed by any algorithm at the same precision) and in.dout.
Gradients backward(const AttentionProblem& p, const AttentionInputs& in, const ForwardResult& fwd,
                   BackwardAlgorithm algo, const TileConfig& tile = {}, const RunOptions& opt = {});

}  // namespace flashsim::ref
