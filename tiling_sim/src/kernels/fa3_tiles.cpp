#include "fa3_tiles.h"

namespace flashsim::sim::kernels {

void add_box(CtaBuilder& x, ref::AccessKind k, ref::TensorId t, int64_t head, const std::vector<int64_t>& cu,
             int64_t b, int64_t row0, int64_t rows, int64_t cols) {
  const int64_t g0 = cu[static_cast<size_t>(b)] + row0;
  const int64_t g1 = g0 + box_rows(g0, rows, cu.back());
  for (int64_t g = g0; g < g1;) {
    while (cu[static_cast<size_t>(b) + 1] <= g) ++b;
    const int64_t end = std::min(g1, cu[static_cast<size_t>(b) + 1]);
    x.add(k, t, b, head, g - cu[static_cast<size_t>(b)], end - g, cols, x.e);
    g = end;
  }
  if (k == ref::AccessKind::Load)  // the rows past the tensor's end, after its last sequence's
    x.add_zero_fill(t, b, head, g1 - cu[static_cast<size_t>(b)], rows - (g1 - g0), cols, x.e);
}

}  // namespace flashsim::sim::kernels
