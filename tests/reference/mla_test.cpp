// DeepSeek's multi-head latent attention (problem.mla): one latent KV head of d_latent + d_rope columns shared
// by every query head, V its first d_latent columns. Every forward algorithm (naive, three-pass, two-pass, FA1,
// FA2, split-KV at several split counts) equals an fp64 formula written here from q and k alone (V taken as
// k's columns in the test, not from the library), for decode from a paged latent cache and for causal prefill;
// the generated inputs hold v == k[..., :d_latent] exactly (cache and appended rows too); dq and dk (V's
// gradient folded in, dv empty) match finite differences of <O, dO> with V moving with K; bad problems and
// inputs whose v is not the view are refused naming the field.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "flashsim/error.h"
#include "flashsim/random.h"
#include "flashsim/ref/attention.h"
#include "oracle.h"
#include "problem_builder.h"
#include "test_util.h"

namespace flashsim::test {
namespace {

using namespace flashsim::ref;

constexpr Algorithm kAlgorithms[] = {Algorithm::Naive, Algorithm::ThreePass, Algorithm::TwoPass,
                                     Algorithm::Fa1, Algorithm::Fa2};

// A decode problem: seqlen_q query tokens per sequence (causal among them, bottom-right), keys from a paged
// latent cache of `page` rows, `fresh` latent rows appended.
AttentionProblem mla_decode(std::vector<int64_t> cache, int64_t page, int64_t heads, int64_t d, int64_t dv,
                            int64_t sq, int64_t fresh) {
  int64_t longest = 1;
  for (const int64_t n : cache) longest = std::max(longest, n + fresh);
  AttentionProblem p = ProblemBuilder()
                           .batch(static_cast<int64_t>(cache.size()))
                           .heads(heads, 1)
                           .seqlen(sq, longest)
                           .head_dim(d, dv)
                           .causal()
                           .dtype(DType::F64)
                           .build();
  p.mla = true;
  p.page_size = page;
  p.cache_seqlens = std::move(cache);
  p.seqlen_new = fresh;
  p.validate();
  return p;
}

AttentionProblem mla_prefill(int64_t batch, int64_t n, int64_t heads, int64_t d, int64_t dv, DType dt) {
  AttentionProblem p =
      ProblemBuilder().batch(batch).heads(heads, 1).seqlen(n).head_dim(d, dv).causal().dtype(dt).build();
  p.mla = true;
  p.validate();
  return p;
}

// The latent keys of sequence b from the inputs a kernel gets, in key order: a paged problem's from the cache
// as stored (row j % page of page block_table[b][j / page], then the appended rows), a dense problem's from k.
std::vector<std::vector<double>> latent_keys(const AttentionProblem& p, const AttentionInputs& in,
                                             int64_t b) {
  std::vector<std::vector<double>> keys;
  const int64_t d = p.head_dim;
  if (!p.kv_cache()) {
    for (int64_t j = 0; j < p.seqlen_k; ++j) {
      const auto* row = &in.k[static_cast<size_t>((b * p.seqlen_k + j) * d)];
      keys.emplace_back(row, row + d);
    }
    return keys;
  }
  const auto& l = in.cache.layout;
  for (int64_t j = 0; j < p.cache_seqlens[b]; ++j) {
    const int64_t page = l.block_table[static_cast<size_t>(b * l.max_blocks_per_seq + j / p.page_size)];
    const auto* row = &in.cache.k_cache[static_cast<size_t>((page * p.page_size + j % p.page_size) * d)];
    keys.emplace_back(row, row + d);
  }
  for (int64_t j = 0; j < p.seqlen_new; ++j) {
    const auto* row = &in.cache.k_new[static_cast<size_t>((b * p.seqlen_new + j) * d)];
    keys.emplace_back(row, row + d);
  }
  return keys;
}

// MLA from its definition, in fp64: s_ij = scale sum_{c < d} q_ic k_jc over all d = d_latent + d_rope columns,
// causal bottom-right (key j visible to query i iff j <= i + len_k - len_q), p = softmax(s),
// o_i = sum_j p_ij k_j[0, d_latent), lse_i = log sum_j e^(s_ij). No tiles, no library code.
OracleOutput mla_formula(const AttentionProblem& p, const AttentionInputs& in) {
  OracleOutput out;
  out.o.assign(static_cast<size_t>(p.o_elems()), 0.0);
  out.lse.assign(static_cast<size_t>(p.lse_elems()), -std::numeric_limits<double>::infinity());
  const int64_t d = p.head_dim, dv = p.head_dim_v, sq = p.seqlen_q;
  const double scale = p.scale ? *p.scale : 1.0 / std::sqrt(static_cast<double>(d));
  for (int64_t b = 0; b < p.batch; ++b) {
    const auto keys = latent_keys(p, in, b);
    const auto lk = static_cast<int64_t>(keys.size());
    for (int64_t h = 0; h < p.heads_q; ++h)
      for (int64_t i = 0; i < sq; ++i) {
        const double* q = &in.q[static_cast<size_t>(((b * sq + i) * p.heads_q + h) * d)];
        std::vector<double> s;
        double m = -std::numeric_limits<double>::infinity();
        for (int64_t j = 0; j <= std::min(lk - 1, i + lk - sq); ++j) {
          double dot = 0;
          for (int64_t c = 0; c < d; ++c) dot += q[c] * keys[static_cast<size_t>(j)][static_cast<size_t>(c)];
          s.push_back(scale * dot);
          m = std::max(m, s.back());
        }
        if (s.empty()) continue;
        double l = 0;
        for (double x : s) l += std::exp(x - m);
        out.lse[static_cast<size_t>((b * p.heads_q + h) * sq + i)] = m + std::log(l);
        double* o = &out.o[static_cast<size_t>(((b * sq + i) * p.heads_q + h) * dv)];
        for (size_t j = 0; j < s.size(); ++j)
          for (int64_t c = 0; c < dv; ++c) o[c] += std::exp(s[j] - m) / l * keys[j][static_cast<size_t>(c)];
      }
  }
  return out;
}

void expect_every_forward_matches(const AttentionProblem& p, const AttentionInputs& in, const TileConfig& t) {
  const OracleOutput want = mla_formula(p, in);
  for (const Algorithm algo : kAlgorithms) {
    const ForwardResult r = forward(p, in, algo, t);
    EXPECT_LE(rel_error(r.o, want.o), 1e-12) << algorithm_name(algo) << " " << p.describe();
    EXPECT_LE(rel_error(r.lse, want.lse), 1e-12) << algorithm_name(algo) << " " << p.describe();
  }
  for (const int splits : {2, 5}) {
    const SplitKvResult r = forward_split_kv(p, in, splits, t);
    EXPECT_LE(rel_error(r.combined.o, want.o), 1e-12) << splits << " splits " << p.describe();
    EXPECT_LE(rel_error(r.combined.lse, want.lse), 1e-12) << splits << " splits " << p.describe();
  }
}

TEST(Mla, DecodeFromTheLatentCacheMatchesTheFormula) {
  // DeepSeek's 512 + 64 at 16 heads, page 64, lengths on and off the page; one row a page; two query tokens
  // with two appended latent rows.
  for (const AttentionProblem& p :
       {mla_decode({100, 64, 1}, 64, 16, 576, 512, 1, 0), mla_decode({7, 30}, 1, 4, 48, 32, 1, 0),
        mla_decode({0, 62, 129}, 64, 8, 96, 64, 2, 2)}) {
    const AttentionInputs in = make_random_inputs(p, 41);
    expect_every_forward_matches(p, in, tiles(16, 32));
  }
}

TEST(Mla, PrefillMatchesTheFormula) {
  const AttentionProblem p = mla_prefill(2, 45, 4, 80, 64, DType::F64);
  expect_every_forward_matches(p, make_random_inputs(p, 42), tiles(16, 16));
  AttentionProblem scaled = p;
  scaled.scale = 0.0721687836;  // FlashMLA's softmax_scale argument: the case's scale, not 1/sqrt(head_dim)
  expect_every_forward_matches(scaled, make_random_inputs(scaled, 43), tiles(7, 13));
}

// The rotary columns take part in the scores: zeroing q's last d_rope columns changes o.
TEST(Mla, TheRotaryColumnsCount) {
  const AttentionProblem p = mla_prefill(1, 20, 2, 48, 32, DType::F64);
  AttentionInputs in = make_random_inputs(p, 44);
  const ForwardResult with = forward(p, in, Algorithm::Fa2);
  for (int64_t r = 0; r < p.total_q() * p.heads_q; ++r)
    for (int64_t c = p.head_dim_v; c < p.head_dim; ++c) in.q[static_cast<size_t>(r * p.head_dim + c)] = 0;
  EXPECT_GT(rel_error(forward(p, in, Algorithm::Fa2).o, with.o), 1e-3);
  EXPECT_LE(rel_error(forward(p, in, Algorithm::Fa2).o, mla_formula(p, in).o), 1e-12);
}

TEST(Mla, GeneratedValuesAreTheKeysLatentColumns) {
  const auto expect_view = [](const std::vector<double>& v, const std::vector<double>& k, int64_t d,
                              int64_t dv, const char* what) {
    ASSERT_EQ(v.size() * static_cast<size_t>(d), k.size() * static_cast<size_t>(dv)) << what;
    for (size_t r = 0; r < v.size() / static_cast<size_t>(dv); ++r)
      for (int64_t c = 0; c < dv; ++c)
        ASSERT_EQ(v[r * static_cast<size_t>(dv) + static_cast<size_t>(c)],
                  k[r * static_cast<size_t>(d) + static_cast<size_t>(c)])
            << what << " row " << r;
  };
  const AttentionProblem decode = mla_decode({5, 70}, 64, 4, 96, 64, 1, 3);
  const AttentionInputs in = make_random_inputs(decode, 45);
  expect_view(in.v, in.k, 96, 64, "v");
  expect_view(in.cache.v_cache, in.cache.k_cache, 96, 64, "v_cache");
  expect_view(in.cache.v_new, in.cache.k_new, 96, 64, "v_new");
  AttentionProblem bf16 = mla_prefill(2, 33, 2, 96, 64, DType::BF16);
  const AttentionInputs pin = make_random_inputs(bf16, 46);
  expect_view(pin.v, pin.k, 96, 64, "prefill v");
  EXPECT_NE(decode.describe().find(" mla"), std::string::npos);
}

// L = <O, dO> as a function of q and of k alone (V = k[..., :d_latent] moves with it), by central differences.
double loss_fd(const AttentionProblem& p, AttentionInputs in, bool of_k, const std::vector<double>& u) {
  const double eps = 1e-5;
  std::vector<double>& x = of_k ? in.k : in.q;
  const std::vector<double> x0 = x;
  double l[2];
  for (int sgn = 0; sgn < 2; ++sgn) {
    for (size_t n = 0; n < x.size(); ++n) x[n] = x0[n] + (sgn == 0 ? eps : -eps) * u[n];
    in.v = latent_values(in.k, p.head_dim, p.head_dim_v);
    l[sgn] = oracle_loss(p, in);
  }
  return (l[0] - l[1]) / (2 * eps);
}

TEST(Mla, PrefillGradientsMatchFiniteDifferences) {
  for (const AttentionProblem& p :
       {mla_prefill(2, 30, 3, 40, 24, DType::F64), mla_prefill(1, 1, 2, 20, 16, DType::F64)}) {
    const TileConfig t = tiles(8, 16);
    const AttentionInputs in = make_random_inputs(p, 47);
    const ForwardResult fwd = forward(p, in, Algorithm::Fa2, t);
    for (const Algorithm algo : {Algorithm::Naive, Algorithm::Fa2}) {
      const Gradients g = backward(p, in, fwd, algo, t);
      EXPECT_TRUE(g.dv.empty()) << "V is K's view: its gradient is in dk";
      ASSERT_EQ(g.dk.size(), in.k.size());
      for (const bool of_k : {false, true}) {
        const std::vector<double>& grad = of_k ? g.dk : g.dq;
        std::vector<double> u(grad.size());
        for (size_t n = 0; n < u.size(); ++n) u[n] = standard_normal(99, of_k ? 2 : 1, n);
        double analytic = 0;
        for (size_t n = 0; n < u.size(); ++n) analytic += grad[n] * u[n];
        const double fd = loss_fd(p, in, of_k, u);
        EXPECT_NEAR(analytic, fd, 1e-6 * std::max(1.0, std::fabs(fd)))
            << (of_k ? "dk" : "dq") << " " << algorithm_name(algo) << " " << p.describe();
      }
      // Along the rotary columns of K alone, dk is the scores' gradient only (V has none there).
      std::vector<double> u(g.dk.size(), 0.0);
      for (size_t r = 0; r < u.size() / static_cast<size_t>(p.head_dim); ++r)
        for (int64_t c = p.head_dim_v; c < p.head_dim; ++c)
          u[r * static_cast<size_t>(p.head_dim) + static_cast<size_t>(c)] =
              standard_normal(98, 3, r * 64 + c);
      double analytic = 0;
      for (size_t n = 0; n < u.size(); ++n) analytic += g.dk[n] * u[n];
      const double fd = loss_fd(p, in, true, u);
      EXPECT_NEAR(analytic, fd, 1e-6 * std::max(1.0, std::fabs(fd))) << "rotary dk " << algorithm_name(algo);
    }
  }
}

// fp32 and the emulated pipeline stay within fp32 rounding of the exact result, forward and backward.
TEST(Mla, Fp32PipelinesStayCloseToExact) {
  const AttentionProblem p = mla_prefill(2, 40, 4, 96, 64, DType::F32);
  const AttentionInputs in = make_random_inputs(p, 48);
  const ForwardResult exact = forward(p, in, Algorithm::Naive);
  const Gradients gexact = backward(p, in, exact, Algorithm::Naive);
  for (auto prec : {Precision::Fp32, Precision::Emulated}) {
    RunOptions opt;
    opt.precision = prec;
    for (const Algorithm algo : kAlgorithms) {
      const ForwardResult r = forward(p, in, algo, tiles(16, 16), opt);
      EXPECT_LE(rel_error(r.o, exact.o), 1e-5) << algorithm_name(algo);
    }
    const ForwardResult f = forward(p, in, Algorithm::Fa2, tiles(16, 16), opt);
    for (const Algorithm algo : {Algorithm::Naive, Algorithm::Fa2}) {
      const Gradients g = backward(p, in, f, algo, tiles(16, 16), opt);
      EXPECT_LE(rel_error(g.dk, gexact.dk), 1e-4) << algorithm_name(algo);
      EXPECT_LE(rel_error(g.dq, gexact.dq), 1e-4) << algorithm_name(algo);
      EXPECT_TRUE(g.dv.empty());
    }
  }
}

void expect_refused(const AttentionProblem& p, const std::string& field) {
  try {
    p.validate();
    ADD_FAILURE() << "accepted: " << p.describe();
  } catch (const InputError& e) {
    EXPECT_EQ(e.field(), field) << e.what();
  }
}

TEST(Mla, BadProblemsAreRefusedNamingTheField) {
  AttentionProblem p = mla_prefill(1, 8, 4, 48, 32, DType::F32);
  AttentionProblem two_heads = p;
  two_heads.heads_kv = 2;
  expect_refused(two_heads, "heads_kv");
  AttentionProblem same_dims = p;
  same_dims.head_dim_v = 48;
  expect_refused(same_dims, "head_dim_v");
  AttentionProblem wider_v = p;
  wider_v.head_dim_v = 64;
  expect_refused(wider_v, "head_dim_v");
  AttentionProblem fp8 = p;
  fp8.dtype = DType::E4M3;
  expect_refused(fp8, "mla");
}

TEST(Mla, ValuesThatAreNotTheViewAreRefused) {
  const AttentionProblem p = mla_prefill(1, 8, 2, 48, 32, DType::F32);
  AttentionInputs in = make_random_inputs(p, 49);
  in.v[5] += 1;
  try {
    forward(p, in, Algorithm::Fa2);
    ADD_FAILURE() << "a v that is not k's view was accepted";
  } catch (const InputError& e) {
    EXPECT_EQ(e.field(), "v");
  }
  const AttentionProblem d = mla_decode({10, 70}, 64, 2, 48, 32, 1, 1);
  AttentionInputs din = make_random_inputs(d, 50);
  din.cache.v_cache[3] = -din.cache.v_cache[3] + 1;
  try {
    din.validate(d);
    ADD_FAILURE() << "a v_cache that is not k_cache's view was accepted";
  } catch (const InputError& e) {
    EXPECT_EQ(e.field(), "v_cache");
  }
}

}  // namespace
}  // namespace flashsim::test
