// The OCP FP8 formats (flashsim/fp8.h) against an independent table of all 256 codes of each
// (tests/data/fp8/fp8_codes.csv, from the specification in exact rational arithmetic), and the
// conversion's rounding and saturation: ties to even, max, just above max, infinities, NaN, subnormals, -0.
// Then FP8 attention: every forward algorithm against the oracle on the dequantized inputs, the generator's
// descales, the emulated pipeline, and bad FP8 problems refused naming the field.
#include "flashsim/fp8.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "flashsim/dtype.h"
#include "flashsim/error.h"
#include "flashsim/random.h"
#include "flashsim/ref/attention.h"
#include "oracle.h"
#include "problem_builder.h"
#include "test_util.h"

using namespace flashsim;

namespace {

struct Table {
  std::vector<double> e4m3, e5m2;
};

Table read_table() {
  std::ifstream in(std::string(FLASHSIM_TEST_DATA) + "/fp8/fp8_codes.csv");
  EXPECT_TRUE(in) << "tests/data/fp8/fp8_codes.csv";
  Table t;
  std::string line;
  std::getline(in, line);  // header
  while (std::getline(in, line)) {
    std::stringstream ss(line);
    std::string code, a, b;
    std::getline(ss, code, ',');
    std::getline(ss, a, ',');
    std::getline(ss, b, ',');
    t.e4m3.push_back(std::strtod(a.c_str(), nullptr));  // strtod reads hex floats, inf and nan
    t.e5m2.push_back(std::strtod(b.c_str(), nullptr));
  }
  return t;
}

bool same_double(double a, double b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  return a == b && std::signbit(a) == std::signbit(b);
}

// The nearest finite table value to x, ties to the even code (the code whose mantissa's last bit is 0),
// saturating: what fp8_round must give, found by brute force over the table.
double nearest_in_table(const std::vector<double>& table, double x) {
  double best = std::numeric_limits<double>::quiet_NaN();
  int best_code = -1;
  for (int c = 0; c < 256; ++c) {
    const double v = table[c];
    if (!std::isfinite(v)) continue;
    if (v == 0 && std::signbit(v) != std::signbit(x)) continue;  // zero keeps x's sign
    if (best_code < 0 || std::fabs(v - x) < std::fabs(best - x) ||
        (std::fabs(v - x) == std::fabs(best - x) && (c & 1) == 0)) {
      best = v;
      best_code = c;
    }
  }
  return best;
}

DType dtype_of(Fp8Format f) {
  return f == Fp8Format::E4M3 ? DType::E4M3 : DType::E5M2;
}

}  // namespace

TEST(Fp8, EveryCodeDecodesAsTheTable) {
  const Table t = read_table();
  ASSERT_EQ(t.e4m3.size(), 256u);
  ASSERT_EQ(t.e5m2.size(), 256u);
  for (int c = 0; c < 256; ++c) {
    EXPECT_TRUE(same_double(fp8_decode(static_cast<uint8_t>(c), Fp8Format::E4M3), t.e4m3[c])) << "e4m3 " << c;
    EXPECT_TRUE(same_double(fp8_decode(static_cast<uint8_t>(c), Fp8Format::E5M2), t.e5m2[c])) << "e5m2 " << c;
  }
}

TEST(Fp8, EveryFiniteCodeEncodesBackToItself) {
  for (Fp8Format f : {Fp8Format::E4M3, Fp8Format::E5M2})
    for (int c = 0; c < 256; ++c) {
      const double v = fp8_decode(static_cast<uint8_t>(c), f);
      if (!std::isfinite(v)) continue;
      EXPECT_EQ(fp8_encode(v, f), c) << v;
      EXPECT_TRUE(same_double(round_to(v, dtype_of(f)), v));
    }
}

TEST(Fp8, RoundsToTheNearestTableValueTiesToEven) {
  const Table t = read_table();
  for (Fp8Format f : {Fp8Format::E4M3, Fp8Format::E5M2}) {
    const std::vector<double>& table = f == Fp8Format::E4M3 ? t.e4m3 : t.e5m2;
    std::vector<double> xs;
    // Every midpoint between neighbouring finite values (the ties) and points just either side of it.
    for (int c = 0; c < 127; ++c) {
      const double a = table[c], b = table[c + 1];
      if (!std::isfinite(a) || !std::isfinite(b)) continue;
      const double mid = (a + b) / 2;
      for (double x : {mid, std::nextafter(mid, 0.0), std::nextafter(mid, 1e9), a, b}) {
        xs.push_back(x);
        xs.push_back(-x);
      }
    }
    // Random values over the whole range, beyond max included.
    for (uint64_t n = 0; n < 20000; ++n) {
      const double e = uniform_open01(7, 1, n) * 40 - 20;
      xs.push_back((n % 2 ? -1 : 1) * std::exp2(e) * (1 + uniform_open01(7, 2, n)));
    }
    for (double x : xs) {
      const double want = nearest_in_table(table, x);
      const double got = fp8_round(x, f);
      ASSERT_TRUE(same_double(got, want))
          << (f == Fp8Format::E4M3 ? "e4m3 " : "e5m2 ") << x << ": " << got << " want " << want;
      EXPECT_TRUE(same_double(static_cast<double>(fp8_round(static_cast<float>(x), f)),
                              fp8_round(static_cast<double>(static_cast<float>(x)), f)));
      EXPECT_TRUE(same_double(fp8_decode(fp8_encode(x, f), f), want)) << x;
    }
  }
}

TEST(Fp8, Boundaries) {
  const auto e4 = [](double x) { return fp8_round(x, Fp8Format::E4M3); };
  const auto e5 = [](double x) { return fp8_round(x, Fp8Format::E5M2); };
  // Ties to even: 1 + 1/16 between 1 (mantissa 000) and 1.125 (001) -> 1; 1 + 3/16 -> 1.25 (010).
  EXPECT_EQ(e4(1.0625), 1.0);
  EXPECT_EQ(e4(1.1875), 1.25);
  EXPECT_EQ(e5(1.125), 1.0);
  EXPECT_EQ(e5(1.375), 1.5);
  // Max, just above, the tie above max (448 + 16: 448's mantissa 110 is even), far above, infinities.
  EXPECT_EQ(e4(448), 448);
  EXPECT_EQ(e4(449), 448);
  EXPECT_EQ(e4(464), 448);
  EXPECT_EQ(e4(465), 448);
  EXPECT_EQ(e4(-1e30), -448);
  EXPECT_EQ(e4(HUGE_VAL), 448);
  EXPECT_EQ(e4(-HUGE_VAL), -448);
  EXPECT_EQ(e4(416), 416);
  EXPECT_EQ(e4(432), 448);  // tie between 416 (101) and 448 (110) -> 448
  EXPECT_EQ(e5(57344), 57344);
  EXPECT_EQ(e5(57345), 57344);
  EXPECT_EQ(e5(61440), 57344);  // the tie with what would be 65536 (inf's code): saturates
  EXPECT_EQ(e5(HUGE_VAL), 57344);
  EXPECT_EQ(e5(-HUGE_VAL), -57344);
  EXPECT_EQ(max_finite(DType::E4M3), 448);
  EXPECT_EQ(max_finite(DType::E5M2), 57344);
  // NaN stays NaN; its code: S.1111.111 (e4m3), S.11111.10 (e5m2).
  EXPECT_TRUE(std::isnan(e4(std::nan(""))));
  EXPECT_TRUE(std::isnan(e5(std::nan(""))));
  EXPECT_EQ(fp8_encode(std::nan(""), Fp8Format::E4M3), 0x7f);
  EXPECT_EQ(fp8_encode(-std::nan(""), Fp8Format::E4M3), 0xff);
  EXPECT_EQ(fp8_encode(std::nan(""), Fp8Format::E5M2), 0x7e);
  // Subnormals: e4m3's smallest 2^-9, half of it ties to 0 (even), just above half rounds up; 3 * 2^-10 is the
  // tie between 2^-9 (001) and 2^-8 (010) -> 2^-8; the largest subnormal 7 * 2^-9 and the smallest normal 2^-6.
  EXPECT_EQ(e4(std::ldexp(1, -9)), std::ldexp(1, -9));
  EXPECT_EQ(e4(std::ldexp(1, -10)), 0);
  EXPECT_EQ(e4(std::nextafter(std::ldexp(1, -10), 1)), std::ldexp(1, -9));
  EXPECT_EQ(e4(3 * std::ldexp(1, -10)), std::ldexp(1, -8));
  EXPECT_EQ(e4(7 * std::ldexp(1, -9)), 7 * std::ldexp(1, -9));
  EXPECT_EQ(e4(15 * std::ldexp(1, -10)), std::ldexp(1, -6));  // tie 7/512 (111) vs 8/512 = 2^-6 -> 2^-6
  EXPECT_EQ(fp8_encode(std::ldexp(1, -9), Fp8Format::E4M3), 0x01);
  EXPECT_EQ(fp8_encode(std::ldexp(1, -6), Fp8Format::E4M3), 0x08);
  EXPECT_EQ(e5(std::ldexp(1, -16)), std::ldexp(1, -16));
  EXPECT_EQ(e5(std::ldexp(1, -17)), 0);
  EXPECT_EQ(e5(3 * std::ldexp(1, -17)), std::ldexp(1, -15));
  EXPECT_EQ(fp8_encode(std::ldexp(1, -14), Fp8Format::E5M2), 0x04);
  // Negative zero and negative values that round to zero keep the sign.
  EXPECT_TRUE(std::signbit(e4(-0.0)));
  EXPECT_TRUE(std::signbit(e4(-std::ldexp(1, -11))));
  EXPECT_EQ(fp8_encode(-0.0, Fp8Format::E4M3), 0x80);
  EXPECT_EQ(fp8_encode(-std::ldexp(1, -18), Fp8Format::E5M2), 0x80);
  // The dtype's spellings and sizes.
  EXPECT_EQ(parse_dtype("e4m3"), DType::E4M3);
  EXPECT_EQ(parse_dtype("F8_E5M2"), DType::E5M2);
  EXPECT_EQ(parse_dtype("float8_e4m3fn"), DType::E4M3);
  EXPECT_EQ(safetensors_name(DType::E4M3), "F8_E4M3");
  EXPECT_EQ(dtype_bytes(DType::E5M2), 1);
  EXPECT_TRUE(is_fp8(DType::E4M3));
  EXPECT_FALSE(is_fp8(DType::BF16));
  EXPECT_EQ(unit_roundoff(DType::E4M3), 1.0 / 16);
  EXPECT_EQ(unit_roundoff(DType::E5M2), 1.0 / 8);
}

// --- FP8 attention (problem.descale): every forward algorithm against the oracle's explicit fp64 formula on
// q * q_descale, k * k_descale, v * v_descale; the inputs the generator draws; the emulated pipeline; refusals.

namespace flashsim::test {
namespace {

using namespace flashsim::ref;

std::vector<Case> fp8_cases() {
  std::vector<Case> out;
  auto add = [&](std::string name, ProblemBuilder b, TileConfig t) {
    out.push_back({std::move(name), b.build(), t});
  };
  add("e4m3_tensor", base(50, 70, 16).fp8(DType::E4M3, Descale::PerTensor), tiles(16, 32));
  add("e4m3_head_gqa_causal",
      base(64, 80, 16).batch(2).heads(6, 2).causal().fp8(DType::E4M3, Descale::PerHead), tiles(16, 16));
  add("e5m2_head", base(40, 40, 32).batch(3).heads(2).fp8(DType::E5M2, Descale::PerHead), tiles(16, 16));
  add("e4m3_none_softcap", base(30, 45, 16).heads(2).softcap(3.0).fp8(DType::E4M3, Descale::None),
      tiles(16, 16));
  add("e4m3_varlen_head",
      base(90, 100, 16)
          .varlen({90, 1, 0, 33}, {100, 40, 7, 0})
          .heads(4, 2)
          .fp8(DType::E4M3, Descale::PerHead),
      tiles(16, 16));
  add("e5m2_saturating_sinks_mask",
      base(40, 50, 16)
          .heads(3)
          .sinks()
          .mask(BroadcastShape::OneHQK)
          .fp8(DType::E5M2, Descale::PerTensor, 0.5),
      tiles(16, 16));
  return out;
}

class Fp8Attention : public ::testing::TestWithParam<Case> {};

TEST_P(Fp8Attention, EveryForwardAlgorithmMatchesTheOracle) {
  const Case& c = GetParam();
  const AttentionInputs in = make_random_inputs(c.problem, 41, 3.0);
  const OracleOutput oracle = oracle_forward(c.problem, in);
  for (auto algo :
       {Algorithm::Naive, Algorithm::ThreePass, Algorithm::TwoPass, Algorithm::Fa1, Algorithm::Fa2}) {
    const ForwardResult r = forward(c.problem, in, algo, c.tile);
    EXPECT_LE(rel_error(r.o, oracle.o), 1e-12) << algorithm_name(algo);
    EXPECT_LE(rel_error(r.lse, oracle.lse), 1e-12) << algorithm_name(algo);
  }
  for (const int splits : {1, 3}) {
    const SplitKvResult r = forward_split_kv(c.problem, in, splits, c.tile);
    EXPECT_LE(rel_error(r.combined.o, oracle.o), 1e-12) << splits << " splits";
  }
}

// The FP8 problem is the fp64 problem on the dequantized inputs: stored * descale of its (batch, kv head).
TEST_P(Fp8Attention, IsTheFp64ProblemOnTheDequantizedInputs) {
  const Case& c = GetParam();
  const AttentionProblem& p = c.problem;
  const AttentionInputs in = make_random_inputs(p, 42);
  AttentionProblem p64 = p;
  p64.dtype = DType::F64;
  p64.descale = Descale::None;
  p64.amax_fraction = 1;
  AttentionInputs in64 = in;
  in64.q_descale.clear();
  in64.k_descale.clear();
  in64.v_descale.clear();
  if (p.descale != Descale::None) {
    for (int64_t b = 0; b < p.batch; ++b) {
      for (int64_t r = p.offset_q(b); r < p.offset_q(b + 1); ++r)
        for (int64_t h = 0; h < p.heads_q; ++h)
          for (int64_t d = 0; d < p.head_dim; ++d)
            in64.q[(r * p.heads_q + h) * p.head_dim + d] *= in.q_descale[p.descale_index(b, p.kv_head(h))];
      for (int64_t r = p.offset_k(b); r < p.offset_k(b + 1); ++r)
        for (int64_t h = 0; h < p.heads_kv; ++h) {
          for (int64_t d = 0; d < p.head_dim; ++d)
            in64.k[(r * p.heads_kv + h) * p.head_dim + d] *= in.k_descale[p.descale_index(b, h)];
          for (int64_t d = 0; d < p.head_dim_v; ++d)
            in64.v[(r * p.heads_kv + h) * p.head_dim_v + d] *= in.v_descale[p.descale_index(b, h)];
        }
    }
  }
  const ForwardResult a = forward(p, in, Algorithm::Fa2, c.tile);
  const ForwardResult want = forward(p64, in64, Algorithm::Naive, c.tile);
  EXPECT_LE(rel_error(a.o, want.o), 1e-13);
  EXPECT_LE(rel_error(a.lse, want.lse), 1e-13);
}

// The emulated pipeline (P in FP8 at 2^8 scale, fp32 accumulation, o in bf16) is off the exact result by about
// P's FP8 rounding, and its o is bf16.
TEST_P(Fp8Attention, EmulatedPipelineIsCloseAndStoresBf16) {
  const Case& c = GetParam();
  const AttentionInputs in = make_random_inputs(c.problem, 43);
  const ForwardResult exact = forward(c.problem, in, Algorithm::Fa2, c.tile);
  RunOptions emu;
  emu.precision = Precision::Emulated;
  const ForwardResult e = forward(c.problem, in, Algorithm::Fa2, c.tile, emu);
  for (double x : e.o) EXPECT_EQ(round_to(x, DType::BF16), x);
  const double u = unit_roundoff(c.problem.dtype);
  EXPECT_LE(rel_error(e.o, exact.o), 2 * u);
  EXPECT_GT(rel_error(e.o, exact.o), unit_roundoff(DType::BF16) / 8);  // P's rounding shows
  EXPECT_LE(rel_error(e.lse, exact.lse), 1e-5);  // lse from the fp32 row sum, unrounded P
}

INSTANTIATE_TEST_SUITE_P(Cases, Fp8Attention, ::testing::ValuesIn(fp8_cases()),
                         [](const auto& pinfo) { return pinfo.param.name; });

TEST(Fp8Inputs, DescalesMapEachGroupsAmaxOntoTheFp8Max) {
  for (DType t : {DType::E4M3, DType::E5M2}) {
    const AttentionProblem p = base(33, 47, 16).batch(2).heads(4, 2).fp8(t, Descale::PerHead).build();
    const AttentionInputs in = make_random_inputs(p, 5, 7.0);
    ASSERT_EQ(in.q_descale.size(), 4u);
    EXPECT_TRUE(in.dout.empty());  // forward only
    // Every (batch, kv head) group of k reaches the FP8 max (its amax maps onto it), none goes beyond.
    for (int64_t b = 0; b < 2; ++b)
      for (int64_t hk = 0; hk < 2; ++hk) {
        double amax = 0;
        for (int64_t r = p.offset_k(b); r < p.offset_k(b + 1); ++r)
          for (int64_t d = 0; d < 16; ++d) amax = std::max(amax, std::fabs(in.k[(r * 2 + hk) * 16 + d]));
        EXPECT_EQ(amax, max_finite(t));
        EXPECT_GT(in.k_descale[p.descale_index(b, hk)], 0);
      }
    // Per tensor: one factor each; amax_fraction 0.25 saturates the values beyond a quarter of the amax.
    const AttentionProblem pt = base(64, 64, 16).heads(2).fp8(t, Descale::PerTensor, 0.25).build();
    const AttentionInputs it = make_random_inputs(pt, 6);
    ASSERT_EQ(it.v_descale.size(), 1u);
    int64_t at_max = 0;
    for (double x : it.v) at_max += std::fabs(x) == max_finite(t);
    EXPECT_GT(at_max, 10);
    // Without descales the draw is rounded straight to FP8.
    const AttentionProblem pn = base(8, 8, 16).fp8(t, Descale::None).build();
    const AttentionInputs in_n = make_random_inputs(pn, 7);
    EXPECT_TRUE(in_n.q_descale.empty());
    for (double x : in_n.q) EXPECT_EQ(round_to(x, t), x);
  }
}

TEST(Fp8Inputs, BadProblemsAndDescalesAreRefusedNamingTheField) {
  auto field_of = [](auto&& f) -> std::string {
    try {
      f();
    } catch (const InputError& e) {
      return e.field();
    }
    return "";
  };
  EXPECT_EQ(field_of([] { base(8, 8, 16).dtype(DType::BF16).build().validate(); }), "");
  AttentionProblem p = base(8, 8, 16).build();
  p.dtype = DType::BF16;
  p.descale = Descale::PerHead;
  EXPECT_EQ(field_of([&] { p.validate(); }), "descale");
  p = base(8, 8, 16).fp8(DType::E4M3, Descale::None, 0.5).build();
  EXPECT_EQ(field_of([&] { p.validate(); }), "amax_fraction");
  p = base(8, 8, 16).fp8(DType::E4M3, Descale::PerTensor, 1.5).build();
  EXPECT_EQ(field_of([&] { p.validate(); }), "amax_fraction");
  p = base(8, 8, 16).fp8(DType::E4M3, Descale::PerTensor).bias(BroadcastShape::BHQK).build();
  EXPECT_EQ(field_of([&] { p.validate(); }), "bias");
  p = base(8, 8, 16).fp8(DType::E5M2, Descale::PerTensor).dropout(0.1).build();
  EXPECT_EQ(field_of([&] { p.validate(); }), "dropout_p");
  EXPECT_EQ(parse_descale("per-head", "descale"), Descale::PerHead);
  EXPECT_EQ(field_of([] { parse_descale("per-batch", "descale"); }), "descale");

  const AttentionProblem ok = base(8, 8, 16).batch(2).heads(2).fp8(DType::E4M3, Descale::PerHead).build();
  const AttentionInputs good = make_random_inputs(ok, 1);
  AttentionInputs bad = good;
  bad.q_descale.pop_back();  // [batch, heads_kv] needs 4
  EXPECT_EQ(field_of([&] { bad.validate(ok); }), "q_descale");
  bad = good;
  bad.k_descale[1] = 0;
  EXPECT_EQ(field_of([&] { bad.validate(ok); }), "k_descale");
  bad = good;
  bad.v_descale[0] = 0.1;  // not an fp32 value
  EXPECT_EQ(field_of([&] { bad.validate(ok); }), "v_descale");
  bad = good;
  bad.v[3] = 449;  // not an e4m3 value
  EXPECT_EQ(field_of([&] { bad.validate(ok); }), "v");
  ForwardResult f = forward(ok, good, Algorithm::Fa2, TileConfig{});
  EXPECT_EQ(field_of([&] { backward(ok, good, f, Algorithm::Fa2, TileConfig{}); }), "dtype");
}

}  // namespace
}  // namespace flashsim::test
