#pragma once
// Limits of decode-v1's kernels that the host checks before a launch.
namespace flashsim::gpu::decode {

// The combine keeps a row's split weights in shared memory (decode_combine_kernel); FlashAttention-2's heuristic
// caps its splits at 128 too.
inline constexpr int kMaxCombinedSplits = 128;

}  // namespace flashsim::gpu::decode
