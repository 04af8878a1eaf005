#pragma once
// Helpers the reference tests share: error measures and the grid of problems they run over.
#include <cmath>
#include <ostream>
#include <string>
#include <vector>

#include "flashsim/problem.h"
#include "flashsim/tile_config.h"

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

inline AttentionProblem base_problem(int64_t sq, int64_t sk, int64_t d) {
  AttentionProblem p;
  p.batch = 2;
  p.heads_q = p.heads_kv = 2;
  p.seqlen_q = sq;
  p.seqlen_k = sk;
  p.head_dim = p.head_dim_v = d;
  p.dtype = DType::F64;
  return p;
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
  add(
      "q128_k257_causal",
      [] {
        auto p = base_problem(128, 257, 16);
        p.window_right = 0;
        return p;
      }(),
      tiles(32, 32));
  add(
      "q257_k128_causal",
      [] {
        auto p = base_problem(257, 128, 16);
        p.window_right = 0;
        return p;
      }(),
      tiles(32, 32));
  for (int64_t d : {8, 17, 96, 129, 256})
    add("d" + std::to_string(d), base_problem(65, 65, d), tiles(16, 32));
  add(
      "dv_ne_d",
      [] {
        auto p = base_problem(70, 90, 40);
        p.head_dim_v = 24;
        return p;
      }(),
      tiles(32, 16));
  add("tiles_7x13", base_problem(100, 100, 16), tiles(7, 13));
  add("tiles_128x128", base_problem(257, 257, 16), tiles(128, 128));
  add(
      "causal",
      [] {
        auto p = base_problem(97, 97, 32);
        p.window_right = 0;
        return p;
      }(),
      tiles(16, 32));
  add(
      "window",
      [] {
        auto p = base_problem(97, 120, 32);
        p.window_left = 20;
        p.window_right = 5;
        return p;
      }(),
      tiles(16, 16));
  add(
      "window_left_only",
      [] {
        auto p = base_problem(80, 80, 16);
        p.window_left = 7;
        return p;
      }(),
      tiles(16, 16));
  add(
      "softcap",
      [] {
        auto p = base_problem(60, 70, 32);
        p.softcap = 1.5;
        return p;
      }(),
      tiles(16, 32));
  for (auto sh :
       {BroadcastShape::BHQK, BroadcastShape::OneHQK, BroadcastShape::BOneQK, BroadcastShape::OneOneQK}) {
    add(
        "bias_" + std::string(broadcast_name(sh)),
        [&] {
          auto p = base_problem(40, 50, 16);
          p.bias = sh;
          return p;
        }(),
        tiles(16, 16));
    add(
        "mask_" + std::string(broadcast_name(sh)),
        [&] {
          auto p = base_problem(40, 50, 16);
          p.mask = sh;
          return p;
        }(),
        tiles(16, 16));
  }
  add(
      "alibi",
      [] {
        auto p = base_problem(50, 64, 16);
        p.heads_q = p.heads_kv = 3;
        p.alibi = true;
        return p;
      }(),
      tiles(16, 16));
  add(
      "gqa",
      [] {
        auto p = base_problem(50, 64, 16);
        p.heads_q = 6;
        p.heads_kv = 2;
        return p;
      }(),
      tiles(16, 32));
  add(
      "mqa",
      [] {
        auto p = base_problem(50, 64, 16);
        p.heads_q = 4;
        p.heads_kv = 1;
        return p;
      }(),
      tiles(32, 16));
  add(
      "varlen",
      [] {
        auto p = base_problem(90, 100, 16);
        p.batch = 4;
        p.seqlens_q = {90, 1, 0, 33};
        p.seqlens_k = {100, 40, 7, 0};
        return p;
      }(),
      tiles(16, 16));
  add(
      "fully_masked_rows",
      [] {
        auto p = base_problem(60, 60, 16);
        p.mask = BroadcastShape::BHQK;
        p.mask_keep = 0.03;  // most rows keep no key at all
        return p;
      }(),
      tiles(16, 16));
  add(
      "combined",
      [] {
        auto p = base_problem(77, 90, 24);
        p.heads_q = 4;
        p.heads_kv = 2;
        p.head_dim_v = 20;
        p.window_left = 30;
        p.window_right = 0;
        p.softcap = 2.0;
        p.bias = BroadcastShape::OneHQK;
        p.mask = BroadcastShape::BOneQK;
        p.alibi = true;
        p.scale = 0.3;
        return p;
      }(),
      tiles(16, 24));
  add(
      "combined_varlen",
      [] {
        auto p = base_problem(70, 70, 16);
        p.batch = 3;
        p.heads_q = 4;
        p.heads_kv = 1;
        p.seqlens_q = {70, 5, 40};
        p.seqlens_k = {30, 70, 40};
        p.window_right = 2;
        p.window_left = 10;
        p.softcap = 1.0;
        p.bias = BroadcastShape::BHQK;
        p.mask = BroadcastShape::OneOneQK;
        return p;
      }(),
      tiles(16, 16));
  return cases;
}

}  // namespace flashsim::test
