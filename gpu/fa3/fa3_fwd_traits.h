#pragma once
// Traits of fa3-v1's forward kernel (fa3_fwd_kernel.cuh), all compile-time, from <kHeadDim, kBlockM (Br),
// kBlockN (Bc), kStages, Element>: the CuTe tile shapes, the swizzled shared-memory layouts the TMA writes and
// wgmma reads, the two tiled wgmmas and the pipelines. The tile per head dim and why: flashsim/families/fa3.
//
// Work split: one CTA per (query block of kBlockM rows, head, batch); warpgroup 0 loads (TMA), warpgroups 1
// and 2 each own 64 query rows and run, per key block, S = Q K^T (wgmma, both operands in shared memory),
// the online softmax in registers, and O += P V (wgmma, P from registers, V^T read from shared memory).
//
// Shared memory (one struct, SharedStorage):
//   sQ [kBlockM, d]            loaded once by TMA
//   sK [kBlockN, d, kStages]   K blocks, a TMA pipeline (PipelineTmaAsync) of kStages buffers
//   sV [kBlockN, d, kStages]   V blocks, a second pipeline, so that S of block n waits only for K
// Rows are d contiguous elements, swizzled in 128-byte groups (64-byte groups at d96, whose 192-byte rows are
// not a multiple of 128): the layouts wgmma reads without bank conflicts and TMA writes in one instruction.
// sVt is sV seen as [d, kBlockN]: the B operand of P V, "MN-major" (d contiguous), which wgmma transposes.
#include <cutlass/arch/barrier.h>

#include <cute/tensor.hpp>
#include <cutlass/pipeline/pipeline.hpp>

namespace flashsim::gpu::fa3 {

using namespace cute;

// The swizzled atom of a K-major [rows, d] tile of 16-bit elements: 128-byte swizzle where d is a multiple of
// 64 elements, else 64-byte (d96).
template <class Element, int kHeadDim>
using SmemAtomKMajor = std::conditional_t<kHeadDim % 64 == 0, GMMA::Layout_K_SW128_Atom<Element>,
                                          GMMA::Layout_K_SW64_Atom<Element>>;

template <int kHeadDim_, int kBlockM_, int kBlockN_, int kStages_, class Element_>
struct Fa3FwdTraits {
  using Element = Element_;  // cutlass::bfloat16_t or cutlass::half_t
  static constexpr int kHeadDim = kHeadDim_;
  static constexpr int kBlockM = kBlockM_;
  static constexpr int kBlockN = kBlockN_;
  static constexpr int kStages = kStages_;
  static constexpr int kConsumerWarpgroups = kBlockM / 64;  // wgmma's M is 64 a warpgroup
  static constexpr int kMmaThreads = kConsumerWarpgroups * 128;
  static constexpr int kThreads = kMmaThreads + 128;  // + the producer warpgroup
  static_assert(kBlockM % 64 == 0 && kHeadDim % 32 == 0 && kBlockN % 16 == 0);

  using TileShapeMNK = Shape<Int<kBlockM>, Int<kBlockN>, Int<kHeadDim>>;
  using WarpgroupLayout = Layout<Shape<Int<kConsumerWarpgroups>, _1, _1>>;  // warpgroups stacked along M

  // S = Q K^T: [64, Bc] a warpgroup, K dimension d, A and B K-major in shared memory.
  using TiledMmaQK = decltype(make_tiled_mma(
      GMMA::ss_op_selector<Element, Element, float, Shape<_64, Int<kBlockN>, Int<kHeadDim>>>(),
      WarpgroupLayout{}));
  // O += P V: [64, d] a warpgroup, K dimension Bc; A = P from registers (K-major), B = V^T MN-major.
  using TiledMmaPV = decltype(make_tiled_mma(
      GMMA::rs_op_selector<Element, Element, float, Shape<_64, Int<kHeadDim>, Int<kBlockN>>, GMMA::Major::K,
                           GMMA::Major::MN>(),
      WarpgroupLayout{}));

  using SmemLayoutQ =
      decltype(tile_to_shape(SmemAtomKMajor<Element, kHeadDim>{}, Shape<Int<kBlockM>, Int<kHeadDim>>{}));
  using SmemLayoutK = decltype(tile_to_shape(SmemAtomKMajor<Element, kHeadDim>{},
                                             Shape<Int<kBlockN>, Int<kHeadDim>, Int<kStages>>{}));
  using SmemLayoutV = SmemLayoutK;
  // Vt(j, n, s) = V(n, j, s): the same bytes with the key index fastest in the index order.
  using SmemLayoutVt = decltype(composition(
      SmemLayoutV{},
      make_ordered_layout(Shape<Int<kHeadDim>, Int<kBlockN>, Int<kStages>>{}, Step<_2, _1, _3>{})));

  using PipelineKV = cutlass::PipelineTmaAsync<kStages>;
  using PipelineState = cutlass::PipelineState<kStages>;

  struct SharedStorage {
    alignas(1024) cute::array_aligned<Element, cute::cosize_v<SmemLayoutQ>> q;
    alignas(1024) cute::array_aligned<Element, cute::cosize_v<SmemLayoutK>> k;
    alignas(1024) cute::array_aligned<Element, cute::cosize_v<SmemLayoutV>> v;
    typename PipelineKV::SharedStorage pipeline_k;
    typename PipelineKV::SharedStorage pipeline_v;
    alignas(8) uint64_t barrier_q;  // Q landed (TMA transaction bytes)
    uint64_t barrier_q_empty;       // the consumers' last S = Q K^T of a tile is done: Q's slot is free
  };
  static constexpr int kSmemBytes = sizeof(SharedStorage);
  static constexpr uint32_t kTmaBytesQ = kBlockM * kHeadDim * sizeof(Element);
  static constexpr uint32_t kTmaBytesKV = kBlockN * kHeadDim * sizeof(Element);

  // setmaxnreg budgets (flashsim/families/fa3/instances.h): 128 x (24 + 2 x 240) <= 65536.
  static constexpr int kProducerRegs = 24;
  static constexpr int kConsumerRegs = kConsumerWarpgroups == 2 ? 240 : 160;
};

}  // namespace flashsim::gpu::fa3
