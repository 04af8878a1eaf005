#include "flashsim/dropout_check.h"

#include <fmt/format.h>

#include <cmath>

#include "flashsim/error.h"

namespace flashsim {

double normal_upper_quantile(double tail) {
  if (!(tail > 0 && tail <= 0.5)) throw InputError("tail", fmt::format("must be in (0, 0.5], got {}", tail));
  // P(Z > z) = erfc(z / sqrt 2) / 2 decreases in z; bisect for P(Z > z) = tail on [0, 40] (P(Z > 40) < 1e-300).
  double lo = 0, hi = 40;
  for (int it = 0; it < 200 && hi - lo > 1e-13; ++it) {
    const double mid = 0.5 * (lo + hi);
    if (0.5 * std::erfc(mid / std::sqrt(2.0)) > tail)
      lo = mid;
    else
      hi = mid;
  }
  return 0.5 * (lo + hi);
}

KeepFractionBound keep_fraction_bound(int64_t n, double p, double false_alarm) {
  if (n < 1) throw InputError("n", fmt::format("the check needs at least one draw, got {}", n));
  if (!(p >= 0 && p < 1)) throw InputError("dropout_p", fmt::format("must be in [0, 1), got {}", p));
  if (!(false_alarm > 0 && false_alarm < 1))
    throw InputError("false_alarm", fmt::format("must be in (0, 1), got {}", false_alarm));
  KeepFractionBound b;
  b.n = n;
  b.p = p;
  b.false_alarm = false_alarm;
  b.expected = 1 - p;
  const double nd = static_cast<double>(n), var = p * (1 - p);
  if (p == 0) {
    b.method = "exact";  // no entry may be dropped
  } else if (nd * var >= 10) {
    b.method = "normal";  // z sqrt(p q / n) + 1 / (2 n)
    b.z = normal_upper_quantile(false_alarm / 2);
    b.half_width = b.z * std::sqrt(var / nd) + 0.5 / nd;
  } else {
    b.method = "hoeffding";  // sqrt(ln(2 / alpha) / (2 n))
    b.half_width = std::sqrt(std::log(2 / false_alarm) / (2 * nd));
  }
  return b;
}

KeepFractionCheck check_keep_fraction(int64_t kept, int64_t n, double p, double false_alarm) {
  KeepFractionCheck c;
  c.bound = keep_fraction_bound(n, p, false_alarm);
  if (kept < 0 || kept > n) throw InputError("kept", fmt::format("{} kept of {} draws", kept, n));
  c.kept = kept;
  c.fraction = static_cast<double>(kept) / static_cast<double>(n);
  const double sd = std::sqrt(p * (1 - p) / static_cast<double>(n));
  c.z_score = sd > 0 ? (c.fraction - c.bound.expected) / sd : 0.0;
  c.ok = p == 0 ? kept == n : std::fabs(c.fraction - c.bound.expected) <= c.bound.half_width;
  return c;
}

KeepFractionCheck check_keep_mask(const std::vector<uint8_t>& mask, double p, double false_alarm) {
  int64_t kept = 0;
  for (const uint8_t m : mask) kept += m != 0;
  return check_keep_fraction(kept, static_cast<int64_t>(mask.size()), p, false_alarm);
}

}  // namespace flashsim
