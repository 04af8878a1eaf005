#pragma once
// fa2-v1's forward kernel: FlashAttention-2's forward (Dao 2023, Algorithm 1) on mma.sync tensor cores.
//
// One CTA per (query block m, sequence b, query head h): grid (ceil(seqlen_q / Br), batch, heads_q), as
// FlashAttention-2 launches (the simulator's fwd_fa2 model, tiling_sim/src/kernels/key_streaming.cpp). A CTA
//   1. exits at once if its query block starts past its sequence's end (varlen: the grid covers the longest);
//   2. finds the key blocks [n_min, n_max) its rows can see through the (bottom-right aligned) window; with
//      none, it writes o = 0 and lse = -inf and loads nothing;
//   3. loads its Q tile once (cp.async, rows past the sequence zero-filled);
//   4. walks the key blocks from the last visible one down to the first (the masked diagonal block first),
//      skipping those whose block-mask tiles are all inactive for its rows (block-sparse: no load, no work),
//      each K and V block loaded once (cp.async, kStages buffers, rows past the sequence zero-filled):
//        S = Q K^T (mma.m16n8k16, fp32)  -> score pipeline (only where needed)
//        m_new = max(m_old, rowmax(S)); alpha = exp(m_old - m_new); l = alpha l + rowsum(P); O = alpha O
//        P = exp(S - m_new) rounded to the input dtype in registers -> O += P V (mma.m16n8k16, fp32)
//   5. writes O / l in the input dtype (staged through shared memory, 16-byte stores) and lse = m + log l.
//
// Score pipeline (docs/design.md, as naive-v1): s = scale * q.k; softcap c: s = c tanh(s / c); + bias;
// + ALiBi (-slope_h |i + lk - lq - j|); -inf where the window or the boolean mask hides key j. A row with no
// visible key gives o = 0, lse = -inf.
//   - plain problems (no softcap, bias, mask, ALiBi; scale > 0): S stays unscaled and the scale is folded
//     into the exponent, p = exp2((s - m) scale log2 e) (FADD + FMUL: FA2's single FFMA would cost the row max
//     P = 1, below); window, sequence-end and block-mask masking are applied only in the key blocks that
//     straddle a limit or hold an inactive block-mask tile;
//   - otherwise every element goes through the whole pipeline in fp32, in naive-v1's order.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "fa2_block_mask.cuh"
#include "fa2_device.cuh"
#include "fa2_fwd_traits.h"
#include "flashsim/gpu/params.h"
#include "score_pipeline.cuh"  // neg_inf, to_float, biased_score

namespace flashsim::gpu::fa2 {

// The kernel's arguments, by value. Pointers as DeviceArgs (kernel.h); `a` from make_params with window sides
// that hide no key made -1 (so the window arithmetic stays far from int overflow).
struct Fa2FwdParams {
  AttentionParams a;
  const void* q = nullptr;  // [total_q, heads_q, d]
  const void* k = nullptr;  // [total_k, heads_kv, d]
  const void* v = nullptr;  // [total_k, heads_kv, d]
  void* o = nullptr;        // [total_q, heads_q, d]
  float* lse = nullptr;     // lse_index(...)
  const void* bias = nullptr;
  const uint8_t* mask = nullptr;
  const float* slopes = nullptr;
  const int32_t* cu_q = nullptr;
  const int32_t* cu_k = nullptr;
  const uint8_t* block_mask = nullptr;        // DeviceArgs::block_mask (a.has_block_mask)
  unsigned long long* tile_counts = nullptr;  // DeviceArgs::tile_counts: [0] computed, [1] skipped
  int bm_items = 0;  // with a block mask: key blocks of the longest sequence (the bitmaps' shared memory)
  bool pipeline = false;  // softcap, bias, mask, ALiBi or scale <= 0: the full per-element score pipeline
  // fa2-v1-heads-first (a planted traffic bug): CTAs take their work in launch order with the (batch, head)
  // index fastest, so the CTAs resident at once work on different heads and each reads its head's K/V from
  // DRAM; the default takes the query block fastest, as FlashAttention-2 does (K/V shared in L2).
  bool heads_first = false;
  // Problem constants precomputed on the host: the kernel reads them as constant-bank operands rather than
  // keeping them in registers across the key loop.
  int64_t q_stride = 0;    // heads_q * d: between rows of q and o
  int64_t kv_stride = 0;   // heads_kv * d: between rows of k and v
  float exp2_scale = 0.f;  // exp(x) = exp2(x * exp2_scale): scale * log2(e) (plain), log2(e) (pipeline)
};

// kPipeline: the full per-element score pipeline (softcap, bias, mask, ALiBi, or a scale <= 0) in every key
// block; without it, unscaled scores with the scale folded into exp2 and masking only in the blocks that
// straddle a window limit or the end of the keys. Two instantiations rather than a run-time branch: the
// pipeline's loads and tanhf would otherwise cost the plain kernel registers (and spills) in its hot loop.
template <int kHeadDim, int kBlockM, int kBlockN, int kNWarps, int kStages, class Element, bool kPipeline>
__global__ void __launch_bounds__(kNWarps * 32, 1) flashsim_fa2_fwd_kernel(const Fa2FwdParams prm) {
  using namespace detail;
  using Tr = Fa2FwdTraits<kHeadDim, kBlockM, kBlockN, kNWarps, kStages, Element>;
  constexpr int kMT = Tr::kMTiles, kST = Tr::kSTiles, kOT = Tr::kOTiles, kPitch = Tr::kPitch;
  constexpr uint32_t kEl = sizeof(Element);

  extern __shared__ __align__(128) unsigned char fa2_smem[];  // the swizzle XORs whole addresses
  Element* sQ = reinterpret_cast<Element*>(fa2_smem);
  Element* sK = sQ + Tr::kQElems;
  Element* sV = sK + kStages * Tr::kKvElems;

  const AttentionParams& a = prm.a;
  int b = static_cast<int>(blockIdx.y), h = static_cast<int>(blockIdx.z), qb = static_cast<int>(blockIdx.x);
  if (prm.heads_first) {  // linear launch index n = x + X (y + Y z) -> (batch, head) = n mod (Y Z), query block n / (Y Z)
    const int64_t n = blockIdx.x + int64_t{gridDim.x} * (blockIdx.y + int64_t{gridDim.y} * blockIdx.z);
    const int64_t heads = int64_t{gridDim.y} * gridDim.z;
    qb = static_cast<int>(n / heads);
    b = static_cast<int>(n % heads / gridDim.z);
    h = static_cast<int>(n % heads % gridDim.z);
  }
  const int q0 = qb * kBlockM;
  const int lq = seq_len(a, prm.cu_q, a.seqlen_q, b);
  if (q0 >= lq) return;  // past this sequence's end: nothing to write
  const int lk = seq_len(a, prm.cu_k, a.seqlen_k, b);
  const int64_t off_q = seq_offset(a, prm.cu_q, a.seqlen_q, b);
  const int64_t off_k = seq_offset(a, prm.cu_k, a.seqlen_k, b);
  const int hk = h / a.group;  // GQA / MQA: the kv head of query head h
  const int tid = static_cast<int>(threadIdx.x), warp = tid / 32, lane = tid % 32;
  const int g = lane / 4, t4 = lane % 4;  // mma fragment coordinates: row group, column pair
  const int warp_row0 = warp * Tr::kWarpRows;

  // ---- visible key blocks (the simulator's visible_key_blocks): rows [q0, q0 + Br) see keys [lo, hi).
  const int64_t shift = static_cast<int64_t>(lk) - lq;  // bottom-right alignment: diagonal j = i + shift
  const int64_t lo = a.window_left < 0 ? 0 : max_of<int64_t>(0, q0 + shift - a.window_left);
  const int64_t hi = a.window_right < 0 ? lk : min_of<int64_t>(lk, q0 + kBlockM + shift + a.window_right);
  const int n_min = static_cast<int>(lo / kBlockN);
  const int n_max = hi <= 0 ? 0 : static_cast<int>((hi + kBlockN - 1) / kBlockN);
  const int q_rows = min_of(kBlockM, lq - q0);
  // Block-sparse: key block n is computed when some block-mask tile its keys and this block's rows overlap is
  // active (the reference's tile_active): bit n - n_min of the shared bitmaps sBmAny (computed) and sBmAll (no
  // element masked by the block mask), built once (fa2_block_mask.cuh); prev_block(n) is the computed block the
  // walk takes after n (below n_min: none).
  const auto block_keys_end = [&](int n) { return min_of((n + 1) * kBlockN, lk); };
  const int n_visible = n_max > n_min ? n_max - n_min : 0;
  uint32_t* sBmAny = reinterpret_cast<uint32_t*>(sV + kStages * Tr::kKvElems);
  uint32_t* sBmAll = sBmAny + bitmap_words(prm.bm_items);
  const auto prev_block = [&](int n) {
    return a.has_block_mask ? n_min + bitmap_prev(sBmAny, n - n_min) : n - 1;
  };
  int n_blocks = n_visible;
  if (a.has_block_mask) {
    const uint8_t* plane = block_mask_plane(a, prm.block_mask, b, h);
    build_block_bitmaps<Tr::kThreads>(sBmAny, sBmAll, n_visible, [&](int k, bool& any, bool& all) {
      const int n = n_min + k;
      any = block_mask_tiles(a, plane, q0, q0 + q_rows, n * kBlockN, block_keys_end(n), true);
      all = block_mask_tiles(a, plane, q0, q0 + q_rows, n * kBlockN, block_keys_end(n), false);
    });
    n_blocks = bitmap_count(sBmAny, n_visible);
    if (prm.tile_counts && tid == 0) {
      atomicAdd(prm.tile_counts, static_cast<unsigned long long>(n_blocks));
      atomicAdd(prm.tile_counts + 1, static_cast<unsigned long long>(n_visible - n_blocks));
    }
  }
  // A key block needs element masking when it crosses the end of the keys or a window limit of some row:
  // the largest left limit (last row) or the smallest right limit (first row). Blocks n with
  // n_full_lo <= n < n_full_hi need none.
  const int64_t left_max = a.window_left < 0 ? 0 : q0 + kBlockM - 1 + shift - a.window_left;
  const int64_t right_min =
      a.window_right < 0 ? lk : min_of<int64_t>(lk, q0 + shift + a.window_right + 1);  // exclusive
  const int n_full_lo =
      left_max <= 0 ? 0 : static_cast<int>(min_of<int64_t>((left_max + kBlockN - 1) / kBlockN, n_max));
  const int n_full_hi = right_min < kBlockN ? 0 : static_cast<int>(right_min / kBlockN);
  // Keys [jlo, jhi) visible to row i by the window and the sequence ends; none for a row past the sequence
  // (its results are never stored). Computed where needed rather than kept live across the key loop.
  const auto row_keys = [&](int i, int& jlo, int& jhi) {
    int64_t j0 = a.window_left < 0 ? 0 : max_of<int64_t>(0, i + shift - a.window_left);
    int64_t j1 = a.window_right < 0 ? lk : min_of<int64_t>(lk, i + shift + a.window_right + 1);
    if (i >= lq || j1 < j0) j0 = j1 = 0;
    jlo = static_cast<int>(j0);
    jhi = static_cast<int>(j1);
  };

  // ---- global tiles
  const int64_t q_stride = prm.q_stride, kv_stride = prm.kv_stride;
  const Element* gK = static_cast<const Element*>(prm.k) + off_k * kv_stride + int64_t{hk} * kHeadDim;
  const Element* gV = static_cast<const Element*>(prm.v) + off_k * kv_stride + int64_t{hk} * kHeadDim;
  const auto load_k = [&](Element* dst, int n) {
    const int k0 = n * kBlockN;
    copy_tile<Tr, kBlockN>(dst, gK + k0 * kv_stride, kv_stride, min_of(kBlockN, lk - k0), tid);
  };
  const auto load_v = [&](Element* dst, int n) {
    const int k0 = n * kBlockN;
    copy_tile<Tr, kBlockN>(dst, gV + k0 * kv_stride, kv_stride, min_of(kBlockN, lk - k0), tid);
  };

  // ldmatrix row addresses of this lane (bytes): lane l addresses row l % 8 of matrix l / 8 of an x4.
  //   Q (A, m16 x k16): matrices (rows 0-7 | 8-15) x (cols 0-7 | 8-15) -> a0, a1, a2, a3
  //   K (B of two n8 key tiles x k16): (keys 0-7, d 0-7), (keys 0-7, d 8-15), (keys 8-15, d 0-7), (8-15, 8-15)
  //   V (B of k16 keys x two n8 head-dim tiles, .trans): (keys 0-7 | 8-15) x (d 0-7 | 8-15)
  // Each holds the swizzled chunk (0 or 1) ^ swz(lane & 7) (every matrix starts at a row r0 % 8 == 0); the
  // k16 step / head-dim pair picks its chunk by swz_chunk, the tile offsets are ldmatrix immediates.
  const int lane_swz = Tr::swz(lane & 7);
  const uint32_t q_lane =
      smem_addr(sQ) + kEl * (warp_row0 + (lane & 15)) * kPitch + 16 * ((lane >> 4) ^ lane_swz);
  const uint32_t k_lane_off =
      kEl * ((lane & 7) + (lane >> 4) * 8) * kPitch + 16 * (((lane >> 3) & 1) ^ lane_swz);
  const uint32_t v_lane_off =
      kEl * ((lane & 7) + ((lane >> 3) & 1) * 8) * kPitch + 16 * ((lane >> 4) ^ lane_swz);

  // exp2 multiplier: S unscaled (plain) or already the pipelined score; lse = m * lse_mult + log l.
  const float c_exp = prm.exp2_scale;

  float acc_o[kMT][kOT][4];
  float row_m[kMT][2], row_l[kMT][2];  // running max (S units) and this thread's partial row sum
#pragma unroll
  for (int mt = 0; mt < kMT; ++mt) {
#pragma unroll
    for (int nt = 0; nt < kOT; ++nt)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc_o[mt][nt][e] = 0.f;
#pragma unroll
    for (int hf = 0; hf < 2; ++hf) {
      row_m[mt][hf] = neg_inf();
      row_l[mt][hf] = 0.f;
    }
  }

  // ---- prologue: Q with the first block (groups count per thread; every thread commits the same groups).
  int n_ahead = n_max;  // the last key block whose loads were issued (kStages > 1)
  if (n_blocks > 0) {
    const Element* gQ = static_cast<const Element*>(prm.q) + (off_q + q0) * q_stride + int64_t{h} * kHeadDim;
    copy_tile<Tr, kBlockM>(sQ, gQ, q_stride, q_rows, tid);
    if constexpr (kStages == 1) {
      load_k(sK, prev_block(n_max));  // group: Q, K[last computed]
      cp_async_commit();
    } else {
#pragma unroll
      for (int s = 0; s < kStages - 1; ++s) {  // groups: blocks 0 .. kStages - 2 of the walk (Q in the first)
        if (s < n_blocks) {
          n_ahead = prev_block(n_ahead);
          load_k(sK + s * Tr::kKvElems, n_ahead);
          load_v(sV + s * Tr::kKvElems, n_ahead);
        }
        cp_async_commit();
      }
    }
  }

  int n = n_max;  // the walk's current key block
  for (int it = 0; it < n_blocks; ++it) {
    n = prev_block(n);
    const int k0 = n * kBlockN;
    const Element* sKc;
    const Element* sVc;
    if constexpr (kStages == 1) {
      // FA2's schedule with one K and one V buffer: V[n] streams in under Q K^T, K[n-1] under softmax + P V.
      sKc = sK;
      sVc = sV;
      cp_async_wait<0>();  // K[n] (and Q) landed
      __syncthreads();     // ... for every thread; every warp is done with V[n+1]
      load_v(sV, n);
      cp_async_commit();
    } else {
      // kStages buffers: block it + kStages - 1 of the walk streams in while block it is computed.
      const int slot = it % kStages;
      sKc = sK + slot * Tr::kKvElems;
      sVc = sV + slot * Tr::kKvElems;
      cp_async_wait<kStages - 2>();  // block it landed
      __syncthreads();               // ... for every thread; every warp is done with block it - 1's slot
      const int ahead = it + kStages - 1;
      if (ahead < n_blocks) {
        n_ahead = prev_block(n_ahead);
        load_k(sK + (ahead % kStages) * Tr::kKvElems, n_ahead);
        load_v(sV + (ahead % kStages) * Tr::kKvElems, n_ahead);
      }
      cp_async_commit();
    }

    // ---- S = Q K^T: per k16 step, A fragments of the warp's m16 tiles, B fragments of two n8 key tiles per
    // ldmatrix.x4.
    float acc_s[kMT][kST][4];
#pragma unroll
    for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
      for (int nt = 0; nt < kST; ++nt)
#pragma unroll
        for (int e = 0; e < 4; ++e) acc_s[mt][nt][e] = 0.f;
    const uint32_t k_lane = smem_addr(sKc) + k_lane_off;
#pragma unroll
    for (int ks = 0; ks < Tr::kQkSteps; ++ks) {
      uint32_t qa[kMT][4];
#pragma unroll
      for (int mt = 0; mt < kMT; ++mt)
        ldmatrix_x4(qa[mt], swz_chunk<Tr>(q_lane, 2 * ks) + kEl * mt * 16 * kPitch);
#pragma unroll
      for (int np = 0; np < kST / 2; ++np) {
        uint32_t kb[4];  // b0, b1 of key tile 2np; b0, b1 of key tile 2np + 1
        ldmatrix_x4(kb, swz_chunk<Tr>(k_lane, 2 * ks) + kEl * np * 16 * kPitch);
#pragma unroll
        for (int mt = 0; mt < kMT; ++mt) {
          mma16816<Element>(acc_s[mt][2 * np], qa[mt], kb[0], kb[1]);
          mma16816<Element>(acc_s[mt][2 * np + 1], qa[mt], kb[2], kb[3]);
        }
      }
    }

    if constexpr (kStages == 1) {
      cp_async_wait<0>();  // V[n] landed
      __syncthreads();     // ... for every thread; every warp is done with K[n]
      if (it + 1 < n_blocks) {
        load_k(sK, prev_block(n));
        cp_async_commit();
      }
    }

    // ---- score pipeline. Element (mt, nt, e): row i (mt, hf = e / 2), key j = k0 + nt * 8 + 2 t4 + e % 2.
    // A computed block with an inactive block-mask tile among its rows and keys masks those elements.
    const uint8_t* bm_partial = a.has_block_mask && !bitmap_test(sBmAll, n - n_min)
                                    ? block_mask_plane(a, prm.block_mask, b, h)
                                    : nullptr;
    if constexpr (kPipeline) {
#pragma unroll
      for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
        for (int hf = 0; hf < 2; ++hf) {
          const int i = q0 + warp_row0 + mt * 16 + hf * 8 + g;
          int jlo, jhi;
          row_keys(i, jlo, jhi);
          const int64_t bias_row = b * a.bias_stride_b + h * a.bias_stride_h + i * a.bias_stride_q;
          const int64_t mask_row = b * a.mask_stride_b + h * a.mask_stride_h + i * a.mask_stride_q;
          const float slope = a.alibi ? prm.slopes[h] : 0.f;
#pragma unroll
          for (int nt = 0; nt < kST; ++nt)
#pragma unroll
            for (int e = 0; e < 2; ++e) {
              const int j = k0 + nt * 8 + 2 * t4 + e;
              float& s = acc_s[mt][nt][2 * hf + e];
              if (j < jlo || j >= jhi || !block_mask_visible(a, bm_partial, i, j)) {
                s = neg_inf();  // window, sequence ends, block mask: no bias or mask read there
                continue;
              }
              const float bias =
                  a.has_bias ? to_float(static_cast<const Element*>(prm.bias)[bias_row + j]) : 0.f;
              const float x = biased_score(a, s * a.scale, bias, slope, static_cast<int>(i + shift - j));
              s = a.has_mask && prm.mask[mask_row + j] == 0 ? neg_inf() : x;
            }
        }
    } else {
      if (n < n_full_lo || n >= n_full_hi || bm_partial) {
#pragma unroll
        for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
          for (int hf = 0; hf < 2; ++hf) {
            const int i = q0 + warp_row0 + mt * 16 + hf * 8 + g;
            int jlo, jhi;
            row_keys(i, jlo, jhi);
#pragma unroll
            for (int nt = 0; nt < kST; ++nt)
#pragma unroll
              for (int e = 0; e < 2; ++e) {
                const int j = k0 + nt * 8 + 2 * t4 + e;
                if (j < jlo || j >= jhi || !block_mask_visible(a, bm_partial, i, j))
                  acc_s[mt][nt][2 * hf + e] = neg_inf();
              }
          }
      }
    }

    // ---- online softmax, per row: a quad (4 lanes) holds one row of the block.
#pragma unroll
    for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
      for (int hf = 0; hf < 2; ++hf) {
        float mx = row_m[mt][hf];
#pragma unroll
        for (int nt = 0; nt < kST; ++nt)
          mx = fmaxf(mx, fmaxf(acc_s[mt][nt][2 * hf], acc_s[mt][nt][2 * hf + 1]));
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
        // m = -inf (nothing visible yet): shift by 0 so that exp never sees -inf - -inf.
        const float m_shift = mx == neg_inf() ? 0.f : mx;
        const float alpha =
            exp2_approx((row_m[mt][hf] - m_shift) * c_exp);  // exp(m_old - m_new); 0 from -inf
        row_m[mt][hf] = mx;
        float sum = 0.f;
#pragma unroll
        for (int nt = 0; nt < kST; ++nt)
#pragma unroll
          for (int e = 0; e < 2; ++e) {
            float& s = acc_s[mt][nt][2 * hf + e];
            // P = exp(S - m_new), fp32, as (s - m) c rather than FA2's fma(s, c, -m c): the row max gets
            // P = 1 exactly (as the reference), where fma leaves the rounding of m c, up to 1e-3 at scores
            // of 1e4, which the rounding of P then turns into an error of O that is the same for the whole
            // row; the backward's D = rowsum(dO o O) amplifies it (fp16 magnitude-x64: dq 8x its bound).
            s = exp2_approx((s - m_shift) * c_exp);
            sum += s;
          }
        row_l[mt][hf] = row_l[mt][hf] * alpha + sum;  // l = alpha l + rowsum(P), from the unrounded P
#pragma unroll
        for (int nt = 0; nt < kOT; ++nt) {
          acc_o[mt][nt][2 * hf] *= alpha;
          acc_o[mt][nt][2 * hf + 1] *= alpha;
        }
      }

    // ---- O += P V: P rounded to the input dtype; S's C fragments of key tiles 2ks, 2ks + 1 are the A
    // fragment of k16 step ks. V through ldmatrix.trans: two head-dim n8 tiles per ldmatrix.x4.
    const uint32_t v_lane = smem_addr(sVc) + v_lane_off;
#pragma unroll
    for (int ks = 0; ks < Tr::kPvSteps; ++ks) {
      uint32_t pa[kMT][4];
#pragma unroll
      for (int mt = 0; mt < kMT; ++mt) c_to_a<Element>(pa[mt], acc_s[mt][2 * ks], acc_s[mt][2 * ks + 1]);
#pragma unroll
      for (int dp = 0; dp < kOT / 2; ++dp) {
        uint32_t vb[4];  // b0, b1 of head-dim tile 2dp; b0, b1 of tile 2dp + 1
        ldmatrix_x4_trans(vb, swz_chunk<Tr>(v_lane, 2 * dp) + kEl * ks * 16 * kPitch);
#pragma unroll
        for (int mt = 0; mt < kMT; ++mt) {
          mma16816<Element>(acc_o[mt][2 * dp], pa[mt], vb[0], vb[1]);
          mma16816<Element>(acc_o[mt][2 * dp + 1], pa[mt], vb[2], vb[3]);
        }
      }
    }
  }
  if constexpr (kStages > 1) cp_async_wait<0>();  // only empty groups can be left; retire them

  // ---- epilogue: O / l in the input dtype, staged in this warp's own rows of sQ (no other warp reads them),
  // then 16-byte coalesced stores of the rows inside the sequence; lse = m + log l (-inf, o = 0 if l = 0).
  // Every lane is done reading the warp's Q rows (ldmatrix of the last key block) before any overwrites them:
  // with kStages > 1 no barrier follows the last Q K^T (racecheck reported it).
  __syncwarp();
  const float lse_mult = kPipeline ? 1.f : a.scale;
  float lse_v[kMT][2];
#pragma unroll
  for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
    for (int hf = 0; hf < 2; ++hf) {
      float l = row_l[mt][hf];
      l += __shfl_xor_sync(0xffffffffu, l, 1);
      l += __shfl_xor_sync(0xffffffffu, l, 2);
      const float inv = l > 0.f ? 1.f / l : 0.f;
      lse_v[mt][hf] = l > 0.f ? row_m[mt][hf] * lse_mult + logf(l) : neg_inf();
      const int r = warp_row0 + mt * 16 + hf * 8 + g;  // swz(r) = swz(g)
#pragma unroll
      for (int nt = 0; nt < kOT; ++nt)
        *reinterpret_cast<uint32_t*>(sQ + r * kPitch + (nt ^ Tr::swz(g)) * 8 + 2 * t4) =
            pack2<Element>(acc_o[mt][nt][2 * hf] * inv, acc_o[mt][nt][2 * hf + 1] * inv);
    }
  __syncwarp();
  Element* gO = static_cast<Element*>(prm.o) + (off_q + q0) * q_stride + int64_t{h} * kHeadDim;
#pragma unroll
  for (int it = 0; it < Tr::kOChunksPerLane; ++it) {
    const int c = lane + it * 32;
    const int r = warp_row0 + c / Tr::kRowChunks, col = (c % Tr::kRowChunks) * Tr::kChunk;
    if (r < q_rows)
      *reinterpret_cast<uint4*>(gO + r * q_stride + col) =
          *reinterpret_cast<const uint4*>(sQ + r * kPitch + ((col / Tr::kChunk) ^ Tr::swz(r)) * Tr::kChunk);
  }
  if (t4 == 0) {
#pragma unroll
    for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
      for (int hf = 0; hf < 2; ++hf) {
        const int r = warp_row0 + mt * 16 + hf * 8 + g;
        if (r < q_rows) prm.lse[lse_index(a, prm.cu_q, b, h, q0 + r)] = lse_v[mt][hf];
      }
  }
}

}  // namespace flashsim::gpu::fa2
