#pragma once
// What fa3-v1's backward kernels take, as plain numbers and pointers (as fa3_fwd_params.h). Layouts are the
// goldens': q, o, dout, dq [total_q, heads_q, d]; k, v, dk, dv [total_k, heads_kv, d]; lse (and D, its twin in
// the workspace) [batch, heads_q, seqlen_q], or [heads_q, total_q] with variable lengths.
#include <cuda_runtime.h>  // __host__ __device__

#include <cstdint>

namespace flashsim::gpu::fa3 {

struct Fa3BwdParams {
  const void *q = nullptr, *k = nullptr, *v = nullptr, *o = nullptr, *dout = nullptr;
  const float* lse = nullptr;
  void *dq = nullptr, *dk = nullptr, *dv = nullptr;
  // workspace: the sum over key blocks of dS K, fp32, [heads_q, dq_accum_rows, d] in blocks of the tile's Br
  // query rows, each block's Br x d floats in the order the dQ wgmma's registers hold them (fa3_bwd_traits.h),
  // so that a warp adds its part with one bulk reduce and stores it to shared memory without bank conflicts.
  float* dq_accum = nullptr;
  int64_t dq_accum_rows = 0;  // fa3_dq_accum_rows: every sequence's query blocks whole and apart
  // 1: the key blocks' dQ added in place by bulk reduces (the L2's order: not deterministic); the key-block count
  // (--dq-strategy partials, deterministic): key block n stores its dQ to slab n with bulk copies, and
  // convert_dq adds the slabs of the key blocks that see a query block in key-block order.
  int dq_slabs = 1;
  float* dpsum = nullptr;  // workspace: D = rowsum(dO o O), in lse's layout
  const int32_t *cu_seqlens_q = nullptr, *cu_seqlens_k = nullptr;
  int batch = 1, heads_q = 1, heads_kv = 1, group = 1;
  int seqlen_q = 0, seqlen_k = 0;  // per sequence; with varlen the longest (the grid's extent)
  int64_t total_q = 0, total_k = 0;
  int head_dim = 0;
  bool varlen = false;
  float scale = 1.f;                        // s = scale * q.k (> 0)
  float softcap = 0.f;                      // > 0: the forward's s = softcap * tanh(scale * q.k / softcap)
  int window_left = -1, window_right = -1;  // bottom-right aligned, -1 unbounded; causal = (-1, 0)
};

// dq_accum's first row of the sequence at packed offset off_q, the b-th: offsets moved by b blocks and rounded
// down to a block, so that sequence b's ceil(len / Br) blocks end before sequence b + 1's first
// (floor((x + len) / Br) >= floor(x / Br) + floor(len / Br)).
__host__ __device__ inline int64_t fa3_dq_accum_start(int64_t off_q, int b, int block_q) {
  return (off_q + static_cast<int64_t>(b) * block_q) / block_q * block_q;
}
// dq_accum's rows a head: the start of a sequence past the last.
inline int64_t fa3_dq_accum_rows(int64_t total_q, int batch, int block_q) {
  return fa3_dq_accum_start(total_q, batch, block_q);
}

// Floats from dq_accum to the block of query block m of head h of sequence b (packed offset off_q) in slab
// `slab` (0 unless partials).
__host__ __device__ inline int64_t fa3_dq_accum_block(const Fa3BwdParams& a, int slab, int h, int64_t off_q,
                                                      int b, int m, int block_q) {
  return ((static_cast<int64_t>(slab) * a.heads_q + h) * a.dq_accum_rows +
          fa3_dq_accum_start(off_q, b, block_q) + static_cast<int64_t>(m) * block_q) *
         a.head_dim;
}

// Bytes of the backward's workspace: dq_accum (its slabs), then dpsum (16-byte aligned).
inline int64_t fa3_bwd_dq_accum_bytes(int64_t total_q, int batch, int64_t heads_q, int64_t head_dim,
                                      int block_q, int slabs) {
  return slabs * heads_q * fa3_dq_accum_rows(total_q, batch, block_q) * head_dim * 4;
}
inline int64_t fa3_bwd_workspace_bytes(int64_t total_q, int batch, int64_t heads_q, int64_t head_dim,
                                       int block_q, int slabs) {
  return fa3_bwd_dq_accum_bytes(total_q, batch, heads_q, head_dim, block_q, slabs) +
         (total_q * heads_q * 4 + 15) / 16 * 16;
}
// The slabs of the deterministic backward: one a key block of the longest sequence.
inline int fa3_dq_partial_slabs(int seqlen_k, int block_k) {
  return seqlen_k > 0 ? (seqlen_k + block_k - 1) / block_k : 1;
}
// Points a's dq_accum and dpsum into a workspace of fa3_bwd_workspace_bytes (the sizes and dq_slabs already set
// in a).
inline void fa3_bwd_set_workspace(Fa3BwdParams& a, void* workspace, int block_q) {
  a.dq_accum = static_cast<float*>(workspace);
  a.dq_accum_rows = fa3_dq_accum_rows(a.total_q, a.batch, block_q);
  a.dpsum = reinterpret_cast<float*>(
      static_cast<char*>(workspace) +
      fa3_bwd_dq_accum_bytes(a.total_q, a.batch, a.heads_q, a.head_dim, block_q, a.dq_slabs));
}

}  // namespace flashsim::gpu::fa3
