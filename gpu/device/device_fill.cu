// fill_normal_device (device_fill.h): Box-Muller on two 32-bit halves of a splitmix64 hash of (seed, index).
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "cuda_launch.h"  // FLASHSIM_CUDA_CHECK
#include "device_fill.h"

namespace flashsim::gpu {

namespace {

__device__ __forceinline__ uint64_t splitmix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;  // splitmix64's increment (the golden ratio in 64 bits) and mixing constants
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

template <class T>
__global__ void fill_normal_kernel(T* dst, int64_t n, uint64_t seed, float scale) {
  const int64_t stride = int64_t{gridDim.x} * blockDim.x;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n; i += stride) {
    const uint64_t h =
        splitmix64(seed * 0x100000001B3ull ^ static_cast<uint64_t>(i));  // FNV prime: mixes seed
    // two uniforms in (0, 1] and [0, 1) from the hash's halves (2^-32 steps)
    const float u1 = (static_cast<float>(static_cast<uint32_t>(h >> 32)) + 1.f) * 2.3283064e-10f;
    const float u2 = static_cast<float>(static_cast<uint32_t>(h)) * 2.3283064e-10f;
    const float x = sqrtf(-2.f * logf(u1)) * cospif(2.f * u2) * scale;
    if constexpr (sizeof(T) == 4)
      dst[i] = x;
    else if constexpr (std::is_same_v<T, __nv_bfloat16>)
      dst[i] = __float2bfloat16_rn(x);
    else
      dst[i] = __float2half_rn(x);
  }
}

}  // namespace

void fill_normal_device(void* dst, int64_t n, DType t, uint64_t seed, float scale) {
  if (n <= 0) return;
  constexpr int kThreads = 256;  // a common block size for an element-wise kernel: 8 warps
  // enough blocks to fill an H100 several times over; the grid-stride loop takes the rest
  const unsigned blocks = static_cast<unsigned>(std::min<int64_t>((n + kThreads - 1) / kThreads, 8192));
  switch (t) {
    case DType::BF16:
      fill_normal_kernel<<<blocks, kThreads>>>(static_cast<__nv_bfloat16*>(dst), n, seed, scale);
      break;
    case DType::F16:
      fill_normal_kernel<<<blocks, kThreads>>>(static_cast<__half*>(dst), n, seed, scale);
      break;
    case DType::F32:
      fill_normal_kernel<<<blocks, kThreads>>>(static_cast<float*>(dst), n, seed, scale);
      break;
    default:
      throw std::invalid_argument("fill_normal_device: dtype " + std::string(dtype_name(t)));
  }
  FLASHSIM_CUDA_CHECK(cudaGetLastError());
}

}  // namespace flashsim::gpu
