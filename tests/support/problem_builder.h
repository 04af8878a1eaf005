#pragma once
// ProblemBuilder: an AttentionProblem in one expression, naming only the fields a test cares about; the
// others keep AttentionProblem's defaults (or those of the problem it starts from):
//   const AttentionProblem p =
//       ProblemBuilder().batch(2).heads(8, 2).seqlen(128).head_dim(64).causal().dtype(DType::BF16).build();
#include <algorithm>
#include <cstdint>
#include <random>
#include <utility>
#include <vector>

#include "flashsim/problem.h"

namespace flashsim::test {

class ProblemBuilder {
 public:
  ProblemBuilder() = default;
  explicit ProblemBuilder(AttentionProblem base) : p_(std::move(base)) {}

  ProblemBuilder& batch(int64_t b) {
    p_.batch = b;
    return *this;
  }
  // heads_q = heads_kv = h (no grouping).
  ProblemBuilder& heads(int64_t h) { return heads(h, h); }
  ProblemBuilder& heads(int64_t q, int64_t kv) {
    p_.heads_q = q;
    p_.heads_kv = kv;
    return *this;
  }
  // seqlen_q = seqlen_k = s.
  ProblemBuilder& seqlen(int64_t s) { return seqlen(s, s); }
  ProblemBuilder& seqlen(int64_t q, int64_t k) {
    p_.seqlen_q = q;
    p_.seqlen_k = k;
    return *this;
  }
  // Variable lengths: one sequence per entry (batch = their count), seqlen_q / seqlen_k the longest.
  ProblemBuilder& varlen(std::vector<int64_t> q, std::vector<int64_t> k) {
    p_.batch = static_cast<int64_t>(q.size());
    p_.seqlen_q = q.empty() ? 0 : *std::max_element(q.begin(), q.end());
    p_.seqlen_k = k.empty() ? 0 : *std::max_element(k.begin(), k.end());
    p_.seqlens_q = std::move(q);
    p_.seqlens_k = std::move(k);
    return *this;
  }
  // head_dim = head_dim_v = d.
  ProblemBuilder& head_dim(int64_t d) { return head_dim(d, d); }
  ProblemBuilder& head_dim(int64_t d, int64_t dv) {
    p_.head_dim = d;
    p_.head_dim_v = dv;
    return *this;
  }
  // Bottom-right causal: window_right = 0 (window_left unchanged).
  ProblemBuilder& causal() {
    p_.window_right = 0;
    return *this;
  }
  // Sliding window; -1 leaves a side unbounded.
  ProblemBuilder& window(int64_t left, int64_t right) {
    p_.window_left = left;
    p_.window_right = right;
    return *this;
  }
  ProblemBuilder& scale(double s) {
    p_.scale = s;
    return *this;
  }
  ProblemBuilder& softcap(double c) {
    p_.softcap = c;
    return *this;
  }
  ProblemBuilder& bias(BroadcastShape s) {
    p_.bias = s;
    return *this;
  }
  ProblemBuilder& mask(BroadcastShape s) {
    p_.mask = s;
    return *this;
  }
  ProblemBuilder& mask(BroadcastShape s, double keep) {
    p_.mask = s;
    p_.mask_keep = keep;
    return *this;
  }
  ProblemBuilder& alibi(bool on = true) {
    p_.alibi = on;
    return *this;
  }
  ProblemBuilder& sinks(bool on = true) {
    p_.sinks = on;
    return *this;
  }
  ProblemBuilder& dropout(double p) {
    p_.dropout_p = p;
    return *this;
  }
  // FP8 inputs: dtype e4m3 / e5m2 with descale factors of the granularity given (amax_fraction < 1: values
  // beyond that fraction of a group's amax saturate).
  ProblemBuilder& fp8(DType d, Descale g, double amax_fraction = 1.0) {
    p_.dtype = d;
    p_.descale = g;
    p_.amax_fraction = amax_fraction;
    return *this;
  }
  ProblemBuilder& dtype(DType d) {
    p_.dtype = d;
    return *this;
  }

  AttentionProblem build() const { return p_; }

 private:
  AttentionProblem p_;
};

// Problem i of a random set whose mask edges fall on and beside every block boundary (for models that count
// masked blocks in closed form, against a block-by-block test): lengths 1 .. 320 (every residue of 64- and
// 128-row blocks comes up), windows 0 .. 320; by i % 5 causal, a window with both edges, a right edge alone, a
// left edge with the diagonal, none; every 4th of two variable-length sequences; d64 every 3rd, else d128; bf16.
inline AttentionProblem masked_edges_problem(std::mt19937& rng, int i, int64_t heads_q, int64_t heads_kv) {
  const auto draw = [&](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  };
  ProblemBuilder pb;
  pb.heads(heads_q, heads_kv).head_dim(i % 3 == 0 ? 64 : 128).dtype(DType::BF16);
  if (i % 4 == 3)
    pb.varlen({draw(1, 320), draw(1, 320)}, {draw(1, 320), draw(1, 320)});
  else
    pb.batch(draw(1, 2)).seqlen(draw(1, 320), draw(1, 320));
  const int64_t left = draw(0, 320), right = draw(0, 320);
  if (i % 5 == 0) pb.causal();
  if (i % 5 == 1) pb.window(left, right);
  if (i % 5 == 2) pb.window(-1, right);
  if (i % 5 == 3) pb.window(left, 0);
  return pb.build();
}

}  // namespace flashsim::test
