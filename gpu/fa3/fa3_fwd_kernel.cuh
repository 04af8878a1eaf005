#pragma once
// fa3-v1's forward kernel: FlashAttention's forward on Hopper (FlashAttention-3's structure), warp-specialized
// (fa3_fwd_traits.h has the tiles and shared memory). A tile is (query block, head, batch); CTA i runs tiles i,
// i + gridDim.x, ... (one tile a CTA, or persistent: one CTA a SM; flashsim/families/fa3 says which when), or
// the list the launch's balanced walk gives it (Fa3FwdParams::walk: unequal causal or varlen tiles).
//
//   producer warpgroup (24 registers a thread)        consumer warpgroups 1, 2 (240 registers, 64 query rows each)
//   ------------------------------------------        -------------------------------------------------------------
//   per tile:                                         per tile:
//     acquire K stage, TMA K[last] (full_k)             wait barrier_q
//     wait barrier_q_empty (previous tile's Q used)     [turn] S = Q K[last]^T [pass]; softmax -> P
//     TMA Q -> sQ (barrier_q)                           for n = last - 1 .. first:
//     for n = last .. first key block:                    [turn] issue S = Q K[n]^T, O += P V[n + 1] [pass]
//       acquire K stage, TMA K[n] (full_k)                wait S; release K stage (empty_k); last: Q is free
//       acquire V stage, TMA V[n] (full_v)                mask, softmax(S): m, l, rescale; P' = exp(S - m)
//                                                         wait P V; release V stage (empty_v); O *= rescale
//                                                       [turn] O += P V[first] [pass]; O /= l; store O, lse
//
// The softmax of block n runs while the tensor cores multiply P V of block n + 1 (FlashAttention-3's
// intra-warpgroup overlap); [turn] / [pass] are the ping-pong between the consumer warpgroups (named barriers
// 1 and 2), so one warpgroup's softmax runs under the other's GEMMs. Key blocks are walked from the last, so the
// one block a causal row block must mask comes first and the remaining ones run unmasked. Q, K, V are read by
// TMA (one instruction a tile, rows past the tensor's end read as zeros, every key past the sequence masked);
// O and lse are written from registers.
#include <cuda_runtime.h>
#include <cutlass/arch/barrier.h>
#include <cutlass/arch/reg_reconfig.h>
#include <cutlass/cutlass.h>

#include <cute/tensor.hpp>
#include <cutlass/pipeline/pipeline.hpp>

#include "fa3_fwd_params.h"
#include "fa3_fwd_traits.h"
#include "fa3_mask.cuh"
#include "fa3_softmax.cuh"
#include "fa3_wgmma.cuh"

namespace flashsim::gpu::fa3 {

// The kernel's argument: the problem and the three TMA descriptors (passed by value as a __grid_constant__,
// where the TMA unit reads them).
template <class Tr>
struct Fa3FwdKernelParams {
  using Element = typename Tr::Element;
  // q / k / v as (rows, d, heads): rows of all sequences, d contiguous, heads d apart.
  using GmemLayout = Layout<Shape<int, Int<Tr::kHeadDim>, int>, Stride<int64_t, _1, int64_t>>;
  using GmemTensor = decltype(make_tensor(make_gmem_ptr(static_cast<Element const*>(nullptr)), GmemLayout{}));
  using TmaQ = decltype(make_tma_copy(SM90_TMA_LOAD{}, std::declval<GmemTensor>(), typename Tr::SmemLayoutQ{},
                                      Shape<Int<Tr::kBlockM>, Int<Tr::kHeadDim>>{}, _1{}));
  using TmaKV = decltype(make_tma_copy(SM90_TMA_LOAD{}, std::declval<GmemTensor>(),
                                       take<0, 2>(typename Tr::SmemLayoutK{}),
                                       Shape<Int<Tr::kBlockN>, Int<Tr::kHeadDim>>{}, _1{}));
  Fa3FwdParams a;
  TmaQ tma_q;
  TmaKV tma_k, tma_v;
};

// The key blocks [n_min, n_max) that query block m_block sees (bottom-right aligned window of
// flashsim/gpu/params.h), in a sequence of lq queries and lk keys.
template <class Tr>
__device__ __forceinline__ void key_block_range(const Fa3FwdParams& a, int m_block, int lq, int lk,
                                                int& n_min, int& n_max) {
  n_max = (lk + Tr::kBlockN - 1) / Tr::kBlockN;
  const int last_row = min(lq, (m_block + 1) * Tr::kBlockM) - 1;
  if (a.window_right >= 0) {
    const int last_col = last_row + lk - lq + a.window_right;  // the last row's last visible key
    n_max = min(n_max, last_col < 0 ? 0 : last_col / Tr::kBlockN + 1);
  }
  n_min = 0;
  if (a.window_left >= 0) n_min = max(0, m_block * Tr::kBlockM + lk - lq - a.window_left) / Tr::kBlockN;
}

// Whether key block n needs the per-element mask: it runs past the keys, or crosses a window edge of some row.
template <class Tr>
__device__ __forceinline__ bool block_needs_mask(const Fa3FwdParams& a, int m_block, int n, int lq, int lk) {
  const int first_col = n * Tr::kBlockN, last_col = first_col + Tr::kBlockN - 1;
  const int first_row = m_block * Tr::kBlockM, last_row = first_row + Tr::kBlockM - 1;
  return last_col >= lk || (a.window_right >= 0 && last_col > first_row + lk - lq + a.window_right) ||
         (a.window_left >= 0 && first_col < last_row + lk - lq - a.window_left);
}

// softcap(scale s) where a cap is set, then -inf where key j is invisible to query i (rows / cols: the tile
// coordinates of each register, from an identity tensor partitioned as S).
template <class Tr, bool kSoftcap, bool kMask, class TensorS, class TensorC>
__device__ __forceinline__ void score_pipeline(const Fa3FwdParams& a, TensorS& s, TensorC const& coord,
                                               int m_block, int n, int lq, int lk) {
  if constexpr (kSoftcap) {
    const float k = a.scale / a.softcap;
    CUTE_UNROLL
    for (int i = 0; i < size(s); ++i) s(i) = a.softcap * tanhf(s(i) * k);  // s = c tanh(scale s / c)
  }
  if constexpr (kMask) {
    const int col0 = n * Tr::kBlockN + get<1>(coord(0, 0));  // the thread's first column
    CUTE_UNROLL
    for (int r = 0; r < size<0>(s); ++r) {
      const VisibleKeys v =
          visible_keys(a.window_left, a.window_right, m_block * Tr::kBlockM + get<0>(coord(r, 0)), lq, lk);
      const int lo = v.lo - col0, hi = v.hi - col0;  // the row's keys, relative to the thread's first column
      CUTE_UNROLL
      for (int c = 0; c < size<1>(s); ++c) {
        const int at = get<1>(coord(0, c)) - get<1>(coord(0, 0));  // compile-time once unrolled
        if (at < lo || at >= hi) s(r, c) = -CUDART_INF_F;
      }
    }
  }
}

template <class Tr, bool kSoftcap, class TensorS, class TensorC>
__device__ __forceinline__ void score_pipeline_block(const Fa3FwdParams& a, TensorS& s, TensorC const& coord,
                                                     int m_block, int n, int lq, int lk) {
  if (block_needs_mask<Tr>(a, m_block, n, lq, lk))
    score_pipeline<Tr, kSoftcap, true>(a, s, coord, m_block, n, lq, lk);
  else
    score_pipeline<Tr, kSoftcap, false>(a, s, coord, m_block, n, lq, lk);
}

// Consumer warpgroups take turns to issue their wgmmas (FlashAttention-3's ping-pong): warpgroup w waits on
// named barrier 1 + w, issues, then lets the other one go; so one warpgroup's softmax runs while the other's
// GEMMs hold the tensor cores. Barrier 0 is __syncthreads'.
__device__ __forceinline__ void named_barrier_sync(int id, int threads) {
  asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(threads) : "memory");
}
__device__ __forceinline__ void named_barrier_arrive(int id, int threads) {
  asm volatile("bar.arrive %0, %1;" ::"r"(id), "r"(threads) : "memory");
}

// A tile of the persistent schedule: tiles are numbered with the query block fastest, walked from the last
// block of each (head, batch) (the causal rows that see the most keys first), so the CTAs that run at once
// work on few heads and share their K and V in L2.
struct Fa3Tile {
  int m_block, head, batch, off_q, off_k, lq, lk;
};

__device__ __forceinline__ Fa3Tile tile_of(const Fa3FwdParams& a, int t, int num_m) {
  Fa3Tile tile;
  int bh;
  if (a.head_group > 0) {
    const int num_bh = a.heads_q * a.batch, per_group = a.head_group * num_m;
    const int g = t / per_group, in_group = t % per_group;
    const int heads_here = min(a.head_group, num_bh - g * a.head_group);  // the last group may be smaller
    bh = g * a.head_group + in_group % heads_here;
    tile.m_block = num_m - 1 - in_group / heads_here;
  } else {
    bh = t / num_m;
    tile.m_block = num_m - 1 - t % num_m;
  }
  tile.head = bh % a.heads_q;
  tile.batch = bh / a.heads_q;
  tile.off_q = a.varlen ? a.cu_seqlens_q[tile.batch] : tile.batch * a.seqlen_q;
  tile.off_k = a.varlen ? a.cu_seqlens_k[tile.batch] : tile.batch * a.seqlen_k;
  tile.lq = a.varlen ? a.cu_seqlens_q[tile.batch + 1] - tile.off_q : a.seqlen_q;
  tile.lk = a.varlen ? a.cu_seqlens_k[tile.batch + 1] - tile.off_k : a.seqlen_k;
  return tile;
}

template <class Tr, bool kSoftcap>
__global__ void __launch_bounds__(Tr::kThreads, 1)
    flashsim_fa3_fwd_kernel(CUTE_GRID_CONSTANT Fa3FwdKernelParams<Tr> const prm) {
  using Element = typename Tr::Element;
  using PipelineKV = typename Tr::PipelineKV;
  using PipelineState = typename Tr::PipelineState;
  using Barrier = cutlass::arch::ClusterTransactionBarrier;
  constexpr int kBlockM = Tr::kBlockM, kBlockN = Tr::kBlockN, kHeadDim = Tr::kHeadDim;
  const Fa3FwdParams& a = prm.a;

  extern __shared__ __align__(1024) char smem_raw[];
  auto& smem = *reinterpret_cast<typename Tr::SharedStorage*>(smem_raw);

  // CTA i runs tiles i, i + gridDim.x, ...: one tile a CTA, or persistent (one CTA a SM); or, with a balanced
  // walk, its list: entries [k, k_end) of a.walk.
  const int num_m = (a.seqlen_q + kBlockM - 1) / kBlockM;
  const int num_tiles = num_m * a.heads_q * a.batch;
  const int k_first = a.walk ? a.walk[blockIdx.x] : static_cast<int>(blockIdx.x);
  const int k_end = a.walk ? a.walk[blockIdx.x + 1] : num_tiles;
  const int k_step = a.walk ? 1 : static_cast<int>(gridDim.x);

  const int warp_group = cutlass::canonical_warp_group_idx();
  typename PipelineKV::Params pipe_params;
  pipe_params.transaction_bytes = Tr::kTmaBytesKV;
  pipe_params.role =
      warp_group == 0 ? PipelineKV::ThreadCategory::Producer : PipelineKV::ThreadCategory::Consumer;
  pipe_params.is_leader = threadIdx.x == 0;
  pipe_params.num_consumers = Tr::kMmaThreads;
  if (threadIdx.x == 0) {
    Barrier::init(&smem.barrier_q, 1);                      // Q landed (TMA transaction)
    Barrier::init(&smem.barrier_q_empty, Tr::kMmaThreads);  // every consumer thread is done with Q
  }
  PipelineKV pipeline_k(smem.pipeline_k, pipe_params, Shape<_1, _1, _1>{});
  PipelineKV pipeline_v(smem.pipeline_v, pipe_params, Shape<_1, _1, _1>{});
  cutlass::arch::fence_barrier_init();
  __syncthreads();

  Tensor sQ = make_tensor(make_smem_ptr(smem.q.data()), typename Tr::SmemLayoutQ{});  // (Br, d)
  Tensor sK = make_tensor(make_smem_ptr(smem.k.data()), typename Tr::SmemLayoutK{});  // (Bc, d, stages)
  Tensor sV = make_tensor(make_smem_ptr(smem.v.data()), typename Tr::SmemLayoutV{});  // (Bc, d, stages)

  if (warp_group == 0) {  // ---------------------------------------------------------------- producer
    cutlass::arch::warpgroup_reg_dealloc<Tr::kProducerRegs>();
    if (threadIdx.x != 0) return;
    Tensor mQ = prm.tma_q.get_tma_tensor(make_shape(static_cast<int>(a.total_q), Int<kHeadDim>{}, a.heads_q));
    Tensor mK =
        prm.tma_k.get_tma_tensor(make_shape(static_cast<int>(a.total_k), Int<kHeadDim>{}, a.heads_kv));
    Tensor mV =
        prm.tma_v.get_tma_tensor(make_shape(static_cast<int>(a.total_k), Int<kHeadDim>{}, a.heads_kv));
    PipelineState write_k = cutlass::make_producer_start_state<PipelineKV>();
    PipelineState write_v = cutlass::make_producer_start_state<PipelineKV>();
    int loaded = 0;  // tiles whose Q this CTA loaded: Q's barriers' phases
    for (int k = k_first; k < k_end; k += k_step) {
      const Fa3Tile tile = tile_of(a, a.walk ? a.walk[k] : k, num_m);
      if (tile.m_block * kBlockM >= tile.lq) continue;  // past a shorter sequence of a varlen batch
      int n_min, n_max;
      key_block_range<Tr>(a, tile.m_block, tile.lq, tile.lk, n_min, n_max);
      if (n_max <= n_min) continue;  // no visible key: the consumers write zeros
      const int head_kv = tile.head / a.group;
      // gQ (Br, d) of the tile; gK, gV (Bc, d, key blocks) of its sequence and kv head.
      Tensor gQ = local_tile(domain_offset(make_coord(tile.off_q, _0{}), mQ(_, _, tile.head)),
                             Shape<Int<kBlockM>, Int<kHeadDim>>{}, make_coord(tile.m_block, _0{}));
      Tensor gK = local_tile(domain_offset(make_coord(tile.off_k, _0{}), mK(_, _, head_kv)),
                             Shape<Int<kBlockN>, Int<kHeadDim>>{}, make_coord(_, _0{}));
      Tensor gV = local_tile(domain_offset(make_coord(tile.off_k, _0{}), mV(_, _, head_kv)),
                             Shape<Int<kBlockN>, Int<kHeadDim>>{}, make_coord(_, _0{}));
      auto [tQgQ, tQsQ] =
          tma_partition(prm.tma_q, _0{}, Layout<_1>{}, group_modes<0, 2>(sQ), group_modes<0, 2>(gQ));
      auto [tKgK, tKsK] =
          tma_partition(prm.tma_k, _0{}, Layout<_1>{}, group_modes<0, 2>(sK), group_modes<0, 2>(gK));
      auto [tVgV, tVsV] =
          tma_partition(prm.tma_v, _0{}, Layout<_1>{}, group_modes<0, 2>(sV), group_modes<0, 2>(gV));
      // The last key block first: its K lands before Q's slot is free again, so the first S can start as soon
      // as Q does.
      pipeline_k.producer_acquire(write_k);
      copy(prm.tma_k.with(*pipeline_k.producer_get_barrier(write_k), 0), tKgK(_, n_max - 1),
           tKsK(_, write_k.index()));
      ++write_k;
      if (loaded > 0) Barrier::wait(&smem.barrier_q_empty, (loaded - 1) & 1);
      Barrier::arrive_and_expect_tx(&smem.barrier_q, Tr::kTmaBytesQ);
      copy(prm.tma_q.with(smem.barrier_q, 0), tQgQ, tQsQ);
      for (int n = n_max - 1; n >= n_min; --n) {
        if (n < n_max - 1) {
          pipeline_k.producer_acquire(write_k);  // waits for the stage's empty barrier, arms its full barrier
          copy(prm.tma_k.with(*pipeline_k.producer_get_barrier(write_k), 0), tKgK(_, n),
               tKsK(_, write_k.index()));
          ++write_k;
        }
        pipeline_v.producer_acquire(write_v);
        copy(prm.tma_v.with(*pipeline_v.producer_get_barrier(write_v), 0), tVgV(_, n),
             tVsV(_, write_v.index()));
        ++write_v;
      }
      ++loaded;
    }
    return;
  }

  // ------------------------------------------------------------------------------------------------ consumers
  cutlass::arch::warpgroup_reg_alloc<Tr::kConsumerRegs>();
  const int tidx =
      threadIdx.x - 128;  // 0 .. kMmaThreads - 1: warpgroup 1 owns rows 0..63, warpgroup 2 64..127
  const int mma_wg = warp_group - 1;  // 0 or 1
  typename Tr::TiledMmaQK mma_qk;
  typename Tr::TiledMmaPV mma_pv;
  auto thr_qk = mma_qk.get_thread_slice(tidx);
  auto thr_pv = mma_pv.get_thread_slice(tidx);
  Tensor sVt = make_tensor(make_smem_ptr(smem.v.data()), typename Tr::SmemLayoutVt{});  // (d, Bc, stages)

  Tensor tSrQ = thr_qk.partition_fragment_A(sQ);    // descriptors of Q's (64, d) slice
  Tensor tSrK = thr_qk.partition_fragment_B(sK);    // (MMA, MMA_N, MMA_K, stages)
  Tensor tOrVt = thr_pv.partition_fragment_B(sVt);  // (MMA, MMA_N, MMA_K, stages)
  Tensor tSrS = partition_fragment_C(mma_qk, Shape<Int<kBlockM>, Int<kBlockN>>{});   // S, fp32
  Tensor tOrO = partition_fragment_C(mma_pv, Shape<Int<kBlockM>, Int<kHeadDim>>{});  // O, fp32
  Tensor rP = make_tensor<Element>(tSrS.layout());                                   // P, 16-bit
  Tensor tOrP = make_tensor(rP.data(), acc_as_a_operand(tSrS.layout()));             // P as P V's A
  Tensor tSrS_rc = make_tensor(tSrS.data(), acc_rows_cols(tSrS.layout()));           // (2 rows, Bc / 4)
  Tensor tOrO_rc = make_tensor(tOrO.data(), acc_rows_cols(tOrO.layout()));           // (2 rows, d / 4)
  Tensor tScS = thr_qk.partition_C(make_identity_tensor(Shape<Int<kBlockM>, Int<kBlockN>>{}));
  Tensor tScS_rc = make_tensor(tScS.data(), acc_rows_cols(tScS.layout()));  // (row, col) of each S register
  Tensor tOcO = thr_pv.partition_C(make_identity_tensor(Shape<Int<kBlockM>, Int<kHeadDim>>{}));
  constexpr int kRows = decltype(size<0>(tSrS_rc))::value;
  static_assert(kRows == 2);
  // Scores enter the exponent as s scale log2(e); with a softcap the pipeline has applied the scale already.
  constexpr float kLog2e = 1.4426950408889634f;
  const float scale_log2 = kSoftcap ? kLog2e : a.scale * kLog2e;
  // Ping-pong turns: wait for mine, issue, pass the turn (kMmaThreads threads meet at each barrier).
  const auto my_turn = [&] {
    if (a.pingpong) named_barrier_sync(1 + mma_wg, Tr::kMmaThreads);
  };
  const auto pass_turn = [&] {
    if (a.pingpong) named_barrier_arrive(2 - mma_wg, Tr::kMmaThreads);
  };

  PipelineState read_k, read_v;
  int loaded = 0;
  for (int k = k_first; k < k_end; k += k_step) {
    const Fa3Tile tile = tile_of(a, a.walk ? a.walk[k] : k, num_m);
    const int m_block = tile.m_block, lq = tile.lq, lk = tile.lk;
    if (m_block * kBlockM >= lq) continue;
    int n_min, n_max;
    key_block_range<Tr>(a, m_block, lq, lk, n_min, n_max);
    OnlineSoftmax<kRows> softmax(scale_log2, kSoftcap ? 1.f : a.scale);
    float rescale[kRows];
    clear(tOrO);

    if (n_max > n_min) {
      if (a.pingpong && mma_wg == 1) named_barrier_arrive(1, Tr::kMmaThreads);  // warpgroup 1 goes first
      Barrier::wait(&smem.barrier_q, loaded & 1);
      int n = n_max - 1;
      pipeline_k.consumer_wait(read_k);
      my_turn();
      wgmma_gemm<true, -1>(mma_qk, tSrQ, tSrK(_, _, _, read_k.index()), tSrS);
      pass_turn();
      warpgroup_wait<0>();
      warpgroup_fence_operand(tSrS);
      pipeline_k.consumer_release(read_k);
      ++read_k;
      if (n == n_min) Barrier::arrive(&smem.barrier_q_empty);  // Q's last use
      score_pipeline_block<Tr, kSoftcap>(a, tSrS_rc, tScS_rc, m_block, n, lq, lk);
      softmax.update(tSrS_rc, rescale);
      round_to<Element>(tSrS, rP);
      for (n = n_max - 2; n >= n_min; --n) {
        pipeline_k.consumer_wait(read_k);
        pipeline_v.consumer_wait(read_v);
        my_turn();
        wgmma_gemm<true, -1>(mma_qk, tSrQ, tSrK(_, _, _, read_k.index()), tSrS);    // S = Q K[n]^T
        wgmma_gemm<false, -1>(mma_pv, tOrP, tOrVt(_, _, _, read_v.index()), tOrO);  // O += P V[n + 1]
        pass_turn();
        warpgroup_wait<1>();  // S is in
        warpgroup_fence_operand(tSrS);
        pipeline_k.consumer_release(read_k);
        ++read_k;
        if (n == n_min) Barrier::arrive(&smem.barrier_q_empty);
        score_pipeline_block<Tr, kSoftcap>(a, tSrS_rc, tScS_rc, m_block, n, lq, lk);
        softmax.update(tSrS_rc, rescale);  // under the P V wgmma
        warpgroup_wait<0>();               // P V is in: P and O may be rewritten
        warpgroup_fence_operand(tOrO);
        warpgroup_fence_operand(rP);
        pipeline_v.consumer_release(read_v);
        ++read_v;
        CUTE_UNROLL
        for (int r = 0; r < kRows; ++r) {
          CUTE_UNROLL
          for (int c = 0; c < size<1>(tOrO_rc); ++c) tOrO_rc(r, c) *= rescale[r];  // O = O exp(m_old - m_new)
        }
        round_to<Element>(tSrS, rP);
      }
      pipeline_v.consumer_wait(read_v);
      my_turn();
      wgmma_gemm<false, -1>(mma_pv, tOrP, tOrVt(_, _, _, read_v.index()), tOrO);  // O += P V[first]
      // Warpgroup 0's last turn passes to warpgroup 1's; warpgroup 1's last would go unanswered.
      if (mma_wg == 0) pass_turn();
      warpgroup_wait<0>();
      warpgroup_fence_operand(tOrO);
      pipeline_v.consumer_release(read_v);
      ++read_v;
      ++loaded;
    }

    // O = O / l, rounded; lse = m scale + ln l. Rows past the sequence are not written.
    float inv_sum[kRows], lse[kRows];
    softmax.finalize(inv_sum, lse);
    CUTE_UNROLL
    for (int r = 0; r < kRows; ++r) {
      CUTE_UNROLL
      for (int c = 0; c < size<1>(tOrO_rc); ++c) tOrO_rc(r, c) *= inv_sum[r];
    }
    const int64_t o_row_stride = static_cast<int64_t>(a.heads_q) * kHeadDim;
    auto* o =
        static_cast<Element*>(a.o) + static_cast<int64_t>(tile.off_q) * o_row_stride + tile.head * kHeadDim;
    CUTE_UNROLL
    for (int i = 0; i < size(tOrO); i += 2) {  // registers i, i + 1 are columns c, c + 1 of one row
      const int row = m_block * kBlockM + get<0>(tOcO(i));
      if (row < lq) {
        const Element lo(tOrO(i)), hi(tOrO(i + 1));
        const uint32_t packed = static_cast<uint32_t>(lo.raw()) | (static_cast<uint32_t>(hi.raw()) << 16);
        *reinterpret_cast<uint32_t*>(o + row * o_row_stride + get<1>(tOcO(i))) = packed;
      }
    }
    if (tidx % 4 == 0) {  // the quad's first thread holds the row statistics of its 2 rows
      CUTE_UNROLL
      for (int r = 0; r < kRows; ++r) {
        const int row = m_block * kBlockM + get<0>(tScS_rc(r, 0));
        if (row < lq) {
          const int64_t at =
              a.varlen ? static_cast<int64_t>(tile.head) * a.total_q + tile.off_q + row
                       : (static_cast<int64_t>(tile.batch) * a.heads_q + tile.head) * a.seqlen_q + row;
          a.lse[at] = lse[r];
        }
      }
    }
  }
}

}  // namespace flashsim::gpu::fa3
