// fa3-v1's standalone development driver: builds on the GPU machine from the kernel headers alone (nvcc and the
// CUTLASS headers, no flashsim library), checks the forward against a plain fp32 attention on the GPU over a
// few shapes (odd lengths, GQA, causal, window, softcap, every head dim), then times it. The goldens check the
// same kernel through flashsim-gpu; this is the quick loop while the kernel changes.
//   bash bench/gpu/fa3_dev.sh CUTLASS_INCLUDE OUT   (compiles it with gpu/fa3/fa3_fwd_d*.cu, runs it, times SDPA)
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "fa3_launch.h"
#include "flashsim/families/fa3/walk.h"

using flashsim::gpu::fa3::Fa3FwdParams;

#define CHECK(call)                                                                         \
  do {                                                                                      \
    cudaError_t e_ = (call);                                                                \
    if (e_ != cudaSuccess) {                                                                \
      std::printf("CUDA error %s at %s:%d: %s\n", cudaGetErrorName(e_), __FILE__, __LINE__, \
                  cudaGetErrorString(e_));                                                  \
      std::exit(1);                                                                         \
    }                                                                                       \
  } while (0)

// Deterministic uniform [-1, 1) inputs from a hash of the index.
__global__ void fill_uniform(__nv_bfloat16* x, int64_t n, uint32_t seed) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    uint32_t h = uint32_t(i) * 2654435761u ^ seed * 0x9E3779B9u ^ uint32_t(i >> 32);
    h ^= h >> 16;
    h *= 0x85EBCA6Bu;
    h ^= h >> 13;
    x[i] = __float2bfloat16(float(h & 0xFFFFFF) / float(1 << 23) - 1.f);
  }
}

// One query row per thread, fp32, the same score pipeline (scale, softcap, bottom-right window).
__global__ void reference_attention(Fa3FwdParams a, float* o, float* lse) {
  const int row = blockIdx.x * blockDim.x + threadIdx.x, h = blockIdx.y, b = blockIdx.z;
  if (row >= a.seqlen_q) return;
  const int d = a.head_dim, hk = h / a.group;
  auto q = static_cast<const __nv_bfloat16*>(a.q) + ((int64_t(b) * a.seqlen_q + row) * a.heads_q + h) * d;
  auto K = [&](int j) {
    return static_cast<const __nv_bfloat16*>(a.k) + ((int64_t(b) * a.seqlen_k + j) * a.heads_kv + hk) * d;
  };
  auto V = [&](int j) {
    return static_cast<const __nv_bfloat16*>(a.v) + ((int64_t(b) * a.seqlen_k + j) * a.heads_kv + hk) * d;
  };
  auto score = [&](int j, bool& vis) {
    const int diag = row + a.seqlen_k - a.seqlen_q;
    vis = (a.window_left < 0 || j >= diag - a.window_left) &&
          (a.window_right < 0 || j <= diag + a.window_right);
    float s = 0;
    for (int c = 0; c < d; ++c) s += __bfloat162float(q[c]) * __bfloat162float(K(j)[c]);
    s *= a.scale;
    if (a.softcap > 0) s = a.softcap * tanhf(s / a.softcap);
    return s;
  };
  float m = -INFINITY;
  for (int j = 0; j < a.seqlen_k; ++j) {
    bool vis;
    const float s = score(j, vis);
    if (vis) m = fmaxf(m, s);
  }
  float l = 0, acc[256] = {};
  for (int j = 0; j < a.seqlen_k; ++j) {
    bool vis;
    const float s = score(j, vis);
    if (!vis) continue;
    const float p = expf(s - m);
    l += p;
    for (int c = 0; c < d; ++c) acc[c] += p * __bfloat162float(V(j)[c]);
  }
  float* out = o + ((int64_t(b) * a.seqlen_q + row) * a.heads_q + h) * d;
  for (int c = 0; c < d; ++c) out[c] = l > 0 ? acc[c] / l : 0.f;
  lse[(int64_t(b) * a.heads_q + h) * a.seqlen_q + row] = l > 0 ? m + logf(l) : -INFINITY;
}

// Backward reference, fp32, from the kernel's own o (bf16) and the reference lse. Pass 1: one thread a query
// row: D = dO . o, dq = scale sum_j dS_ij k_j. Pass 2: one thread a (key row, kv head): dk, dv over the group.
struct BwdRef {
  const __nv_bfloat16* dout;
  const float* lse;
  float *dpsum, *dq, *dk, *dv;
};

__device__ bool visible_ij(const Fa3FwdParams& a, int i, int j) {
  const int diag = i + a.seqlen_k - a.seqlen_q;
  return (a.window_left < 0 || j >= diag - a.window_left) &&
         (a.window_right < 0 || j <= diag + a.window_right);
}
__device__ float dot_bf16(const __nv_bfloat16* x, const __nv_bfloat16* y, int d) {
  float s = 0;
  for (int c = 0; c < d; ++c) s += __bfloat162float(x[c]) * __bfloat162float(y[c]);
  return s;
}

// P and dS / (dP - D) of one score s = q.k (the forward's score pipeline: s' = c tanh(scale s / c) with a
// softcap c, then P = exp(s' - lse); ds'/ds = scale (1 - tanh^2), the scale applied by the callers).
__device__ void reference_p(const Fa3FwdParams& a, float s, float lse, float& p, float& dsds) {
  if (a.softcap > 0) {
    const float t = tanhf(s * a.scale / a.softcap);
    p = expf(a.softcap * t - lse), dsds = 1.f - t * t;
  } else {
    p = expf(s * a.scale - lse), dsds = 1.f;
  }
}

__global__ void reference_bwd_rows(Fa3FwdParams a, BwdRef r) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x, h = blockIdx.y, b = blockIdx.z;
  if (i >= a.seqlen_q) return;
  const int d = a.head_dim, hk = h / a.group;
  const int64_t qrow = (int64_t(b) * a.seqlen_q + i) * a.heads_q + h;
  auto q = static_cast<const __nv_bfloat16*>(a.q) + qrow * d;
  auto o = static_cast<const __nv_bfloat16*>(a.o) + qrow * d;
  auto dout = r.dout + qrow * d;
  const float dsum = dot_bf16(dout, o, d), lse = r.lse[(int64_t(b) * a.heads_q + h) * a.seqlen_q + i];
  r.dpsum[(int64_t(b) * a.heads_q + h) * a.seqlen_q + i] = dsum;
  float acc[256] = {};
  for (int j = 0; j < a.seqlen_k; ++j) {
    if (!visible_ij(a, i, j) || lse == -INFINITY) continue;
    const int64_t krow = (int64_t(b) * a.seqlen_k + j) * a.heads_kv + hk;
    auto k = static_cast<const __nv_bfloat16*>(a.k) + krow * d;
    auto v = static_cast<const __nv_bfloat16*>(a.v) + krow * d;
    float p, dsds;
    reference_p(a, dot_bf16(q, k, d), lse, p, dsds);
    const float ds = p * (dot_bf16(dout, v, d) - dsum) * dsds;
    for (int c = 0; c < d; ++c) acc[c] += ds * __bfloat162float(k[c]);
  }
  for (int c = 0; c < d; ++c) r.dq[qrow * d + c] = acc[c] * a.scale;
}

__global__ void reference_bwd_keys(Fa3FwdParams a, BwdRef r) {
  const int j = blockIdx.x * blockDim.x + threadIdx.x, hk = blockIdx.y, b = blockIdx.z;
  if (j >= a.seqlen_k) return;
  const int d = a.head_dim;
  const int64_t krow = (int64_t(b) * a.seqlen_k + j) * a.heads_kv + hk;
  auto k = static_cast<const __nv_bfloat16*>(a.k) + krow * d;
  auto v = static_cast<const __nv_bfloat16*>(a.v) + krow * d;
  float dk[256] = {}, dv[256] = {};
  for (int h = hk * a.group; h < (hk + 1) * a.group; ++h)
    for (int i = 0; i < a.seqlen_q; ++i) {
      const float lse = r.lse[(int64_t(b) * a.heads_q + h) * a.seqlen_q + i];
      if (!visible_ij(a, i, j) || lse == -INFINITY) continue;
      const int64_t qrow = (int64_t(b) * a.seqlen_q + i) * a.heads_q + h;
      auto q = static_cast<const __nv_bfloat16*>(a.q) + qrow * d;
      auto dout = r.dout + qrow * d;
      float p, dsds;
      reference_p(a, dot_bf16(q, k, d), lse, p, dsds);
      const float ds =
          p * (dot_bf16(dout, v, d) - r.dpsum[(int64_t(b) * a.heads_q + h) * a.seqlen_q + i]) * dsds;
      for (int c = 0; c < d; ++c) {
        dv[c] += p * __bfloat162float(dout[c]);
        dk[c] += ds * __bfloat162float(q[c]) * a.scale;
      }
    }
  for (int c = 0; c < d; ++c) r.dk[krow * d + c] = dk[c], r.dv[krow * d + c] = dv[c];
}

template <class T>
T* device_alloc(int64_t n) {
  T* p = nullptr;
  CHECK(cudaMalloc(&p, n * sizeof(T)));
  return p;
}

double rel_l2(const __nv_bfloat16* dev_x, const float* dev_ref, int64_t n, int64_t& nonfinite) {
  std::vector<__nv_bfloat16> x(n);
  std::vector<float> r(n);
  CHECK(cudaMemcpy(x.data(), dev_x, n * 2, cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(r.data(), dev_ref, n * 4, cudaMemcpyDeviceToHost));
  double e2 = 0, r2 = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double xv = __bfloat162float(x[i]);
    if (!std::isfinite(xv)) ++nonfinite;
    e2 += (xv - r[i]) * (xv - r[i]), r2 += double(r[i]) * r[i];
  }
  return std::sqrt(e2 / std::max(r2, 1e-30));
}

cudaError_t launch(const Fa3FwdParams& a) {
  return flashsim::gpu::fa3::launch_fwd(a, true, nullptr);
}

struct Shape {
  int b, h, hkv, sq, sk, d;
  int wl, wr;
  float softcap;
};

struct Buffers {
  __nv_bfloat16 *q, *k, *v, *o;
  float *lse, *ro, *rlse;
};

Fa3FwdParams params_of(const Shape& s, const Buffers& buf) {
  Fa3FwdParams a;
  a.q = buf.q, a.k = buf.k, a.v = buf.v, a.o = buf.o, a.lse = buf.lse;
  a.batch = s.b, a.heads_q = s.h, a.heads_kv = s.hkv, a.group = s.h / s.hkv;
  a.seqlen_q = s.sq, a.seqlen_k = s.sk, a.total_q = int64_t(s.b) * s.sq, a.total_k = int64_t(s.b) * s.sk;
  a.head_dim = s.d, a.scale = 1.f / std::sqrt(float(s.d)), a.softcap = s.softcap;
  a.window_left = s.wl, a.window_right = s.wr;
  return a;
}

Buffers alloc(const Shape& s, bool with_ref) {
  Buffers buf{};
  const int64_t nq = int64_t(s.b) * s.sq * s.h * s.d, nk = int64_t(s.b) * s.sk * s.hkv * s.d;
  CHECK(cudaMalloc(&buf.q, nq * 2));
  CHECK(cudaMalloc(&buf.k, nk * 2));
  CHECK(cudaMalloc(&buf.v, nk * 2));
  CHECK(cudaMalloc(&buf.o, nq * 2));
  CHECK(cudaMalloc(&buf.lse, int64_t(s.b) * s.h * s.sq * 4));
  fill_uniform<<<1024, 256>>>(buf.q, nq, 1);
  fill_uniform<<<1024, 256>>>(buf.k, nk, 2);
  fill_uniform<<<1024, 256>>>(buf.v, nk, 3);
  CHECK(cudaMemset(buf.o, 0xFF, nq * 2));  // NaN: an unwritten output fails the check
  CHECK(cudaMemset(buf.lse, 0xFF, int64_t(s.b) * s.h * s.sq * 4));
  if (with_ref) {
    CHECK(cudaMalloc(&buf.ro, nq * 4));
    CHECK(cudaMalloc(&buf.rlse, int64_t(s.b) * s.h * s.sq * 4));
  }
  return buf;
}

void release(Buffers& buf) {
  for (void* p : {(void*)buf.q, (void*)buf.k, (void*)buf.v, (void*)buf.o, (void*)buf.lse, (void*)buf.ro,
                  (void*)buf.rlse})
    if (p) CHECK(cudaFree(p));
}

// params_of with a schedule: persistent or one CTA a tile, ping-pong or not, causal tiles in head groups.
// inst: the forward instance (nullptr: the head dim's hand-kept one).
Fa3FwdParams scheduled_params(const Shape& s, const Buffers& buf, bool persistent, bool pingpong,
                              int head_group, const flashsim::Fa3FwdInstance* inst = nullptr) {
  Fa3FwdParams a = params_of(s, buf);
  if (inst) a.block_k = inst->block_k, a.stages = inst->stages;
  a.head_group = head_group;
  a.persistent = persistent;
  a.pingpong = pingpong;
  return a;
}

bool check(const Shape& s, bool persistent, bool pingpong, int head_group = 0,
           const flashsim::Fa3FwdInstance* inst = nullptr) {
  Buffers buf = alloc(s, true);
  const Fa3FwdParams a = scheduled_params(s, buf, persistent, pingpong, head_group, inst);
  CHECK(launch(a));
  reference_attention<<<dim3((s.sq + 127) / 128, s.h, s.b), 128>>>(a, buf.ro, buf.rlse);
  CHECK(cudaDeviceSynchronize());
  const int64_t nq = int64_t(s.b) * s.sq * s.h * s.d, nl = int64_t(s.b) * s.h * s.sq;
  std::vector<__nv_bfloat16> o(nq);
  std::vector<float> ro(nq), lse(nl), rlse(nl);
  CHECK(cudaMemcpy(o.data(), buf.o, nq * 2, cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(ro.data(), buf.ro, nq * 4, cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(lse.data(), buf.lse, nl * 4, cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(rlse.data(), buf.rlse, nl * 4, cudaMemcpyDeviceToHost));
  double err2 = 0, ref2 = 0, max_err = 0, lse_err = 0;
  int64_t bad = 0;
  for (int64_t i = 0; i < nq; ++i) {
    const double x = __bfloat162float(o[i]), r = ro[i];
    if (!std::isfinite(x)) ++bad;
    err2 += (x - r) * (x - r), ref2 += r * r, max_err = std::max(max_err, std::abs(x - r));
  }
  for (int64_t i = 0; i < nl; ++i) {
    if (std::isinf(rlse[i]) && std::isinf(lse[i])) continue;
    if (!std::isfinite(lse[i])) ++bad;
    lse_err = std::max(lse_err, double(std::abs(lse[i] - rlse[i])));
  }
  const double rel = std::sqrt(err2 / std::max(ref2, 1e-30));
  const bool ok = bad == 0 && rel < 1e-2 && lse_err < 1e-3;
  // the instance that ran: inst, else the launch's default (the hand-kept one; with a softcap one that has it)
  const flashsim::Fa3FwdInstance* ran = inst ? inst
                                        : s.softcap > 0 && !flashsim::fa3_fwd_instance(s.d)->softcap
                                            ? flashsim::fa3_fwd_softcap_instance(s.d)
                                            : flashsim::fa3_fwd_instance(s.d);
  std::printf(
      "check p%d pp%d b%d h%d/%d sq%d sk%d d%d Bc%d st%d win(%d,%d) cap%g: rel_l2 %.2e max_abs %.2e "
      "lse_err %.2e nonfinite %lld %s\n",
      int(persistent), int(pingpong), s.b, s.h, s.hkv, s.sq, s.sk, s.d, ran->block_k, ran->stages, s.wl, s.wr,
      s.softcap, rel, max_err, lse_err, (long long)bad, ok ? "ok" : "FAIL");
  release(buf);
  return ok;
}

// The backward's arguments for the forward's problem a: dout, its lse, the gradients and the workspace.
// The deterministic backward's dq_accum slabs for s (the workspace is sized for them either way).
int partial_slabs(const Shape& s) {
  return flashsim::gpu::fa3::fa3_dq_partial_slabs(s.sk,
                                                  flashsim::fa3_bwd_instance(s.d, s.softcap > 0)->block_k);
}

flashsim::gpu::fa3::Fa3BwdParams bwd_params_of(const Fa3FwdParams& a, const void* dout, const float* lse,
                                               void* dq, void* dk, void* dv, char* workspace, int slabs = 1) {
  flashsim::gpu::fa3::Fa3BwdParams g;
  g.dq_slabs = slabs;
  g.q = a.q, g.k = a.k, g.v = a.v, g.o = a.o, g.dout = dout, g.lse = lse;
  g.dq = dq, g.dk = dk, g.dv = dv;
  g.batch = a.batch, g.heads_q = a.heads_q, g.heads_kv = a.heads_kv, g.group = a.group;
  g.seqlen_q = a.seqlen_q, g.seqlen_k = a.seqlen_k, g.total_q = a.total_q, g.total_k = a.total_k;
  g.head_dim = a.head_dim, g.scale = a.scale, g.window_left = a.window_left, g.window_right = a.window_right;
  g.softcap = a.softcap;
  flashsim::gpu::fa3::fa3_bwd_set_workspace(g, workspace, flashsim::fa3_bwd_instance(a.head_dim)->block_q);
  return g;
}

// The backward on the forward's o, lse: dq, dk, dv against the fp32 reference.
bool check_bwd(const Shape& s) {
  Buffers buf = alloc(s, true);
  const Fa3FwdParams a = params_of(s, buf);
  CHECK(launch(a));
  reference_attention<<<dim3((s.sq + 127) / 128, s.h, s.b), 128>>>(a, buf.ro, buf.rlse);
  const int64_t nq = int64_t(s.b) * s.sq * s.h * s.d, nk = int64_t(s.b) * s.sk * s.hkv * s.d,
                nl = int64_t(s.b) * s.h * s.sq;
  auto* dout = device_alloc<__nv_bfloat16>(nq);
  fill_uniform<<<1024, 256>>>(dout, nq, 4);
  auto *dq = device_alloc<__nv_bfloat16>(nq), *dk = device_alloc<__nv_bfloat16>(nk),
       *dv = device_alloc<__nv_bfloat16>(nk);
  CHECK(cudaMemset(dq, 0xFF, nq * 2));
  CHECK(cudaMemset(dk, 0xFF, nk * 2));
  CHECK(cudaMemset(dv, 0xFF, nk * 2));
  auto* workspace = device_alloc<char>(flashsim::gpu::fa3::fa3_bwd_workspace_bytes(
      a.total_q, s.b, s.h, s.d, flashsim::fa3_bwd_instance(s.d)->block_q, partial_slabs(s)));
  const flashsim::gpu::fa3::Fa3BwdParams g = bwd_params_of(a, dout, buf.lse, dq, dk, dv, workspace);
  CHECK(flashsim::gpu::fa3::launch_bwd(g, true, nullptr));
  BwdRef r{dout,
           buf.rlse,
           device_alloc<float>(nl),
           device_alloc<float>(nq),
           device_alloc<float>(nk),
           device_alloc<float>(nk)};
  reference_bwd_rows<<<dim3((s.sq + 127) / 128, s.h, s.b), 128>>>(a, r);
  reference_bwd_keys<<<dim3((s.sk + 127) / 128, s.hkv, s.b), 128>>>(a, r);
  CHECK(cudaDeviceSynchronize());
  int64_t bad = 0;
  const double eq = rel_l2(dq, r.dq, nq, bad), ek = rel_l2(dk, r.dk, nk, bad), ev = rel_l2(dv, r.dv, nk, bad);
  bool ok = bad == 0 && eq < 2e-2 && ek < 2e-2 && ev < 2e-2;
  std::printf(
      "check bwd b%d h%d/%d sq%d sk%d d%d win(%d,%d) cap%g: rel_l2 dq %.2e dk %.2e dv %.2e nonfinite %lld "
      "%s\n",
      s.b, s.h, s.hkv, s.sq, s.sk, s.d, s.wl, s.wr, s.softcap, eq, ek, ev, (long long)bad,
      ok ? "ok" : "FAIL");
  // The deterministic backward (a dq_accum slab a key block): against the reference, and twice bit for bit.
  std::vector<uint16_t> first(nq), second(nq);
  for (int run = 0; run < 2; ++run) {
    CHECK(cudaMemset(dq, 0xFF, nq * 2));
    CHECK(flashsim::gpu::fa3::launch_bwd(
        bwd_params_of(a, dout, buf.lse, dq, dk, dv, workspace, partial_slabs(s)), true, nullptr));
    CHECK(cudaMemcpy(run == 0 ? first.data() : second.data(), dq, nq * 2, cudaMemcpyDeviceToHost));
  }
  int64_t bad_det = 0;
  const double eq_det = rel_l2(dq, r.dq, nq, bad_det);
  const bool same = first == second, ok_det = bad_det == 0 && eq_det < 2e-2 && same;
  std::printf("check bwd deterministic: rel_l2 dq %.2e, two runs %s %s\n", eq_det,
              same ? "bitwise equal" : "DIFFER", ok_det ? "ok" : "FAIL");
  ok = ok && ok_det;
  for (void* p : {(void*)dout, (void*)dq, (void*)dk, (void*)dv, (void*)workspace, (void*)r.dpsum, (void*)r.dq,
                  (void*)r.dk, (void*)r.dv})
    CHECK(cudaFree(p));
  release(buf);
  return ok;
}

// Milliseconds a call of `launch` takes on the GPU: 3 warm-up calls, then the median over 5 CUDA-event timings of
// `inner` calls each.
template <class Launch>
double median_ms(int inner, Launch launch) {
  for (int i = 0; i < 3; ++i) launch();
  cudaEvent_t e0, e1;
  CHECK(cudaEventCreate(&e0));
  CHECK(cudaEventCreate(&e1));
  std::vector<float> ms;
  for (int rep = 0; rep < 5; ++rep) {
    CHECK(cudaEventRecord(e0));
    for (int i = 0; i < inner; ++i) launch();
    CHECK(cudaEventRecord(e1));
    CHECK(cudaEventSynchronize(e1));
    float t;
    CHECK(cudaEventElapsedTime(&t, e0, e1));
    ms.push_back(t / inner);
  }
  CHECK(cudaEventDestroy(e0));
  CHECK(cudaEventDestroy(e1));
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

template <class... Args>
std::string fmt_sizes(const char* f, Args... args) {
  char buf[96];
  std::snprintf(buf, sizeof buf, f, args...);
  return buf;
}

// fa3-v1's balanced walk of a fixed-length shape for `grid` CTAs (walk.h, as the launch builds it through
// sim::fa3_forward_walk): the tiles' costs (fa3_tile_cost) dealt in the tile order of the head groups.
std::vector<int32_t> balanced_walk_of(const Shape& s, int block_q, int block_k, int head_group,
                                      int64_t grid) {
  const int64_t num_m = (s.sq + block_q - 1) / block_q;
  std::vector<int64_t> cost(num_m);
  for (int64_t m = 0; m < num_m; ++m)
    cost[m] = flashsim::fa3_tile_cost(m * block_q, std::min<int64_t>(s.sq, (m + 1) * block_q), s.sq, s.sk,
                                      s.wl, s.wr, block_k, s.d);
  const flashsim::Fa3TileOrder order{num_m, int64_t(s.b) * s.h, head_group};
  return flashsim::fa3_balanced_walk(num_m * s.b * s.h, grid,
                                     [&](int64_t t) { return cost[order(t).second]; });
}

// walk: a balanced walk (balanced_walk_of) the persistent grid follows; empty: the static walk.
double time_shape(const Shape& s, bool persistent, bool pingpong, int head_group = 0,
                  const flashsim::Fa3FwdInstance* inst = nullptr, const std::vector<int32_t>& walk = {}) {
  Buffers buf = alloc(s, false);
  Fa3FwdParams a = scheduled_params(s, buf, persistent, pingpong, head_group, inst);
  int32_t* d_walk = nullptr;
  if (!walk.empty()) {
    CHECK(cudaMalloc(&d_walk, walk.size() * sizeof(int32_t)));
    CHECK(cudaMemcpy(d_walk, walk.data(), walk.size() * sizeof(int32_t), cudaMemcpyHostToDevice));
    a.walk = d_walk;
    a.walk_ctas = walk[0] - 1;  // walk[0] is the first CTA's offset, past the grid + 1 offsets
  }
  const double t = median_ms(10, [&] { CHECK(launch(a)); });
  if (d_walk) CHECK(cudaFree(d_walk));
  const bool causal = s.wr == 0 && s.wl < 0;
  const double flops = 4.0 * s.b * s.h * double(s.sq) * s.sk * s.d / (causal ? 2 : 1);
  const std::string sizes =
      s.sq == s.sk && s.h == s.hkv ? fmt_sizes("n%d", s.sq) : fmt_sizes("hkv%d sq%d sk%d", s.hkv, s.sq, s.sk);
  const std::string tile =
      inst ? fmt_sizes(" Br%d Bc%d st%d", inst->block_q, inst->block_k, inst->stages) : "";
  std::printf("time b%d h%d %s d%d %s persistent%d pingpong%d%s%s: %.4f ms %.1f TFLOP/s\n", s.b, s.h,
              sizes.c_str(), s.d, causal ? "causal" : "full", int(persistent), int(pingpong),
              head_group ? (" group" + std::to_string(head_group)).c_str() : "", tile.c_str(), t,
              flops / t / 1e9);
  release(buf);
  return t;
}

// The backward's three kernels timed (inputs from the forward), FLOPs 2.5x the forward's (FlashAttention's
// count: five GEMMs of the forward's two).
void time_bwd(const Shape& s, bool deterministic = false) {
  Buffers buf = alloc(s, false);
  const Fa3FwdParams a = params_of(s, buf);
  CHECK(launch(a));
  const int64_t nq = int64_t(s.b) * s.sq * s.h * s.d, nk = int64_t(s.b) * s.sk * s.hkv * s.d;
  auto* dout = device_alloc<__nv_bfloat16>(nq);
  fill_uniform<<<1024, 256>>>(dout, nq, 4);
  auto *dq = device_alloc<__nv_bfloat16>(nq), *dk = device_alloc<__nv_bfloat16>(nk),
       *dv = device_alloc<__nv_bfloat16>(nk);
  auto* workspace = device_alloc<char>(flashsim::gpu::fa3::fa3_bwd_workspace_bytes(
      a.total_q, s.b, s.h, s.d, flashsim::fa3_bwd_instance(s.d)->block_q, partial_slabs(s)));
  const flashsim::gpu::fa3::Fa3BwdParams g =
      bwd_params_of(a, dout, buf.lse, dq, dk, dv, workspace, deterministic ? partial_slabs(s) : 1);
  const double t = median_ms(5, [&] { CHECK(flashsim::gpu::fa3::launch_bwd(g, true, nullptr)); });
  const bool causal = s.wr == 0 && s.wl < 0;
  const double flops = 2.5 * 4.0 * s.b * s.h * double(s.sq) * s.sk * s.d / (causal ? 2 : 1);
  const std::string sizes =
      s.sq == s.sk && s.h == s.hkv ? fmt_sizes("n%d", s.sq) : fmt_sizes("hkv%d sq%d sk%d", s.hkv, s.sq, s.sk);
  std::printf("time bwd%s b%d h%d %s d%d %s%s: %.4f ms %.1f TFLOP/s\n", deterministic ? " deterministic" : "",
              s.b, s.h, sizes.c_str(), s.d, causal ? "causal" : "full", s.softcap > 0 ? " softcap" : "", t,
              flops / t / 1e9);
  for (void* p : {(void*)dout, (void*)dq, (void*)dk, (void*)dv, (void*)workspace}) CHECK(cudaFree(p));
  release(buf);
}

int main(int argc, char** argv) {
  bool ok = true;
  if (argc == 8) {  // one shape for ncu: b h n d causal persistent pingpong
    const int n = std::atoi(argv[3]);
    time_shape({std::atoi(argv[1]), std::atoi(argv[2]), std::atoi(argv[2]), n, n, std::atoi(argv[4]), -1,
                std::atoi(argv[5]) ? 0 : -1, 0},
               std::atoi(argv[6]), std::atoi(argv[7]));
    return 0;
  }
  if (argc == 7 && std::string(argv[1]) == "bwd") {  // one backward shape for ncu: bwd b h n d causal
    const int n = std::atoi(argv[4]);
    time_bwd({std::atoi(argv[2]), std::atoi(argv[3]), std::atoi(argv[3]), n, n, std::atoi(argv[5]), -1,
              std::atoi(argv[6]) ? 0 : -1, 0});
    return 0;
  }
  // One shape: fwdshape / bwdshape b h hkv sq sk d wl wr (the window, -1 unbounded; -1 0: causal). The forward
  // with fa3-v1's own schedule (fa3_v1.cpp with its workspace: persistent unless causal or windowed, then one CTA
  // a tile in head groups sized by the L2, or persistent where causal tiles are many; a persistent grid of
  // unequal tiles walks balanced, families/fa3/walk.h), timed by events; the backward's three kernels (ncu picks
  // its main kernel). (Before 2026-11-29 this walked statically and took the schedule of a launch without a
  // workspace: the held-out forward timings recorded before then ran that schedule on causal shapes.)
  if (argc == 10 && (std::string(argv[1]) == "fwdshape" || std::string(argv[1]) == "bwdshape")) {
    int v[8];
    for (int i = 0; i < 8; ++i) v[i] = std::atoi(argv[2 + i]);
    const Shape s{v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7], 0};
    if (std::string(argv[1]) == "bwdshape") {
      time_bwd(s);
      return 0;
    }
    const int span = s.sq + s.sk;
    const int wl = s.wl < span ? s.wl : -1, wr = s.wr < span ? s.wr : -1;
    const bool causal = wl < 0 && wr == 0, windowed = !causal && (wl >= 0 || wr >= 0);
    const int64_t tiles = int64_t((s.sq + 127) / 128) * s.h * s.b, grid = std::min<int64_t>(tiles, 132);
    const flashsim::Fa3Schedule rule =
        flashsim::fa3_fwd_schedule(causal, windowed, s.sk, tiles, 132, 2LL * s.sk * s.d * 2, 52428800LL,
                                   int64_t(s.b) * s.h, /*balanced_walk=*/true);
    const flashsim::Fa3FwdInstance* inst = flashsim::fa3_fwd_instance(s.d);
    const std::vector<int32_t> walk =
        flashsim::fa3_fwd_walks_balanced(rule.persistent && grid < tiles, causal, false)
            ? balanced_walk_of(s, inst->block_q, inst->block_k, rule.head_group, grid)
            : std::vector<int32_t>{};
    const double ms = time_shape(s, rule.persistent, rule.pingpong, rule.head_group, inst, walk);
    std::printf("fwdshape %d %d %d %d %d %d %d %d: %.4f ms\n", v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7],
                ms);
    return 0;
  }
  if (argc == 2 && std::string(argv[1]) == "schedules") {
    // Causal forward schedules on lengths the bench grid does not have (its causal rows check the choice):
    // one CTA a tile with the rule's head groups (today's choice), persistent without groups, and persistent
    // with groups of 4 .. 64 (batch, head)s, heavy query blocks first within a group.
    for (int d : {64, 128})
      for (int n : {512, 1536, 2048, 3072, 6144}) {
        const Shape s{std::max(1, 32768 / n), 16, 16, n, n, d, -1, 0, 0};
        // the long-causal rule's groups (K and V in half the L2), one CTA a tile
        const flashsim::Fa3Schedule rule = flashsim::fa3_fwd_schedule(false, true, n, 0, 132, 2LL * n * d * 2,
                                                                      52428800LL, int64_t(s.b) * s.h);
        time_shape(s, false, true, rule.head_group);
        time_shape(s, true, true, 0);
        for (int g : {4, 8, 16, 32, 64}) time_shape(s, true, true, g);
      }
    return 0;
  }
  // calib and calib-spread sweep their shapes FA3_CALIB_ROUNDS times (default 3), a line a shape each round
  // (derive.py takes each shape's median): a card under its power cap lowers its clock during a sweep, which
  // one pass would charge to the instances timed last (calibration fa3.tune_rounds_h200).
  const char* rounds_env = std::getenv("FA3_CALIB_ROUNDS");
  const int calib_rounds = rounds_env && std::atoi(rounds_env) > 0 ? std::atoi(rounds_env) : 3;
  if (argc == 2 && std::string(argv[1]) == "calib") {
    // The time model's measured tile costs (calibration fa3.step_costs_h100): 264 query heads sharing one K / V
    // head (so K and V stay in L2, as the query blocks of a head share them in attention's usual shapes) and 4
    // query blocks each, 1056 tiles, 8 an SM of 132; 1 to 128 key blocks a tile, for every forward instance
    // (instances.h: the hand-kept tiles and the candidates sim tune ranks); with the persistent grid (the
    // non-causal schedule) and one CTA a tile (the causal one). None of these sizes is in the bench grid. The
    // backward's are fa3_calib.sh's ncu runs of bwdshape.
    for (int round = 0; round < calib_rounds; ++round)
      for (const flashsim::Fa3FwdInstance& e : flashsim::kFa3FwdInstances)
        for (int persistent = 1; persistent >= 0; --persistent)
          for (int steps : {1, 2, 4, 8, 32, 128})  // derive.py keeps 1 .. 32 (FA3_FWD_MAX_STEPS says why)
            time_shape({1, 264, 1, 512, steps * e.block_k, e.head_dim, -1, -1, 0}, persistent, true, 0, &e);
    return 0;
  }
  if (argc == 2 && std::string(argv[1]) == "calib-spread") {
    // calib's shapes with the 264 query heads spread over as many K / V heads as keep K and V within 8 MiB (a
    // divisor of 264; L2-resident still, as in calib): whether calib's tile costs carry the cost of every CTA
    // reading the same K / V lines (one head: the same L2 slices) that real problems, many heads apart, do not
    // pay. The d256 short causal forward runs 1.2-1.37x faster than the model built on calib predicts (issue 29):
    // compare each line with calib's (the same tile, steps and schedule; hkv in the line).
    for (int round = 0; round < calib_rounds; ++round)
      for (const flashsim::Fa3FwdInstance& e : flashsim::kFa3FwdInstances)
        for (int persistent = 1; persistent >= 0; --persistent)
          for (int steps : {1, 2, 4, 8, 32}) {
            const int64_t per_head = 2LL * steps * e.block_k * e.head_dim * 2;  // K and V, bf16
            int hkv = 1;
            for (int g : {2, 3, 4, 6, 8, 11, 12, 22, 24, 33, 44, 66, 88, 132, 264})
              if (g * per_head <= (8LL << 20)) hkv = g;
            time_shape({1, 264, hkv, 512, steps * e.block_k, e.head_dim, -1, -1, 0}, persistent, true, 0, &e);
          }
    return 0;
  }
  if (argc == 2 && std::string(argv[1]) == "instances") {
    // Every forward instance against the fp32 reference: causal with unequal odd lengths, a sliding window, a
    // softcap (where it has a softcapped kernel), GQA, and the persistent schedule (a launch table may pick any).
    for (const flashsim::Fa3FwdInstance& e : flashsim::kFa3FwdInstances) {
      const int d = e.head_dim;
      ok = check({2, 4, 2, 517, 300, d, -1, 0, 0}, false, true, 0, &e) && ok;
      ok = check({1, 2, 2, 777, 777, d, 100, 20, 0}, false, true, 0, &e) && ok;
      if (e.softcap) ok = check({1, 4, 1, 500, 700, d, -1, -1, 30.f}, true, true, 0, &e) && ok;
      ok = check({3, 3, 3, 640, 640, d, -1, 0, 0}, true, true, 2, &e) && ok;
    }
    std::printf("instances: %s\n", ok ? "all ok" : "FAILED");
    return ok ? 0 : 1;
  }
  // "bwd": the backward's checks and timings alone (the backward's quick loop).
  const bool bwd_only = argc == 2 && std::string(argv[1]) == "bwd";
  for (int variant = 0; variant < (bwd_only ? 0 : 4); ++variant) {
    const Shape checks[] = {
        {1, 2, 2, 128, 128, 128, -1, -1, 0},   {2, 4, 2, 300, 517, 128, -1, -1, 0},
        {2, 4, 4, 517, 300, 128, -1, 0, 0},    {1, 4, 1, 1000, 1000, 64, -1, 0, 0},
        {1, 2, 2, 777, 777, 96, 100, 20, 0},   {1, 2, 2, 640, 640, 256, -1, 0, 0},
        {1, 2, 2, 333, 1024, 256, -1, -1, 0},  {1, 2, 1, 500, 700, 128, -1, -1, 30.f},
        {1, 2, 2, 400, 300, 256, -1, 0, 30.f}, {1, 2, 2, 64, 200, 64, 10, 0, 0},
        {1, 2, 2, 256, 256, 128, 0, 0, 0},
    };
    for (const Shape& s : checks) ok = check(s, variant & 1, variant & 2) && ok;
  }
  for (const Shape& s : {Shape{2, 4, 2, 517, 300, 128, -1, 0, 0}, Shape{3, 3, 3, 640, 640, 64, -1, 0, 0}})
    for (int persistent = 0; persistent < (bwd_only ? 0 : 2); ++persistent)
      ok = check(s, persistent, true, 2) && ok;
  const Shape bwd_checks[] = {
      {1, 2, 2, 128, 128, 128, -1, -1, 0},
      {2, 4, 2, 300, 517, 128, -1, -1, 0},
      {2, 4, 4, 517, 300, 128, -1, 0, 0},
      {1, 4, 1, 400, 400, 64, -1, 0, 0},
      {1, 2, 2, 333, 333, 96, 100, 20, 0},
      {1, 2, 2, 64, 200, 64, 10, 0, 0},
      {1, 4, 2, 500, 700, 96, -1, -1, 30.f},
      {2, 2, 2, 300, 300, 64, -1, 0, 30.f},  // softcap (Gemma-2's 30)
      // the split-head-dim tile (Bc64): d256, and a softcapped d128
      {1, 2, 2, 640, 640, 256, -1, 0, 0},
      {2, 4, 2, 300, 517, 256, -1, -1, 0},
      {1, 2, 2, 777, 777, 256, 100, 20, 0},
      {1, 2, 2, 400, 300, 256, -1, 0, 30.f},
      {1, 4, 2, 500, 700, 128, -1, -1, 30.f},
      {2, 2, 2, 333, 333, 128, -1, 0, 30.f},
  };
  for (const Shape& s : bwd_checks) ok = check_bwd(s) && ok;
  std::printf("checks: %s\n", ok ? "all ok" : "FAILED");
  if (argc == 2 && !bwd_only) return ok ? 0 : 1;  // "checks": no timing (the sanitizers' run)
  if (bwd_only) {
    for (int d : {64, 128, 256})
      for (int n : {1024, 4096, 16384})
        for (int causal = 0; causal < 2; ++causal)
          time_bwd({2 * 16384 / n, 16, 16, n, n, d, -1, causal ? 0 : -1, 0});
    for (int causal = 0; causal < 2; ++causal)
      for (const bool deterministic : {false, true})
        time_bwd({2, 16, 16, 4096, 4096, 128, -1, causal ? 0 : -1, 0}, deterministic);
    for (int causal = 0; causal < 2; ++causal)  // the softcapped kernel (Gemma-2's 30) and the plain one
      for (const int d : {64, 128})
        for (const float cap : {0.f, 30.f}) time_bwd({4, 32, 32, 4096, 4096, d, -1, causal ? 0 : -1, cap});
    return ok ? 0 : 1;
  }
  for (int d : {64, 128, 256})
    for (int n : {1024, 4096, 16384})
      for (int causal = 0; causal < 2; ++causal)
        for (int variant = 0; variant < 4; ++variant)
          time_shape({2 * 16384 / n, 16, 16, n, n, d, -1, causal ? 0 : -1, 0}, variant & 1, variant & 2);
  std::printf("head groups (causal, one CTA a tile and persistent):\n");
  for (int d : {64, 128})
    for (int n : {1024, 4096, 16384})
      for (int g : {4, 8, 16})
        for (int persistent = 0; persistent < 2; ++persistent)
          time_shape({2 * 16384 / n, 16, 16, n, n, d, -1, 0, 0}, persistent, true, g);
  for (int g : {4, 8, 16})
    for (int persistent = 0; persistent < 2; ++persistent)
      time_shape({2, 16, 16, 4096, 4096, 128, -1, 0, 0}, persistent, true, g);
  for (int d : {64, 128})
    for (int n : {1024, 4096, 16384})
      for (int causal = 0; causal < 2; ++causal)
        time_bwd({2 * 16384 / n, 16, 16, n, n, d, -1, causal ? 0 : -1, 0});
  for (int causal = 0; causal < 2; ++causal) time_bwd({2, 16, 16, 4096, 4096, 128, -1, causal ? 0 : -1, 0});
  for (int causal = 0; causal < 2; ++causal)  // the issue's shape
    for (int variant = 0; variant < 4; ++variant)
      time_shape({2, 16, 16, 4096, 4096, 128, -1, causal ? 0 : -1, 0}, variant & 1, variant & 2);
  return ok ? 0 : 1;
}
