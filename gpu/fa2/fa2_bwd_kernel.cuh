#pragma once
// fa2-v1's main backward kernel: FlashAttention-2's backward (Dao 2023, Algorithm 2) on mma.sync tensor cores,
// key blocks outer. fa2_bwd_traits.h has the warp partition, the tiling and the shared-memory layout.
//
// One CTA per (key block n, sequence b, kv head hk): grid (ceil(seqlen_k / Bc), batch, heads_kv). A CTA
//   1. exits if its key block starts past its sequence's keys (varlen);
//   2. finds the query blocks that see its keys (queries_seeing); with none, it stores dK = dV = 0 and loads
//      nothing;
//   3. loads K and V once (cp.async, rows past the sequence zero-filled);
//   4. for each query head h of kv head hk's group (GQA / MQA: dK and dV are the sums over the group, so
//      the group's heads run in this CTA, in order, and nothing is reduced afterwards), for each visible
//      query block from the last down whose block-mask tiles with this key block are not all inactive
//      (block-sparse: the others are skipped, no load, no work), with the next computed block's Q, dO, lse
//      shift and D streaming into the other buffer meanwhile:
//        dP^T = V_w dO^T, S^T = K_w Q^T            (mma, fp32)
//        P = exp2((scale S^T - lse) log2 e)       (the forward's probabilities; score pipeline where needed)
//        dS = P o (dP - D)  [dbias = dS]  [dS *= 1 - tanh^2 through the softcap]
//        dV_w += P^T dO (P rounded to the input dtype); dK_w += dS^T Q (dS rounded)
//        dS^T -> shared memory; dQ = scale dS K -> fp32 atomics into the accumulator, or the key block's own
//        partial (deterministic)
//   5. stores dK * scale and dV in the input dtype (staged through shared memory: 16-byte stores).
// P's exponent is formed as fma(s, scale, -lse) then times log2 e: scores and lse of several thousand (large
// inputs) keep the fp32 error of the difference, not of each term (an exponent of s scale log2 e - lse log2 e
// rounds both products: about twice the error, measured over the golden bound on magnitude-x64 fp16).
// Rows past a sequence's end: Q, dO, the lse shift and D are zero-filled, so P = 1 there but dP = D = 0 and dS = 0,
// and dO = 0 keeps them out of dV; keys past the end are masked (P = 0) in the block that holds them.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "fa2_block_mask.cuh"
#include "fa2_bwd_params.cuh"
#include "fa2_bwd_traits.h"
#include "fa2_device.cuh"
#include "flashsim/gpu/params.h"
#include "score_pipeline.cuh"  // neg_inf, to_float, biased_score

namespace flashsim::gpu::fa2 {

// kPipeline: the full per-element score pipeline (as the forward's); otherwise S stays unscaled, the scale is
// folded into exp2, and masking happens only in (query block, key block) pairs that cross a limit.
template <int kHeadDim, int kBlockM, int kBlockN, int kNWarps, class Element, bool kPipeline>
__global__ void __launch_bounds__(kNWarps * 32, 1) flashsim_fa2_bwd_main_kernel(const Fa2BwdParams prm) {
  using namespace detail;
  using Tr = Fa2BwdTraits<kHeadDim, kBlockM, kBlockN, kNWarps, Element>;
  constexpr int kQT = Tr::kQTiles, kDT = Tr::kDTiles, kPitch = Tr::kPitch, kSPitch = Tr::kSPitch;
  constexpr uint32_t kEl = sizeof(Element);

  extern __shared__ __align__(128) unsigned char fa2_bwd_smem[];  // the swizzle XORs whole addresses
  Element* sK = reinterpret_cast<Element*>(fa2_bwd_smem);
  Element* sV = sK + Tr::kKvElems;
  Element* sQ = sV + Tr::kKvElems;                            // [2][Br][d]
  Element* sdO = sQ + 2 * Tr::kQElems;                        // [2][Br][d]
  Element* sdS = sdO + 2 * Tr::kQElems;                       // [Bc][Br]
  float* sLse = reinterpret_cast<float*>(sdS + Tr::kSElems);  // [2][Br]
  float* sD = sLse + 2 * kBlockM;                             // [2][Br]

  const AttentionParams& a = prm.a;
  const int n = static_cast<int>(blockIdx.x), b = static_cast<int>(blockIdx.y),
            hk = static_cast<int>(blockIdx.z);
  const int k0 = n * kBlockN;
  const int lk = seq_len(a, prm.cu_k, a.seqlen_k, b);
  if (k0 >= lk) return;  // past this sequence's keys: nothing to store
  const int lq = seq_len(a, prm.cu_q, a.seqlen_q, b);
  const int64_t off_k = seq_offset(a, prm.cu_k, a.seqlen_k, b);
  const int k_rows = min_of(kBlockN, lk - k0);
  const int shift = lk - lq;  // bottom-right alignment: diagonal j = i + shift
  const int tid = static_cast<int>(threadIdx.x), warp = tid / 32, lane = tid % 32;
  const int g = lane / 4, t4 = lane % 4;  // mma fragment coordinates: row group, column pair
  const int kw0 = (Tr::kDParts == 1 ? warp : warp % Tr::kKeyWarps) * Tr::kKeyRows;  // its key rows
  const int dpart = Tr::kDParts == 1 ? 0 : warp / Tr::kKeyWarps;  // its head-dim part of dK and dV
  const bool writes_ds =
      dpart == 0;  // one warp of a key tile's kDParts stores its dS (they compute the same)

  // ---- the query blocks that see this key block, for each of the group's query heads
  int i_lo, i_hi, m_first, m_last;
  queries_seeing(a, lq, lk, k0, k0 + k_rows, i_lo, i_hi);
  block_range(i_lo, i_hi, kBlockM, m_first, m_last);
  const int n_m = m_last - m_first;
  const int steps = n_m * a.group;
  // step s: query head hk * group + s / n_m, query block m_last - 1 - s % n_m (the last one first). (Carrying
  // (h, q0) through the loop instead measured more spill bytes at d128: ptxas keeps both steps' live.)
  const auto step_head = [&](int s) { return hk * a.group + s / n_m; };
  const auto step_q0 = [&](int s) { return (m_last - 1 - s % n_m) * kBlockM; };
  // Block-sparse: step s is computed when some block-mask tile of its (query block, key block) pair is active
  // (the reference's tile_active): bit s of the shared bitmaps sBmAny (computed) and sBmAll (no element masked
  // by the block mask), built once (fa2_block_mask.cuh); next_step(s) is the first computed step from s on
  // (steps: none).
  uint32_t* sBmAny = reinterpret_cast<uint32_t*>(sD + 2 * kBlockM);
  uint32_t* sBmAll = sBmAny + bitmap_words(prm.bm_items);
  if (a.has_block_mask)
    build_block_bitmaps<Tr::kThreads>(sBmAny, sBmAll, steps, [&](int s, bool& any, bool& all) {
      const int h = step_head(s), q0 = step_q0(s);
      const uint8_t* plane = block_mask_plane(a, prm.block_mask, b, h);
      any = block_mask_tiles(a, plane, q0, min_of(q0 + kBlockM, lq), k0, k0 + k_rows, true);
      all = block_mask_tiles(a, plane, q0, min_of(q0 + kBlockM, lq), k0, k0 + k_rows, false);
    });
  const auto next_step = [&](int s) { return a.has_block_mask ? bitmap_next(sBmAny, s, steps) : s; };
  const int s_first = next_step(0);

  // Row strides are read from the kernel parameters (constant-bank operands) where used: kept in registers
  // across the loop, they spilled at d128.
  const auto load_step = [&](int s, int slot) {
    const int h = step_head(s), q0 = step_q0(s), rows = min_of(kBlockM, lq - q0);
    // (the sequence's row offset recomputed per step: kept live across the loop it cost a spill at d128)
    const int64_t row0 = (seq_offset(a, prm.cu_q, a.seqlen_q, b) + q0) * prm.q_stride + int64_t{h} * kHeadDim;
    copy_tile<Tr, kBlockM>(sQ + slot * Tr::kQElems, static_cast<const Element*>(prm.q) + row0, prm.q_stride,
                           rows, tid);
    copy_tile<Tr, kBlockM>(sdO + slot * Tr::kQElems, static_cast<const Element*>(prm.dout) + row0,
                           prm.q_stride, rows, tid);
    if (tid <
        2 * kBlockM) {  // lse shift (threads 0 .. Br-1) and D (Br .. 2 Br-1), a row each; 0 past the end
      const int r = tid % kBlockM;
      const bool ok = r < rows;
      const float* src =
          (tid < kBlockM ? prm.lse_shift : prm.dsum) + (ok ? lse_index(a, prm.cu_q, b, h, q0 + r) : 0);
      float* dst = (tid < kBlockM ? sLse : sD) + slot * kBlockM + r;
      cp_async_4(smem_addr(dst), src, ok ? 4 : 0);
    }
  };

  float acc_dk[kDT][4], acc_dv[kDT][4];
#pragma unroll
  for (int t = 0; t < kDT; ++t)
#pragma unroll
    for (int e = 0; e < 4; ++e) acc_dk[t][e] = acc_dv[t][e] = 0.f;

  if (s_first < steps) {
    const int64_t kv_stride = prm.kv_stride;
    const Element* gK =
        static_cast<const Element*>(prm.k) + (off_k + k0) * kv_stride + int64_t{hk} * kHeadDim;
    const Element* gV =
        static_cast<const Element*>(prm.v) + (off_k + k0) * kv_stride + int64_t{hk} * kHeadDim;
    copy_tile<Tr, kBlockN>(sK, gK, kv_stride, k_rows, tid);
    copy_tile<Tr, kBlockN>(sV, gV, kv_stride, k_rows, tid);
    load_step(s_first, 0);
    cp_async_commit();
  }

  // ldmatrix row addresses of this lane (bytes), as the forward's: lane l gives row l % 8 of matrix l / 8.
  //   A pattern (K_w, V_w: m16 x k16):      rows 0-15 by lane & 15, chunk lane >> 4
  //   B pattern (Q, dO rows as n8 pairs):    rows (lane & 7) + 8 (lane >> 4), chunk (lane >> 3) & 1
  //   trans pattern (dO, Q, K as k16 x n8 pairs): rows (lane & 7) + 8 ((lane >> 3) & 1), chunk lane >> 4
  const int lane_swz = Tr::swz(lane & 7);
  const uint32_t k_a_lane =
      smem_addr(sK) + kEl * (kw0 + (lane & 15)) * kPitch + 16 * ((lane >> 4) ^ lane_swz);
  const uint32_t v_a_lane =
      smem_addr(sV) + kEl * (kw0 + (lane & 15)) * kPitch + 16 * ((lane >> 4) ^ lane_swz);
  const uint32_t b_off = kEl * ((lane & 7) + (lane >> 4) * 8) * kPitch + 16 * (((lane >> 3) & 1) ^ lane_swz);
  const uint32_t t_off = kEl * ((lane & 7) + ((lane >> 3) & 1) * 8) * kPitch + 16 * ((lane >> 4) ^ lane_swz);
  // dQ = dS K: warp (wm, wd) = query rows 16 wm, head-dim tiles [wd kDqTiles, (wd + 1) kDqTiles). Its A
  // fragments come from the stored dS^T [key][query] by ldmatrix.trans (B pattern over key rows, the query
  // chunk of its rows); B = K rows (trans pattern).
  const int wm = warp % Tr::kQWarps, wd = warp / Tr::kQWarps;
  const uint32_t ds_a_lane = smem_addr(sdS) + kEl * ((lane & 7) + (lane >> 4) * 8) * kSPitch +
                             16 * ((2 * wm + ((lane >> 3) & 1)) ^ (lane & 7));
  const uint32_t k_t_lane = smem_addr(sK) + t_off;

  constexpr float kLog2e = 1.4426950408889634f;
  const float scale = a.scale;
  int computed = 0;  // steps computed (block-sparse tile counts)
  for (int s = s_first; s < steps; ++computed) {
    const int slot = computed & 1;
    const int h = step_head(s), q0 = step_q0(s);
    cp_async_wait<0>();  // this step's Q, dO, lse shift, D (and K, V) landed
    __syncthreads();     // ... for every thread; every warp is done with the previous step's buffers and dS
    const int s_next = next_step(s + 1);
    if (s_next < steps) load_step(s_next, slot ^ 1);
    cp_async_commit();
    const Element* sQc = sQ + slot * Tr::kQElems;
    const Element* sdOc = sdO + slot * Tr::kQElems;
    const float* sLsec = sLse + slot * kBlockM;
    const float* sDc = sD + slot * kBlockM;

    // ---- dP^T = V_w dO^T and S^T = K_w Q^T: per k16 step over d, one A (ldmatrix.x4) and kQT / 2 B pairs.
    float acc_dp[kQT][4], acc_s[kQT][4];
#pragma unroll
    for (int t = 0; t < kQT; ++t)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc_dp[t][e] = acc_s[t][e] = 0.f;
    const uint32_t do_b_lane = smem_addr(sdOc) + b_off, q_b_lane = smem_addr(sQc) + b_off;
#pragma unroll
    for (int ks = 0; ks < Tr::kQkSteps; ++ks) {
      uint32_t va[4], ka[4];
      ldmatrix_x4(va, swz_chunk<Tr>(v_a_lane, 2 * ks));
      ldmatrix_x4(ka, swz_chunk<Tr>(k_a_lane, 2 * ks));
#pragma unroll
      for (int np = 0; np < kQT / 2; ++np) {
        uint32_t db[4], qb[4];
        ldmatrix_x4(db, swz_chunk<Tr>(do_b_lane, 2 * ks) + kEl * np * 16 * kPitch);
        mma16816<Element>(acc_dp[2 * np], va, db[0], db[1]);
        mma16816<Element>(acc_dp[2 * np + 1], va, db[2], db[3]);
        ldmatrix_x4(qb, swz_chunk<Tr>(q_b_lane, 2 * ks) + kEl * np * 16 * kPitch);
        mma16816<Element>(acc_s[2 * np], ka, qb[0], qb[1]);
        mma16816<Element>(acc_s[2 * np + 1], ka, qb[2], qb[3]);
      }
    }

    // ---- P and dS, element-wise. Element (t, e): key j = k0 + kw0 + g + 8 (e / 2), query
    // i = q0 + 8 t + 2 t4 + e % 2 (the C fragment of S^T: rows are keys, columns queries).
    // Plain: masking only where the (query block, key block) pair crosses the window or the keys' end.
    // A pair with an inactive block-mask tile among its rows and keys masks those elements (bm_partial).
    const uint8_t* bm_partial =
        a.has_block_mask && !bitmap_test(sBmAll, s) ? block_mask_plane(a, prm.block_mask, b, h) : nullptr;
    const bool crossing =
        k0 + kBlockN > lk || (a.window_left >= 0 && k0 < q0 + kBlockM - 1 + shift - a.window_left) ||
        (a.window_right >= 0 && k0 + kBlockN - 1 > q0 + shift + a.window_right) || bm_partial;
    const int64_t bias_head = kPipeline ? b * a.bias_stride_b + h * a.bias_stride_h : 0;
    const int64_t mask_head = kPipeline ? b * a.mask_stride_b + h * a.mask_stride_h : 0;
    const float slope = kPipeline && a.alibi ? prm.slopes[h] : 0.f;
#pragma unroll
    for (int t = 0; t < kQT; ++t) {
      const float2 lse = *reinterpret_cast<const float2*>(sLsec + 8 * t + 2 * t4);
      const float2 dsum = *reinterpret_cast<const float2*>(sDc + 8 * t + 2 * t4);
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int j = k0 + kw0 + g + 8 * (e >> 1), i = q0 + 8 * t + 2 * t4 + (e & 1);
        const float ls = (e & 1) ? lse.y : lse.x, dd = (e & 1) ? dsum.y : dsum.x;
        float p, dcap = 1.f;
        if constexpr (kPipeline) {
          if (i >= lq || j >= lk || !window_visible(a, lq, lk, i, j) ||
              !block_mask_visible(a, bm_partial, i, j)) {
            p = 0.f;  // no bias or mask read outside the sequence
          } else {
            const float bias =
                a.has_bias
                    ? to_float(static_cast<const Element*>(prm.bias)[bias_head + i * a.bias_stride_q + j])
                    : 0.f;
            const float x = biased_score(a, acc_s[t][e] * scale, bias, slope, i + shift - j, &dcap);
            const bool keep = !a.has_mask || prm.mask[mask_head + i * a.mask_stride_q + j] != 0;
            p = keep ? exp2_approx((x - ls) * kLog2e) : 0.f;  // P = exp(x - lse)
          }
        } else {
          const bool hidden = crossing && (j >= lk || !window_visible(a, lq, lk, i, j) ||
                                           (i < lq && !block_mask_visible(a, bm_partial, i, j)));
          p = hidden ? 0.f : exp2_approx(fmaf(acc_s[t][e], scale, -ls) * kLog2e);  // P = exp(scale s - lse)
        }
        const float ds = p * (acc_dp[t][e] - dd);  // dS = P o (dP - D), from the unrounded P
        if (kPipeline && prm.dbias && writes_ds && i < lq && j < lk)
          prm.dbias[b * prm.dbias_stride_b + h * prm.dbias_stride_h + i * prm.dbias_stride_q + j] = ds;
        acc_s[t][e] = p;
        acc_dp[t][e] = ds * dcap;  // through the softcap: d(raw score) = dS (1 - tanh^2)
      }
    }

    // ---- dV_w += P^T dO: P^T's C fragments of query tiles 2ks, 2ks + 1 are the A fragment of k16 step ks.
    const uint32_t do_t_lane = smem_addr(sdOc) + t_off, q_t_lane = smem_addr(sQc) + t_off;
#pragma unroll
    for (int ks = 0; ks < Tr::kPSteps; ++ks) {
      uint32_t pa[4];
      c_to_a<Element>(pa, acc_s[2 * ks], acc_s[2 * ks + 1]);
      mma_trans_b_tiles<Tr>(acc_dv, pa, do_t_lane, dpart * kDT, kEl * ks * 16 * kPitch);
    }
    // ---- dS^T (rounded to the input dtype) to shared memory for dQ, and dK_w += dS^T Q.
#pragma unroll
    for (int ks = 0; ks < Tr::kPSteps; ++ks) {
      uint32_t da[4];
      c_to_a<Element>(da, acc_dp[2 * ks], acc_dp[2 * ks + 1]);
#pragma unroll
      for (int hf = 0; hf < 2 && writes_ds; ++hf) {
        const int r = kw0 + g + 8 * hf;  // key row of sdS; chunk = query tile, swizzled by r & 7
#pragma unroll
        for (int c = 0; c < 2; ++c)
          *reinterpret_cast<uint32_t*>(sdS + r * kSPitch + (((2 * ks + c) ^ (r & 7)) * 8) + 2 * t4) =
              da[2 * c + hf];
      }
      mma_trans_b_tiles<Tr>(acc_dk, da, q_t_lane, dpart * kDT, kEl * ks * 16 * kPitch);
    }
    __syncthreads();  // dS^T complete

    // ---- dQ (rows 16 wm.., head-dim tiles of wd) = scale dS K over the block's keys, in kDqPasses passes.
#pragma unroll
    for (int pass = 0; pass < Tr::kDqPasses; ++pass) {
      const int tile0 = wd * Tr::kDqTiles + pass * Tr::kDqPassTiles;  // first n8 head-dim tile of this pass
      float acc_dq[Tr::kDqPassTiles][4];
#pragma unroll
      for (int t = 0; t < Tr::kDqPassTiles; ++t)
#pragma unroll
        for (int e = 0; e < 4; ++e) acc_dq[t][e] = 0.f;
#pragma unroll
      for (int ks = 0; ks < Tr::kDqSteps; ++ks) {
        uint32_t da[4];
        ldmatrix_x4_trans(da, ds_a_lane + kEl * ks * 16 * kSPitch);
        mma_trans_b_tiles<Tr>(acc_dq, da, k_t_lane, tile0, kEl * ks * 16 * kPitch);
      }
      // The accumulator's rows of this (sequence, head): the whole Br-row tile (padded to 128 rows a
      // sequence, so a tile never leaves its sequence's rows); the deterministic partials: key block n's slab.
      // (Computed here, after the products: live across them, the pointer cost a spill at d128.)
      float* acc =
          prm.dq_accum + (accum_row0(a, prm.cu_q, b) + q0 + 16 * wm) * prm.q_stride + int64_t{h} * kHeadDim;
      if (prm.deterministic) acc += int64_t{n} * prm.accum_rows * prm.q_stride;
#pragma unroll
      for (int t = 0; t < Tr::kDqPassTiles; ++t)
#pragma unroll
        for (int hf = 0; hf < 2; ++hf) {
          float* dst = acc + (g + 8 * hf) * prm.q_stride + (tile0 + t) * 8 + 2 * t4;
          const float2 val = make_float2(acc_dq[t][2 * hf] * scale, acc_dq[t][2 * hf + 1] * scale);
          if (prm.deterministic) {
            *reinterpret_cast<float2*>(dst) = val;
          } else {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
            atomicAdd(reinterpret_cast<float2*>(dst), val);  // one 8-byte reduction (sm_90)
#else
            atomicAdd(dst, val.x);
            atomicAdd(dst + 1, val.y);
#endif
          }
        }
    }
    s = s_next;
  }
  if (a.has_block_mask && prm.tile_counts && tid == 0) {
    atomicAdd(prm.tile_counts + 2, static_cast<unsigned long long>(computed));
    atomicAdd(prm.tile_counts + 3, static_cast<unsigned long long>(steps - computed));
  }
  cp_async_wait<0>();  // only an empty group can be left
  __syncthreads();     // every warp is done with sK and sV (dQ's B operand): they stage dK and dV now

  // ---- epilogue: dK * scale and dV in the input dtype, staged in this warp's own rows of sK / sV (swizzled as
  // loaded), then 16-byte stores of the rows inside the sequence.
#pragma unroll
  for (int hf = 0; hf < 2; ++hf) {
    const int r = kw0 + g + 8 * hf;  // swz(r) = swz(g)
#pragma unroll
    for (int t = 0; t < kDT; ++t) {
      const int col = ((dpart * kDT + t) ^ Tr::swz(g)) * 8 + 2 * t4;
      // d96 (12 chunks): chunk t ^ swz stays inside t's 4-chunk group
      *reinterpret_cast<uint32_t*>(sK + r * kPitch + col) =
          pack2<Element>(acc_dk[t][2 * hf] * scale, acc_dk[t][2 * hf + 1] * scale);
      *reinterpret_cast<uint32_t*>(sV + r * kPitch + col) =
          pack2<Element>(acc_dv[t][2 * hf], acc_dv[t][2 * hf + 1]);
    }
  }
  __syncwarp();
  // (the sequence's key offset and the block's key rows recomputed: kept live across the loop, they cost a
  // spill at d96 and d128)
  const int64_t kv_stride = prm.kv_stride, off_k_out = seq_offset(a, prm.cu_k, a.seqlen_k, b);
  // rows [0, k_end) of the block are keys (the pipeline kernel recomputes it: kept live, it spilled at d96)
  const int k_end = kPipeline ? seq_len(a, prm.cu_k, a.seqlen_k, b) - k0 : k_rows;
  Element* gdK = static_cast<Element*>(prm.dk) + (off_k_out + k0) * kv_stride + int64_t{hk} * kHeadDim;
  Element* gdV = static_cast<Element*>(prm.dv) + (off_k_out + k0) * kv_stride + int64_t{hk} * kHeadDim;
  // Each warp stores the chunks it staged: its key rows, its head-dim part.
  constexpr int kPartChunks = Tr::kRowChunks / Tr::kDParts;
  constexpr int kChunksPerLane = Tr::kKeyRows * kPartChunks / 32;
#pragma unroll
  for (int it = 0; it < kChunksPerLane; ++it) {
    const int c = lane + it * 32;
    const int r = kw0 + c / kPartChunks, chunk = dpart * kPartChunks + c % kPartChunks;
    if (r < k_end) {
      const int sc = (chunk ^ Tr::swz(r)) * Tr::kChunk;
      *reinterpret_cast<uint4*>(gdK + r * kv_stride + chunk * Tr::kChunk) =
          *reinterpret_cast<const uint4*>(sK + r * kPitch + sc);
      *reinterpret_cast<uint4*>(gdV + r * kv_stride + chunk * Tr::kChunk) =
          *reinterpret_cast<const uint4*>(sV + r * kPitch + sc);
    }
  }
}

}  // namespace flashsim::gpu::fa2
