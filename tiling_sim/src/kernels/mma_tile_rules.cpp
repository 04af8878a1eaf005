// The tiles mma.sync kernels can run (KernelModel::tile_rule): a warp's MMA covers 16 rows by 8 columns in
// steps 16 deep (m16n8k16), so the rows a warp owns and the blocks a product runs over come in multiples of 16.
#include <fmt/format.h>

#include "fa2_backward_ncu.h"
#include "kernels.h"

namespace flashsim::sim::kernels {

namespace {

// A block of `size` rows (field, its flag) that must come in whole 16-row MMA tiles; `why` says which product
// tiles it.
std::optional<TileRuleBreak> whole_m16_tiles(int64_t size, const char* field, const char* flag,
                                             const char* why) {
  if (size % 16 == 0) return std::nullopt;
  return TileRuleBreak{field, fmt::format("{} {}: {}: it must be a multiple of 16", flag, size, why)};
}

}  // namespace

std::optional<TileRuleBreak> mma16_forward_tile_rule(const TileConfig& c) {
  if (auto b = whole_m16_tiles(c.block_q, "block_q", "--block-q",
                               "the query block (Br) is made of 16-row MMA tiles"))
    return b;
  return whole_m16_tiles(c.block_k, "block_k", "--block-k",
                         "the key block (Bc) is the depth of O += P V's 16-deep MMA steps");
}

std::optional<TileRuleBreak> fa2_forward_tile_rule(const TileConfig& c) {
  // FlashAttention-2's forward: warp w owns Br / warps query rows, in whole m16 tiles (its tiled MMA spans 16 x
  // warps rows).
  if (c.block_q % (16 * c.warps) != 0)
    return TileRuleBreak{
        c.block_q % 16 == 0 ? "warps" : "block_q",
        fmt::format(
            "--block-q {} with --warps {}: each of the forward's {} warps owns whole 16-row MMA tiles of "
            "the query block, so Br must be a multiple of {} (16 x warps)",
            c.block_q, c.warps, c.warps, 16 * c.warps)};
  return mma16_forward_tile_rule(c);
}

std::optional<TileRuleBreak> fa2_backward_tile_rule(const TileConfig& c) {
  if (auto b = whole_m16_tiles(c.bwd_block_q, "bwd_block_q", "--bwd-block-q",
                               "dQ += dS K runs over 16-row MMA tiles of the backward's query block"))
    return b;
  if (auto b =
          whole_m16_tiles(c.bwd_block_k, "bwd_block_k", "--bwd-block-k",
                          "each warp owns 16-row MMA tiles of the backward's key block (its dK, dV rows)"))
    return b;
  // 2 x warps warps (fa2_backward_threads) share the key block's m16 tiles: each owns whole tiles, or the warps
  // of a tile split its head dim in equal parts.
  const int64_t warps = fa2_backward_threads(c) / 32, tiles = c.bwd_block_k / 16;
  if (tiles % warps != 0 && warps % tiles != 0)
    return TileRuleBreak{
        "warps",
        fmt::format("--warps {}: the backward runs 2 x {} = {} warps over the {} 16-row key tiles of "
                    "--bwd-block-k {}: one count must divide the other (each warp owns whole tiles, or "
                    "a tile's warps split its head dim)",
                    c.warps, c.warps, warps, tiles, c.bwd_block_k)};
  return std::nullopt;
}

}  // namespace flashsim::sim::kernels
