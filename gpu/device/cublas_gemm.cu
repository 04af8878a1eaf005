// cuBLAS's handle and GEMMs (cublas_gemm.h).
#include <stdexcept>
#include <string>

#include "cublas_gemm.h"

namespace flashsim::gpu::cublas {

namespace {

void check(cublasStatus_t s, const char* call, const char* file, int line) {
  if (s != CUBLAS_STATUS_SUCCESS)
    throw std::runtime_error(std::string("cuBLAS: ") + call + " failed at " + file + ":" +
                             std::to_string(line) + ": " + cublasGetStatusName(s) + ": " +
                             cublasGetStatusString(s));
}
#define FLASHSIM_CUBLAS_CHECK(call) check((call), #call, __FILE__, __LINE__)

}  // namespace

// Created on first use; never destroyed (destroying it from a static destructor may run after the CUDA
// runtime has shut down). Set to the launch's stream on every call.
cublasHandle_t handle(cudaStream_t stream) {
  static cublasHandle_t h = [] {
    cublasHandle_t created = nullptr;
    FLASHSIM_CUBLAS_CHECK(cublasCreate(&created));
    // Default math with CUBLAS_COMPUTE_32F: fp32 products stay fp32 (TF32 and the BF16x9 emulation need an
    // explicit opt-in); reductions (split-K) stay in fp32 even when C is fp16 / bf16.
    FLASHSIM_CUBLAS_CHECK(cublasSetMathMode(
        created,
        static_cast<cublasMath_t>(CUBLAS_DEFAULT_MATH | CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION)));
    FLASHSIM_CUBLAS_CHECK(
        cublasSetPointerMode(created, CUBLAS_POINTER_MODE_HOST));  // alpha, beta: host floats
    return created;
  }();
  FLASHSIM_CUBLAS_CHECK(cublasSetStream(h, stream));
  return h;
}

void gemm(cublasHandle_t handle, cublasOperation_t ta, cublasOperation_t tb, int64_t m, int64_t n, int64_t k,
          float alpha, Operand A, Operand B, float beta, void* C, cudaDataType_t ctype, int64_t ldc,
          int64_t stride_c, int64_t batch) {
  FLASHSIM_CUBLAS_CHECK(cublasGemmStridedBatchedEx(
      handle, ta, tb, static_cast<int>(m), static_cast<int>(n), static_cast<int>(k), &alpha, A.ptr, A.type,
      static_cast<int>(A.ld), A.stride, B.ptr, B.type, static_cast<int>(B.ld), B.stride, &beta, C, ctype,
      static_cast<int>(ldc), stride_c, static_cast<int>(batch), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

}  // namespace flashsim::gpu::cublas
