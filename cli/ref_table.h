#pragma once
// The agreement-and-speed table of `flashsim ref` (and the quick start's demo).
#include "flashsim/problem.h"
#include "flashsim/ref/options.h"
#include "flashsim/tile_config.h"

namespace flashsim::cli {

// Runs every forward algorithm (and both backward algorithms when `backward`) at opt.precision, plus the
// naive fp64 result they are compared with, and prints per algorithm the max abs difference of each output to
// it and the time. Returns the largest relative difference seen (max abs diff / max abs exact value).
double print_reference_table(const AttentionProblem& p, uint64_t seed, const TileConfig& tile,
                             const ref::RunOptions& opt, bool backward);

}  // namespace flashsim::cli
