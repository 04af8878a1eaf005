// Counting the reference algorithms' tile moves.
#include "flashsim/sim/counting_observer.h"

#include <algorithm>

#include "flashsim/sim/kernel_model.h"

namespace flashsim::sim {

using ref::TensorId;

void CountingObserver::kernel_begin(const KernelStep& step) {
  cur_ = &kernels_[kernel_model(step).name];
}

void CountingObserver::cta_begin(int64_t, int64_t, int64_t) {
  live_.clear();
  live_total_ = 0;
}

int CountingObserver::elem_bytes(TensorId t) const {
  switch (t) {
    case TensorId::Q:
    case TensorId::K:
    case TensorId::V:
    case TensorId::dO:
    case TensorId::dQ:
    case TensorId::dK:
    case TensorId::dV:
    case TensorId::Bias:
    case TensorId::dBias:
      return dtype_bytes(p_.dtype);
    case TensorId::O:  // bf16 for FP8 inputs
      return dtype_bytes(p_.output_dtype());
    case TensorId::Mask:
      return 1;
    default:
      return 4;
  }
}

void CountingObserver::access(const ref::TileAccess& a) {
  if (!cur_) cur_ = &kernels_["?"];
  const int eb = elem_bytes(a.tensor);
  auto& tt = cur_->tensors[static_cast<size_t>(a.tensor)];
  DirectionBytes& d = a.kind == ref::AccessKind::Load    ? tt.load
                      : a.kind == ref::AccessKind::Store ? tt.store
                                                         : tt.reduce;
  d.bytes += a.rows * a.cols * eb;
  d.sectors += a.rows * ((a.cols * eb + 31) / 32);
  if (a.kind == ref::AccessKind::Load) {
    const int64_t b = a.rows * a.cols * eb;
    live_[a.tensor] += b;
    live_total_ += b;
    peak_ = std::max(peak_, live_total_);
  }
}

void CountingObserver::release(TensorId t) {
  auto it = live_.find(t);
  if (it == live_.end()) return;
  live_total_ -= it->second;
  live_.erase(it);
}

}  // namespace flashsim::sim
