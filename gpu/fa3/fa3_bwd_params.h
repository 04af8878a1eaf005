#pragma once
// What fa3-v1's backward kernels take, as plain numbers and pointers (as fa3_fwd_params.h). Layouts are the
// goldens': q, o, dout, dq [total_q, heads_q, d]; k, v, dk, dv [total_k, heads_kv, d]; lse (and D, its twin in
// the workspace) [batch, heads_q, seqlen_q], or [heads_q, total_q] with variable lengths.
#include <cstdint>

namespace flashsim::gpu::fa3 {

struct Fa3BwdParams {
  const void *q = nullptr, *k = nullptr, *v = nullptr, *o = nullptr, *dout = nullptr;
  const float* lse = nullptr;
  void *dq = nullptr, *dk = nullptr, *dv = nullptr;
  float* dq_accum = nullptr;  // workspace: [total_q, heads_q, d] fp32, the sum over key blocks of dS K
  float* dpsum = nullptr;     // workspace: D = rowsum(dO o O), in lse's layout
  const int32_t *cu_seqlens_q = nullptr, *cu_seqlens_k = nullptr;
  int batch = 1, heads_q = 1, heads_kv = 1, group = 1;
  int seqlen_q = 0, seqlen_k = 0;  // per sequence; with varlen the longest (the grid's extent)
  int64_t total_q = 0, total_k = 0;
  int head_dim = 0;
  bool varlen = false;
  float scale = 1.f;                        // s = scale * q.k (> 0)
  int window_left = -1, window_right = -1;  // bottom-right aligned, -1 unbounded; causal = (-1, 0)
};

// Bytes of the backward's workspace: dq_accum, then dpsum (16-byte aligned).
inline int64_t fa3_bwd_workspace_bytes(int64_t total_q, int64_t heads_q, int64_t head_dim) {
  const int64_t accum = total_q * heads_q * head_dim * 4;
  return accum + (total_q * heads_q * 4 + 15) / 16 * 16;
}

}  // namespace flashsim::gpu::fa3
