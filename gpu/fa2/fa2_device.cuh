#pragma once
// Device primitives shared by the FA2 kernels (forward and backward): cp.async copies (device/), ldmatrix, mma.sync
// m16n8k16, fp32 -> bf16/fp16 packing, ex2.approx, and the swizzled tile copy of the traits' layout
// (fa2_fwd_traits.h describes it; Fa2BwdTraits uses the same one).
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "cp_async.cuh"

namespace flashsim::gpu::fa2 {

namespace detail {

template <class I>
__device__ __forceinline__ I min_of(I x, I y) {
  return x < y ? x : y;
}
template <class I>
__device__ __forceinline__ I max_of(I x, I y) {
  return x < y ? y : x;
}

// cp.async and its groups (gpu/device/cp_async.cuh).
using ::flashsim::gpu::cp_async_16;
using ::flashsim::gpu::cp_async_4;
using ::flashsim::gpu::cp_async_commit;
using ::flashsim::gpu::cp_async_wait;
using ::flashsim::gpu::smem_addr;

// Four 8x8 b16 matrices from shared memory; lane l gives the row address of matrix l / 8, row l % 8.
__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}
__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t (&r)[4], uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}

// c += a b: m16n8k16, A row-major (4 regs), B "col" (2 regs), fp32 accumulators.
template <class E>
__device__ __forceinline__ void mma16816(float (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1);
template <>
__device__ __forceinline__ void mma16816<__nv_bfloat16>(float (&c)[4], const uint32_t (&a)[4], uint32_t b0,
                                                        uint32_t b1) {
  asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
template <>
__device__ __forceinline__ void mma16816<__half>(float (&c)[4], const uint32_t (&a)[4], uint32_t b0,
                                                 uint32_t b1) {
  asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// Two fp32 values rounded (to nearest even) to the element type and packed: lo in the low 16 bits (the lower
// column of an mma fragment pair).
template <class E>
__device__ __forceinline__ uint32_t pack2(float lo, float hi);
template <>
__device__ __forceinline__ uint32_t pack2<__nv_bfloat16>(float lo, float hi) {
  uint32_t r;
  asm("cvt.rn.bf16x2.f32 %0, %1, %2;\n" : "=r"(r) : "f"(hi), "f"(lo));
  return r;
}
template <>
__device__ __forceinline__ uint32_t pack2<__half>(float lo, float hi) {
  uint32_t r;
  asm("cvt.rn.f16x2.f32 %0, %1, %2;\n" : "=r"(r) : "f"(hi), "f"(lo));
  return r;
}

// The A fragment (m16 x k16, element type) of two adjacent n8 tiles of an mma's fp32 C fragments (c_lo:
// columns 0-7 of the k16 step, c_hi: 8-15): a thread's C elements of a row pair are its A elements of the same
// rows, so one product's accumulators feed the next product with no shuffle (rounded to nearest even).
template <class E>
__device__ __forceinline__ void c_to_a(uint32_t (&a)[4], const float (&c_lo)[4], const float (&c_hi)[4]) {
  a[0] = pack2<E>(c_lo[0], c_lo[1]);  // row g,     columns 2 t4, 2 t4 + 1
  a[1] = pack2<E>(c_lo[2], c_lo[3]);  // row g + 8
  a[2] = pack2<E>(c_hi[0], c_hi[1]);  // row g,     columns 8 + 2 t4, ...
  a[3] = pack2<E>(c_hi[2], c_hi[3]);  // row g + 8
}

// 2^x (MUFU.EX2, relative error ~2^-22); exactly +0 for -inf.
__device__ __forceinline__ float exp2_approx(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
  return y;
}

// Address of logical 16-byte chunk c (compile-time, even) of a row, given the lane's swizzled address of the
// row's chunk 0 or 1 (`addr`, whose bits 4-6 hold (c0 ^ swz(r)) with c0 in {0, 1}): the XOR moves it within
// the row's 128-byte (d96: 64-byte) group, the rest of c is a plain offset (an ldmatrix immediate).
template <class Tr>
__device__ __forceinline__ uint32_t swz_chunk(uint32_t addr, int c) {
  return (addr ^ static_cast<uint32_t>((c & Tr::kSwzMask) * 16)) +
         static_cast<uint32_t>((c & ~Tr::kSwzMask) * 16);
}

// acc[t] += a B_t for every n8 tile t of acc, B read by ldmatrix.trans two tiles at a time: tiles 2p, 2p + 1 from
// logical chunk chunk0 + 2p of the lane's row address `lane` (as swz_chunk), `offset` bytes further (the k16
// step's rows): the backward's dV += P^T dO, dK += dS^T Q and dQ = dS K.
template <class Tr, int kTiles>
__device__ __forceinline__ void mma_trans_b_tiles(float (&acc)[kTiles][4], const uint32_t (&a)[4],
                                                  uint32_t lane, int chunk0, uint32_t offset) {
  static_assert(kTiles % 2 == 0, "n8 tiles in pairs (one ldmatrix.x4.trans)");
#pragma unroll
  for (int p = 0; p < kTiles / 2; ++p) {
    uint32_t b[4];  // b0, b1 of tile 2p; b0, b1 of tile 2p + 1
    ldmatrix_x4_trans(b, swz_chunk<Tr>(lane, chunk0 + 2 * p) + offset);
    mma16816<typename Tr::Element>(acc[2 * p], a, b[0], b[1]);
    mma16816<typename Tr::Element>(acc[2 * p + 1], a, b[2], b[3]);
  }
}

// Copies rows [0, rows) of a tile (row r at g + r * stride) into shared memory in the traits' swizzled layout;
// rows [rows, kRows) are zero-filled without reading global memory. Thread tid copies chunk tid % kRowSlots
// of rows tid / kRowSlots + it * kRowsPerPass through one source pointer stepped by a pass (no per-chunk
// 64-bit offsets kept live across the key loop); shared-memory destinations are compile-time offsets.
template <class Tr, int kRows>
__device__ __forceinline__ void copy_tile(typename Tr::Element* s, const typename Tr::Element* g,
                                          int64_t stride, int rows, int tid) {
  constexpr int kEl = static_cast<int>(sizeof(typename Tr::Element));
  constexpr int kRowsPerPass = Tr::kThreads / Tr::kRowSlots;
  static_assert(kRows % kRowsPerPass == 0, "whole passes");
  const int r0 = tid / Tr::kRowSlots, chunk = tid % Tr::kRowSlots, col = chunk * Tr::kChunk;
  if (Tr::kRowSlots != Tr::kRowChunks && chunk >= Tr::kRowChunks) return;  // d96: 4 idle slots a row
  const int left = rows - r0;  // rows this thread still has to copy
  const typename Tr::Element* src = g + r0 * stride + col;
  const uint32_t dst = smem_addr(s + r0 * Tr::kPitch + (chunk ^ Tr::swz(r0)) * Tr::kChunk);
#pragma unroll
  for (int it = 0; it < kRows / kRowsPerPass; ++it) {
    const bool ok = it * kRowsPerPass < left;
    // row r0 + it * kRowsPerPass = r0 | it * kRowsPerPass (r0 < kRowsPerPass, a power of two): its swizzle
    // is swz(r0) ^ swz(it * kRowsPerPass), the second a compile-time constant (non-zero only for d256).
    const uint32_t flip = static_cast<uint32_t>(Tr::swz(it * kRowsPerPass) * 16);
    cp_async_16((dst ^ flip) + it * kRowsPerPass * Tr::kPitch * kEl, ok ? src : g, ok ? 16 : 0);
    src += kRowsPerPass * stride;
  }
}

}  // namespace detail

}  // namespace flashsim::gpu::fa2
