#include "flashsim/norm.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "flashsim/error.h"
#include "flashsim/random.h"

namespace flashsim {

std::string_view norm_kind_name(NormKind k) {
  return k == NormKind::RmsNorm ? "rmsnorm" : "layernorm";
}

NormKind parse_norm_kind(std::string_view s) {
  if (s == "rmsnorm") return NormKind::RmsNorm;
  if (s == "layernorm") return NormKind::LayerNorm;
  throw InputError("op", fmt::format("'{}' is not a norm (rmsnorm, layernorm)", s));
}

void NormProblem::validate() const {
  // 2^31 elements: the largest tensor int32 indexing in a kernel reaches, and 16 GiB as doubles here
  constexpr int64_t kMaxElems = int64_t{1} << 31;
  if (rows < 1) throw InputError("rows", fmt::format("must be >= 1, got {}", rows));
  if (hidden < 1) throw InputError("hidden", fmt::format("must be >= 1, got {}", hidden));
  if (rows > kMaxElems / hidden)
    throw InputError("rows", fmt::format("rows x hidden = {} x {} is over 2^31 elements", rows, hidden));
  if (!(std::isfinite(eps) && eps > 0))
    throw InputError("eps", fmt::format("must be finite and > 0, got {}", eps));
}

std::string NormProblem::describe() const {
  return fmt::format("{} {}x{} eps{}{} {}", norm_kind_name(kind), rows, hidden, eps,
                     residual ? " residual" : "", dtype_name(dtype));
}

void NormInputSpec::validate(const NormProblem& p) const {
  if (!(std::isfinite(magnitude) && magnitude > 0))
    throw InputError("magnitude", fmt::format("must be finite and > 0, got {}", magnitude));
  if (!std::isfinite(offset)) throw InputError("offset", fmt::format("must be finite, got {}", offset));
  if (!(std::isfinite(outlier_scale) && outlier_scale > 0))
    throw InputError("outlier_scale", fmt::format("must be finite and > 0, got {}", outlier_scale));
  if (is_fp8(p.dtype))
    throw InputError("dtype",
                     fmt::format("norm cases take fp64, fp32, fp16 or bf16, not {}", dtype_name(p.dtype)));
  if (zero_rows < 0) throw InputError("zero_rows", fmt::format("must be >= 0, got {}", zero_rows));
  if (outlier_rows < 0) throw InputError("outlier_rows", fmt::format("must be >= 0, got {}", outlier_rows));
  // |N(0,1)| from 53-bit uniforms stays under sqrt(-2 ln 2^-53) = 8.57: larger bounds could overflow the dtype
  const double largest =
      (std::fabs(offset) + 8.6 * magnitude) * (outlier_rows > 0 ? std::max(1.0, outlier_scale) : 1.0);
  if (largest > max_finite(p.dtype))
    throw InputError("magnitude",
                     fmt::format("inputs up to {:.3g} would overflow {} (max {:.3g}): lower magnitude, "
                                 "offset or outlier_scale",
                                 largest, dtype_name(p.dtype), max_finite(p.dtype)));
  if (zero_rows + outlier_rows > p.rows)
    throw InputError("zero_rows", fmt::format("zero_rows + outlier_rows = {} is more than the {} rows",
                                              zero_rows + outlier_rows, p.rows));
}

namespace {
// n rows spread evenly over [0, rows) starting at `phase` (0 or 0.5) of a stride: floor((k + phase) rows / n)
std::vector<int64_t> spread(int64_t n, int64_t rows, double phase) {
  std::vector<int64_t> r;
  for (int64_t k = 0; k < n; ++k)
    r.push_back(static_cast<int64_t>(
        std::floor((static_cast<double>(k) + phase) * static_cast<double>(rows) / static_cast<double>(n))));
  return r;
}
}  // namespace

std::vector<int64_t> NormInputSpec::zero_row_indices(int64_t rows) const {
  return spread(zero_rows, rows, 0.0);
}

std::vector<int64_t> NormInputSpec::outlier_row_indices(int64_t rows) const {
  // between the zero rows; where the two would meet (more than half the rows special), the next free row
  std::vector<int64_t> zero = zero_row_indices(rows), out;
  std::vector<bool> taken(rows, false);
  for (int64_t z : zero) taken[z] = true;
  for (int64_t r : spread(outlier_rows, rows, 0.5)) {
    while (taken[r]) r = (r + 1) % rows;
    taken[r] = true;
    out.push_back(r);
  }
  return out;
}

namespace {

void check(const char* name, const std::vector<double>& t, int64_t want, DType dtype) {
  if (std::ssize(t) != want)
    throw InputError(name, fmt::format("has {} elements, the problem needs {}", t.size(), want));
  for (size_t n = 0; n < t.size(); ++n)
    if (!std::isnan(t[n]) && round_to(t[n], dtype) != t[n])
      throw InputError(name,
                       fmt::format("element {} ({}) is not representable in {}", n, t[n], dtype_name(dtype)));
}

// value(i) for every element, rounded to the dtype; InputError when one overflows it.
template <class F>
std::vector<double> draw(const char* name, int64_t n, DType dtype, F value) {
  std::vector<double> t(n);
  bool overflow = false;
#pragma omp parallel for schedule(static) reduction(|| : overflow)
  for (int64_t i = 0; i < n; ++i) {
    t[i] = round_to(value(i), dtype);
    overflow = overflow || !std::isfinite(t[i]);
  }
  if (overflow)
    throw InputError(name, fmt::format("values overflow {} (lower magnitude, offset or outlier_scale)",
                                       dtype_name(dtype)));
  return t;
}

}  // namespace

void NormInputs::validate(const NormProblem& p) const {
  p.validate();
  check("x", x, p.elems(), p.dtype);
  check("weight", weight, p.hidden, p.dtype);
  check("bias", bias, p.has_bias() ? p.hidden : 0, p.dtype);
  check("residual", residual, p.residual ? p.elems() : 0, p.dtype);
  if (!dy.empty()) check("dy", dy, p.elems(), p.dtype);
}

NormInputs make_random_norm_inputs(const NormProblem& p, uint64_t seed, const NormInputSpec& spec) {
  p.validate();
  spec.validate(p);
  // per-row factor of x and residual: 0 on zero rows, outlier_scale on outlier rows, 1 elsewhere
  std::vector<double> row_scale(p.rows, 1.0);
  for (int64_t r : spec.outlier_row_indices(p.rows)) row_scale[r] = spec.outlier_scale;
  std::vector<bool> zero(p.rows, false);
  for (int64_t r : spec.zero_row_indices(p.rows)) zero[r] = true;
  const auto normal = [&](NormStream s, int64_t i) {
    return standard_normal(seed, static_cast<uint64_t>(s), static_cast<uint64_t>(i));
  };
  const int64_t h = p.hidden;
  NormInputs in;
  in.x = draw("x", p.elems(), p.dtype, [&](int64_t i) {
    const int64_t r = i / h;
    return zero[r] ? 0.0 : (spec.offset + spec.magnitude * normal(NormStream::X, i)) * row_scale[r];
  });
  if (p.residual)
    in.residual = draw("residual", p.elems(), p.dtype, [&](int64_t i) {
      return zero[i / h] ? 0.0 : spec.magnitude * normal(NormStream::Residual, i);
    });
  in.weight =
      draw("weight", h, p.dtype, [&](int64_t i) { return 1.0 + 0.25 * normal(NormStream::Weight, i); });
  if (p.has_bias())
    in.bias = draw("bias", h, p.dtype, [&](int64_t i) { return 0.5 * normal(NormStream::Bias, i); });
  in.dy = draw("dy", p.elems(), p.dtype, [&](int64_t i) { return normal(NormStream::dY, i); });
  return in;
}

}  // namespace flashsim
