#pragma once
// The planted-bug versions' descriptions, one function per version file (test_versions.cpp registers them).
#include "flashsim/gpu/kernel.h"

namespace flashsim::gpu {

KernelVersion fa2_v1_heads_first();  // fa2/fa2_v1_heads_first.cpp: a planted traffic bug

}  // namespace flashsim::gpu
