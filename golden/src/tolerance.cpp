#include "flashsim/golden/tolerance.h"

#include <fmt/format.h>

#include <cmath>

#include "flashsim/error.h"

namespace flashsim::golden {

ErrorStats error_stats(const std::vector<double>& exact, const std::vector<double>& got) {
  ErrorStats s;
  double diff2 = 0, exact2 = 0;  // sequential sums: the same bits on every run
  for (size_t n = 0; n < exact.size(); ++n) {
    const double e = exact[n], g = got[n];
    if (!std::isfinite(e)) {
      if (!(g == e)) ++s.inf_mismatch;
      continue;
    }
    if (!std::isfinite(g)) {
      if (s.nonfinite++ == 0) s.first_nonfinite = static_cast<int64_t>(n);
      continue;
    }
    const double d = std::fabs(g - e);
    if (s.worst < 0 || d > s.max_abs) {
      s.worst = static_cast<int64_t>(n);
      s.max_abs = d;
    }
    s.magnitude = std::max(s.magnitude, std::fabs(e));
    diff2 += d * d;
    exact2 += e * e;
  }
  // relL2 = ||got - exact||_2 / ||exact||_2
  s.rel_l2 = exact2 > 0 ? std::sqrt(diff2 / exact2) : (diff2 > 0 ? INFINITY : 0.0);
  s.rel_defined = exact2 > 0;
  return s;
}

int64_t count_above(const std::vector<double>& exact, const std::vector<double>& got, double bound) {
  int64_t n = 0;
  for (size_t i = 0; i < exact.size(); ++i) {
    if (!std::isfinite(exact[i])) {
      n += !(got[i] == exact[i]);
      continue;
    }
    n += !(std::fabs(got[i] - exact[i]) <= bound);  // NaN counts
  }
  return n;
}

double ulp(double x, DType t) {
  const double u = unit_roundoff(t);  // 2^-p: the spacing just above 1 is 2u
  // Smallest exponent of normal numbers: fp64 -1022, fp32 -126, fp16 -14, bf16 -126, e4m3 -6, e5m2 -14.
  const int emin = t == DType::F64                       ? -1022
                   : t == DType::F16 || t == DType::E5M2 ? -14
                   : t == DType::E4M3                    ? -6
                                                         : -126;
  const double ax = std::fabs(x);
  int e = ax > 0 ? std::ilogb(ax) : emin;
  if (e < emin) e = emin;
  return std::ldexp(2 * u, e);  // ulp(x) = 2u * 2^floor(log2|x|)
}

bool is_gradient_output(std::string_view name) {
  return name == "dq" || name == "dk" || name == "dv" || name == "dbias" || name == "dsinks" ||
         name == "dx" || name == "dweight" || name == "dresidual";
}

DType emulated_storage(std::string_view output, DType compute) {
  // Row statistics stay fp32 (as FA2's lse). dsinks is stored in fp32 too, but its error comes from O stored in
  // the compute dtype (D = dO . O): its floor takes that dtype's ulp.
  if (output == "lse" || output == "rstd" || output == "mean")
    return compute == DType::F64 ? DType::F64 : DType::F32;
  if (is_fp8(compute)) return DType::BF16;  // an FP8 kernel's o is bf16 (FlashAttention-3's)
  return compute;
}

namespace {
DType coarser(DType a, DType b) {
  return unit_roundoff(a) >= unit_roundoff(b) ? a : b;
}
}  // namespace

double OutputTolerance::floor_max_abs(DType candidate_storage, double scale) const {
  // the coarser storage's grid: the emulated output's, or the candidate's at its scale
  const DType s = coarser(storage, candidate_storage);
  const double grid = s == candidate_storage ? ulp(magnitude * scale, s) / scale : ulp(magnitude, s);
  return kFloorUlps * grid + accumulation * magnitude;
}
double OutputTolerance::floor_rel_l2(DType candidate_storage) const {
  return unit_roundoff(coarser(storage, candidate_storage)) +
         accumulation;  // one rounding per element, plus A
}
double OutputTolerance::bound_max_abs(DType candidate_storage, double scale) const {
  return factor * emulated_max_abs + floor_max_abs(candidate_storage, scale);
}
double OutputTolerance::bound_rel_l2(DType candidate_storage) const {
  return factor * emulated_rel_l2 + floor_rel_l2(candidate_storage);
}

OutputTolerance make_tolerance(std::string_view output, DType compute, const ErrorStats& emulated,
                               double magnitude, int64_t accumulation_length) {
  OutputTolerance t;
  t.emulated_max_abs = emulated.max_abs;
  // dsinks sums P_sink D over every row of a head, with cancellation: its relative error means nothing, only
  // the max-abs bound applies (rel_l2 undefined, as for an all-zero output).
  t.emulated_rel_l2 = output == "dsinks" ? INFINITY : emulated.rel_l2;
  t.magnitude = magnitude >= 0 ? magnitude : emulated.magnitude;
  t.factor = is_gradient_output(output) ? kBackwardFactor : kForwardFactor;
  t.storage = emulated_storage(output, compute);
  // A = 2 sqrt(L) u_acc: the pipeline accumulates in fp32 (fp64 when computing in fp64)
  const double u_acc = unit_roundoff(compute == DType::F64 ? DType::F64 : DType::F32);
  t.accumulation =
      kAccumulationFactor * std::sqrt(static_cast<double>(std::max<int64_t>(accumulation_length, 0))) * u_acc;
  return t;
}

nlohmann::ordered_json to_json(const OutputTolerance& t) {
  nlohmann::ordered_json j;
  j["emulated_max_abs"] = t.emulated_max_abs;
  // relL2 is undefined on an all-zero exact output (JSON null: only the max-abs bound applies there)
  if (std::isfinite(t.emulated_rel_l2))
    j["emulated_rel_l2"] = t.emulated_rel_l2;
  else
    j["emulated_rel_l2"] = nullptr;
  j["magnitude"] = t.magnitude;
  j["factor"] = t.factor;
  j["floor_abs"] =
      t.floor_max_abs(t.storage);  // for readers: verify derives the floors from the fields below
  j["floor_rel"] = t.floor_rel_l2(t.storage);
  j["accumulation"] = t.accumulation;
  j["storage"] = std::string(dtype_name(t.storage));
  j["max_abs"] = t.bound_max_abs(t.storage);
  if (std::isfinite(t.emulated_rel_l2))
    j["rel_l2"] = t.bound_rel_l2(t.storage);
  else
    j["rel_l2"] = nullptr;
  return j;
}

std::optional<nlohmann::ordered_json> tolerance_row(
    const std::vector<std::string>& names, DType compute,
    const std::function<ErrorStats(const std::string&)>& errors,
    const std::map<std::string, double>& magnitude, int64_t accumulation_length) {
  nlohmann::ordered_json row = nlohmann::ordered_json::object();
  for (const auto& name : names) {
    const ErrorStats e = errors(name);
    if (e.nonfinite > 0 || e.inf_mismatch > 0) return std::nullopt;
    row[name] = to_json(make_tolerance(name, compute, e, magnitude.at(name), accumulation_length));
  }
  return row;
}

OutputTolerance tolerance_from_json(const nlohmann::json& j, const std::string& where) {
  OutputTolerance t;
  auto num = [&](const char* k) {
    if (!j.is_object() || !j.contains(k) || !j[k].is_number())
      throw InputError(where, fmt::format("tolerance has no number '{}'", k));
    const double v = j[k].get<double>();
    if (!(std::isfinite(v) && v >= 0)) throw InputError(where, fmt::format("tolerance '{}' is {}", k, v));
    return v;
  };
  t.emulated_max_abs = num("emulated_max_abs");
  t.emulated_rel_l2 = j.is_object() && j.contains("emulated_rel_l2") && j["emulated_rel_l2"].is_null()
                          ? INFINITY
                          : num("emulated_rel_l2");
  t.magnitude = num("magnitude");
  t.factor = num("factor");
  t.accumulation = num("accumulation");
  if (!j.contains("storage") || !j["storage"].is_string())
    throw InputError(where, "tolerance has no storage");
  t.storage = parse_dtype(j["storage"].get<std::string>());
  return t;
}

}  // namespace flashsim::golden
