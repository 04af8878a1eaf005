#pragma once
// Integer division the simulator's block and tile counts share (b > 0).
#include <cstdint>

namespace flashsim::sim {

// ceil(a / b) for a >= 0
inline int64_t ceil_div(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}

// floor(a / b) for any sign of a (a window's edges can lie before the first key)
inline int64_t floor_div(int64_t a, int64_t b) {
  return a >= 0 ? a / b : -((-a + b - 1) / b);
}

// ceil(a / b) for any sign of a
inline int64_t ceil_div_any(int64_t a, int64_t b) {
  return -floor_div(-a, b);
}

}  // namespace flashsim::sim
