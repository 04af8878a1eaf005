#pragma once
// decode-v2's split kernel (decode_versions.cpp describes the family; append and combine: decode_common.cuh): decode-v1's
// CTAs, splits and paged copies, with the products on tensor cores (mma.sync m16n8k16, fp32 accumulation).
//
// A CTA packs up to 16 rows (seqlen_q x the group's query heads; zero rows pad the m16 tile) and streams its
// split's 64-key tiles through a ring of stages; warp w takes keys [16 w, 16 w + 16) of every tile:
//   S_w = scale Q K_w^T (+ softcap, ALiBi; -inf outside the window or past len_k)  gQ/sQ [16, d], sK [64, d]
//   m_w' = max(m_w, rowmax(S_w)), P_w = exp(S_w - m_w'), l_w = l_w exp(m_w - m_w') + rowsum(P_w)
//   O_w = O_w exp(m_w - m_w') + P_w V_w        (P_w rounded to the input dtype, as the emulated reference)
// and after the loop the four warps' states merge: m = max_w m_w, l = sum_w l_w exp(m_w - m),
// O = sum_w O_w exp(m_w - m) / l, lse = m + log l. One split writes O and lse; more write fp32 partials.
#include "../fa2/fa2_device.cuh"  // ldmatrix, mma16816, c_to_a: the FA2 kernels' warp-level primitives
#include "decode_common.cuh"
#include "flashsim/families/decode/traits.h"

namespace flashsim::gpu::decode {

template <class T, int D, int DV>
__global__ void __launch_bounds__(128) decode_mma_split_kernel(const DecodeParams p) {
  using Tr = DecodeMmaTraits<D, DV>;
  using fa2::detail::c_to_a;
  using fa2::detail::ldmatrix_x4;
  using fa2::detail::ldmatrix_x4_trans;
  using fa2::detail::mma16816;
  constexpr int kBlockK = Tr::kBlockK, kRows = Tr::kRows, kWarps = Tr::kWarps;
  extern __shared__ __align__(128) unsigned char smem[];
  unsigned char* sKV = smem;                                        // kStages x [sK [64, D] | sV [64, DV]]
  unsigned char* sQ = smem + Tr::kKvBytes;                          // [16, D], chunks swizzled by row
  float* sM = reinterpret_cast<float*>(sQ + Tr::kQBytes);           // [warps, 16] each warp's m
  float* sL = sM + kWarps * kRows;                                  // [warps, 16] each warp's l
  int64_t* sRow = reinterpret_cast<int64_t*>(sL + kWarps * kRows);  // [kStages, kBlockK]

  const AttentionParams& a = p.a;
  const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
  const SplitCta cta = split_cta<kRows, kBlockK>(p);
  const int b = cta.b, hk = cta.hk, lk = cta.lk, r0 = cta.r0, rows = cta.rows;
  const int n0 = cta.n0, nt = cta.nt, g = a.group, lq = a.seqlen_q;

  RowLookups<kBlockK, Tr::kStages> lookups{sRow, p, b, hk, n0, nt, lk, tid};
  const auto load_tile = [&](int t) { load_kv_tile<Tr, 1, 1>(sKV, p, lookups, t, nt, tid); };
  for (int t = 0; t < Tr::kStages; ++t) lookups.put(t, lookups.fetch(t));
  lookups.pending = lookups.fetch(Tr::kStages);
  __syncthreads();
  for (int t = 0; t < Tr::kStages - 1; ++t) {  // the first tiles in flight, a commit group each
    load_tile(t);
    cp_async_commit();
  }
  // sQ: the packed rows of Q, zeros past the pack.
  for (int idx = tid; idx < kRows * (D / 8); idx += Tr::kThreads) {
    const int r = idx / (D / 8), c = idx % (D / 8);
    uint4 x = make_uint4(0, 0, 0, 0);
    if (r < rows) {
      const int pr = r0 + r, i = pr / g, h = hk * g + pr % g;
      x = *reinterpret_cast<const uint4*>(static_cast<const T*>(p.q) +
                                          ((static_cast<int64_t>(b) * lq + i) * a.heads_q + h) * D + c * 8);
    }
    *reinterpret_cast<uint4*>(sQ + r * Tr::kKStride + chunk_slot<1>(r, c) * 16) = x;
  }

  // This lane's two rows of the m16 tile (the C fragment's g and g + 8) and their queries.
  const int gr = lane / 4, t4 = lane % 4;
  int qi[2], valid[2];
  float slope[2];
#pragma unroll
  for (int e = 0; e < 2; ++e) {
    const int r = gr + 8 * e, pr = r0 + r;
    valid[e] = r < rows;
    qi[e] = pr / g;
    slope[e] = a.alibi && valid[e] ? p.slopes[hk * g + pr % g] : 0.f;
  }
  float m_run[2] = {neg_inf(), neg_inf()}, l_run[2] = {0.f, 0.f};  // l: this lane's part of the row sum
  float acc[DV / 8][4];                                            // rO: O_w's C fragments, n8 tiles of dv
#pragma unroll
  for (int n = 0; n < DV / 8; ++n)
#pragma unroll
    for (int e = 0; e < 4; ++e) acc[n][e] = 0.f;
  const uint32_t q_base = smem_addr(sQ);
  const int a_row = lane % 16, a_half = lane / 16;  // ldmatrix A rows / chunk half
  const int kb_key = warp * 16 + lane % 8 + 8 * (lane / 16), kb_half = (lane / 8) % 2;  // B of S (non-trans)
  const int vb_key = warp * 16 + lane % 16, vb_half = lane / 16;                        // B of P V (trans)

  for (int t = 0; t < nt; ++t) {
    const int stage = t % Tr::kStages, k0 = (n0 + t) * kBlockK;
    cp_async_wait<Tr::kStages - 2>();
    __syncthreads();  // tile t landed for every thread; tile t - 1's stage is free
    load_tile(t + Tr::kStages -
              1);  // into tile t - 1's stage: kStages - 1 tiles load while this one computes
    cp_async_commit();
    lookups.put(t + Tr::kStages, lookups.pending);  // sRow[t % kStages] held tile t's rows, copied long ago
    lookups.pending = lookups.fetch(t + Tr::kStages + 1);
    const uint32_t sK = smem_addr(sKV + stage * Tr::kStageBytes), sV = sK + kBlockK * Tr::kKStride;
    float s[2][4] = {};  // rS: S_w [16, 16] as two n8 C fragments
#pragma unroll
    for (int ks = 0; ks < D / 16; ++ks) {
      uint32_t qa[4], kb[4];
      ldmatrix_x4(qa, q_base + a_row * Tr::kKStride + chunk_slot<1>(a_row, 2 * ks + a_half) * 16);
      ldmatrix_x4(kb, sK + kb_key * Tr::kKStride + chunk_slot<1>(kb_key, 2 * ks + kb_half) * 16);
      mma16816<T>(s[0], qa, kb[0], kb[1]);
      mma16816<T>(s[1], qa, kb[2], kb[3]);
    }
    // The score pipeline, then the warp's online softmax for rows gr (e = 0, 1) and gr + 8 (e = 2, 3).
    float mx[2] = {neg_inf(), neg_inf()};
#pragma unroll
    for (int n = 0; n < 2; ++n)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int h2 = e / 2, j = k0 + warp * 16 + n * 8 + 2 * t4 + e % 2;
        float x = neg_inf();
        if (valid[h2] && j < lk && window_visible(a, lq, lk, qi[h2], j))
          x = biased_score(a, a.scale * s[n][e], 0.f, slope[h2], qi[h2] + lk - lq - j);
        s[n][e] = x;
        mx[h2] = fmaxf(mx[h2], x);
      }
    float alpha[2];
#pragma unroll
    for (int h2 = 0; h2 < 2; ++h2) {
      mx[h2] = fmaxf(mx[h2], __shfl_xor_sync(0xffffffffu, mx[h2], 1));  // the quad holds a row's 16 keys
      mx[h2] = fmaxf(mx[h2], __shfl_xor_sync(0xffffffffu, mx[h2], 2));
      const float m_new = fmaxf(m_run[h2], mx[h2]);          // m_w' = max(m_w, rowmax(S_w))
      const float m_use = m_new == neg_inf() ? 0.f : m_new;  // no visible key yet: P = 0, alpha = 0
      alpha[h2] = expf(m_run[h2] - m_use);                   // exp(m_w - m_w')
      m_run[h2] = m_new;
      l_run[h2] *= alpha[h2];
#pragma unroll
      for (int n = 0; n < 2; ++n)
#pragma unroll
        for (int e = 2 * h2; e < 2 * h2 + 2; ++e) {
          s[n][e] = expf(s[n][e] - m_use);  // P_w = exp(S_w - m_w')
          l_run[h2] += s[n][e];
        }
    }
#pragma unroll
    for (int n = 0; n < DV / 8; ++n) {  // O_w = O_w exp(m_w - m_w') + P_w V_w
      acc[n][0] *= alpha[0];
      acc[n][1] *= alpha[0];
      acc[n][2] *= alpha[1];
      acc[n][3] *= alpha[1];
    }
    uint32_t pa[4];
    c_to_a<T>(pa, s[0], s[1]);  // P_w rounded to T: the A fragment of the k16 step over the warp's keys
#pragma unroll
    for (int n2 = 0; n2 < DV / 16; ++n2) {
      uint32_t vb[4];
      ldmatrix_x4_trans(vb, sV + vb_key * Tr::kVStride + chunk_slot<1>(vb_key, 2 * n2 + vb_half) * 16);
      mma16816<T>(acc[2 * n2], pa, vb[0], vb[1]);
      mma16816<T>(acc[2 * n2 + 1], pa, vb[2], vb[3]);
    }
  }
  cp_async_wait<0>();
  __syncthreads();  // every warp is past its last tile: the stages hold the warps' O from here
#pragma unroll
  for (int h2 = 0; h2 < 2; ++h2) {
    l_run[h2] += __shfl_xor_sync(0xffffffffu, l_run[h2], 1);  // l_w: the quad's parts summed
    l_run[h2] += __shfl_xor_sync(0xffffffffu, l_run[h2], 2);
    if (t4 == 0) {
      sM[warp * kRows + gr + 8 * h2] = m_run[h2];
      sL[warp * kRows + gr + 8 * h2] = l_run[h2];
    }
  }
  float* sO = reinterpret_cast<float*>(sKV);  // [warps, 16, DV]
#pragma unroll
  for (int n = 0; n < DV / 8; ++n)
#pragma unroll
    for (int e = 0; e < 4; ++e)
      sO[(warp * kRows + gr + 8 * (e / 2)) * DV + n * 8 + 2 * t4 + e % 2] = acc[n][e];
  __syncthreads();
  for (int idx = tid; idx < rows * DV; idx += Tr::kThreads) {
    const int r = idx / DV, c = idx % DV;
    float m = neg_inf();
#pragma unroll
    for (int w = 0; w < kWarps; ++w) m = fmaxf(m, sM[w * kRows + r]);  // m = max_w m_w
    float l = 0.f, o = 0.f;
    if (m != neg_inf())
#pragma unroll
      for (int w = 0; w < kWarps; ++w) {
        const float f = expf(sM[w * kRows + r] - m);  // exp(m_w - m); 0 for a warp that saw no key
        l += sL[w * kRows + r] * f;
        o += sO[(w * kRows + r) * DV + c] * f;
      }
    store_row<T>(p, cta, r, c, o, l, m);
  }
}

}  // namespace flashsim::gpu::decode
