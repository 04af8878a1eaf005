// Edge cases: fully masked rows, large-magnitude inputs, thread-count independence, bad problems.
#include <gtest/gtest.h>

#include <cstring>

#include "flashsim/error.h"
#include "flashsim/ref/attention.h"
#include "test_util.h"

namespace flashsim::test {
namespace {

using namespace flashsim::ref;

bool all_finite(const std::vector<double>& x) {
  for (double v : x)
    if (!std::isfinite(v)) return false;
  return true;
}

bool same_bytes(const std::vector<double>& a, const std::vector<double>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(double)) == 0;
}

TEST(FullyMaskedRows, GiveZeroOutputMinusInfLseAndZeroGradients) {
  // seqlen_q > seqlen_k with causal, bottom-right aligned: the first seqlen_q - seqlen_k rows see no key.
  const AttentionProblem p = base(50, 20, 16).causal().bias(BroadcastShape::BHQK).build();
  const AttentionInputs in = make_random_inputs(p, 3);
  const TileConfig t = tiles(16, 8);
  for (auto algo : all_algorithms()) {
    for (auto prec : {Precision::Exact, Precision::Emulated}) {
      RunOptions opt;
      opt.precision = prec;
      const ForwardResult r = forward(p, in, algo, t, opt);
      for (int64_t b = 0; b < p.batch; ++b)
        for (int64_t h = 0; h < p.heads_q; ++h)
          for (int64_t i = 0; i < p.seqlen_q; ++i) {
            const bool masked = i < p.seqlen_q - p.seqlen_k;
            const double lse = r.lse[p.lse_index(b, h, i)];
            if (masked) {
              ASSERT_TRUE(std::isinf(lse) && lse < 0) << algorithm_name(algo);
              for (int64_t c = 0; c < p.head_dim_v; ++c)
                ASSERT_EQ(r.o[((p.offset_q(b) + i) * p.heads_q + h) * p.head_dim_v + c], 0.0);
            } else {
              ASSERT_TRUE(std::isfinite(lse));
            }
          }
      for (auto balgo : {Algorithm::Naive, Algorithm::Fa2}) {
        const Gradients g = backward(p, in, r, balgo, t, opt);
        ASSERT_TRUE(all_finite(g.dq) && all_finite(g.dk) && all_finite(g.dv) && all_finite(g.dbias));
        for (int64_t i = 0; i < p.seqlen_q - p.seqlen_k; ++i)
          for (int64_t c = 0; c < p.head_dim; ++c) ASSERT_EQ(g.dq[(i * p.heads_q) * p.head_dim + c], 0.0);
      }
    }
  }
}

TEST(LargeMagnitude, InputsTimes100StayFiniteAndAgree) {
  auto p = base_problem(100, 90, 32);
  p.softcap = 0;
  const AttentionInputs in = make_random_inputs(p, 4, 100.0);
  const TileConfig t = tiles(16, 32);
  const ForwardResult naive = forward(p, in, Algorithm::Naive, t);
  const Gradients g_naive = backward(p, in, naive, Algorithm::Naive, t);
  for (auto algo : all_algorithms()) {
    const ForwardResult r = forward(p, in, algo, t);
    ASSERT_TRUE(all_finite(r.o) && all_finite(r.lse));
    EXPECT_LE(rel_error(r.o, naive.o), 1e-10) << algorithm_name(algo);
  }
  const Gradients g = backward(p, in, naive, Algorithm::Fa2, t);
  ASSERT_TRUE(all_finite(g.dq) && all_finite(g.dk) && all_finite(g.dv));
  // Scores of magnitude ~1e4 carry absolute rounding errors ~1e4 * 1e-16 into exp: a looser, still tight
  // bound.
  EXPECT_LE(rel_error(g.dq, g_naive.dq), 1e-10);
  // In fp32 accumulation too: scores of magnitude ~1e4 must not overflow exp.
  p.dtype = DType::F32;
  const AttentionInputs in32 = make_random_inputs(p, 4, 100.0);
  RunOptions fp32;
  fp32.precision = Precision::Fp32;
  const ForwardResult r32 = forward(p, in32, Algorithm::Fa2, t, fp32);
  ASSERT_TRUE(all_finite(r32.o) && all_finite(r32.lse));
  const Gradients g32 = backward(p, in32, r32, Algorithm::Fa2, t, fp32);
  ASSERT_TRUE(all_finite(g32.dq) && all_finite(g32.dk) && all_finite(g32.dv));
}

TEST(Threads, ResultsAreBitIdenticalFor1_2And16Threads) {
  const AttentionProblem p = base(200, 150, 32).heads(4, 2).bias(BroadcastShape::OneHQK).softcap(3).build();
  const AttentionInputs in = make_random_inputs(p, 8);
  const TileConfig t = tiles(32, 16);
  for (auto prec : {Precision::Exact, Precision::Emulated}) {
    RunOptions one, two, sixteen;
    one.precision = two.precision = sixteen.precision = prec;
    one.threads = 1;
    two.threads = 2;
    sixteen.threads = 16;
    for (auto algo : all_algorithms()) {
      const ForwardResult a = forward(p, in, algo, t, one);
      const ForwardResult b = forward(p, in, algo, t, two);
      const ForwardResult c = forward(p, in, algo, t, sixteen);
      EXPECT_TRUE(same_bytes(a.o, b.o) && same_bytes(a.o, c.o))
          << algorithm_name(algo) << " " << precision_name(prec);
      EXPECT_TRUE(same_bytes(a.lse, b.lse) && same_bytes(a.lse, c.lse)) << algorithm_name(algo);
    }
    const ForwardResult f = forward(p, in, Algorithm::Fa2, t, one);
    for (auto balgo : {Algorithm::Naive, Algorithm::Fa2}) {
      const Gradients a = backward(p, in, f, balgo, t, one);
      const Gradients b = backward(p, in, f, balgo, t, two);
      const Gradients c = backward(p, in, f, balgo, t, sixteen);
      for (auto [x, y, z] : {std::tuple{&a.dq, &b.dq, &c.dq},
                             {&a.dk, &b.dk, &c.dk},
                             {&a.dv, &b.dv, &c.dv},
                             {&a.dbias, &b.dbias, &c.dbias}})
        EXPECT_TRUE(same_bytes(*x, *y) && same_bytes(*x, *z)) << algorithm_name(balgo);
    }
  }
}

// The field an InputError names for a bad problem.
std::string error_field(const AttentionProblem& p, const TileConfig& t = {}) {
  try {
    AttentionProblem ok = p;
    ok.validate();
    t.validate();
    const AttentionInputs in = make_random_inputs(p, 1);
    forward(p, in, Algorithm::Fa2, t);
  } catch (const InputError& e) {
    return e.field();
  }
  return "";
}

TEST(BadProblems, ThrowAnErrorNamingTheField) {
  auto p = base_problem(10, 10, 8);
  EXPECT_EQ(error_field([&] {
              auto x = p;
              x.heads_q = 3;
              x.heads_kv = 2;
              return x;
            }()),
            "heads_kv");
  EXPECT_EQ(error_field([&] {
              auto x = p;
              x.head_dim = 0;
              return x;
            }()),
            "head_dim");
  EXPECT_EQ(error_field([&] {
              auto x = p;
              x.seqlen_q = 0;
              return x;
            }()),
            "seqlen_q");
  EXPECT_EQ(error_field([&] {
              auto x = p;
              x.batch = -1;
              return x;
            }()),
            "batch");
  EXPECT_EQ(error_field([&] {
              auto x = p;
              x.softcap = -1;
              return x;
            }()),
            "softcap");
  EXPECT_EQ(error_field([&] {
              auto x = p;
              x.scale = 0.0;
              return x;
            }()),
            "scale");
  EXPECT_EQ(error_field([&] {
              auto x = p;
              x.window_left = -5;
              return x;
            }()),
            "window_left");
  EXPECT_EQ(error_field([&] {
              auto x = p;
              x.seqlens_q = {3};
              x.seqlens_k = {3, 4};
              return x;
            }()),
            "varlen");
  EXPECT_EQ(error_field([&] {
              auto x = p;
              x.seqlen_q = int64_t{1} << 40;
              x.head_dim = 1 << 20;
              return x;
            }()),
            "head_dim");
  EXPECT_EQ(error_field(p, tiles(0, 16)), "block_q");
  EXPECT_EQ(error_field(p, tiles(16, -2)), "block_k");
}

TEST(BadInputs, MismatchedTensorsAreRejected) {
  auto p = base_problem(10, 12, 8);
  p.bias = BroadcastShape::BHQK;
  AttentionInputs in = make_random_inputs(p, 1);
  in.bias.resize(in.bias.size() - 1);  // not broadcastable to the problem
  try {
    forward(p, in, Algorithm::Naive);
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_EQ(e.field(), "bias");
  }
  in = make_random_inputs(p, 1);
  p.dtype = DType::BF16;  // the fp64 values are not bf16 values
  EXPECT_THROW(forward(p, in, Algorithm::Naive), InputError);
}

TEST(MemoryGuard, NaiveRefusesBeforeAllocatingOverTheLimit) {
  const AttentionProblem p = base(4096, 4096, 8).batch(1).heads(1).build();
  const AttentionInputs in = make_random_inputs(p, 1);
  RunOptions opt;
  opt.max_memory_bytes = 16 << 20;  // 16 MiB: S alone needs 128 MiB
  try {
    forward(p, in, Algorithm::Naive, {}, opt);
    FAIL() << "no error";
  } catch (const MemoryLimitError& e) {
    EXPECT_NE(std::string(e.what()).find("naive forward needs"), std::string::npos) << e.what();
  }
  // The tiled algorithm needs no seqlen x seqlen buffer and runs under the same limit.
  EXPECT_NO_THROW(forward(p, in, Algorithm::Fa2, {}, opt));
}

}  // namespace
}  // namespace flashsim::test
