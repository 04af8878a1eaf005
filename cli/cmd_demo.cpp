// flashsim demo: the quick start's main job on built-in defaults.
#include <fmt/format.h>

#include <cmath>

#include "commands.h"
#include "flashsim/ref/attention.h"
#include "ref_table.h"

namespace flashsim::cli {

void add_demo_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("demo",
                                 "The quick start: a default problem through every algorithm, fp64 and "
                                 "emulated bf16, forward and backward");
  cmd->callback([] {
    // A small GQA causal problem with a length that no tile divides: quick on 2 cores, touches the common
    // paths.
    AttentionProblem p;
    p.batch = 2;
    p.heads_q = 8;
    p.heads_kv = 2;
    p.seqlen_q = p.seqlen_k = 1000;
    p.head_dim = p.head_dim_v = 64;
    p.window_right = 0;
    p.dtype = DType::BF16;
    TileConfig tile;
    ref::RunOptions opt;
    fmt::print("== Exact (fp64) algorithms against naive fp64 ==\n");
    double worst = print_reference_table(p, 0, tile, opt, true);
    fmt::print("\n== Emulated bf16 kernel pipeline (fp32 accumulation, P and dS rounded to bf16) ==\n");
    opt.precision = ref::Precision::Emulated;
    print_reference_table(p, 0, tile, opt, true);
    set_exit_code(worst < 1e-12 ? 0 : 1);
  });
}

}  // namespace flashsim::cli
