#pragma once
// The keys a query row sees, as one range, for fa3-v1's masked blocks (forward and backward). A masked block
// tests each score against its row's range: the column of a thread's score register is the thread's first
// column plus a compile-time offset (the accumulator's layout), so against the range made relative to that
// first column a score costs two compares with immediates and a select. The per-score test it replaces (key
// past the end, left and right window edges, each with the window's flags) ran ~13 instructions a score and
// made a masked d64 step cost ~3 us more than an unmasked one (ncu, H200, 2026-11-29: calibration
// fa3.mask_cost_h200).

namespace flashsim::gpu::fa3 {

// Keys [lo, hi) of query `row` of a bottom-right aligned window (-1: unbounded) over lq queries and lk keys.
struct VisibleKeys {
  int lo, hi;
};
__device__ __forceinline__ VisibleKeys visible_keys(int window_left, int window_right, int row, int lq,
                                                    int lk) {
  const int diag = row + lk - lq;  // the key on the row's diagonal
  return {window_left < 0 ? 0 : diag - window_left, min(lk, window_right < 0 ? lk : diag + window_right + 1)};
}

}  // namespace flashsim::gpu::fa3
