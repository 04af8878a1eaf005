// verify_case and verify_output on outputs held in memory (what a harness calls in-process), and the report
// `golden verify` prints from them.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>

#include "flashsim/error.h"
#include "flashsim/golden/case_file.h"
#include "flashsim/golden/report.h"
#include "flashsim/golden/verify.h"
#include "golden_test_util.h"
#include "run_cli.h"

namespace flashsim::golden {
namespace {

constexpr const char* kSpec = R"({"name": "mem", "defaults": {"seqlen": 40, "head_dim": 16, "dtype": "bf16"},
  "cases": [
    {"name": "gqa", "batch": 2, "heads_q": 4, "heads_kv": 2, "causal": true},
    {"name": "varlen", "heads_q": 2, "seqlens_q": [9, 0, 33], "seqlens_k": [20, 4, 33]},
    {"name": "bias", "batch": 2, "heads_q": 2, "bias": "b1qk", "dtype": "fp16"},
    {"name": "masked-all", "heads_q": 2, "mask": "11qk", "mask_keep": 0.0}]})";

class VerifyCase : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    cases_ = new std::map<std::string, LoadedCase>;
    for (const auto& c : parse_suite_spec(kSpec, "mem").cases)
      cases_->emplace(c.name, load_case(make_case_file(c, {}), c.name));
  }
  static void TearDownTestSuite() { delete cases_; }
  static const LoadedCase& lc(const std::string& name) { return cases_->at(name); }

  // A real candidate: two-pass forward and naive backward through the emulated pipeline in the case's dtype,
  // stored as a FlashAttention-2 kernel stores them (lse in fp32).
  static Outputs candidate(const LoadedCase& c) {
    const AttentionProblem& p = c.c.problem;
    AttentionOutputs got;
    EXPECT_TRUE(compute_emulated(p, c.inputs, p.dtype, {}, got, Algorithm::TwoPass, Algorithm::Naive));
    Outputs out;
    for (const auto& name : output_names(p)) {
      const DType storage = name == "lse" ? DType::F32 : p.dtype;
      std::vector<double> v = got.get(name);
      for (double& x : v) x = round_to(x, storage);
      out.tensors[name] = {std::move(v), output_shape(p, name), storage};
    }
    return out;
  }

  static const OutputVerdict& verdict(const CaseVerdict& cv, const std::string& output) {
    for (const auto& o : cv.outputs)
      if (o.output == output) return o;
    throw std::runtime_error("no verdict for " + output);
  }

  static std::map<std::string, LoadedCase>* cases_;
};
std::map<std::string, LoadedCase>* VerifyCase::cases_ = nullptr;

std::string dump(const CaseVerdict& cv) {
  VerifyReport r;
  r.cases.push_back(cv);
  return to_json(r).dump(1);
}

TEST_F(VerifyCase, CorrectCandidatePasses) {
  for (const auto& name : {"gqa", "varlen", "bias", "masked-all"}) {
    const CaseVerdict cv = verify_case(lc(name), candidate(lc(name)), {});
    EXPECT_TRUE(cv.pass) << dump(cv);
    EXPECT_EQ(cv.outputs.size(), output_names(lc(name).c.problem).size()) << name;
    EXPECT_EQ(cv.compute_dtype, dtype_name(lc(name).c.problem.dtype)) << name;
  }
}

TEST_F(VerifyCase, PerturbedOutputFailsNamingIt) {
  Outputs out = candidate(lc("gqa"));
  for (double& x : out.tensors["dk"].values) x = round_to(x * 1.05, DType::BF16);  // dK 5% off
  const CaseVerdict cv = verify_case(lc("gqa"), out, {});
  EXPECT_FALSE(cv.pass);
  for (const auto& o : cv.outputs) {
    EXPECT_EQ(o.pass, o.output != "dk") << dump(cv);
    EXPECT_EQ(o.note.empty(), o.output != "dk") << dump(cv);
  }
  EXPECT_GT(verdict(cv, "dk").mismatches, 0);
}

TEST_F(VerifyCase, MissingOutputFails) {
  Outputs out = candidate(lc("gqa"));
  out.tensors.erase("lse");
  const CaseVerdict cv = verify_case(lc("gqa"), out, {});
  EXPECT_FALSE(cv.pass);
  const OutputVerdict& lse = verdict(cv, "lse");
  EXPECT_FALSE(lse.present);
  EXPECT_FALSE(lse.pass);
  EXPECT_EQ(lse.note, "output missing from the candidate file");
  EXPECT_TRUE(verdict(cv, "o").pass);
  // A forward-without-lse kernel checked on what it produces passes.
  VerifyOptions no_lse;
  no_lse.outputs = {"o", "dq", "dk", "dv"};
  EXPECT_TRUE(verify_case(lc("gqa"), out, no_lse).pass);
}

TEST_F(VerifyCase, NanWhereTheExactIsFiniteFails) {
  Outputs out = candidate(lc("varlen"));
  out.tensors["o"].values[3] = NAN;
  const CaseVerdict cv = verify_case(lc("varlen"), out, {});
  EXPECT_FALSE(cv.pass);
  const OutputVerdict& o = verdict(cv, "o");
  EXPECT_EQ(o.stats.nonfinite, 1);
  EXPECT_FALSE(o.pass);
  EXPECT_EQ(o.note, "1 NaN/Inf where the exact value is finite");
}

TEST_F(VerifyCase, WrongShapeIsAnInputError) {
  Outputs out = candidate(lc("gqa"));
  auto& shape = out.tensors["o"].shape;  // [2, 40, 4, 16] -> [2, 4, 40, 16]: the same element count
  std::swap(shape[1], shape[2]);
  EXPECT_THROW(verify_case(lc("gqa"), out, {}), InputError);
  out = candidate(lc("gqa"));
  out.tensors["dv"].values.pop_back();  // the right shape, one value short
  EXPECT_THROW(verify_case(lc("gqa"), out, {}), InputError);
  VerifyOptions bad;
  bad.outputs = {"dx"};
  EXPECT_THROW(verify_case(lc("gqa"), candidate(lc("gqa")), bad), InputError);
}

TEST_F(VerifyCase, ComputeDtypeTheOutputsStateIsOverriddenByTheOptions) {
  Outputs out = candidate(lc("gqa"));
  for (auto& [name, t] : out.tensors) t.storage = DType::F32;  // a bf16 computation that stores fp32
  out.compute = DType::F32;                                    // claimed as fp32 computation
  EXPECT_FALSE(verify_case(lc("gqa"), out, {}).pass);
  VerifyOptions as_bf16;
  as_bf16.compute = DType::BF16;
  const CaseVerdict cv = verify_case(lc("gqa"), out, as_bf16);
  EXPECT_TRUE(cv.pass) << dump(cv);
  EXPECT_EQ(cv.compute_dtype, "bf16");
  // A compute dtype the suite has no tolerance for: measured, and failed.
  VerifyOptions as_fp64;
  as_fp64.compute = DType::F64;
  const CaseVerdict none = verify_case(lc("gqa"), out, as_fp64);
  EXPECT_FALSE(none.pass);
  const OutputVerdict& o = verdict(none, "o");
  EXPECT_TRUE(o.present);
  EXPECT_GT(o.stats.max_abs, 0);
  EXPECT_NE(o.note.find("no tolerance for compute dtype fp64"), std::string::npos) << o.note;
}

TEST_F(VerifyCase, WorstIndexNamesTheLayoutsAxes) {
  VerifyOptions only;
  const auto worst = [&](const std::string& name, const std::string& output, int64_t flat) {
    Outputs out = candidate(lc(name));
    out.tensors[output].values[flat] += 1.0;  // far over any bound: the worst element
    only.outputs = {output};
    return verify_case(lc(name), out, only).outputs.at(0).worst_index;
  };
  // gqa: o, dq [b, s, h, d] = [2, 40, 4, 16]; dk, dv over the 2 kv heads; lse [b, h, s]
  EXPECT_EQ(worst("gqa", "o", ((1 * 40 + 37) * 4 + 3) * 16 + 7), "[b1,s37,h3,d7]");
  EXPECT_EQ(worst("gqa", "dk", ((1 * 40 + 5) * 2 + 1) * 16 + 2), "[b1,s5,h1,d2]");
  EXPECT_EQ(worst("gqa", "lse", (0 * 4 + 2) * 40 + 11), "[b0,h2,s11]");
  // varlen: o [total_q, h, d] = [42, 2, 16], lse [h, total_q]
  EXPECT_EQ(worst("varlen", "o", (30 * 2 + 1) * 16 + 9), "[t30,h1,d9]");
  EXPECT_EQ(worst("varlen", "lse", 1 * 42 + 20), "[h1,t20]");
  // dbias over the bias's own shape b1qk: [2, 1, 40, 40]
  EXPECT_EQ(worst("bias", "dbias", (1 * 40 + 3) * 40 + 39), "[b1,h0,q3,k39]");
}

// A NaN where the exact value is finite is the worst element, wherever the largest finite error is (issue 32: the
// worst index pointed at the largest finite error); the JSON gives the index as an object.
TEST_F(VerifyCase, WorstIndexPointsAtANonFiniteValue) {
  Outputs out = candidate(lc("gqa"));
  auto& o = out.tensors["o"].values;
  o[((1 * 40 + 37) * 4 + 3) * 16 + 7] += 1.0;                                     // the largest finite error
  o[((0 * 40 + 5) * 4 + 1) * 16 + 2] = std::numeric_limits<double>::quiet_NaN();  // the non-finite one
  VerifyOptions only;
  only.outputs = {"o"};
  const CaseVerdict cv = verify_case(lc("gqa"), out, only);
  const OutputVerdict& v = cv.outputs.at(0);
  EXPECT_FALSE(v.pass);
  EXPECT_EQ(v.worst_index, "[b0,s5,h1,d2]");
  EXPECT_TRUE(v.worst_nonfinite);
  const auto j = to_json(VerifyReport{{cv}}).at("cases")[0]["outputs"][0]["worst_index"];
  EXPECT_EQ(j["text"], "[b0,s5,h1,d2]");
  EXPECT_EQ(j["flat"], ((0 * 40 + 5) * 4 + 1) * 16 + 2);
  EXPECT_EQ(j["coords"]["s"], 5);
  EXPECT_EQ(j["coords"]["d"], 2);
  EXPECT_TRUE(j["nonfinite"].get<bool>());
}

TEST_F(VerifyCase, AllZeroExactOutputMustBeExact) {
  // Every score masked: o and the gradients are exactly 0, lse is -inf. relL2 does not apply, and the
  // max-abs bound is the floor at 0: two of the smallest bf16 subnormals.
  const CaseVerdict cv = verify_case(lc("masked-all"), candidate(lc("masked-all")), {});
  EXPECT_TRUE(cv.pass) << dump(cv);
  for (const auto& o : cv.outputs) {
    EXPECT_TRUE(o.zero_bound) << o.output;
    EXPECT_FALSE(o.stats.rel_defined) << o.output;
  }
  EXPECT_EQ(verdict(cv, "o").bound_abs, 2 * ulp(0, DType::BF16));
  EXPECT_EQ(verdict(cv, "lse").worst_index, "-");  // no finite exact value
  const auto json = to_json(VerifyReport{{cv}}).at("cases")[0]["outputs"][0];
  EXPECT_TRUE(json["rel_l2"].is_null());
  EXPECT_TRUE(json["bound_rel_l2"].is_null());

  Outputs out = candidate(lc("masked-all"));
  out.tensors["dv"].values[5] = 1e-30;
  const OutputVerdict dv = verdict(verify_case(lc("masked-all"), out, {}), "dv");
  EXPECT_FALSE(dv.pass);
  EXPECT_EQ(dv.note, "max abs error over bound");
  EXPECT_EQ(dv.mismatches, 1);
}

TEST(VerifyReportCli, TableNamesAxesAndShowsUndefinedBounds) {
  test::Scratch s("verify-report");
  const std::string d = s.path().string();
  write_text_file(s / "spec.json", kSpec);
  ASSERT_EQ(flashsim::test::run_cli("golden generate --suite " + d + "/spec.json --out " + d + "/g").code, 0);
  ASSERT_EQ(flashsim::test::run_cli("golden candidate --golden " + d + "/g --out " + d + "/c").code, 0);
  const auto r = flashsim::test::run_cli("golden verify --golden " + d + "/g --candidate " + d + "/c");
  EXPECT_EQ(r.code, 0) << r.out;
  // masked-all: o is all zeros: "~0 (exact)" for its bound, "-" for relL2 and its bound
  EXPECT_NE(r.out.find("~0 (exact)          -          -        [b0,s0,h0,d0]"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("[t"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find(" inf "), std::string::npos) << r.out;

  // `flashsim --help` names every golden subcommand on golden's line.
  const std::string help = flashsim::test::run_cli("--help").out;
  const size_t at = help.find("\n  golden ");
  ASSERT_NE(at, std::string::npos) << help;
  const std::string line = help.substr(at + 1, help.find('\n', at + 1) - at - 1);
  for (const char* sub : {"generate", "merge", "list", "check", "verify", "candidate"})
    EXPECT_NE(line.find(sub), std::string::npos) << sub << ": " << line;
}

// A report that checked no output says so instead of ALL PASS (flashsim-gpu check when every case is skipped).
TEST(VerifyReportText, NothingCheckedIsNotAllPass) {
  VerifyReport none;
  none.cases_skipped = 3;
  const std::string text = format_report(none, false);
  EXPECT_NE(text.find("NOTHING CHECKED"), std::string::npos) << text;
  EXPECT_EQ(text.find("ALL PASS"), std::string::npos) << text;
  VerifyReport one;
  one.outputs_checked = 1;
  EXPECT_NE(format_report(one, false).find("ALL PASS"), std::string::npos);
  one.outputs_failed = 1;
  EXPECT_NE(format_report(one, false).find("SOME OUTPUTS FAILED"), std::string::npos);
}

}  // namespace
}  // namespace flashsim::golden
