#pragma once
// Row-major GEMM: C = alpha * op(A) * op(B) + beta * C, through OpenBLAS or plain loops (the reference path).
#include <cstdint>

namespace flashsim::ref::detail {

enum class Trans { No, Yes };

// op(A) is m x k, op(B) is k x n, C is m x n; lda/ldb/ldc are row strides of the stored matrices.
template <class T>
void gemm(bool use_blas, Trans ta, Trans tb, int64_t m, int64_t n, int64_t k, T alpha, const T* a,
          int64_t lda, const T* b, int64_t ldb, T beta, T* c, int64_t ldc);

}  // namespace flashsim::ref::detail
