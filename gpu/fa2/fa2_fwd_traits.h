#pragma once
// Traits of fa2-v1's forward kernel (fa2_fwd_kernel.cuh): tile shapes, the warp partition, the tensor-core tiling
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
// kPitch = kHeadDim elements: rows are unpadded and XOR-swizzled at 16-byte chunk granularity (FA2's
// layout): logical chunk c of row r is stored at chunk c ^ swz(r) of that row, with
//   d = 64, 128, 256 (a multiple of 8 chunks a row):  swz(r) = r & 7         (within each 128-byte group)
//   d = 96 (12 chunks, 192-byte rows):                 swz(r) = (r >> 1) & 3  (within each 64-byte group)
// * ldmatrix / ldmatrix.trans: the 8 rows of an 8x8 matrix (rows r0..r0+7, r0 % 8 == 0, one logical
//   chunk) land in 8 different 16-byte bank groups: conflict-free (d96: row r starts 4 r mod 8 chunks into
//   the 128-byte bank window, and c ^ ((r >> 1) & 3) moves the chunk within its 4-chunk group).
// * cp.async.cg: the two 16-byte halves (2j, 2j + 1) of a 32-byte global sector stay together in one
//   aligned 32-byte shared slot (the XOR moves the pair as a whole, or swaps its halves), so each sector
//   is fetched from L2 once. The earlier 16-byte row pad put odd rows 16 bytes off a 32-byte boundary and
//   read 1.5x the tile bytes from L2 (a 32-byte pad fixes that but costs ldmatrix bank conflicts).
// * 16-byte cp.async writes, O staging (32-bit stores) and O reads (16-byte loads): conflict-free.
// swz(r) only depends on r & 7, and the swizzle only touches address bits 4-6 (d96: 4-5) of a row whose
// start is 128- (d96: 64-) byte aligned, so the kernel applies it to whole shared addresses with an XOR
// (tile bases are 128-byte aligned) and keeps row / tile offsets as ldmatrix immediates.
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
  static constexpr int kPitch = kHeadDim;                                // unpadded row, in elements
  static constexpr int kRowBytes = kPitch * static_cast<int>(sizeof(Element));
  // swizzle: chunk c of row r at chunk c ^ swz(r); swz(r) <= kSwzMask, a function of r & 7
  static constexpr bool kSwz8 = kRowChunks % 8 == 0;
  static constexpr int kSwzMask = kSwz8 ? 7 : 3;
  __host__ __device__ static constexpr int swz(int r) { return kSwz8 ? (r & 7) : ((r >> 1) & 3); }
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
  static_assert(kRowChunks % 8 == 0 || kRowChunks % 8 == 4, "swizzle: 8-chunk groups, or d96's 4-chunk ones");
  static_assert(((kThreads / kRowSlots) & (kThreads / kRowSlots - 1)) == 0, "copy passes: power-of-two rows");
  static_assert((kBlockM * kRowBytes) % 128 == 0 && (kBlockN * kRowBytes) % 128 == 0,
                "tile buffers 128-byte aligned: the swizzle XORs whole addresses");
  static_assert(kRowSlots >= kRowChunks && kThreads % kRowSlots == 0 &&
                    kBlockN % (kThreads / kRowSlots) == 0 && kBlockM % (kThreads / kRowSlots) == 0,
                "tile copies: whole rows per pass, whole passes per tile");
  static_assert((kWarpRows * kRowChunks) % 32 == 0, "O stores split evenly over the warp");
  static_assert(kAccRegs <= 192, "accumulators beyond 192 registers leave too little for fragments: spills");
};

}  // namespace flashsim::gpu::fa2
