// RMSNorm and LayerNorm (issue 16): ref::norm_forward / norm_backward against an independent long-double oracle
// (the forward from the definition, the backward through each row's explicit Jacobian), against central finite
// differences in fp64, and the properties the emulated pipeline must have (error bands, representability,
// summation orders, determinism, input errors).
#include "flashsim/norm.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "flashsim/error.h"
#include "flashsim/ref/norm.h"

namespace flashsim::test {
namespace {

using namespace flashsim::ref;
using LD = long double;

// ---------------------------------------------------------------------------------------------------------------
// The oracle: one row at a time, in long double. Each value comes with its magnitude: the sum of the absolute
// values of the terms it is made of (the scale a correct fp64 computation's rounding is relative to).
struct Oracle {
  std::vector<LD> h, y, y_mag, rstd, mean, mean_mag, dh, dh_mag, dw, dw_mag, db, db_mag;
};

Oracle oracle(const NormProblem& p, const NormInputs& in, bool backward = true) {
  const int64_t R = p.rows, N = p.hidden;
  const bool ln = p.kind == NormKind::LayerNorm;
  const LD c = ln ? 1 : 0;  // LayerNorm subtracts the mean, RMSNorm does not
  Oracle o;
  o.h.resize(R * N);
  o.y.resize(R * N);
  o.y_mag.resize(R * N);
  o.dh.assign(R * N, 0);
  o.dh_mag.assign(R * N, 0);
  o.rstd.resize(R);
  o.mean.resize(R);
  o.mean_mag.resize(R);
  o.dw.assign(N, 0);
  o.dw_mag.assign(N, 0);
  o.db.assign(N, 0);
  o.db_mag.assign(N, 0);
  std::vector<LD> d(N);  // h - mu
  for (int64_t r = 0; r < R; ++r) {
    LD* h = &o.h[r * N];
    LD sum = 0, abs_sum = 0;
    for (int64_t j = 0; j < N; ++j) {
      h[j] = static_cast<LD>(in.x[r * N + j]) + (p.residual ? static_cast<LD>(in.residual[r * N + j]) : 0);
      sum += h[j];
      abs_sum += std::fabs(h[j]);
    }
    const LD mu = ln ? sum / N : 0;  // mu = (1/N) sum_j h_j (LayerNorm), 0 (RMSNorm)
    LD var = 0;
    for (int64_t j = 0; j < N; ++j) {
      d[j] = h[j] - mu;
      var += d[j] * d[j];
    }
    var /= N;                                                   // (1/N) sum_j (h_j - mu)^2: var or mean(h^2)
    const LD rs = 1 / std::sqrt(var + static_cast<LD>(p.eps));  // rstd = (var + eps)^(-1/2)
    o.rstd[r] = rs;
    o.mean[r] = mu;
    o.mean_mag[r] = abs_sum / N;
    for (int64_t j = 0; j < N; ++j) {
      const LD w = in.weight[j], b = ln ? static_cast<LD>(in.bias[j]) : 0;
      o.y[r * N + j] = w * d[j] * rs + b;  // y_j = w_j (h_j - mu) rstd + b_j
      o.y_mag[r * N + j] = std::fabs(w * d[j] * rs) + std::fabs(b);
    }
    if (!backward) continue;
    std::vector<LD> dyl(N);
    for (int64_t j = 0; j < N; ++j) dyl[j] = in.dy[r * N + j];
    const LD* dy = dyl.data();
    for (int64_t i = 0; i < N; ++i) {
      const LD t = d[i] * rs;  // dy_i/dw_i = (h_i - mu) rstd, dy_i/db_i = 1
      o.dw[i] += dy[i] * t;
      o.dw_mag[i] += std::fabs(dy[i] * t);
      o.db[i] += dy[i];
      o.db_mag[i] += std::fabs(dy[i]);
    }
    // J_ij = dy_i/dh_j = w_i [(delta_ij - c/N) rstd - (h_i - mu) rstd^3 (h_j - mu) / N]
    // (d mu/dh_j = 1/N, d rstd/dh_j = -rstd^3 (h_j - mu) / N); dh_j = sum_i J_ij dy_i.
    const LD rs3 = rs * rs * rs;
    std::vector<LD> wd(N);  // w_i dy_i
    LD abs_wd = 0, abs_wdd = 0;
    for (int64_t i = 0; i < N; ++i) {
      wd[i] = static_cast<LD>(in.weight[i]) * dy[i];
      abs_wd += std::fabs(wd[i]);
      abs_wdd += std::fabs(wd[i] * d[i]);
    }
    for (int64_t j = 0; j < N; ++j) {
      const LD k = rs3 * d[j] / N;  // rstd^3 (h_j - mu) / N
      LD acc = 0;
      for (int64_t i = 0; i < N; ++i) {
        const LD J_over_w = ((i == j ? 1 : 0) - c / N) * rs - d[i] * k;
        acc += J_over_w * wd[i];
      }
      o.dh[r * N + j] = acc;
      // the magnitude: sum_i |w_i dy_i| (delta_ij rstd + c rstd / N + |h_i - mu| rstd^3 |h_j - mu| / N)
      o.dh_mag[r * N + j] = std::fabs(wd[j]) * rs + c * rs / N * abs_wd + std::fabs(k) * abs_wdd;
    }
  }
  return o;
}

// max over groups of `group` consecutive elements of max |got - want| / max mag (0 when the group's magnitude is
// 0 and got == want there, infinite when not).
double group_error(const std::vector<double>& got, const std::vector<LD>& want, const std::vector<LD>& mag,
                   int64_t group) {
  if (got.size() != want.size()) return INFINITY;
  double worst = 0;
  for (size_t g0 = 0; g0 < got.size(); g0 += group) {
    LD err = 0, m = 0;
    for (size_t n = g0; n < g0 + group && n < got.size(); ++n) {
      if (!std::isfinite(got[n])) return INFINITY;
      err = std::max(err, std::fabs(static_cast<LD>(got[n]) - want[n]));
      m = std::max(m, mag[n]);
    }
    if (err == 0) continue;
    if (m == 0) return INFINITY;
    worst = std::max(worst, static_cast<double>(err / m));
  }
  return worst;
}

std::vector<LD> abs_of(const std::vector<LD>& v) {
  std::vector<LD> a(v.size());
  for (size_t n = 0; n < v.size(); ++n) a[n] = std::fabs(v[n]);
  return a;
}

NormProblem problem(NormKind kind, bool residual, int64_t rows, int64_t hidden, double eps, DType dtype) {
  NormProblem p;
  p.kind = kind;
  p.residual = residual;
  p.rows = rows;
  p.hidden = hidden;
  p.eps = eps;
  p.dtype = dtype;
  return p;
}

NormOptions opts(Precision precision, NormOrder order = NormOrder::Sequential, int threads = 0) {
  NormOptions o;
  o.precision = precision;
  o.order = order;
  o.threads = threads;
  return o;
}

struct Variant {
  bool residual;
  NormKind kind;
};
std::string variant_name(const ::testing::TestParamInfo<Variant>& info) {
  return std::string(norm_kind_name(info.param.kind)) + (info.param.residual ? "_residual" : "");
}
const Variant kVariants[] = {{false, NormKind::RmsNorm},
                             {true, NormKind::RmsNorm},
                             {false, NormKind::LayerNorm},
                             {true, NormKind::LayerNorm}};

// F64, F32, BF16: 0, 1, 2
int dtype_index(DType t) {
  return t == DType::F64 ? 0 : t == DType::F32 ? 1 : 2;
}

class NormVariant : public ::testing::TestWithParam<Variant> {};

// ---------------------------------------------------------------------------------------------------------------
// Exact against the oracle on the grid: every output within 1e-12 of the oracle relative to its magnitude (per row
// for [rows, hidden], per element for rstd and mean, over the tensor for dweight and dbias).
TEST_P(NormVariant, ExactMatchesOracle) {
  const Variant v = GetParam();
  uint64_t seed = 1;
  int checked = 0;
  for (int64_t hidden : {1, 2, 3, 7, 64, 129, 1000})
    for (int64_t rows : {1, 3, 17})
      for (double eps : {1e-5, 1e-6, 0.5})
        for (DType dtype : {DType::F64, DType::F32, DType::BF16})
          for (int s = 0; s < 3; ++s) {
            // the O(hidden^2) Jacobian: for the wide rows each eps with one dtype only (the i-th with the i-th)
            if (hidden >= 129 && (eps == 1e-5 ? 0 : eps == 1e-6 ? 1 : 2) != dtype_index(dtype)) continue;
            // s = 0: N(0, 1); 1: offset 50; 2: a zero row (and an outlier row when rows > 1)
            NormInputSpec spec;
            if (s == 1) spec.offset = 50;
            if (s == 2) {
              spec.zero_rows = 1;
              spec.outlier_rows = rows > 1 ? 1 : 0;
            }
            const NormProblem p = problem(v.kind, v.residual, rows, hidden, eps, dtype);
            SCOPED_TRACE(p.describe() + " spec " + std::to_string(s));
            const NormInputs in = make_random_norm_inputs(p, seed++, spec);
            const Oracle o = oracle(p, in);
            const NormForward f = norm_forward(p, in, opts(Precision::Exact, NormOrder::Sequential, 1));
            const NormGradients g = norm_backward(p, in, f, opts(Precision::Exact, NormOrder::Sequential, 1));
            const double tol = 1e-12;
            EXPECT_LE(group_error(f.y, o.y, o.y_mag, hidden), tol) << "y";
            EXPECT_LE(group_error(f.rstd, o.rstd, o.rstd, 1), tol) << "rstd";
            EXPECT_LE(group_error(g.dx, o.dh, o.dh_mag, hidden), tol) << "dx";
            EXPECT_LE(group_error(g.dweight, o.dw, o.dw_mag, hidden), tol) << "dweight";
            if (v.kind == NormKind::LayerNorm) {
              EXPECT_LE(group_error(f.mean, o.mean, o.mean_mag, 1), tol) << "mean";
              EXPECT_LE(group_error(g.dbias, o.db, o.db_mag, hidden), tol) << "dbias";
            } else {
              EXPECT_TRUE(f.mean.empty());
              EXPECT_TRUE(g.dbias.empty());
            }
            if (v.residual) {
              EXPECT_LE(group_error(f.h, o.h, abs_of(o.h), hidden), 1e-15) << "h";
              EXPECT_EQ(g.dresidual, g.dx);
            } else {
              EXPECT_TRUE(f.h.empty());
              EXPECT_TRUE(g.dresidual.empty());
            }
            ++checked;
            if (::testing::Test::HasFailure()) return;  // one case's report is enough
          }
  EXPECT_EQ(checked, (5 * 9 + 2 * 3) * 3 * 3);  // hidden x (eps, dtype) x rows x spec
}

// A zero row (h = 0): rstd = 1/sqrt(eps), y = bias (0 for RMSNorm), exactly up to the rounding of 1/sqrt(eps).
TEST_P(NormVariant, ZeroRowsExact) {
  const Variant v = GetParam();
  for (double eps : {1e-5, 1e-6, 0.5}) {
    const NormProblem p = problem(v.kind, v.residual, 5, 33, eps, DType::BF16);
    NormInputSpec spec;
    spec.zero_rows = 2;
    spec.outlier_rows = 1;
    const NormInputs in = make_random_norm_inputs(p, 7, spec);
    for (Precision prec : {Precision::Exact, Precision::Emulated}) {
      const NormForward f = norm_forward(p, in, opts(prec));
      for (int64_t r : spec.zero_row_indices(p.rows)) {
        const double want = 1 / std::sqrt(eps);  // (0 + eps)^(-1/2)
        EXPECT_NEAR(f.rstd[r], want, want * (prec == Precision::Exact ? 1e-15 : 2e-7)) << "row " << r;
        if (p.has_bias()) {
          EXPECT_DOUBLE_EQ(f.mean[r], 0.0);
        }
        for (int64_t j = 0; j < p.hidden; ++j)
          EXPECT_EQ(f.y[r * p.hidden + j], p.has_bias() ? in.bias[j] : 0.0) << "row " << r << " col " << j;
      }
    }
  }
}

// Invariances of the exact gradient. LayerNorm's y does not change when h is shifted (sum_j dh_j = 0); scaling h
// about its mean, h -> mu + s (h - mu), changes y only through eps: d/ds at s = 1 of y_j is w_j (h_j - mu) eps
// rstd^3, so sum_j dh_j (h_j - mu) = eps rstd^3 sum_j g_j (h_j - mu) with g = dy w. RMSNorm: the same with mu = 0.
TEST_P(NormVariant, ExactGradientInvariances) {
  const Variant v = GetParam();
  const NormProblem p = problem(v.kind, v.residual, 9, 100, 1e-5, DType::F64);
  NormInputSpec spec;
  spec.offset = 3;
  const NormInputs in = make_random_norm_inputs(p, 11, spec);
  const NormForward f = norm_forward(p, in);
  const NormGradients g = norm_backward(p, in, f);
  const int64_t N = p.hidden;
  for (int64_t r = 0; r < p.rows; ++r) {
    double mu = 0;
    std::vector<double> h(N);
    for (int64_t j = 0; j < N; ++j) {
      h[j] = in.x[r * N + j] + (p.residual ? in.residual[r * N + j] : 0.0);
      mu += h[j] / static_cast<double>(N);
    }
    if (!p.has_bias()) mu = 0;
    double s0 = 0, s1 = 0, m0 = 0, m1 = 0, gh = 0;
    for (int64_t j = 0; j < N; ++j) {
      const double dh = g.dx[r * N + j];
      s0 += dh;  // sum_j dh_j
      m0 += std::fabs(dh);
      s1 += dh * (h[j] - mu);  // sum_j dh_j (h_j - mu)
      m1 += std::fabs(dh * (h[j] - mu));
      gh += in.dy[r * N + j] * in.weight[j] * (h[j] - mu);
    }
    const double rs = f.rstd[r];
    const double want1 = p.eps * rs * rs * rs * gh;
    EXPECT_NEAR(s1, want1, 1e-12 * (m1 + std::fabs(want1))) << "row " << r;
    if (p.has_bias()) {
      EXPECT_NEAR(s0, 0.0, 1e-12 * m0) << "row " << r;
    }
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Finite differences in fp64: central differences of L = sum(dy * y) (y from ref::norm_forward) for every element
// of x, residual, weight and bias, against ref::norm_backward and the oracle's Jacobian backward.
double loss(const NormProblem& p, const NormInputs& in) {
  const NormForward f = norm_forward(p, in, opts(Precision::Exact, NormOrder::Sequential, 1));
  LD s = 0;
  for (size_t n = 0; n < f.y.size(); ++n) s += static_cast<LD>(in.dy[n]) * f.y[n];  // L = sum dy y
  return static_cast<double>(s);
}

TEST_P(NormVariant, MatchesFiniteDifferences) {
  const Variant v = GetParam();
  for (int64_t hidden : {5, 8})
    for (double eps : {1e-5, 0.5}) {
      const NormProblem p = problem(v.kind, v.residual, 3, hidden, eps, DType::F64);
      SCOPED_TRACE(p.describe());
      const NormInputs in0 = make_random_norm_inputs(p, 5 + hidden, {});
      const NormGradients g = norm_backward(p, in0, norm_forward(p, in0));
      const Oracle o = oracle(p, in0);
      struct Item {
        const char* name;
        std::vector<double> NormInputs::*field;
        const std::vector<double>* grad;
        const std::vector<LD>* oracle_grad;
      };
      std::vector<Item> items = {{"dx", &NormInputs::x, &g.dx, &o.dh},
                                 {"dweight", &NormInputs::weight, &g.dweight, &o.dw}};
      if (p.has_bias()) items.push_back({"dbias", &NormInputs::bias, &g.dbias, &o.db});
      if (p.residual) items.push_back({"dresidual", &NormInputs::residual, &g.dresidual, &o.dh});
      for (const Item& it : items) {
        ASSERT_EQ(it.grad->size(), (in0.*it.field).size()) << it.name;
        double scale = 0;
        for (double x : *it.grad) scale = std::max(scale, std::fabs(x));
        for (size_t n = 0; n < it.grad->size(); ++n) {
          // (L(v + d) - L(v - d)) / 2d: truncation O(d^2), rounding O(u / d); d = 1e-5 balances them
          const double step = 1e-5;
          NormInputs in = in0;
          (in.*it.field)[n] = (in0.*it.field)[n] + step;
          const double plus = loss(p, in);
          (in.*it.field)[n] = (in0.*it.field)[n] - step;
          const double minus = loss(p, in);
          const double fd = (plus - minus) / (2 * step);
          const double tol = 1e-7 * std::max({std::fabs(fd), scale, 1e-3});
          EXPECT_NEAR((*it.grad)[n], fd, tol) << it.name << "[" << n << "] reference";
          EXPECT_NEAR(static_cast<double>((*it.oracle_grad)[n]), fd, tol)
              << it.name << "[" << n << "] oracle";
        }
      }
    }
}

// ---------------------------------------------------------------------------------------------------------------
// The emulated pipeline.

double min_normal(DType t) {
  switch (t) {
    case DType::F16:
      return 0x1p-14;
    case DType::BF16:
    case DType::F32:
      return 0x1p-126;
    default:
      return 0x1p-1022;
  }
}

bool representable(const std::vector<double>& v, DType t) {
  for (double x : v)
    if (round_to(x, t) != x) return false;
  return true;
}

// y of the emulated pipeline in T against exact, elementwise, within a first-order bound on the pipeline's
// roundings (N = hidden, u = u_fp32, uT = the dtype's, d = h - mu, M1 = mean|h|, M2 = sqrt(mean h^2)):
//   final rounding to T                           uT |y|
//   h = x + residual rounded to T (J dh, |dh| <= uT |h|)  uT |w| rstd (|h_j| + c M1 + |d_j| rstd M2)
//   fp32 statistics (sums of N terms)             2 (N + 4) u |w| rstd (|d_j| + c M1) + u |b|
//   the mean's error squared in the variance      |w| rstd |d_j| ((N + 1) u M1)^2 rstd^2
// For bf16 and fp16 at these sizes that is a few uT; for fp32 a few u plus the sums' (N + 4) u.
TEST_P(NormVariant, EmulatedYWithinRoundoffOfExact) {
  const Variant v = GetParam();
  const double u = unit_roundoff(DType::F32);
  for (DType T : {DType::BF16, DType::F16, DType::F32})
    for (int64_t hidden : {1, 7, 64, 1000})
      for (int s = 0; s < 3; ++s) {
        NormInputSpec spec;  // N(0, 1); offset 8 (a large mean); a zero row and an outlier row
        if (s == 1) spec.offset = 8;
        if (s == 2) {
          spec.zero_rows = 1;
          spec.outlier_rows = 1;
        }
        const NormProblem p = problem(v.kind, v.residual, 17, hidden, 1e-5, T);
        SCOPED_TRACE(p.describe() + " spec " + std::to_string(s));
        const NormInputs in = make_random_norm_inputs(p, 31 + hidden, spec);
        const Oracle o = oracle(p, in, false);
        for (NormOrder order : {NormOrder::Sequential, NormOrder::Tree}) {
          const NormForward em = norm_forward(p, in, opts(Precision::Emulated, order));
          ASSERT_EQ(em.y.size(), o.y.size());
          const double uT = unit_roundoff(T), N = static_cast<double>(hidden);
          const double c = p.has_bias() ? 1 : 0;
          double worst = 0;
          for (int64_t r = 0; r < p.rows; ++r) {
            const double rs = static_cast<double>(o.rstd[r]), mu = static_cast<double>(o.mean[r]);
            const double M1 = static_cast<double>(o.mean_mag[r]);
            double M2 = 0;
            for (int64_t j = 0; j < hidden; ++j)
              M2 += static_cast<double>(o.h[r * hidden + j] * o.h[r * hidden + j]);
            M2 = std::sqrt(M2 / N);
            const double dmu = (N + 1) * u * M1;
            for (int64_t j = 0; j < hidden; ++j) {
              const int64_t n = r * hidden + j;
              const double y = static_cast<double>(o.y[n]), hj = static_cast<double>(o.h[n]);
              const double dj = std::fabs(hj - mu), w = std::fabs(in.weight[j]);
              const double b = p.has_bias() ? std::fabs(in.bias[j]) : 0;
              double bound = uT * std::fabs(y) + 2 * (N + 4) * u * w * rs * (dj + c * M1) + u * b +
                             w * rs * dj * dmu * dmu * rs * rs;
              if (p.residual) bound += uT * w * rs * (std::fabs(hj) + c * M1 + dj * rs * M2);
              bound = 1.1 * bound + uT * min_normal(T);
              const double err = std::fabs(em.y[n] - y);
              worst = std::max(worst, err / bound);
              if (err > bound) {
                ADD_FAILURE() << "y[" << r << "," << j << "] emulated " << em.y[n] << " exact " << y
                              << " |err| " << err << " > bound " << bound << " (order "
                              << static_cast<int>(order) << ")";
                return;
              }
            }
          }
        }
      }
}

// rstd and mean without a residual (h = x, exact in T): fp32-level relative error.
//   mean: |err| <= (N + 2) u M1; rstd: relative <= (N + 6) u + ((N + 1) u M1)^2 / (var + eps)
// (the variance summed over d = h - mean: the mean's error enters squared; a one-pass E[h^2] - mean^2 in fp32
// loses (N u M2^2) / var, which the offset 50 rows exceed).
// Without a residual only: with one, the statistics are of h rounded to the dtype (EmulatedYWithinRoundoffOfExact
// holds those variants).
class NormNoResidual : public ::testing::TestWithParam<Variant> {};

TEST_P(NormNoResidual, EmulatedStatisticsFp32Level) {
  const Variant v = GetParam();
  const double u = unit_roundoff(DType::F32);
  for (DType T : {DType::BF16, DType::F16, DType::F32})
    for (int64_t hidden : {1, 7, 64, 1000})
      for (double offset : {0.0, 50.0}) {
        const NormProblem p = problem(v.kind, v.residual, 17, hidden, 1e-6, T);
        SCOPED_TRACE(p.describe() + " offset " + std::to_string(offset));
        NormInputSpec spec;
        spec.offset = offset;
        spec.outlier_rows = 1;
        spec.zero_rows = 1;
        const NormInputs in = make_random_norm_inputs(p, 3 + hidden, spec);
        const Oracle o = oracle(p, in, false);
        for (NormOrder order : {NormOrder::Sequential, NormOrder::Tree}) {
          const NormForward em = norm_forward(p, in, opts(Precision::Emulated, order));
          ASSERT_EQ(em.rstd.size(), static_cast<size_t>(p.rows));
          const double N = static_cast<double>(hidden);
          for (int64_t r = 0; r < p.rows; ++r) {
            const double rs = static_cast<double>(o.rstd[r]), M1 = static_cast<double>(o.mean_mag[r]);
            const double var = 1 / (rs * rs) - p.eps;  // rstd = (var + eps)^(-1/2)
            const double dmu = (p.has_bias() ? N + 1 : 0) * u * M1;
            const double rel = (N + 6) * u + dmu * dmu / (var + p.eps);
            EXPECT_LE(std::fabs(em.rstd[r] - rs), rel * rs)
                << "rstd row " << r << ": emulated " << em.rstd[r] << " exact " << rs << " order "
                << static_cast<int>(order);
            if (p.has_bias()) {
              EXPECT_LE(std::fabs(em.mean[r] - static_cast<double>(o.mean[r])), (N + 2) * u * M1)
                  << "mean row " << r << ": emulated " << em.mean[r] << " exact "
                  << static_cast<double>(o.mean[r]);
            }
          }
        }
      }
}

// Every output exactly representable in the dtype (rstd and mean in fp32), dresidual == dx, and the same bits for
// 1 and 2 threads, in every precision and order.
TEST_P(NormVariant, EmulatedRepresentableDeterministic) {
  const Variant v = GetParam();
  for (DType T : {DType::BF16, DType::F16, DType::F32})
    for (int64_t hidden : {1, 7, 300})
      for (NormOrder order : {NormOrder::Sequential, NormOrder::Tree})
        for (Precision prec : {Precision::Emulated, Precision::Fp32}) {
          const NormProblem p = problem(v.kind, v.residual, 150, hidden, 1e-5, T);
          SCOPED_TRACE(p.describe() + " order " + std::to_string(static_cast<int>(order)) + " precision " +
                       std::string(precision_name(prec)));
          NormInputSpec spec;
          spec.zero_rows = 3;
          spec.outlier_rows = 2;
          const NormInputs in = make_random_norm_inputs(p, 77, spec);
          const NormForward f1 = norm_forward(p, in, opts(prec, order, 1));
          const NormGradients g1 = norm_backward(p, in, f1, opts(prec, order, 1));
          const NormForward f2 = norm_forward(p, in, opts(prec, order, 2));
          const NormGradients g2 = norm_backward(p, in, f2, opts(prec, order, 2));
          const DType out = prec == Precision::Emulated ? T : DType::F32;
          EXPECT_EQ(f1.y.size(), static_cast<size_t>(p.elems()));
          EXPECT_TRUE(representable(f1.y, out)) << "y";
          EXPECT_TRUE(representable(f1.h, out)) << "h";
          EXPECT_TRUE(representable(f1.rstd, DType::F32)) << "rstd";
          EXPECT_TRUE(representable(f1.mean, DType::F32)) << "mean";
          EXPECT_TRUE(representable(g1.dx, out)) << "dx";
          EXPECT_TRUE(representable(g1.dweight, out)) << "dweight";
          EXPECT_TRUE(representable(g1.dbias, out)) << "dbias";
          EXPECT_TRUE(representable(g1.dresidual, out)) << "dresidual";
          EXPECT_EQ(f1.h.size(), p.residual ? static_cast<size_t>(p.elems()) : 0u);
          EXPECT_EQ(f1.mean.size(), p.has_bias() ? static_cast<size_t>(p.rows) : 0u);
          EXPECT_EQ(g1.dbias.size(), p.has_bias() ? static_cast<size_t>(hidden) : 0u);
          if (p.residual) {
            EXPECT_EQ(g1.dresidual, g1.dx);
          }
          EXPECT_EQ(f1.y, f2.y);
          EXPECT_EQ(f1.h, f2.h);
          EXPECT_EQ(f1.rstd, f2.rstd);
          EXPECT_EQ(f1.mean, f2.mean);
          EXPECT_EQ(g1.dx, g2.dx);
          EXPECT_EQ(g1.dweight, g2.dweight);
          EXPECT_EQ(g1.dbias, g2.dbias);
          EXPECT_EQ(g1.dresidual, g2.dresidual);
        }
  // and the exact pipeline
  const NormProblem p = problem(v.kind, v.residual, 150, 300, 1e-5, DType::F64);
  const NormInputs in = make_random_norm_inputs(p, 78, {});
  const NormForward f1 = norm_forward(p, in, opts(Precision::Exact, NormOrder::Sequential, 1));
  const NormForward f2 = norm_forward(p, in, opts(Precision::Exact, NormOrder::Sequential, 2));
  EXPECT_EQ(f1.y, f2.y);
  EXPECT_EQ(f1.rstd, f2.rstd);
  EXPECT_EQ(norm_backward(p, in, f1, opts(Precision::Exact, NormOrder::Sequential, 1)).dweight,
            norm_backward(p, in, f2, opts(Precision::Exact, NormOrder::Sequential, 2)).dweight);
}

// Tree and Sequential fp32 sums: another order, so the fp32 results differ somewhere, but by no more than
// 2 sqrt(L) u_fp32 relative to each output's largest value (L = the longest sum: hidden for a row's statistics,
// rows for dweight / dbias).
TEST_P(NormVariant, TreeOrderCloseToSequential) {
  const Variant v = GetParam();
  const double u = unit_roundoff(DType::F32);
  for (auto [rows, hidden] : {std::pair<int64_t, int64_t>{64, 1000}, {1000, 64}, {300, 300}}) {
    const NormProblem p = problem(v.kind, v.residual, rows, hidden, 1e-5, DType::F32);
    SCOPED_TRACE(p.describe());
    const NormInputs in = make_random_norm_inputs(p, 5, {});
    const NormForward fs = norm_forward(p, in, opts(Precision::Emulated, NormOrder::Sequential));
    const NormForward ft = norm_forward(p, in, opts(Precision::Emulated, NormOrder::Tree));
    const NormGradients gs = norm_backward(p, in, fs, opts(Precision::Emulated, NormOrder::Sequential));
    const NormGradients gt = norm_backward(p, in, ft, opts(Precision::Emulated, NormOrder::Tree));
    const double bound = 2 * std::sqrt(static_cast<double>(std::max(rows, hidden))) * u;
    bool differ = false;
    auto check = [&](const char* name, const std::vector<double>& a, const std::vector<double>& b) {
      ASSERT_EQ(a.size(), b.size()) << name;
      double err = 0, mag = 0;
      for (size_t n = 0; n < a.size(); ++n) {
        err = std::max(err, std::fabs(a[n] - b[n]));
        mag = std::max(mag, std::fabs(b[n]));
      }
      differ = differ || err > 0;
      EXPECT_LE(err, bound * mag) << name << ": tree vs sequential max|diff| " << err << ", max|seq| " << mag
                                  << ", relative " << err / mag << " > 2 sqrt(L) u = " << bound;
    };
    check("y", ft.y, fs.y);
    check("rstd", ft.rstd, fs.rstd);
    check("mean", ft.mean, fs.mean);
    check("dx", gt.dx, gs.dx);
    check("dweight", gt.dweight, gs.dweight);
    check("dbias", gt.dbias, gs.dbias);
    EXPECT_TRUE(differ) << "Tree gave the same bits as Sequential";
    // Exact ignores the order
    EXPECT_EQ(norm_forward(p, in, opts(Precision::Exact, NormOrder::Tree)).y,
              norm_forward(p, in, opts(Precision::Exact, NormOrder::Sequential)).y);
  }
}

// InputError for inputs that do not match the problem, an empty dy, a non-positive eps and another problem's
// forward.
TEST_P(NormVariant, InputErrors) {
  const Variant v = GetParam();
  const NormProblem p = problem(v.kind, v.residual, 4, 6, 1e-5, DType::BF16);
  const NormInputs good = make_random_norm_inputs(p, 1, {});
  const NormForward fwd = norm_forward(p, good);
  EXPECT_NO_THROW(norm_backward(p, good, fwd));
  auto bad = [&](const char* what, auto mutate) {
    NormInputs in = good;
    mutate(in);
    EXPECT_THROW(norm_forward(p, in), InputError) << what;
    EXPECT_THROW(norm_forward(p, in, opts(Precision::Emulated)), InputError) << what;
    EXPECT_THROW(norm_backward(p, in, fwd), InputError) << what;
  };
  bad("x short", [](NormInputs& in) { in.x.pop_back(); });
  bad("weight long", [](NormInputs& in) { in.weight.push_back(1); });
  bad("weight empty", [](NormInputs& in) { in.weight.clear(); });
  bad("x not bf16", [](NormInputs& in) { in.x[3] = 0.1; });
  if (p.has_bias()) {
    bad("bias short", [](NormInputs& in) { in.bias.pop_back(); });
  } else {
    bad("bias given to rmsnorm", [](NormInputs& in) { in.bias.assign(6, 0.0); });
  }
  if (p.residual) {
    bad("residual missing", [](NormInputs& in) { in.residual.clear(); });
  } else {
    bad("residual given", [](NormInputs& in) { in.residual.assign(24, 0.0); });
  }
  {
    NormInputs in = good;
    in.dy.pop_back();
    EXPECT_THROW(norm_backward(p, in, fwd), InputError) << "dy short";
    in.dy.clear();
    EXPECT_NO_THROW(norm_forward(p, in)) << "the forward needs no dy";
    EXPECT_THROW(norm_backward(p, in, fwd), InputError) << "dy empty";
    EXPECT_THROW(norm_backward(p, in, fwd, opts(Precision::Emulated)), InputError) << "dy empty";
  }
  for (double eps :
       {0.0, -1e-5, std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::infinity()}) {
    NormProblem q = p;
    q.eps = eps;
    EXPECT_THROW(norm_forward(q, good), InputError) << "eps " << eps;
    EXPECT_THROW(norm_backward(q, good, fwd), InputError) << "eps " << eps;
  }
  // another problem's forward: other rows, the other norm, the other residual setting
  NormProblem q = p;
  q.rows = 3;
  const NormInputs qin = make_random_norm_inputs(q, 1, {});
  EXPECT_THROW(norm_backward(p, good, norm_forward(q, qin)), InputError) << "rows";
  q = p;
  q.hidden = 5;
  EXPECT_THROW(norm_backward(p, good, norm_forward(q, make_random_norm_inputs(q, 1, {}))), InputError)
      << "hidden (h with a residual; nothing else of the forward has hidden's size otherwise)";
  q = p;
  q.kind = p.kind == NormKind::RmsNorm ? NormKind::LayerNorm : NormKind::RmsNorm;
  EXPECT_THROW(norm_backward(p, good, norm_forward(q, make_random_norm_inputs(q, 1, {}))), InputError)
      << "kind (mean present or missing)";
  q = p;
  q.residual = !p.residual;
  EXPECT_THROW(norm_backward(p, good, norm_forward(q, make_random_norm_inputs(q, 1, {}))), InputError)
      << "residual (h present or missing)";
  NormForward cut = fwd;
  cut.y.pop_back();
  EXPECT_THROW(norm_backward(p, good, cut), InputError) << "y short";
}

INSTANTIATE_TEST_SUITE_P(Norm, NormVariant, ::testing::ValuesIn(kVariants), variant_name);
INSTANTIATE_TEST_SUITE_P(Norm, NormNoResidual,
                         ::testing::Values(Variant{false, NormKind::RmsNorm},
                                           Variant{false, NormKind::LayerNorm}),
                         variant_name);

}  // namespace
}  // namespace flashsim::test
