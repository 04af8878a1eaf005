#pragma once
// The statistical check of a kernel that draws its own dropout mask (its own RNG, so no golden can hold its
// mask): the fraction of kept entries among n draws of Bernoulli(1 - p) must lie within a two-sided bound
// derived from the binomial at a stated false-alarm rate alpha (the probability that a correct RNG fails).
//   kept ~ Binomial(n, q), q = 1 - p;  sd(kept / n) = sqrt(p q / n)
//   normal (n p q >= 10):  |kept / n - q| <= z sqrt(p q / n) + 1 / (2 n),  z = Phi^-1(1 - alpha / 2)
//                          (the normal approximation with the continuity correction)
//   hoeffding (smaller):   |kept / n - q| <= sqrt(ln(2 / alpha) / (2 n))  (valid for every n, looser)
//   p = 0:                 every entry kept (half width 0)
// flash-attention's own tests check their dropout the same way: the kept fraction against 1 - p.
#include <cstdint>
#include <string>
#include <vector>

namespace flashsim {

struct KeepFractionBound {
  int64_t n = 0;           // draws that count (visible (i, j) entries of the mask)
  double p = 0;            // dropout probability
  double false_alarm = 0;  // alpha
  double expected = 1;     // q = 1 - p
  double half_width = 0;   // the allowed |kept / n - q|
  double z = 0;            // the normal quantile (method "normal"), else 0
  std::string method;      // "normal", "hoeffding" or "exact" (p = 0)
  double lo() const { return expected - half_width; }
  double hi() const { return expected + half_width; }
};

// Throws InputError for n < 1, p outside [0, 1) or alpha outside (0, 1).
KeepFractionBound keep_fraction_bound(int64_t n, double p, double false_alarm);

struct KeepFractionCheck {
  KeepFractionBound bound;
  int64_t kept = 0;
  double fraction = 0;  // kept / n
  double z_score = 0;   // (fraction - q) / sqrt(p q / n); 0 when p = 0
  bool ok = false;      // fraction within [lo, hi]
};
KeepFractionCheck check_keep_fraction(int64_t kept, int64_t n, double p, double false_alarm);
// The same over a mask (!= 0: kept), every entry counting.
KeepFractionCheck check_keep_mask(const std::vector<uint8_t>& mask, double p, double false_alarm);

// The standard normal quantile Phi^-1(1 - tail) for tail in (0, 0.5] (bisection on erfc, to 1e-12).
double normal_upper_quantile(double tail);

}  // namespace flashsim
