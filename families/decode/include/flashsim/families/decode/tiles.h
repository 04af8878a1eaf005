#pragma once
// The decode family's tiles at run time: the tile decode-v1 (CUDA cores) or decode-v2 (tensor cores) runs a
// problem with, from the compile-time traits (traits.h). The kernels' launches choose by it, and `flashsim
// traffic compare` reads a profiled kernel's tile back from its template arguments (element, d, dv, rows).
#include <cstdint>

#include "flashsim/families/decode/registers_sm90.h"
#include "flashsim/families/decode/traits.h"

namespace flashsim::gpu::decode {

// The rows a decode-v1 CTA packs for `packed_rows` = seqlen_q x group: 4, 8 or 16 (more run as more CTAs);
// decode-v2's always 16 (an m16 tile).
inline int rows_per_cta(int64_t packed_rows) {
  return packed_rows <= 4 ? 4 : packed_rows <= 8 ? 8 : 16;
}

// An instance's tile: packed rows and keys a tile, threads, stages, shared-memory bytes.
struct DecodeTile {
  int rows = 0, block_k = 0, threads = 0, stages = 0, smem_bytes = 0;
  int registers = 0;  // a thread's, as compiled for sm_90 (registers_sm90.h; 0: not listed there)
};
template <int kElemBytes, int D, int DV, int kRows>
constexpr DecodeTile tile_of() {
  using Tr = DecodeTraits<kElemBytes, D, DV, kRows>;
  return {kRows, Tr::kBlockK, Tr::kThreads, Tr::kStages, Tr::kSmemBytes};
}

// An instance's registers a thread from the sm_90 table, 0 where it has none.
inline int registers_sm90(bool tensor_cores, int elem_bytes, int d, int dv, int rows) {
  for (const DecodeRegisters& r : kDecodeRegistersSm90)
    if (r.tensor_cores == tensor_cores && r.elem_bytes == elem_bytes && r.d == d && r.dv == dv &&
        r.rows == rows)
      return r.registers;
  return 0;
}

// The head dims the family is written for: (d, dv) of (64, 64), (128, 128), (128, 64) (MLA-like narrower
// values), (256, 256).
inline bool head_dims_supported(int d, int dv) {
  return (d == 64 && dv == 64) || (d == 128 && (dv == 128 || dv == 64)) || (d == 256 && dv == 256);
}

// The split kernels: decode-v1's on CUDA cores (fp32, fp16, bf16) and decode-v2's on tensor cores (fp16, bf16).
enum class Split { CudaCores, TensorCores };

namespace detail {
template <int kB, int kD, int kDv>
DecodeTile tile_by_rows(int rows) {
  if (rows == 4) return tile_of<kB, kD, kDv, 4>();
  if (rows == 8) return tile_of<kB, kD, kDv, 8>();
  if (rows == 16) return tile_of<kB, kD, kDv, 16>();
  return {};
}
template <int kD, int kDv>
DecodeTile mma_tile() {
  using Tr = DecodeMmaTraits<kD, kDv>;
  return {Tr::kRows, Tr::kBlockK, Tr::kThreads, Tr::kStages, Tr::kSmemBytes};
}
inline DecodeTile mma_tile_by_dims(int d, int dv) {
  if (d == 64 && dv == 64) return mma_tile<64, 64>();
  if (d == 128 && dv == 128) return mma_tile<128, 128>();
  if (d == 128 && dv == 64) return mma_tile<128, 64>();
  if (d == 256 && dv == 256) return mma_tile<256, 256>();
  return {};
}
template <int kB>
DecodeTile tile_by_dims(int d, int dv, int rows) {
  if (d == 64 && dv == 64) return tile_by_rows<kB, 64, 64>(rows);
  if (d == 128 && dv == 128) return tile_by_rows<kB, 128, 128>(rows);
  if (d == 128 && dv == 64) return tile_by_rows<kB, 128, 64>(rows);
  if (d == 256 && dv == 256) return tile_by_rows<kB, 256, 256>(rows);
  return {};
}
}  // namespace detail

// The tile of (split kernel, element bytes, d, dv, packed rows); rows = 0 when no such instance exists.
inline DecodeTile decode_tile(Split split, int elem_bytes, int d, int dv, int64_t packed_rows) {
  const bool mma = split == Split::TensorCores;
  DecodeTile t;
  if (mma) {
    t = elem_bytes == 2 ? detail::mma_tile_by_dims(d, dv) : DecodeTile{};
  } else {
    const int rows = rows_per_cta(packed_rows);
    t = elem_bytes == 2   ? detail::tile_by_dims<2>(d, dv, rows)
        : elem_bytes == 4 ? detail::tile_by_dims<4>(d, dv, rows)
                          : DecodeTile{};
  }
  if (t.rows > 0) t.registers = registers_sm90(mma, elem_bytes, d, dv, t.rows);
  return t;
}

}  // namespace flashsim::gpu::decode
