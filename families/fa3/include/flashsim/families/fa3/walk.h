#pragma once
// fa3-v1's forward: the order of its tiles and the balanced walk of a persistent grid (Fa3FwdParams::walk in
// gpu/fa3/fa3_fwd_params.h). Header-only, no CUDA: the launch (gpu/fa3/fa3_v1.cpp) builds the walk the kernel
// reads, the simulator's fwd_fa3 model builds the same one.
//
// The static walk (CTA i runs tiles i, i + grid, ...) deals causal tiles of 1 .. num_m key blocks unevenly: the
// head groups' 16 x num_m tiles drift against the 132 CTAs each round, so a CTA that starts on heavy tiles keeps
// them (mean over max CTA work 0.71 at b16 h16 n1024 d128 causal; ncu on an H200: the SMs busy 77% of the
// kernel's cycles). The balanced walk hands each tile, in the same order, to the CTA with the least work so far
// (what a dynamic scheduler does when the tiles cost what the rule says; 0.97-0.99 on the same problems; the
// SMs busy 96%), built on the host by the launch (kept for its next launch of the same problem): the kernel
// reads its CTA's list and carries no atomic counter and no hand-off between its warpgroups (a dynamic walk
// that did lost 7-9% where the static one is balanced). Measured: calibration fa3.balanced_walk_h200.
#include <bit>
#include <cstdint>
#include <functional>
#include <queue>
#include <utility>
#include <vector>

namespace flashsim {

// Tile t of the forward (tile_of in gpu/fa3/fa3_fwd_kernel.cuh): query block m = num_m - 1 - t % num_m of
// (batch x heads) index t / num_m; with head groups of G (causal and windows), G (batch, head)s at a time, the
// group's heavy (last) query blocks first, its heads fastest.
struct Fa3TileOrder {
  int64_t num_m = 1, batch_heads = 1, head_group = 0;
  // (batch * heads_q + head, query block) of tile t
  constexpr std::pair<int64_t, int64_t> operator()(int64_t t) const {
    if (head_group <= 0) return {t / num_m, num_m - 1 - t % num_m};
    const int64_t per_group = head_group * num_m, g = t / per_group, in_group = t % per_group;
    const int64_t here =
        batch_heads - g * head_group < head_group ? batch_heads - g * head_group : head_group;
    return {g * head_group + in_group % here, num_m - 1 - in_group / here};
  }
};

// Whether a persistent launch walks balanced: where its tiles are unequal (causal query blocks see 1 .. num_m
// key blocks; varlen sequences differ). The equal tiles of a non-causal fixed-length launch walk statically
// (the balanced walk would deal them as the static walk does, at the cost of a list).
constexpr bool fa3_fwd_walks_balanced(bool persistent, bool causal, bool varlen) {
  return persistent && (causal || varlen);
}

// A tile's cost in key blocks for the walk: its visible key blocks plus its fill and epilogue (Q's load, O's
// store), about head_dim / 32 key blocks: a tile of n steps measured a + b n with a / b = 2.0 at d64 Bc128,
// 3.0 at d96, 4.3 at d128, 11.7 at d256 Bc64 (calibration fa3.step_costs_h100). The walk's balance moves less
// than 3% for any overhead between 0 and 12 on the short causal problems, so one rule serves every instance.
constexpr int64_t fa3_tile_overhead_blocks(int64_t head_dim) {
  return head_dim / 32;
}

// A tile's cost for the walk: the key blocks of block_k that rows [q0, q1) of a sequence of lq queries and lk keys
// see through the window (wl, wr; bottom-right aligned, -1 unbounded: the simulator's visible_key_blocks, which
// the test Fa3Walk.TileCostIsTheVisibleKeyBlocksPlusTheOverhead holds it to), plus fa3_tile_overhead_blocks.
constexpr int64_t fa3_tile_cost(int64_t q0, int64_t q1, int64_t lq, int64_t lk, int64_t wl, int64_t wr,
                                int64_t block_k, int64_t head_dim) {
  const int64_t shift = lk - lq;
  const int64_t lo = wl < 0 ? 0 : (q0 + shift - wl > 0 ? q0 + shift - wl : 0);
  const int64_t hi = wr < 0 ? lk : (q1 + shift + wr < lk ? q1 + shift + wr : lk);
  const int64_t first = lo / block_k, last = hi <= 0 ? 0 : (hi + block_k - 1) / block_k;
  return (last > first ? last - first : 0) + fa3_tile_overhead_blocks(head_dim);
}

// The walk as one int32 array: grid + 1 offsets into the array itself (CTA i runs the tiles at walk[walk[i]] ..
// walk[walk[i + 1] - 1], in order), then the tiles. Bytes of a walk of `tiles` tiles over at most `grid` CTAs:
constexpr int64_t fa3_walk_bytes(int64_t tiles, int64_t grid) {
  return (grid + 1 + tiles) * static_cast<int64_t>(sizeof(int32_t));
}

// The walk's array from each tile's CTA (walk[0 .. grid) holding the per-CTA counts on entry).
inline std::vector<int32_t> fa3_walk_from_ctas(std::vector<int32_t> walk, const std::vector<int32_t>& cta_of,
                                               int64_t grid) {
  // counts -> offsets (grid + 1 of them, into the array itself), then each CTA's tiles in order
  int32_t at = static_cast<int32_t>(grid + 1);
  for (int64_t c = 0; c <= grid; ++c) {
    const int32_t n = c < grid ? walk[static_cast<size_t>(c)] : 0;
    walk[static_cast<size_t>(c)] = at;
    at += n;
  }
  std::vector<int32_t> next(walk.begin(), walk.begin() + grid);
  for (size_t t = 0; t < cta_of.size(); ++t)
    walk[static_cast<size_t>(next[static_cast<size_t>(cta_of[t])]++)] = static_cast<int32_t>(t);
  return walk;
}

// fa3_balanced_walk by a min-heap of (cost so far, CTA): the same choice (least cost, then lowest CTA).
template <class Cost>
std::vector<int32_t> fa3_balanced_walk_heap(int64_t tiles, int64_t grid, Cost cost) {
  using Slot = std::pair<int64_t, int32_t>;
  std::priority_queue<Slot, std::vector<Slot>, std::greater<Slot>> free;
  for (int64_t c = 0; c < grid; ++c) free.emplace(0, static_cast<int32_t>(c));
  std::vector<int32_t> cta_of(static_cast<size_t>(tiles));
  std::vector<int32_t> walk(static_cast<size_t>(grid + 1 + tiles), 0);
  for (int64_t t = 0; t < tiles; ++t) {
    const auto [so_far, cta] = free.top();
    free.pop();
    free.emplace(so_far + static_cast<int64_t>(cost(t)), cta);
    cta_of[static_cast<size_t>(t)] = cta;
    ++walk[static_cast<size_t>(cta)];
  }
  return fa3_walk_from_ctas(std::move(walk), cta_of, grid);
}

// How fa3_balanced_walk finds the least-loaded CTA: a calendar of costs (O(tiles + the costs' span x grid / 64),
// the launch's short problems), a heap (O(tiles log grid), the long ones: a calendar of a 10M-key causal
// problem's 1e9 cost units would not fit in memory), or whichever is cheaper. The same walk either way.
enum class Fa3WalkMethod { Auto, Calendar, Heap };

// Deals tiles 0 .. tiles - 1, in order, each to the CTA with the least cost so far (ties: the lowest CTA, so
// that equal tiles are dealt as the static walk deals them); cost(t) >= 0. The launch builds it for each new
// problem (host time inside the call), so in O(tiles) where it can: the least cost so far never decreases, and a calendar keeps, per cost, the CTAs
// free at it as a bit set (the lowest set bit: the lowest CTA); where the calendar would span more cost units
// than the tiles number, a heap of (cost so far, CTA).
template <class Cost>
std::vector<int32_t> fa3_balanced_walk(int64_t tiles, int64_t grid, Cost cost,
                                       Fa3WalkMethod method = Fa3WalkMethod::Auto) {
  grid = grid < 1 ? 1 : grid;
  const auto words = static_cast<size_t>((grid + 63) / 64);
  // Auto: the calendar scans up to (total / grid + the largest cost) x words slots; past 16 a tile, the heap.
  if (method == Fa3WalkMethod::Auto) {
    int64_t total = 0, largest = 0;
    for (int64_t t = 0; t < tiles; ++t) {
      const int64_t c = static_cast<int64_t>(cost(t));
      total += c;
      largest = c > largest ? c : largest;
    }
    const auto span = static_cast<uint64_t>(total / grid + largest + 1) * words;
    method = span > 16 * static_cast<uint64_t>(tiles) + 4096 ? Fa3WalkMethod::Heap : Fa3WalkMethod::Calendar;
  }
  if (method == Fa3WalkMethod::Heap) return fa3_balanced_walk_heap(tiles, grid, cost);
  std::vector<uint64_t> calendar(words, 0);  // [cost so far][words]
  for (int64_t c = 0; c < grid; ++c) calendar[static_cast<size_t>(c) / 64] |= uint64_t{1} << (c % 64);
  std::vector<int32_t> cta_of(static_cast<size_t>(tiles));
  std::vector<int32_t> walk(static_cast<size_t>(grid + 1 + tiles), 0);  // per-CTA counts first, walk[0..grid)
  size_t now = 0, word = 0;  // the least cost so far; its first word that may have a bit
  for (int64_t t = 0; t < tiles; ++t) {
    while (calendar[now * words + word] == 0)
      if (++word == words) word = 0, ++now;
    uint64_t& bits = calendar[now * words + word];
    const int cta = static_cast<int>(word * 64) + std::countr_zero(bits);
    bits &= bits - 1;
    const auto until = now + static_cast<size_t>(cost(t));
    if (calendar.size() < (until + 1) * words) calendar.resize((until + 1) * words * 2, 0);
    calendar[until * words + static_cast<size_t>(cta) / 64] |= uint64_t{1} << (cta % 64);
    if (until == now && static_cast<size_t>(cta) / 64 < word) word = static_cast<size_t>(cta) / 64;
    cta_of[static_cast<size_t>(t)] = static_cast<int32_t>(cta);
    ++walk[static_cast<size_t>(cta)];
  }
  return fa3_walk_from_ctas(std::move(walk), cta_of, grid);
}

}  // namespace flashsim
