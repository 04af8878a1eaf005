#include "flashsim/tile_config.h"

#include <fmt/format.h>

#include "flashsim/error.h"

namespace flashsim {

namespace {
// No GPU tile or CPU cache block is anywhere near this; larger values are typos.
constexpr int64_t kMaxBlock = 1 << 16;

void check_block(int64_t v, const char* field) {
  if (v < 1 || v > kMaxBlock)
    throw InputError(field, fmt::format("must be in [1, {}], got {}", kMaxBlock, v));
}
}  // namespace

void TileConfig::validate() const {
  check_block(block_q, "block_q");
  check_block(block_k, "block_k");
  check_block(bwd_block_q, "bwd_block_q");
  check_block(bwd_block_k, "bwd_block_k");
  // 32 warps = 1024 threads, CUDA's limit per block.
  if (warps < 1 || warps > 32) throw InputError("warps", fmt::format("must be in [1, 32], got {}", warps));
  if (stages < 1 || stages > 8) throw InputError("stages", fmt::format("must be in [1, 8], got {}", stages));
  // flash-attention caps its split heuristic at 128 splits; more would be a typo.
  if (num_splits < 1 || num_splits > 1024)
    throw InputError("num_splits", fmt::format("must be in [1, 1024], got {}", num_splits));
}

std::string TileConfig::describe() const {
  return fmt::format("Br{} Bc{} w{} st{}{}{}{} bwd Br{} Bc{} dq:{}", block_q, block_k, warps, stages,
                     q_in_registers ? " Qreg" : "", kv_shared_buffer ? " KVshared" : "", splits_text(),
                     bwd_block_q, bwd_block_k, dq_strategy_name(dq_strategy));
}

std::string TileConfig::describe(Algorithm a) const {
  return fmt::format("Br{} Bc{} w{} st{}{}{}{} {} bwd Br{} Bc{} dq:{}", block_q, block_k, warps, stages,
                     q_in_registers ? " Qreg" : "", kv_shared_buffer ? " KVshared" : "", splits_text(),
                     algorithm_name(a), bwd_block_q, bwd_block_k, dq_strategy_name(dq_strategy));
}

std::string TileConfig::splits_text() const {
  return num_splits > 1 ? fmt::format(" splits{}", num_splits) : std::string();
}

std::string_view dq_strategy_name(DqStrategy d) {
  return d == DqStrategy::Atomic ? "atomic" : "partials";
}
DqStrategy parse_dq_strategy(std::string_view s) {
  if (s == "atomic") return DqStrategy::Atomic;
  if (s == "partials") return DqStrategy::Partials;
  throw InputError("dq_strategy", "expected atomic or partials, got '" + std::string(s) + "'");
}

}  // namespace flashsim
