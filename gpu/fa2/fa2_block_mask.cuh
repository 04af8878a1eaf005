#pragma once
// Block-sparse walks of fa2-v1's kernels: which items of a CTA's loop (the forward's key blocks, the backward's
// (query head, query block) steps) a block mask leaves active, as two bitmaps in shared memory built once per
// CTA: bit k of any[k / 32] (some block-mask tile the item's rows and keys overlap is active: the item is
// computed) and of all[k / 32] (every one is: no element of it is masked by the block mask). Building them
// costs each item's tile arithmetic (integer divisions by the mask's tile) once, spread over the CTA's threads;
// the walks then read words of shared memory (measured: re-evaluating the mask along the walk cost ~300 cycles
// a skipped block, which left a 1/8-dense mask at 0.41x of the dense time instead of ~1/8).
#include <cstdint>

namespace flashsim::gpu::fa2 {

// Words of one bitmap of `items` bits.
__host__ __device__ constexpr int bitmap_words(int items) {
  return (items + 31) / 32;
}
// Shared-memory bytes of the two bitmaps of at most `items` items.
__host__ __device__ constexpr int block_mask_bitmap_bytes(int items) {
  return 2 * 4 * bitmap_words(items);
}

// Fills any[0 .. words) and all[0 .. words) for items [0, items); flags(k, any, all) gives item k's. Every thread
// of the CTA calls it (kThreads of them, whole warps); a __syncthreads follows the last write.
template <int kThreads, class Flags>
__device__ void build_block_bitmaps(uint32_t* any, uint32_t* all, int items, Flags&& flags) {
  const int tid = static_cast<int>(threadIdx.x), lane = tid % 32;
  for (int base = tid - lane; base < items; base += kThreads) {
    const int k = base + lane;
    bool f_any = false, f_all = false;
    if (k < items) flags(k, f_any, f_all);
    const uint32_t w_any = __ballot_sync(0xffffffffu, f_any), w_all = __ballot_sync(0xffffffffu, f_all);
    if (lane == 0) {
      any[base / 32] = w_any;
      all[base / 32] = w_all;
    }
  }
  __syncthreads();
}

__device__ inline bool bitmap_test(const uint32_t* words, int k) {
  return (words[k >> 5] >> (k & 31)) & 1u;
}
// The largest set bit below k (-1: none).
__device__ inline int bitmap_prev(const uint32_t* words, int k) {
  for (int at = k - 1; at >= 0; at = (at & ~31) - 1) {
    const uint32_t bits = words[at >> 5] & (0xffffffffu >> (31 - (at & 31)));  // bits 0 .. at % 32
    if (bits) return (at & ~31) + 31 - __clz(bits);
  }
  return -1;
}
// The smallest set bit at k or above (items: none).
__device__ inline int bitmap_next(const uint32_t* words, int k, int items) {
  for (int at = k; at < items; at = (at | 31) + 1) {
    const uint32_t bits = words[at >> 5] & (0xffffffffu << (at & 31));  // bits at % 32 .. 31
    if (bits) {
      const int found = (at & ~31) + __ffs(bits) - 1;
      return found < items ? found : items;
    }
  }
  return items;
}
// Set bits of items [0, items).
__device__ inline int bitmap_count(const uint32_t* words, int items) {
  int n = 0;
  for (int w = 0; w < bitmap_words(items); ++w) n += __popc(words[w]);
  return n;
}

}  // namespace flashsim::gpu::fa2
