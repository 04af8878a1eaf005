#pragma once
// cuBLAS for the kernels that use it (naive-v1): one handle per process set for strict fp32 accumulation, and
// batched strided GEMMs on column-major operands. Errors are thrown as std::runtime_error naming the call.
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace flashsim::gpu::cublas {

// Element types: cuBLAS's name of each (the conversions, to_float / from_float, are score_pipeline.cuh's).
template <class T>
struct Elem;
template <>
struct Elem<float> {
  static constexpr cudaDataType_t kCuda = CUDA_R_32F;
};
template <>
struct Elem<__half> {
  static constexpr cudaDataType_t kCuda = CUDA_R_16F;
};
template <>
struct Elem<__nv_bfloat16> {
  static constexpr cudaDataType_t kCuda = CUDA_R_16BF;
};

// The process's handle, created on first use (fp32 products stay fp32: no TF32, no reduced-precision split-K
// reductions; alpha and beta on the host) and set to `stream`.
cublasHandle_t handle(cudaStream_t stream);

// A column-major operand of cublasGemmStridedBatchedEx: pointer, type, leading dimension, batch stride.
// A row-major [rows, cols] matrix with row stride ld is the column-major [cols, rows] matrix of the same ld.
struct Operand {
  const void* ptr;
  cudaDataType_t type;
  int64_t ld;
  int64_t stride;
};

// C = alpha op(A) op(B) + beta C (column-major, m x n, inner k), batch times; fp32 accumulation and scalars.
void gemm(cublasHandle_t handle, cublasOperation_t ta, cublasOperation_t tb, int64_t m, int64_t n, int64_t k,
          float alpha, Operand A, Operand B, float beta, void* C, cudaDataType_t ctype, int64_t ldc,
          int64_t stride_c, int64_t batch);

}  // namespace flashsim::gpu::cublas
