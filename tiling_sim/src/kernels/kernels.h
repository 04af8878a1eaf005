#pragma once
// The built-in kernel models, one file each (registry.cpp lists them in one table).
#include "flashsim/sim/kernel_model.h"
#include "int_math.h"

namespace flashsim::sim::kernels {

KernelModel naive_forward_scores();
KernelModel naive_forward_softmax();
KernelModel naive_forward_pv();
KernelModel three_pass_forward();
KernelModel two_pass_forward();
KernelModel fa1_forward();
KernelModel fa2_forward();
KernelModel fa2_v1_forward();
KernelModel naive_backward_scores();
KernelModel naive_backward_softmax();
KernelModel naive_backward_dp();
KernelModel naive_backward_ds();
KernelModel naive_backward_dv();
KernelModel naive_backward_dq();
KernelModel naive_backward_dk();
KernelModel fa2_backward_dot_do_o();
KernelModel fa2_backward_dot_do_o_lse();
KernelModel fa2_backward_dq_dk_dv();
KernelModel fa2_backward_dq_dk_dv_group();
KernelModel fa2_backward_convert_dq();
KernelModel fa2_backward_convert_dq_rows();
KernelModel fa2_splitkv_forward();
KernelModel fa2_splitkv_combine();
KernelModel decode_combine();
KernelModel fa3_forward();
KernelModel fa3_backward_dot_do_o();
KernelModel fa3_backward();
KernelModel fa3_backward_convert_dq();

// Tile rules (mma_tile_rules.cpp): FlashAttention-2's forward (16 x warps query rows, Bc a multiple of 16), any
// mma.sync forward (Br and Bc multiples of 16), FlashAttention-2's backward.
std::optional<TileRuleBreak> fa2_forward_tile_rule(const TileConfig& c);
std::optional<TileRuleBreak> mma16_forward_tile_rule(const TileConfig& c);
std::optional<TileRuleBreak> fa2_backward_tile_rule(const TileConfig& c);

using sim::ceil_div;  // int_math.h
using sim::ceil_div_any;
using sim::floor_div;

// Blocks of [n0, n1) outside the run [full_lo, full_hi) that needs no per-element mask: the blocks a kernel
// masks element by element when the blocks it need not mask are contiguous (a window's or the keys' edges bound
// them on both sides).
inline int64_t blocks_outside(int64_t n0, int64_t n1, int64_t full_lo, int64_t full_hi) {
  return std::max<int64_t>(0, n1 - n0) - std::max<int64_t>(0, std::min(n1, full_hi) - std::max(n0, full_lo));
}

// The grid every built-in kernel launches: `blocks` CTAs along x (query or key blocks of the longest
// sequence), the batch along y, the query heads along z (FlashAttention-2's order), `threads` per CTA.
inline KernelLaunch per_head_launch(const AttentionProblem& p, int64_t blocks, int threads) {
  KernelLaunch l;
  l.grid_x = blocks;
  l.grid_y = p.batch;
  l.grid_z = p.heads_q;
  l.threads = threads;
  return l;
}
// Rows of the blocks [first, last) of size blk over a sequence of length len.
inline int64_t block_rows(int64_t first, int64_t last, int64_t blk, int64_t len) {
  return last > first ? std::min(len, last * blk) - first * blk : 0;
}

}  // namespace flashsim::sim::kernels
