#pragma once
// fa2-v1's backward kernels around the main one (fa2_bwd_kernel.cuh), all memory-bound and row-parallel; grid
// (ceil(seqlen_q / Br), batch, heads_q) with the backward's Br and threads, as FlashAttention-2 launches them:
//   flashsim_fa2_bwd_dot_kernel      D = rowsum(dO o O) and the lse shift (lse; +inf where lse = -inf, so that
//                                    P = exp(S - shift) = 0 on a row that sees nothing) per row; clears the
//                                    rows of the fp32 dQ accumulator (atomic strategy)
//   flashsim_fa2_bwd_convert_kernel  dQ = the accumulator (or the sum of the key blocks' partials, in key-block
//                                    order: deterministic) in the input dtype
//   flashsim_fa2_bwd_dbias_kernel    dbias = dS summed over the bias's broadcast dims, in a fixed order
// Their template arguments start with the main kernel's <d, Br, Bc, warps>, so `flashsim traffic compare` reads
// the tile config from any of the three names.
#include <cuda_runtime.h>

#include <cstdint>

#include "fa2_bwd_params.cuh"
#include "fa2_bwd_traits.h"
#include "fa2_device.cuh"      // pack2
#include "score_pipeline.cuh"  // neg_inf, to_float, from_float

namespace flashsim::gpu::fa2 {

template <int kHeadDim, int kBlockM, int kBlockN, int kNWarps, class Element>
__global__ void __launch_bounds__(kNWarps * 32) flashsim_fa2_bwd_dot_kernel(const Fa2BwdParams prm) {
  using Tr = Fa2BwdTraits<kHeadDim, kBlockM, kBlockN, kNWarps, Element>;
  constexpr int kLanesPerRow = Tr::kThreads / kBlockM;  // 4: a quad of lanes sums a row
  static_assert(kLanesPerRow >= 1 && (kLanesPerRow & (kLanesPerRow - 1)) == 0 && kLanesPerRow <= 32,
                "whole power-of-two lane groups per row");
  const AttentionParams& a = prm.a;
  const int b = static_cast<int>(blockIdx.y), h = static_cast<int>(blockIdx.z);
  const int q0 = static_cast<int>(blockIdx.x) * kBlockM;
  const int lq = seq_len(a, prm.cu_q, a.seqlen_q, b);
  if (q0 >= lq) return;
  const int64_t off_q = seq_offset(a, prm.cu_q, a.seqlen_q, b);
  const int tid = static_cast<int>(threadIdx.x);
  const int r = tid / kLanesPerRow, part = tid % kLanesPerRow;

  // ---- D = rowsum(dO o O) in fp32 and the lse shift; 16-byte loads, kLanesPerRow lanes a row.
  float sum = 0.f;
  const bool in_seq = q0 + r < lq;
  if (in_seq) {
    const int64_t row = (off_q + q0 + r) * prm.q_stride + int64_t{h} * kHeadDim;
    const auto* o = reinterpret_cast<const uint4*>(static_cast<const Element*>(prm.o) + row);
    const auto* dout = reinterpret_cast<const uint4*>(static_cast<const Element*>(prm.dout) + row);
    for (int c = part; c < Tr::kRowChunks; c += kLanesPerRow) {
      const uint4 ov = o[c], dv = dout[c];
      const Element* oe = reinterpret_cast<const Element*>(&ov);
      const Element* de = reinterpret_cast<const Element*>(&dv);
#pragma unroll
      for (int e = 0; e < Tr::kChunk; ++e) sum = fmaf(to_float(oe[e]), to_float(de[e]), sum);
    }
  }
#pragma unroll
  for (int w = 1; w < kLanesPerRow; w *= 2) sum += __shfl_xor_sync(0xffffffffu, sum, w);
  if (in_seq && part == 0) {
    const int64_t at = lse_index(a, prm.cu_q, b, h, q0 + r);
    const float lse = prm.lse[at];
    prm.dsum[at] = sum;
    prm.lse_shift[at] = lse == neg_inf() ? -neg_inf() : lse;  // +inf: P = exp(x - inf) = 0
  }

  // ---- clear this tile's rows of the accumulator (up to the sequence's padded rows), 16-byte stores.
  if (!prm.deterministic) {
    const int rows = min(kBlockM, static_cast<int>((lq + 127) / 128 * 128) - q0);
    float* acc = prm.dq_accum + (accum_row0(a, prm.cu_q, b) + q0) * prm.q_stride + int64_t{h} * kHeadDim;
    constexpr int kVecs = kHeadDim / 4;  // float4s a row
    for (int x = tid; x < rows * kVecs; x += Tr::kThreads)
      reinterpret_cast<float4*>(acc + (x / kVecs) * prm.q_stride)[x % kVecs] =
          make_float4(0.f, 0.f, 0.f, 0.f);
  }
}

// Eight fp32 values (two float4) rounded to the element type and stored by one 16-byte st.global.v4 (PTX:
// from C++, nvcc split the uint4 store into four 4-byte STG in the SASS, whatever the alignment asserted,
// which ncu's L1 store bytes count as 4x the data).
template <class Element>
__device__ inline void store8(Element* dst, float4 lo, float4 hi) {
  asm volatile("st.global.v4.b32 [%0], {%1, %2, %3, %4};\n" ::"l"(dst),
               "r"(detail::pack2<Element>(lo.x, lo.y)), "r"(detail::pack2<Element>(lo.z, lo.w)),
               "r"(detail::pack2<Element>(hi.x, hi.y)), "r"(detail::pack2<Element>(hi.z, hi.w))
               : "memory");
}
__device__ inline float4 add4(float4 a, float4 b) {
  return make_float4(a.x + b.x, a.y + b.y, a.z + b.z, a.w + b.w);
}

template <int kHeadDim, int kBlockM, int kBlockN, int kNWarps, class Element>
__global__ void __launch_bounds__(kNWarps * 32) flashsim_fa2_bwd_convert_kernel(const Fa2BwdParams prm) {
  using Tr = Fa2BwdTraits<kHeadDim, kBlockM, kBlockN, kNWarps, Element>;
  const AttentionParams& a = prm.a;
  const int b = static_cast<int>(blockIdx.y), h = static_cast<int>(blockIdx.z);
  const int q0 = static_cast<int>(blockIdx.x) * kBlockM;
  const int lq = seq_len(a, prm.cu_q, a.seqlen_q, b);
  if (q0 >= lq) return;
  const int lk = seq_len(a, prm.cu_k, a.seqlen_k, b);
  const int64_t off_q = seq_offset(a, prm.cu_q, a.seqlen_q, b);
  const int q_rows = min(kBlockM, lq - q0);
  const float* acc = prm.dq_accum + (accum_row0(a, prm.cu_q, b) + q0) * prm.q_stride + int64_t{h} * kHeadDim;
  Element* dq = static_cast<Element*>(prm.dq) + (off_q + q0) * prm.q_stride + int64_t{h} * kHeadDim;
  constexpr int kChunks = kHeadDim / 8;  // 8-element chunks a row: two float4 of the accumulator, one store
  if (prm.deterministic) {
    // The partials of the key blocks that see this query block, added in key-block order (the main kernel
    // wrote exactly these: queries_seeing and keys_seen agree; block-sparse: those with an active tile).
    int j_lo, j_hi, n_first, n_last;
    keys_seen(a, lq, lk, q0, q0 + q_rows, j_lo, j_hi);
    block_range(j_lo, j_hi, kBlockN, n_first, n_last);
    const int64_t slab = prm.accum_rows * prm.q_stride;
    const uint8_t* plane = block_mask_plane(a, prm.block_mask, b, h);
    for (int x = static_cast<int>(threadIdx.x); x < q_rows * kChunks; x += Tr::kThreads) {
      const int64_t at = (x / kChunks) * prm.q_stride + (x % kChunks) * 8;
      float4 lo = make_float4(0.f, 0.f, 0.f, 0.f), hi = lo;
      for (int nb = n_first; nb < n_last; ++nb) {
        if (!block_mask_tiles(a, plane, q0, q0 + q_rows, nb * kBlockN, min(nb * kBlockN + kBlockN, lk), true))
          continue;  // a pair the block mask skips wrote no partial
        lo = add4(lo, *reinterpret_cast<const float4*>(acc + nb * slab + at));
        hi = add4(hi, *reinterpret_cast<const float4*>(acc + nb * slab + at + 4));
      }
      store8(dq + (x / kChunks) * prm.q_stride + (x % kChunks) * 8, lo, hi);
    }
    return;
  }
  // Atomic strategy: the accumulator's rows of the sequence (the rows past it, the padding the main kernel's
  // unpredicated additions land in, are not read: the sim model bwd_convert_dq_rows).
  for (int x = static_cast<int>(threadIdx.x); x < q_rows * kChunks; x += Tr::kThreads) {
    const int r = x / kChunks;
    const float* src = acc + r * prm.q_stride + (x % kChunks) * 8;
    const float4 lo = *reinterpret_cast<const float4*>(src), hi = *reinterpret_cast<const float4*>(src + 4);
    store8(dq + r * prm.q_stride + (x % kChunks) * 8, lo, hi);
  }
}

// dbias[bb, hh, i, j] = sum over the broadcast dims of dS[b, h, i, j] (b over all of the batch when the bias
// has batch 1, else bb; the same for heads), added in (b, h) order: deterministic. One thread an element.
template <int kHeadDim, int kBlockM, int kBlockN, int kNWarps, class Element>
__global__ void flashsim_fa2_bwd_dbias_kernel(const Fa2BwdParams prm, float* dbias, int bias_batch,
                                              int bias_heads) {
  const AttentionParams& a = prm.a;
  const int64_t plane = int64_t{a.seqlen_q} * a.seqlen_k;
  const int64_t total = int64_t{bias_batch} * bias_heads * plane;
  for (int64_t x = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; x < total;
       x += int64_t{gridDim.x} * blockDim.x) {
    const int64_t ij = x % plane, bh = x / plane;
    const int hh = static_cast<int>(bh % bias_heads), bb = static_cast<int>(bh / bias_heads);
    float s = 0.f;
    for (int b = bias_batch == 1 ? 0 : bb; b < (bias_batch == 1 ? a.batch : bb + 1); ++b)
      for (int h = bias_heads == 1 ? 0 : hh; h < (bias_heads == 1 ? a.heads_q : hh + 1); ++h)
        s += prm.dbias[b * prm.dbias_stride_b + h * prm.dbias_stride_h + ij];
    dbias[x] = s;
  }
}

}  // namespace flashsim::gpu::fa2
