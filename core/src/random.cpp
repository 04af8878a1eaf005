#include "flashsim/random.h"

#include <cmath>
#include <numbers>

namespace flashsim {

uint64_t splitmix64(uint64_t x) {
  // Steele, Lea, Flood: "Fast splittable pseudorandom number generators" (2014), the finalizer of SplitMix64.
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

double uniform_open01(uint64_t seed, uint64_t stream, uint64_t n) {
  const uint64_t bits = splitmix64(splitmix64(seed ^ (stream * 0x9E3779B97F4A7C15ull)) + n);
  // (k + 0.5) / 2^53 for the top 53 bits k: strictly inside (0, 1).
  return (static_cast<double>(bits >> 11) + 0.5) * 0x1.0p-53;
}

double standard_normal(uint64_t seed, uint64_t stream, uint64_t n) {
  const double u1 = uniform_open01(seed, stream, 2 * n);
  const double u2 = uniform_open01(seed, stream, 2 * n + 1);
  // Box-Muller: sqrt(-2 ln u1) cos(2 pi u2).
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
}

}  // namespace flashsim
