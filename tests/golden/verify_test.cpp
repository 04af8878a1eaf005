// verify: real candidates pass, buggy ones fail, malformed ones are input errors. The buggy candidates are
// the reference run on a slightly wrong problem (the bugs kernels have): the bounds must catch them.
#include "flashsim/golden/verify.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>

#include "flashsim/error.h"
#include "flashsim/golden/candidate.h"
#include "flashsim/golden/case_file.h"
#include "flashsim/golden/generate.h"
#include "flashsim/golden/safetensors.h"
#include "golden_test_util.h"

namespace flashsim::golden {
namespace {

using test::Scratch;
namespace fs = std::filesystem;

// Writes a candidate per case: the emulated reference in `compute` on the problem after `bug` changes it.
void write_candidates(const fs::path& golden, const fs::path& out, DType compute,
                      const std::function<void(AttentionProblem&)>& bug,
                      const std::function<void(SafetensorsFile&)>& edit = {}) {
  fs::create_directories(out);
  const Manifest m = read_manifest(golden);
  for (const auto& e : m.cases) {
    const LoadedCase lc = load_case(parse(read_file(golden / e.file), e.file), e.file);
    AttentionProblem p = lc.c.problem;
    bug(p);
    AttentionOutputs got;
    ASSERT_TRUE(compute_emulated(p, lc.inputs, compute, {}, got));
    SafetensorsFile f = candidate_file(lc.c.problem, got, compute);
    if (edit) edit(f);
    write_file(out / e.file, serialize(f));
  }
}

class Verify : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    scratch_ = new Scratch("verify");
    GenerateOptions opt;
    generate_suite(parse_suite_spec(test::kSmallSpec, "small"), golden(), opt);
  }
  static void TearDownTestSuite() { delete scratch_; }
  static fs::path golden() { return scratch_->path() / "golden"; }
  static fs::path dir(const std::string& name) { return scratch_->path() / name; }
  static Scratch* scratch_;
};
Scratch* Verify::scratch_ = nullptr;

TEST_F(Verify, IndependentAlgorithmsPassInEveryDtype) {
  // Other forward/backward algorithms and tiles than the tolerance's emulated reference.
  for (DType d : {DType::BF16, DType::F16, DType::F32}) {
    for (auto fwd : {Algorithm::Naive, Algorithm::TwoPass, Algorithm::Fa1}) {
      CandidateOptions opt;
      opt.compute = d;
      opt.forward = fwd;
      opt.backward = fwd == Algorithm::Fa1 ? Algorithm::Fa2 : Algorithm::Naive;
      opt.tile.block_q = 16;
      opt.tile.block_k = 32;
      opt.force = true;
      write_reference_candidate(golden(), dir("cand"), opt);
      const VerifyReport r = verify_suite(golden(), dir("cand"), {});
      EXPECT_TRUE(r.pass()) << dtype_name(d) << " " << algorithm_name(fwd) << ": " << to_json(r).dump(1);
      EXPECT_EQ(r.cases.size(), 5u);
    }
  }
}

TEST(VerifyFp32, OtherSummationOrdersPassWhereGradientsCancel) {
  // One visible key per row: dq and dk are exactly 0 (dS = dP - rowsum(dO o O) cancels), and what a kernel
  // gets there is fp32 rounding noise that depends on its summation order. The tiled reference happens to
  // cancel exactly; naive rows do not. Both are correct fp32 kernels and must pass.
  Scratch s("verify-fp32");
  GenerateOptions gen;
  generate_suite(
      parse_suite_spec(R"({"name": "t", "defaults": {"dtype": "fp32", "heads_q": 2, "head_dim": 64},
    "cases": [{"name": "one-key", "seqlen": 300, "window_left": 0, "window_right": 0},
              {"name": "varlen", "seqlens_q": [64, 200, 13], "seqlens_k": [128, 150, 13], "causal": true}]})",
                       "t"),
      s / "g", gen);
  for (auto fwd : {Algorithm::Naive, Algorithm::TwoPass}) {
    CandidateOptions opt;
    opt.compute = DType::F32;
    opt.forward = fwd;
    opt.backward = Algorithm::Naive;
    opt.force = true;
    write_reference_candidate(s / "g", s / "c", opt);
    const VerifyReport r = verify_suite(s / "g", s / "c", {});
    EXPECT_TRUE(r.pass()) << to_json(r).dump(1);
  }
}

TEST_F(Verify, KernelBugsFail) {
  struct Bug {
    const char* name;
    std::function<void(AttentionProblem&)> apply;
    int64_t min_failed;  // cases the bug shows in
  };
  const std::vector<Bug> bugs = {
      {"scale 2% off", [](AttentionProblem& p) { p.scale = p.softmax_scale() * 1.02; }, 5},
      {"softcap dropped or added", [](AttentionProblem& p) { p.softcap = p.softcap > 0 ? 0 : 1.0; }, 5},
      // window_right one key too far: the causal case and the windowed case
      {"window off by one",
       [](AttentionProblem& p) {
         if (p.window_right >= 0) p.window_right += 1;
       },
       2},
  };
  for (const auto& bug : bugs) {
    write_candidates(golden(), dir("bug"), DType::BF16, bug.apply);
    const VerifyReport r = verify_suite(golden(), dir("bug"), {});
    EXPECT_FALSE(r.pass()) << bug.name;
    EXPECT_GE(r.cases_failed, bug.min_failed) << bug.name << ": " << to_json(r).dump(1);
    fs::remove_all(dir("bug"));
  }
}

TEST_F(Verify, NonFiniteMissingAndUnmaskedFail) {
  // One NaN in dq of every case.
  write_candidates(
      golden(), dir("nan"), DType::BF16, [](AttentionProblem&) {},
      [](SafetensorsFile& f) {
        for (auto& [n, t] : f.tensors)
          if (n == "dq") {
            auto v = t.to_doubles();
            v[v.size() / 2] = NAN;
            t = Tensor::from_doubles(t.dtype, t.shape, v);
          }
      });
  VerifyReport r = verify_suite(golden(), dir("nan"), {});
  EXPECT_EQ(r.outputs_failed, 5);
  for (const auto& c : r.cases)
    for (const auto& o : c.outputs)
      if (o.output == "dq") {
        EXPECT_EQ(o.stats.nonfinite, 1);
      }

  // The lse of a fully masked row (gqa-causal: seqlen_q 50 > seqlen_k 30) written as 0 instead of -inf.
  write_candidates(
      golden(), dir("lse"), DType::BF16, [](AttentionProblem&) {},
      [](SafetensorsFile& f) {
        for (auto& [n, t] : f.tensors)
          if (n == "lse") {
            auto v = t.to_doubles();
            for (double& x : v)
              if (std::isinf(x)) x = 0;
            t = Tensor::from_doubles(t.dtype, t.shape, v);
          }
      });
  VerifyOptions only;
  only.cases = {"gqa-*"};
  r = verify_suite(golden(), dir("lse"), only);
  ASSERT_EQ(r.cases.size(), 1u);
  EXPECT_FALSE(r.pass());

  // A missing output and a missing file are failures, not skips.
  write_candidates(
      golden(), dir("missing"), DType::BF16, [](AttentionProblem&) {},
      [](SafetensorsFile& f) {
        f.tensors.erase(f.tensors.begin());  // drops "o"
      });
  fs::remove(dir("missing") / "plain.safetensors");
  r = verify_suite(golden(), dir("missing"), {});
  EXPECT_EQ(r.cases_failed, 5);
  // Checking only the backward outputs of the present files passes.
  VerifyOptions bwd;
  bwd.outputs = {"dq", "dk", "dv"};
  bwd.cases = {"gqa-causal", "varlen"};
  EXPECT_TRUE(verify_suite(golden(), dir("missing"), bwd).pass());
}

TEST_F(Verify, ComputeDtypeSelectsTheTolerance) {
  // fp32 computation passes with its own (tight) tolerance; the same bf16 outputs fail if claimed as fp32.
  write_candidates(golden(), dir("fp32"), DType::F32, [](AttentionProblem&) {});
  EXPECT_TRUE(verify_suite(golden(), dir("fp32"), {}).pass());
  write_candidates(golden(), dir("bf16"), DType::BF16, [](AttentionProblem&) {});
  VerifyOptions as32;
  as32.compute = DType::F32;
  EXPECT_FALSE(verify_suite(golden(), dir("bf16"), as32).pass());
  EXPECT_TRUE(verify_suite(golden(), dir("bf16"), {}).pass());
}

TEST_F(Verify, AnFp8OutputWithItsScaleFactor) {
  // o stored as cuDNN's FP8 attention stores it: e4m3 codes of o x 64, the scale in the file's metadata. It
  // passes on the e4m3 grid; without the stated scale the values are 64x off; a malformed scale is an error.
  const auto fp8_o = [](const std::string& scale) {
    return [scale](SafetensorsFile& f) {
      for (auto& [n, t] : f.tensors)
        if (n == "o") {
          auto v = t.to_doubles();
          for (double& x : v) x *= 64;
          t = Tensor::from_doubles(StDType::F8_E4M3, t.shape, v);
        }
      if (!scale.empty()) f.metadata[std::string(kScaleKeyPrefix) + "o"] = scale;
    };
  };
  VerifyOptions o_only;
  o_only.outputs = {"o"};
  write_candidates(
      golden(), dir("fp8"), DType::BF16, [](AttentionProblem&) {}, fp8_o("64"));
  const VerifyReport r = verify_suite(golden(), dir("fp8"), o_only);
  EXPECT_TRUE(r.pass());
  ASSERT_FALSE(r.cases.empty());
  EXPECT_EQ(r.cases[0].outputs[0].candidate_dtype, "F8_E4M3");
  write_candidates(
      golden(), dir("fp8-unscaled"), DType::BF16, [](AttentionProblem&) {}, fp8_o(""));
  EXPECT_FALSE(verify_suite(golden(), dir("fp8-unscaled"), o_only).pass());
  write_candidates(
      golden(), dir("fp8-bad"), DType::BF16, [](AttentionProblem&) {}, fp8_o("sixty-four"));
  EXPECT_THROW(verify_suite(golden(), dir("fp8-bad"), o_only), InputError);
}

TEST_F(Verify, MalformedCandidatesAreInputErrors) {
  write_candidates(
      golden(), dir("shape"), DType::BF16, [](AttentionProblem&) {},
      [](SafetensorsFile& f) {
        auto& t = f.tensors[0].second;  // o with a last dim of 1
        t.shape[t.shape.size() - 1] = 1;
        t.data.resize(static_cast<size_t>(t.elements()) * st_dtype_bytes(t.dtype));
      });
  EXPECT_THROW(verify_suite(golden(), dir("shape"), {}), InputError);
  fs::create_directories(dir("trunc"));
  write_text_file(dir("trunc") / "plain.safetensors", "abc");
  EXPECT_THROW(verify_suite(golden(), dir("trunc"), {}), InputError);
  EXPECT_THROW(verify_suite(golden(), dir("no-such-folder"), {}), InputError);
  VerifyOptions bad;
  bad.outputs = {"dx"};
  EXPECT_THROW(verify_suite(golden(), dir("trunc"), bad), InputError);
}

}  // namespace
}  // namespace flashsim::golden
