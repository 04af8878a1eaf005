#pragma once
// Traits of fa3-v1's backward kernel (fa3_bwd_kernel.cuh), from <kHeadDim, kBlockM (Br, query rows a step),
// kBlockN (Bc, key rows a CTA), kStages, Element>. The tile per head dim and why: flashsim/families/fa3.
//
// Work split: one CTA per (key block of kBlockN rows, kv head, batch); with kBlockN = 128 consumer warpgroup w
// owns key rows [64 w, 64 w + 64) for the whole kernel: its dK and dV accumulate in registers over every query
// block of every query head of the kv head's group. A step (one query block of one head):
//   S^T  = K Q^T      [64 keys, Br]   wgmma SS (K and Q K-major in shared memory)
//   dP^T = V dO^T     [64 keys, Br]   wgmma SS
//   P^T  = exp(S^T scale - lse), dS^T = P^T o (dP^T - D)             registers
//   dV  += P^T dO     [64 keys, d]    wgmma RS (P^T from registers, dO^T read MN-major)
//   dK  += dS^T Q     [64 keys, d]    wgmma RS
//   dQ   = dS K       [Br, d / 2]     wgmma SS, a warpgroup each half of d: dS goes through shared memory
//                                     (both warpgroups' key rows), read MN-major; then each warp stores its dQ
//                                     registers to sdQ and adds them to dq_accum with a bulk reduce
//
// kSplitHeadDim (kBlockN = 64: d256, and a softcapped d128): dK and dV of 64 keys x 256 would be 256 fp32
// registers a thread in one warpgroup, so both warpgroups take the same 64 keys and split the rest: warpgroup w
// computes S^T and dP^T for query columns [Br/2 w, Br/2 (w + 1)) (wgmma N = Br / 2) and dV, dK, dQ for head-dim
// columns [d/2 w, d/2 (w + 1)): 64 + 64 + 64 = 192 fp32 at most at d256. dV and dK then need P^T and dS^T of every
// query, so both go through shared memory (sP beside sdS, read K-major: wgmma SS).
//
// Shared memory: sK, sV [Bc, d] (once); sQ, sdO [Br, d, kStages] (two TMA pipelines); sdS [Br, Bc] (16-bit,
// written by the consumers, MN-major for the dQ wgmma); sdQ [Br x d] fp32 in the dQ registers' order, dq_accum's
// (fa3_bwd_params.h): consumer warp w's 4 KB (d128) from w * kDqWarpFloats, its register i of lane l at
// (i / 4) * 128 + 4 l + i % 4 within (a warp's 16-byte stores side by side: no bank conflict).
#include <cutlass/arch/barrier.h>

#include <cute/tensor.hpp>
#include <cutlass/pipeline/pipeline.hpp>

#include "fa3_fwd_traits.h"  // SmemAtomKMajor

namespace flashsim::gpu::fa3 {

using namespace cute;

template <int kHeadDim_, int kBlockM_, int kBlockN_, int kStages_, class Element_>
struct Fa3BwdTraits {
  using Element = Element_;
  static constexpr int kHeadDim = kHeadDim_;
  static constexpr int kBlockM = kBlockM_;  // query rows a step
  static constexpr int kBlockN = kBlockN_;  // key rows a CTA
  static constexpr int kStages = kStages_;
  static constexpr bool kSplitHeadDim = kBlockN == 64;  // both warpgroups on the same 64 keys (above)
  static constexpr int kConsumerWarpgroups = 2;
  static constexpr int kMmaThreads = kConsumerWarpgroups * 128;
  static constexpr int kThreads = kMmaThreads + 128;
  static_assert(kBlockN == 64 * kConsumerWarpgroups || kSplitHeadDim, "a warpgroup's 64 key rows: wgmma's M");
  static_assert(kBlockM == 64, "dQ = dS K is one wgmma M of 64 query rows");

  // Warpgroups stacked along the keys (M), or side by side along N (the queries of S^T, the head dim of dK, dV).
  using WarpgroupsLayout = std::conditional_t<kSplitHeadDim, Layout<Shape<_1, Int<kConsumerWarpgroups>, _1>>,
                                              Layout<Shape<Int<kConsumerWarpgroups>, _1, _1>>>;
  static constexpr int kSdPN =
      kSplitHeadDim ? kBlockM / kConsumerWarpgroups : kBlockM;  // S^T's N a warpgroup
  static constexpr int kDkvN =
      kSplitHeadDim ? kHeadDim / kConsumerWarpgroups : kHeadDim;  // dK's N a warpgroup
  // S^T and dP^T: M = keys, N = Br (or its half), K = d.
  using TiledMmaSdP = decltype(make_tiled_mma(
      GMMA::ss_op_selector<Element, Element, float, Shape<_64, Int<kSdPN>, Int<kHeadDim>>>(),
      WarpgroupsLayout{}));
  // dV and dK: M = keys, N = d (or its half), K = Br; B = dO^T / Q^T MN-major; A = P^T / dS^T from registers,
  // or (kSplitHeadDim) from sP / sdS, the query index contiguous (K-major).
  using TiledMmaDKV = decltype(make_tiled_mma(
      std::conditional_t<
          kSplitHeadDim,
          decltype(GMMA::ss_op_selector<Element, Element, float, Shape<_64, Int<kDkvN>, Int<kBlockM>>,
                                        GMMA::Major::K, GMMA::Major::MN>()),
          decltype(GMMA::rs_op_selector<Element, Element, float, Shape<_64, Int<kDkvN>, Int<kBlockM>>,
                                        GMMA::Major::K, GMMA::Major::MN>())>{},
      WarpgroupsLayout{}));
  // dQ: M = Br, N = d (a warpgroup each half), K = Bc; A = dS MN-major (query index contiguous), B = K^T MN-major.
  using TiledMmaDQ = decltype(make_tiled_mma(
      GMMA::ss_op_selector<Element, Element, float, Shape<Int<kBlockM>, Int<kHeadDim / 2>, Int<kBlockN>>,
                           GMMA::Major::MN, GMMA::Major::MN>(),
      Layout<Shape<_1, Int<kConsumerWarpgroups>, _1>>{}));

  using SmemLayoutK =
      decltype(tile_to_shape(SmemAtomKMajor<Element, kHeadDim>{}, Shape<Int<kBlockN>, Int<kHeadDim>>{}));
  using SmemLayoutV = SmemLayoutK;
  using SmemLayoutQ = decltype(tile_to_shape(SmemAtomKMajor<Element, kHeadDim>{},
                                             Shape<Int<kBlockM>, Int<kHeadDim>, Int<kStages>>{}));
  using SmemLayoutDO = SmemLayoutQ;
  // Q^T, dO^T (d, Br, stages): the same bytes, the query index fastest in the index order.
  using SmemLayoutQt = decltype(composition(
      SmemLayoutQ{},
      make_ordered_layout(Shape<Int<kHeadDim>, Int<kBlockM>, Int<kStages>>{}, Step<_2, _1, _3>{})));
  using SmemLayoutDOt = SmemLayoutQt;
  // K^T (d, Bc) for dQ's B.
  using SmemLayoutKt = decltype(composition(
      SmemLayoutK{}, make_ordered_layout(Shape<Int<kHeadDim>, Int<kBlockN>>{}, Step<_2, _1>{})));
  // dS (Br, Bc), query index contiguous (MN-major, 128-byte swizzle: Br = 64 16-bit elements), and dS^T (Bc, Br)
  // over the same bytes, as the S^T accumulator writes it.
  using SmemLayoutDS =
      decltype(tile_to_shape(GMMA::Layout_MN_SW128_Atom<Element>{}, Shape<Int<kBlockM>, Int<kBlockN>>{}));
  using SmemLayoutDSt = decltype(composition(
      SmemLayoutDS{}, make_layout(Shape<Int<kBlockN>, Int<kBlockM>>{}, Stride<Int<kBlockM>, _1>{})));

  using PipelineQ = cutlass::PipelineTmaAsync<kStages>;
  using PipelineState = cutlass::PipelineState<kStages>;

  struct SharedStorage {
    alignas(1024) cute::array_aligned<Element, cute::cosize_v<SmemLayoutK>> k;
    alignas(1024) cute::array_aligned<Element, cute::cosize_v<SmemLayoutV>> v;
    alignas(1024) cute::array_aligned<Element, cute::cosize_v<SmemLayoutQ>> q;
    alignas(1024) cute::array_aligned<Element, cute::cosize_v<SmemLayoutDO>> dout;
    alignas(1024) cute::array_aligned<Element, cute::cosize_v<SmemLayoutDS>> ds;
    // P (kSplitHeadDim), as sdS; else a placeholder (P stays in registers).
    alignas(1024) cute::array_aligned<Element, kSplitHeadDim ? cute::cosize_v<SmemLayoutDS> : 8> p;
    alignas(128) cute::array_aligned<float, kBlockM * kHeadDim> dq;  // 16-byte aligned for the bulk reduce
    typename PipelineQ::SharedStorage pipeline_q;
    typename PipelineQ::SharedStorage pipeline_do;
    alignas(8) uint64_t barrier_kv;  // K and V landed
  };
  static constexpr int kSmemBytes = sizeof(SharedStorage);
  static constexpr uint32_t kTmaBytesKV = 2 * kBlockN * kHeadDim * sizeof(Element);
  static constexpr uint32_t kTmaBytesQ = kBlockM * kHeadDim * sizeof(Element);
  static constexpr int kDqWarpFloats = kBlockM * kHeadDim / (kMmaThreads / 32);  // a consumer warp's dQ
  static constexpr uint32_t kDqWarpBytes = kDqWarpFloats * sizeof(float);
  static_assert(kDqWarpFloats % (4 * 32) == 0, "sdQ: whole 16-byte stores a lane");
  // Named barriers (0 is __syncthreads'; fa3_fwd_kernel.cuh's 1, 2 are the forward's): they order the consumers'
  // dS stores around the dQ wgmmas.
  static constexpr int kBarrierDsFree = 3, kBarrierDsReady = 4;

  // setmaxnreg: the launch gives each thread 168 (65536 / 384, rounded down to 8), 3 x 168 = 24 + 2 x 240; a
  // consumer's increase waits until the producer's decrease has freed the registers, so the sum may not exceed
  // it (32 + 2 x 240 hangs the consumers).
  static constexpr int kProducerRegs = 24;
  static constexpr int kConsumerRegs = 240;
};

}  // namespace flashsim::gpu::fa3
