#include "gemm.h"

#include <cblas.h>

namespace flashsim::ref::detail {

namespace {

template <class T>
void gemm_loops(Trans ta, Trans tb, int64_t m, int64_t n, int64_t k, T alpha, const T* a, int64_t lda,
                const T* b, int64_t ldb, T beta, T* c, int64_t ldc) {
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      T acc = 0;
      for (int64_t p = 0; p < k; ++p) {
        const T av = ta == Trans::No ? a[i * lda + p] : a[p * lda + i];
        const T bv = tb == Trans::No ? b[p * ldb + j] : b[j * ldb + p];
        acc += av * bv;
      }
      c[i * ldc + j] = alpha * acc + (beta == T(0) ? T(0) : beta * c[i * ldc + j]);
    }
  }
}

CBLAS_TRANSPOSE cblas_trans(Trans t) { return t == Trans::No ? CblasNoTrans : CblasTrans; }

// OpenBLAS takes blasint (32-bit in Debian's build): tile-sized operands always fit.
blasint bi(int64_t v) { return static_cast<blasint>(v); }

}  // namespace

template <>
void gemm<float>(bool use_blas, Trans ta, Trans tb, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
                 int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  if (m == 0 || n == 0) return;
  if (!use_blas || k == 0) return gemm_loops(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  cblas_sgemm(CblasRowMajor, cblas_trans(ta), cblas_trans(tb), bi(m), bi(n), bi(k), alpha, a, bi(lda), b, bi(ldb),
              beta, c, bi(ldc));
}

template <>
void gemm<double>(bool use_blas, Trans ta, Trans tb, int64_t m, int64_t n, int64_t k, double alpha, const double* a,
                  int64_t lda, const double* b, int64_t ldb, double beta, double* c, int64_t ldc) {
  if (m == 0 || n == 0) return;
  if (!use_blas || k == 0) return gemm_loops(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  cblas_dgemm(CblasRowMajor, cblas_trans(ta), cblas_trans(tb), bi(m), bi(n), bi(k), alpha, a, bi(lda), b, bi(ldb),
              beta, c, bi(ldc));
}

}  // namespace flashsim::ref::detail
