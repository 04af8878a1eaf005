#pragma once
// decode-v1's split kernel (decode_versions.cpp describes the family; append and combine: decode_common.cuh).
//
// decode_split_kernel: a CTA per (packed row block, split, sequence x kv head). The group's query heads are
// packed as rows (pack GQA: packed row r is query row r / group of head kv_head x group + r % group), so each
// CTA reads its split's K and V once for all of them. Split s of sequence b holds key tiles
// [s x per, (s + 1) x per) of its ceil(len_k / Bc), per = ceil(tiles / splits) (ref::forward_split_kv's rule),
// narrowed to the tiles the window lets its rows see. A tile's rows come from the pages of the block table
// (key j: row j % page_size of page block_table[b][j / page_size]) by 16-byte cp.async into a ring of stages
// (kStages - 1 tiles in flight while one computes); then, on CUDA cores in fp32:
//   S = scale Q K^T (+ softcap, ALiBi; -inf outside the window or past len_k)   (score_pipeline.cuh)
//   m_new = max(m, rowmax(S)), P = exp(S - m_new), l = l exp(m - m_new) + rowsum(P)
//   O = O exp(m - m_new) + P V
// One split writes O / l and lse = m + log l; more write them in fp32 for the combine. A row without a visible
// key has l = 0: O = 0, lse = -inf.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "decode_common.cuh"
#include "flashsim/families/decode/traits.h"

namespace flashsim::gpu::decode {

template <class T, int D, int DV, int kRows>
__global__ void __launch_bounds__(128, 2) decode_split_kernel(const DecodeParams p) {
  using Tr = DecodeTraits<sizeof(T), D, DV, kRows>;
  constexpr int kBlockK = Tr::kBlockK, kVec = Tr::kVec, kTpk = Tr::kThreadsPerKey;
  constexpr int kKChunks = D * static_cast<int>(sizeof(T)) / 16, kVChunks = Tr::kVChunks;
  static_assert(Tr::kThreads == 128, "the launch bounds and the row-per-warp loop assume 4 warps");
  extern __shared__ __align__(16) unsigned char smem[];
  unsigned char* sKV = smem;                                  // kStages x [K tile | V tile]
  float* sQ = reinterpret_cast<float*>(smem + Tr::kKvBytes);  // [kRows, D]
  float* sS = sQ + kRows * D;                                 // [kRows, kBlockK]: S, then P
  float* sAlpha = sS + kRows * kBlockK;                       // [kRows] exp(m_old - m_new)
  float* sM = sAlpha + kRows;                                 // [kRows] final m
  float* sL = sM + kRows;                                     // [kRows] final l
  int64_t* sRow = reinterpret_cast<int64_t*>(sL + kRows);     // [kStages, kBlockK]

  const AttentionParams& a = p.a;
  const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
  const SplitCta cta = split_cta<kRows, kBlockK>(p);
  const int b = cta.b, hk = cta.hk, lk = cta.lk, r0 = cta.r0, rows = cta.rows;
  const int n0 = cta.n0, nt = cta.nt, g = a.group, lq = a.seqlen_q;

  RowLookups<kBlockK, Tr::kStages> lookups{sRow, p, b, hk, n0, nt, lk, tid};
  const auto load_tile = [&](int t) { load_kv_tile<Tr, kTpk, 0>(sKV, p, lookups, t, nt, tid); };

  for (int t = 0; t < Tr::kStages; ++t) lookups.put(t, lookups.fetch(t));
  lookups.pending = lookups.fetch(Tr::kStages);
  __syncthreads();
  for (int t = 0; t < Tr::kStages - 1; ++t) {  // the first tiles in flight, a commit group each
    load_tile(t);
    cp_async_commit();
  }
  // Q of the packed rows in fp32 (rows past the pack are 0).
  for (int idx = tid; idx < kRows * D; idx += Tr::kThreads) {
    const int r = idx / D, c = idx % D;
    float x = 0.f;
    if (r < rows) {
      const int pr = r0 + r, i = pr / g, h = hk * g + pr % g;
      x = to_float(static_cast<const T*>(p.q)[((static_cast<int64_t>(b) * lq + i) * a.heads_q + h) * D + c]);
    }
    sQ[idx] = x;
  }

  float acc[kRows][kVec];  // O of this thread's column chunk, over its keys
#pragma unroll
  for (int r = 0; r < kRows; ++r)
#pragma unroll
    for (int e = 0; e < kVec; ++e) acc[r][e] = 0.f;
  float m_run[kRows / 4], l_run[kRows / 4];  // rows warp, warp + 4, ... (every lane holds them)
#pragma unroll
  for (int q = 0; q < kRows / 4; ++q) {
    m_run[q] = neg_inf();
    l_run[q] = 0.f;
  }
  const int key = tid / kTpk, part = tid % kTpk;                  // S: this thread's key and chunk phase
  const int vchunk = tid % kVChunks, key_group = tid / kVChunks;  // P V: its column chunk and keys

  for (int t = 0; t < nt; ++t) {
    const int stage = t % Tr::kStages, k0 = (n0 + t) * kBlockK;
    const unsigned char* sK = sKV + stage * Tr::kStageBytes;
    const unsigned char* sV = sK + kBlockK * Tr::kKStride;
    cp_async_wait<Tr::kStages - 2>();  // tile t landed (the next kStages - 2 may be in flight)
    __syncthreads();                   // ... for every thread; and tile t - 1's stage is free
    // Tile t + kStages - 1 into tile t - 1's stage: kStages - 1 tiles load while this one computes.
    load_tile(t + Tr::kStages -
              1);  // into tile t - 1's stage: kStages - 1 tiles load while this one computes
    cp_async_commit();
    lookups.put(t + Tr::kStages, lookups.pending);  // sRow[t % kStages] held tile t's rows, copied long ago
    lookups.pending = lookups.fetch(t + Tr::kStages + 1);
    {  // S = scale Q K^T, through the score pipeline
      float s[kRows];
#pragma unroll
      for (int r = 0; r < kRows; ++r) s[r] = 0.f;
      const unsigned char* krow = sK + key * Tr::kKStride;
#pragma unroll 4
      for (int it = 0; it < kKChunks / kTpk; ++it) {
        const int chunk = it * kTpk + part;
        float kf[kVec];
        chunk_to_float<T, kVec>(krow + chunk_slot<kTpk>(key, chunk) * 16, kf);
#pragma unroll
        for (int r = 0; r < kRows; ++r) {
          const float* qr = sQ + r * D + chunk * kVec;
#pragma unroll
          for (int e = 0; e < kVec; ++e) s[r] = fmaf(qr[e], kf[e], s[r]);
        }
      }
#pragma unroll
      for (int off = 1; off < kTpk; off *= 2)
#pragma unroll
        for (int r = 0; r < kRows; ++r) s[r] += __shfl_xor_sync(0xffffffffu, s[r], off);
      if (part == 0) {
        const int j = k0 + key;
#pragma unroll
        for (int r = 0; r < kRows; ++r) {
          float x = neg_inf();
          if (r < rows && j < lk) {
            const int pr = r0 + r, i = pr / g, h = hk * g + pr % g;
            if (window_visible(a, lq, lk, i, j))
              x = biased_score(a, a.scale * s[r], 0.f, a.alibi ? p.slopes[h] : 0.f, i + lk - lq - j);
          }
          sS[r * kBlockK + key] = x;
        }
      }
    }
    __syncthreads();
#pragma unroll
    for (int q = 0; q < kRows / 4; ++q) {  // the online softmax, a warp a row
      const int r = warp + 4 * q;
      float mx = neg_inf();
      for (int jj = lane; jj < kBlockK; jj += 32) mx = fmaxf(mx, sS[r * kBlockK + jj]);
      mx = warp_reduce(mx, Max{});
      const float m_new = fmaxf(m_run[q], mx);               // m_new = max(m, rowmax(S))
      const float m_use = m_new == neg_inf() ? 0.f : m_new;  // no visible key yet: P = 0, alpha = 0
      const float alpha = expf(m_run[q] - m_use);            // exp(m - m_new)
      float sum = 0.f;
      for (int jj = lane; jj < kBlockK; jj += 32) {
        const float pv = expf(sS[r * kBlockK + jj] - m_use);  // P = exp(S - m_new)
        sS[r * kBlockK + jj] = pv;
        sum += pv;
      }
      sum = warp_reduce(sum, Sum{});
      l_run[q] = l_run[q] * alpha + sum;  // l = l exp(m - m_new) + rowsum(P)
      m_run[q] = m_new;
      if (lane == 0) sAlpha[r] = alpha;
    }
    __syncthreads();
    {  // O = O exp(m - m_new) + P V
#pragma unroll
      for (int r = 0; r < kRows; ++r) {
        const float al = sAlpha[r];
#pragma unroll
        for (int e = 0; e < kVec; ++e) acc[r][e] *= al;
      }
      for (int jj = key_group; jj < kBlockK; jj += Tr::kKeyGroups) {
        float vf[kVec];
        chunk_to_float<T, kVec>(sV + jj * Tr::kVStride + vchunk * 16, vf);
#pragma unroll
        for (int r = 0; r < kRows; ++r) {
          const float pr = sS[r * kBlockK + jj];
#pragma unroll
          for (int e = 0; e < kVec; ++e) acc[r][e] = fmaf(pr, vf[e], acc[r][e]);
        }
      }
    }
    __syncthreads();  // S is free for the next tile
  }
  cp_async_wait<0>();
  if (lane == 0)
#pragma unroll
    for (int q = 0; q < kRows / 4; ++q) {
      sM[warp + 4 * q] = m_run[q];
      sL[warp + 4 * q] = l_run[q];
    }
  __syncthreads();
  // The key groups' partial O summed through shared memory (the stages are free), then O / l and lse.
  float* sRed = reinterpret_cast<float*>(sKV);  // [kKeyGroups, kRows, DV]
#pragma unroll
  for (int r = 0; r < kRows; ++r)
#pragma unroll
    for (int e = 0; e < kVec; ++e) sRed[(key_group * kRows + r) * DV + vchunk * kVec + e] = acc[r][e];
  __syncthreads();
  for (int idx = tid; idx < rows * DV; idx += Tr::kThreads) {
    const int r = idx / DV, c = idx % DV;
    float sum = 0.f;
#pragma unroll
    for (int kg = 0; kg < Tr::kKeyGroups; ++kg) sum += sRed[(kg * kRows + r) * DV + c];
    store_row<T>(p, cta, r, c, sum, sL[r], sM[r]);
  }
}

}  // namespace flashsim::gpu::decode
