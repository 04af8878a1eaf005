// Measures: the H100 profile's Hopper rates of the per-CTA model of warp-specialized kernels (fa3-v1's forward:
// tiling_sim/src/kernels/fa3_forward.cpp): wgmma_ss_flops_per_clock and wgmma_rs_flops_per_clock (calibration
// h100.wgmma_rates), tma_latency_s and tma_bytes_per_s (calibration h100.tma_rates), mbarrier_cycles and
// named_barrier_cycles (calibration h100.barrier_cycles).
//   wgmma    wgmma.mma_async m64nNk16 bf16 -> fp32, N = 64, 96, 128, 256, A from shared memory (SS) or from
//            registers (RS), B K-major in 128-byte-swizzled shared memory (fa3-v1's layouts); one and two
//            warpgroups an SM issuing back to back (at most 2 batches of 4 k-steps in flight a warpgroup), one
//            CTA an SM on every SM: FLOPs a clock an SM (clock64 in the kernel), and TFLOP/s (events)
//   tma      a 128 x 128 bf16 tile (32 KiB, the SW128 K-major layout fa3-v1 loads) by one TMA instruction:
//            latency (issue to the mbarrier's completion, one load in flight, L2-resident source); bandwidth of
//            one SM and of every SM with 1, 2, 4 tiles in flight, from L2 (a 16 MiB source, warm) and DRAM
//            (a 2 GiB source, each tile read once)
//   mbarrier round trip of two warps (different warpgroups) handing an mbarrier phase back and forth; one way
//            is half of it
//   named    the ping-pong's hand-off: two warpgroups taking turns with bar.sync / bar.arrive on named barriers
//            1 and 2 (fa3-v1's my_turn / pass_turn); one way is half a round
// Build and run (GPU machine): bash bench/gpu/probes/wgmma_probe.sh OUT [CUTLASS_INCLUDE_TARBALL | INCLUDE_DIR]
#include <cuda_runtime.h>
#include <cutlass/arch/barrier.h>
#include <cutlass/numeric_types.h>

#include <cstdint>
#include <cstdio>
#include <cute/tensor.hpp>
#include <vector>

#include "cuda_check.h"

using namespace cute;
using bf16 = cutlass::bfloat16_t;

constexpr int kK = 64;  // the K of one batch: 4 k-steps of k16

// ------------------------------------------------------------------------------------------------- wgmma
template <int N, bool kRS>
struct WgmmaShape {
  using SmemA = decltype(tile_to_shape(GMMA::Layout_K_SW128_Atom<bf16>{}, Shape<_64, Int<kK>>{}));
  using SmemB = decltype(tile_to_shape(GMMA::Layout_K_SW128_Atom<bf16>{}, Shape<Int<N>, Int<kK>>{}));
  using Op =
      std::conditional_t<kRS,
                         decltype(GMMA::rs_op_selector<bf16, bf16, float, Shape<_64, Int<N>, Int<kK>>>()),
                         decltype(GMMA::ss_op_selector<bf16, bf16, float, Shape<_64, Int<N>, Int<kK>>>())>;
  static constexpr int kSmemBytes = (cosize_v<SmemA> + cosize_v<SmemB>)*2;
};

template <int N, bool kRS>
__global__ void __launch_bounds__(256, 1) wgmma_loop(int iters, long long* cycles, float* sink) {
  using S = WgmmaShape<N, kRS>;
  extern __shared__ __align__(1024) char smem_raw[];
  bf16* pa = reinterpret_cast<bf16*>(smem_raw);
  bf16* pb = pa + cosize_v<typename S::SmemA>;
  for (int i = threadIdx.x; i < cosize_v<typename S::SmemA> + cosize_v<typename S::SmemB>; i += blockDim.x)
    pa[i] = bf16(0.001f * static_cast<float>(i % 7));
  cutlass::arch::fence_view_async_shared();  // the generic-proxy writes, seen by wgmma's async proxy
  __syncthreads();
  Tensor sA = make_tensor(make_smem_ptr(pa), typename S::SmemA{});
  Tensor sB = make_tensor(make_smem_ptr(pb), typename S::SmemB{});
  auto mma = make_tiled_mma(typename S::Op{});
  auto thr = mma.get_thread_slice(threadIdx.x % 128);
  Tensor tCrA = thr.partition_fragment_A(sA);  // SS: descriptors; RS: registers
  Tensor tCrB = thr.partition_fragment_B(sB);
  Tensor tCrC = partition_fragment_C(mma, Shape<_64, Int<N>>{});
  if constexpr (kRS) {
    Tensor tCsA = thr.partition_A(sA);
    CUTE_UNROLL
    for (int i = 0; i < size(tCrA); ++i) tCrA(i) = tCsA(i);
  }
  clear(tCrC);
  __syncthreads();
  const long long t0 = clock64();
  for (int it = 0; it < iters; ++it) {
    warpgroup_fence_operand(tCrC);
    warpgroup_arrive();
    CUTE_UNROLL
    for (int kb = 0; kb < size<2>(tCrA); ++kb) {
      cute::gemm(mma, tCrA(_, _, kb), tCrB(_, _, kb), tCrC);
      mma.accumulate_ = GMMA::ScaleOut::One;
    }
    warpgroup_commit_batch();
    warpgroup_wait<1>();
  }
  warpgroup_wait<0>();
  warpgroup_fence_operand(tCrC);
  __syncthreads();
  if (threadIdx.x == 0) cycles[blockIdx.x] = clock64() - t0;
  float s = 0;
  CUTE_UNROLL
  for (int i = 0; i < size(tCrC); ++i) s += tCrC(i);
  if (s == 12345.f) sink[threadIdx.x] = s;  // never: keeps the wgmmas
}

struct Sms {
  int count = 0;
};

// FLOPs a clock an SM and TFLOP/s of the whole GPU, `wgs` warpgroups a CTA, one CTA an SM.
template <int N, bool kRS>
void run_wgmma(int sms, int wgs, double& per_clock, double& tflops, double& clock_ghz) {
  using S = WgmmaShape<N, kRS>;
  const int iters = 4096;
  // Enough shared memory that no second CTA fits an SM.
  const int smem = std::max(S::kSmemBytes, 120 * 1024);
  CHECK(cudaFuncSetAttribute(wgmma_loop<N, kRS>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  long long* cycles;
  float* sink;
  CHECK(cudaMalloc(&cycles, sms * sizeof(long long)));
  CHECK(cudaMalloc(&sink, 256 * sizeof(float)));
  cudaEvent_t a, b;
  CHECK(cudaEventCreate(&a));
  CHECK(cudaEventCreate(&b));
  wgmma_loop<N, kRS><<<sms, 128 * wgs, smem>>>(iters / 8, cycles, sink);  // warm-up
  CHECK(cudaEventRecord(a));
  wgmma_loop<N, kRS><<<sms, 128 * wgs, smem>>>(iters, cycles, sink);
  CHECK(cudaEventRecord(b));
  CHECK(cudaEventSynchronize(b));
  CHECK(cudaGetLastError());
  float ms = 0;
  CHECK(cudaEventElapsedTime(&ms, a, b));
  std::vector<long long> c(sms);
  CHECK(cudaMemcpy(c.data(), cycles, sms * sizeof(long long), cudaMemcpyDeviceToHost));
  double mean = 0;
  for (long long v : c) mean += static_cast<double>(v) / sms;
  const double flops_cta = 2.0 * 64 * N * kK * iters * wgs;
  per_clock = flops_cta / mean;
  tflops = flops_cta * sms / (ms * 1e-3) / 1e12;
  clock_ghz = mean / (ms * 1e-3) / 1e9;  // an upper bound of the clock (the launch's own time is in ms)
  CHECK(cudaFree(cycles));
  CHECK(cudaFree(sink));
}

template <int N>
void wgmma_row(int sms) {
  double r[2][2], t[2][2], g = 0;
  for (int rs = 0; rs < 2; ++rs)
    for (int wgs = 1; wgs <= 2; ++wgs) {
      if (rs)
        run_wgmma<N, true>(sms, wgs, r[rs][wgs - 1], t[rs][wgs - 1], g);
      else
        run_wgmma<N, false>(sms, wgs, r[rs][wgs - 1], t[rs][wgs - 1], g);
    }
  std::printf("wgmma  m64n%-3dk16  %8.0f %8.0f %8.0f %8.0f   %6.0f %6.0f %6.0f %6.0f   %.3f\n", N, r[0][0],
              r[0][1], r[1][0], r[1][1], t[0][0], t[0][1], t[1][0], t[1][1], g);
}

// ---------------------------------------------------------------------------------------------------- TMA
constexpr int kTile = 128;  // 128 x 128 bf16
using SmemTile = decltype(tile_to_shape(GMMA::Layout_K_SW128_Atom<bf16>{}, Shape<Int<kTile>, Int<kTile>>{}));
using GmemLayout = Layout<Shape<int, Int<kTile>>, Stride<int64_t, _1>>;
using GmemTensor = decltype(make_tensor(make_gmem_ptr(static_cast<bf16 const*>(nullptr)), GmemLayout{}));
using TmaTile = decltype(make_tma_copy(SM90_TMA_LOAD{}, std::declval<GmemTensor>(), SmemTile{},
                                       Shape<Int<kTile>, Int<kTile>>{}, _1{}));
constexpr int kMaxDepth = 4;
constexpr uint32_t kTileBytes = kTile * kTile * 2;

// One elected thread a CTA loads `count` tiles (tile index blockIdx.x + i * gridDim.x, modulo `tiles`), keeping
// `depth` in flight; latency mode (depth 0): one at a time, each timed issue -> completion, the first `warm`
// untimed. out[blockIdx.x]: cycles (bandwidth) or the mean latency (cycles).
__global__ void __launch_bounds__(128, 1) tma_loop(CUTE_GRID_CONSTANT TmaTile const tma, int rows, int tiles,
                                                   long long base, int count, int depth, long long* out) {
  extern __shared__ __align__(1024) char smem_raw[];
  bf16* ps = reinterpret_cast<bf16*>(smem_raw);
  __shared__ alignas(8) uint64_t bar[kMaxDepth];
  using Barrier = cutlass::arch::ClusterTransactionBarrier;
  if (threadIdx.x == 0)
    for (int s = 0; s < kMaxDepth; ++s) Barrier::init(&bar[s], 1);
  cutlass::arch::fence_barrier_init();
  __syncthreads();
  if (threadIdx.x != 0) return;
  Tensor mA = tma.get_tma_tensor(make_shape(rows, Int<kTile>{}));
  Tensor gA = local_tile(mA, Shape<Int<kTile>, Int<kTile>>{}, make_coord(_, _0{}));  // (128, 128, tiles)
  auto sl = make_layout(make_shape(Int<kTile>{}, Int<kTile>{}, Int<kMaxDepth>{}));
  Tensor sA = make_tensor(make_smem_ptr(ps), tile_to_shape(GMMA::Layout_K_SW128_Atom<bf16>{}, shape(sl)));
  auto [tAgA, tAsA] = tma_partition(tma, _0{}, Layout<_1>{}, group_modes<0, 2>(sA), group_modes<0, 2>(gA));
  const auto tile_of = [&](int i) {
    return (base + blockIdx.x + static_cast<long long>(i) * gridDim.x) % tiles;
  };
  if (depth == 0) {  // latency
    const int warm = 8;
    long long sum = 0;
    for (int i = 0; i < count + warm; ++i) {
      const long long t0 = clock64();
      Barrier::arrive_and_expect_tx(&bar[0], kTileBytes);
      copy(tma.with(bar[0], 0), tAgA(_, static_cast<int>(tile_of(i % warm))), tAsA(_, 0));
      Barrier::wait(&bar[0], i & 1);
      if (i >= warm) sum += clock64() - t0;
    }
    out[blockIdx.x] = sum / count;
    return;
  }
  const long long t0 = clock64();
  for (int i = 0; i < count; ++i) {
    const int s = i % depth;
    if (i >= depth) Barrier::wait(&bar[s], (i / depth - 1) & 1);
    Barrier::arrive_and_expect_tx(&bar[s], kTileBytes);
    copy(tma.with(bar[s], 0), tAgA(_, static_cast<int>(tile_of(i))), tAsA(_, s));
  }
  for (int i = std::max(0, count - depth); i < count; ++i) Barrier::wait(&bar[i % depth], (i / depth) & 1);
  out[blockIdx.x] = clock64() - t0;
}

struct TmaSource {
  bf16* ptr;
  int rows;
  TmaTile tma;
};
TmaSource make_source(size_t bytes) {
  TmaSource s;
  s.rows = static_cast<int>(bytes / (kTile * 2));
  CHECK(cudaMalloc(&s.ptr, bytes));
  CHECK(cudaMemset(s.ptr, 0, bytes));
  auto g = make_tensor(make_gmem_ptr(static_cast<bf16 const*>(s.ptr)),
                       make_layout(make_shape(s.rows, Int<kTile>{}), make_stride(int64_t{kTile}, _1{})));
  s.tma = make_tma_copy(SM90_TMA_LOAD{}, g, SmemTile{}, Shape<Int<kTile>, Int<kTile>>{}, _1{});
  return s;
}

// Mean cycles (a CTA's), and the event time (ms).
double run_tma(const TmaSource& src, int grid, long long base, int count, int depth, float& ms) {
  const int smem = kMaxDepth * kTileBytes;
  CHECK(cudaFuncSetAttribute(tma_loop, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  long long* out;
  CHECK(cudaMalloc(&out, grid * sizeof(long long)));
  const int tiles = src.rows / kTile;
  cudaEvent_t a, b;
  CHECK(cudaEventCreate(&a));
  CHECK(cudaEventCreate(&b));
  CHECK(cudaEventRecord(a));
  tma_loop<<<grid, 128, smem>>>(src.tma, src.rows, tiles, base, count, depth, out);
  CHECK(cudaEventRecord(b));
  CHECK(cudaEventSynchronize(b));
  CHECK(cudaGetLastError());
  CHECK(cudaEventElapsedTime(&ms, a, b));
  std::vector<long long> h(grid);
  CHECK(cudaMemcpy(h.data(), out, grid * sizeof(long long), cudaMemcpyDeviceToHost));
  CHECK(cudaFree(out));
  double mean = 0;
  for (long long v : h) mean += static_cast<double>(v) / grid;
  return mean;
}

// ------------------------------------------------------------------------------------------ barriers
__global__ void mbarrier_pingpong(int iters, long long* out) {
  __shared__ alignas(8) uint64_t bar[2];
  using Barrier = cutlass::arch::ClusterBarrier;
  if (threadIdx.x == 0) {
    Barrier::init(&bar[0], 1);
    Barrier::init(&bar[1], 1);
  }
  cutlass::arch::fence_barrier_init();
  __syncthreads();
  if (threadIdx.x == 0) {
    const long long t0 = clock64();
    for (int i = 0; i < iters; ++i) {
      Barrier::arrive(&bar[0]);
      Barrier::wait(&bar[1], i & 1);
    }
    out[0] = (clock64() - t0) / iters;
  } else if (threadIdx.x == 128) {
    for (int i = 0; i < iters; ++i) {
      Barrier::wait(&bar[0], i & 1);
      Barrier::arrive(&bar[1]);
    }
  }
}

__device__ __forceinline__ void bar_sync(int id, int threads) {
  asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(threads) : "memory");
}
__device__ __forceinline__ void bar_arrive(int id, int threads) {
  asm volatile("bar.arrive %0, %1;" ::"r"(id), "r"(threads) : "memory");
}

// fa3-v1's turns: warpgroup w waits on barrier 1 + w, then lets the other one go (barrier 2 - w).
__global__ void named_pingpong(int iters, long long* out) {
  const int wg = threadIdx.x / 128;
  if (wg == 1) bar_arrive(1, 256);  // warpgroup 0 goes first
  const long long t0 = clock64();
  for (int i = 0; i < iters; ++i) {
    bar_sync(1 + wg, 256);
    if (wg == 0 || i + 1 < iters) bar_arrive(2 - wg, 256);  // warpgroup 1's last would go unanswered
  }
  if (threadIdx.x == 0) out[0] = (clock64() - t0) / iters;
}

long long run_pingpong(void (*k)(int, long long*)) {
  long long* out;
  CHECK(cudaMalloc(&out, sizeof(long long)));
  k<<<1, 256>>>(100, out);  // warm-up
  k<<<1, 256>>>(100000, out);
  CHECK(cudaDeviceSynchronize());
  CHECK(cudaGetLastError());
  long long h = 0;
  CHECK(cudaMemcpy(&h, out, sizeof(long long), cudaMemcpyDeviceToHost));
  CHECK(cudaFree(out));
  return h;
}

int main() {
  int dev = 0, sms = 0, clock_khz = 0;
  CHECK(cudaGetDevice(&dev));
  cudaDeviceProp prop;
  CHECK(cudaGetDeviceProperties(&prop, dev));
  CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  CHECK(cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, dev));
  std::printf("device: %s, %d SMs, sm_%d%d, max clock %.3f GHz\n", prop.name, sms, prop.major, prop.minor,
              clock_khz / 1e6);
  if (prop.major != 9) {
    std::printf("wgmma_probe needs compute capability 9.0 (sm_90a)\n");
    return 1;
  }

  std::printf("\n== wgmma: FLOPs a clock an SM (clock64) and TFLOP/s of the GPU (events), one CTA an SM\n");
  std::printf(
      "shape              SS 1 WG  SS 2 WG  RS 1 WG  RS 2 WG   TFLOP/s: SS1    SS2    RS1    RS2   clock "
      "GHz\n");
  wgmma_row<64>(sms);
  wgmma_row<96>(sms);
  wgmma_row<128>(sms);
  wgmma_row<256>(sms);

  std::printf("\n== TMA: a 128 x 128 bf16 tile (32 KiB, SW128 K-major)\n");
  TmaSource l2 = make_source(size_t{16} << 20);   // L2-resident once warm
  TmaSource dram = make_source(size_t{2} << 30);  // each tile read once: DRAM
  float ms = 0;
  run_tma(l2, sms, 0, 2 * (l2.rows / kTile) / sms + 1, 4, ms);  // warm L2 with the whole source
  const double lat = run_tma(l2, 1, 0, 64, 0, ms);
  std::printf("latency (one load in flight, L2 source): %.0f cycles\n", lat);
  std::printf(
      "bandwidth                    tiles in flight   cycles/tile   bytes/clock/SM   GB/s (events)\n");
  long long base = 0;
  for (TmaSource* src : {&l2, &dram}) {
    const char* name = src == &l2 ? "L2  " : "DRAM";
    const int tiles = src->rows / kTile;
    for (const int grid : {1, sms})
      for (const int depth : {1, 2, 4}) {
        // DRAM: each run starts where the last one ended, so that no tile is in L2 again
        const int count = src == &l2 ? 512 : std::min(512, tiles / grid / 3);
        const double cyc = run_tma(*src, grid, base, count, depth, ms);
        if (src == &dram) base += static_cast<long long>(count) * grid;
        std::printf("%s %s            %d            %8.1f        %8.1f         %8.1f\n", name,
                    grid == 1 ? "1 SM     " : "every SM ", depth, cyc / count, kTileBytes * count / cyc,
                    static_cast<double>(kTileBytes) * count * grid / (ms * 1e-3) / 1e9);
      }
  }
  CHECK(cudaFree(l2.ptr));
  CHECK(cudaFree(dram.ptr));

  std::printf("\n== barriers (cycles)\n");
  const long long mb = run_pingpong(mbarrier_pingpong);
  const long long nb = run_pingpong(named_pingpong);
  std::printf("mbarrier round trip (2 warps, 2 warpgroups): %lld   one way: %.1f\n", mb, mb / 2.0);
  std::printf("named barrier ping-pong round (2 warpgroups, bar.sync + bar.arrive): %lld   one way: %.1f\n",
              nb, nb / 2.0);
  std::printf(
      "\nprofile fields: wgmma_ss_flops_per_clock / wgmma_rs_flops_per_clock = the 2 WG columns at N = "
      "64, 128, 256; tma_latency_s = (latency - 32768 / (1-SM L2 bytes/clock at 4 in flight)) / clock; "
      "tma_bytes_per_s = 1-SM L2 bytes/clock at 4 in flight x clock; mbarrier_cycles, "
      "named_barrier_cycles = the one-way figures\n");
  return 0;
}
