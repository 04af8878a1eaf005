#pragma once
// The seeded input generator. Counter-based, so element n of a stream is the same whatever the thread count
// or the order elements are drawn in, and independent of the standard library (unlike
// std::normal_distribution):
//   u = splitmix64(seed ^ stream * 0x9E3779B97F4A7C15 + n): 64 random bits for element n of stream `stream`;
//   normal(n) = Box-Muller on two 53-bit uniforms taken from elements 2n and 2n+1 (cosine branch only).
// The integer part is bit-exact everywhere; the normals use libm log/cos/sqrt (glibc: same bits on every
// run).
#include <cstdint>

namespace flashsim {

uint64_t splitmix64(uint64_t x);
// A uniform double in (0, 1): 53 random bits, never 0.
double uniform_open01(uint64_t seed, uint64_t stream, uint64_t n);
// A standard normal sample.
double standard_normal(uint64_t seed, uint64_t stream, uint64_t n);

}  // namespace flashsim
