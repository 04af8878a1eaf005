#pragma once
// fa2-v1: FlashAttention-2's forward (fa2_fwd_v1.cu) and backward (fa2_bwd_v1.cu) as one kernel version
// (fa2_v1.cpp registers it). Host-side entry points of the two launch files.
#include <cstddef>
#include <string>

#include "flashsim/gpu/kernel.h"
#include "flashsim/gpu/params.h"

namespace flashsim::gpu::fa2 {

// make_params(p) with the window sides that hide no key (>= Sq + Sk) made -1, as naive-v1 does: the window
// arithmetic then stays far from int overflow.
AttentionParams params_of(const AttentionProblem& p);

// Why the forward / backward cannot run this case ("" when it can).
std::string forward_unsupported(const AttentionProblem& p, const TileConfig& c);
std::string backward_unsupported(const AttentionProblem& p, const TileConfig& c);
// Bytes of the backward's workspace (lse shift, D, the fp32 dQ accumulator or partials, dS for a broadcast bias).
size_t backward_workspace_bytes(const AttentionProblem& p, const TileConfig& c);

void forward(const AttentionProblem& p, const TileConfig& c, const DeviceArgs& args);
void backward(const AttentionProblem& p, const TileConfig& c, const DeviceArgs& args);

}  // namespace flashsim::gpu::fa2
