#include "gemm.h"

#ifdef FLASHSIM_WITH_BLAS
#include <cblas.h>
#endif
#include <omp.h>

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

#ifdef FLASHSIM_WITH_BLAS
// OpenBLAS must run single-threaded: flashsim parallelizes over tiles itself, and a GEMM split over threads
// may sum in another order (results would depend on the thread count). The OpenMP build of OpenBLAS takes its
// thread count from omp_get_max_threads() unless it is inside an *active* parallel region, and a region of
// one thread is not active. Every call here comes from inside one of the algorithms' parallel regions, where
// setting the thread count changes only this implicit task's setting (nested regions), never the caller's.
void single_threaded_blas() {
  if (omp_get_level() > 0 && omp_get_max_threads() != 1) omp_set_num_threads(1);
}

CBLAS_TRANSPOSE cblas_trans(Trans t) {
  return t == Trans::No ? CblasNoTrans : CblasTrans;
}

void blas_gemm(CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, blasint m, blasint n, blasint k, float alpha,
               const float* a, blasint lda, const float* b, blasint ldb, float beta, float* c, blasint ldc) {
  cblas_sgemm(CblasRowMajor, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}
void blas_gemm(CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, blasint m, blasint n, blasint k, double alpha,
               const double* a, blasint lda, const double* b, blasint ldb, double beta, double* c,
               blasint ldc) {
  cblas_dgemm(CblasRowMajor, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

// OpenBLAS takes blasint (32-bit in Debian's build): tile-sized operands always fit.
blasint bi(int64_t v) {
  return static_cast<blasint>(v);
}

#endif
}  // namespace

template <class T>
void gemm(bool use_blas, Trans ta, Trans tb, int64_t m, int64_t n, int64_t k, T alpha, const T* a,
          int64_t lda, const T* b, int64_t ldb, T beta, T* c, int64_t ldc) {
  if (m == 0 || n == 0) return;
#ifdef FLASHSIM_WITH_BLAS
  if (use_blas && k > 0) {
    single_threaded_blas();
    blas_gemm(cblas_trans(ta), cblas_trans(tb), bi(m), bi(n), bi(k), alpha, a, bi(lda), b, bi(ldb), beta, c,
              bi(ldc));
    return;
  }
#endif
  (void)use_blas;  // without OpenBLAS every product takes the loops
  gemm_loops(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

template void gemm<float>(bool, Trans, Trans, int64_t, int64_t, int64_t, float, const float*, int64_t,
                          const float*, int64_t, float, float*, int64_t);
template void gemm<double>(bool, Trans, Trans, int64_t, int64_t, int64_t, double, const double*, int64_t,
                           const double*, int64_t, double, double*, int64_t);

}  // namespace flashsim::ref::detail
