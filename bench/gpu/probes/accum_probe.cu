// Measures: how exactly the H100's tensor cores add fp16 products into fp32 accumulators, wgmma (fa3-v1's
// GEMMs) against mma.sync (fa2-v1's), on the same operands (calibration h100.wgmma_accumulation; the golden case
// magnitude-x64.0-fp16, whose dq and dk fa3-v1 misses and fa2-v1 passes, bench/results/fa3_h100_2026-11-26).
//   C = A B^T, A and B 64 x 128 fp16 (a d128 Q K^T tile: 8 k-steps of k16), computed by
//     mma_sync   mma.sync.m16n8k16.row.col.f32.f16.f16.f32, k-steps in order, one warp
//     wgmma      wgmma.mma_async m64n64k16 SS (CuTe's GMMA atom, 128-byte swizzled shared memory), one warpgroup
//     wgmma_2acc the same with k-steps 0-3 and 4-7 in two accumulators added in fp32 at the end
//   and on the host: fp32 adds in k order (what an exactly rounding fp32 accumulator gives) and fp64 (exact).
//   The error of an element is |C - exact| / sum_k |a_k b_k| (units of the products' magnitude: a rounding
//   fp32 accumulator stays within k u = 128 x 6e-8 of it, in practice a few u); reported as the median and the
//   maximum over 16 pairs of tiles, for operands N(0, 1) x 64 (the case's scale) and N(0, 1) x 2^U(-8, 8) (wide
//   exponent range: where an accumulator that truncates the aligned products loses most).
// Build and run (GPU machine): nvcc -std=c++20 -O3 -arch=sm_90a --expt-relaxed-constexpr -I CUTLASS/include
//   bench/gpu/probes/accum_probe.cu -o accum_probe && ./accum_probe
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <cutlass/arch/barrier.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cute/tensor.hpp>
#include <random>
#include <vector>

#include "cuda_check.h"

using namespace cute;
using f16 = cutlass::half_t;

constexpr int kM = 64, kN = 64, kK = 128;

// One warp, mma.sync m16n8k16: the 64 x 64 tile as 4 x 8 tiles of 16 x 8, each over the 8 k-steps in order.
// Fragments (PTX ISA, m16n8k16 .f16): g = lane / 4, t = lane % 4; A's a0a1 (g, 2t), a2a3 (g + 8, 2t), a4a5
// (g, 2t + 8), a6a7 (g + 8, 2t + 8); B's b0b1 (k 2t, n g), b2b3 (k 2t + 8, n g); C's c0c1 (g, 2t), c2c3 (g + 8, 2t).
__global__ void mma_sync_tile(const __half* a, const __half* b, float* c) {
  const int lane = threadIdx.x, g = lane / 4, t = lane % 4;
  auto pair = [](const __half* p) { return *reinterpret_cast<const uint32_t*>(p); };
  for (int mi = 0; mi < kM / 16; ++mi)
    for (int ni = 0; ni < kN / 8; ++ni) {
      float acc[4] = {0.f, 0.f, 0.f, 0.f};
      const int r0 = mi * 16 + g, n0 = ni * 8 + g;
      for (int k0 = 0; k0 < kK; k0 += 16) {
        const uint32_t a0 = pair(a + r0 * kK + k0 + 2 * t), a1 = pair(a + (r0 + 8) * kK + k0 + 2 * t),
                       a2 = pair(a + r0 * kK + k0 + 2 * t + 8), a3 = pair(a + (r0 + 8) * kK + k0 + 2 * t + 8);
        const uint32_t b0 = pair(b + n0 * kK + k0 + 2 * t), b1 = pair(b + n0 * kK + k0 + 2 * t + 8);
        asm volatile(
            "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
            "{%0,%1,%2,%3};\n"
            : "+f"(acc[0]), "+f"(acc[1]), "+f"(acc[2]), "+f"(acc[3])
            : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
      }
      const int col = ni * 8 + 2 * t;
      c[r0 * kN + col] = acc[0];
      c[r0 * kN + col + 1] = acc[1];
      c[(r0 + 8) * kN + col] = acc[2];
      c[(r0 + 8) * kN + col + 1] = acc[3];
    }
}

// One warpgroup, wgmma m64n64k16 SS over the 8 k-steps; kTwo: k-steps 0-3 and 4-7 into two accumulators.
template <bool kTwo>
__global__ void wgmma_tile(const f16* a, const f16* b, float* c) {
  using SmemA = decltype(tile_to_shape(GMMA::Layout_K_SW128_Atom<f16>{}, Shape<Int<kM>, Int<kK>>{}));
  using SmemB = decltype(tile_to_shape(GMMA::Layout_K_SW128_Atom<f16>{}, Shape<Int<kN>, Int<kK>>{}));
  __shared__ __align__(1024) f16 smem[cosize_v<SmemA> + cosize_v<SmemB>];
  Tensor sA = make_tensor(make_smem_ptr(smem), SmemA{});
  Tensor sB = make_tensor(make_smem_ptr(smem + cosize_v<SmemA>), SmemB{});
  for (int i = threadIdx.x; i < kM * kK; i += blockDim.x) sA(i / kK, i % kK) = a[i];
  for (int i = threadIdx.x; i < kN * kK; i += blockDim.x) sB(i / kK, i % kK) = b[i];
  cutlass::arch::fence_view_async_shared();  // the generic-proxy writes, seen by wgmma's async proxy
  __syncthreads();
  auto mma = make_tiled_mma(GMMA::ss_op_selector<f16, f16, float, Shape<Int<kM>, Int<kN>, Int<kK>>>());
  auto thr = mma.get_thread_slice(threadIdx.x);
  Tensor tCrA = thr.partition_fragment_A(sA);  // descriptors, (MMA, MMA_M, k-steps)
  Tensor tCrB = thr.partition_fragment_B(sB);
  Tensor acc0 = partition_fragment_C(mma, Shape<Int<kM>, Int<kN>>{});
  Tensor acc1 = partition_fragment_C(mma, Shape<Int<kM>, Int<kN>>{});
  clear(acc0);
  clear(acc1);
  warpgroup_fence_operand(acc0);
  warpgroup_fence_operand(acc1);
  warpgroup_arrive();
  CUTE_UNROLL
  for (int kb = 0; kb < size<2>(tCrA); ++kb)
    cute::gemm(mma, tCrA(_, _, kb), tCrB(_, _, kb), kTwo && kb >= size<2>(tCrA) / 2 ? acc1 : acc0);
  warpgroup_commit_batch();
  warpgroup_wait<0>();
  warpgroup_fence_operand(acc0);
  warpgroup_fence_operand(acc1);
  Tensor gC = make_tensor(make_gmem_ptr(c), make_layout(Shape<Int<kM>, Int<kN>>{}, LayoutRight{}));
  Tensor tCgC = thr.partition_C(gC);
  CUTE_UNROLL
  for (int i = 0; i < size(acc0); ++i) tCgC(i) = acc0(i) + acc1(i);
}

struct Stats {
  std::vector<double> err;
  void add(double e) { err.push_back(e); }
  void print(const char* name) {
    std::sort(err.begin(), err.end());
    const double u = std::ldexp(1.0, -24);  // fp32's unit roundoff
    std::printf("  %-11s median %.3e (%6.2f u)  p99 %.3e (%6.2f u)  max %.3e (%6.2f u)\n", name,
                err[err.size() / 2], err[err.size() / 2] / u, err[err.size() * 99 / 100],
                err[err.size() * 99 / 100] / u, err.back(), err.back() / u);
  }
};

int main() {
  int dev = 0;
  cudaDeviceProp prop;
  CHECK(cudaGetDeviceProperties(&prop, dev));
  std::printf("accum_probe on %s: C = A B^T, A, B %d x %d fp16, fp32 accumulation\n", prop.name, kM, kK);
  __half *da, *db;
  float* dc;
  CHECK(cudaMalloc(&da, kM * kK * sizeof(__half)));
  CHECK(cudaMalloc(&db, kN * kK * sizeof(__half)));
  CHECK(cudaMalloc(&dc, kM * kN * sizeof(float)));
  std::mt19937_64 rng(20261126);
  std::normal_distribution<double> normal;
  std::uniform_real_distribution<double> uniform(-8, 8);
  for (int wide = 0; wide < 2; ++wide) {
    std::printf("operands %s:\n", wide ? "N(0, 1) x 2^U(-8, 8)" : "N(0, 1) x 64");
    Stats host32, sync, wg, wg2;
    for (int pair = 0; pair < 16; ++pair) {
      std::vector<__half> a(kM * kK), b(kN * kK);
      for (auto* v : {&a, &b})
        for (auto& x : *v) x = __float2half(float(normal(rng) * (wide ? std::exp2(uniform(rng)) : 64.0)));
      CHECK(cudaMemcpy(da, a.data(), a.size() * sizeof(__half), cudaMemcpyHostToDevice));
      CHECK(cudaMemcpy(db, b.data(), b.size() * sizeof(__half), cudaMemcpyHostToDevice));
      std::vector<float> c(kM * kN);
      const auto run = [&](auto launch, Stats& st) {
        CHECK(cudaMemset(dc, 0, c.size() * sizeof(float)));
        launch();
        CHECK(cudaGetLastError());
        CHECK(cudaDeviceSynchronize());
        CHECK(cudaMemcpy(c.data(), dc, c.size() * sizeof(float), cudaMemcpyDeviceToHost));
        for (int i = 0; i < kM; ++i)
          for (int j = 0; j < kN; ++j) {
            double exact = 0, mag = 0;
            for (int k = 0; k < kK; ++k) {
              const double p = double(__half2float(a[i * kK + k])) * __half2float(b[j * kK + k]);
              exact += p, mag += std::abs(p);
            }
            st.add(std::abs(c[i * kN + j] - exact) / mag);
          }
      };
      run([&] { mma_sync_tile<<<1, 32>>>(da, db, dc); }, sync);
      run([&] { wgmma_tile<false><<<1, 128>>>(reinterpret_cast<f16*>(da), reinterpret_cast<f16*>(db), dc); },
          wg);
      run([&] { wgmma_tile<true><<<1, 128>>>(reinterpret_cast<f16*>(da), reinterpret_cast<f16*>(db), dc); },
          wg2);
      for (int i = 0; i < kM; ++i)  // the host's fp32 adds in k order
        for (int j = 0; j < kN; ++j) {
          float acc = 0;
          double exact = 0, mag = 0;
          for (int k = 0; k < kK; ++k) {
            const float p = __half2float(a[i * kK + k]) * __half2float(b[j * kK + k]);  // exact in fp32
            acc += p, exact += p, mag += std::abs(double(p));
          }
          host32.add(std::abs(acc - exact) / mag);
        }
    }
    host32.print("host fp32");
    sync.print("mma.sync");
    wg.print("wgmma");
    wg2.print("wgmma 2acc");
  }
  return 0;
}
