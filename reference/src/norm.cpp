// RMSNorm and LayerNorm forward and backward, exact and through a kernel's pipeline (ref/norm.h).
#include "flashsim/ref/norm.h"

#include <fmt/format.h>
#include <omp.h>

#include <cmath>
#include <type_traits>

#include "flashsim/error.h"

namespace flashsim::ref {

namespace {

constexpr int kLanes = 32;         // a warp's lanes: the Tree order's strided partials over a row
constexpr int64_t kRowBlock = 64;  // rows per CTA partial of dweight / dbias in the Tree order

// One pipeline: A is the arithmetic type (double for Exact and for fp64 problems, float otherwise).
template <class A>
struct Pipeline {
  const NormProblem& p;
  const NormOptions& opt;
  bool round_outputs;  // Emulated: outputs stored in the problem's dtype
  NormOrder order;     // Exact sums stay sequential in fp64

  int threads() const { return opt.threads > 0 ? opt.threads : omp_get_max_threads(); }
  A out(A v) const { return round_outputs ? static_cast<A>(round_to(static_cast<double>(v), p.dtype)) : v; }

  // sum_i term(i), i < n, in the pipeline's order
  template <class F>
  A row_sum(int64_t n, F term) const {
    if (order == NormOrder::Sequential) {
      A s = 0;
      for (int64_t i = 0; i < n; ++i) s += term(i);
      return s;
    }
    A lane[kLanes] = {};
    for (int64_t i = 0; i < n; ++i) lane[i % kLanes] += term(i);  // lane l: i = l, l + 32, ...
    for (int w = kLanes / 2; w >= 1; w /= 2)                      // butterfly: lane l += lane l + w
      for (int l = 0; l < w; ++l) lane[l] += lane[l + w];
    return lane[0];
  }

  // sum over rows r of term(r) for one column, in the pipeline's order
  template <class F>
  A column_sum(F term) const {
    if (order == NormOrder::Sequential) {
      A s = 0;
      for (int64_t r = 0; r < p.rows; ++r) s += term(r);
      return s;
    }
    std::vector<A> part;  // one partial per block of kRowBlock rows, then summed pairwise
    for (int64_t r0 = 0; r0 < p.rows; r0 += kRowBlock) {
      A s = 0;
      for (int64_t r = r0; r < std::min(p.rows, r0 + kRowBlock); ++r) s += term(r);
      part.push_back(s);
    }
    for (size_t w = 1; w < part.size(); w *= 2)
      for (size_t i = 0; i + w < part.size(); i += 2 * w) part[i] += part[i + w];
    return part[0];
  }

  NormForward forward(const NormInputs& in) const {
    const int64_t n = p.hidden;
    const A inv_n = A(1) / static_cast<A>(n);
    const A eps = static_cast<A>(p.eps);
    NormForward f;
    f.y.resize(p.elems());
    f.rstd.resize(p.rows);
    if (p.residual) f.h.resize(p.elems());
    if (p.has_bias()) f.mean.resize(p.rows);
#pragma omp parallel for schedule(static) num_threads(threads())
    for (int64_t r = 0; r < p.rows; ++r) {
      const int64_t o = r * n;
      std::vector<A> h(n);
      for (int64_t j = 0; j < n; ++j) {
        const A x = static_cast<A>(in.x[o + j]);
        h[j] = p.residual ? out(x + static_cast<A>(in.residual[o + j])) : x;  // h = x + residual, stored
        if (p.residual) f.h[o + j] = h[j];
      }
      A mean = 0, rstd;
      if (p.kind == NormKind::RmsNorm) {
        const A ms = row_sum(n, [&](int64_t j) { return h[j] * h[j]; }) * inv_n;  // ms = mean(h^2)
        rstd = A(1) / std::sqrt(ms + eps);                                        // rstd = 1/sqrt(ms + eps)
      } else {
        mean = row_sum(n, [&](int64_t j) { return h[j]; }) * inv_n;  // mean = sum(h) / N
        const A var = row_sum(n, [&](int64_t j) { return (h[j] - mean) * (h[j] - mean); }) *
                      inv_n;                 // var = sum((h - mean)^2) / N
        rstd = A(1) / std::sqrt(var + eps);  // rstd = 1/sqrt(var + eps)
        f.mean[r] = mean;
      }
      f.rstd[r] = rstd;
      for (int64_t j = 0; j < n; ++j) {
        const A y = (h[j] - mean) * rstd * static_cast<A>(in.weight[j]);  // y = xhat w (+ b)
        f.y[o + j] = out(p.has_bias() ? y + static_cast<A>(in.bias[j]) : y);
      }
    }
    return f;
  }

  NormGradients backward(const NormInputs& in, const NormForward& fwd) const {
    const int64_t n = p.hidden;
    const A inv_n = A(1) / static_cast<A>(n);
    const std::vector<double>& hs = p.residual ? fwd.h : in.x;  // the h the forward stored
    std::vector<A> xhat(p.elems());
    NormGradients g;
    g.dx.resize(p.elems());
#pragma omp parallel for schedule(static) num_threads(threads())
    for (int64_t r = 0; r < p.rows; ++r) {
      const int64_t o = r * n;
      const A rstd = static_cast<A>(fwd.rstd[r]);
      const A mean = p.has_bias() ? static_cast<A>(fwd.mean[r]) : A(0);
      std::vector<A> gw(n);
      for (int64_t j = 0; j < n; ++j) {
        xhat[o + j] = (static_cast<A>(hs[o + j]) - mean) * rstd;              // xhat = (h - mean) rstd
        gw[j] = static_cast<A>(in.dy[o + j]) * static_cast<A>(in.weight[j]);  // g = dy w
      }
      const A c1 = row_sum(n, [&](int64_t j) { return gw[j] * xhat[o + j]; }) * inv_n;  // c1 = mean(g xhat)
      const A c2 = p.has_bias() ? row_sum(n, [&](int64_t j) { return gw[j]; }) * inv_n : A(0);  // mean(g)
      for (int64_t j = 0; j < n; ++j)
        g.dx[o + j] = out(rstd * (gw[j] - (xhat[o + j] * c1 + c2)));  // dh = rstd (g - xhat c1 - c2)
    }
    if (p.residual) g.dresidual = g.dx;  // h = x + residual: both get dh
    g.dweight.resize(n);
    if (p.has_bias()) g.dbias.resize(n);
#pragma omp parallel for schedule(static) num_threads(threads())
    for (int64_t j = 0; j < n; ++j) {
      // dweight = sum_r dy xhat, dbias = sum_r dy
      g.dweight[j] =
          out(column_sum([&](int64_t r) { return static_cast<A>(in.dy[r * n + j]) * xhat[r * n + j]; }));
      if (p.has_bias())
        g.dbias[j] = out(column_sum([&](int64_t r) { return static_cast<A>(in.dy[r * n + j]); }));
    }
    return g;
  }
};

template <class F>
auto dispatch(const NormProblem& p, const NormOptions& opt, F run) {
  const bool exact = opt.precision == Precision::Exact;
  if (exact || p.dtype == DType::F64)  // fp64 kernels accumulate in fp64
    return run(Pipeline<double>{p, opt, !exact, exact ? NormOrder::Sequential : opt.order});
  return run(Pipeline<float>{p, opt, opt.precision == Precision::Emulated, opt.order});
}

void check_size(const char* name, size_t got, int64_t want) {
  if (static_cast<int64_t>(got) != want)
    throw InputError(name, fmt::format("the forward's {} has {} elements, the problem needs {} (a forward of "
                                       "another problem?)",
                                       name, got, want));
}

}  // namespace

NormForward norm_forward(const NormProblem& p, const NormInputs& in, const NormOptions& opt) {
  in.validate(p);
  return dispatch(p, opt, [&](const auto& pipe) { return pipe.forward(in); });
}

NormGradients norm_backward(const NormProblem& p, const NormInputs& in, const NormForward& fwd,
                            const NormOptions& opt) {
  in.validate(p);
  if (in.dy.empty()) throw InputError("dy", "the backward needs dy (the gradient of y)");
  check_size("y", fwd.y.size(), p.elems());
  check_size("rstd", fwd.rstd.size(), p.rows);
  check_size("mean", fwd.mean.size(), p.has_bias() ? p.rows : 0);
  check_size("h", fwd.h.size(), p.residual ? p.elems() : 0);
  return dispatch(p, opt, [&](const auto& pipe) { return pipe.backward(in, fwd); });
}

}  // namespace flashsim::ref
