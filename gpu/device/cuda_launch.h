#pragma once
// What a kernel's launch needs from the CUDA runtime, for every kernel folder: error checks of runtime calls,
// the dynamic shared-memory opt-in, and the device's limits (read at run time, never assumed).
#include <cstddef>
#include <cstdint>
#include <string>

namespace flashsim::gpu {

// Throws std::runtime_error "what[ at file:line]: <CUDA's error name: string>" unless e is cudaSuccess (e: a
// cudaError_t).
void cuda_check(int e, const char* what, const char* file = nullptr, int line = 0);
// cuda_check of a CUDA runtime call, named by its text and place.
#define FLASHSIM_CUDA_CHECK(call) \
  ::flashsim::gpu::cuda_check(static_cast<int>(call), #call, __FILE__, __LINE__)

// Lets `kernel` (a __global__ function) launch with `bytes` of dynamic shared memory: above the 48 KB every
// launch may take, checks the device's opt-in limit (std::runtime_error "who: the tile needs ...") and sets
// the kernel's attribute.
void allow_dynamic_smem(const void* kernel, size_t bytes, const char* who);
// The current device's opt-in shared memory a block (cudaDevAttrMaxSharedMemoryPerBlockOptin, 227 KB on an
// H100, 163 KB on an A100); 0 where no CUDA device is usable (the caller then checks nothing).
int64_t device_smem_optin();
// The current device's compute capability as 10 major + minor (90 on an H100); 0 where no device is usable.
int device_compute_capability();
// The current device's L2 bytes (50 MiB on an H100); 0 where no device is usable.
int64_t device_l2_bytes();
// The current device's SMs (132 on an H100 SXM5); 0 where no device is usable.
int64_t device_sm_count();
// The current device's name ("NVIDIA H100 80GB HBM3"); "" where no device is usable.
std::string device_name();

}  // namespace flashsim::gpu
