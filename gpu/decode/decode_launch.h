#pragma once
// decode-v1's launch table: the compiled instances (element size x head dims x packed rows) and the launch of a
// problem's three kernels (append, split, combine). Host code; decode_launch.cu holds the instances.
#include <cstdint>

#include "decode_params.h"
#include "decode_traits.h"

namespace flashsim::gpu::decode {

// The rows a decode-v1 CTA packs for `packed_rows` = seqlen_q x group: 4, 8 or 16 (more run as more CTAs);
// decode-v2's always 16 (an m16 tile).
inline int rows_per_cta(int64_t packed_rows) {
  return packed_rows <= 4 ? 4 : packed_rows <= 8 ? 8 : 16;
}

// A compiled instance's tile: packed rows and keys a tile, threads, stages, shared-memory bytes.
struct DecodeTile {
  int rows = 0, block_k = 0, threads = 0, stages = 0, smem_bytes = 0;
};
template <int kElemBytes, int D, int DV, int kRows>
constexpr DecodeTile tile_of() {
  using Tr = DecodeTraits<kElemBytes, D, DV, kRows>;
  return {kRows, Tr::kBlockK, Tr::kThreads, Tr::kStages, Tr::kSmemBytes};
}

// The head dims decode-v1 is written for: (d, dv) of (64, 64), (128, 128), (128, 64) (MLA-like narrower
// values), (256, 256).
bool head_dims_supported(int d, int dv);
// Whether this build compiled the instances of (element bytes, d, dv) (FLASHSIM_DECODE_INSTANCES=ci compiles
// bf16 d128 alone).
bool instances_compiled(int elem_bytes, bool bf16, int d, int dv);
// The split kernels: decode-v1's on CUDA cores (fp32, fp16, bf16) and decode-v2's on tensor cores (fp16, bf16).
enum class Split { CudaCores, TensorCores };

// The tile of (split kernel, element bytes, d, dv, packed rows); rows = 0 when no such instance exists.
DecodeTile decode_tile(Split split, int elem_bytes, int d, int dv, int64_t packed_rows);

// Element type of a launch.
enum class Elem { F32, F16, BF16 };
// Launches append (seqlen_new > 0), split and, with num_splits > 1, combine on `stream` (a cudaStream_t).
void launch_decode(const DecodeParams& p, Split split, Elem elem, void* stream);

}  // namespace flashsim::gpu::decode
