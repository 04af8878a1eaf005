// Measures: the H100 profile's kernel_latency_s (calibration h100.kernel_latency_s in bench/calibration.json).
// Launch-time probes for the H100 profile's kernel latency: what ncu's gpu__time_duration counts for a kernel
// that does nothing, and for copy kernels of growing size (time beyond bytes / bandwidth: start, bandwidth
// ramp-up, drain). Each launch is one kernel in ncu's CSV, in the order printed on stderr;
// `python3 bench/gpu/run.py probe launch` runs it under ncu.
#include <cstdio>

#include "cuda_check.h"

constexpr int kThreads = 256;

__global__ void empty_kernel() {}

// CTA b copies its 32 KB chunk (2048 16-byte vectors), as FA2's dot and convert kernels stream their tiles.
__global__ void copy_chunks(const float4* in, float4* out) {
  const long base = static_cast<long>(blockIdx.x) * 2048;
  for (int i = threadIdx.x; i < 2048; i += kThreads) out[base + i] = in[base + i];
}

int main() {
  const long MB = 1 << 20;
  const long max_bytes = 256 * MB;
  float4 *a = nullptr, *b = nullptr;
  CHECK(cudaMalloc(&a, max_bytes));
  CHECK(cudaMalloc(&b, max_bytes));
  CHECK(cudaMemset(a, 1, max_bytes));
  CHECK(cudaMemset(b, 0, max_bytes));
  CHECK(cudaDeviceSynchronize());
  int id = 0;
  for (int ctas : {1, 132, 1056, 8448}) {
    empty_kernel<<<ctas, kThreads>>>();
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());
    std::fprintf(stderr, "launch %d empty ctas %d\n", id++, ctas);
  }
  for (long mb : {1, 2, 4, 8, 16, 32, 64, 128, 256}) {
    const long ctas = mb * MB / (32 * 1024);
    copy_chunks<<<ctas, kThreads>>>(a, b);
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());
    std::fprintf(stderr, "launch %d copy read_bytes %ld write_bytes %ld ctas %ld\n", id++, mb * MB, mb * MB,
                 ctas);
  }
  std::fprintf(stderr, "ok %d launches\n", id);
  return 0;
}
