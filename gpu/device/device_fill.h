#pragma once
// Inputs made on the device, for timing: no host copy and no transfer, at sizes the host generator
// (make_random_inputs, which holds doubles) cannot take, e.g. a full [B, H, Sq, Sk] bias at seqlen 16K (17 GB in
// bf16).
#include <cstdint>

#include "flashsim/dtype.h"

namespace flashsim::gpu {

// dst[i] = N(0, 1) * scale rounded to t (bf16, fp16 or fp32), from a counter-based hash of (seed, i): the same
// values for the same arguments, whatever the launch. Asynchronous on the default stream.
void fill_normal_device(void* dst, int64_t n, DType t, uint64_t seed, float scale = 1.f);

}  // namespace flashsim::gpu
