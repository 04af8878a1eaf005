// naive-v1: standard attention (the FlashAttention paper's Figure 2), every matrix materialized in device
// memory. Per sequence b and kv head hk (a host loop; lengths and row offsets come from the host-side
// problem), the group's g query heads are processed together:
//   forward : S = scale Q K^T (cuBLAS) -> score pipeline, softmax, lse, P (one CTA per row)
//             -> O = P V (cuBLAS)
//   backward: S again (cuBLAS) -> P = exp(s - lse) and the softcap derivative (one CTA per row)
//             -> dP = dO V^T (cuBLAS) -> D = rowsum(dO o O), dS = P o (dP - D), dbias (one CTA per row)
//             -> dV += P^T dO, dQ = scale dS K, dK += scale dS^T Q (cuBLAS) -> dK, dV to the input dtype.
// Precision (reference/include/flashsim/ref/options.h, "Emulated"): fp32 scores, softmax statistics, lse
// and D; P rounded to the input dtype before P V and P^T dO; dS rounded to the input dtype before dS K and
// dS^T Q; every GEMM accumulates in fp32 (strict fp32 for fp32 inputs: no TF32); o, dq, dk, dv rounded once
// at the end.
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "cublas_gemm.h"
#include "cuda_launch.h"  // FLASHSIM_CUDA_CHECK
#include "flashsim/error.h"
#include "flashsim/gpu/kernel.h"
#include "flashsim/gpu/params.h"
#include "score_pipeline.cuh"

namespace flashsim::gpu {

namespace {

// ---------------------------------------------------------------------------------------------------------
// Constants.

// Threads of a row CTA: 8 warps stream one row of lk scores with coalesced 4-byte accesses (enough to keep a
// row of a few thousand keys in flight) and reduce it with one shuffle tree per warp plus 8 shared slots.
constexpr int kRowThreads = 256;
constexpr int kRowWarps = kRowThreads / 32;  // 32: threads per warp
static_assert(kRowThreads % 32 == 0 && kRowWarps <= 32, "a row CTA is whole warps, reduced by one warp");
// Threads and a cap on CTAs of the elementwise dK/dV conversion (grid-stride loop): 256 threads, and 4096
// CTAs (about 30 per SM of an H100's 132) saturate memory bandwidth; more would only add scheduling.
constexpr int kConvertThreads = 256;
constexpr int64_t kConvertMaxBlocks = 4096;
// Every workspace sub-buffer starts at a multiple of 256 bytes (cudaMalloc's alignment), so cuBLAS sees
// 16-byte aligned matrices and can pick its vectorized kernels.
constexpr size_t kAlign = 256;
// gridDim.y (the group's query heads of a row launch) is at most 65535.
constexpr int64_t kMaxGridY = 65535;
constexpr int kMaxHeadDim = 256;  // the head dims this version claims (any value 1..256 works)

// ---------------------------------------------------------------------------------------------------------
// What a row kernel of one (sequence b, kv head hk) launch needs, by value. Row (r, i) of a launch is query
// row i of query head h = h0 + r (blockIdx.y = r, blockIdx.x = i); its lq x lk scores are row (r * lq + i)
// of the [g, lq, lk] workspace matrices.
struct RowArgs {
  AttentionParams a;     // window, softcap, bias / mask strides and flags (make_params)
  int b = 0, h0 = 0;     // the sequence, and the first query head of the group
  int lq = 0, lk = 0;    // this sequence's lengths
  ScoreInputs in;        // args.bias, args.mask, args.alibi_slopes (score_pipeline.cuh)
  float* lse = nullptr;  // args.lse + p.lse_index(b, h0, 0): lse(h0 + r, i) = lse[r * lse_head_stride + i]
  int64_t lse_head_stride = 0;  // seqlen_q, or total_q with variable lengths
};

// The pipelined score of row (r, i) of a launch (query head h) and key j, from s = scale * q.k
// (score_pipeline.cuh); dcap as there.
template <class T>
__device__ __forceinline__ float row_score(const RowArgs& ra, int h, int i, int j, float s, float* dcap) {
  return score_pipeline<T>(ra.a, ra.in, ra.b, h, ra.lq, ra.lk, i, j, s, dcap);
}

struct MaxOp {
  __device__ float operator()(float x, float y) const { return fmaxf(x, y); }
};
struct SumOp {
  __device__ float operator()(float x, float y) const { return x + y; }
};

// Reduction of v over the CTA (kRowThreads threads, all of which must call it); every thread gets the result,
// combined in the same order by all of them. red: kRowWarps floats of shared memory.
template <class Op>
__device__ float block_reduce(float v, float* red, Op op) {
  for (int off = 16; off > 0; off >>= 1) v = op(v, __shfl_xor_sync(0xffffffffu, v, off));  // within the warp
  __syncthreads();  // red may still be read by a previous reduction
  if (threadIdx.x % 32 == 0) red[threadIdx.x / 32] = v;
  __syncthreads();
  v = red[0];
  for (int w = 1; w < kRowWarps; ++w) v = op(v, red[w]);
  return v;
}

// ---------------------------------------------------------------------------------------------------------
// Kernels.

// naive_softmax: one CTA per row (r, i). The pipelined score is written back over gS (read back by the same
// thread), then m = max_j s, l = sum_j exp(s - m), lse = m + log l, P = exp(s - lse) rounded to T.
//   gS: [g, lq, lk] fp32 scale Q K^T in, pipelined scores out;  gP: [g, lq, lk] T.
template <class T>
__global__ void __launch_bounds__(kRowThreads) naive_softmax_kernel(RowArgs ra, float* gS, T* gP) {
  __shared__ float sRed[kRowWarps];
  const int r = blockIdx.y, i = blockIdx.x, h = ra.h0 + r;
  const size_t row = (static_cast<size_t>(r) * ra.lq + i) * ra.lk;
  float m = neg_inf();
  for (int j = threadIdx.x; j < ra.lk; j += kRowThreads) {
    const float x = row_score<T>(ra, h, i, j, gS[row + j], nullptr);
    gS[row + j] = x;
    m = fmaxf(m, x);  // m = max_j s
  }
  m = block_reduce(m, sRed, MaxOp{});
  float l = 0.f;
  if (m != neg_inf())
    for (int j = threadIdx.x; j < ra.lk; j += kRowThreads)
      l += expf(gS[row + j] - m);  // l = sum_j exp(s - m)
  l = block_reduce(l, sRed, SumOp{});
  const float lse = l > 0.f ? m + logf(l) : neg_inf();  // lse = m + log l; -inf: no visible key
  if (threadIdx.x == 0) ra.lse[r * ra.lse_head_stride + i] = lse;
  for (int j = threadIdx.x; j < ra.lk; j += kRowThreads) {
    const float pj = lse == neg_inf() ? 0.f : expf(gS[row + j] - lse);  // P = exp(s - lse); 0 where masked
    gP[row + j] = from_float<T>(pj);                                    // rounded as before P V
  }
}

// naive_bwd_softmax: one CTA per row. P = exp(s - lse) with the forward's lse, in fp32 (0 where masked or for
// a row with no visible key); with a softcap, its derivative 1 - tanh^2(s / c) is written over gS.
//   gS: [g, lq, lk] fp32 scale Q K^T in, dcap out (softcap > 0);  gP: [g, lq, lk] fp32.
template <class T>
__global__ void __launch_bounds__(kRowThreads) naive_bwd_softmax_kernel(RowArgs ra, float* gS, float* gP) {
  const int r = blockIdx.y, i = blockIdx.x, h = ra.h0 + r;
  const size_t row = (static_cast<size_t>(r) * ra.lq + i) * ra.lk;
  const float lse = ra.lse[r * ra.lse_head_stride + i];
  const bool cap = ra.a.softcap > 0.f;
  for (int j = threadIdx.x; j < ra.lk; j += kRowThreads) {
    float dcap = 1.f;
    const float x = row_score<T>(ra, h, i, j, gS[row + j], &dcap);
    gP[row + j] = lse == neg_inf() ? 0.f : expf(x - lse);  // P = exp(s - lse); exp(-inf) = 0 where masked
    if (cap) gS[row + j] = dcap;
  }
}

// naive_bwd_ds: one CTA per row. D = rowsum(dO o O) in fp32; dS = P o (dP - D); dbias += dS (over the bias's
// broadcast dims, before the softcap's derivative: the bias is added after the cap); dS *= dcap; P and dS
// rounded to T for the dV, dQ and dK products.
//   gP, gdP, gDcap (nullptr without softcap): [g, lq, lk] fp32;  gPt, gdSt: [g, lq, lk] T.
//   dO, O: the rows of (sequence b, head h0): row i of head h0 + r at i * ld_o + r * dv.
template <class T>
__global__ void __launch_bounds__(kRowThreads)
    naive_bwd_ds_kernel(RowArgs ra, const float* gP, const float* gdP, const float* gDcap, const T* dO,
                        const T* O, int64_t ld_o, int dv, T* gPt, T* gdSt, float* dbias) {
  __shared__ float sRed[kRowWarps];
  const int r = blockIdx.y, i = blockIdx.x, h = ra.h0 + r;
  const size_t row = (static_cast<size_t>(r) * ra.lq + i) * ra.lk;
  const T* dorow = dO + i * ld_o + static_cast<int64_t>(r) * dv;
  const T* orow = O + i * ld_o + static_cast<int64_t>(r) * dv;
  float dot = 0.f;
  for (int c = threadIdx.x; c < dv; c += kRowThreads) dot += to_float(dorow[c]) * to_float(orow[c]);
  const float D = block_reduce(dot, sRed, SumOp{});  // D = sum_c dO[i, c] O[i, c]
  for (int j = threadIdx.x; j < ra.lk; j += kRowThreads) {
    const float pj = gP[row + j];
    float ds = pj * (gdP[row + j] - D);  // dS = P o (dP - D)
    if (dbias && pj != 0.f)
      atomicAdd(dbias + bias_index(ra.a, ra.b, h, i, j), ds);  // dbias = sum of dS over broadcast
    if (gDcap) ds *= gDcap[row + j];                           // through the softcap: dS o (1 - tanh^2)
    gPt[row + j] = from_float<T>(pj);                          // P rounded as before P^T dO
    gdSt[row + j] = from_float<T>(ds);                         // dS rounded as before dS K, dS^T Q
  }
}

// The fp32 dK, dV accumulators of (sequence b, kv head hk) ([lk, d], [lk, dv], row-major) to the input dtype
// at their BSHD rows (row j at j * ld_k of dk, j * ld_v of dv).
template <class T>
__global__ void __launch_bounds__(kConvertThreads)
    naive_bwd_convert_dkdv_kernel(const float* dk_acc, const float* dv_acc, T* dk, T* dv, int64_t lk, int d,
                                  int d_v, int64_t ld_k, int64_t ld_v) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  const int64_t first = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  for (int64_t e = first; e < lk * d; e += stride) dk[(e / d) * ld_k + e % d] = from_float<T>(dk_acc[e]);
  for (int64_t e = first; e < lk * d_v; e += stride)
    dv[(e / d_v) * ld_v + e % d_v] = from_float<T>(dv_acc[e]);
}

// naive_scores (and naive_bwd_scores, the same GEMM): S^T (lk x lq, col-major) = scale K Q^T into gS [g, lq,
// lk] fp32, batched over the g query heads of one kv head (K shared: stride 0); gQ, gK at row 0 of the sequence.
template <class T>
void scores_gemm(cublasHandle_t blas, const AttentionParams& a, const T* gQ, const T* gK, float* gS,
                 int64_t lq, int64_t lk) {
  constexpr cudaDataType_t kT = cublas::Elem<T>::kCuda;
  const int64_t d = a.head_dim;
  cublas::gemm(blas, CUBLAS_OP_T, CUBLAS_OP_N, lk, lq, d, a.scale, {gK, kT, a.heads_kv * d, 0},
               {gQ, kT, a.heads_q * d, d}, 0.f, gS, CUDA_R_32F, lk, lq * lk, a.group);
}

// ---------------------------------------------------------------------------------------------------------
// Workspace: one (sequence, kv head) at a time, sized for the largest sequence; n = g * lq * lk.
//   forward : [s]  gS  fp32 [g, lq, lk]  scale Q K^T, then the pipelined scores
//             [p]  gP  T    [g, lq, lk]  P = exp(s - lse), rounded (in the fp32 gP slot)
//   backward: [s]  gS  fp32 [g, lq, lk]  scale Q K^T, then dcap = 1 - tanh^2(s / c) (softcap > 0)
//             [p]  gP  fp32 [g, lq, lk]  P = exp(s - lse)
//             [dp] gdP fp32 [g, lq, lk]  dP = dO V^T
//             [pt] gPt T    [g, lq, lk]  P rounded
//             [ds] gdS T    [g, lq, lk]  dS = P o (dP - D) o dcap, rounded
//             [dk] gdK fp32 [lk, d]      dK = scale sum_h dS_h^T Q_h
//             [dv] gdV fp32 [lk, dv]     dV = sum_h P_h^T dO_h
struct Layout {
  size_t s = 0, p = 0, dp = 0, pt = 0, ds = 0, dk = 0, dv = 0, total = 0;  // byte offsets; total: bytes
};

size_t align_up(size_t x) {
  return (x + kAlign - 1) / kAlign * kAlign;
}

Layout layout(const AttentionProblem& p, int64_t lq, int64_t lk) {
  const size_t n = static_cast<size_t>(p.group_size()) * static_cast<size_t>(lq) * static_cast<size_t>(lk);
  const size_t e = static_cast<size_t>(dtype_bytes(p.dtype));
  Layout w;
  w.s = 0;
  w.p = w.s + align_up(n * sizeof(float));
  w.dp = w.p + align_up(n * sizeof(float));
  w.pt = w.dp + align_up(n * sizeof(float));
  w.ds = w.pt + align_up(n * e);
  w.dk = w.ds + align_up(n * e);
  w.dv = w.dk + align_up(static_cast<size_t>(lk * p.head_dim) * sizeof(float));
  w.total = w.dv + align_up(static_cast<size_t>(lk * p.head_dim_v) * sizeof(float));
  return w;
}

// ---------------------------------------------------------------------------------------------------------
// The registered entry points.

std::string unsupported(const AttentionProblem& p, const TileConfig&) {
  if (p.dtype != DType::F32 && p.dtype != DType::F16 && p.dtype != DType::BF16)
    return std::string("dtype ") + std::string(dtype_name(p.dtype)) + " (naive-v1 runs fp32, fp16 and bf16)";
  if (p.head_dim < 1 || p.head_dim > kMaxHeadDim)
    return "head_dim " + std::to_string(p.head_dim) + " (naive-v1 runs 1.." + std::to_string(kMaxHeadDim) +
           ")";
  if (p.head_dim_v < 1 || p.head_dim_v > kMaxHeadDim)
    return "head_dim_v " + std::to_string(p.head_dim_v) + " (naive-v1 runs 1.." +
           std::to_string(kMaxHeadDim) + ")";
  if (p.heads_kv < 1 || p.heads_q % p.heads_kv != 0) return "heads_q is not a multiple of heads_kv";
  if (p.group_size() > kMaxGridY)
    return "group of " + std::to_string(p.group_size()) + " query heads per kv head (gridDim.y <= 65535)";
  return "";
}

size_t workspace_bytes(const AttentionProblem& p, const TileConfig&) {
  size_t bytes = 0;
  for (int64_t b = 0; b < p.batch; ++b) bytes = std::max(bytes, layout(p, p.len_q(b), p.len_k(b)).total);
  return bytes;
}

void require(bool ok, const char* what) {
  if (!ok) throw InputError("naive-v1", std::string("missing device buffer: ") + what);
}

void check_runnable(const AttentionProblem& p, const TileConfig& c, const DeviceArgs& args) {
  if (const std::string why = unsupported(p, c); !why.empty()) throw InputError("naive-v1", why);
  require(args.q && args.k && args.v, "q, k, v");
  require(args.o && args.lse, "o, lse");
  require(p.bias == BroadcastShape::None || args.bias, "bias");
  require(p.mask == BroadcastShape::None || args.mask, "mask");
  require(!p.alibi || args.alibi_slopes, "alibi_slopes");
  require(workspace_bytes(p, c) == 0 || args.workspace, "workspace");
}

// make_params(p) (gpu/src), held to the problem on every integer and flag this version reads (a disagreement
// would give wrong numbers silently, so it is an error here); scale and softcap taken from the problem.
AttentionParams checked_params(const AttentionProblem& p) {
  AttentionParams a = make_params(p);  // throws InputError when a size exceeds int
  const auto expect = [](bool ok, const char* field) {
    if (!ok)
      throw std::logic_error(std::string("naive-v1: make_params disagrees with the problem on ") + field);
  };
  // Strides of a [b|1, h|1, seqlen_q, seqlen_k] tensor, from the problem's own indexing (the reference's).
  const auto strides_match = [&](BroadcastShape s, int64_t sb, int64_t sh, int64_t sq) {
    const int64_t base = p.broadcast_index(s, 0, 0, 0, 0);
    return p.broadcast_index(s, 1, 0, 0, 0) - base == sb && p.broadcast_index(s, 0, 1, 0, 0) - base == sh &&
           p.broadcast_index(s, 0, 0, 1, 0) - base == sq && p.broadcast_index(s, 0, 0, 0, 1) - base == 1;
  };
  expect(a.heads_q == p.heads_q && a.heads_kv == p.heads_kv && a.group == p.group_size(), "heads");
  expect(a.head_dim == p.head_dim && a.head_dim_v == p.head_dim_v, "head dims");
  // A window side is the same when equal, or unbounded on both (-1, or too far to hide a key: >= Sq + Sk).
  const auto same_side = [&](int64_t x, int64_t y) {
    const auto unbounded = [&](int64_t w) { return w < 0 || w >= p.seqlen_q + p.seqlen_k; };
    return x == y || (unbounded(x) && unbounded(y));
  };
  expect(same_side(a.window_left, p.window_left) && same_side(a.window_right, p.window_right), "window");
  expect(a.alibi == p.alibi, "alibi");
  expect(a.has_bias == (p.bias != BroadcastShape::None), "has_bias");
  expect(a.has_mask == (p.mask != BroadcastShape::None), "has_mask");
  expect(!a.has_bias || strides_match(p.bias, a.bias_stride_b, a.bias_stride_h, a.bias_stride_q),
         "bias strides");
  expect(!a.has_mask || strides_match(p.mask, a.mask_stride_b, a.mask_stride_h, a.mask_stride_q),
         "mask strides");
  // A side that hides no key is made -1: window_visible's int arithmetic (diag - left) then cannot overflow.
  if (a.window_left >= p.seqlen_q + p.seqlen_k) a.window_left = -1;
  if (a.window_right >= p.seqlen_q + p.seqlen_k) a.window_right = -1;
  // The two fp32 constants as the reference's fp32 pipeline rounds them (static_cast of the doubles).
  a.scale = static_cast<float>(p.softmax_scale());
  a.softcap = static_cast<float>(p.softcap);
  return a;
}

// The row-kernel arguments of (sequence b, first query head h0).
RowArgs row_args(const AttentionProblem& p, const AttentionParams& a, const DeviceArgs& args, int64_t b,
                 int64_t h0) {
  RowArgs ra;
  ra.a = a;
  ra.b = static_cast<int>(b);
  ra.h0 = static_cast<int>(h0);
  ra.lq = static_cast<int>(p.len_q(b));
  ra.lk = static_cast<int>(p.len_k(b));
  ra.in.bias = a.has_bias ? args.bias : nullptr;
  ra.in.mask = a.has_mask ? args.mask : nullptr;
  ra.in.block_mask = a.has_block_mask ? args.block_mask : nullptr;
  ra.in.slopes = a.alibi ? args.alibi_slopes : nullptr;
  ra.lse = args.lse + p.lse_index(b, h0, 0);
  ra.lse_head_stride = p.varlen() ? p.total_q() : p.seqlen_q;  // lse(b, h + 1, i) - lse(b, h, i)
  return ra;
}

template <class T>
void forward_t(const AttentionProblem& p, const DeviceArgs& args) {
  const AttentionParams a = checked_params(p);
  const auto stream = static_cast<cudaStream_t>(args.stream);
  cublasHandle_t blas = cublas::handle(stream);
  constexpr cudaDataType_t kT = cublas::Elem<T>::kCuda;
  const int64_t g = a.group, d = a.head_dim, dv = a.head_dim_v, hq = a.heads_q, hkv = a.heads_kv;
  const T* q = static_cast<const T*>(args.q);  // [total_q, hq, d]
  const T* k = static_cast<const T*>(args.k);  // [total_k, hkv, d]
  const T* v = static_cast<const T*>(args.v);  // [total_k, hkv, dv]
  T* o = static_cast<T*>(args.o);              // [total_q, hq, dv]
  auto* ws = static_cast<unsigned char*>(args.workspace);
  for (int64_t b = 0; b < p.batch; ++b) {
    const int64_t lq = p.len_q(b), lk = p.len_k(b), oq = p.offset_q(b), ok = p.offset_k(b);
    if (lq == 0) continue;
    const Layout w = layout(p, lq, lk);
    auto* gS = reinterpret_cast<float*>(ws + w.s);  // [g, lq, lk] fp32
    auto* gP = reinterpret_cast<T*>(ws + w.p);      // [g, lq, lk] T
    // No key at all: o = 0 for every head of the sequence's rows (contiguous); lse = -inf by naive_softmax.
    if (lk == 0) FLASHSIM_CUDA_CHECK(cudaMemsetAsync(o + oq * hq * dv, 0, sizeof(T) * lq * hq * dv, stream));
    for (int64_t hk = 0; hk < hkv; ++hk) {
      const int64_t h0 = hk * g;
      const T* gQ = q + (oq * hq + h0) * d;   // row i of head h0 + r: gQ + i * hq * d + r * d
      const T* gK = k + (ok * hkv + hk) * d;  // row j: gK + j * hkv * d
      const T* gV = v + (ok * hkv + hk) * dv;
      T* gO = o + (oq * hq + h0) * dv;
      if (lk > 0) scores_gemm(blas, a, gQ, gK, gS, lq, lk);  // naive_scores
      // naive_softmax: score pipeline, lse, P rounded to T; one CTA per (row i, head r).
      const RowArgs ra = row_args(p, a, args, b, h0);
      naive_softmax_kernel<T>
          <<<dim3(static_cast<unsigned>(lq), static_cast<unsigned>(g)), kRowThreads, 0, stream>>>(ra, gS, gP);
      FLASHSIM_CUDA_CHECK(cudaGetLastError());
      // naive_pv: O^T (dv x lq, col-major, rows of o) = V^T P^T, batched over the group's heads (V shared).
      if (lk > 0)
        cublas::gemm(blas, CUBLAS_OP_N, CUBLAS_OP_N, dv, lq, lk, 1.f, {gV, kT, hkv * dv, 0},
                     {gP, kT, lk, lq * lk}, 0.f, gO, kT, hq * dv, dv, g);
    }
  }
}

template <class T>
void backward_t(const AttentionProblem& p, const DeviceArgs& args) {
  const AttentionParams a = checked_params(p);
  const auto stream = static_cast<cudaStream_t>(args.stream);
  cublasHandle_t blas = cublas::handle(stream);
  constexpr cudaDataType_t kT = cublas::Elem<T>::kCuda;
  const int64_t g = a.group, d = a.head_dim, dv = a.head_dim_v, hq = a.heads_q, hkv = a.heads_kv;
  const T* q = static_cast<const T*>(args.q);        // [total_q, hq, d]
  const T* k = static_cast<const T*>(args.k);        // [total_k, hkv, d]
  const T* v = static_cast<const T*>(args.v);        // [total_k, hkv, dv]
  const T* o = static_cast<const T*>(args.o);        // [total_q, hq, dv], the forward's output
  const T* dout = static_cast<const T*>(args.dout);  // [total_q, hq, dv]
  T* dq = static_cast<T*>(args.dq);                  // [total_q, hq, d]
  T* dk = static_cast<T*>(args.dk);                  // [total_k, hkv, d]
  T* dvv = static_cast<T*>(args.dv);                 // [total_k, hkv, dv]
  float* dbias = p.bias != BroadcastShape::None ? args.dbias : nullptr;  // the bias's shape, fp32
  auto* ws = static_cast<unsigned char*>(args.workspace);
  // dbias is accumulated with atomics over every sequence and head: start from zero (the harness fills NaN).
  if (dbias) FLASHSIM_CUDA_CHECK(cudaMemsetAsync(dbias, 0, sizeof(float) * p.bias_elems(), stream));
  for (int64_t b = 0; b < p.batch; ++b) {
    const int64_t lq = p.len_q(b), lk = p.len_k(b), oq = p.offset_q(b), ok = p.offset_k(b);
    if (lq == 0 ||
        lk == 0) {  // nothing visible: zero gradients on the sequence's rows (contiguous, all heads)
      if (lq > 0) FLASHSIM_CUDA_CHECK(cudaMemsetAsync(dq + oq * hq * d, 0, sizeof(T) * lq * hq * d, stream));
      if (lk > 0)
        FLASHSIM_CUDA_CHECK(cudaMemsetAsync(dk + ok * hkv * d, 0, sizeof(T) * lk * hkv * d, stream));
      if (lk > 0)
        FLASHSIM_CUDA_CHECK(cudaMemsetAsync(dvv + ok * hkv * dv, 0, sizeof(T) * lk * hkv * dv, stream));
      continue;
    }
    const Layout w = layout(p, lq, lk);
    const int64_t n_head = lq * lk;                   // elements of one head's [lq, lk] matrix
    auto* gS = reinterpret_cast<float*>(ws + w.s);    // [g, lq, lk] fp32: S, then dcap
    auto* gP = reinterpret_cast<float*>(ws + w.p);    // [g, lq, lk] fp32
    auto* gdP = reinterpret_cast<float*>(ws + w.dp);  // [g, lq, lk] fp32
    auto* gPt = reinterpret_cast<T*>(ws + w.pt);      // [g, lq, lk] T
    auto* gdS = reinterpret_cast<T*>(ws + w.ds);      // [g, lq, lk] T
    auto* gdK = reinterpret_cast<float*>(ws + w.dk);  // [lk, d] fp32
    auto* gdV = reinterpret_cast<float*>(ws + w.dv);  // [lk, dv] fp32
    for (int64_t hk = 0; hk < hkv; ++hk) {
      const int64_t h0 = hk * g;
      const T* gQ = q + (oq * hq + h0) * d;   // row i of head h0 + r: gQ + i * hq * d + r * d
      const T* gK = k + (ok * hkv + hk) * d;  // row j: gK + j * hkv * d
      const T* gV = v + (ok * hkv + hk) * dv;
      const T* gO = o + (oq * hq + h0) * dv;
      const T* gdO = dout + (oq * hq + h0) * dv;
      T* gdQ = dq + (oq * hq + h0) * d;
      const dim3 rows(static_cast<unsigned>(lq), static_cast<unsigned>(g));  // one CTA per (row i, head r)
      const RowArgs ra = row_args(p, a, args, b, h0);
      scores_gemm(blas, a, gQ, gK, gS, lq, lk);  // naive_bwd_scores
      // naive_bwd_softmax: P = exp(s - lse) in fp32, dcap over gS.
      naive_bwd_softmax_kernel<T><<<rows, kRowThreads, 0, stream>>>(ra, gS, gP);
      FLASHSIM_CUDA_CHECK(cudaGetLastError());
      // naive_bwd_dp: dP^T (lk x lq, col-major) = V dO^T, batched over the group's heads (V shared).
      cublas::gemm(blas, CUBLAS_OP_T, CUBLAS_OP_N, lk, lq, dv, 1.f, {gV, kT, hkv * dv, 0},
                   {gdO, kT, hq * dv, dv}, 0.f, gdP, CUDA_R_32F, lk, n_head, g);
      // naive_bwd_ds: D, dS = P o (dP - D) (o dcap), dbias; P and dS rounded to T.
      naive_bwd_ds_kernel<T><<<rows, kRowThreads, 0, stream>>>(ra, gP, gdP, a.softcap > 0.f ? gS : nullptr,
                                                               gdO, gO, hq * dv, static_cast<int>(dv), gPt,
                                                               gdS, dbias);
      FLASHSIM_CUDA_CHECK(cudaGetLastError());
      // naive_bwd_dv: dV^T (dv x lk, col-major) += dO_r^T P_r, one GEMM per head of the group (beta = 1 after
      // the first: the group's sum in fp32).
      for (int64_t r = 0; r < g; ++r)
        cublas::gemm(blas, CUBLAS_OP_N, CUBLAS_OP_T, dv, lk, lq, 1.f, {gdO + r * dv, kT, hq * dv, 0},
                     {gPt + r * n_head, kT, lk, 0}, r == 0 ? 0.f : 1.f, gdV, CUDA_R_32F, dv, 0, 1);
      // naive_bwd_dq: dQ^T (d x lq, col-major, rows of dq) = scale K^T dS^T, batched over the group's heads.
      cublas::gemm(blas, CUBLAS_OP_N, CUBLAS_OP_N, d, lq, lk, a.scale, {gK, kT, hkv * d, 0},
                   {gdS, kT, lk, n_head}, 0.f, gdQ, kT, hq * d, d, g);
      // naive_bwd_dk: dK^T (d x lk, col-major) += scale Q_r^T dS_r, one GEMM per head of the group.
      for (int64_t r = 0; r < g; ++r)
        cublas::gemm(blas, CUBLAS_OP_N, CUBLAS_OP_T, d, lk, lq, a.scale, {gQ + r * d, kT, hq * d, 0},
                     {gdS + r * n_head, kT, lk, 0}, r == 0 ? 0.f : 1.f, gdK, CUDA_R_32F, d, 0, 1);
      // naive_bwd_dk (epilogue, no model of its own): the fp32 dK, dV accumulators to T at their BSHD rows.
      const int64_t elems = lk * std::max(d, dv);
      const auto blocks =
          static_cast<unsigned>(std::min(kConvertMaxBlocks, (elems + kConvertThreads - 1) / kConvertThreads));
      naive_bwd_convert_dkdv_kernel<T><<<blocks, kConvertThreads, 0, stream>>>(
          gdK, gdV, dk + (ok * hkv + hk) * d, dvv + (ok * hkv + hk) * dv, lk, static_cast<int>(d),
          static_cast<int>(dv), hkv * d, hkv * dv);
      FLASHSIM_CUDA_CHECK(cudaGetLastError());
    }
  }
}

// Calls f with a value of the element type of p.dtype.
template <class F>
void dispatch(const AttentionProblem& p, F&& f) {
  switch (p.dtype) {
    case DType::F32:
      return f(std::type_identity<float>{});
    case DType::F16:
      return f(std::type_identity<__half>{});
    case DType::BF16:
      return f(std::type_identity<__nv_bfloat16>{});
    default:
      throw InputError("dtype", std::string("naive-v1 does not run ") + std::string(dtype_name(p.dtype)));
  }
}

void forward(const AttentionProblem& p, const TileConfig& c, const DeviceArgs& args) {
  check_runnable(p, c, args);
  dispatch(p, [&](auto t) { forward_t<typename decltype(t)::type>(p, args); });
}

void backward(const AttentionProblem& p, const TileConfig& c, const DeviceArgs& args) {
  check_runnable(p, c, args);
  require(args.dout, "dout");
  require(args.dq && args.dk && args.dv, "dq, dk, dv");
  dispatch(p, [&](auto t) { backward_t<typename decltype(t)::type>(p, args); });
}

}  // namespace

KernelVersion naive_v1() {
  KernelVersion kv;
  kv.name = "naive-v1";
  kv.algorithm = Algorithm::Naive;
  kv.backend = Backend::Cuda;
  kv.summary =
      "standard attention: S, P (and dP, dS) materialized per (sequence, kv head); cuBLAS GEMMs, one CTA per "
      "softmax row";
  // In launch order: the cuBLAS GEMMs are naive_scores, naive_pv, naive_bwd_scores, naive_bwd_dp,
  // naive_bwd_dv, naive_bwd_dq, naive_bwd_dk; the row kernels naive_softmax, naive_bwd_softmax, naive_bwd_ds
  // (the dK/dV conversion kernel runs as the epilogue of naive_bwd_dk and has no model of its own).
  kv.sim_kernels = {"naive_scores", "naive_softmax", "naive_pv",     "naive_bwd_scores", "naive_bwd_softmax",
                    "naive_bwd_dp", "naive_bwd_ds",  "naive_bwd_dv", "naive_bwd_dq",     "naive_bwd_dk"};
  kv.features = kFeatureBlockMask;  // masks the scores of inactive tiles (computes every tile)
  kv.unsupported = unsupported;
  kv.workspace_bytes = workspace_bytes;
  kv.forward = forward;
  kv.backward = backward;
  return kv;
}

}  // namespace flashsim::gpu
