// Measures: the H100 profile's cta_dram_latency_s and sm_dram_bytes_per_s (calibration h100.cta_dram_latency_s,
// h100.sm_dram_bytes_per_s in bench/calibration.json).
// How fast can a few CTAs stream DRAM? N CTAs of 128 threads, each reading its own contiguous region in
// 32 KiB tiles (a split-KV K or V tile: 128 keys x 128 dims x bf16) with cp.async.cg into shared memory,
// `stages` tiles in flight, as FlashAttention-2's decode kernel loads K and V. Prints, per CTA count, the time
// (CUDA events, median of 5, L2 flushed before each run) and the bandwidth per CTA and in all.
//   python3 bench/gpu/run.py probe cta-stream (nvcc -O3 -arch=sm_90, then the binary alone)
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <vector>

#define CHECK(x)                                                                     \
  do {                                                                               \
    cudaError_t e = (x);                                                             \
    if (e != cudaSuccess) {                                                          \
      std::fprintf(stderr, "%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e)); \
      return 1;                                                                      \
    }                                                                                \
  } while (0)

constexpr int kThreads = 128;
constexpr int kTile = 32768;  // bytes

template <int Stages>
__global__ void stream(const uint4* __restrict__ src, int64_t bytes_per_cta, unsigned* sink) {
  extern __shared__ uint4 smem[];
  const char* base = reinterpret_cast<const char*>(src) + blockIdx.x * bytes_per_cta;
  const int tiles = static_cast<int>(bytes_per_cta / kTile);
  const auto issue = [&](int t) {
    const char* g = base + static_cast<int64_t>(t) * kTile;
    uint4* s = smem + (t % Stages) * (kTile / 16);
    for (int i = threadIdx.x; i < kTile / 16; i += kThreads) {
      const unsigned sa = static_cast<unsigned>(__cvta_generic_to_shared(s + i));
      asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(sa), "l"(g + 16 * i));
    }
    asm volatile("cp.async.commit_group;\n" ::);
  };
  unsigned acc = 0;
  for (int t = 0; t < Stages - 1 && t < tiles; ++t) issue(t);
  for (int t = 0; t < tiles; ++t) {
    if (t + Stages - 1 < tiles) {
      issue(t + Stages - 1);
      asm volatile("cp.async.wait_group %0;\n" ::"n"(Stages - 1));
    } else {
      asm volatile("cp.async.wait_group 0;\n" ::);
    }
    __syncthreads();
    acc ^= smem[(t % Stages) * (kTile / 16) + threadIdx.x].x;  // touch the tile
    __syncthreads();
  }
  if (acc == 0x12345678u) sink[blockIdx.x] = acc;
}

template <int Stages>
int run(const uint4* buf, char* flush, size_t flush_bytes, unsigned* sink) {
  CHECK(cudaFuncSetAttribute(stream<Stages>, cudaFuncAttributeMaxDynamicSharedMemorySize, Stages * kTile));
  cudaEvent_t a, b;
  CHECK(cudaEventCreate(&a));
  CHECK(cudaEventCreate(&b));
  for (int ctas : {1, 2, 4, 8, 16, 32, 64, 132, 264}) {
    const int64_t per = std::max<int64_t>(4 << 20, (int64_t{512} << 20) / ctas) / kTile * kTile;
    std::vector<float> ms;
    for (int rep = 0; rep < 5; ++rep) {
      CHECK(cudaMemset(flush, rep, flush_bytes));  // evict the last run's lines from L2
      CHECK(cudaEventRecord(a));
      stream<Stages><<<ctas, kThreads, Stages * kTile>>>(buf, per, sink);
      CHECK(cudaEventRecord(b));
      CHECK(cudaEventSynchronize(b));
      CHECK(cudaGetLastError());
      float t = 0;
      CHECK(cudaEventElapsedTime(&t, a, b));
      ms.push_back(t);
    }
    std::sort(ms.begin(), ms.end());
    const double s = ms[2] * 1e-3;
    std::printf("stages %d ctas %4d bytes/cta %10lld  time %9.1f us  per CTA %7.1f GB/s  total %7.1f GB/s\n",
                Stages, ctas, static_cast<long long>(per), s * 1e6, per / s / 1e9,
                per * double(ctas) / s / 1e9);
  }
  return 0;
}

int main() {
  cudaDeviceProp prop;
  CHECK(cudaGetDeviceProperties(&prop, 0));
  std::printf("%s, %d SMs, L2 %d MiB\n", prop.name, prop.multiProcessorCount, prop.l2CacheSize >> 20);
  const size_t bytes = size_t{4} << 30, flush_bytes = size_t{256} << 20;
  uint4* buf;
  char* flush;
  unsigned* sink;
  CHECK(cudaMalloc(&buf, bytes));
  CHECK(cudaMalloc(&flush, flush_bytes));
  CHECK(cudaMalloc(&sink, 4096 * sizeof(unsigned)));
  CHECK(cudaMemset(buf, 1, bytes));
  if (run<1>(buf, flush, flush_bytes, sink) || run<2>(buf, flush, flush_bytes, sink) ||
      run<4>(buf, flush, flush_bytes, sink))
    return 1;
  return 0;
}
