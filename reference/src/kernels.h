#pragma once
// The algorithms, templated on the accumulator type (double: Exact; float: Fp32 and Emulated).

#include "flashsim/ref/attention.h"
#include "problem_context.h"

namespace flashsim::ref::detail {

template <class Acc>
void forward_naive(const ProblemContext& ctx, ForwardResult& out);
// ThreePass, TwoPass and TiledFa2: one task per (batch, head, query block), keys streamed in blocks.
template <class Acc>
void forward_streaming(const ProblemContext& ctx, const TileConfig& tile, Algorithm algo, ForwardResult& out);
template <class Acc>
void forward_fa1(const ProblemContext& ctx, const TileConfig& tile, ForwardResult& out);
// Split-KV (Flash-Decoding): FA2's task per split of each sequence's key blocks, then the LSE combine; out's
// vectors sized by the caller.
template <class Acc>
void forward_split_kv(const ProblemContext& ctx, const TileConfig& tile, int num_splits, SplitKvResult& out);

template <class Acc>
void backward_naive(const ProblemContext& ctx, const ForwardResult& fwd, Gradients& out);
template <class Acc>
void backward_tiled(const ProblemContext& ctx, const TileConfig& tile, const ForwardResult& fwd,
                    Gradients& out);

// (query tile, key tile, head) pairs a tiled loop visited within the window: skipped (every block-mask tile
// they overlap inactive) and computed. Integer sums, so thread-count independent.
struct TileCounter {
  int64_t skipped = 0, computed = 0;
  // Adds one visited pair.
  void add(bool active) { ++(active ? computed : skipped); }
  // Adds this thread's counts into `total` (inside a parallel region).
  void add_to(TileCounter& total) const {
#pragma omp atomic
    total.skipped += skipped;
#pragma omp atomic
    total.computed += computed;
  }
};

// Block b of a dimension split into blocks of `block`: [b * block, min(len, (b + 1) * block)).
inline int64_t num_blocks(int64_t len, int64_t block) {
  return (len + block - 1) / block;
}

}  // namespace flashsim::ref::detail
