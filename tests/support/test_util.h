#pragma once
// Helpers the reference tests share: error measures and the grid of problems they run over.
#include <cmath>
#include <ostream>
#include <string>
#include <vector>

#include "flashsim/problem.h"
#include "flashsim/tile_config.h"
#include "problem_builder.h"

namespace flashsim::test {

// max |got - want| / max(max |want|, 1), counting a non-finite got where want is finite (or vice versa) as
// infinite error; -inf == -inf (the lse of a fully masked row) matches. The floor of 1 is the magnitude of
// outputs of N(0, 1) inputs: an output that is exactly 0 in real arithmetic (seqlen 1's gradients: dS = dP -
// D = 0) holds only rounding noise, which must not be divided by itself.
inline double rel_error(const std::vector<double>& got, const std::vector<double>& want) {
  if (got.size() != want.size()) return INFINITY;
  double err = 0, mag = 0;
  for (size_t n = 0; n < got.size(); ++n) {
    if (std::isinf(want[n]) || std::isinf(got[n])) {
      if (got[n] != want[n]) return INFINITY;
      continue;
    }
    if (std::isnan(got[n]) != std::isnan(want[n])) return INFINITY;
    err = std::max(err, std::fabs(got[n] - want[n]));
    mag = std::max(mag, std::fabs(want[n]));
  }
  return err / std::max(mag, 1.0);
}

struct Case {
  std::string name;
  AttentionProblem problem;
  TileConfig tile;
};
inline void PrintTo(const Case& c, std::ostream* os) {
  *os << c.name << " (" << c.problem.describe() << ")";
}

// Batch 2, 2 heads, fp64: the reference tests' problems, from which the grid's cases change a few fields.
inline ProblemBuilder base(int64_t sq, int64_t sk, int64_t d) {
  return ProblemBuilder().batch(2).heads(2).seqlen(sq, sk).head_dim(d).dtype(DType::F64);
}
inline AttentionProblem base_problem(int64_t sq, int64_t sk, int64_t d) {
  return base(sq, sk, d).build();
}

inline TileConfig tiles(int64_t br, int64_t bc) {
  TileConfig t;
  t.block_q = br;
  t.block_k = bc;
  t.bwd_block_q = bc;  // backward tiles differ from the forward's on purpose
  t.bwd_block_k = br;
  return t;
}

// Every feature alone and combined, over lengths, head dims and tile sizes that do and do not divide them.
inline std::vector<Case> reference_grid() {
  std::vector<Case> cases;
  auto add = [&](std::string name, AttentionProblem p, TileConfig t) {
    cases.push_back({std::move(name), p, t});
  };
  for (int64_t s : {1, 7, 97, 128, 257})
    add("len" + std::to_string(s), base_problem(s, s, 32), tiles(32, 64));
  add("q7_k97", base_problem(7, 97, 24), tiles(16, 16));
  add("q257_k31", base_problem(257, 31, 24), tiles(64, 16));
  add("q128_k257_causal", base(128, 257, 16).causal().build(), tiles(32, 32));
  add("q257_k128_causal", base(257, 128, 16).causal().build(), tiles(32, 32));
  for (int64_t d : {8, 17, 96, 129, 256})
    add("d" + std::to_string(d), base_problem(65, 65, d), tiles(16, 32));
  add("dv_ne_d", base(70, 90, 40).head_dim(40, 24).build(), tiles(32, 16));
  add("tiles_7x13", base_problem(100, 100, 16), tiles(7, 13));
  add("tiles_128x128", base_problem(257, 257, 16), tiles(128, 128));
  add("causal", base(97, 97, 32).causal().build(), tiles(16, 32));
  add("window", base(97, 120, 32).window(20, 5).build(), tiles(16, 16));
  add("window_left_only", base(80, 80, 16).window(7, -1).build(), tiles(16, 16));
  add("softcap", base(60, 70, 32).softcap(1.5).build(), tiles(16, 32));
  for (auto sh :
       {BroadcastShape::BHQK, BroadcastShape::OneHQK, BroadcastShape::BOneQK, BroadcastShape::OneOneQK}) {
    add("bias_" + std::string(broadcast_name(sh)), base(40, 50, 16).bias(sh).build(), tiles(16, 16));
    add("mask_" + std::string(broadcast_name(sh)), base(40, 50, 16).mask(sh).build(), tiles(16, 16));
  }
  add("alibi", base(50, 64, 16).heads(3).alibi().build(), tiles(16, 16));
  add("gqa", base(50, 64, 16).heads(6, 2).build(), tiles(16, 32));
  add("mqa", base(50, 64, 16).heads(4, 1).build(), tiles(32, 16));
  add("varlen", base(90, 100, 16).varlen({90, 1, 0, 33}, {100, 40, 7, 0}).build(), tiles(16, 16));
  // mask_keep 0.03: most rows keep no key at all
  add("fully_masked_rows", base(60, 60, 16).mask(BroadcastShape::BHQK, 0.03).build(), tiles(16, 16));
  add("combined",
      base(77, 90, 24)
          .heads(4, 2)
          .head_dim(24, 20)
          .window(30, 0)
          .softcap(2.0)
          .bias(BroadcastShape::OneHQK)
          .mask(BroadcastShape::BOneQK)
          .alibi()
          .scale(0.3)
          .build(),
      tiles(16, 24));
  add("combined_varlen",
      base(70, 70, 16)
          .varlen({70, 5, 40}, {30, 70, 40})
          .heads(4, 1)
          .window(10, 2)
          .softcap(1.0)
          .bias(BroadcastShape::BHQK)
          .mask(BroadcastShape::OneOneQK)
          .build(),
      tiles(16, 16));
  return cases;
}

}  // namespace flashsim::test
