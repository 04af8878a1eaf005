#pragma once
// One case's buffers on a version's backend: the inputs in their stored dtypes, the outputs filled with NaN (so
// that an element no launch writes fails the verification), the version's workspace zeroed.
#include "device_memory.h"
#include "flashsim/gpu/kernel.h"
#include "flashsim/inputs.h"

namespace flashsim::gpu {

// dout is uploaded, and dq, dk, dv (and dbias with a bias) allocated, when the version has a backward.
DeviceArgs upload_case(DeviceMemory& mem, const AttentionProblem& p, const AttentionInputs& in,
                       const KernelVersion& v, const TileConfig& c);

}  // namespace flashsim::gpu
