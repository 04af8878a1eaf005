#pragma once
// A TrafficObserver that counts what the CPU reference algorithms move, per kernel, in the same form as the
// schedules' counts; it also tracks the peak of live (loaded, not yet released) tile bytes per CTA.
#include <map>
#include <string>

#include "flashsim/problem.h"
#include "flashsim/ref/traffic.h"
#include "flashsim/sim/counts.h"

namespace flashsim::sim {

class CountingObserver : public ref::TrafficObserver {
 public:
  explicit CountingObserver(const AttentionProblem& p) : p_(p) {}
  void kernel_begin(const KernelStep& step) override;  // counted under the step's kernel model name
  void kernel_end() override {}
  void cta_begin(int64_t, int64_t, int64_t) override;
  void cta_end() override {}
  void access(const ref::TileAccess& tile) override;
  void release(ref::TensorId tensor) override;

  const std::map<std::string, KernelCounts>& kernels() const { return kernels_; }
  int64_t peak_live_bytes() const { return peak_; }

 private:
  int elem_bytes(ref::TensorId t) const;
  const AttentionProblem& p_;
  std::map<std::string, KernelCounts> kernels_;
  KernelCounts* cur_ = nullptr;
  std::map<ref::TensorId, int64_t> live_;
  int64_t live_total_ = 0, peak_ = 0;
};

}  // namespace flashsim::sim
