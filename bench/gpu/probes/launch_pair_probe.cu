// Measures: how much of a kernel's launch hides behind the kernel before it in the same stream. No profile field
// takes it: a term that took its median (4.39 us on an H200) off a split decode launch's combine did worse on a
// held-out set than the model without it (bench/results/decode_h200_2026-11-28/README.md, set 5), and was
// reverted. CUDA events (not ncu, which serializes the launches): kernel A alone, kernel B alone, and A then B,
// each the median of kReps launches interleaved; hidden = t(A) + t(B) - t(A then B). A copies 1 .. 64 MiB, B 256
// KiB or 4 MiB (a combine's size: 8 and 128 CTAs). `python3 bench/gpu/run.py probe launch-pair` builds and runs
// it.
#include <algorithm>
#include <cstdio>
#include <vector>

#include "cuda_check.h"

constexpr int kThreads = 256;
constexpr int kReps = 101;  // odd: a median that is one of the launches

// CTA b copies its 32 KB chunk (2048 16-byte vectors), as launch_probe.cu's copy kernel.
__global__ void copy_chunks(const float4* in, float4* out) {
  const long base = static_cast<long>(blockIdx.x) * 2048;
  for (int i = threadIdx.x; i < 2048; i += kThreads) out[base + i] = in[base + i];
}

int main() {
  const long MB = 1 << 20, KB = 1 << 10;
  const long max_bytes = 64 * MB;
  float4 *a = nullptr, *b = nullptr, *c = nullptr, *d = nullptr;
  for (float4** p : {&a, &b, &c, &d}) {
    CHECK(cudaMalloc(p, max_bytes));
    CHECK(cudaMemset(*p, 1, max_bytes));
  }
  cudaEvent_t start, stop;
  CHECK(cudaEventCreate(&start));
  CHECK(cudaEventCreate(&stop));
  const auto launch = [&](long bytes, const float4* in, float4* out) {
    copy_chunks<<<static_cast<unsigned>(bytes / (32 * KB)), kThreads>>>(in, out);
  };
  // microseconds of `body` between two events on the default stream
  const auto timed = [&](auto&& body) {
    CHECK(cudaEventRecord(start));
    body();
    CHECK(cudaEventRecord(stop));
    CHECK(cudaEventSynchronize(stop));
    float ms = 0;
    CHECK(cudaEventElapsedTime(&ms, start, stop));
    return 1e3 * ms;
  };
  const auto median = [](std::vector<double> v) {
    std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
    return v[v.size() / 2];
  };
  std::printf("a_bytes b_bytes t_a_us t_b_us t_ab_us hidden_us\n");
  for (const long b_bytes : {256 * KB, 4 * MB})
    for (const long a_bytes : {1 * MB, 4 * MB, 16 * MB, 64 * MB}) {
      std::vector<double> ta, tb, tab;
      for (int r = 0; r < kReps + 5; ++r) {  // the first 5 warm up
        const double x = timed([&] { launch(a_bytes, a, b); });
        const double y = timed([&] { launch(b_bytes, c, d); });
        const double z = timed([&] {
          launch(a_bytes, a, b);
          launch(b_bytes, c, d);
        });
        CHECK(cudaGetLastError());
        if (r < 5) continue;
        ta.push_back(x);
        tb.push_back(y);
        tab.push_back(z);
      }
      const double ma = median(ta), mb = median(tb), mab = median(tab);
      std::printf("%ld %ld %.2f %.2f %.2f %.2f\n", a_bytes, b_bytes, ma, mb, mab, ma + mb - mab);
    }
  return 0;
}
