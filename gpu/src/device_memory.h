#pragma once
// Buffers on the backend a version runs on: CUDA device memory, or host memory for a CPU version.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "flashsim/gpu/kernel.h"

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

class DeviceMemory {
 public:
  explicit DeviceMemory(Backend b) : backend_(b) {}
  ~DeviceMemory();
  DeviceMemory(const DeviceMemory&) = delete;
  DeviceMemory& operator=(const DeviceMemory&) = delete;

  void* alloc(size_t bytes);                         // freed with this object
  void* upload(const std::vector<uint8_t>& bytes);   // nullptr for an empty vector
  void fill(void* dst, uint8_t byte, size_t bytes);  // 0xFF: NaN in fp32, fp16 and bf16
  std::vector<uint8_t> download(const void* src, size_t bytes);
  void synchronize();                                    // waits for the launches, throws on a kernel error
  size_t allocated_bytes() const { return allocated_; }  // by alloc and upload so far

 private:
  Backend backend_;
  std::vector<void*> blocks_;
  size_t allocated_ = 0;
};

}  // namespace flashsim::gpu
