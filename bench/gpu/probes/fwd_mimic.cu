// A FlashAttention-2 forward's memory traffic without its math, launched as Dao-AILab's flash_fwd_kernel is
// (grid: query block fastest, then batch, then head), for one problem: each CTA copies its Q block, then walks
// its head's K/V tiles from the last it needs down to 0 (FA2's causal order: the diagonal block first) with
// cp.async.cg into shared memory (K tile j, then V tile j while "QK^T" spins, then K tile j - 1 while "PV"
// spins, as FA2 overlaps them), and writes its O block ([batch, seqlen, heads, dim], as the kernel does) and
// lse. `spin` clock cycles per tile stand in for the MMAs; dynamic shared memory pads the CTA to the resident
// CTAs per SM asked for. Issue 31: no cache model here predicted a causal forward's DRAM re-reads; this
// measures the schedule itself on the card.
// The kernel's register spills (its local-memory store and load bytes, from its ncu report) are spread evenly
// over its K/V steps as 4-byte local stores and loads.
//   fwd_mimic B H HKV N D BR BC WARPS CTAS_PER_SM CAUSAL LOCAL_ST LOCAL_LD calibrate TARGET_US
//       -> prints the spin that takes TARGET_US (the L2 flushed before each run)
//   fwd_mimic B H HKV N D BR BC WARPS CTAS_PER_SM CAUSAL LOCAL_ST LOCAL_LD measure SPIN
//       -> one launch of mimic_measured (for ncu -k regex:mimic_measured)
//   fwd_mimic B H HKV N D BR BC WARPS CTAS_PER_SM CAUSAL LOCAL_ST LOCAL_LD trace SPIN FILE
//       -> the same launch, each CTA recording its SM and when each of its K/V steps began (%globaltimer), into
//          FILE: the schedule the card ran, for a cache model to replay (format: write_trace below)
// (python3 bench/gpu/fwd_mimic.py drives it.)
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "cuda_check.h"

struct Problem {
  int b, h, hkv, n, d, br, bc, causal;
  long long spin;
  int spill_st_words, spill_ld_words;  // 4-byte local-memory stores and loads per thread and K/V step
};

// The most 4-byte words a step stores or loads (a thread's local array; more are cut to it): the kernels measured
// spill up to about 30 a step.
constexpr int kFrameWords = 64;

__device__ __forceinline__ void copy_rows(uint4* s, const char* g, int64_t bytes) {
  for (int64_t i = threadIdx.x; i < bytes / 16; i += blockDim.x) {
    const unsigned sa = static_cast<unsigned>(__cvta_generic_to_shared(s + i));
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(sa), "l"(g + 16 * i));
  }
  asm volatile("cp.async.commit_group;\n" ::);
}

__device__ __forceinline__ void wait_all() {
  asm volatile("cp.async.wait_all;\n" ::);
  __syncthreads();
}

__device__ __forceinline__ void spin_for(long long cycles) {
  const long long t0 = clock64();
  while (clock64() - t0 < cycles) {
  }
}

// The kernel's register spills, as local memory: `st` stores and `ld` loads of a thread's frame (a dynamically
// indexed local array: the compiler cannot keep it in registers).
// The frame is as many words as a step stores or loads (its footprint in the L2: the kernel's spill frame).
__device__ __forceinline__ unsigned spill(unsigned* frame, int st, int ld, int step, unsigned x) {
#ifndef FWD_MIMIC_NO_SPILL_CODE
  const int words = max(1, max(st, ld));
  for (int w = 0; w < st; ++w) frame[(step + w) % words] = x + w;
  for (int w = 0; w < ld; ++w) x ^= frame[(step * 7 + w) % words];
#endif
  return x;
}

__device__ __forceinline__ uint64_t global_ns() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__device__ __forceinline__ unsigned sm_id() {
  unsigned id;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(id));
  return id;
}

// A CTA's trace (null: none): its SM, then the time its Q and last K were issued, then the time each K/V step
// began (tile j = tiles - 1 down to 0), then the time its O was written; at `at[cta]` in a buffer of u64.
struct Trace {
  uint64_t* buffer;
  const int64_t* at;
};

__device__ void mimic(const Problem p, const char* q, const char* k, const char* v, char* o, float* lse,
                      const Trace trace) {
  extern __shared__ uint4 smem[];
  volatile unsigned frame[kFrameWords];
  unsigned spilled = threadIdx.x;
  const int m = blockIdx.x, bb = blockIdx.y, hh = blockIdx.z, hk = hh / (p.h / p.hkv);
  const int row_bytes = p.d * 2;  // bf16
  const int rows_q = min(p.br, p.n - m * p.br);
  uint64_t* tr = nullptr;
  if (trace.buffer && threadIdx.x == 0) {
    tr = trace.buffer + trace.at[m + gridDim.x * (bb + gridDim.y * hh)];
    *tr++ = sm_id();
    *tr++ = global_ns();
  }
  uint4* sQ = smem;                        // (Br, d)
  uint4* sK = sQ + p.br * row_bytes / 16;  // (Bc, d)
  uint4* sV = sK + p.bc * row_bytes / 16;  // (Bc, d)
  // [batch, heads, seqlen, dim] contiguous, as sdpa.py's `once` makes Q, K and V
  copy_rows(sQ,
            q + ((static_cast<int64_t>(bb) * p.h + hh) * p.n + static_cast<int64_t>(m) * p.br) * row_bytes,
            static_cast<int64_t>(rows_q) * row_bytes);
  const int key_end =
      p.causal ? min(p.n, (m + 1) * p.br) : p.n;  // square problems: keys <= the block's last row
  const int tiles = (key_end + p.bc - 1) / p.bc;
  const char* gK = k + (static_cast<int64_t>(bb) * p.hkv + hk) * p.n * row_bytes;
  const char* gV = v + (static_cast<int64_t>(bb) * p.hkv + hk) * p.n * row_bytes;
  const auto tile_bytes = [&](int j) { return static_cast<int64_t>(min(p.bc, p.n - j * p.bc)) * row_bytes; };
  copy_rows(sK, gK + static_cast<int64_t>(tiles - 1) * p.bc * row_bytes, tile_bytes(tiles - 1));
  for (int j = tiles - 1; j >= 0; --j) {
    wait_all();  // K tile j (and Q) in shared memory
    if (tr) *tr++ = global_ns();
    copy_rows(sV, gV + static_cast<int64_t>(j) * p.bc * row_bytes, tile_bytes(j));
    spin_for(p.spin / 2);  // S = Q K_j^T
    spilled = spill(const_cast<unsigned*>(frame), p.spill_st_words, p.spill_ld_words, j, spilled);
    wait_all();
    if (j > 0) copy_rows(sK, gK + static_cast<int64_t>(j - 1) * p.bc * row_bytes, tile_bytes(j - 1));
    spin_for(p.spin / 2);  // O += P V_j
  }
  wait_all();
  if (tr) *tr = global_ns();
  // O [batch, seqlen, heads, dim]: each row from shared memory (the loads are kept: O is what was read)
  for (int64_t i = threadIdx.x; i < static_cast<int64_t>(rows_q) * row_bytes / 16; i += blockDim.x) {
    const int64_t r = i / (row_bytes / 16), c = i % (row_bytes / 16);
    const int64_t row = (static_cast<int64_t>(bb) * p.n + m * p.br + r) * p.h + hh;
    uint4 x = sQ[i];
    x.x ^= sK[i % (p.bc * row_bytes / 16)].x ^ sV[i % (p.bc * row_bytes / 16)].y ^ (spilled == 0x9e3779b9u);
    reinterpret_cast<uint4*>(o + row * row_bytes)[c] = x;
  }
  for (int r = threadIdx.x; r < rows_q; r += blockDim.x)
    lse[(static_cast<int64_t>(bb) * p.h + hh) * p.n + m * p.br + r] = 0.f;
}

// Two names of one kernel, so that ncu profiles the measured launch alone (the calibration's take no trace).
__global__ void mimic_calibrate(Problem p, const char* q, const char* k, const char* v, char* o, float* lse,
                                Trace trace) {
  mimic(p, q, k, v, o, lse, trace);
}
__global__ void mimic_measured(Problem p, const char* q, const char* k, const char* v, char* o, float* lse,
                               Trace trace) {
  mimic(p, q, k, v, o, lse, trace);
}

// The trace file: one text line "fwd_mimic trace B H HKV N D BR BC CTAS_PER_SM CTAS SPIN", then per CTA in
// launch order (query block fastest, then batch, then head) its SM, its tiles and tiles + 2 times in ns from the
// kernel's first CTA start, as little-endian u32 (a kernel here runs well under 4 s).
static int write_trace(const char* path, const Problem& p, int ctas_per_sm, const dim3& grid,
                       const std::vector<int>& tiles, const std::vector<int64_t>& at,
                       const std::vector<uint64_t>& buffer) {
  std::FILE* f = std::fopen(path, "wb");
  if (!f) {
    std::fprintf(stderr, "fwd_mimic: cannot write %s\n", path);
    return 1;
  }
  uint64_t t0 = ~uint64_t{0};
  for (size_t c = 0; c < tiles.size(); ++c) t0 = std::min(t0, buffer[at[c] + 1]);
  std::fprintf(f, "fwd_mimic trace %d %d %d %d %d %d %d %d %zu %lld\n", p.b, p.h, p.hkv, p.n, p.d, p.br, p.bc,
               ctas_per_sm, tiles.size(), p.spin);
  std::vector<uint32_t> row;
  for (size_t c = 0; c < tiles.size(); ++c) {
    row.assign({static_cast<uint32_t>(buffer[at[c]]), static_cast<uint32_t>(tiles[c])});
    for (int i = 0; i < tiles[c] + 2; ++i) row.push_back(static_cast<uint32_t>(buffer[at[c] + 1 + i] - t0));
    std::fwrite(row.data(), sizeof(uint32_t), row.size(), f);
  }
  return std::fclose(f) == 0 ? 0 : 1;
}

int main(int argc, char** argv) {
  const bool tracing = argc == 16 && !std::strcmp(argv[13], "trace");
  if (!(argc == 15 && (!std::strcmp(argv[13], "calibrate") || !std::strcmp(argv[13], "measure"))) &&
      !tracing) {
    std::fprintf(stderr,
                 "usage: fwd_mimic B H HKV N D BR BC WARPS CTAS_PER_SM CAUSAL LOCAL_ST LOCAL_LD "
                 "(calibrate TARGET_US | measure SPIN | trace SPIN FILE)\n");
    return 2;
  }
  Problem p{};
  p.b = std::atoi(argv[1]), p.h = std::atoi(argv[2]), p.hkv = std::atoi(argv[3]), p.n = std::atoi(argv[4]);
  p.d = std::atoi(argv[5]), p.br = std::atoi(argv[6]), p.bc = std::atoi(argv[7]);
  const int warps = std::atoi(argv[8]), ctas_per_sm = std::atoi(argv[9]);
  p.causal = std::atoi(argv[10]);
  const double local_st = std::atof(argv[11]), local_ld = std::atof(argv[12]);
  const bool calibrate = !std::strcmp(argv[13], "calibrate");
  const double arg = std::atof(argv[14]);
  if (p.b < 1 || p.h < 1 || p.hkv < 1 || p.h % p.hkv || p.n < 1 || p.d % 8 || p.br < 1 || p.bc < 1 ||
      warps < 1 || ctas_per_sm < 1) {
    std::fprintf(stderr, "fwd_mimic: bad problem\n");
    return 2;
  }
  const int64_t row_bytes = p.d * 2, q_bytes = int64_t{p.b} * p.h * p.n * row_bytes,
                kv_bytes = int64_t{p.b} * p.hkv * p.n * row_bytes;
  char *q, *k, *v, *o, *flush;
  float* lse;
  CHECK(cudaMalloc(&q, q_bytes));
  CHECK(cudaMalloc(&k, kv_bytes));
  CHECK(cudaMalloc(&v, kv_bytes));
  CHECK(cudaMalloc(&o, q_bytes));
  CHECK(cudaMalloc(&lse, int64_t{p.b} * p.h * p.n * 4));
  const int64_t flush_bytes = 256ll << 20;  // over any L2 this probe meets (the H200's is 60 MiB)
  CHECK(cudaMalloc(&flush, flush_bytes));
  CHECK(cudaMemset(q, 1, q_bytes));
  CHECK(cudaMemset(k, 2, kv_bytes));
  CHECK(cudaMemset(v, 3, kv_bytes));
  // Dynamic shared memory: Q, K and V tiles at least, padded until exactly ctas_per_sm CTAs fit an SM.
  const int need = static_cast<int>((p.br + 2 * p.bc) * row_bytes);
  int device = 0, sm_smem = 0, clock_khz = 0, sms = 0;
  CHECK(cudaGetDevice(&device));
  CHECK(cudaDeviceGetAttribute(&sm_smem, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
  CHECK(cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, device));
  CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  auto* kernel = calibrate ? mimic_calibrate : mimic_measured;
  CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, sm_smem));
  int smem = -1;
  for (int s = sm_smem; s >= need; s -= 256) {
    int fit = 0;
    CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&fit, kernel, warps * 32, s));
    if (fit == ctas_per_sm) {
      smem = s;
      break;
    }
    if (fit > ctas_per_sm) break;
  }
  if (smem < 0) {
    std::fprintf(stderr, "fwd_mimic: no shared-memory size gives %d CTAs an SM (needs %d bytes)\n",
                 ctas_per_sm, need);
    return 1;
  }
  const dim3 grid((p.n + p.br - 1) / p.br, p.b, p.h);
  // each CTA's K/V tiles (its K/V steps), in launch order; and where its trace starts: its SM, start, one time
  // per K/V step and its end
  std::vector<int> tiles;
  std::vector<int64_t> at;
  int64_t trace_words = 0;
  double steps = 0;  // the K/V steps of every CTA, to spread the spills over
  for (int c = 0; c < static_cast<int>(grid.x * grid.y * grid.z); ++c) {
    const int m = c % static_cast<int>(grid.x);
    tiles.push_back(((p.causal ? std::min(p.n, (m + 1) * p.br) : p.n) + p.bc - 1) / p.bc);
    at.push_back(trace_words);
    trace_words += tiles.back() + 3;
    steps += tiles.back();
  }
  const double per = steps * warps * 32 * 4;  // bytes per 4-byte word per thread-step
  const double st_words = local_st / per + 0.5, ld_words = local_ld / per + 0.5;
  if (st_words > kFrameWords || ld_words > kFrameWords)
    std::fprintf(stderr, "fwd_mimic: %.0f stored and %.0f loaded spill words a step, cut to %d\n", st_words,
                 ld_words, kFrameWords);
  p.spill_st_words = static_cast<int>(std::min<double>(kFrameWords, st_words));
  p.spill_ld_words = static_cast<int>(std::min<double>(kFrameWords, ld_words));
  Trace trace{};
  if (tracing) {
    int64_t* d_at = nullptr;
    CHECK(cudaMalloc(&trace.buffer, trace_words * sizeof(uint64_t)));
    CHECK(cudaMalloc(&d_at, at.size() * sizeof(int64_t)));
    CHECK(cudaMemcpy(d_at, at.data(), at.size() * sizeof(int64_t), cudaMemcpyHostToDevice));
    trace.at = d_at;
  }
  const auto run = [&](long long spin) {
    p.spin = spin;
    kernel<<<grid, warps * 32, smem>>>(p, q, k, v, o, lse, trace);
    CHECK(cudaGetLastError());
  };
  if (!calibrate) {
    run(static_cast<long long>(arg));
    CHECK(cudaDeviceSynchronize());
    std::printf("measured spin %lld smem %d spill words a step: %d stored, %d loaded\n",
                static_cast<long long>(arg), smem, p.spill_st_words, p.spill_ld_words);
    if (!tracing) return 0;
    std::vector<uint64_t> buffer(trace_words);
    CHECK(cudaMemcpy(buffer.data(), trace.buffer, trace_words * sizeof(uint64_t), cudaMemcpyDeviceToHost));
    return write_trace(argv[15], p, ctas_per_sm, grid, tiles, at, buffer);
  }
  cudaEvent_t e0, e1;
  CHECK(cudaEventCreate(&e0));
  CHECK(cudaEventCreate(&e1));
  // microseconds of one launch, the L2 flushed before it (ncu's cache control does the same), median of 3
  const auto time_us = [&](long long spin) {
    std::vector<float> t;
    for (int i = 0; i < 3; ++i) {
      CHECK(cudaMemset(flush, i, flush_bytes));
      CHECK(cudaEventRecord(e0));
      run(spin);
      CHECK(cudaEventRecord(e1));
      CHECK(cudaEventSynchronize(e1));
      float ms = 0;
      CHECK(cudaEventElapsedTime(&ms, e0, e1));
      t.push_back(ms * 1000);
    }
    std::sort(t.begin(), t.end());
    return static_cast<double>(t[1]);
  };
  run(0);  // warm-up
  CHECK(cudaDeviceSynchronize());
  // t(spin) is close to a + c spin: the secant from spin 0, until within 1%. Not where the time falls as the spin
  // grows (a d256 mimic ran faster at 2000 cycles than at 0, its CTAs waiting on memory): the secant then stops at
  // spin 0, short of the target, and fwd_mimic.py says so.
  long long s0 = 0, s1 = 2000;
  double t0 = time_us(s0), t1 = time_us(s1);
  long long best = t0 >= arg ? 0 : s1;
  for (int it = 0; it < 8 && t0 < arg; ++it) {
    if (std::abs(t1 - arg) < 0.01 * arg || t1 == t0) break;
    const long long s2 = std::max(0ll, s1 + static_cast<long long>((arg - t1) * (s1 - s0) / (t1 - t0)));
    s0 = s1, t0 = t1, s1 = s2, t1 = time_us(s2);
    best = s1;
  }
  std::printf("spin %lld us %.2f target_us %.2f smem %d sms %d clock_khz %d\n", best, time_us(best), arg,
              smem, sms, clock_khz);
  return 0;
}
