#pragma once
// The problem flags every subcommand that takes a problem shares (same names everywhere), and the tile flags.
#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "flashsim/problem.h"
#include "flashsim/tile_config.h"

namespace flashsim::app {

struct ProblemFlags {
  int64_t batch = 1, heads = 8, heads_kv = 0, seqlen = 512, seqlen_q = 0, seqlen_k = 0, head_dim = 64,
          head_dim_v = 0;
  std::string dtype = "fp32";
  double scale = 0, softcap = 0, mask_keep = 0.8, dropout_p = 0, amax_fraction = 1;
  std::string descale = "none";
  bool causal = false, alibi = false, sinks = false, mla = false;
  std::string window, bias = "none", mask = "none", varlen;
  uint64_t seed = 0;
  int64_t page_size = 0, num_blocks = 0, seqlen_new = 0;
  std::string cache_seqlens, block_mask, block_mask_shape = "1hqk", block_mask_tile = "128,128";
  const CLI::Option* batch_option =
      nullptr;  // --batch, to tell a given batch from the default (add_to sets it)
  const CLI::Option* head_dim_option = nullptr;  // --head-dim, likewise (--mla's default is 576)

  // Adds --batch --heads --heads-kv --seqlen --seqlen-q --seqlen-k --head-dim --head-dim-v --dtype --scale
  // --causal --window --softcap --bias --mask --mask-keep --alibi --sinks --dropout-p --descale --amax-fraction
  // --mla --varlen --seed, the
  // KV-cache flags (--page-size --cache-seqlens --seqlen-new --num-blocks) and the block-mask flags (--block-mask
  // --block-mask-shape --block-mask-tile) to cmd.
  void add_to(CLI::App* cmd);
  // The problem the flags describe; throws InputError naming the flag for bad values.
  AttentionProblem problem() const;
  // Whether the command line gave the flag ("--heads"); false before add_to or for a flag it did not add.
  bool given(const std::string& flag) const;

 private:
  const CLI::App* cmd_ = nullptr;
};

struct TileFlags {
  int64_t block_q = 128, block_k = 64, bwd_block_q = 64, bwd_block_k = 128;
  int warps = 4, stages = 1;
  bool q_in_registers = false, kv_shared = false;
  std::string dq_strategy = "atomic";
  int64_t num_splits = 1;

  // Adds --block-q --block-k --bwd-block-q --bwd-block-k --warps --stages --q-in-registers --kv-shared
  // --dq-strategy to cmd (the loop order is the algorithm's: --algorithm), and --num-splits without
  // per_version_defaults. With per_version_defaults, the help says that an absent flag keeps the kernel
  // version's own launch tile (flashsim-gpu) instead of a default.
  void add_to(CLI::App* cmd, bool per_version_defaults = false);
  // Every field from the flags (absent ones at their defaults), validated.
  TileConfig config() const;
  // base with the fields of the flags given on the command line replaced, validated (InputError naming the
  // field).
  TileConfig over(TileConfig base) const;

 private:
  using Copy = void (*)(TileConfig& to, const TileConfig& from);  // one field of `from` into `to`
  std::vector<std::pair<CLI::Option*, Copy>> given_;  // over() applies the copies of the options given
};

// --max-memory GiB, the same on every command that allocates; bytes() is 0 (the default limit, 80% of the
// memory available) when the flag is not given.
struct MemoryFlag {
  double gib = 0;
  void add_to(CLI::App* cmd);
  int64_t bytes() const { return static_cast<int64_t>(gib * (1 << 30)); }
};

}  // namespace flashsim::app
