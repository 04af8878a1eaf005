#pragma once
// Traits of fa2-v1's backward kernels (fa2_bwd_kernel.cuh, fa2_bwd_rowwise.cuh): tile shapes, the warp
// partition, the tensor-core tiling and the shared-memory layout, all compile-time, from the template
// arguments <kHeadDim, kBlockM (backward Br: query rows a step), kBlockN (backward Bc: key rows a CTA),
// kNWarps, Element>.
//
// Work split (FlashAttention-2's backward, Dao 2023 Algorithm 2): one CTA per (key block, sequence, kv head);
// the CTA keeps dK and dV of its key block in registers and walks every query block (of every query head of
// its kv head's group) that can see the block. Warp w owns key rows [16 kt, 16 kt + 16), kt = w % kKeyWarps, and
// head-dim part w / kKeyWarps of their dK and dV (kDParts parts: 1 up to d128; 2 at d256, where dK + dV of 16
// rows would take 256 registers), and computes the transposed score tile of those keys against the query block
// (the kDParts warps of a key tile compute the same tile: 2 of the 5 products twice at d256):
//   S^T  = K_w Q^T     (16 keys x Br queries, k = d)        dP^T = V_w dO^T   (same shape)
//   P^T  = exp(S^T - lse) ; dS^T = P^T o (dP^T - D)          (element-wise, fp32, in registers)
//   dV_w += P^T dO     (16 x d, k = Br)                       dK_w += dS^T Q    (16 x d, k = Br)
// The C fragment of two adjacent n8 query tiles of S^T is the A fragment of one k16 step of P^T dO, so P^T
// and dS^T never leave the registers for dK and dV (the key-major "transposed" orientation). Only dQ needs
// dS summed over all of the block's keys, i.e. across warps: the warps write dS^T (input dtype) to shared
// memory, and then
//   dQ = dS K           (Br x d, k = Bc)  warp w: query rows 16 (w % kQWarps), head-dim part w / kQWarps
// is added into the fp32 accumulator (atomics) or stored as this key block's partial (deterministic).
//
// Tensor cores: mma.sync.aligned.m16n8k16 (bf16 / fp16 in, fp32 accumulate), operands by ldmatrix(.trans):
//   S^T: A = K rows (ldmatrix), B = Q rows (ldmatrix)   dV: B = dO (ldmatrix.trans)   dK: B = Q (.trans)
//   dQ:  A = dS from the stored dS^T (ldmatrix.trans),  B = K (ldmatrix.trans)
//
// Shared memory (dynamic, in this order), tiles in the forward's swizzled layout (fa2_fwd_traits.h):
//   sK   [kBlockN][d]          the CTA's K block, loaded once
//   sV   [kBlockN][d]          its V block
//   sQ   [2][kBlockM][d]       the query block's Q, double-buffered (the next block streams in under this one)
//   sdO  [2][kBlockM][d]       dO, double-buffered
//   sdS  [kBlockN][kBlockM]    dS^T of the current step (input dtype), swizzled by key row & 7
//   sLse [2][kBlockM], sD [2][kBlockM]   the lse shift (+inf for a row that sees nothing) and D, fp32
#include <cstddef>
#include <cstdint>

namespace flashsim::gpu::fa2 {

template <int kHeadDim_, int kBlockM_, int kBlockN_, int kNWarps_, class Element_>
struct Fa2BwdTraits {
  using Element = Element_;
  static constexpr int kHeadDim = kHeadDim_;  // d (= head_dim_v): 64, 96, 128, 256
  static constexpr int kBlockM = kBlockM_;    // backward Br: query rows per step
  static constexpr int kBlockN = kBlockN_;    // backward Bc: key rows per CTA
  static constexpr int kNWarps = kNWarps_;
  static constexpr int kThreads = kNWarps * 32;

  // ---- warp partition and mma tiling
  static constexpr int kKeyRows = 16;                     // key rows a warp owns (dK, dV): one m16 tile
  static constexpr int kKeyWarps = kBlockN / kKeyRows;    // warps along the key block
  static constexpr int kDParts = kNWarps / kKeyWarps;     // head-dim parts of dK, dV (warps per key tile)
  static constexpr int kQTiles = kBlockM / 8;             // n8 query tiles of S^T / dP^T per warp
  static constexpr int kQkSteps = kHeadDim / 16;          // k16 steps of S^T = K Q^T (and dP^T)
  static constexpr int kDTiles = kHeadDim / 8 / kDParts;  // n8 head-dim tiles of dK, dV per warp
  static constexpr int kPSteps = kBlockM / 16;            // k16 steps of dV += P^T dO (and dK)
  // dQ = dS K: kQWarps warps along the query rows (an m16 tile each), the rest split the head dim.
  static constexpr int kQWarps = kBlockM / 16;
  static constexpr int kDqSplit = kNWarps / kQWarps;        // head-dim parts of dQ
  static constexpr int kDqTiles = kHeadDim / 8 / kDqSplit;  // n8 head-dim tiles of dQ per warp
  static constexpr int kDqSteps = kBlockN / 16;             // k16 steps over the block's keys
  // dQ's accumulators in passes of at most 8 n8 tiles (32 registers): at d256 the 16 tiles a warp owns would
  // sit on top of dK and dV's 128.
  static constexpr int kDqPasses = kDqTiles > 8 ? kDqTiles / 8 : 1;
  static constexpr int kDqPassTiles = kDqTiles / kDqPasses;

  // ---- register budget (per thread): dK and dV live across the whole CTA; S^T and dP^T across one step.
  //   d64  Br64 Bc128 w8: dK + dV 2 x 32 = 64,  S^T + dP^T 2 x 32 = 64  -> 128 accumulators
  //   d96  Br64 Bc128 w8: 2 x 48 = 96 + 64 = 160
  //   d128 Br64 Bc128 w8: 2 x 64 = 128 + 64 = 192 (FlashAttention-2's d128 backward tile on A100 / H100)
  //   d128 Br64 Bc64  w8: 2 parts of the head dim: 2 x 32 = 64 + 64 = 128 (the score-pipeline kernel's tile)
  //   d256 Br64 Bc64  w8: 2 parts of the head dim: 2 x 64 = 128 + 64 = 192
  // dQ's accumulators (kDqPassTiles * 4: 16 at d64, 32 at d128 and, in two passes, at d256) only live after
  // S^T and dP^T are dead.
  static constexpr int kAccRegs = 2 * kDTiles * 4 + 2 * kQTiles * 4;

  // ---- shared memory: Q, dO, K, V tiles as the forward's (swizzled 16-byte chunks, unpadded rows)
  static constexpr int kChunk = 16 / static_cast<int>(sizeof(Element));
  static constexpr int kRowChunks = kHeadDim / kChunk;
  static constexpr int kPitch = kHeadDim;
  static constexpr int kRowBytes = kPitch * static_cast<int>(sizeof(Element));
  static constexpr bool kSwz8 = kRowChunks % 8 == 0;
  static constexpr int kSwzMask = kSwz8 ? 7 : 3;
  __host__ __device__ static constexpr int swz(int r) { return kSwz8 ? (r & 7) : ((r >> 1) & 3); }
  static constexpr int kRowSlots = kRowChunks <= 8 ? 8 : kRowChunks <= 16 ? 16 : 32;
  // dS^T tile [kBlockN][kBlockM]: rows of kBlockM elements, 16-byte chunk c of row r at c ^ (r & 7).
  static constexpr int kSPitch = kBlockM;
  static constexpr int kSChunks = kBlockM / kChunk;

  static constexpr int kQElems = kBlockM * kPitch;   // one Q (or dO) buffer
  static constexpr int kKvElems = kBlockN * kPitch;  // K (or V)
  static constexpr int kSElems = kBlockN * kSPitch;
  static constexpr size_t kSmemBytes =
      static_cast<size_t>(2 * kKvElems + 4 * kQElems + kSElems) * sizeof(Element) +
      4 * kBlockM * sizeof(float);

  static_assert(sizeof(Element) == 2, "mma.m16n8k16 with fp16 / bf16 operands");
  static_assert(kBlockN % kKeyRows == 0 && kNWarps % kKeyWarps == 0, "each warp owns one m16 tile of keys");
  static_assert(kHeadDim % 16 == 0 && kHeadDim / kDParts <= 128 && kDTiles % 2 == 0,
                "head dim: k16 steps; at most 128 columns of dK + dV in a warp's registers, in n8 pairs");
  static_assert(kDqTiles % kDqPasses == 0 && kDqPassTiles % 2 == 0, "dQ passes of whole n8 pairs");
  static_assert(kBlockM % 16 == 0 && kSChunks % 8 == 0, "Br: k16 steps; dS^T rows a multiple of 128 bytes");
  static_assert(kNWarps % kQWarps == 0 && (kHeadDim / 8) % (2 * kDqSplit) == 0,
                "dQ: whole m16 row tiles per warp, head-dim pairs of n8 tiles per warp");
  static_assert(kRowChunks % 8 == 0 || kRowChunks % 8 == 4, "swizzle: 8-chunk groups, or d96's 4-chunk ones");
  static_assert(kRowSlots >= kRowChunks && kThreads % kRowSlots == 0 &&
                    kBlockN % (kThreads / kRowSlots) == 0 && kBlockM % (kThreads / kRowSlots) == 0,
                "tile copies: whole rows per pass, whole passes per tile");
  static_assert(kThreads >= 2 * kBlockM, "lse and D: one 4-byte copy per thread");
  static_assert(kAccRegs <= 192, "accumulators beyond 192 registers leave too little for fragments: spills");
};

}  // namespace flashsim::gpu::fa2
