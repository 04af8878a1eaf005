#pragma once
// wgmma helpers of fa3-v1: issuing a tiled wgmma over its K blocks as one asynchronous batch, and the two views
// of a wgmma accumulator the softmax needs (rows x columns, and the same registers as the A operand of the next
// wgmma).
#include <cute/tensor.hpp>

namespace flashsim::gpu::fa3 {

using namespace cute;

// C (+)= A B over every K block of the fragments, issued as one wgmma batch. kZeroInit: C = A B (the first K
// block overwrites C). kWait >= 0: waits until at most kWait batches of this warpgroup are in flight; -1:
// returns with the batch in flight (warpgroup_wait later, before C or a register A is touched).
template <bool kZeroInit, int kWait, class TiledMma, class TA, class TB, class TC>
__device__ __forceinline__ void wgmma_gemm(TiledMma& mma, TA const& tCrA, TB const& tCrB, TC& tCrC) {
  // A register A operand must not be rewritten while the batch reads it: fence it like C.
  constexpr bool kRegA = !is_base_of<GMMA::DescriptorIterator, typename TA::engine_type::iterator>::value;
  warpgroup_fence_operand(tCrC);
  if constexpr (kRegA) warpgroup_fence_operand(const_cast<TA&>(tCrA));
  warpgroup_arrive();
  if constexpr (kZeroInit) mma.accumulate_ = GMMA::ScaleOut::Zero;
  CUTE_UNROLL
  for (int kb = 0; kb < size<2>(tCrA); ++kb) {
    cute::gemm(mma, tCrA(_, _, kb), tCrB(_, _, kb), tCrC);
    mma.accumulate_ = GMMA::ScaleOut::One;
  }
  warpgroup_commit_batch();
  if constexpr (kWait >= 0) warpgroup_wait<kWait>();
  warpgroup_fence_operand(tCrC);
  if constexpr (kRegA) warpgroup_fence_operand(const_cast<TA&>(tCrA));
}

// A wgmma accumulator ((2, 2, V), M, N) as (rows, cols): a thread's values are 2 adjacent columns (mode 0,0) of
// 2 rows 8 apart (mode 0,1), repeated V times 8 columns apart: rows = (2, M), cols = (2, V, N).
template <class Layout>
__device__ __forceinline__ constexpr auto acc_rows_cols(Layout acc) {
  static_assert(rank(acc) == 3 && rank(get<0>(acc)) == 3);
  return make_layout(make_layout(get<0, 1>(acc), get<1>(acc)),
                     make_layout(get<0, 0>(acc), get<0, 2>(acc), get<2>(acc)));
}

// The same accumulator registers, rounded to 16 bits, as the A operand of a wgmma whose K is the accumulator's
// N: A's fragment of a k16 block is (2 columns, 2 rows, 2 halves of 8 columns), i.e. two consecutive V groups.
template <class Layout>
__device__ __forceinline__ constexpr auto acc_as_a_operand(Layout acc) {
  static_assert(rank(acc) == 3 && size<0, 2>(acc) % 2 == 0);
  auto v_split = logical_divide(get<0, 2>(acc), Tile<_2>{});  // (2, V / 2)
  return make_layout(make_layout(get<0, 0>(acc), get<0, 1>(acc), get<0, 0>(v_split)), get<1>(acc),
                     coalesce(make_layout(get<0, 1>(v_split), get<2>(acc))));
}

// Rounds fp32 accumulators to Element pairwise (cvt.rn.bf16x2 / f16x2).
template <class Element, class TensorF, class TensorE>
__device__ __forceinline__ void round_to(TensorF const& src, TensorE& dst) {
  static_assert(decltype(size(src))::value % 2 == 0);
  CUTE_UNROLL
  for (int i = 0; i < size(src); i += 2) {
    dst(i) = Element(src(i));
    dst(i + 1) = Element(src(i + 1));
  }
}

}  // namespace flashsim::gpu::fa3
