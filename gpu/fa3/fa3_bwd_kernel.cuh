#pragma once
// fa3-v1's backward main kernel: FlashAttention's backward on Hopper, one CTA per (key block, kv head, batch),
// warp-specialized (fa3_bwd_traits.h has the step's five wgmmas and the shared memory):
//
//   producer warpgroup (24 registers)               consumer warpgroups 1, 2 (240 registers, 64 key rows each,
//                                                   or the same 64 split by queries and head dim: d256 and a
//                                                   softcapped d128)
//   --------------------------------                -----------------------------------------------------------
//   TMA K, V -> sK, sV (barrier_kv)                 wait barrier_kv
//   for each query head h of the kv head's group:   for each (h, query block m), as the producer:
//     for each query block m that sees the keys:      S^T = K Q^T, dP^T = V dO^T (async); lse, D from global
//       acquire Q stage, TMA Q (full_q)               P^T = exp(S^T - lse), masked; dS^T = P^T (dP^T - D)
//       acquire dO stage, TMA dO (full_do)            dV += P^T dO, dK += dS^T Q (async, P and dS from registers)
//                                                     [both warpgroups] dS^T -> sdS; dQ = dS K (half of d each)
//                                                     release Q and dO stages; each warp: dQ -> its part of sdQ,
//                                                     dq_accum += it (a bulk reduce, asynchronous)
//                                                   dK *= scale; store dK, dV
//
// dQ's partial sums go to an fp32 accumulator in the workspace, added by the L2 (cp.reduce.async.bulk: not
// deterministic, the order of the additions changes run to run) while the consumers go on with the next step;
// or, deterministic (dq_slabs > 1), each key block's to a slab of its own (cp.async.bulk), which convert_dq sums
// in key-block order. fa3_bwd_rowwise.cuh's kernels compute D before and round dQ after.
#include <cuda_runtime.h>
#include <cutlass/arch/barrier.h>
#include <cutlass/arch/reg_reconfig.h>
#include <cutlass/cutlass.h>

#include <cuda/ptx>  // cp_reduce_async_bulk, cp_async_bulk (CuTe 4.2 has the tensor forms only)
#include <cute/tensor.hpp>
#include <cutlass/pipeline/pipeline.hpp>

#include "fa3_bwd_params.h"
#include "fa3_bwd_traits.h"
#include "fa3_fwd_kernel.cuh"  // named barriers
#include "fa3_mask.cuh"
#include "fa3_wgmma.cuh"

namespace flashsim::gpu::fa3 {

template <class Tr>
struct Fa3BwdKernelParams {
  using Element = typename Tr::Element;
  using GmemLayout = Layout<Shape<int, Int<Tr::kHeadDim>, int>, Stride<int64_t, _1, int64_t>>;
  using GmemTensor = decltype(make_tensor(make_gmem_ptr(static_cast<Element const*>(nullptr)), GmemLayout{}));
  using TmaKV =
      decltype(make_tma_copy(SM90_TMA_LOAD{}, std::declval<GmemTensor>(), typename Tr::SmemLayoutK{},
                             Shape<Int<Tr::kBlockN>, Int<Tr::kHeadDim>>{}, _1{}));
  using TmaQ = decltype(make_tma_copy(SM90_TMA_LOAD{}, std::declval<GmemTensor>(),
                                      take<0, 2>(typename Tr::SmemLayoutQ{}),
                                      Shape<Int<Tr::kBlockM>, Int<Tr::kHeadDim>>{}, _1{}));
  Fa3BwdParams a;
  TmaKV tma_k, tma_v;
  TmaQ tma_q, tma_do;
};

// The query blocks [m_min, m_max) that see key block n (bottom-right aligned windows), in a sequence of lq
// queries and lk keys.
template <class Tr>
__device__ __forceinline__ void query_block_range(const Fa3BwdParams& a, int n, int lq, int lk, int& m_min,
                                                  int& m_max) {
  const int num_m = (lq + Tr::kBlockM - 1) / Tr::kBlockM;
  m_min = 0;
  m_max = num_m;
  if (a.window_right >= 0) {  // query i sees key j only if j <= i + lk - lq + right
    const int first_row = n * Tr::kBlockN - lk + lq - a.window_right;
    m_min = first_row <= 0 ? 0 : first_row / Tr::kBlockM;
  }
  if (a.window_left >= 0) {  // ... and j >= i + lk - lq - left
    const int last_row = n * Tr::kBlockN + Tr::kBlockN - 1 - lk + lq + a.window_left;
    m_max = last_row < 0 ? 0 : min(num_m, last_row / Tr::kBlockM + 1);
  }
}

template <class Tr>
__device__ __forceinline__ bool bwd_block_needs_mask(const Fa3BwdParams& a, int m, int n, int lq, int lk) {
  const int first_row = m * Tr::kBlockM, last_row = first_row + Tr::kBlockM - 1;
  const int first_col = n * Tr::kBlockN, last_col = first_col + Tr::kBlockN - 1;
  return last_row >= lq || last_col >= lk ||
         (a.window_right >= 0 && last_col > first_row + lk - lq + a.window_right) ||
         (a.window_left >= 0 && first_col < last_row + lk - lq - a.window_left);
}

// kSoftcap: the forward's score was s' = c tanh(scale s / c): P = exp(s' - lse), and dS takes ds'/ds.
template <class Tr, bool kSoftcap>
__global__ void __launch_bounds__(Tr::kThreads, 1)
    flashsim_fa3_bwd_kernel(CUTE_GRID_CONSTANT Fa3BwdKernelParams<Tr> const prm) {
  using Element = typename Tr::Element;
  using PipelineQ = typename Tr::PipelineQ;
  using PipelineState = typename Tr::PipelineState;
  using Barrier = cutlass::arch::ClusterTransactionBarrier;
  constexpr int kBlockM = Tr::kBlockM, kBlockN = Tr::kBlockN, kHeadDim = Tr::kHeadDim;
  const Fa3BwdParams& a = prm.a;

  extern __shared__ __align__(1024) char smem_raw[];
  auto& smem = *reinterpret_cast<typename Tr::SharedStorage*>(smem_raw);

  const int n_block = blockIdx.x, head_kv = blockIdx.y, batch = blockIdx.z;
  const int off_q = a.varlen ? a.cu_seqlens_q[batch] : batch * a.seqlen_q;
  const int off_k = a.varlen ? a.cu_seqlens_k[batch] : batch * a.seqlen_k;
  const int lq = a.varlen ? a.cu_seqlens_q[batch + 1] - off_q : a.seqlen_q;
  const int lk = a.varlen ? a.cu_seqlens_k[batch + 1] - off_k : a.seqlen_k;
  if (n_block * kBlockN >= lk) return;  // past a shorter sequence: no key rows here
  int m_min, m_max;
  query_block_range<Tr>(a, n_block, lq, lk, m_min, m_max);
  const int steps = m_max > m_min ? (m_max - m_min) * a.group : 0;
  // Step -> (query head, query block). The key blocks of a head start at different query blocks (rotated by
  // n_block), so the CTAs that run at once add into different rows of dq_accum instead of queueing on the same
  // ones.
  const auto step_head = [&](int step) { return head_kv * a.group + step / (m_max - m_min); };
  const auto step_block = [&](int step) { return m_min + (step + n_block) % (m_max - m_min); };

  const int warp_group = cutlass::canonical_warp_group_idx();
  typename PipelineQ::Params pipe_params;
  pipe_params.transaction_bytes = Tr::kTmaBytesQ;
  pipe_params.role =
      warp_group == 0 ? PipelineQ::ThreadCategory::Producer : PipelineQ::ThreadCategory::Consumer;
  pipe_params.is_leader = threadIdx.x == 0;
  pipe_params.num_consumers = Tr::kMmaThreads;
  if (threadIdx.x == 0) Barrier::init(&smem.barrier_kv, 1);
  PipelineQ pipeline_q(smem.pipeline_q, pipe_params, Shape<_1, _1, _1>{});
  PipelineQ pipeline_do(smem.pipeline_do, pipe_params, Shape<_1, _1, _1>{});
  cutlass::arch::fence_barrier_init();
  __syncthreads();

  Tensor sK = make_tensor(make_smem_ptr(smem.k.data()), typename Tr::SmemLayoutK{});       // (Bc, d)
  Tensor sV = make_tensor(make_smem_ptr(smem.v.data()), typename Tr::SmemLayoutV{});       // (Bc, d)
  Tensor sQ = make_tensor(make_smem_ptr(smem.q.data()), typename Tr::SmemLayoutQ{});       // (Br, d, stages)
  Tensor sdO = make_tensor(make_smem_ptr(smem.dout.data()), typename Tr::SmemLayoutDO{});  // (Br, d, stages)

  if (warp_group == 0) {  // ---------------------------------------------------------------- producer
    cutlass::arch::warpgroup_reg_dealloc<Tr::kProducerRegs>();
    if (threadIdx.x != 0 || steps == 0) return;
    Tensor mK =
        prm.tma_k.get_tma_tensor(make_shape(static_cast<int>(a.total_k), Int<kHeadDim>{}, a.heads_kv));
    Tensor mV =
        prm.tma_v.get_tma_tensor(make_shape(static_cast<int>(a.total_k), Int<kHeadDim>{}, a.heads_kv));
    Tensor mQ = prm.tma_q.get_tma_tensor(make_shape(static_cast<int>(a.total_q), Int<kHeadDim>{}, a.heads_q));
    Tensor mdO =
        prm.tma_do.get_tma_tensor(make_shape(static_cast<int>(a.total_q), Int<kHeadDim>{}, a.heads_q));
    Tensor gK = local_tile(domain_offset(make_coord(off_k, _0{}), mK(_, _, head_kv)),
                           Shape<Int<kBlockN>, Int<kHeadDim>>{}, make_coord(n_block, _0{}));
    Tensor gV = local_tile(domain_offset(make_coord(off_k, _0{}), mV(_, _, head_kv)),
                           Shape<Int<kBlockN>, Int<kHeadDim>>{}, make_coord(n_block, _0{}));
    auto [tKgK, tKsK] =
        tma_partition(prm.tma_k, _0{}, Layout<_1>{}, group_modes<0, 2>(sK), group_modes<0, 2>(gK));
    auto [tVgV, tVsV] =
        tma_partition(prm.tma_v, _0{}, Layout<_1>{}, group_modes<0, 2>(sV), group_modes<0, 2>(gV));
    Barrier::arrive_and_expect_tx(&smem.barrier_kv, Tr::kTmaBytesKV);
    copy(prm.tma_k.with(smem.barrier_kv, 0), tKgK, tKsK);
    copy(prm.tma_v.with(smem.barrier_kv, 0), tVgV, tVsV);
    PipelineState write_q = cutlass::make_producer_start_state<PipelineQ>();
    PipelineState write_do = cutlass::make_producer_start_state<PipelineQ>();
    for (int step = 0; step < steps; ++step) {
      const int h = step_head(step), m = step_block(step);
      // gQ, gdO (Br, d, query blocks) of this sequence and head.
      Tensor gQ = local_tile(domain_offset(make_coord(off_q, _0{}), mQ(_, _, h)),
                             Shape<Int<kBlockM>, Int<kHeadDim>>{}, make_coord(_, _0{}));
      Tensor gdO = local_tile(domain_offset(make_coord(off_q, _0{}), mdO(_, _, h)),
                              Shape<Int<kBlockM>, Int<kHeadDim>>{}, make_coord(_, _0{}));
      auto [tQgQ, tQsQ] =
          tma_partition(prm.tma_q, _0{}, Layout<_1>{}, group_modes<0, 2>(sQ), group_modes<0, 2>(gQ));
      auto [tdOgdO, tdOsdO] =
          tma_partition(prm.tma_do, _0{}, Layout<_1>{}, group_modes<0, 2>(sdO), group_modes<0, 2>(gdO));
      pipeline_q.producer_acquire(write_q);
      copy(prm.tma_q.with(*pipeline_q.producer_get_barrier(write_q), 0), tQgQ(_, m),
           tQsQ(_, write_q.index()));
      ++write_q;
      pipeline_do.producer_acquire(write_do);
      copy(prm.tma_do.with(*pipeline_do.producer_get_barrier(write_do), 0), tdOgdO(_, m),
           tdOsdO(_, write_do.index()));
      ++write_do;
    }
    return;
  }

  // ------------------------------------------------------------------------------------------------ consumers
  cutlass::arch::warpgroup_reg_alloc<Tr::kConsumerRegs>();
  const int tidx = threadIdx.x - 128;
  const int warp_idx = tidx / 32, lane = tidx % 32;  // consumer warp 0 .. 7
  typename Tr::TiledMmaSdP mma_sdp;
  typename Tr::TiledMmaDKV mma_dkv;
  typename Tr::TiledMmaDQ mma_dq;
  auto thr_sdp = mma_sdp.get_thread_slice(tidx);
  auto thr_dkv = mma_dkv.get_thread_slice(tidx);
  auto thr_dq = mma_dq.get_thread_slice(tidx);
  Tensor sQt = make_tensor(make_smem_ptr(smem.q.data()), typename Tr::SmemLayoutQt{});  // (d, Br, stages)
  Tensor sdOt =
      make_tensor(make_smem_ptr(smem.dout.data()), typename Tr::SmemLayoutDOt{});          // (d, Br, stages)
  Tensor sKt = make_tensor(make_smem_ptr(smem.k.data()), typename Tr::SmemLayoutKt{});     // (d, Bc)
  Tensor sdS = make_tensor(make_smem_ptr(smem.ds.data()), typename Tr::SmemLayoutDS{});    // (Br, Bc)
  Tensor sdSt = make_tensor(make_smem_ptr(smem.ds.data()), typename Tr::SmemLayoutDSt{});  // (Bc, Br)
  Tensor sPt = make_tensor(make_smem_ptr(smem.p.data()), typename Tr::SmemLayoutDSt{});    // (Bc, Br), split

  Tensor tSrK = thr_sdp.partition_fragment_A(sK);  // K's (64 keys, d) slice
  Tensor tSrQ = thr_sdp.partition_fragment_B(sQ);  // (MMA, MMA_N, MMA_K, stages)
  Tensor tPrV = thr_sdp.partition_fragment_A(sV);
  Tensor tPrdO = thr_sdp.partition_fragment_B(sdO);
  Tensor tdVrdOt = thr_dkv.partition_fragment_B(sdOt);  // (MMA, MMA_N, MMA_K, stages)
  Tensor tdKrQt = thr_dkv.partition_fragment_B(sQt);
  Tensor tdQrdS = thr_dq.partition_fragment_A(sdS);
  Tensor tdQrKt = thr_dq.partition_fragment_B(sKt);
  // dS^T registers -> sdS with stmatrix (four 8x8 matrices an instruction, rows of 8 queries: 16 contiguous
  // bytes in the MN-major sdS): a fifth of the instructions of 4-byte stores and their swizzled addresses.
  auto smem_copy_ds = make_tiled_copy_C(Copy_Atom<SM90_U32x4_STSM_N, Element>{}, mma_sdp);
  auto thr_copy_ds = smem_copy_ds.get_thread_slice(tidx);
  Tensor tdSsdSt = thr_copy_ds.partition_D(sdSt);  // where this thread's dS^T values go in shared memory
  Tensor tPsPt = thr_copy_ds.partition_D(sPt);     // ... and its P^T values (kSplitHeadDim)

  Tensor tSrS = partition_fragment_C(mma_sdp, Shape<Int<kBlockN>, Int<kBlockM>>{});    // S^T, then P^T, fp32
  Tensor tdPrdP = partition_fragment_C(mma_sdp, Shape<Int<kBlockN>, Int<kBlockM>>{});  // dP^T, then dS^T
  Tensor tdVrdV = partition_fragment_C(mma_dkv, Shape<Int<kBlockN>, Int<kHeadDim>>{});
  Tensor tdKrdK = partition_fragment_C(mma_dkv, Shape<Int<kBlockN>, Int<kHeadDim>>{});
  Tensor tdQrdQ = partition_fragment_C(mma_dq, Shape<Int<kBlockM>, Int<kHeadDim>>{});
  Tensor rP = make_tensor<Element>(tSrS.layout());
  Tensor rdS = make_tensor<Element>(tdPrdP.layout());
  // dV's and dK's A: P^T and dS^T from registers, or (kSplitHeadDim: every query's) from shared memory.
  auto tdVrP = [&] {
    if constexpr (Tr::kSplitHeadDim)
      return thr_dkv.partition_fragment_A(sPt);
    else
      return make_tensor(rP.data(), acc_as_a_operand(tSrS.layout()));
  }();
  auto tdKrdS = [&] {
    if constexpr (Tr::kSplitHeadDim)
      return thr_dkv.partition_fragment_A(sdSt);
    else
      return make_tensor(rdS.data(), acc_as_a_operand(tdPrdP.layout()));
  }();
  Tensor tdSrdS = thr_copy_ds.retile_S(rdS);  // rdS as the stmatrix copy's source
  Tensor tPrP = thr_copy_ds.retile_S(rP);
  Tensor tSrS_rc = make_tensor(tSrS.data(), acc_rows_cols(tSrS.layout()));        // (keys, queries)
  Tensor tdPrdP_rc = make_tensor(tdPrdP.data(), acc_rows_cols(tdPrdP.layout()));  // (keys, queries)
  Tensor tScS = thr_sdp.partition_C(make_identity_tensor(Shape<Int<kBlockN>, Int<kBlockM>>{}));
  Tensor tScS_rc = make_tensor(tScS.data(), acc_rows_cols(tScS.layout()));  // (key, query) of each register
  Tensor tdKVcdKV = thr_dkv.partition_C(make_identity_tensor(Shape<Int<kBlockN>, Int<kHeadDim>>{}));
  constexpr int kCols = decltype(size<1>(tSrS_rc))::value;  // query columns a thread holds

  constexpr float kLog2e = 1.4426950408889634f;
  clear(tdVrdV);
  clear(tdKrdK);

  if (steps > 0) {
    Barrier::wait(&smem.barrier_kv, 0);
    PipelineState read_q, read_do;
    // lse and D of a step's 64 query rows, two a lane (rows lane and lane + 32; past the sequence: 0), loaded at
    // the end of the step before (their latency under the S^T and dP^T wgmmas); a thread's 16 query columns get
    // theirs by shuffles (4 registers instead of 32 held).
    float lse_lane[2], dpsum_lane[2];
    const auto load_rows = [&](int step) {
      const int h = step_head(step), m = step_block(step);
      CUTE_UNROLL
      for (int half = 0; half < 2; ++half) {
        const int row = m * kBlockM + half * 32 + static_cast<int>(threadIdx.x % 32);
        const int64_t at = a.varlen ? static_cast<int64_t>(h) * a.total_q + off_q + row
                                    : (static_cast<int64_t>(batch) * a.heads_q + h) * a.seqlen_q + row;
        lse_lane[half] = row < lq ? a.lse[at] : 0.f;
        dpsum_lane[half] = row < lq ? a.dpsum[at] : 0.f;
      }
    };
    load_rows(0);
    for (int step = 0; step < steps; ++step) {
      const int h = step_head(step), m = step_block(step);
      const auto of_column = [&](const float(&v)[2], int c) {  // the value of this thread's query column c
        const int col = get<1>(tScS_rc(0, c));
        return __shfl_sync(0xffffffff, col < 32 ? v[0] : v[1], col % 32);
      };
      pipeline_q.consumer_wait(read_q);
      wgmma_gemm<true, -1>(mma_sdp, tSrK, tSrQ(_, _, _, read_q.index()), tSrS);  // S^T = K Q^T
      pipeline_do.consumer_wait(read_do);
      wgmma_gemm<true, -1>(mma_sdp, tPrV, tPrdO(_, _, _, read_do.index()), tdPrdP);  // dP^T = V dO^T
      warpgroup_wait<1>();
      warpgroup_fence_operand(tSrS);
      // A row that saw no key (lse = -inf) has P = 0 everywhere: +inf makes every exponent -inf. Once a lane,
      // before the shuffles hand the values to the columns.
      CUTE_UNROLL
      for (int half = 0; half < 2; ++half)
        lse_lane[half] = lse_lane[half] == -CUDART_INF_F ? CUDART_INF_F : lse_lane[half];
      // P = exp(s scale - lse), formed as fma(s, scale, -lse) then times log2 e (as fa2-v1): scores and lse of
      // several thousand keep fp32's error of the difference, not of each term. A block the mask touches selects
      // -inf for the keys a query does not see (no branch: ex2(-inf) = 0); the others (most) skip the test.
      // With a softcap the score is s' = c t, t = tanh(scale s / c) = 1 - 2 / (e^2x + 1) by ex2 and a reciprocal
      // (the exponent kept under 64: 2 / 2^64 is 0 to fp32 beside 1), and P = exp(s' - lse).
      const float k2 = kSoftcap ? 2.f * kLog2e * a.scale / a.softcap : 0.f;  // 2 x log2 e, x = scale s / c
      const auto exponent = [&](float sc, float lse) {                       // log2 P
        if constexpr (kSoftcap)
          return (a.softcap * (1.f - __fdividef(2.f, exp2_approx(fminf(sc * k2, 64.f)) + 1.f)) - lse) *
                 kLog2e;
        else
          return fmaf(sc, a.scale, -lse) * kLog2e;
      };
      if (bwd_block_needs_mask<Tr>(a, m, n_block, lq, lk)) {
        const int key0 = n_block * kBlockN + get<0>(tScS_rc(0, 0));  // the thread's first key
        CUTE_UNROLL
        for (int c = 0; c < kCols; ++c) {
          const float lse = of_column(lse_lane, c);
          const int row = m * kBlockM + get<1>(tScS_rc(0, c));  // the query; none past the sequence
          const VisibleKeys v =
              row < lq ? visible_keys(a.window_left, a.window_right, row, lq, lk) : VisibleKeys{0, 0};
          const int lo = v.lo - key0, hi = v.hi - key0;  // its keys, relative to the thread's first key
          CUTE_UNROLL
          for (int r = 0; r < size<0>(tSrS_rc); ++r) {
            const int at = get<0>(tScS_rc(r, 0)) - get<0>(tScS_rc(0, 0));  // compile-time once unrolled
            const float x = exponent(tSrS_rc(r, c), lse);
            tSrS_rc(r, c) = exp2_approx(at >= lo && at < hi ? x : -CUDART_INF_F);
          }
        }
      } else {
        CUTE_UNROLL
        for (int c = 0; c < kCols; ++c) {
          const float lse = of_column(lse_lane, c);
          CUTE_UNROLL
          for (int r = 0; r < size<0>(tSrS_rc); ++r)
            tSrS_rc(r, c) = exp2_approx(exponent(tSrS_rc(r, c), lse));
        }
      }
      round_to<Element>(tSrS, rP);
      if constexpr (kSoftcap) {
        // tSrS = P (1 - t^2), t recovered from P itself (s' = ln P + lse), so that no array of t lives across the
        // rounding (one spilled 92 .. 180 bytes at d128): dS below is P (dP - D) ds'/ds, the scale applied at the
        // end, as without a cap.
        const float inv_c = 1.f / a.softcap;
        CUTE_UNROLL
        for (int c = 0; c < kCols; ++c) {
          const float lse = of_column(lse_lane, c);
          CUTE_UNROLL
          for (int r = 0; r < size<0>(tSrS_rc); ++r) {
            const float p = tSrS_rc(r, c);
            const float t = (__log2f(p) * (1.f / kLog2e) + lse) * inv_c;  // s' / c
            tSrS_rc(r, c) = p > 0.f ? p * (1.f - t * t) : 0.f;
          }
        }
      }
      if constexpr (Tr::kSplitHeadDim) {  // P^T -> sP, once the other warpgroup's last step has read it
        named_barrier_sync(Tr::kBarrierDsFree, Tr::kMmaThreads);
        copy(smem_copy_ds, tPrP, tPsPt);
      }
      warpgroup_wait<0>();
      warpgroup_fence_operand(tdPrdP);
      CUTE_UNROLL
      for (int c = 0; c < kCols; ++c) {
        const float dpsum = of_column(dpsum_lane, c);
        CUTE_UNROLL
        for (int r = 0; r < size<0>(tdPrdP_rc); ++r)
          tdPrdP_rc(r, c) = tSrS_rc(r, c) * (tdPrdP_rc(r, c) - dpsum);  // dS = P (dP - D)
      }
      round_to<Element>(tdPrdP, rdS);
      if constexpr (!Tr::kSplitHeadDim) {
        wgmma_gemm<false, -1>(mma_dkv, tdVrP, tdVrdOt(_, _, _, read_do.index()), tdVrdV);  // dV += P^T dO
        wgmma_gemm<false, -1>(mma_dkv, tdKrdS, tdKrQt(_, _, _, read_q.index()), tdKrdK);   // dK += dS^T Q
        // dS^T -> sdS, once the other warpgroup's previous dQ wgmma is done reading it.
        named_barrier_sync(Tr::kBarrierDsFree, Tr::kMmaThreads);
      }
      copy(smem_copy_ds, tdSrdS, tdSsdSt);
      cutlass::arch::fence_view_async_shared();  // ordinary stores, read next by wgmma (the async proxy)
      named_barrier_sync(Tr::kBarrierDsReady, Tr::kMmaThreads);
      if constexpr (Tr::kSplitHeadDim) {  // every query's P^T and dS^T from shared memory, this half of d
        wgmma_gemm<false, -1>(mma_dkv, tdVrP, tdVrdOt(_, _, _, read_do.index()), tdVrdV);  // dV += P^T dO
        wgmma_gemm<false, -1>(mma_dkv, tdKrdS, tdKrQt(_, _, _, read_q.index()), tdKrdK);   // dK += dS^T Q
      }
      wgmma_gemm<true, -1>(mma_dq, tdQrdS, tdQrKt, tdQrdQ);  // dQ = dS K, this warpgroup's half of d
      warpgroup_wait<0>();
      warpgroup_fence_operand(tdVrdV);
      warpgroup_fence_operand(tdKrdK);
      warpgroup_fence_operand(tdQrdQ);
      pipeline_q.consumer_release(read_q);
      ++read_q;
      pipeline_do.consumer_release(read_do);
      ++read_do;
      // dq_accum block += dQ (fp32, unscaled: the convert kernel applies the scale once). Each warp stores its
      // dQ registers to its 4 KB of sdQ (the previous step's reduce has read them: its lane 0 waited), and its
      // lane 0 hands them to one bulk reduce, which the L2 adds while the warp goes on.
      float* sdq = smem.dq.data() + warp_idx * Tr::kDqWarpFloats;
      if (lane == 0) tma_store_wait<0>();
      __syncwarp();
      CUTE_UNROLL
      for (int i = 0; i < size(tdQrdQ); i += 4)
        reinterpret_cast<float4*>(sdq)[i / 4 * 32 + lane] =
            make_float4(tdQrdQ(i), tdQrdQ(i + 1), tdQrdQ(i + 2), tdQrdQ(i + 3));
      cutlass::arch::
          fence_view_async_shared();  // ordinary stores, read next by the bulk reduce (async proxy)
      __syncwarp();
      if (lane == 0) {
        float* block = a.dq_accum +
                       fa3_dq_accum_block(a, a.dq_slabs > 1 ? n_block : 0, h, off_q, batch, m, kBlockM) +
                       warp_idx * Tr::kDqWarpFloats;
        const uint32_t bytes = Tr::kDqWarpBytes;  // cp_async_bulk takes the size by reference
        if (a.dq_slabs > 1)  // deterministic: this key block's own slab, summed in order by convert_dq
          cuda::ptx::cp_async_bulk(cuda::ptx::space_global, cuda::ptx::space_shared, block, sdq, bytes);
        else
          cuda::ptx::cp_reduce_async_bulk(cuda::ptx::space_global, cuda::ptx::space_shared, cuda::ptx::op_add,
                                          block, sdq, bytes);
        tma_store_arrive();
      }
      // The next step's lse and D, after this step's shared-memory fences (whose MEMBAR would wait for them).
      if (step + 1 < steps) load_rows(step + 1);
    }
  }

  if (lane == 0) tma_store_wait<0>();  // the last reduce has read sdQ before the CTA's shared memory goes
  // dK = scale dS^T Q (S = scale Q K^T), dV; rows past the sequence are not written.
  CUTE_UNROLL
  for (int i = 0; i < size(tdKrdK); ++i) tdKrdK(i) *= a.scale;
  const int64_t kv_row_stride = static_cast<int64_t>(a.heads_kv) * kHeadDim;
  auto* dk = static_cast<Element*>(a.dk) + static_cast<int64_t>(off_k) * kv_row_stride + head_kv * kHeadDim;
  auto* dv = static_cast<Element*>(a.dv) + static_cast<int64_t>(off_k) * kv_row_stride + head_kv * kHeadDim;
  CUTE_UNROLL
  for (int i = 0; i < size(tdKrdK); i += 2) {  // registers i, i + 1 are columns c, c + 1 of one key row
    const int row = n_block * kBlockN + get<0>(tdKVcdKV(i));
    if (row < lk) {
      const int64_t at = row * kv_row_stride + get<1>(tdKVcdKV(i));
      const Element k0(tdKrdK(i)), k1(tdKrdK(i + 1)), v0(tdVrdV(i)), v1(tdVrdV(i + 1));
      *reinterpret_cast<uint32_t*>(dk + at) =
          static_cast<uint32_t>(k0.raw()) | (static_cast<uint32_t>(k1.raw()) << 16);
      *reinterpret_cast<uint32_t*>(dv + at) =
          static_cast<uint32_t>(v0.raw()) | (static_cast<uint32_t>(v1.raw()) << 16);
    }
  }
}

}  // namespace flashsim::gpu::fa3
