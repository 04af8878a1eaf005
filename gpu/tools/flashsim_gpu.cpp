// flashsim-gpu: our CUDA kernel versions on golden suites. `list` the versions; `check` runs each on every
// case it supports, verified in process (the rule, report and exit codes of `flashsim golden verify`); `bench`
// times them; `decode-bench` times decode-v1 at every split count beside the model; `autotune` times every instantiated tile config of fa2-v1 on a grid of problems.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "flashsim/app/help_format.h"
#include "flashsim/app/problem_flags.h"
#include "flashsim/app/suggest.h"
#include "flashsim/block_mask.h"
#include "flashsim/error.h"
#include "flashsim/golden/report.h"
#include "flashsim/gpu/autotune.h"
#include "flashsim/gpu/bench.h"
#include "flashsim/gpu/decode_bench.h"
#include "flashsim/gpu/harness.h"
#include "flashsim/gpu/sparse_bench.h"
#include "flashsim/gpu/test_versions.h"

namespace {

using namespace flashsim;

// The tile flags given on the command line over each version's launch tile (gpu::tile_for). `tile` must outlive
// the result (it lives in the subcommand's state).
gpu::TileOverride user_tiles(const flashsim::app::TileFlags& tile) {
  return [&tile](const TileConfig& launch) { return tile.over(launch); };
}

void add_list(CLI::App& app) {
  auto* cmd =
      app.add_subcommand("list", "List the kernel versions: name, algorithm, backend, simulator kernels");
  cmd->callback([] {
    std::string why;
    const bool cuda = gpu::cuda_available(&why);
    fmt::print("{:<18} {:<10} {:<5} {}\n", "version", "algorithm", "runs", "what it does");
    for (const auto& v : gpu::kernel_versions()) {
      fmt::print("{:<18} {:<10} {:<5} {}\n", v.name, algorithm_name(v.algorithm),
                 v.backend == gpu::Backend::Cuda ? "cuda" : "host", v.summary);
      if (!v.sim_kernels.empty()) {
        std::string ks;
        for (const auto& k : v.sim_kernels) ks += (ks.empty() ? "" : " ") + k;
        fmt::print("{:<18} simulator kernels: {}\n", "", ks);
      }
    }
    fmt::print("CUDA device: {}\n", cuda ? "available" : "none (" + why + ")");
  });
}

void add_check(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand("check", "Run kernel versions on a golden suite, verified in process");
  struct State {
    std::string golden;
    std::vector<std::string> kernels, cases;
    bool quiet = false;
    std::string tiles_for = "both";
    flashsim::app::TileFlags tile;
    flashsim::app::MemoryFlag memory;
  };
  auto st = std::make_shared<State>();
  cmd->add_option("--golden", st->golden, "Golden suite folder (flashsim golden generate)")->required();
  cmd->add_option("--kernel", st->kernels,
                  "Kernel versions (repeatable; default: every version whose backend is here)")
      ->delimiter(',');
  cmd->add_option("--case", st->cases, "Only cases whose name matches this glob (repeatable)");
  cmd->add_flag("--quiet", st->quiet, "Print only failing outputs and the summaries");
  cmd->add_option("--tiles-for", st->tiles_for,
                  "The pass the tile flags set: both, fwd or bwd (the other runs at the launch tile)")
      ->check(CLI::IsMember({"both", "fwd", "bwd"}));
  st->tile.add_to(cmd, true);
  st->memory.add_to(cmd);
  cmd->callback([st, &exit_code] {
    gpu::CheckOptions opt;
    opt.golden = st->golden;
    opt.kernels = st->kernels;
    opt.cases = st->cases;
    st->tile.over(TileConfig{});  // bad tile flags: an InputError before anything runs
    opt.tiles = user_tiles(st->tile);
    opt.tiles_for = st->tiles_for == "fwd"   ? gpu::TilePasses::Forward
                    : st->tiles_for == "bwd" ? gpu::TilePasses::Backward
                                             : gpu::TilePasses::Both;
    opt.max_memory_bytes = st->memory.bytes();
    bool pass = true;
    for (const auto& r : gpu::check(opt)) {
      fmt::print("== {} ({}, {}): {} cases run ({} forward only), {} skipped\n", r.version->name,
                 algorithm_name(r.version->algorithm),
                 r.version->backend == gpu::Backend::Cuda ? "cuda" : "host", r.report.cases.size(),
                 r.forward_only.size(), r.skipped.size());
      fmt::print("{}", golden::format_report(r.report, st->quiet));
      for (const auto& [name, why] : r.forward_only) fmt::print("forward only {}: {}\n", name, why);
      for (const auto& [name, why] : r.skipped) fmt::print("skipped {}: {}\n", name, why);
      pass = pass && r.report.pass();
    }
    exit_code = pass ? 0 : 1;
  });
}

// The benchmark grid: bf16, 16K tokens per batch (batch = 16384 / seqlen) and a model width of 2048 (heads =
// 2048 / head dim), FlashAttention's benchmark convention, unless --batch / --heads fix them.
void add_bench(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand("bench", "Time kernel versions (CUDA events, median of the timed launches)");
  struct State {
    std::vector<std::string> kernels;
    std::vector<int64_t> seqlens{1024, 4096, 16384}, head_dims{64, 128};
    int64_t batch = 0, heads = 0, heads_kv = 0;
    std::string causal = "both", dtype = "bf16";
    int repeats = 20;
    bool csv = false;
    flashsim::app::TileFlags tile;
  };
  auto st = std::make_shared<State>();
  cmd->add_option("--kernel", st->kernels, "Kernel versions (default: every CUDA version)")->delimiter(',');
  cmd->add_option("--seqlens", st->seqlens, "Sequence lengths")->delimiter(',');
  cmd->add_option("--head-dims", st->head_dims, "Head dims")->delimiter(',');
  cmd->add_option("--batch", st->batch, "Batch (0: 16384 / seqlen)");
  cmd->add_option("--heads", st->heads, "Heads (0: 2048 / head dim)");
  cmd->add_option("--heads-kv", st->heads_kv, "Key/value heads, GQA/MQA when fewer (0: --heads)");
  cmd->add_option("--causal", st->causal, "no, yes or both")->check(CLI::IsMember({"no", "yes", "both"}));
  cmd->add_option("--dtype", st->dtype, "Input dtype");
  cmd->add_option("--repeats", st->repeats, "Timed launches (the median is reported)")
      ->check(CLI::Range(3, 10000));
  cmd->add_flag("--csv", st->csv, "CSV output");
  st->tile.add_to(cmd, true);
  cmd->callback([st, &exit_code] {
    // The grid's problems, each checked (heads_q a multiple of --heads-kv, ...) before anything runs or prints.
    std::vector<AttentionProblem> problems;
    for (const int64_t d : st->head_dims)
      for (const int64_t n : st->seqlens)
        for (const bool causal : {false, true}) {
          if ((causal && st->causal == "no") || (!causal && st->causal == "yes")) continue;
          AttentionProblem p;
          p.batch = st->batch > 0 ? st->batch : std::max<int64_t>(1, 16384 / n);
          p.heads_q = p.heads_kv = st->heads > 0 ? st->heads : std::max<int64_t>(1, 2048 / d);
          if (st->heads_kv > 0) p.heads_kv = st->heads_kv;
          p.seqlen_q = p.seqlen_k = n;
          p.head_dim = p.head_dim_v = d;
          if (causal) p.window_right = 0;
          p.dtype = parse_dtype(st->dtype);
          p.validate();  // an InputError naming the field
          problems.push_back(p);
        }
    std::string why;
    if (!gpu::cuda_available(&why)) throw InputError("bench", "needs a CUDA device: " + why);
    std::vector<const gpu::KernelVersion*> versions;
    for (const auto& name : st->kernels) versions.push_back(&gpu::kernel_version(name));
    if (versions.empty())
      for (const auto& v : gpu::kernel_versions())
        if (v.backend == gpu::Backend::Cuda) versions.push_back(&v);
    st->tile.over(TileConfig{});  // bad tile flags: an InputError before anything runs
    gpu::BenchOptions o;
    o.repeats = st->repeats;
    if (st->csv)
      fmt::print("kernel,problem,tile,fwd_ms,fwd_tflops,bwd_ms,bwd_tflops,skipped\n");
    else
      fmt::print("{:<14} {:<40} {:>9} {:>9} {:>9} {:>9}  {}\n", "kernel", "problem", "fwd ms", "TFLOP/s",
                 "bwd ms", "TFLOP/s", "tile");
    for (const auto& p : problems)
      for (const auto* v : versions) {
        gpu::BenchOptions ob = o;
        ob.bwd_tile = gpu::tile_for(*v, p, user_tiles(st->tile), Pass::Backward);
        const auto r = gpu::bench(*v, p, gpu::tile_for(*v, p, user_tiles(st->tile)), ob);
        if (st->csv)
          fmt::print("{},{},{},{:.4f},{:.1f},{:.4f},{:.1f},\"{}\"\n", r.kernel, r.problem, r.tile, r.fwd_ms,
                     r.fwd_tflops, r.bwd_ms, r.bwd_tflops, r.skipped);
        else if (!(r.fwd_ms > 0))
          fmt::print("{:<14} {:<40} skipped: {}\n", r.kernel, r.problem, r.skipped);
        else
          fmt::print("{:<14} {:<40} {:>9.3f} {:>9.1f} {:>9.3f} {:>9.1f}  {}{}\n", r.kernel, r.problem,
                     r.fwd_ms, r.fwd_tflops, r.bwd_ms, r.bwd_tflops, r.tile,
                     r.skipped.empty() ? "" : "  " + r.skipped);
        std::fflush(stdout);
      }
    exit_code = 0;
  });
}

// The decode grid (issue 30's table): a decode step (one query row a sequence, every sequence's cache the same
// length) over batch x cache length x page size, timed at each split count the simulator's sweep predicts, with
// the device's copy bandwidth once. 32 query heads over 8 kv heads, d128, bf16 by default (Llama-3-8B's layout).
void add_decode_bench(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand(
      "decode-bench",
      "Time decode-v1 over a (batch, cache length, page size) grid at every split count the "
      "simulator predicts; CSV with the prediction and the share of copy bandwidth");
  struct State {
    std::string kernel = "decode-v1";
    std::vector<int64_t> batches{1, 8, 32, 64, 128}, cache_lens{1024, 4096, 8192, 32768}, page_sizes{16, 256};
    int64_t heads = 32, heads_kv = 8, head_dim = 128, seqlen_q = 1;
    std::string dtype = "bf16", pages = "shuffled";
    int repeats = 20;
    int64_t max_cache_gib =
        24;  // the largest cell's K and V (b128 x 32K: 17.2 GB) fits an 80 GB device twice
  };
  auto st = std::make_shared<State>();
  cmd->add_option("--kernel", st->kernel, "The paged-cache version timed");
  cmd->add_option("--batches", st->batches, "Batch sizes")->delimiter(',');
  cmd->add_option("--cache-lens", st->cache_lens, "Cached keys a sequence")->delimiter(',');
  cmd->add_option("--page-sizes", st->page_sizes, "Rows a page")->delimiter(',');
  cmd->add_option("--heads", st->heads, "Query heads");
  cmd->add_option("--heads-kv", st->heads_kv, "Key/value heads");
  cmd->add_option("--head-dim", st->head_dim, "Head dim (d = dv)");
  cmd->add_option("--seqlen-q", st->seqlen_q, "Query rows a sequence (1: decode; more: speculative)");
  cmd->add_option("--dtype", st->dtype, "Input dtype");
  cmd->add_option("--repeats", st->repeats, "Timed launches a split count (the median is reported)")
      ->check(CLI::Range(3, 10000));
  cmd->add_option("--max-cache-gib", st->max_cache_gib, "Skip cells whose K and V exceed this (GiB)");
  cmd->add_option("--pages", st->pages,
                  "The block table: shuffled (pages anywhere, as a serving engine's pool) or in-order (each "
                  "sequence's pages one after another: a contiguous cache's addresses, the same lookups)")
      ->check(CLI::IsMember({"shuffled", "in-order"}));
  cmd->callback([st, &exit_code] {
    for (const auto& [flag, values] :
         {std::pair{"batches", &st->batches}, std::pair{"cache-lens", &st->cache_lens},
          std::pair{"page-sizes", &st->page_sizes}})
      for (const int64_t v : *values)
        if (v < 1) throw InputError(flag, fmt::format("every value must be >= 1, got {}", v));
    const auto& v = gpu::kernel_version(st->kernel);  // an unknown name: an InputError listing the known ones
    std::vector<AttentionProblem> problems;
    for (const int64_t b : st->batches)
      for (const int64_t n : st->cache_lens)
        for (const int64_t page : st->page_sizes) {
          AttentionProblem p;
          p.batch = b;
          p.heads_q = st->heads;
          p.heads_kv = st->heads_kv;
          p.seqlen_q = st->seqlen_q;
          p.seqlen_k = n;
          p.head_dim = p.head_dim_v = st->head_dim;
          p.dtype = parse_dtype(st->dtype);
          p.page_size = page;
          p.cache_seqlens.assign(static_cast<size_t>(b), n);
          p.validate();  // an InputError naming the field, before anything runs
          problems.push_back(p);
        }
    std::string why;
    if (!gpu::cuda_available(&why)) throw InputError("decode-bench", "needs a CUDA device: " + why);
    // Copy bandwidth of 2 GiB (40x L2): what "the share of the bandwidth" is measured against.
    const double copy = gpu::copy_bytes_per_s(2ll << 30);
    fmt::print("# device copy bandwidth (read + write of a 2 GiB cudaMemcpy): {:.1f} GB/s\n", copy / 1e9);
    fmt::print(
        "kernel,batch,cache_len,page_size,num_splits,chosen,ms,predicted_ms,kv_bytes,kv_GBps,"
        "share_of_copy\n");
    for (const auto& p : problems) {
      const double kv = 2.0 * static_cast<double>(p.batch * p.seqlen_k * p.heads_kv * p.head_dim) *
                        static_cast<double>(dtype_bytes(p.dtype));
      if (kv > static_cast<double>(st->max_cache_gib) * (1ll << 30)) {
        fmt::print("# skipped b{} cache {}: K and V are {:.1f} GiB (> --max-cache-gib)\n", p.batch,
                   p.seqlen_k, kv / (1ll << 30));
        continue;
      }
      gpu::BenchOptions o;
      o.repeats = st->repeats;
      for (const auto& r : gpu::decode_bench(v, p, o, st->pages == "in-order")) {
        const double rate = r.kv_bytes / (r.ms * 1e-3);
        fmt::print("{},{},{},{},{},{},{:.4f},{:.4f},{:.0f},{:.1f},{:.3f}\n", v.name, p.batch, p.seqlen_k,
                   p.page_size, r.num_splits, r.chosen ? 1 : 0, r.ms, r.predicted_ms, r.kv_bytes, rate / 1e9,
                   rate / copy);
      }
      std::fflush(stdout);
    }
    exit_code = 0;
  });
}

// The block-sparse table (issue 30): one problem timed forward and backward under each block mask, beside the
// simulator's prediction for the same mask. Random masks of keep 1, 1/2, 1/4, 1/8 over 128 x 128 tiles (S2's and
// FlashAttention's tile) on a non-causal d128 bf16 problem of 8K keys by default.
void add_sparse_bench(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand(
      "sparse-bench",
      "Time a block-sparse version (fa2-v1) forward and backward under several block masks; CSV with the "
      "tiles computed and skipped and the simulator's predicted times");
  struct State {
    std::string kernel = "fa2-v1";
    std::vector<std::string> specs{"none", "random:keep=1", "random:keep=0.5", "random:keep=0.25",
                                   "random:keep=0.125"};
    int64_t batch = 2, heads = 16, heads_kv = 16, seqlen = 8192, head_dim = 128, mask_tile = 128;
    std::string dtype = "bf16", block_mask = "1hqk";
    bool causal = false;
    int repeats = 10;
    flashsim::app::TileFlags tile;
  };
  auto st = std::make_shared<State>();
  // 1 .. 16M: past any batch, head count, sequence or mask tile a GPU holds, with a one-line error outside
  const auto positive = CLI::Range(int64_t{1}, int64_t{1} << 24);
  cmd->add_option("--kernel", st->kernel, "The version timed");
  cmd->add_option(
         "--specs", st->specs,
         "Block-mask patterns, ';'-separated (random:keep=P, s2:local=L,stride=S, local-sink:...; none: "
         "no block mask, the dense baseline)")
      ->delimiter(';');
  cmd->add_option("--batch", st->batch, "Batch")->check(positive);
  cmd->add_option("--heads", st->heads, "Query heads")->check(positive);
  cmd->add_option("--heads-kv", st->heads_kv, "Key/value heads")->check(positive);
  cmd->add_option("--seqlen", st->seqlen, "Query and key rows a sequence")->check(positive);
  cmd->add_option("--head-dim", st->head_dim, "Head dim (d = dv)")->check(positive);
  cmd->add_option("--mask-tile", st->mask_tile, "Rows and keys of a block-mask tile")->check(positive);
  cmd->add_option("--block-mask", st->block_mask, "The mask's dims: bhqk, 1hqk, b1qk or 11qk")
      ->check(CLI::IsMember({"bhqk", "1hqk", "b1qk", "11qk"}));
  cmd->add_flag("--causal", st->causal, "Causal (ANDed with the block mask)");
  cmd->add_option("--dtype", st->dtype, "Input dtype");
  cmd->add_option("--repeats", st->repeats, "Timed launches (the median is reported)")
      ->check(CLI::Range(3, 10000));
  st->tile.add_to(cmd, true);
  cmd->callback([st, &exit_code] {
    std::vector<AttentionProblem> problems;  // each checked before anything runs
    for (const std::string& spec : st->specs) {
      AttentionProblem p;
      p.batch = st->batch;
      p.heads_q = st->heads;
      p.heads_kv = st->heads_kv;
      p.seqlen_q = p.seqlen_k = st->seqlen;
      p.head_dim = p.head_dim_v = st->head_dim;
      p.dtype = parse_dtype(st->dtype);
      if (st->causal) p.window_right = 0;
      if (spec != "none") {  // "none": the dense problem, the baseline
        p.block_mask = parse_broadcast(st->block_mask, "block-mask");
        p.block_mask_q = p.block_mask_k = st->mask_tile;
        p.block_mask_spec = parse_block_mask_spec(spec).text();  // an InputError naming what is wrong
      }
      p.validate();
      problems.push_back(p);
    }
    const auto& v = gpu::kernel_version(st->kernel);
    st->tile.over(TileConfig{});  // bad tile flags: an InputError before anything runs
    std::string why;
    if (!gpu::cuda_available(&why)) throw InputError("sparse-bench", "needs a CUDA device: " + why);
    fmt::print(
        "kernel,problem,spec,tile,fwd_tiles,fwd_skipped,fwd_ms,fwd_predicted_ms,bwd_tiles,bwd_skipped,bwd_ms,"
        "bwd_predicted_ms\n");
    for (const auto& p : problems) {
      gpu::BenchOptions o;
      o.repeats = st->repeats;
      const gpu::SparseBenchRow r = gpu::sparse_bench(v, p, o, user_tiles(st->tile));
      fmt::print("{},\"{}\",\"{}\",\"{}\",{},{},{:.4f},{:.4f},{},{},{:.4f},{:.4f}\n", v.name, p.describe(),
                 r.spec, r.tile, r.fwd_tiles, r.fwd_skipped, r.fwd_ms, r.fwd_predicted_ms, r.bwd_tiles,
                 r.bwd_skipped, r.bwd_ms, r.bwd_predicted_ms);
      std::fflush(stdout);
    }
    exit_code = 0;
  });
}

// The measured autotune (gpu/src/autotune.cpp): every tile config a version is built for (fa2-v1's instances.h,
// fa3-v1's; families/) on a grid of problems, the forward's and the backward's configs each timed alone.
void add_autotune(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand("autotune",
                                 "Time every instantiated tile config of fa2-v1 or fa3-v1, forward and "
                                 "backward apart, on a grid of problems");
  struct State {
    gpu::AutotuneGrid grid;
    std::vector<std::string> dtypes{"bf16", "fp16"};
    std::string pass = "both", out;
    int warmup = 3, repeats = 10;  // modest: ~1400 configs in the default grid
    int rounds = 1;
    bool dry_run = false;
  };
  auto st = std::make_shared<State>();
  cmd->add_option("--kernel", st->grid.kernel, "The version timed: fa2-v1 or fa3-v1 (Hopper)");
  cmd->add_option("--head-dims", st->grid.head_dims, "Head dims")->delimiter(',');
  cmd->add_option("--dtypes", st->dtypes, "Input dtypes")->delimiter(',');
  cmd->add_option("--seqlens", st->grid.seqlens, "Sequence lengths (seqlen_q = seqlen_k)")->delimiter(',');
  cmd->add_option(
         "--features", st->grid.features,
         "Problem variants: plain, causal, bias (a full [B,H,Sq,Sk] bias; the backward computes dbias), "
         "causal+bias (default: the version's: the four for fa2-v1; plain, causal for fa3-v1, which has no "
         "bias)")
      ->delimiter(',');
  cmd->add_option("--batch", st->grid.batch, "Batch (0: 16384 / seqlen)");
  cmd->add_option("--heads", st->grid.heads, "Heads (0: 2048 / head dim)");
  cmd->add_option("--pass", st->pass, "The configs timed: fwd, bwd or both")
      ->check(CLI::IsMember({"fwd", "bwd", "both"}));
  cmd->add_option("--warmup", st->warmup, "Launches before timing")->check(CLI::Range(0, 10000));
  cmd->add_option("--repeats", st->repeats, "Timed launches (the median is reported)")
      ->check(CLI::Range(1, 10000));
  cmd->add_option("--rounds", st->rounds,
                  "Time a problem's configs in turn this many times and report each one's median round (a "
                  "clock that drifts then moves them alike; rounds_spread: how far its rounds differ)")
      ->check(CLI::Range(1, 100));
  cmd->add_option("--out", st->out,
                  "Output file: CSV, or JSON when the name ends in .json (default: CSV on stdout)");
  cmd->add_flag("--dry-run", st->dry_run, "Print the (problem, config) pairs and the estimate; run nothing");
  cmd->callback([st, &exit_code] {
    st->grid.dtypes.clear();
    for (const auto& t : st->dtypes) st->grid.dtypes.push_back(parse_dtype(t));
    st->grid.fwd = st->pass != "bwd";
    st->grid.bwd = st->pass != "fwd";
    const gpu::AutotunePlan plan = gpu::autotune_plan(st->grid);  // bad grid values: an InputError here
    gpu::BenchOptions o;
    o.warmup = st->warmup;
    o.repeats = st->repeats;
    size_t fwd = 0;
    for (const auto& it : plan.items) fwd += it.pass == gpu::TunePass::Fwd ? 1 : 0;
    std::fprintf(
        stderr,
        "autotune: %zu problems, %zu configs (%zu forward, %zu backward), warmup %d + repeats %d, %d "
        "round(s): about %.0f s of kernels (estimated at 250 / 150 TFLOP/s and 2.5 TB/s; setup not "
        "counted)\n",
        plan.problems.size(), plan.items.size(), fwd, plan.items.size() - fwd, o.warmup, o.repeats,
        st->rounds, gpu::autotune_estimate_seconds(plan, o, st->rounds));
    if (st->dry_run) {
      for (size_t i = 0; i < plan.items.size(); ++i)
        fmt::print("[{}/{}] {}{}\n", i + 1, plan.items.size(), gpu::autotune_label(plan, plan.items[i]),
                   plan.items[i].hand ? " (hand)" : "");
      exit_code = 0;
      return;
    }
    const bool json = std::string_view(st->out).ends_with(".json");
    std::FILE* f = st->out.empty() ? stdout : std::fopen(st->out.c_str(), "w");
    if (!f) throw InputError("out", "cannot write " + st->out);
    const std::unique_ptr<std::FILE, int (*)(std::FILE*)> closer(f == stdout ? nullptr : f, &std::fclose);
    std::vector<gpu::AutotuneRow> rows;
    if (!json) {
      std::fputs(gpu::autotune_csv_header().c_str(), f);
      std::fflush(f);
    }
    const auto write_json = [&] {
      if (json) std::fputs(gpu::autotune_json(plan, rows).c_str(), f);
    };
    try {
      gpu::autotune(
          gpu::kernel_version(plan.kernel), plan, o,
          [&](size_t done, const gpu::AutotuneRow& r) {
            const std::string label = gpu::autotune_label(plan, r.item);
            if (r.skipped.empty() && st->rounds > 1)
              std::fprintf(stderr, "[%zu/%zu] %s: %.3f ms (rounds %.1f%% apart)\n", done, plan.items.size(),
                           label.c_str(), r.ms, 100 * r.spread);
            else if (r.skipped.empty())
              std::fprintf(stderr, "[%zu/%zu] %s: %.3f ms\n", done, plan.items.size(), label.c_str(), r.ms);
            else
              std::fprintf(stderr, "[%zu/%zu] %s: skipped (%s)\n", done, plan.items.size(), label.c_str(),
                           r.skipped.c_str());
            rows.push_back(r);
            if (!json) {
              std::fputs(gpu::autotune_csv_line(plan, r).c_str(), f);
              std::fflush(f);  // a run cut short keeps its rows
            }
          },
          st->rounds);
    } catch (...) {
      write_json();  // the rows measured so far
      throw;
    }
    write_json();
    exit_code = 0;
  });
}

}  // namespace

int main(int argc, char** argv) {
  // The planted-bug versions too: flashsim-gpu drives the GPU machine's runs (bench/gpu/), whose traffic
  // checks must flag them.
  flashsim::gpu::register_test_versions();
  CLI::App app{"flashsim-gpu: flashsim's CUDA kernel versions checked against golden suites", "flashsim-gpu"};
  app.formatter(std::make_shared<flashsim::app::HelpFormatter>());
  app.option_defaults()->always_capture_default();
  app.require_subcommand(1);
  int exit_code = 0;
  add_list(app);
  add_check(app, exit_code);
  add_bench(app, exit_code);
  add_decode_bench(app, exit_code);
  add_sparse_bench(app, exit_code);
  add_autotune(app, exit_code);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    if (const auto unknown = flashsim::app::unknown_argument_message(app)) {  // a typo: the nearest name
      std::fprintf(stderr, "flashsim-gpu: error: %s\n", unknown->c_str());
    } else {
      std::fprintf(stderr, "flashsim-gpu: error: %s (see --help)\n", e.what());
    }
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "flashsim-gpu: error: %s\n", e.what());
    return 2;
  }
  return exit_code;
}
