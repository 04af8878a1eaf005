#pragma once
// GoogleTest expectations on the simulator's counts, naming the tensor that differs.
#include <gtest/gtest.h>

#include <string>

#include "flashsim/sim/counts.h"

namespace flashsim::test {

// Bytes and sectors loaded, stored and reduced, tensor by tensor.
inline void expect_same_traffic(const sim::KernelCounts& got, const sim::KernelCounts& want,
                                const std::string& what) {
  for (size_t t = 0; t < got.tensors.size(); ++t) {
    const auto name = std::string(ref::tensor_name(static_cast<ref::TensorId>(t)));
    EXPECT_EQ(got.tensors[t].load, want.tensors[t].load) << what << " load " << name;
    EXPECT_EQ(got.tensors[t].store, want.tensors[t].store) << what << " store " << name;
    EXPECT_EQ(got.tensors[t].reduce, want.tensors[t].reduce) << what << " reduce " << name;
  }
}

// The traffic and the work (matrix FLOPs, exps, vector ops).
inline void expect_same_counts(const sim::KernelCounts& got, const sim::KernelCounts& want,
                               const std::string& what) {
  expect_same_traffic(got, want, what);
  EXPECT_DOUBLE_EQ(got.mma_flops, want.mma_flops) << what;
  EXPECT_DOUBLE_EQ(got.exp_ops, want.exp_ops) << what;
  EXPECT_DOUBLE_EQ(got.vector_ops, want.vector_ops) << what;
}

}  // namespace flashsim::test
