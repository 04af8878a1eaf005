// Measures: the H100 profile's l2_effective_bytes, l2_dirty_bytes, l2_reuse_bytes (stream_rw, reuse_read) and,
// through `run.py derive l2-adverse`, l2_adverse_reuse_bytes (causal_mimic, dirty_reuse): calibration
// h100.l2_effective_bytes, h100.l2_dirty_bytes, h100.l2_reuse_bytes, h100.l2_adverse_reuse_bytes.
// L2 probes for the H100 profile: how much dirty data a kernel leaves in L2 at its end (write retention), and
// how often data read again by another SM after S bytes of other reads comes from DRAM (read reuse). Each
// launch below is one line of ncu's CSV, in the order printed on stderr; `python3 bench/gpu/run.py probe l2`
// runs it under ncu. An argument names the one family to run (`dirty_reuse`: the probes of 2026-11-26); none runs all.
#include <cstdio>
#include <cstring>
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

// Cold dirty data against read reuse. The first `writers` CTAs each write `wr` float4 that nothing reads again
// (as a kernel's O or dK/dV once stored); the others run reuse_read's pattern on `chunks` chunks, each CTA
// also writing `rd_wr` float4 of such lines while it reads (0: the dirty lines all come first). CTAs start in
// launch order, so the first writers' lines are older than every re-read: an LRU evicts them first, an L2
// that holds its dirty lines (up to l2_dirty_bytes) keeps them at the re-reads' cost.
__global__ void dirty_then_reuse(const float4* buf, long chunk, long chunks, float4* out, long wr,
                                 long writers, long rd_wr, float* sink) {
  if (blockIdx.x < writers) {
    for (long i = threadIdx.x; i < wr; i += kThreads)
      out[blockIdx.x * wr + i] = make_float4(1, 2, 3, float(i));
    return;
  }
  const long r = blockIdx.x - writers, c = r % chunks;
  float4* o = out + writers * wr + r * rd_wr;
  float acc = 0;
  for (long i = threadIdx.x; i < chunk; i += kThreads) {
    acc += buf[c * chunk + i].x;
    if (i < rd_wr) o[i] = make_float4(acc, 0, 0, float(i));
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

// A causal FlashAttention forward's memory pattern (fa_mimic's, in FA2's launch order: the query block
// fastest): CTA b is query block m = b mod ctas_per_group of head g = b / ctas_per_group and reads its head's
// K/V tiles 0 .. (m + 1) x tiles_per_block - 1 (tiles_per_block 0: all `iters`, non-causal), from the last
// down when `reverse` (as FA2 walks them: the masked diagonal block first). o == nullptr: no O written (the
// dirty lines left out).
__global__ void fa_mimic_causal(const float4* q, const float4* kv, float4* o, long q16, long tile16,
                                int iters, int ctas_per_group, int tiles_per_block, int reverse,
                                long long spin) {
  extern __shared__ float4 smem[];
  const long b = blockIdx.x, g = b / ctas_per_group, m = b % ctas_per_group;
  const long n = tiles_per_block ? (m + 1) * tiles_per_block : iters;
  float4 acc = make_float4(0, 0, 0, 0);
  for (long i = threadIdx.x; i < q16; i += blockDim.x) acc.x += q[b * q16 + i].x;
  const long last = (n < iters ? n : iters) - 1;
  for (long step = 0; step <= last; ++step) {
    const long it = reverse ? last - step : step;
    for (long i = threadIdx.x; i < tile16; i += blockDim.x) acc.y += kv[(g * iters + it) * tile16 + i].y;
    const long long t0 = clock64();
    while (clock64() - t0 < spin) {
    }
  }
  smem[threadIdx.x] = acc;
  __syncthreads();
  if (o)
    for (long i = threadIdx.x; i < q16; i += blockDim.x)
      o[b * q16 + i] = smem[(threadIdx.x + 1) % blockDim.x];
  else if (acc.x == 1234.5f)
    o[0] = acc;  // never true on the zero-filled buffers; keeps the loads
}

int main(int argc, char** argv) {
  const char* only = argc > 1 ? argv[1] : nullptr;
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
  const long chunk = 64 * 1024 / 16;  // the reuse probes' 64 KB chunks
  if (!only) {
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
        std::fprintf(
            stderr, "launch %d fa_mimic %s o_bytes %ld kv_bytes %ld\n", id++, v.what, v.ctas * q16 * 16,
            (v.private_kv ? v.ctas : v.ctas / v.per_group) * static_cast<long>(v.iters) * tile16 * 16);
      }
    }
  }  // !only
  // Cold dirty data and read reuse (2026-11-26): W MiB written first (16 KB per CTA), then a buffer of S MiB
  // read 3 times in 64 KB chunks; and, second, the writes spread over the readers (W / 3 between re-reads).
  if (!only || !std::strcmp(only, "dirty_reuse")) {
    const long wr = 16 * 1024 / 16;
    for (long w_mb : {0, 8, 16, 24, 48}) {
      for (long s_mb : {8, 12, 16, 20, 24}) {
        const long chunks = s_mb * MB / 16 / chunk, writers = w_mb * MB / 16 / wr;
        dirty_then_reuse<<<writers + chunks * 3, kThreads>>>(a, chunk, chunks, b, wr, writers, 0, sink);
        CHECK(cudaGetLastError());
        CHECK(cudaDeviceSynchronize());
        std::fprintf(stderr,
                     "launch %d dirty_reuse buffer_bytes %ld dirty_first_bytes %ld dirty_spread_bytes 0\n",
                     id++, chunks * chunk * 16, writers * wr * 16);
      }
    }
    for (long w_mb : {6, 12, 24}) {
      for (long s_mb : {8, 12, 16, 20}) {
        const long chunks = s_mb * MB / 16 / chunk, rd_wr = w_mb * MB / 16 / (chunks * 3);
        dirty_then_reuse<<<chunks * 3, kThreads>>>(a, chunk, chunks, b, 0, 0, rd_wr, sink);
        CHECK(cudaGetLastError());
        CHECK(cudaDeviceSynchronize());
        std::fprintf(stderr,
                     "launch %d dirty_reuse buffer_bytes %ld dirty_first_bytes 0 dirty_spread_bytes %ld\n",
                     id++, chunks * chunk * 16, chunks * 3 * rd_wr * 16);
      }
    }
  }
  // Causal FlashAttention-forward mimics (2026-11-26) of SDPA's launches, 2 CTAs an SM, 4 warps: d128 (Br 128,
  // Bc 64: Q/O 32 KB a CTA, K/V tiles of 32 KB) at b2 h16 n4096 and b1 h8 n16384, with and without the O writes,
  // K/V walked up or (rev) down, with 2000 cycles of "math" per tile (about an m128 n64 d128 tile's two MMAs at 2
  // CTAs an SM) or none; then, walked down with O, d64 (Br 128, Bc 128) b2 h16 n8192, d96 (128, 64) b4 h8 n4096
  // and d256 (64, 64) b4 h8 n2048, their "math" scaled by the tile's multiply-adds.
  if (!only || !std::strcmp(only, "causal_mimic")) {
    const int smem = 100 * 1024;
    CHECK(cudaFuncSetAttribute(fa_mimic_causal, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    float4* q = a + 64 * MB / 16;  // K/V in a's first 64 MiB, Q after
    struct V {
      const char* what;
      int ctas, per_group, iters, tiles_per_block, write_o, reverse;
      long long spin;
      long q_kb = 32, tile_kb = 32;
    };
    for (const V v : {V{"n4096_causal_spin", 1024, 32, 64, 2, 1, 0, 2000},
                      V{"n4096_causal_spin_no_o", 1024, 32, 64, 2, 0, 0, 2000},
                      V{"n4096_causal_nospin", 1024, 32, 64, 2, 1, 0, 0},
                      V{"n4096_causal_nospin_no_o", 1024, 32, 64, 2, 0, 0, 0},
                      V{"n4096_full_spin", 1024, 32, 64, 0, 1, 0, 2000},
                      V{"n16384_causal_spin", 1024, 128, 256, 2, 1, 0, 2000},
                      V{"n16384_causal_spin_no_o", 1024, 128, 256, 2, 0, 0, 2000},
                      V{"n4096_causal_rev_spin", 1024, 32, 64, 2, 1, 1, 2000},
                      V{"n4096_causal_rev_spin_no_o", 1024, 32, 64, 2, 0, 1, 2000},
                      V{"n4096_causal_rev_nospin", 1024, 32, 64, 2, 1, 1, 0},
                      V{"n4096_causal_rev_nospin_no_o", 1024, 32, 64, 2, 0, 1, 0},
                      V{"n4096_full_rev_spin", 1024, 32, 64, 0, 1, 1, 2000},
                      V{"n16384_causal_rev_spin", 1024, 128, 256, 2, 1, 1, 2000},
                      V{"n16384_causal_rev_spin_no_o", 1024, 128, 256, 2, 0, 1, 2000},
                      V{"d64_n8192_causal_rev_spin", 2048, 64, 64, 1, 1, 1, 2000, 16, 32},
                      V{"d64_n8192_causal_rev_nospin", 2048, 64, 64, 1, 1, 1, 0, 16, 32},
                      V{"d96_n4096_causal_rev_spin", 1024, 32, 64, 2, 1, 1, 1500, 24, 24},
                      V{"d96_n4096_causal_rev_nospin", 1024, 32, 64, 2, 1, 1, 0, 24, 24},
                      V{"d256_n2048_causal_rev_spin", 1024, 32, 32, 1, 1, 1, 2000, 32, 64},
                      V{"d256_n2048_causal_rev_nospin", 1024, 32, 32, 1, 1, 1, 0, 32, 64}}) {
      const long q16 = v.q_kb * 1024 / 16, tile16 = v.tile_kb * 1024 / 16;
      fa_mimic_causal<<<v.ctas, 128, smem>>>(q, a, v.write_o ? b : nullptr, q16, tile16, v.iters, v.per_group,
                                             v.tiles_per_block, v.reverse, v.spin);
      CHECK(cudaGetLastError());
      CHECK(cudaDeviceSynchronize());
      std::fprintf(stderr, "launch %d causal_mimic %s q_bytes %ld kv_bytes %ld o_bytes %ld\n", id++, v.what,
                   v.ctas * q16 * 16, (v.ctas / v.per_group) * static_cast<long>(v.iters) * tile16 * 16,
                   v.write_o ? v.ctas * q16 * 16 : 0L);
    }
  }
  std::fprintf(stderr, "ok %d launches\n", id);
  return 0;
}
