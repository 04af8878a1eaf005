// Golden cases with attention sinks and dropout: the sinks / dropout_keep inputs and the dsinks output round-trip
// through the file and recompute to the same bytes; other correct pipelines pass (another loop order, fp16);
// a dsinks with the wrong sign, an o dropped by (1 - p) and a dropped mask fail; a file missing its sinks or keep
// mask, or holding the wrong shape, is refused naming the tensor; cases without them write neither field.
#include <gtest/gtest.h>

#include <algorithm>

#include "flashsim/error.h"
#include "flashsim/golden/case_file.h"
#include "flashsim/golden/verify.h"

namespace flashsim::golden {
namespace {

constexpr const char* kSpec = R"({"name": "sd", "defaults": {"seqlen": 40, "head_dim": 16, "dtype": "bf16"},
  "cases": [
    {"name": "sinks", "batch": 2, "heads_q": 4, "heads_kv": 2, "seqlen_q": 50, "causal": true, "sinks": true},
    {"name": "dropout", "batch": 2, "heads_q": 2, "dropout_p": 0.3, "bias": "1hqk"},
    {"name": "both-varlen", "heads_q": 2, "seqlens_q": [9, 0, 33], "seqlens_k": [20, 4, 33], "sinks": true,
     "dropout_p": 0.5, "dtype": "fp16"},
    {"name": "plain", "heads_q": 2}]})";

std::map<std::string, GoldenCase> cases() {
  std::map<std::string, GoldenCase> out;
  for (const auto& c : parse_suite_spec(kSpec, "sd").cases) out.emplace(c.name, c);
  return out;
}

// Two-pass forward, naive backward through the emulated pipeline in `compute`, stored as a kernel stores them.
Outputs candidate(const LoadedCase& lc, DType compute) {
  const AttentionProblem& p = lc.c.problem;
  AttentionOutputs got;
  EXPECT_TRUE(compute_emulated(p, lc.inputs, compute, {}, got, Algorithm::TwoPass, Algorithm::Naive));
  Outputs out;
  for (const auto& name : output_names(p)) {
    const DType storage = name == "lse" || name == "dsinks" ? DType::F32 : compute;
    std::vector<double> v = got.get(name);
    for (double& x : v) x = round_to(x, storage);
    out.tensors[name] = {std::move(v), output_shape(p, name), storage};
  }
  out.compute = compute;
  return out;
}

bool output_passes(const CaseVerdict& cv, const std::string& name) {
  for (const auto& o : cv.outputs)
    if (o.output == name) return o.pass;
  throw std::runtime_error("no verdict for " + name);
}

TEST(SinksDropoutCases, InputsAndOutputsRoundTrip) {
  for (const auto& [name, c] : cases()) {
    const SafetensorsFile f = make_case_file(c, {});
    const LoadedCase lc = load_case(parse(serialize(f), name), name);
    const AttentionProblem& p = lc.c.problem;
    EXPECT_EQ(p.sinks, c.problem.sinks) << name;
    EXPECT_EQ(p.dropout_p, c.problem.dropout_p) << name;
    EXPECT_EQ(f.find("sinks") != nullptr, p.sinks) << name;
    EXPECT_EQ(f.find("dropout_keep") != nullptr, p.dropout()) << name;
    EXPECT_EQ(lc.outputs.count("dsinks"), p.sinks ? 1u : 0u) << name;
    EXPECT_EQ(lc.metadata.contains("sinks"), p.sinks) << name;
    EXPECT_EQ(lc.metadata.contains("dropout_p"), p.dropout()) << name;
    const AttentionInputs drawn = make_random_inputs(p, c.seed, c.magnitude);
    EXPECT_EQ(lc.inputs.sinks, drawn.sinks) << name;
    EXPECT_EQ(lc.inputs.dropout_keep, drawn.dropout_keep) << name;
    for (const auto& [out, values] : recompute_exact(lc, {}))
      EXPECT_EQ(values, lc.outputs.at(out)) << name << out;
  }
}

TEST(SinksDropoutCases, OtherCorrectPipelinesPass) {
  for (const auto& [name, c] : cases()) {
    const LoadedCase lc = load_case(make_case_file(c, {}), name);
    for (DType d : {lc.c.problem.dtype, DType::F16, DType::F32}) {
      const CaseVerdict cv = verify_case(lc, candidate(lc, d), {});
      EXPECT_TRUE(cv.pass) << name << " " << dtype_name(d);
    }
  }
}

TEST(SinksDropoutCases, PlantedBugsFail) {
  const auto all = cases();
  const LoadedCase sinks = load_case(make_case_file(all.at("sinks"), {}), "sinks");
  Outputs out = candidate(sinks, DType::BF16);
  for (double& x : out.tensors["dsinks"].values) x = -x;  // dsinks' sign flipped
  EXPECT_FALSE(output_passes(verify_case(sinks, out, {}), "dsinks"));

  const LoadedCase drop = load_case(make_case_file(all.at("dropout"), {}), "dropout");
  // o of P scaled by (1 - p) instead of 1 / (1 - p): o x (1 - p)^2
  out = candidate(drop, DType::BF16);
  for (double& x : out.tensors["o"].values) x = round_to(x * 0.7 * 0.7, DType::BF16);
  EXPECT_FALSE(output_passes(verify_case(drop, out, {}), "o"));
  // The mask ignored altogether (the outputs without dropout).
  AttentionProblem p = drop.c.problem;
  p.dropout_p = 0;
  AttentionInputs in = drop.inputs;
  in.dropout_keep.clear();
  AttentionOutputs undropped;
  ASSERT_TRUE(compute_emulated(p, in, DType::BF16, {}, undropped, Algorithm::Fa2, Algorithm::Fa2));
  out = candidate(drop, DType::BF16);
  for (const char* n : {"o", "dq", "dv"}) {
    std::vector<double> v = undropped.get(n);
    for (double& x : v) x = round_to(x, DType::BF16);
    out.tensors[n].values = v;
  }
  const CaseVerdict cv = verify_case(drop, out, {});
  for (const char* n : {"o", "dq", "dv"}) EXPECT_FALSE(output_passes(cv, n)) << n;
  EXPECT_TRUE(output_passes(cv, "lse"));  // lse is the one without dropout
}

std::string load_error(SafetensorsFile f) {
  try {
    load_case(f, "file");
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(SinksDropoutCases, MissingOrMisshapenTensorsAreRefused) {
  const auto all = cases();
  for (const char* tensor : {"sinks", "dropout_keep"}) {
    const SafetensorsFile good = make_case_file(all.at("both-varlen"), {});
    SafetensorsFile f = good;
    std::erase_if(f.tensors, [&](const auto& t) { return t.first == tensor; });
    EXPECT_NE(load_error(f).find(std::string("has no tensor '") + tensor + "'"), std::string::npos)
        << load_error(f);
    f = good;
    for (auto& [n, t] : f.tensors)
      if (n == tensor) t.shape.insert(t.shape.begin(), 1);
    EXPECT_NE(load_error(f).find(std::string("tensor '") + tensor + "' has shape"), std::string::npos)
        << load_error(f);
  }
}

}  // namespace
}  // namespace flashsim::golden
