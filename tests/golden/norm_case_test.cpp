// Norm cases in the golden format: spec parsing (op, fields, defaults), the case file round trip, the tolerance
// table, verification of another correct summation order in every dtype, the manifest's op, and attention's
// files untouched by the op field.
#include "flashsim/golden/norm_case.h"

#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "flashsim/error.h"
#include "flashsim/golden/case_file.h"
#include "flashsim/golden/generate.h"
#include "flashsim/golden/verify.h"
#include "golden_test_util.h"

namespace flashsim::golden {
namespace {

// Attention defaults (as the default suite has) beside norm cases: a norm case takes only its own fields.
constexpr const char* kSpec = R"({"name": "norms",
  "defaults": {"seqlen": 40, "head_dim": 16, "dtype": "bf16"},
  "cases": [
    {"name": "rms", "op": "rmsnorm", "rows": 33, "hidden": 257, "zero_rows": 2, "outlier_rows": 2},
    {"name": "rms-res-fp16", "op": "rmsnorm", "rows": 300, "hidden": 64, "residual": true, "dtype": "fp16"},
    {"name": "ln-offset", "op": "layernorm", "rows": 20, "hidden": 1000, "offset": 8, "eps": 1e-6},
    {"name": "ln-res-fp32", "op": "layernorm", "rows": 70, "hidden": 129, "residual": true, "dtype": "fp32",
     "zero_rows": 3},
    {"name": "ln-small", "op": "layernorm", "rows": 8, "hidden": 512, "magnitude": 0.001},
    {"name": "attn", "heads_q": 2}
  ]})";

class NormCases : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    cases_ = new std::map<std::string, LoadedCase>;
    for (const auto& c : parse_suite_spec(kSpec, "norms").cases)
      cases_->emplace(c.name, load_case(parse(serialize(make_case_file(c, {})), c.name), c.name));
  }
  static void TearDownTestSuite() { delete cases_; }
  static const LoadedCase& lc(const std::string& name) { return cases_->at(name); }

  // The emulated pipeline in a kernel's Tree order, in `compute`, stored as a kernel stores it.
  static Outputs tree_candidate(const LoadedCase& c, DType compute) {
    NamedOutputs got;
    EXPECT_TRUE(norm_emulated(*c.c.norm, c.norm_inputs, compute, ref::NormOrder::Tree, 0, got));
    Outputs out;
    out.compute = compute;
    for (const auto& name : norm_output_names(*c.c.norm))
      out.tensors[name] = {got.at(name), norm_output_shape(*c.c.norm, name), emulated_storage(name, compute)};
    return out;
  }

  static std::map<std::string, LoadedCase>* cases_;
};
std::map<std::string, LoadedCase>* NormCases::cases_ = nullptr;

TEST_F(NormCases, SpecGivesNormCasesOnlyTheirFields) {
  const auto& c = lc("rms").c;
  ASSERT_TRUE(c.is_norm());
  EXPECT_EQ(op_name(c), "rmsnorm");
  EXPECT_EQ(c.norm->rows, 33);
  EXPECT_EQ(c.norm->hidden, 257);
  EXPECT_EQ(c.norm->dtype, DType::BF16);  // from the defaults: a field of every op
  EXPECT_EQ(c.norm_inputs.zero_rows, 2);
  EXPECT_FALSE(lc("attn").c.is_norm());
  EXPECT_EQ(lc("attn").c.problem.seqlen_q, 40);
  EXPECT_NE(lc("rms").c.description.find("rmsnorm 33x257"), std::string::npos);
}

TEST_F(NormCases, BadFieldsAreNamed) {
  auto err = [](const std::string& cases) {
    try {
      parse_suite_spec(R"({"name": "x", "cases": [)" + cases + "]}", "spec");
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(err(R"({"name": "a", "op": "rmsnorm", "head_dim": 64})")
                .find("'head_dim' is not a field of op rmsnorm"),
            std::string::npos);
  EXPECT_NE(err(R"({"name": "a", "op": "groupnorm"})").find("op 'groupnorm'"), std::string::npos);
  EXPECT_NE(err(R"({"name": "a", "op": "layernorm", "rows": 0})").find("rows"), std::string::npos);
  EXPECT_NE(err(R"({"name": "a", "op": "layernorm", "eps": 0})").find("eps"), std::string::npos);
  EXPECT_NE(err(R"({"name": "a", "op": "layernorm", "residual": 1})").find("residual must be true or false"),
            std::string::npos);
  EXPECT_NE(err(R"({"name": "a", "op": "rmsnorm", "rows": 4, "zero_rows": 3, "outlier_rows": 2})")
                .find("zero_rows"),
            std::string::npos);
  EXPECT_NE(err(R"({"name": "a", "op": "rmsnorm", "dtype": "fp16", "magnitude": 1000, "outlier_rows": 1})")
                .find("would overflow fp16"),
            std::string::npos);  // refused before any input is drawn
}

TEST_F(NormCases, CaseJsonRoundTrips) {
  for (const auto& [name, l] : *cases_) {
    const GoldenCase back = case_from_json(case_to_json(l.c), name);
    EXPECT_EQ(case_to_json(back), case_to_json(l.c)) << name;
  }
}

TEST_F(NormCases, AttentionCasesCarryNoOp) {
  // existing golden files stay byte-identical: op is written only for other ops
  EXPECT_FALSE(case_to_json(lc("attn").c).contains("op"));
  EXPECT_EQ(case_to_json(lc("rms").c)["op"], "rmsnorm");
  // and an explicit "attention" reads as the default
  const auto j = nlohmann::json::parse(R"({"op": "attention", "seqlen": 8, "head_dim": 8, "name": "a"})");
  EXPECT_FALSE(case_from_json(j, "x").is_norm());
}

TEST_F(NormCases, FileHoldsTheNamedTensorsInTheirShapes) {
  const LoadedCase& l = lc("ln-res-fp32");
  const std::vector<std::string> want = {"y", "h", "rstd", "mean", "dx", "dweight", "dbias", "dresidual"};
  EXPECT_EQ(output_names(l.c), want);
  EXPECT_EQ(output_shape(l.c, "y"), (std::vector<int64_t>{70, 129}));
  EXPECT_EQ(output_shape(l.c, "rstd"), (std::vector<int64_t>{70}));
  EXPECT_EQ(output_shape(l.c, "dweight"), (std::vector<int64_t>{129}));
  EXPECT_EQ(norm_input_names(*l.c.norm), (std::vector<std::string>{"x", "weight", "bias", "residual", "dy"}));
  EXPECT_EQ(output_names(lc("rms").c), (std::vector<std::string>{"y", "rstd", "dx", "dweight"}));
  EXPECT_THROW(output_shape(lc("rms").c, "mean"), InputError);  // RMSNorm has no mean
  // the zero rows read back as zeros, their rstd is 1/sqrt(eps)
  for (int64_t r : l.c.norm_inputs.zero_row_indices(70)) {
    EXPECT_EQ(l.norm_inputs.x[r * 129], 0.0);
    EXPECT_NEAR(l.outputs.at("rstd")[r], 1 / std::sqrt(1e-5), 1e-9);
  }
  // tolerances for fp32, fp16, bf16 and every output; rstd and mean stored in fp32 whatever the compute dtype
  for (const char* d : {"fp32", "fp16", "bf16"}) {
    ASSERT_TRUE(l.tolerances.count(d)) << d;
    EXPECT_EQ(l.tolerances.at(d).size(), want.size());
    EXPECT_EQ(l.tolerances.at(d).at("rstd").storage, DType::F32);
    EXPECT_EQ(l.tolerances.at(d).at("dx").factor, kBackwardFactor);
    EXPECT_EQ(l.tolerances.at(d).at("y").factor, kForwardFactor);
  }
}

TEST_F(NormCases, RecomputedExactEqualsTheStoredOutputs) {
  for (const auto& [name, l] : *cases_) {
    const auto now = recompute_exact(l, {});
    for (const auto& [out, stored] : l.outputs) EXPECT_EQ(now.at(out), stored) << name << " " << out;
  }
}

TEST_F(NormCases, AnotherSummationOrderPassesInEveryDtype) {
  for (const auto& [name, l] : *cases_) {
    if (!l.c.is_norm()) continue;
    for (DType d : {DType::F32, DType::F16, DType::BF16}) {
      const CaseVerdict cv = verify_case(l, tree_candidate(l, d), {});
      EXPECT_TRUE(cv.pass) << name << " " << dtype_name(d);
      EXPECT_EQ(cv.outputs.size(), output_names(l.c).size());
    }
  }
}

TEST_F(NormCases, DroppedResidualGradientAndPerturbedStatisticsFail) {
  const LoadedCase& l = lc("rms-res-fp16");
  Outputs out = tree_candidate(l, DType::F16);
  for (double& v : out.tensors["dresidual"].values) v = 0;  // the residual gradient dropped
  // rstd off by the N-1 variance factor sqrt(N / (N - 1)): far beyond fp32 rounding
  for (double& v : out.tensors["rstd"].values) v = round_to(v * std::sqrt(64.0 / 63.0), DType::F32);
  const CaseVerdict cv = verify_case(l, out, {});
  EXPECT_FALSE(cv.pass);
  for (const auto& o : cv.outputs)
    EXPECT_EQ(o.pass, o.output != "dresidual" && o.output != "rstd") << o.output;
}

TEST_F(NormCases, OutputsOfAnotherOpAreUnknownOnlyToTheCase) {
  VerifyOptions opt;
  opt.outputs = {"o"};  // attention's output only: nothing of this case would be checked
  EXPECT_THROW(verify_case(lc("rms"), {}, opt), InputError);
  opt.outputs = {"o", "y"};  // the case's own are checked (y missing: a failure, not an error)
  EXPECT_EQ(verify_case(lc("rms"), {}, opt).outputs.size(), 1u);
  opt.outputs = {"z"};
  EXPECT_THROW(verify_case(lc("rms"), {}, opt), InputError);
}

TEST(NormSuite, ManifestNamesTheOpAndVerifySkipsOtherOpsCases) {
  test::Scratch dir("norm-suite");
  const SuiteSpec spec = parse_suite_spec(kSpec, "norms");
  const Manifest m = generate_suite(spec, dir / "g", {});
  int norms = 0;
  for (const auto& e : m.cases) {
    norms += !e.op.empty();
    EXPECT_EQ(e.op.empty(), e.name == "attn") << e.name;
  }
  EXPECT_EQ(norms, 5);
  // the op survives the manifest's round trip, and attention's entry has no "op" key
  const std::string text = read_text_file(dir / "g" / "manifest.json");
  const Manifest back = parse_manifest(text, "manifest");
  for (size_t i = 0; i < m.cases.size(); ++i) EXPECT_EQ(back.cases[i].op, m.cases[i].op);
  const auto j = nlohmann::json::parse(text);
  EXPECT_FALSE(j["cases"][5].contains("op"));
  // check recomputes the norm outputs
  for (const auto& c : check_suite(dir / "g", {})) EXPECT_TRUE(c.ok()) << c.name << " " << c.problem;
  // a forward-only attention kernel's verify (--outputs o,lse) skips the norm cases instead of passing them
  std::filesystem::create_directories(dir / "cand");
  VerifyOptions opt;
  opt.outputs = {"o", "lse"};
  const VerifyReport r = verify_suite(dir / "g", dir / "cand", opt);
  EXPECT_EQ(r.cases.size(), 1u);
  EXPECT_EQ(r.cases_skipped, 5);
}

}  // namespace
}  // namespace flashsim::golden
