#pragma once
// Buffers on the backend a version runs on: CUDA device memory, or host memory for a CPU version.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "cuda_launch.h"  // cuda_check, FLASHSIM_CUDA_CHECK
#include "flashsim/gpu/kernel.h"

namespace flashsim::gpu {

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
