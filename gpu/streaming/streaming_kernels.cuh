#pragma once
// The key-streaming forward kernels on CUDA cores, one template on the pass count (the simulator's
// fwd_three_pass / fwd_two_pass, tiling_sim/src/kernels/key_streaming.cpp; the CPU algorithms of
// reference/src/forward_streaming.cpp):
//   three-pass (safe softmax):   1. m = max_j s;  2. l = sum_j exp(s - m);  3. O = sum_j (exp(s - m) / l) v_j
//   two-pass (online softmax):   1. per key block m_new = max(m, rowmax(S)), l = l exp(m - m_new)
//                                   + rowsum(exp(S - m_new));  2. O = sum_j (exp(s - m) / l) v_j
// One CTA per (query block of Br rows, sequence b, query head h): grid (ceil(seqlen_q / Br), batch, heads_q),
// warps * 32 threads; thread t owns rows t, t + threads, ... of the block (one row each when Br = threads).
// A CTA exits at once past its sequence's end; finds the key blocks [n_min, n_max) its rows can see through
// the window (the simulator's visible_key_blocks; none: o = 0, lse = -inf, nothing loaded); loads its Q tile
// once; then walks the visible key blocks once per pass, K staged in shared memory in every pass and V in the
// last; writes O (already normalized) in the input dtype and lse = m + log l in fp32 once.
// Everything lives in shared memory (sizes at run time, any head dim): Q and O in fp32, the block's scores
// S / P in fp32, the row statistics m, l, and the K and V tiles in the input dtype.
// Precision (reference/include/flashsim/ref/options.h, "Emulated"): fp32 scores and statistics; P is
// normalized, then rounded to the input dtype before P V; fp32 accumulation; o rounded once.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "cuda_launch.h"  // FLASHSIM_CUDA_CHECK, allow_dynamic_smem, device_smem_optin
#include "flashsim/error.h"
#include "flashsim/gpu/kernel.h"
#include "flashsim/gpu/params.h"
#include "score_pipeline.cuh"

namespace flashsim::gpu::streaming {

// The kernel's arguments, by value. `a` from make_params with window sides that hide no key made -1.
struct StreamingParams {
  AttentionParams a;
  const void* q = nullptr;        // [total_q, heads_q, d]
  const void* k = nullptr;        // [total_k, heads_kv, d]
  const void* v = nullptr;        // [total_k, heads_kv, dv]
  void* o = nullptr;              // [total_q, heads_q, dv]
  float* lse = nullptr;           // [batch, heads_q, seqlen_q], or [heads_q, total_q] with varlen (lse_index)
  ScoreInputs in;                 // bias, mask, alibi slopes (score_pipeline.cuh)
  const int32_t* cu_q = nullptr;  // [batch + 1] with varlen, else nullptr
  const int32_t* cu_k = nullptr;
  int block_q = 0, block_k = 0;  // Br, Bc (TileConfig)
};

// An odd row pitch in 4-byte words: 32 threads reading the same column of 32 consecutive rows then hit the 32
// banks once each (gcd(pitch, 32) = 1).
__host__ __device__ inline int odd_pitch(int cols) {
  return cols | 1;
}

// The shared-memory layout, in bytes from the dynamic buffer's start (every part a multiple of 4 bytes long,
// so the fp32 parts stay aligned; the T tiles come last):
//   sQ [Br, pitch(d)]  fp32   the query rows, converted once
//   sO [Br, pitch(dv)] fp32   the O accumulator (last pass)
//   sS [Br, pitch(Bc)] fp32   the current key block's scores, then P (rounded to T, normalized)
//   sM [Br], sL [Br]   fp32   the row max m and sum l
//   sK [Bc, d]         T      the current K block (all threads read the same key: a broadcast, no padding)
//   sV [Bc, dv]        T      the current V block (last pass)
struct SmemLayout {
  size_t q = 0, o = 0, s = 0, m = 0, l = 0, k = 0, v = 0, total = 0;
  int ldq = 0, ldo = 0, lds = 0;  // row pitches of sQ, sO, sS, in floats
};

__host__ __device__ inline SmemLayout smem_layout(int block_q, int block_k, int d, int dv, int elem_bytes) {
  SmemLayout L;
  L.ldq = odd_pitch(d);
  L.ldo = odd_pitch(dv);
  L.lds = odd_pitch(block_k);
  const size_t br = static_cast<size_t>(block_q), f = sizeof(float);
  L.q = 0;
  L.o = L.q + br * L.ldq * f;
  L.s = L.o + br * L.ldo * f;
  L.m = L.s + br * L.lds * f;
  L.l = L.m + br * f;
  L.k = L.l + br * f;
  L.v = L.k + static_cast<size_t>(block_k) * d * elem_bytes;
  // Rounded up to 4 bytes (an odd d with a 2-byte T); sV is read as T only, so its own offset needs only
  // T's alignment.
  L.total = (L.v + static_cast<size_t>(block_k) * dv * elem_bytes + 3) / 4 * 4;
  return L;
}

// Loads rows [0, rows) of a [rows, cols] tile (row r at src + r * ld) into dst ([rows, cols], packed),
// cooperatively: consecutive threads read consecutive elements of a row (coalesced).
template <class T>
__device__ inline void load_tile(T* dst, const T* src, int64_t ld, int rows, int cols) {
  for (int e = static_cast<int>(threadIdx.x); e < rows * cols; e += static_cast<int>(blockDim.x))
    dst[e] = src[(e / cols) * ld + e % cols];
}

// The kernel: kPasses = 3 (three-pass safe softmax) or 2 (two-pass online softmax); T the input dtype.
template <int kPasses, class T>
__global__ void streaming_fwd_kernel(const StreamingParams prm) {
  static_assert(kPasses == 2 || kPasses == 3, "three-pass or two-pass");
  extern __shared__ float4 smem_f4[];  // float4: 16-byte alignment of the dynamic buffer
  auto* smem = reinterpret_cast<unsigned char*>(smem_f4);
  const AttentionParams& a = prm.a;
  const int br = prm.block_q, bc = prm.block_k, d = a.head_dim, dv = a.head_dim_v;
  const int b = static_cast<int>(blockIdx.y), h = static_cast<int>(blockIdx.z);
  const int q0 = static_cast<int>(blockIdx.x) * br;
  const int lq = seq_len(a, prm.cu_q, a.seqlen_q, b);
  if (q0 >= lq) return;  // past this sequence's end (varlen: the grid covers the longest): nothing to write
  const int lk = seq_len(a, prm.cu_k, a.seqlen_k, b);
  const int64_t off_q = seq_offset(a, prm.cu_q, a.seqlen_q, b);
  const int64_t off_k = seq_offset(a, prm.cu_k, a.seqlen_k, b);
  const int hk = h / a.group;  // GQA / MQA: the kv head of query head h
  const int tid = static_cast<int>(threadIdx.x), nthreads = static_cast<int>(blockDim.x);
  const int q_rows = min(br, lq - q0);

  const int64_t q_stride = static_cast<int64_t>(a.heads_q) * d;    // between rows of q
  const int64_t o_stride = static_cast<int64_t>(a.heads_q) * dv;   // between rows of o
  const int64_t k_stride = static_cast<int64_t>(a.heads_kv) * d;   // between rows of k
  const int64_t v_stride = static_cast<int64_t>(a.heads_kv) * dv;  // between rows of v
  // This CTA's rows start at q0: gQ and gO point at row q0 of the sequence, head h.
  const T* gQ = static_cast<const T*>(prm.q) + (off_q + q0) * q_stride + static_cast<int64_t>(h) * d;
  T* gO = static_cast<T*>(prm.o) + (off_q + q0) * o_stride + static_cast<int64_t>(h) * dv;
  const T* gK = static_cast<const T*>(prm.k) + off_k * k_stride + static_cast<int64_t>(hk) * d;
  const T* gV = static_cast<const T*>(prm.v) + off_k * v_stride + static_cast<int64_t>(hk) * dv;

  // ---- visible key blocks (the simulator's visible_key_blocks): rows [q0, q0 + Br) see keys [lo, hi).
  const int64_t shift = static_cast<int64_t>(lk) - lq;  // bottom-right alignment: diagonal j = i + shift
  const int64_t lo = a.window_left < 0 ? 0 : max(int64_t{0}, q0 + shift - a.window_left);
  const int64_t hi =
      a.window_right < 0 ? lk : min(static_cast<int64_t>(lk), q0 + br + shift + a.window_right);
  const int n_min = static_cast<int>(lo / bc);
  const int n_max = hi <= 0 ? 0 : static_cast<int>((hi + bc - 1) / bc);

  if (n_max <= n_min) {  // no visible key for any row: o = 0, lse = -inf, nothing loaded
    for (int e = tid; e < q_rows * dv; e += nthreads) gO[(e / dv) * o_stride + e % dv] = from_float<T>(0.f);
    for (int r = tid; r < q_rows; r += nthreads) prm.lse[lse_index(a, prm.cu_q, b, h, q0 + r)] = neg_inf();
    return;
  }

  const SmemLayout L = smem_layout(br, bc, d, dv, static_cast<int>(sizeof(T)));
  auto* sQ = reinterpret_cast<float*>(smem + L.q);  // [Br, ldq]
  auto* sO = reinterpret_cast<float*>(smem + L.o);  // [Br, ldo]
  auto* sS = reinterpret_cast<float*>(smem + L.s);  // [Br, lds]
  auto* sM = reinterpret_cast<float*>(smem + L.m);  // [Br]
  auto* sL = reinterpret_cast<float*>(smem + L.l);  // [Br]
  auto* sK = reinterpret_cast<T*>(smem + L.k);      // [Bc, d]
  auto* sV = reinterpret_cast<T*>(smem + L.v);      // [Bc, dv]

  // ---- Q once (fp32), the statistics and the accumulator initialized. Rows past the sequence are skipped
  // everywhere below (their results are never stored), so they need no zero fill.
  for (int e = tid; e < q_rows * d; e += nthreads)
    sQ[(e / d) * L.ldq + e % d] = to_float(gQ[(e / d) * q_stride + e % d]);
  for (int e = tid; e < q_rows * dv; e += nthreads) sO[(e / dv) * L.ldo + e % dv] = 0.f;
  for (int r = tid; r < q_rows; r += nthreads) {
    sM[r] = neg_inf();
    sL[r] = 0.f;
  }

  for (int pass = 1; pass <= kPasses; ++pass) {
    const bool last = pass == kPasses;
    for (int n = n_min; n < n_max; ++n) {
      const int k0 = n * bc, rk = min(bc, lk - k0);  // keys [k0, k0 + rk) of this block
      __syncthreads();  // the previous block's sK / sV (and the Q / statistics initialization) done with
      load_tile(sK, gK + static_cast<int64_t>(k0) * k_stride, k_stride, rk, d);
      if (last) load_tile(sV, gV + static_cast<int64_t>(k0) * v_stride, v_stride, rk, dv);
      __syncthreads();  // sK, sV visible to every thread
      for (int r = tid; r < q_rows; r += nthreads) {
        const int i = q0 + r;
        const float* q = sQ + r * L.ldq;
        float* srow = sS + r * L.lds;
        float tile_max = neg_inf();
        for (int j = 0; j < rk; ++j) {
          const T* kj = sK + j * d;
          float dot = 0.f;
#pragma unroll 4  // 4: enough independent loads in flight per FMA chain without code bloat for small d
          for (int c = 0; c < d; ++c) dot += q[c] * to_float(kj[c]);  // q.k, fp32
          const float s = score_pipeline<T>(a, prm.in, b, h, lq, lk, i, k0 + j, a.scale * dot, nullptr);
          srow[j] = s;
          tile_max = fmaxf(tile_max, s);  // rowmax(S) of this block
        }
        const float m = sM[r];
        if (pass == 1 && kPasses == 3) {
          sM[r] = fmaxf(m, tile_max);                               // m = max(m, rowmax(S))
        } else if (pass == 1) {                                     // two-pass statistics
          const float m_new = fmaxf(m, tile_max);                   // m_new = max(m, rowmax(S))
          const float sh = m_new == neg_inf() ? 0.f : m_new;        // safe shift: no visible key yet
          const float alpha = m == neg_inf() ? 0.f : expf(m - sh);  // alpha = exp(m - m_new)
          float sum = 0.f;
          for (int j = 0; j < rk; ++j) sum += srow[j] == neg_inf() ? 0.f : expf(srow[j] - sh);  // rowsum(P)
          sL[r] = sL[r] * alpha + sum;  // l = alpha l + rowsum(exp(S - m_new))
          sM[r] = m_new;
        } else if (!last) {  // three-pass pass 2: l += rowsum(exp(S - m))
          const float sh = m == neg_inf() ? 0.f : m;
          float sum = 0.f;
          for (int j = 0; j < rk; ++j) sum += srow[j] == neg_inf() ? 0.f : expf(srow[j] - sh);
          sL[r] += sum;
        } else {  // last pass: P = exp(S - m) / l rounded to T; O += P V
          const float sh = m == neg_inf() ? 0.f : m;
          const float l = sL[r];
          const float inv_l = l > 0.f ? 1.f / l : 0.f;  // 0: a row with no visible key gives o = 0
          for (int j = 0; j < rk; ++j) {
            const float p = srow[j] == neg_inf() ? 0.f : expf(srow[j] - sh) * inv_l;  // p = exp(s - m) / l
            srow[j] = to_float(from_float<T>(p));  // rounded to the input dtype, as before a tensor-core P V
          }
          float* o = sO + r * L.ldo;
          for (int c = 0; c < dv; ++c) {
            float acc = o[c];
#pragma unroll 4                                                                     // 4: as the q.k loop
            for (int j = 0; j < rk; ++j) acc += srow[j] * to_float(sV[j * dv + c]);  // O += P V, fp32
            o[c] = acc;
          }
        }
      }
    }
  }

  // ---- epilogue: o (normalized already) in the input dtype, lse = m + log l in fp32.
  __syncthreads();  // sO rows were written by their owners; the store below is spread over all threads
  for (int e = tid; e < q_rows * dv; e += nthreads)
    gO[(e / dv) * o_stride + e % dv] = from_float<T>(sO[(e / dv) * L.ldo + e % dv]);
  for (int r = tid; r < q_rows; r += nthreads) {
    const float l = sL[r];
    prm.lse[lse_index(a, prm.cu_q, b, h, q0 + r)] =
        l > 0.f ? sM[r] + logf(l) : neg_inf();  // lse = m + log l; -inf: no visible key
  }
}

// ---------------------------------------------------------------------------------------------------------
// Host side, shared by three-pass-v1 and two-pass-v1 (`name` in their messages).

constexpr int kMaxHeadDim = 256;       // the head dims these versions claim (any value 1..256 works)
constexpr int64_t kMaxGridYZ = 65535;  // gridDim.y (batch) and gridDim.z (heads_q) are at most 65535
constexpr int kMaxThreads = 1024;      // threads per CTA
// A bound on Br and Bc far above what fits in shared memory (S alone is Br x Bc fp32): it keeps the int
// arguments of smem_layout and their size_t products exact before the shared-memory check.
constexpr int64_t kMaxTileRows = int64_t{1} << 16;

inline std::string unsupported(const char* name, const AttentionProblem& p, const TileConfig& c) {
  const std::string n = name;
  if (p.dtype != DType::F32 && p.dtype != DType::F16 && p.dtype != DType::BF16)
    return "dtype " + std::string(dtype_name(p.dtype)) + " (" + n + " runs fp32, fp16 and bf16)";
  if (p.head_dim < 1 || p.head_dim > kMaxHeadDim || p.head_dim_v < 1 || p.head_dim_v > kMaxHeadDim)
    return "head_dim " + std::to_string(p.head_dim) + ", head_dim_v " + std::to_string(p.head_dim_v) + " (" +
           n + " runs 1.." + std::to_string(kMaxHeadDim) + ")";
  if (p.heads_kv < 1 || p.heads_q % p.heads_kv != 0) return "heads_q is not a multiple of heads_kv";
  if (p.batch > kMaxGridYZ || p.heads_q > kMaxGridYZ)
    return "batch or heads_q over 65535 (gridDim.y, gridDim.z)";
  if (c.stages != 1 || c.q_in_registers || c.kv_shared_buffer)
    return "tile " + c.describe() + ": " + n +
           " runs stages 1 without q_in_registers or kv_shared_buffer (no prefetch, separate K and V tiles)";
  if (c.warps < 1 || c.warps * 32 > kMaxThreads)
    return "warps " + std::to_string(c.warps) + " (" + n + " runs 1..32 warps per CTA)";
  if (c.block_q < 1 || c.block_k < 1 || c.block_q > kMaxTileRows || c.block_k > kMaxTileRows)
    return "tile " + c.describe() + ": Br and Bc must be 1.." + std::to_string(kMaxTileRows);
  const size_t smem =
      smem_layout(static_cast<int>(c.block_q), static_cast<int>(c.block_k), static_cast<int>(p.head_dim),
                  static_cast<int>(p.head_dim_v), dtype_bytes(p.dtype))
          .total;
  // The device's opt-in limit a CTA (227 KB on an H100), read at run time; none without a device.
  if (const int64_t optin = device_smem_optin(); optin > 0 && smem > static_cast<size_t>(optin))
    return "tile " + c.describe() + " needs " + std::to_string(smem) +
           " bytes of shared memory for head_dim " + std::to_string(p.head_dim) + " (" +
           std::string(dtype_name(p.dtype)) + "; at most " + std::to_string(optin) +
           "; fp32 Q, O, S tiles of Br rows plus K, V tiles of Bc rows)";
  return "";
}

inline void require(const char* name, bool ok, const char* what) {
  if (!ok) throw InputError(name, std::string("missing device buffer: ") + what);
}

template <int kPasses, class T>
void launch_t(const char* name, const StreamingParams& prm, int threads, cudaStream_t stream) {
  const auto kernel = streaming_fwd_kernel<kPasses, T>;
  const size_t smem =
      smem_layout(prm.block_q, prm.block_k, prm.a.head_dim, prm.a.head_dim_v, static_cast<int>(sizeof(T)))
          .total;
  allow_dynamic_smem(reinterpret_cast<const void*>(kernel), smem, name);
  const dim3 grid(static_cast<unsigned>((prm.a.seqlen_q + prm.block_q - 1) / prm.block_q),
                  static_cast<unsigned>(prm.a.batch), static_cast<unsigned>(prm.a.heads_q));
  kernel<<<grid, static_cast<unsigned>(threads), smem, stream>>>(prm);
  FLASHSIM_CUDA_CHECK(cudaGetLastError());
}

// The forward of kPasses passes: checks, parameters, the dtype dispatch and the launch.
template <int kPasses>
void forward(const char* name, const AttentionProblem& p, const TileConfig& c, const DeviceArgs& args) {
  if (const std::string why = unsupported(name, p, c); !why.empty()) throw InputError(name, why);
  require(name, args.q && args.k && args.v, "q, k, v");
  require(name, args.o && args.lse, "o, lse");
  require(name, p.bias == BroadcastShape::None || args.bias, "bias");
  require(name, p.mask == BroadcastShape::None || args.mask, "mask");
  require(name, !p.alibi || args.alibi_slopes, "alibi_slopes");
  require(name, !p.varlen() || (args.cu_seqlens_q && args.cu_seqlens_k), "cu_seqlens_q, cu_seqlens_k");

  StreamingParams prm;
  prm.a = make_params(p);  // throws InputError when a size exceeds int
  // A window side that hides no key is made -1: the window arithmetic then stays far from int overflow.
  if (prm.a.window_left >= p.seqlen_q + p.seqlen_k) prm.a.window_left = -1;
  if (prm.a.window_right >= p.seqlen_q + p.seqlen_k) prm.a.window_right = -1;
  if (prm.a.seqlen_q == 0 || prm.a.total_q == 0 || prm.a.batch == 0 || prm.a.heads_q == 0)
    return;  // no query row: nothing to write (and an empty grid is a launch error)
  prm.q = args.q;
  prm.k = args.k;
  prm.v = args.v;
  prm.o = args.o;
  prm.lse = args.lse;
  prm.in.bias = prm.a.has_bias ? args.bias : nullptr;
  prm.in.mask = prm.a.has_mask ? args.mask : nullptr;
  prm.in.block_mask = prm.a.has_block_mask ? args.block_mask : nullptr;
  prm.in.slopes = prm.a.alibi ? args.alibi_slopes : nullptr;
  prm.cu_q = p.varlen() ? args.cu_seqlens_q : nullptr;
  prm.cu_k = p.varlen() ? args.cu_seqlens_k : nullptr;
  prm.block_q = static_cast<int>(c.block_q);
  prm.block_k = static_cast<int>(c.block_k);
  const int threads = c.warps * 32;  // 32: threads per warp
  const auto stream = static_cast<cudaStream_t>(args.stream);
  switch (p.dtype) {
    case DType::F32:
      return launch_t<kPasses, float>(name, prm, threads, stream);
    case DType::F16:
      return launch_t<kPasses, __half>(name, prm, threads, stream);
    case DType::BF16:
      return launch_t<kPasses, __nv_bfloat16>(name, prm, threads, stream);
    default:
      throw std::logic_error(std::string(name) + ": dtype passed unsupported() but has no instance");
  }
}

// A version's registry entry: kName (a namespace-scope array, so that the plain functions the registry holds
// can name it) in every message; forward only, no workspace.
template <int kPasses, const char* kName>
KernelVersion make_version(Algorithm algorithm, std::string summary, std::string sim_kernel) {
  KernelVersion kv;
  kv.name = kName;
  kv.algorithm = algorithm;
  kv.backend = Backend::Cuda;
  kv.summary = std::move(summary);
  kv.sim_kernels = {std::move(sim_kernel)};
  kv.features = kFeatureBlockMask;  // masks the scores of inactive tiles (loads and computes every tile)
  kv.unsupported = [](const AttentionProblem& p, const TileConfig& c) { return unsupported(kName, p, c); };
  kv.forward = [](const AttentionProblem& p, const TileConfig& c, const DeviceArgs& args) {
    forward<kPasses>(kName, p, c, args);
  };
  return kv;
}

}  // namespace flashsim::gpu::streaming
