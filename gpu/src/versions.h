#pragma once
// The production kernel versions' descriptions, one function per version file (registry.cpp lists them).
#include "flashsim/gpu/kernel.h"

namespace flashsim::gpu {

KernelVersion host_emulated_v1();  // src/host_emulated.cpp
KernelVersion naive_v1();          // naive/naive_v1.cu
KernelVersion fa2_v1();            // fa2/fa2_v1.cpp (fa2_fwd_v1.cu, fa2_bwd_v1.cu)
KernelVersion fa3_v1();            // fa3/fa3_v1.cpp (Hopper; built with CUTLASS's headers only)
KernelVersion three_pass_v1();     // streaming/three_pass_v1.cu
KernelVersion two_pass_v1();       // streaming/two_pass_v1.cu
KernelVersion decode_v1();         // decode/decode_versions.cpp (decode_launch.cu)
KernelVersion decode_v2();         // decode/decode_versions.cpp (tensor cores)

}  // namespace flashsim::gpu
