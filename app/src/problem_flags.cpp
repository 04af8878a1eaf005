#include "flashsim/app/problem_flags.h"

#include <fmt/format.h>

#include <charconv>

#include "flashsim/error.h"

namespace flashsim::app {

namespace {

int64_t parse_int(std::string_view s, const std::string& field) {
  int64_t v = 0;
  const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || ptr != s.data() + s.size())
    throw InputError(field, fmt::format("'{}' is not an integer", s));
  return v;
}

std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> parts;
  size_t start = 0;
  while (true) {
    const size_t pos = s.find(sep, start);
    parts.push_back(s.substr(start, pos == std::string_view::npos ? std::string_view::npos : pos - start));
    if (pos == std::string_view::npos) break;
    start = pos + 1;
  }
  return parts;
}

}  // namespace

bool ProblemFlags::given(const std::string& flag) const {
  if (cmd_ == nullptr) return false;
  try {
    return cmd_->get_option(flag)->count() > 0;
  } catch (const CLI::OptionNotFound&) {
    return false;
  }
}

void ProblemFlags::add_to(CLI::App* cmd) {
  cmd_ = cmd;
  batch_option = cmd->add_option("--batch", batch, "Batch size (sequences)")->capture_default_str();
  cmd->add_option("--heads", heads, "Query heads")->capture_default_str();
  cmd->add_option("--heads-kv", heads_kv, "Key/value heads (GQA/MQA when fewer; default: --heads)");
  cmd->add_option("--seqlen", seqlen, "Sequence length of queries and keys")->capture_default_str();
  cmd->add_option("--seqlen-q", seqlen_q, "Query sequence length (default: --seqlen)");
  cmd->add_option("--seqlen-k", seqlen_k,
                  "Key sequence length (default: --seqlen); with --cache-seqlens, the block table's capacity "
                  "(default: the "
                  "longest sequence)");
  head_dim_option = cmd->add_option("--head-dim", head_dim, "Head dimension of q and k (--mla: 576)")
                        ->capture_default_str();
  cmd->add_option("--head-dim-v", head_dim_v,
                  "Head dimension of v (default: --head-dim; --mla: --head-dim - 64)");
  cmd->add_option("--dtype", dtype, "Input dtype: fp64, fp32, fp16, bf16, e4m3, e5m2 (FP8: forward only)")
      ->capture_default_str();
  cmd->add_option("--scale", scale, "Softmax scale (default: 1/sqrt(head_dim))");
  cmd->add_flag("--causal", causal, "Causal mask, aligned bottom-right");
  cmd->add_option("--window", window, "Sliding window LEFT,RIGHT (-1: unbounded), aligned bottom-right");
  cmd->add_option("--softcap", softcap, "Softcap c > 0: s = c * tanh(s / c)");
  cmd->add_option("--bias", bias, "Additive bias shape: none, bhqk, 1hqk, b1qk, 11qk")->capture_default_str();
  cmd->add_option("--mask", mask, "Boolean mask shape: none, bhqk, 1hqk, b1qk, 11qk")->capture_default_str();
  cmd->add_option("--mask-keep", mask_keep, "Fraction of mask entries that keep their score")
      ->capture_default_str();
  cmd->add_flag("--alibi", alibi, "ALiBi bias: -slope_h * |i + seqlen_k - seqlen_q - j|");
  cmd->add_option(
      "--dropout-p", dropout_p,
      "Dropout probability p, 0 <= p < 1: P' = P o keep / (1 - p), the keep mask drawn from --seed");
  cmd->add_option(
         "--descale", descale,
         "FP8 descale factors: none, per-tensor, per-head (one per batch and kv head); the real value of "
         "a stored q, k, v element is stored * descale")
      ->capture_default_str();
  cmd->add_option(
         "--amax-fraction", amax_fraction,
         "FP8 with descales: the fraction of each group's amax drawn onto the FP8 max (< 1: the largest "
         "values saturate)")
      ->capture_default_str();
  cmd->add_flag("--sinks", sinks,
                "Attention sinks: a logit per q head in every row's softmax denominator (no value vector)");
  cmd->add_flag(
      "--mla", mla,
      "DeepSeek multi-head latent attention: one latent KV head (--heads-kv 1) of d_latent + d_rope "
      "columns (--head-dim, default 576), V its first d_latent (--head-dim-v, default --head-dim - 64)");
  cmd->add_option("--varlen", varlen,
                  "Variable lengths: L1,L2,... (queries = keys) or Q1:K1,Q2:K2,...; sets the batch size");
  cmd->add_option("--seed", seed, "Seed of the input generator")->capture_default_str();
  cmd->add_option("--page-size", page_size,
                  "Paged KV cache: rows a page (0: no cache); keys come from k_cache through a block table");
  cmd->add_option(
      "--cache-seqlens", cache_seqlens,
      "Paged KV cache: cached keys per sequence, L1,L2,... (sets the batch size) or one L for all "
      "(default: seqlen_k - seqlen_new)");
  cmd->add_option("--seqlen-new", seqlen_new,
                  "Paged KV cache: keys appended to each sequence before attending");
  cmd->add_option("--num-blocks", num_blocks, "Paged KV cache: pages in the cache (default: the pages used)");
  cmd->add_option("--block-mask", block_mask,
                  "Block-sparse mask pattern: s2:local=L,stride=S | s2-homo:local=L,stride=S | "
                  "local-sink:local=L,sink=G | random:keep=P");
  cmd->add_option("--block-mask-shape", block_mask_shape, "Block mask dims: bhqk, 1hqk, b1qk, 11qk")
      ->capture_default_str();
  cmd->add_option("--block-mask-tile", block_mask_tile, "Block mask tile Q,K (rows, keys)")
      ->capture_default_str();
}

AttentionProblem ProblemFlags::problem() const {
  AttentionProblem p;
  p.batch = batch;
  p.heads_q = heads;
  p.mla = mla;
  p.heads_kv = heads_kv > 0 ? heads_kv : mla ? 1 : heads;
  if (heads_kv < 0) throw InputError("heads-kv", "must be >= 1");
  p.seqlen_q = seqlen_q != 0 ? seqlen_q : seqlen;
  p.seqlen_k = seqlen_k != 0 ? seqlen_k : seqlen;
  // MLA's defaults: DeepSeek's d_latent 512 + d_rope 64
  p.head_dim = mla && !(head_dim_option && head_dim_option->count() > 0) ? 576 : head_dim;
  p.head_dim_v = head_dim_v != 0 ? head_dim_v : mla ? p.head_dim - 64 : p.head_dim;
  if (mla && head_dim_v == 0 && p.head_dim <= 64)
    throw InputError(
        "head-dim-v",
        fmt::format("--mla with --head-dim {} needs --head-dim-v (the latent columns; the default "
                    "leaves 64 rotary ones)",
                    p.head_dim));
  p.dtype = parse_dtype(dtype);
  if (scale != 0) p.scale = scale;
  p.softcap = softcap;
  if (causal) {
    p.window_left = -1;
    p.window_right = 0;
  }
  if (!window.empty()) {
    const auto parts = split(window, ',');
    if (parts.size() != 2) throw InputError("window", fmt::format("expected LEFT,RIGHT, got '{}'", window));
    p.window_left = parse_int(parts[0], "window");
    p.window_right = parse_int(parts[1], "window");
    if (causal && p.window_right != 0)
      throw InputError("window", "--causal needs RIGHT = 0 (or leave --window out)");
  }
  p.bias = parse_broadcast(bias, "bias");
  p.mask = parse_broadcast(mask, "mask");
  p.mask_keep = mask_keep;
  p.alibi = alibi;
  p.sinks = sinks;
  p.dropout_p = dropout_p;
  p.descale = parse_descale(descale, "descale");
  p.amax_fraction = amax_fraction;
  if (!varlen.empty()) {
    p.seqlens_q.clear();
    p.seqlens_k.clear();
    for (auto part : split(varlen, ',')) {
      const auto qk = split(part, ':');
      if (qk.size() > 2) throw InputError("varlen", fmt::format("bad entry '{}' (expected L or Q:K)", part));
      p.seqlens_q.push_back(parse_int(qk[0], "varlen"));
      p.seqlens_k.push_back(parse_int(qk.size() == 2 ? qk[1] : qk[0], "varlen"));
    }
    if (batch_option && batch_option->count() > 0 && batch != static_cast<int64_t>(p.seqlens_q.size()))
      throw InputError("batch",
                       fmt::format("--batch {} disagrees with --varlen's {} sequences (--varlen sets the "
                                   "batch size: leave --batch out)",
                                   batch, p.seqlens_q.size()));
    p.batch = static_cast<int64_t>(p.seqlens_q.size());
    p.seqlen_q = *std::max_element(p.seqlens_q.begin(), p.seqlens_q.end());
    p.seqlen_k = *std::max_element(p.seqlens_k.begin(), p.seqlens_k.end());
  }
  if (page_size != 0 || !cache_seqlens.empty() || seqlen_new != 0 || num_blocks != 0) {
    if (page_size < 1) throw InputError("page-size", "the KV-cache flags need --page-size >= 1");
    p.page_size = page_size;
    p.num_blocks = num_blocks;
    p.seqlen_new = seqlen_new;
    if (cache_seqlens.empty()) {
      p.cache_seqlens.assign(p.batch, p.seqlen_k - seqlen_new);
    } else {
      for (auto part : split(cache_seqlens, ',')) p.cache_seqlens.push_back(parse_int(part, "cache-seqlens"));
      if (p.cache_seqlens.size() == 1) p.cache_seqlens.assign(p.batch, p.cache_seqlens[0]);
      p.batch = static_cast<int64_t>(p.cache_seqlens.size());
      // Without --seqlen-k the table holds the longest sequence; with it, that is the table's capacity.
      if (seqlen_k == 0)
        p.seqlen_k = *std::max_element(p.cache_seqlens.begin(), p.cache_seqlens.end()) + seqlen_new;
    }
  }
  if (!block_mask.empty()) {
    p.block_mask = parse_broadcast(block_mask_shape, "block-mask-shape");
    if (p.block_mask == BroadcastShape::None) throw InputError("block-mask-shape", "must not be none");
    p.block_mask_spec = block_mask;
    const auto parts = split(block_mask_tile, ',');
    if (parts.size() != 2)
      throw InputError("block-mask-tile", fmt::format("expected Q,K, got '{}'", block_mask_tile));
    p.block_mask_q = parse_int(parts[0], "block-mask-tile");
    p.block_mask_k = parse_int(parts[1], "block-mask-tile");
  }
  p.validate();
  return p;
}

void TileFlags::add_to(CLI::App* cmd, bool per_version_defaults) {
  // Each option with the copy of its TileConfig field that over() applies when the option is given.
  const auto opt = [&](const char* name, auto& field, const char* what, Copy copy) {
    auto* o = cmd->add_option(name, field,
                              per_version_defaults
                                  ? std::string(what) + " (default: the kernel version's launch tile)"
                                  : std::string(what));
    if (per_version_defaults)
      o->always_capture_default(false);
    else
      o->capture_default_str();
    given_.emplace_back(o, copy);
  };
  opt("--block-q", block_q, "Br: query rows per forward tile",
      [](TileConfig& t, const TileConfig& f) { t.block_q = f.block_q; });
  opt("--block-k", block_k, "Bc: key rows per forward tile",
      [](TileConfig& t, const TileConfig& f) { t.block_k = f.block_k; });
  opt("--bwd-block-q", bwd_block_q, "Query rows per backward tile",
      [](TileConfig& t, const TileConfig& f) { t.bwd_block_q = f.bwd_block_q; });
  opt("--bwd-block-k", bwd_block_k, "Key rows per backward tile",
      [](TileConfig& t, const TileConfig& f) { t.bwd_block_k = f.bwd_block_k; });
  opt("--warps", warps, "Warps per CTA", [](TileConfig& t, const TileConfig& f) { t.warps = f.warps; });
  opt("--stages", stages, "Pipeline stages of the K/V buffers",
      [](TileConfig& t, const TileConfig& f) { t.stages = f.stages; });
  given_.emplace_back(cmd->add_flag("--q-in-registers", q_in_registers, "Keep the Q tile in registers"),
                      [](TileConfig& t, const TileConfig& f) { t.q_in_registers = f.q_in_registers; });
  given_.emplace_back(cmd->add_flag("--kv-shared", kv_shared, "K and V share one shared-memory buffer"),
                      [](TileConfig& t, const TileConfig& f) { t.kv_shared_buffer = f.kv_shared_buffer; });
  opt("--dq-strategy", dq_strategy, "Backward dQ: atomic or partials",
      [](TileConfig& t, const TileConfig& f) { t.dq_strategy = f.dq_strategy; });
  if (!per_version_defaults)  // our GPU kernels have no split-KV path
    opt("--num-splits", num_splits,
        "Split-KV (Flash-Decoding): key splits per row, combined by a second kernel",
        [](TileConfig& t, const TileConfig& f) { t.num_splits = f.num_splits; });
}

TileConfig TileFlags::config() const {
  TileConfig t;
  t.block_q = block_q;
  t.block_k = block_k;
  t.bwd_block_q = bwd_block_q;
  t.bwd_block_k = bwd_block_k;
  t.warps = warps;
  t.stages = stages;
  t.q_in_registers = q_in_registers;
  t.kv_shared_buffer = kv_shared;
  t.dq_strategy = parse_dq_strategy(dq_strategy);
  t.num_splits = num_splits;
  t.validate();
  return t;
}

TileConfig TileFlags::over(TileConfig base) const {
  const TileConfig f = config();  // validates the given values (and the defaults of the absent ones)
  for (const auto& [option, copy] : given_)
    if (option->count() > 0) copy(base, f);
  base.validate();
  return base;
}

void MemoryFlag::add_to(CLI::App* cmd) {
  cmd->add_option("--max-memory", gib, "Memory limit in GiB (default: 80% of available)")
      ->check(CLI::Range(0.0, 1.0e6));  // up to a PiB: a clear message for negatives
}

}  // namespace flashsim::app
