#pragma once
// The arguments of fa2-v1's three backward kernels (fa2_bwd_rowwise.cuh: dot_do_o, convert_dq; fa2_bwd_kernel.cuh:
// the main kernel) and the index arithmetic they share: where a row of the fp32 dQ accumulator lives, and which
// query blocks see a key block (and the converse), computed so that both directions agree exactly.
#include <cstdint>

#include "flashsim/gpu/params.h"  // FLASHSIM_HD: host and device under nvcc, host alone elsewhere (the tests)

namespace flashsim::gpu::fa2 {

struct Fa2BwdParams {
  AttentionParams a;           // window sides that hide no key made -1 (fa2_fwd_v1.cu's params_of)
  const void* q = nullptr;     // [total_q, heads_q, d]
  const void* k = nullptr;     // [total_k, heads_kv, d]
  const void* v = nullptr;     // [total_k, heads_kv, d]
  const void* o = nullptr;     // the forward's output [total_q, heads_q, d]
  const void* dout = nullptr;  // [total_q, heads_q, d]
  const float* lse = nullptr;  // the forward's lse (lse_index)
  void* dq = nullptr;          // [total_q, heads_q, d]
  void* dk = nullptr;          // [total_k, heads_kv, d]
  void* dv = nullptr;          // [total_k, heads_kv, d]
  const void* bias = nullptr;
  const uint8_t* mask = nullptr;
  const float* slopes = nullptr;
  const int32_t* cu_q = nullptr;
  const int32_t* cu_k = nullptr;
  const uint8_t* block_mask = nullptr;        // DeviceArgs::block_mask (a.has_block_mask)
  unsigned long long* tile_counts = nullptr;  // DeviceArgs::tile_counts: [2] computed, [3] skipped
  int bm_items = 0;  // with a block mask: the most (query head, query block) steps a CTA walks (the bitmaps)
  // Workspace (the host's workspace_layout):
  float* lse_shift = nullptr;  // the lse P is recomputed from, P = exp(S - lse_shift): +inf where lse = -inf
  float* dsum = nullptr;       // D = rowsum(dO o O), lse_index layout
  float* dq_accum = nullptr;   // fp32 dQ: [accum_rows][heads_q][d] (atomics), or one such slab per key block
  // dS in fp32 (dbias before any broadcast reduction): element (b, h, i, j) at
  // b * dbias_stride_b + h * dbias_stride_h + i * dbias_stride_q + j; nullptr without bias.
  float* dbias = nullptr;
  int64_t dbias_stride_b = 0, dbias_stride_h = 0, dbias_stride_q = 0;
  bool pipeline = false;  // softcap, bias, mask, ALiBi or scale <= 0: the full per-element score pipeline
  bool deterministic = false;  // dQ partials per key block (plain stores) instead of atomics
  int64_t q_stride = 0;        // heads_q * d
  int64_t kv_stride = 0;       // heads_kv * d
  int64_t accum_rows = 0;      // rows of the padded accumulator (all sequences, each rounded up to 128)
};

// Row of the padded fp32 accumulator where sequence b starts: each sequence's rows rounded up to a multiple
// of 128 (flashsim::dq_accum_padded_rows), laid out as FlashAttention-2 does with variable lengths,
// floor((cu_q[b] + 128 b) / 128) * 128 (never overlaps sequence b - 1's padded rows).
FLASHSIM_HD int64_t accum_row0(const AttentionParams& a, const int32_t* cu_q, int b) {
  return a.varlen ? (static_cast<int64_t>(cu_q[b]) + 128 * int64_t{b}) / 128 * 128
                  : static_cast<int64_t>(b) * ((a.seqlen_q + 127) / 128 * 128);
}
// Rows of the padded accumulator over all sequences (an upper bound with variable lengths).
FLASHSIM_HD int64_t accum_rows(const AttentionParams& a) {
  return a.varlen ? a.total_q + 128 * (int64_t{a.batch} + 1)
                  : int64_t{a.batch} * ((a.seqlen_q + 127) / 128 * 128);
}

// Query rows [lo, hi) of a sequence (lengths lq, lk) that see some key of [k0, k1) through the bottom-right
// aligned window; and key rows [lo, hi) that some query of [q0, q1) sees. Both are "the rectangle meets the band
// shift - left <= j - i <= shift + right (shift = lk - lq)", so a query block sees a key block exactly when
// the key block sees the query block: the main kernel writes dQ partials for those pairs and convert_dq reads
// the same ones. hi <= lo: none.
FLASHSIM_HD void queries_seeing(const AttentionParams& a, int lq, int lk, int k0, int k1, int& lo, int& hi) {
  const int64_t shift = static_cast<int64_t>(lk) - lq;
  const int64_t l = a.window_right < 0 ? 0 : k0 - shift - a.window_right;
  const int64_t h = a.window_left < 0 ? lq : k1 - 1 - shift + a.window_left + 1;
  lo = static_cast<int>(l < 0 ? 0 : l);
  hi = static_cast<int>(h > lq ? lq : h);
}
FLASHSIM_HD void keys_seen(const AttentionParams& a, int lq, int lk, int q0, int q1, int& lo, int& hi) {
  const int64_t shift = static_cast<int64_t>(lk) - lq;
  const int64_t l = a.window_left < 0 ? 0 : q0 + shift - a.window_left;
  const int64_t h = a.window_right < 0 ? lk : q1 - 1 + shift + a.window_right + 1;
  lo = static_cast<int>(l < 0 ? 0 : l);
  hi = static_cast<int>(h > lk ? lk : h);
}
// Blocks of size blk covering rows [lo, hi): [first, last), empty when hi <= lo.
FLASHSIM_HD void block_range(int lo, int hi, int blk, int& first, int& last) {
  first = hi > lo ? lo / blk : 0;
  last = hi > lo ? (hi + blk - 1) / blk : 0;
}

}  // namespace flashsim::gpu::fa2
