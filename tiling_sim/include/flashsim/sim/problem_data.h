#pragma once
// What the decode and block-sparse schedules read besides the problem's shapes: the block table of a paged KV
// cache (which pages hold a sequence's keys, so which addresses a key tile touches) and the block-sparse mask
// (which tiles a kernel skips). Both are drawn from the inputs' seed as make_random_inputs draws them, so a
// prediction with --seed S is for the inputs `ref` and `golden` build with the same seed.
#include <cstdint>
#include <vector>

#include "flashsim/problem.h"

namespace flashsim::sim {

struct ProblemData {
  std::vector<int32_t> block_table;  // [batch, max_blocks_per_seq] when p.kv_cache(), else empty
  std::vector<uint8_t> block_mask;   // p.block_mask_shape() when p.block_mask != None, else empty
};

// The block table (make_block_table) and block mask (make_block_mask_tensor) of seed `seed`.
ProblemData problem_data(const AttentionProblem& p, uint64_t seed = 0);
// Throws InputError naming the field when a table or mask does not have the problem's size.
void check_problem_data(const AttentionProblem& p, const ProblemData& d);

// Whether the rectangle of query rows [q0, q0 + nq) and keys [k0, k0 + nk) of sequence b, query head h,
// overlaps an active block-mask tile (positions within the sequence). True without a block mask; false for
// an empty rectangle. A tiled kernel computes such a tile and skips the others (their scores are all masked).
bool tile_active(const AttentionProblem& p, const ProblemData& d, int64_t b, int64_t h, int64_t q0,
                 int64_t nq, int64_t k0, int64_t nk);
// Whether every block-mask tile that rectangle overlaps is active (no score of it is masked by the block
// mask: a kernel's per-score mask test is not needed there). True without a block mask; false for an empty
// rectangle.
bool tile_fully_active(const AttentionProblem& p, const ProblemData& d, int64_t b, int64_t h, int64_t q0,
                       int64_t nq, int64_t k0, int64_t nk);

// The paged cache's row (of num_blocks * page_size) holding key j of sequence b:
// block_table[b][j / page_size] * page_size + j % page_size. Kv head hk's elements of it start at element
// (row * heads_kv + hk) * dim.
int64_t cache_row(const AttentionProblem& p, const ProblemData& d, int64_t b, int64_t j);

// 32-byte sectors of the rows of one kv head that keys [k0, k0 + n) of sequence b occupy in the paged cache
// (`dim` elements of `elem_bytes` a row): each run of keys within one page is counted on its own, the sectors
// its rows' bytes touch at their actual addresses (a page row holds heads_kv * dim elements; with one kv head
// a run's rows are one contiguous range). The closed form; the executed schedule counts its moves' rows.
int64_t paged_sectors(const AttentionProblem& p, const ProblemData& d, int64_t b, int64_t hk, int64_t k0,
                      int64_t n, int64_t dim, int elem_bytes);

// 32-byte sectors of `rows` rows of `cols` elements of `eb` bytes whose first element is at element address
// addr0 and whose rows start `pitch` elements apart (pitch >= cols): the sectors the rows' bytes touch.
int64_t strided_sectors(int64_t addr0, int64_t rows, int64_t pitch, int64_t cols, int eb);

}  // namespace flashsim::sim
