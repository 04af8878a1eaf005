#pragma once
// decode-v1's compile-time tile (traits): per element type and head dims, the keys a tile holds, the rows a CTA
// packs, the thread layout of its two products and the shared-memory plan. Host and device code read it (the
// launch table and the simulator's tile come from here).
#include <cstdint>

namespace flashsim::gpu::decode {

// Elements of a 16-byte chunk (one cp.async, one vector load).
template <int kElemBytes>
constexpr int chunk_elems() {
  return 16 / kElemBytes;
}

// The largest power of two <= x (x >= 1).
constexpr int floor_pow2(int x) {
  int p = 1;
  while (p * 2 <= x) p *= 2;
  return p;
}

// kRows: packed query rows a CTA computes (rows = seqlen_q x the group's query heads, pack GQA), 4, 8 or 16:
// each thread keeps kRows x 8 fp32 accumulators of O (kRows 16: 128 registers, the most that leaves room for
// two 128-thread CTAs an SM at 255 registers a thread). More rows run as more CTAs (grid x), each reading K, V.
template <int kElemBytes, int D, int DV, int kRows>
struct DecodeTraits {
  static_assert(kRows == 4 || kRows == 8 || kRows == 16, "a CTA packs 4, 8 or 16 rows");
  static_assert(D % 64 == 0 && DV % 64 == 0, "head dims are multiples of 64 (whole 128-byte rows)");
  static constexpr int kRowsPerCta = kRows;
  // 4 warps: enough threads to keep a tile's cp.async chunks in flight (a d128 bf16 tile is 2048 chunks, 16 a
  // thread) while two CTAs share an SM; decoding is memory-bound, so fewer threads a CTA and more CTAs an SM.
  static constexpr int kThreads = 128;
  static constexpr int kWarps = kThreads / 32;
  static constexpr int kVec = chunk_elems<kElemBytes>();
  // Keys a tile: K and V of a tile fill at most 32 KiB (a stage), clamped to [16, 128]: with 2 stages and two
  // CTAs an SM, ~64 KiB an SM is in flight, above the ~20 KiB that 3.35 TB/s x ~800 ns of DRAM latency spread
  // over 132 SMs needs. d128 bf16: 64 keys; d64: 128; d256: 32.
  static constexpr int kKeyBytes = (D + DV) * kElemBytes;
  static constexpr int kBlockK = floor_pow2(32768 / kKeyBytes) > 128  ? 128
                                 : floor_pow2(32768 / kKeyBytes) < 16 ? 16
                                                                      : floor_pow2(32768 / kKeyBytes);
  // 3 stages: two tiles load while one computes. A CTA streams at most what it keeps in flight per DRAM round
  // trip (~1 us), so one tile in flight (2 stages) capped a CTA near 32 KB/us: too slow for short batches.
  static constexpr int kStages = 3;
  // S = Q K^T: kThreadsPerKey threads share a key's dot product, each over every kThreadsPerKey-th 16-byte chunk
  // of the key's row, summed by shuffles.
  static constexpr int kThreadsPerKey = kThreads / kBlockK;
  static_assert(kThreadsPerKey >= 1 && kThreadsPerKey <= 8, "1..8 threads a key");
  static constexpr int kKChunks = D / kVec;  // 16-byte chunks of a K row
  static_assert(kKChunks % kThreadsPerKey == 0, "a K row splits evenly over its threads");
  // O += P V: a thread owns one 16-byte column chunk of O and every kKeyGroups-th key of the tile.
  static constexpr int kVChunks = DV / kVec;
  static constexpr int kKeyGroups = kThreads / kVChunks;
  static_assert(kThreads % kVChunks == 0 && kBlockK % kKeyGroups == 0, "V chunks tile the threads and keys");
  // Shared memory, bytes. K rows are unpadded, their 16-byte chunks XOR-swizzled (k_chunk_slot) so that 8
  // consecutive threads' reads (1 to 8 keys, 8 to 1 chunks each) land on distinct bank groups.
  static constexpr int kKStride = D * kElemBytes;
  static constexpr int kVStride =
      DV * kElemBytes;  // 8 consecutive threads read 8 consecutive chunks of a row
  static_assert(kKStride / 16 >= 8, "a K row holds at least 8 chunks (the swizzle's span)");
  // The copy: a pass of the CTA's threads covers kThreads / chunks-a-row keys; each thread keeps its keys' cache
  // rows in registers for the K and the V copies of a tile.
  static constexpr int kKKeysPerPass = kThreads / (kKStride / 16);
  static constexpr int kVKeysPerPass = kThreads / (kVStride / 16);
  static_assert(kThreads % (kKStride / 16) == 0 && kThreads % (kVStride / 16) == 0, "rows of whole passes");
  static constexpr int kStageBytes = kBlockK * (kKStride + kVStride);
  // After the loop the stages hold the key groups' partial O (fp32) for their sum.
  static constexpr int kReduceBytes = kKeyGroups * kRows * DV * 4;
  static constexpr int kKvBytes = kStages * kStageBytes > kReduceBytes ? kStages* kStageBytes : kReduceBytes;
  static constexpr int kQBytes = kRows * D * 4;               // Q in fp32
  static constexpr int kSBytes = kRows * kBlockK * 4;         // the tile's scores, then P
  static constexpr int kRowStatBytes = 3 * kRows * 4;         // alpha, m, l a row
  static constexpr int kLookupBytes = kStages * kBlockK * 8;  // each stage's keys' cache rows (lookup_rows)
  static constexpr int kSmemBytes = kKvBytes + kQBytes + kSBytes + kRowStatBytes + kLookupBytes;
};

}  // namespace flashsim::gpu::decode

namespace flashsim::gpu::decode {

// decode-v2's tile (tensor cores, fp16 / bf16): 16 packed rows (one m16 tile of mma.sync m16n8k16; rows past the
// pack are zeros), 64 keys a tile split over the 4 warps (16 keys a warp: one k16 step of P V), each warp with
// its own online softmax over its keys and the four merged once at the end, so a tile needs no barrier between
// its products. K and V rows are unpadded, their 16-byte chunks XOR-swizzled by row (ldmatrix reads 8 rows of
// one chunk).
template <int D, int DV>
struct DecodeMmaTraits {
  static_assert(D % 64 == 0 && DV % 64 == 0,
                "head dims are multiples of 64 (8 chunks a row: the swizzle's span)");
  static constexpr int kThreads = 128, kWarps = 4;
  static constexpr int kRows = 16;
  static constexpr int kKeysPerWarp = 16;
  static constexpr int kBlockK = kWarps * kKeysPerWarp;
  // 3 stages (2 tiles in flight while one computes) where two CTAs an SM still fit: d128 K and V are 32 KiB a
  // tile, 96 KiB a CTA; d256's 64 KiB tiles take 2 stages (one CTA an SM).
  static constexpr int kStages = D + DV > 256 ? 2 : 3;
  static constexpr int kKStride = D * 2, kVStride = DV * 2;
  static constexpr int kStageBytes = kBlockK * (kKStride + kVStride);
  static constexpr int kReduceBytes = kWarps * kRows * DV * 4;  // the warps' O, merged after the loop
  static constexpr int kKvBytes = kStages * kStageBytes > kReduceBytes ? kStages* kStageBytes : kReduceBytes;
  static constexpr int kQBytes = kRows * D * 2;
  static constexpr int kStatBytes = 2 * kWarps * kRows * 4;   // each warp's m and l a row
  static constexpr int kLookupBytes = kStages * kBlockK * 8;  // each stage's keys' cache rows (lookup_rows)
  static constexpr int kSmemBytes = kKvBytes + kQBytes + kStatBytes + kLookupBytes;
  static constexpr int kKKeysPerPass = kThreads / (kKStride / 16);
  static constexpr int kVKeysPerPass = kThreads / (kVStride / 16);
};

}  // namespace flashsim::gpu::decode
