// Measures: the H100 profile's mma_sync_flops, mma_sync_warp_cycles, smem_bytes_per_s, exp_per_s, clock_hz,
// step_overhead_cycles and l2_bytes_per_s (calibration h100.cta_rates in bench/calibration.json).
// Rates of the per-CTA time model (tiling_sim's cta_model.h), measured on the GPU it runs on:
//   mma      mma.sync.m16n8k16 bf16 -> fp32 FLOP/s of the whole GPU with 1, 2, 4, 8, 16 warps an SM (4
//            independent accumulators a warp: what a lone warp per scheduler reaches, and the saturated rate)
//   ldmatrix ldmatrix.x4 bytes/s out of shared memory, all SMs, 8 warps a CTA (conflict-free addresses)
//   ex2      ex2.approx.f32 results/s (the SFU), all SMs
//   barrier  cycles of one __syncthreads for CTAs of 4 and 8 warps, one CTA an SM (clock64 in the kernel)
//   clock    the SM clock during an mma loop (clock64 cycles over the event time)
//   l2       L2 -> SM read bytes/s: every SM streaming a 24 MiB buffer (L2-resident after the warm-up) with
//            16-byte ld.global.cg loads (L1 bypassed), 8 warps a CTA, 2 CTAs an SM
// Build and run: python3 bench/gpu/run.py probe cta-rates (nvcc -O3 -arch=sm_90, then the binary alone)
#include <cuda_bf16.h>

#include <cstdint>
#include <cstdio>

#include "cuda_check.h"

constexpr int kIters = 4096;  // loop trips: ~10^5 cycles a warp, long against the launch's ~5 us

__global__ void mma_loop(float* out, long long* cycles) {
  const uint32_t a0 = 0x3f803f80u + threadIdx.x;  // bf16 ~1.0 pairs, a different A and B a lane
  uint32_t a[4] = {a0, a0 ^ 1u, a0 ^ 2u, a0 ^ 3u};
  uint32_t b[4][2];
  float c[4][4];
  for (int j = 0; j < 4; ++j) {  // 4 independent chains, different B and C: no two the compiler can merge
    b[j][0] = 0x3f803f80u + 16u * static_cast<uint32_t>(j);
    b[j][1] = b[j][0] ^ 8u;
    for (int k = 0; k < 4; ++k) c[j][k] = static_cast<float>(j * 4 + k);
  }
  const long long t0 = clock64();
#pragma unroll 1
  for (int i = 0; i < kIters; ++i) {
#pragma unroll
    for (int j = 0; j < 4; ++j)  // 4 independent accumulators: the tensor pipe's latency hidden
      asm volatile(
          "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
          "{%0,%1,%2,%3};\n"
          : "+f"(c[j][0]), "+f"(c[j][1]), "+f"(c[j][2]), "+f"(c[j][3])
          : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[j][0]), "r"(b[j][1]));
  }
  const long long t1 = clock64();
  float s = 0;
  for (int j = 0; j < 4; ++j) s += c[j][0] + c[j][1] + c[j][2] + c[j][3];
  if (s == -1.0f) out[threadIdx.x] = s;  // never true: keeps the loop
  if (threadIdx.x == 0 && blockIdx.x == 0) *cycles = t1 - t0;
}

__global__ void ldmatrix_loop(float* out) {
  __shared__ __align__(128) uint16_t tile[64 * 64];  // 8 KB: 64 rows of 128 bytes
  for (int i = threadIdx.x; i < 64 * 64; i += blockDim.x) tile[i] = static_cast<uint16_t>(i);
  __syncthreads();
  const int lane = threadIdx.x % 32;
  // lane l addresses row l of an 8-row group, chunk (l / 8) ^ (row & 7): 8 rows in 8 different bank groups
  const int row = lane % 8 + 8 * ((threadIdx.x / 32) % 8);
  const int chunk = (lane / 8) ^ (row & 7);
  const uint32_t addr = static_cast<uint32_t>(__cvta_generic_to_shared(tile + row * 64 + chunk * 8));
  uint32_t acc = 0;
#pragma unroll 4
  for (int i = 0; i < kIters; ++i) {
    uint32_t r0, r1, r2, r3;
    // the "memory" clobber keeps every load (no two merged); the sum keeps every result
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3)
                 : "r"(addr ^ static_cast<uint32_t>((i & 7) << 4))
                 : "memory");
    acc += r0 + 3 * r1 + 5 * r2 + 7 * r3;
  }
  if (acc == 0x12345678u) out[threadIdx.x] = static_cast<float>(acc);
}

__global__ void ex2_loop(float* out) {
  float x[4] = {0.001f * threadIdx.x, 0.002f, 0.003f, 0.004f};
  for (int i = 0; i < kIters; ++i)
#pragma unroll
    for (int j = 0; j < 4; ++j) asm volatile("ex2.approx.f32 %0, %0;\n" : "+f"(x[j]));
  if (x[0] + x[1] + x[2] + x[3] == -1.0f) out[threadIdx.x] = x[0];
}

__global__ void barrier_loop(long long* cycles) {
  const long long t0 = clock64();
  for (int i = 0; i < kIters; ++i) __syncthreads();
  const long long t1 = clock64();
  if (threadIdx.x == 0 && blockIdx.x == 0) *cycles = t1 - t0;
}

// CTA b reads 16-byte vectors i = b * 256 + t, + grid * 256, ... of a buffer of n vectors, `rounds` times.
__global__ void l2_read(const int4* buf, long n, int rounds, int* out) {
  int acc = 0;
  const long stride = static_cast<long>(gridDim.x) * blockDim.x;
  for (int r = 0; r < rounds; ++r)
    for (long i = static_cast<long>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
      int4 v;
      asm volatile("ld.global.cg.v4.s32 {%0,%1,%2,%3}, [%4];\n"
                   : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                   : "l"(buf + i));
      acc ^= v.x ^ v.y ^ v.z ^ v.w;
    }
  if (acc == 0x12345678) out[threadIdx.x] = acc;
}

template <class F>
float time_ms(F&& launch) {
  cudaEvent_t a, b;
  CHECK(cudaEventCreate(&a));
  CHECK(cudaEventCreate(&b));
  launch();  // warm-up
  CHECK(cudaEventRecord(a));
  for (int r = 0; r < 5; ++r) launch();
  CHECK(cudaEventRecord(b));
  CHECK(cudaEventSynchronize(b));
  float ms = 0;
  CHECK(cudaEventElapsedTime(&ms, a, b));
  CHECK(cudaGetLastError());
  return ms / 5;
}

int main() {
  cudaDeviceProp prop;
  CHECK(cudaGetDeviceProperties(&prop, 0));
  const int sms = prop.multiProcessorCount;
  float* out = nullptr;
  long long* cyc = nullptr;
  CHECK(cudaMalloc(&out, 1024 * sizeof(float)));
  CHECK(cudaMalloc(&cyc, sizeof(long long)));
  std::printf("device,%s,sms,%d\n", prop.name, sms);
  const double mma_flops = 2.0 * 16 * 8 * 16;  // one m16n8k16
  for (int warps : {1, 2, 4, 8, 16}) {
    const float ms = time_ms([&] { mma_loop<<<sms, warps * 32>>>(out, cyc); });
    long long cycles = 0;
    CHECK(cudaMemcpy(&cycles, cyc, sizeof(cycles), cudaMemcpyDeviceToHost));
    const double flops = mma_flops * 4 * kIters * warps * sms;
    std::printf("mma,warps_per_sm,%d,flops_per_s,%.4g,cycles_per_mma_per_warp,%.2f,clock_hz,%.4g\n", warps,
                flops / (ms * 1e-3), static_cast<double>(cycles) / (4.0 * kIters),
                static_cast<double>(cycles) / (ms * 1e-3));
  }
  {
    const int ctas = sms * 2;  // 16 warps an SM
    const float ms = time_ms([&] { ldmatrix_loop<<<ctas, 256>>>(out); });
    const double bytes = 512.0 * kIters * 8 * ctas;  // 512 bytes per warp's ldmatrix.x4
    std::printf("ldmatrix,warps_per_sm,16,bytes_per_s,%.4g\n", bytes / (ms * 1e-3));
  }
  {
    const int ctas = sms * 4;
    const float ms = time_ms([&] { ex2_loop<<<ctas, 256>>>(out); });
    std::printf("ex2,warps_per_sm,32,per_s,%.4g\n", 4.0 * kIters * 256 * ctas / (ms * 1e-3));
  }
  {
    const long bytes = 24L << 20;  // half of the H100's 50 MiB L2: stays resident
    int4* buf = nullptr;
    CHECK(cudaMalloc(&buf, bytes));
    CHECK(cudaMemset(buf, 1, bytes));
    const int rounds = 20;
    const float ms =
        time_ms([&] { l2_read<<<sms * 2, 256>>>(buf, bytes / 16, rounds, reinterpret_cast<int*>(out)); });
    std::printf("l2,bytes_per_s,%.4g\n", static_cast<double>(bytes) * rounds / (ms * 1e-3));
    CHECK(cudaFree(buf));
  }
  for (int warps : {4, 8}) {
    time_ms([&] { barrier_loop<<<sms, warps * 32>>>(cyc); });
    long long cycles = 0;
    CHECK(cudaMemcpy(&cycles, cyc, sizeof(cycles), cudaMemcpyDeviceToHost));
    std::printf("barrier,warps,%d,cycles,%.1f\n", warps, static_cast<double>(cycles) / kIters);
  }
  return 0;
}
