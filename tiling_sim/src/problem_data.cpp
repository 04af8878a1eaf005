// The block table and block mask the decode and block-sparse schedules read (problem_data.h).
#include "flashsim/sim/problem_data.h"

#include <fmt/format.h>

#include <algorithm>

#include "flashsim/error.h"
#include "flashsim/inputs.h"
#include "flashsim/kv_cache.h"

namespace flashsim::sim {

ProblemData problem_data(const AttentionProblem& p, uint64_t seed) {
  ProblemData d;
  if (p.kv_cache()) d.block_table = make_block_table(p, seed);
  if (p.block_mask != BroadcastShape::None) d.block_mask = make_block_mask_tensor(p, seed);
  return d;
}

void check_problem_data(const AttentionProblem& p, const ProblemData& d) {
  if (p.kv_cache()) {
    const int64_t want = p.batch * p.max_blocks_per_seq();
    if (static_cast<int64_t>(d.block_table.size()) != want)
      throw InputError("block_table",
                       fmt::format("has {} entries, the problem's table {}", d.block_table.size(), want));
    for (int64_t b = 0; b < p.batch; ++b)
      for (int64_t i = 0; i < p.cache_pages(b); ++i) {
        const int32_t page = d.block_table[static_cast<size_t>(b * p.max_blocks_per_seq() + i)];
        if (page < 0 || page >= p.cache_num_blocks())
          throw InputError("block_table", fmt::format("sequence {} page {} is {}, outside [0, {})", b, i,
                                                      page, p.cache_num_blocks()));
      }
  }
  if (p.block_mask != BroadcastShape::None &&
      static_cast<int64_t>(d.block_mask.size()) != p.block_mask_elems())
    throw InputError("block_mask", fmt::format("has {} entries, the problem's mask {}", d.block_mask.size(),
                                               p.block_mask_elems()));
}

namespace {

// Whether some (any = true) or every (any = false) block-mask tile the rectangle overlaps is active.
bool scan_tiles(const AttentionProblem& p, const ProblemData& d, int64_t b, int64_t h, int64_t q0, int64_t nq,
                int64_t k0, int64_t nk, bool any) {
  if (nq <= 0 || nk <= 0) return false;
  if (p.block_mask == BroadcastShape::None) return true;
  // The (b, h) plane of q tiles x k tiles, found without block_mask_shape()'s vector: this runs once a tile of
  // every kernel's closed form and launch list (a sweep's configs over a block-masked problem).
  const int64_t q_tiles = p.mask_q_blocks(), k_tiles = p.mask_k_blocks();
  const int64_t plane = p.broadcast_index(p.block_mask, b, h, 0, 0) / (p.seqlen_q * p.seqlen_k);
  const uint8_t* m = d.block_mask.data() + plane * q_tiles * k_tiles;
  const int64_t qt1 = std::min(q_tiles - 1, (q0 + nq - 1) / p.block_mask_q);
  const int64_t kt1 = std::min(k_tiles - 1, (k0 + nk - 1) / p.block_mask_k);
  for (int64_t qt = q0 / p.block_mask_q; qt <= qt1; ++qt)
    for (int64_t kt = k0 / p.block_mask_k; kt <= kt1; ++kt)
      if ((m[qt * k_tiles + kt] != 0) == any) return any;
  return !any;
}

}  // namespace

bool tile_active(const AttentionProblem& p, const ProblemData& d, int64_t b, int64_t h, int64_t q0,
                 int64_t nq, int64_t k0, int64_t nk) {
  return scan_tiles(p, d, b, h, q0, nq, k0, nk, true);
}

bool tile_fully_active(const AttentionProblem& p, const ProblemData& d, int64_t b, int64_t h, int64_t q0,
                       int64_t nq, int64_t k0, int64_t nk) {
  return scan_tiles(p, d, b, h, q0, nq, k0, nk, false);
}

int64_t cache_row(const AttentionProblem& p, const ProblemData& d, int64_t b, int64_t j) {
  const int64_t page = d.block_table[static_cast<size_t>(b * p.max_blocks_per_seq() + j / p.page_size)];
  return page * p.page_size + j % p.page_size;
}

int64_t strided_sectors(int64_t addr0, int64_t rows, int64_t pitch, int64_t cols, int eb) {
  if (rows <= 0 || cols <= 0) return 0;
  const int64_t len = cols * eb, step = pitch * eb, a = addr0 * eb;
  const auto row_sectors = [&](int64_t start) { return (start + len - 1) / 32 - start / 32 + 1; };
  if (pitch == cols)  // one contiguous range
    return (a + rows * len - 1) / 32 - a / 32 + 1;
  if (step - len >= 32) {
    // No two rows share a sector; a row's count depends on its start modulo 32, which repeats every
    // 32 / gcd(step, 32) rows.
    int64_t period = 1;
    while (period < 32 && (period * step) % 32 != 0) ++period;
    int64_t once = 0, tail = 0;
    for (int64_t r = 0; r < period && r < rows; ++r) {
      const int64_t n = row_sectors(a + r * step);
      once += n;
      if (r < rows % period) tail += n;
    }
    return rows < period ? once : rows / period * once + tail;
  }
  int64_t n = 0, last = -1;  // rows closer than a sector: count the sectors the union touches, row by row
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t s0 = (a + r * step) / 32, s1 = (a + r * step + len - 1) / 32;
    n += s1 - std::max(s0, last + 1) + 1;
    last = s1;
  }
  return n;
}

int64_t paged_sectors(const AttentionProblem& p, const ProblemData& d, int64_t b, int64_t hk, int64_t k0,
                      int64_t n, int64_t dim, int elem_bytes) {
  int64_t sectors = 0;
  for (int64_t j = k0; j < k0 + n;) {
    const int64_t run = std::min(k0 + n, (j / p.page_size + 1) * p.page_size) - j;  // keys left in this page
    sectors += strided_sectors((cache_row(p, d, b, j) * p.heads_kv + hk) * dim, run, p.heads_kv * dim, dim,
                               elem_bytes);
    j += run;
  }
  return sectors;
}

}  // namespace flashsim::sim
