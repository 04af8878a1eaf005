#pragma once
// One case's buffers on a version's backend: the inputs in their stored dtypes, the outputs filled with NaN (so
// that an element no launch writes fails the verification), the version's workspace zeroed.
#include "device_memory.h"
#include "flashsim/gpu/kernel.h"
#include "flashsim/inputs.h"

namespace flashsim::gpu {

// With `backward` (the version's backward will run), dout is uploaded, dq, dk, dv (and dbias with a bias)
// allocated, and the workspace allocated and zeroed.
DeviceArgs upload_case(DeviceMemory& mem, const AttentionProblem& p, const AttentionInputs& in,
                       const KernelVersion& v, const TileConfig& c, bool backward);

}  // namespace flashsim::gpu
