// DeviceMemory (device_memory.h): cudaMalloc / cudaMemcpy, or plain host memory.
#include "device_memory.h"

#include <cuda_runtime.h>

#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>

namespace flashsim::gpu {

DeviceMemory::~DeviceMemory() {
  for (void* p : blocks_) {
    if (backend_ == Backend::Cuda) {
      cudaFree(p);
    } else {
      std::free(p);
    }
  }
}

void* DeviceMemory::alloc(size_t bytes) {
  void* p = nullptr;
  const size_t n = bytes == 0 ? 1 : bytes;  // a valid pointer even for an empty tensor
  if (backend_ == Backend::Cuda) {
    cuda_check(cudaMalloc(&p, n), "cudaMalloc");
  } else {
    p = std::malloc(n);
    if (!p) throw std::bad_alloc();
  }
  blocks_.push_back(p);
  allocated_ += n;
  return p;
}

void* DeviceMemory::upload(const std::vector<uint8_t>& bytes) {
  if (bytes.empty()) return nullptr;
  void* p = alloc(bytes.size());
  if (backend_ == Backend::Cuda) {
    cuda_check(cudaMemcpy(p, bytes.data(), bytes.size(), cudaMemcpyHostToDevice), "cudaMemcpy to the device");
  } else {
    std::memcpy(p, bytes.data(), bytes.size());
  }
  return p;
}

void DeviceMemory::fill(void* dst, uint8_t byte, size_t bytes) {
  if (!dst) return;
  if (backend_ == Backend::Cuda) {
    cuda_check(cudaMemset(dst, byte, bytes), "cudaMemset");
  } else {
    std::memset(dst, byte, bytes);
  }
}

std::vector<uint8_t> DeviceMemory::download(const void* src, size_t bytes) {
  std::vector<uint8_t> out(bytes);
  if (bytes == 0) return out;
  if (backend_ == Backend::Cuda) {
    cuda_check(cudaMemcpy(out.data(), src, bytes, cudaMemcpyDeviceToHost), "cudaMemcpy from the device");
  } else {
    std::memcpy(out.data(), src, bytes);
  }
  return out;
}

void DeviceMemory::synchronize() {
  if (backend_ != Backend::Cuda) return;
  cuda_check(cudaGetLastError(), "kernel launch");
  cuda_check(cudaDeviceSynchronize(), "kernel execution");
}

}  // namespace flashsim::gpu
