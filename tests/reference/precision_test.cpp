// Precision modes: fp32 accumulation and the emulated bf16/fp16 GPU pipeline land in their expected error
// bands against the exact result, and every mode is deterministic.
#include <gtest/gtest.h>

#include <ostream>
#include <string>

#include "flashsim/ref/attention.h"
#include "test_util.h"

namespace flashsim::test {
namespace {

using namespace flashsim::ref;

double max_abs(const std::vector<double>& x) {
  double m = 0;
  for (double v : x) m = std::max(m, std::fabs(v));
  return m;
}

double max_abs_diff(const std::vector<double>& a, const std::vector<double>& b) {
  double m = 0;
  for (size_t n = 0; n < a.size(); ++n) m = std::max(m, std::fabs(a[n] - b[n]));
  return m;
}

struct Band {
  DType dtype;
  Precision precision;
};
// "bf16_emulated": the input dtype, then the precision mode.
std::string band_name(const Band& b) {
  return std::string(dtype_name(b.dtype)) + "_" + std::string(precision_name(b.precision));
}
void PrintTo(const Band& b, std::ostream* os) {
  *os << band_name(b);
}

class PrecisionBand : public ::testing::TestWithParam<Band> {};

TEST_P(PrecisionBand, ErrorWithinExpectedBand) {
  const AttentionProblem p = base(300, 300, 64).heads(4, 2).causal().dtype(GetParam().dtype).build();
  const AttentionInputs in = make_random_inputs(p, 5);
  RunOptions opt;
  opt.precision = GetParam().precision;
  const TileConfig tile = tiles(64, 64);
  const ForwardResult exact = forward(p, in, Algorithm::Naive, tile);
  const Gradients g_exact = backward(p, in, exact, Algorithm::Naive, tile);
  const ForwardResult r = forward(p, in, Algorithm::Fa2, tile, opt);
  const Gradients g = backward(p, in, r, Algorithm::Fa2, tile, opt);
  // u: unit roundoff of the type the pipeline rounds to (the input dtype when emulating, else fp32).
  const double u = opt.precision == Precision::Emulated ? unit_roundoff(p.dtype) : unit_roundoff(DType::F32);
  // o = sum_j p_j v_j: rounding P (relative u each) and o itself (relative u) moves o by about 2u * max|v|,
  // plus the fp32 score and exp errors (a few u); the error must also be visibly nonzero (it really rounds).
  const double err_o = max_abs_diff(r.o, exact.o);
  EXPECT_LT(err_o, 4 * u * max_abs(in.v));
  EXPECT_GT(err_o, 0.05 * u * max_abs(exact.o));
  // Gradients: dS rounded too; a wider band (sums over seqlen = 300 terms, whose fp32 rounding errors grow
  // like sqrt(300) u ~ 17u in a random walk, in an order that depends on the CPU's BLAS kernel: 1.5e-6 = 8.1u
  // was seen with OpenBLAS's AVX-512 sgemm), still a small multiple of u.
  for (auto [got, want] : {std::pair{&g.dq, &g_exact.dq}, {&g.dk, &g_exact.dk}, {&g.dv, &g_exact.dv}}) {
    const double err = max_abs_diff(*got, *want);
    EXPECT_LT(err, 16 * u * max_abs(*want));
    EXPECT_GT(err, 0.05 * u * max_abs(*want));
  }
  // Deterministic: the same call gives the same bits.
  const ForwardResult again = forward(p, in, Algorithm::Fa2, tile, opt);
  EXPECT_EQ(again.o, r.o);
  EXPECT_EQ(again.lse, r.lse);
}

INSTANTIATE_TEST_SUITE_P(Modes, PrecisionBand,
                         ::testing::Values(Band{DType::BF16, Precision::Emulated},
                                           Band{DType::F16, Precision::Emulated},
                                           Band{DType::F32, Precision::Fp32},
                                           Band{DType::BF16, Precision::Fp32}),
                         [](const auto& pinfo) { return band_name(pinfo.param); });

TEST(Precision, EmulatedOutputsAreRepresentableInTheInputDtype) {
  const AttentionProblem p = base(50, 70, 32).dtype(DType::BF16).bias(BroadcastShape::BHQK).build();
  const AttentionInputs in = make_random_inputs(p, 6);
  RunOptions opt;
  opt.precision = Precision::Emulated;
  const ForwardResult r = forward(p, in, Algorithm::Fa2, tiles(16, 16), opt);
  const Gradients g = backward(p, in, r, Algorithm::Fa2, tiles(16, 16), opt);
  for (const auto* t : {&r.o, &g.dq, &g.dk, &g.dv, &g.dbias})
    for (double x : *t) ASSERT_EQ(round_to(x, DType::BF16), x);
}

TEST(Precision, RoundToMatchesKnownBf16AndFp16Values) {
  // 1 + 2^-8 is halfway between bf16 neighbours 1 and 1 + 2^-7: ties to even gives 1.
  EXPECT_EQ(round_to(1.0 + std::ldexp(1.0, -8), DType::BF16), 1.0);
  // Just above halfway rounds up, even when the excess is below float precision (no double rounding).
  EXPECT_EQ(round_to(1.0 + std::ldexp(1.0, -8) + std::ldexp(1.0, -40), DType::BF16),
            1.0 + std::ldexp(1.0, -7));
  EXPECT_EQ(round_to(1.0 + std::ldexp(1.0, -11) + std::ldexp(1.0, -40), DType::F16),
            1.0 + std::ldexp(1.0, -10));
  EXPECT_EQ(round_to(65504.0, DType::F16), 65504.0);
  EXPECT_TRUE(std::isinf(round_to(70000.0, DType::F16)));
  EXPECT_EQ(round_to(0.1, DType::F32), static_cast<double>(0.1f));
}

}  // namespace
}  // namespace flashsim::test
