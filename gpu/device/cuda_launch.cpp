// The CUDA runtime checks every launch uses (cuda_launch.h).
#include "cuda_launch.h"

#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

namespace flashsim::gpu {

void cuda_check(int e, const char* what, const char* file, int line) {
  const auto err = static_cast<cudaError_t>(e);
  if (err == cudaSuccess) return;
  std::string msg = what;
  if (file) msg += std::string(" at ") + file + ":" + std::to_string(line);
  throw std::runtime_error(msg + ": " + cudaGetErrorName(err) + ": " + cudaGetErrorString(err));
}

void allow_dynamic_smem(const void* kernel, size_t bytes, const char* who) {
  constexpr size_t kDefaultSmem = 48 * 1024;  // what a launch may take without opting in
  if (bytes <= kDefaultSmem) return;
  int device = 0, optin = 0;
  FLASHSIM_CUDA_CHECK(cudaGetDevice(&device));
  FLASHSIM_CUDA_CHECK(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
  if (static_cast<size_t>(optin) < bytes)
    throw std::runtime_error(std::string(who) + ": the tile needs " + std::to_string(bytes) +
                             " bytes of shared memory; this device allows " + std::to_string(optin));
  FLASHSIM_CUDA_CHECK(
      cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes)));
}

namespace {
// An attribute of the current device; 0 where no CUDA device is usable.
int64_t device_attribute(cudaDeviceAttr attr) {
  int device = 0, value = 0;
  if (cudaGetDevice(&device) != cudaSuccess || cudaDeviceGetAttribute(&value, attr, device) != cudaSuccess) {
    cudaGetLastError();  // no device: leave no error behind for a later cudaGetLastError
    return 0;
  }
  return value;
}
}  // namespace

int64_t device_smem_optin() {
  return device_attribute(cudaDevAttrMaxSharedMemoryPerBlockOptin);
}

int device_compute_capability() {
  return static_cast<int>(10 * device_attribute(cudaDevAttrComputeCapabilityMajor) +
                          device_attribute(cudaDevAttrComputeCapabilityMinor));
}

int64_t device_l2_bytes() {
  return device_attribute(cudaDevAttrL2CacheSize);
}

int64_t device_sm_count() {
  return device_attribute(cudaDevAttrMultiProcessorCount);
}

std::string device_name() {
  int device = 0;
  cudaDeviceProp prop{};
  if (cudaGetDevice(&device) != cudaSuccess || cudaGetDeviceProperties(&prop, device) != cudaSuccess) {
    cudaGetLastError();  // as device_attribute
    return "";
  }
  return prop.name;
}

}  // namespace flashsim::gpu
