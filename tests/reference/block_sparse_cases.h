#pragma once
// The block-sparse problems the reference tests share (block_sparse_test.cpp, gradient_test.cpp), and the
// block mask written out element by element from its definition (problem.h), independently of the library's
// tile arithmetic: the element mask it is equivalent to, and the (query tile, key tile) pairs a tiled loop
// must skip.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "flashsim/inputs.h"
#include "flashsim/problem.h"
#include "test_util.h"

namespace flashsim::test {

// p with a block mask of shape `shape`, mask tile bq x bk, drawn from `spec`.
inline AttentionProblem with_block_mask(AttentionProblem p, BroadcastShape shape, int64_t bq, int64_t bk,
                                        std::string spec) {
  p.block_mask = shape;
  p.block_mask_q = bq;
  p.block_mask_k = bk;
  p.block_mask_spec = std::move(spec);
  return p;
}

inline bool has_batch_dim(BroadcastShape s) {
  return s == BroadcastShape::BHQK || s == BroadcastShape::BOneQK;
}
inline bool has_head_dim(BroadcastShape s) {
  return s == BroadcastShape::BHQK || s == BroadcastShape::OneHQK;
}

// Whether query row i, key j of (batch b, q head h) lies in an active tile of in.block_mask: the tile
// (i / block_mask_q, j / block_mask_k) of the [b|1, h|1, ceil(seqlen_q / bq), ceil(seqlen_k / bk)] grid.
inline bool block_tile_on(const AttentionProblem& p, const AttentionInputs& in, int64_t b, int64_t h,
                          int64_t i, int64_t j) {
  if (p.block_mask == BroadcastShape::None) return true;
  const int64_t rows = (p.seqlen_q + p.block_mask_q - 1) / p.block_mask_q;
  const int64_t cols = (p.seqlen_k + p.block_mask_k - 1) / p.block_mask_k;
  const int64_t heads = has_head_dim(p.block_mask) ? p.heads_q : 1;
  const int64_t plane = (has_batch_dim(p.block_mask) ? b : 0) * heads + (has_head_dim(p.block_mask) ? h : 0);
  return in.block_mask[(plane * rows + i / p.block_mask_q) * cols + j / p.block_mask_k] != 0;
}

// The problem and inputs with the block mask expanded into a boolean element mask (ANDed with the problem's
// own mask), and no block mask: the dense problem a block-sparse one must equal. The element mask has a batch
// (head) dim when either mask has one.
inline std::pair<AttentionProblem, AttentionInputs> expand_block_mask(const AttentionProblem& p,
                                                                      const AttentionInputs& in) {
  const bool hb = has_batch_dim(p.block_mask) || has_batch_dim(p.mask);
  const bool hh = has_head_dim(p.block_mask) || has_head_dim(p.mask);
  AttentionProblem dense = p;
  dense.block_mask = BroadcastShape::None;
  dense.mask = hb ? (hh ? BroadcastShape::BHQK : BroadcastShape::BOneQK)
                  : (hh ? BroadcastShape::OneHQK : BroadcastShape::OneOneQK);
  AttentionInputs din = in;
  din.block_mask.clear();
  const int64_t nb = hb ? p.batch : 1, nh = hh ? p.heads_q : 1, sq = p.seqlen_q, sk = p.seqlen_k;
  din.mask.assign(nb * nh * sq * sk, 0);
  for (int64_t b = 0; b < nb; ++b)
    for (int64_t h = 0; h < nh; ++h)
      for (int64_t i = 0; i < sq; ++i)
        for (int64_t j = 0; j < sk; ++j) {
          bool keep = block_tile_on(p, in, b, h, i, j);
          if (p.mask != BroadcastShape::None) {
            const int64_t mb = has_batch_dim(p.mask) ? b : 0, mh = has_head_dim(p.mask) ? h : 0;
            const int64_t mheads = has_head_dim(p.mask) ? p.heads_q : 1;
            keep = keep && in.mask[((mb * mheads + mh) * sq + i) * sk + j] != 0;
          }
          din.mask[((b * nh + h) * sq + i) * sk + j] = keep ? 1 : 0;
        }
  return {dense, din};
}

// The window's visibility, from the definition (problem.h, bottom-right aligned).
inline bool in_window(const AttentionProblem& p, int64_t b, int64_t i, int64_t j) {
  const int64_t diag = i + p.len_k(b) - p.len_q(b);
  return (p.window_left < 0 || j >= diag - p.window_left) &&
         (p.window_right < 0 || j <= diag + p.window_right);
}

struct PairCount {
  int64_t skipped = 0, computed = 0;
  int64_t total() const { return skipped + computed; }
};

// Calls f(b, h, qi, kj, active) for every (query tile qi, key tile kj) of br x bc tiles of every (batch, q
// head) that holds at least one (i, j) the window shows; active: some (i, j) of the tile lies in an active
// block-mask tile (found element by element).
template <class F>
void for_each_window_pair(const AttentionProblem& p, const AttentionInputs& in, int64_t br, int64_t bc,
                          F&& f) {
  for (int64_t b = 0; b < p.batch; ++b) {
    const int64_t lq = p.len_q(b), lk = p.len_k(b), nq = (lq + br - 1) / br, nk = (lk + bc - 1) / bc;
    for (int64_t h = 0; h < p.heads_q; ++h) {
      std::vector<uint8_t> window(nq * nk, 0), active(nq * nk, 0);
      for (int64_t i = 0; i < lq; ++i)
        for (int64_t j = 0; j < lk; ++j) {
          const int64_t t = (i / br) * nk + j / bc;
          window[t] = window[t] || in_window(p, b, i, j);
          active[t] = active[t] || block_tile_on(p, in, b, h, i, j);
        }
      for (int64_t qi = 0; qi < nq; ++qi)
        for (int64_t kj = 0; kj < nk; ++kj)
          if (window[qi * nk + kj]) f(b, h, qi, kj, active[qi * nk + kj] != 0);
    }
  }
}

// The pairs a tiled loop over br x bc tiles must skip and compute.
inline PairCount expected_pairs(const AttentionProblem& p, const AttentionInputs& in, int64_t br,
                                int64_t bc) {
  PairCount c;
  for_each_window_pair(p, in, br, bc, [&](int64_t, int64_t, int64_t, int64_t, bool active) {
    ++(active ? c.computed : c.skipped);
  });
  return c;
}

// Block-sparse problems over every feature of the reference grid: patterns s2 / s2-homo / local-sink / random
// (keep 0, 0.3, 1), block-mask shapes bhqk / 1hqk / b1qk / 11qk, mask tiles that do and do not divide the
// lengths, algorithm tiles equal to, smaller than, larger than and misaligned with the mask's.
inline std::vector<Case> block_sparse_grid() {
  using BS = BroadcastShape;
  std::vector<Case> cases;
  auto add = [&](std::string name, AttentionProblem p, TileConfig t) {
    cases.push_back({std::move(name), p, t});
  };
  add("s2_causal_aligned",
      with_block_mask(base(96, 96, 16).causal().build(), BS::BHQK, 16, 16, "s2:local=1,stride=3"),
      tiles(16, 16));
  add("s2_smaller_tiles",
      with_block_mask(base(100, 100, 16).causal().build(), BS::OneHQK, 16, 16, "s2:local=2,stride=4"),
      tiles(8, 8));
  add("s2_homo_larger_tiles",
      with_block_mask(base(100, 100, 16).causal().build(), BS::OneOneQK, 16, 16, "s2-homo:local=1,stride=3"),
      tiles(32, 48));
  add("local_sink_misaligned",
      with_block_mask(base(97, 97, 16).causal().build(), BS::BHQK, 16, 16, "local-sink:local=2,sink=1"),
      tiles(12, 20));
  add("local_sink_noncausal_rect",
      with_block_mask(base(64, 100, 16).build(), BS::BOneQK, 8, 24, "local-sink:local=1,sink=1"),
      tiles(16, 16));
  add("random03", with_block_mask(base(70, 90, 16).build(), BS::BOneQK, 8, 24, "random:keep=0.3"),
      tiles(16, 16));
  add("random0", with_block_mask(base(40, 50, 16).build(), BS::BHQK, 16, 16, "random:keep=0"), tiles(16, 16));
  add("random1", with_block_mask(base(40, 50, 16).causal().build(), BS::OneOneQK, 16, 16, "random:keep=1"),
      tiles(16, 32));
  add("random_tile1x1", with_block_mask(base(33, 41, 8).build(), BS::BHQK, 1, 1, "random:keep=0.3"),
      tiles(8, 8));
  add("mask_tile_over_length",
      with_block_mask(base(50, 40, 16).causal().build(), BS::OneHQK, 128, 128, "random:keep=0.5"),
      tiles(16, 16));
  add("window", with_block_mask(base(97, 120, 32).window(20, 5).build(), BS::BHQK, 10, 14, "random:keep=0.5"),
      tiles(16, 16));
  add("q_lt_k_s2",
      with_block_mask(base(20, 130, 16).causal().build(), BS::OneHQK, 8, 16, "s2:local=2,stride=3"),
      tiles(16, 32));
  add("q_gt_k_causal",
      with_block_mask(base(130, 40, 16).causal().build(), BS::BHQK, 16, 8, "random:keep=0.3"), tiles(32, 16));
  add("gqa", with_block_mask(base(64, 80, 16).heads(6, 2).build(), BS::OneHQK, 16, 16, "s2:local=1,stride=2"),
      tiles(16, 32));
  add("mqa",
      with_block_mask(base(50, 64, 16).heads(4, 1).causal().build(), BS::BHQK, 8, 8, "random:keep=0.3"),
      tiles(32, 16));
  add("varlen",
      with_block_mask(base(90, 100, 16).varlen({90, 1, 0, 33}, {100, 40, 7, 0}).build(), BS::BHQK, 16, 16,
                      "random:keep=0.5"),
      tiles(16, 16));
  add("varlen_causal_s2",
      with_block_mask(base(70, 70, 16).varlen({70, 5, 40}, {30, 70, 40}).causal().build(), BS::OneHQK, 8, 8,
                      "s2:local=1,stride=3"),
      tiles(16, 8));
  for (BS sh : {BS::BHQK, BS::OneHQK, BS::BOneQK, BS::OneOneQK}) {
    const std::string n(broadcast_name(sh));
    add("bias_" + n, with_block_mask(base(40, 50, 16).bias(sh).build(), sh, 8, 8, "random:keep=0.3"),
        tiles(16, 16));
    add("mask_" + n + "_s2",
        with_block_mask(base(40, 50, 16).mask(sh).causal().build(), BS::OneHQK, 16, 16,
                        "s2:local=1,stride=2"),
        tiles(16, 16));
  }
  add("softcap",
      with_block_mask(base(60, 70, 32).softcap(1.5).causal().build(), BS::OneOneQK, 16, 16,
                      "local-sink:local=1,sink=1"),
      tiles(16, 32));
  add("alibi",
      with_block_mask(base(50, 64, 16).heads(3).alibi().build(), BS::OneHQK, 16, 16, "s2:local=1,stride=2"),
      tiles(16, 16));
  add("combined",
      with_block_mask(base(77, 90, 24)
                          .heads(4, 2)
                          .head_dim(24, 20)
                          .window(30, 0)
                          .softcap(2.0)
                          .bias(BS::OneHQK)
                          .mask(BS::BOneQK)
                          .alibi()
                          .scale(0.3)
                          .build(),
                      BS::BHQK, 16, 12, "s2:local=2,stride=3"),
      tiles(16, 24));
  add("combined_varlen",
      with_block_mask(base(70, 70, 16)
                          .varlen({70, 5, 40}, {30, 70, 40})
                          .heads(4, 1)
                          .window(10, 2)
                          .softcap(1.0)
                          .bias(BS::BHQK)
                          .mask(BS::OneOneQK)
                          .build(),
                      BS::BHQK, 8, 8, "random:keep=0.3"),
      tiles(16, 16));
  return cases;
}

}  // namespace flashsim::test
