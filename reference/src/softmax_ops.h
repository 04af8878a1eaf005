#pragma once
// Row-wise softmax pieces shared by the algorithms, safe for rows whose scores are all -inf.
#include <algorithm>
#include <cmath>
#include <cstdint>

#include "flashsim/dtype.h"
#include "head_view.h"

namespace flashsim::ref::detail {

// The shift used in exp(s - m): m itself, or 0 when m = -inf (no visible key yet), so that exp never sees
// -inf - -inf. Every s of such a row is -inf and gives exp = 0.
template <class Acc>
Acc safe_shift(Acc m) {
  return m == neg_inf<Acc>() ? Acc(0) : m;
}

// exp(a - b) for the running-max rescale alpha = exp(m_old - m_new); 0 when a = -inf.
template <class Acc>
Acc safe_exp_diff(Acc a, Acc b) {
  return a == neg_inf<Acc>() ? Acc(0) : std::exp(a - b);
}

// Row r of a row-major n x m tile as a vector. The row-wise helpers below work one row at a time: Eigen does
// not vectorize a column-vector broadcast over a row-major array (measured 5x slower than per row).
template <class Acc>
Eigen::Map<Eigen::Array<Acc, Eigen::Dynamic, 1>> tile_row(Acc* x, int64_t r, int64_t m) {
  return {x + r * m, m};
}
template <class Acc>
Eigen::Map<const Eigen::Array<Acc, Eigen::Dynamic, 1>> tile_row(const Acc* x, int64_t r, int64_t m) {
  return {x + r * m, m};
}

// P(n x m) = exp(S - shift) row-wise, exactly 0 where S = -inf (the vectorized exp clamps its input, so -inf
// is handled explicitly when the tile may contain it). out may alias s.
template <class Acc>
void exp_rows(const Acc* s, int64_t n, int64_t m, const ColArray<Acc>& shift, bool may_have_neg_inf,
              Acc* out) {
  for (int64_t r = 0; r < n; ++r) {
    auto S = tile_row(s, r, m);
    auto P = tile_row(out, r, m);
    if (may_have_neg_inf) {
      P = (S == neg_inf<Acc>()).select(Acc(0), (S - shift(r)).exp());
    } else {
      P = (S - shift(r)).exp();
    }
  }
}

// out(r) = max_j x(r, j) and sum_j x(r, j) of a row-major n x m tile.
template <class Acc, class Out>
void row_max(const Acc* x, int64_t n, int64_t m, Out&& out) {
  for (int64_t r = 0; r < n; ++r) out(r) = m > 0 ? tile_row(x, r, m).maxCoeff() : neg_inf<Acc>();
}
template <class Acc, class Out>
void row_sum(const Acc* x, int64_t n, int64_t m, Out&& out) {
  for (int64_t r = 0; r < n; ++r) out(r) = tile_row(x, r, m).sum();
}

// x(r, :) *= alpha(r)
template <class Acc>
void scale_rows(Acc* x, int64_t n, int64_t m, const ColArray<Acc>& alpha) {
  for (int64_t r = 0; r < n; ++r) tile_row(x, r, m) *= alpha(r);
}

// dS = P o (dP - D) row-wise, in place over dp.
template <class Acc>
void softmax_grad_rows(const Acc* p, Acc* dp, int64_t n, int64_t m, const ColArray<Acc>& delta) {
  for (int64_t r = 0; r < n; ++r) tile_row(dp, r, m) = tile_row(p, r, m) * (tile_row(dp, r, m) - delta(r));
}

// Round every element to the input dtype (the GPU's conversion of P or dS before a tensor-core product).
// FP8 (P only: FP8 is forward only): FlashAttention-3 computes P as exp2(x - (m - 8)) = 2^8 e^(x - m), in
// [0, 256], so that P uses more of the FP8 range (hopper/softmax.h, Max_offset = 8 for FP8), converts that to the
// input's FP8 format, and divides the row sum by 2^8 at the end; here P in [0, 1] is rounded as 2^8 P and scaled
// back (exact: powers of two), which is the same product.
template <class Acc>
void round_to_dtype(Acc* x, int64_t count, DType t) {
  if (t == DType::F64 || (t == DType::F32 && sizeof(Acc) == 4)) return;
  if (is_fp8(t)) {
    for (int64_t n = 0; n < count; ++n) {
      if constexpr (sizeof(Acc) == 4) {
        x[n] = round_to_float(x[n] * Acc(256), t) / Acc(256);
      } else {
        x[n] = round_to(x[n] * Acc(256), t) / Acc(256);
      }
    }
    return;
  }
  for (int64_t n = 0; n < count; ++n) {
    if constexpr (sizeof(Acc) == 4) {
      x[n] = round_to_float(x[n], t);
    } else {
      x[n] = round_to(x[n], t);
    }
  }
}

// The value an output element is stored as: rounded to the output dtype in emulated mode (the input dtype; bf16
// for FP8 inputs).
template <class Acc>
double stored_output(Acc x, const ProblemContext& ctx) {
  return ctx.emulated() ? round_to(static_cast<double>(x), ctx.p.output_dtype()) : static_cast<double>(x);
}

// Folds an attention sink's logit s (finite) into a row's max m and sum l of exp(x - m):
//   m' = max(m, s);  l' = l e^(m - m') + e^(s - m');  returns alpha = e^(m - m') (0 when m = -inf: no key seen),
// the factor for an output accumulated against m. A row with no visible key ends with m' = s, l' = 1.
template <class Acc>
Acc fold_sink(Acc& m, Acc& l, Acc s) {
  const Acc m_new = std::max(m, s);
  const Acc alpha = safe_exp_diff(m, m_new);
  l = l * alpha + std::exp(s - m_new);
  m = m_new;
  return alpha;
}

// lse = m + log(l); -inf for a row with no visible key (l = 0).
template <class Acc>
Acc row_lse(Acc m, Acc l) {
  return l > 0 ? m + std::log(l) : neg_inf<Acc>();
}

}  // namespace flashsim::ref::detail
