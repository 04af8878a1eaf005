#pragma once
// The simulator's hardware profile of the CUDA device in use, for launch choices and predictions made at run time
// (decode's split count, decode-bench's predicted column): the built-in profile its name matches, else the H100's
// (the GPU the models are calibrated on); the H100's where no device is usable. Defined in
// decode/decode_versions.cpp, its first user.
#include "flashsim/sim/hardware.h"

namespace flashsim::gpu {

const sim::HardwareProfile& device_profile();

}  // namespace flashsim::gpu
