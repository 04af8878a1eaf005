#pragma once
// fa3-v1's backward, the two kernels around the main one (fa3_bwd_kernel.cuh):
//   dot_do_o:   D_i = sum_c dO_ic O_ic in fp32 (FlashAttention's dP sum, in lse's layout), a warp a (row, head),
//               d / 32 elements a lane;
//   convert_dq: dQ = scale * dq_accum, rounded to the input dtype, a CTA a (query block, head, sequence): it reads
//               the block in the dQ wgmma's register order (fa3_bwd_traits.h; deterministic: the key blocks'
//               slabs, added in key-block order), puts each register where the wgmma's partition puts it in a
//               shared-memory tile, and stores the tile's rows 16 bytes a thread: whole 32-byte sectors. (The
//               registers' own 4-byte stores wrote half a sector a quad, and the L2 read some half-written
//               sectors back from DRAM: 4% of the accumulator's bytes at b1 h264 n512 d64 on an H200.)
#include <cuda_runtime.h>

#include "fa3_bwd_kernel.cuh"  // query_block_range
#include "fa3_bwd_params.h"
#include "fa3_bwd_traits.h"

namespace flashsim::gpu::fa3 {

template <class Element>
__global__ void flashsim_fa3_bwd_dot_do_o_kernel(const Fa3BwdParams a) {
  const int64_t warp = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
  const int lane = threadIdx.x % 32;
  if (warp >= a.total_q * a.heads_q) return;
  const int64_t row = warp / a.heads_q;  // packed query row
  const int h = static_cast<int>(warp % a.heads_q);
  const int64_t base = warp * a.head_dim;
  const auto* dout = static_cast<const Element*>(a.dout) + base;
  const auto* o = static_cast<const Element*>(a.o) + base;
  float sum = 0.f;
  for (int c = lane; c < a.head_dim; c += 32) sum += static_cast<float>(dout[c]) * static_cast<float>(o[c]);
  for (int off = 16; off > 0; off /= 2) sum += __shfl_xor_sync(0xffffffff, sum, off);
  if (lane != 0) return;
  // lse's layout: [heads_q, total_q] with variable lengths, else [batch, heads_q, seqlen_q].
  int64_t at;
  if (a.varlen) {
    at = h * a.total_q + row;
  } else {
    const int64_t b = row / a.seqlen_q, i = row % a.seqlen_q;
    at = (b * a.heads_q + h) * a.seqlen_q + i;
  }
  a.dpsum[at] = sum;
}

template <class Tr>
__global__ void __launch_bounds__(Tr::kMmaThreads) flashsim_fa3_bwd_convert_dq_kernel(const Fa3BwdParams a) {
  using Element = typename Tr::Element;
  constexpr int kBlockM = Tr::kBlockM, kHeadDim = Tr::kHeadDim;
  const int m = blockIdx.x, h = blockIdx.y, b = blockIdx.z;
  const int64_t off_q = a.varlen ? a.cu_seqlens_q[b] : static_cast<int64_t>(b) * a.seqlen_q;
  const int lq = a.varlen ? a.cu_seqlens_q[b + 1] - static_cast<int>(off_q) : a.seqlen_q;
  if (m * kBlockM >= lq) return;
  // This thread's registers in a block of dq_accum (fa3_bwd_traits.h's sdQ order): float4 t / 32 * (warp's
  // floats / 4) + i / 4 * 32 + t % 32 holds its registers i .. i + 3.
  constexpr int kQuads = kBlockM * kHeadDim / Tr::kMmaThreads / 4;  // float4s a thread
  const int64_t lane_at = threadIdx.x / 32 * (Tr::kDqWarpFloats / 4) + threadIdx.x % 32;
  float4 sum[kQuads];
  const auto add_slab = [&](int slab, bool first) {
    const auto* block =
        reinterpret_cast<const float4*>(a.dq_accum + fa3_dq_accum_block(a, slab, h, off_q, b, m, kBlockM));
    CUTE_UNROLL
    for (int q = 0; q < kQuads; ++q) {
      const float4 v = block[lane_at + q * 32];
      sum[q] = first ? v : make_float4(sum[q].x + v.x, sum[q].y + v.y, sum[q].z + v.z, sum[q].w + v.w);
    }
  };
  if (a.dq_slabs == 1) {
    add_slab(0, true);
  } else {  // deterministic: the slabs of the key blocks that see query block m, in key-block order
    const int lk = a.varlen ? a.cu_seqlens_k[b + 1] - a.cu_seqlens_k[b] : a.seqlen_k;
    bool first = true;
    for (int n = 0; n * Tr::kBlockN < lk; ++n) {
      int m_min, m_max;
      query_block_range<Tr>(a, n, lq, lk, m_min, m_max);
      if (m < m_min || m >= m_max) continue;
      add_slab(n, first);
      first = false;
    }
    if (first)  // no key block sees these rows: dQ = 0
      for (float4& q : sum) q = make_float4(0.f, 0.f, 0.f, 0.f);
  }
  // sdQ: (kBlockM, kHeadDim) rounded, rows padded by 16 bytes (a quad's 4-byte words of 8 rows then fall in 32
  // different banks; rows stay 16-byte aligned). At most 64 x (256 + 8) x 2 = 33 KiB: static shared memory.
  constexpr int kPitch = kHeadDim + 8;
  static_assert(sizeof(Element) == 2, "sdQ: 16-bit elements");
  __shared__ alignas(16) uint16_t sdQ[kBlockM * kPitch];  // raw storage: Element's constructor is not trivial
  typename Tr::TiledMmaDQ mma_dq;
  Tensor tdQcdQ = mma_dq.get_thread_slice(threadIdx.x)
                      .partition_C(make_identity_tensor(Shape<Int<kBlockM>, Int<kHeadDim>>{}));  // (row, col)
  CUTE_UNROLL
  for (int i = 0; i < size(tdQcdQ); i += 4) {
    const float4 v = sum[i / 4];  // registers i .. i + 3
    CUTE_UNROLL
    for (int j = 0; j < 4; j += 2) {  // registers i + j, i + j + 1: columns c, c + 1 of one row
      const Element lo(a.scale * (j == 0 ? v.x : v.z)), hi(a.scale * (j == 0 ? v.y : v.w));
      *reinterpret_cast<uint32_t*>(sdQ + get<0>(tdQcdQ(i + j)) * kPitch + get<1>(tdQcdQ(i + j))) =
          static_cast<uint32_t>(lo.raw()) | (static_cast<uint32_t>(hi.raw()) << 16);
    }
  }
  __syncthreads();
  // gdQ: the block's rows of the sequence, (rows, kHeadDim) at a row stride of heads_q x kHeadDim; 8 elements
  // (16 bytes) a thread a pass, a row's kHeadDim / 8 chunks by consecutive threads.
  constexpr int kChunksPerRow = kHeadDim * static_cast<int>(sizeof(Element)) / 16;
  static_assert(kHeadDim * sizeof(Element) % 16 == 0, "dQ rows: whole 16-byte chunks");
  const int rows = min(kBlockM, lq - m * kBlockM);
  auto* gdQ =
      static_cast<Element*>(a.dq) + ((off_q + static_cast<int64_t>(m) * kBlockM) * a.heads_q + h) * kHeadDim;
  const int64_t row_stride = static_cast<int64_t>(a.heads_q) * kHeadDim;
  for (int c = threadIdx.x; c < rows * kChunksPerRow; c += Tr::kMmaThreads) {
    const int row = c / kChunksPerRow, col = c % kChunksPerRow * 8;
    *reinterpret_cast<uint4*>(gdQ + row * row_stride + col) =
        *reinterpret_cast<const uint4*>(sdQ + row * kPitch + col);
  }
}

}  // namespace flashsim::gpu::fa3
