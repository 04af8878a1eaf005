#pragma once
// Traits of fa2-fwd-v1's kernel (fa2_fwd_kernel.cuh): tile shapes, the warp partition, the tensor-core tiling
// and the shared-memory layout, all compile-time, from the template arguments
// <kHeadDim, kBlockM (Br), kBlockN (Bc), kNWarps, kStages, Element>.
//
// Work split (FlashAttention-2's): one CTA per (query block, batch, head); warp w owns query rows
// [w * kWarpRows, (w + 1) * kWarpRows) of the block for the whole kernel, so S = Q K^T, the softmax
// statistics, P and O = P V of a row never leave the warp (no shared-memory exchange of S or O, the point of
// FA2's "split Q" over FA1's "split K"). Every warp reads the whole K and V block from shared memory.
//
// Tensor cores: mma.sync.aligned.m16n8k16 (bf16 / fp16 in, fp32 accumulate). A warp's rows are kMTiles
// m16 tiles; S of a key block is kMTiles x kSTiles n8 tiles (kQkSteps k16 steps over the head dim); O is
// kMTiles x kOTiles n8 tiles (kPvSteps k16 steps over the key block). The C fragment of two adjacent n8
// tiles of S is, element for element, the A fragment of one k16 step of P V, so P goes from the S
// accumulators to the P V operands in registers (rounded to the input dtype, as FA2) with no shuffle.
//
// Shared memory (dynamic, in this order):
//   sQ  [kBlockM][kPitch]              the Q tile, loaded once; reused at the end to stage O for 16-byte stores
//   sK  [kStages][kBlockN][kPitch]     K blocks (kStages buffers)
//   sV  [kStages][kBlockN][kPitch]     V blocks
// kPitch = kHeadDim + 8 elements: each row is padded by one 16-byte chunk. A row is then an odd number of
// 16-byte chunks (d/8 + 1 = 9, 13, 17, 33), so the 8 row addresses of one 8x8 ldmatrix matrix (8 rows, 16
// bytes each) fall in 8 different 16-byte bank groups: conflict-free ldmatrix (and ldmatrix.trans for V),
// conflict-free 16-byte cp.async writes and O staging stores. Padding rather than an XOR swizzle because it
// also works for d = 96 (12 chunks a row: an XOR over 8 chunks would leave the row) and costs 1/17 of the
// shared memory at d = 128.
#include <cstddef>
#include <cstdint>

namespace flashsim::gpu::fa2 {

template <int kHeadDim_, int kBlockM_, int kBlockN_, int kNWarps_, int kStages_, class Element_>
struct Fa2FwdTraits {
  using Element = Element_;                   // __nv_bfloat16 or __half: the input, P and output dtype
  static constexpr int kHeadDim = kHeadDim_;  // d (= head_dim_v): 64, 96, 128, 256
  static constexpr int kBlockM = kBlockM_;    // Br: query rows per CTA
  static constexpr int kBlockN = kBlockN_;    // Bc: key rows per K/V block
  static constexpr int kNWarps = kNWarps_;
  static constexpr int kStages = kStages_;  // K/V buffers: 1 (FA2's K/V ping-pong) or more (block prefetch)
  static constexpr int kThreads = kNWarps * 32;

  // ---- warp partition and mma tiling
  static constexpr int kWarpRows = kBlockM / kNWarps;  // query rows a warp owns
  static constexpr int kMTiles = kWarpRows / 16;       // m16 tiles per warp
  static constexpr int kSTiles = kBlockN / 8;          // n8 tiles of S (keys) per m16 tile
  static constexpr int kQkSteps = kHeadDim / 16;       // k16 steps of S = Q K^T
  static constexpr int kOTiles = kHeadDim / 8;         // n8 tiles of O (head dim) per m16 tile
  static constexpr int kPvSteps = kBlockN / 16;        // k16 steps of O += P V

  // ---- register budget (per thread): the fp32 accumulators live across the whole key loop.
  // O: kMTiles * kOTiles * 4, S/P: kMTiles * kSTiles * 4. On top: the A/B fragments ptxas keeps in flight
  // (it prefetches ~12 ldmatrix.x4 = 48 registers ahead of the MMAs), the softmax statistics (m, l: 4 per
  // m tile), the copy and ldmatrix addressing and loop state (~15); the total has to stay under 255:
  //   d64  Br128 w4: 2 * ( 8 + 8) * 4 = 128 accumulators   (plain kernel: ~222 registers, no spills)
  //   d96  Br128 w4: 2 * (12 + 8) * 4 = 160                (~250, no spills)
  //   d128 Br128 w4: 2 * (16 + 8) * 4 = 192                (255, 32-60 bytes of spilled loop invariants;
  //                                                         FA2's own Br128 Bc64 w4 spills 172 bytes on sm80)
  //   d256 Br64  w4: 1 * (32 + 8) * 4 = 160                (~252, no spills; Br128 w4 would need 320)
  // Problem constants (row strides, scale * log2 e) are kernel parameters read as constant-bank operands, and
  // the per-row window limits are recomputed in the blocks that need them, to keep them out of registers.
  static constexpr int kAccRegs = kMTiles * (kOTiles + kSTiles) * 4;

  // ---- shared memory
  static constexpr int kChunk = 16 / static_cast<int>(sizeof(Element));  // elements per 16-byte cp.async
  static constexpr int kRowChunks = kHeadDim / kChunk;                   // 16-byte chunks per tile row
  static constexpr int kPitch = kHeadDim + kChunk;                       // padded row, in elements
  static constexpr int kQElems = kBlockM * kPitch;
  static constexpr int kKvElems = kBlockN * kPitch;  // one K (or V) buffer
  static constexpr size_t kSmemBytes =
      static_cast<size_t>(kQElems + 2 * kStages * kKvElems) * sizeof(Element);
  // Q and K/V tiles are copied by all threads, kChunk elements (16 bytes) per cp.async.
  // A row takes kRowSlots threads of a copy pass (kRowChunks rounded up to a power of two: d96's 12 chunks
  // take 16 slots, 4 idle), so a pass is whole rows and a thread steps one source pointer by a pass.
  static constexpr int kRowSlots = kRowChunks <= 8 ? 8 : kRowChunks <= 16 ? 16 : 32;
  static constexpr int kOChunksPerLane = kWarpRows * kRowChunks / 32;  // O: each warp stores its own rows

  static_assert(sizeof(Element) == 2, "mma.m16n8k16 with fp16 / bf16 operands");
  static_assert(kHeadDim % 16 == 0 && kHeadDim <= 256, "head dim: k16 steps of Q K^T, n16 pairs of P V");
  static_assert(kBlockM % (16 * kNWarps) == 0, "each warp owns whole m16 tiles");
  static_assert(kBlockN % 16 == 0, "Bc: k16 steps of P V, n16 pairs of ldmatrix.x4 on K");
  static_assert(kStages >= 1 && kStages <= 4, "K/V buffers");
  static_assert((kPitch * sizeof(Element) / 16) % 2 == 1, "odd 16-byte chunks per row: no bank conflicts");
  static_assert(kRowSlots >= kRowChunks && kThreads % kRowSlots == 0 &&
                    kBlockN % (kThreads / kRowSlots) == 0 && kBlockM % (kThreads / kRowSlots) == 0,
                "tile copies: whole rows per pass, whole passes per tile");
  static_assert((kWarpRows * kRowChunks) % 32 == 0, "O stores split evenly over the warp");
  static_assert(kAccRegs <= 192, "accumulators beyond 192 registers leave too little for fragments: spills");
};

}  // namespace flashsim::gpu::fa2
