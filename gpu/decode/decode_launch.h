#pragma once
// decode-v1's and decode-v2's compiled instances (element size x head dims; the tiles: families/decode/) and the
// launch of a problem's three kernels (append, split, combine). Host code; decode_launch.cu holds the instances.
#include <cstdint>

#include "decode_params.h"
#include "flashsim/families/decode/tiles.h"

namespace flashsim::gpu::decode {

// Whether this build compiled the instances of (element bytes, d, dv) (FLASHSIM_DECODE_INSTANCES=ci compiles
// bf16 d128 alone).
bool instances_compiled(int elem_bytes, bool bf16, int d, int dv);

// Element type of a launch.
enum class Elem { F32, F16, BF16 };
// Launches append (seqlen_new > 0), split and, with num_splits > 1, combine on `stream` (a cudaStream_t).
void launch_decode(const DecodeParams& p, Split split, Elem elem, void* stream);

}  // namespace flashsim::gpu::decode
