// L2 probes for the H100 profile: how much dirty data a kernel leaves in L2 at its end (write retention), and
// how often data read again by another SM after S bytes of other reads comes from DRAM (read reuse). Each
// launch below is one line of ncu's CSV, in the order printed on stderr; bench/gpu/l2_probe.sh runs it under
// ncu.
#include <cstdio>
#include <vector>

#include "cuda_check.h"

constexpr int kThreads = 256;

// CTA b reads in[b*rd, (b+1)*rd) and writes out[b*wr, (b+1)*wr) (16-byte vectors, reads and writes
// interleaved in one loop), as a streaming kernel (the dQ convert kernel, the dot kernel) does.
__global__ void stream_rw(const float4* in, float4* out, long rd, long wr) {
  const long n = rd > wr ? rd : wr;
  float4 acc = make_float4(0, 0, 0, 0);
  for (long i = threadIdx.x; i < n; i += kThreads) {
    if (i < rd) {
      const float4 x = in[blockIdx.x * rd + i];
      acc.x += x.x;
      acc.y += x.y;
      acc.z += x.z;
      acc.w += x.w;
    }
    if (i < wr) out[blockIdx.x * wr + i] = make_float4(acc.x, acc.y, acc.z, float(i));
  }
}

// CTA b reads chunk (b mod chunks) of the buffer: each chunk is read `grid / chunks` times, by CTAs on other
// SMs, with the whole buffer read in between (a reuse distance of chunks x chunk bytes).
__global__ void reuse_read(const float4* buf, long chunk, long chunks, float* sink) {
  const long c = blockIdx.x % chunks;
  float acc = 0;
  for (long i = threadIdx.x; i < chunk; i += kThreads) acc += buf[c * chunk + i].x;
  if (acc == 1234.5f) sink[0] = acc;  // never true on the zero-filled buffer; keeps the loads
}

// Writes `wr` float4 per CTA, then spins `spin_cycles` clock cycles before exiting: whether L2 writes dirty
// lines back while DRAM is idle (eager write-back), which decides how much of a compute-bound kernel's output
// is still dirty at its end.
__global__ void write_then_spin(float4* out, long wr, long long spin_cycles) {
  for (long i = threadIdx.x; i < wr; i += kThreads) out[blockIdx.x * wr + i] = make_float4(1, 2, 3, float(i));
  const long long t0 = clock64();
  while (clock64() - t0 < spin_cycles) {
  }
}

// reuse_read plus a dirty frame per CTA slot (as register spills): CTA b rewrites frame (b mod slots),
// `frame` float4, `rewrites` times while it reads its chunk; the frames' lines stay dirty and hot in L2.
__global__ void reuse_read_with_frames(const float4* buf, long chunk, long chunks, float4* frames, long frame,
                                       long slots, int rewrites, float* sink) {
  const long c = blockIdx.x % chunks;
  float4* f = frames + (blockIdx.x % slots) * frame;
  float acc = 0;
  const long step = chunk / rewrites;
  for (int r = 0; r < rewrites; ++r) {
    for (long i = r * step + threadIdx.x; i < (r + 1) * step; i += kThreads) acc += buf[c * chunk + i].x;
    for (long i = threadIdx.x; i < frame; i += kThreads) f[i] = make_float4(acc, 0, 0, float(r));
  }
  if (acc == 1234.5f) sink[0] = acc;
}

// The memory pattern of a FlashAttention forward CTA, without the math: read a Q chunk, then `iters` K/V
// tiles of its group's (head's) K/V (or, private_kv, of a private copy of the same size: no CTA shares a
// line), spinning `spin` cycles per tile as the MMAs would, then write an O chunk. 128 threads; the caller's
// dynamic shared memory sets the CTAs per SM.
__global__ void fa_mimic(const float4* q, const float4* kv, float4* o, long q16, long tile16, int iters,
                         int ctas_per_group, int private_kv, long long spin) {
  extern __shared__ float4 smem[];
  const long b = blockIdx.x, g = private_kv ? b : b / ctas_per_group;
  float4 acc = make_float4(0, 0, 0, 0);
  for (long i = threadIdx.x; i < q16; i += blockDim.x) acc.x += q[b * q16 + i].x;
  for (int it = 0; it < iters; ++it) {
    for (long i = threadIdx.x; i < tile16; i += blockDim.x) acc.y += kv[(g * iters + it) * tile16 + i].y;
    const long long t0 = clock64();
    while (clock64() - t0 < spin) {
    }
  }
  smem[threadIdx.x] = acc;
  __syncthreads();
  for (long i = threadIdx.x; i < q16; i += blockDim.x) o[b * q16 + i] = smem[(threadIdx.x + 1) % blockDim.x];
}

int main() {
  const long MB = 1 << 20;
  const long max_bytes = 160 * MB;
  float4 *a = nullptr, *b = nullptr;
  float* sink = nullptr;
  CHECK(cudaMalloc(&a, max_bytes));
  CHECK(cudaMalloc(&b, max_bytes));
  CHECK(cudaMalloc(&sink, 4));
  CHECK(cudaMemset(a, 0, max_bytes));
  CHECK(cudaMemset(b, 0, max_bytes));
  CHECK(cudaDeviceSynchronize());
  int id = 0;
  // Write retention: footprint T (read + written bytes) with written share 1/3, 1/2 and 1, 48 KB per CTA.
  const long per_cta = 48 * 1024 / 16;  // float4 per CTA: 48 KB, divisible by 3 and 2
  for (int share : {3, 2, 1}) {
    for (long t_mb : {12, 24, 36, 48, 60, 72, 96, 144}) {
      const long wr = per_cta / share, rd = per_cta - wr;
      const long ctas = t_mb * MB / 16 / per_cta;
      stream_rw<<<ctas, kThreads>>>(a, b, rd, wr);
      CHECK(cudaGetLastError());
      CHECK(cudaDeviceSynchronize());
      std::fprintf(stderr, "launch %d stream_rw footprint_bytes %ld read_bytes %ld write_bytes %ld\n", id++,
                   ctas * per_cta * 16, ctas * rd * 16, ctas * wr * 16);
    }
  }
  // Read reuse: buffer S read 3 times, 64 KB chunks.
  const long chunk = 64 * 1024 / 16;
  for (long s_mb : {8, 16, 20, 24, 28, 32, 36, 40, 44, 48, 56, 64, 96}) {
    const long chunks = s_mb * MB / 16 / chunk;
    reuse_read<<<chunks * 3, kThreads>>>(a, chunk, chunks, sink);
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());
    std::fprintf(stderr, "launch %d reuse_read buffer_bytes %ld reads 3\n", id++, chunks * chunk * 16);
  }
  // Eager write-back: 8 and 16 MiB written, then 0 .. 400 us of idle DRAM (clock64 at about 1.7 GHz).
  int device = 0, clock_khz = 0;
  CHECK(cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, device));
  for (long w_mb : {8, 16}) {
    for (long us : {0, 20, 100, 400}) {
      const long wr = 16 * 1024 / 16;  // 16 KB per CTA
      const long ctas = w_mb * MB / 16 / wr;
      write_then_spin<<<ctas, kThreads>>>(b, wr, static_cast<long long>(us) * clock_khz / 1000);
      CHECK(cudaGetLastError());
      CHECK(cudaDeviceSynchronize());
      std::fprintf(stderr, "launch %d write_then_spin write_bytes %ld spin_us %ld\n", id++, ctas * wr * 16,
                   us);
    }
  }
  // Read reuse with hot dirty frames: 1056 slots (8 CTAs of 256 threads on 132 SMs), 0 / 8 / 16 KB each.
  const long slots = 1056;
  for (long frame_kb : {0, 8, 16}) {
    for (long s_mb : {16, 20, 24, 28, 32}) {
      const long chunks = s_mb * MB / 16 / chunk;
      reuse_read_with_frames<<<chunks * 3, kThreads>>>(a, chunk, chunks, b, frame_kb * 1024 / 16, slots, 8,
                                                       sink);
      CHECK(cudaGetLastError());
      CHECK(cudaDeviceSynchronize());
      std::fprintf(stderr, "launch %d reuse_frames buffer_bytes %ld frame_bytes %ld slots %ld\n", id++,
                   chunks * chunk * 16, frame_kb * 1024, slots);
    }
  }
  // FlashAttention-forward mimics, 2 CTAs per SM (100 KB of shared memory each), `spin` cycles of "math" per
  // K/V tile: d96 n2048 b2 h16 (512 CTAs, 16 per head, Q/O 24 KB per CTA, 32 K/V tiles of 24 KB) and d256
  // n1024 b4 h8 (512 CTAs, 16 per head, Q/O 32 KB, 16 tiles of 64 KB), as SDPA's FA2 kernels run them.
  {
    float4 *kvp = nullptr, *op = nullptr;
    const size_t kv_room = 512ul * 32 * 64 * 1024;  // private copies of the largest
    CHECK(cudaMalloc(&kvp, kv_room));
    CHECK(cudaMalloc(&op, 32 * MB));
    CHECK(cudaMemset(kvp, 0, kv_room));
    const int smem = 100 * 1024;
    CHECK(cudaFuncSetAttribute(fa_mimic, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    struct V {
      const char* what;
      long q_kb, tile_kb;
      int iters, ctas, per_group, private_kv;
      long long spin;
    };
    for (const V v : {V{"d96_shared_kv_spin", 24, 24, 32, 512, 16, 0, 4000},
                      V{"d96_shared_kv_nospin", 24, 24, 32, 512, 16, 0, 0},
                      V{"d96_private_kv_spin", 24, 24, 32, 512, 16, 1, 4000},
                      V{"d96_no_kv_spin", 24, 0, 32, 512, 16, 0, 4000},
                      V{"d96_shared_kv_spin_one_wave", 24, 24, 32, 264, 16, 0, 4000},
                      V{"d256_shared_kv_spin", 32, 64, 16, 512, 16, 0, 8000},
                      V{"d256_private_kv_spin", 32, 64, 16, 512, 16, 1, 8000}}) {
      const long q16 = v.q_kb * 1024 / 16, tile16 = v.tile_kb * 1024 / 16;
      fa_mimic<<<v.ctas, 128, smem>>>(a, kvp, op, q16, tile16, v.iters, v.per_group, v.private_kv, v.spin);
      CHECK(cudaGetLastError());
      CHECK(cudaDeviceSynchronize());
      std::fprintf(stderr, "launch %d fa_mimic %s o_bytes %ld kv_bytes %ld\n", id++, v.what,
                   v.ctas * q16 * 16,
                   (v.private_kv ? v.ctas : v.ctas / v.per_group) * static_cast<long>(v.iters) * tile16 * 16);
    }
  }
  std::fprintf(stderr, "ok %d launches\n", id);
  return 0;
}
