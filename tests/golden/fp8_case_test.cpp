// Golden cases with FP8 inputs: q, k, v in F8_E4M3 / F8_E5M2 and the descale tensors round-trip through the file
// and recompute to the same bytes; the case is forward only (o, lse; no do); other correct FP8 pipelines pass
// (FA1's loop order, FA2 at other tiles, a kernel that dequantizes and computes in fp32, fp16 or bf16); descales
// applied twice, a per-tensor descale used where the case gives one per (batch, kv head), and P's 2^8 left in the
// lse fail; a file missing a descale or holding the wrong shape is refused naming the tensor; cases without FP8
// write no field.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "flashsim/error.h"
#include "flashsim/golden/case_file.h"
#include "flashsim/golden/verify.h"

namespace flashsim::golden {
namespace {

constexpr const char* kSpec = R"({"name": "f8", "defaults": {"seqlen": 60, "head_dim": 32, "dtype": "e4m3"},
  "cases": [
    {"name": "head-gqa-causal", "batch": 2, "heads_q": 4, "heads_kv": 2, "seqlen_q": 50, "causal": true,
     "descale": "per-head"},
    {"name": "tensor-e5m2", "batch": 2, "heads_q": 2, "dtype": "e5m2", "descale": "per-tensor"},
    {"name": "varlen-saturate", "heads_q": 2, "seqlens_q": [9, 0, 33], "seqlens_k": [20, 4, 33],
     "descale": "per-head", "amax_fraction": 0.5, "sinks": true},
    {"name": "none", "heads_q": 2, "descale": "none", "magnitude": 2.0},
    {"name": "plain-bf16", "heads_q": 2, "dtype": "bf16"}]})";

std::map<std::string, GoldenCase> cases() {
  std::map<std::string, GoldenCase> out;
  for (const auto& c : parse_suite_spec(kSpec, "f8").cases) out.emplace(c.name, c);
  return out;
}

// A forward through the emulated pipeline in `compute` (the case's FP8 format: o in bf16; fp32: on the
// dequantized inputs), stored as a kernel stores it.
Outputs candidate(const LoadedCase& lc, DType compute, Algorithm fwd = Algorithm::Fa1,
                  const TileConfig& tile = {}) {
  const AttentionProblem& p = lc.c.problem;
  AttentionOutputs got;
  EXPECT_TRUE(compute_emulated(p, lc.inputs, compute, {}, got, fwd, Algorithm::Fa2, tile));
  Outputs out;
  for (const auto& name : output_names(p)) {
    const DType storage = name == "lse" ? DType::F32 : is_fp8(compute) ? DType::BF16 : compute;
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

TEST(Fp8Cases, InputsAndOutputsRoundTrip) {
  for (const auto& [name, c] : cases()) {
    const SafetensorsFile f = make_case_file(c, {});
    const LoadedCase lc = load_case(parse(serialize(f), name), name);
    const AttentionProblem& p = lc.c.problem;
    EXPECT_EQ(p.dtype, c.problem.dtype) << name;
    EXPECT_EQ(p.descale, c.problem.descale) << name;
    EXPECT_EQ(p.amax_fraction, c.problem.amax_fraction) << name;
    const bool descaled = p.descale != Descale::None;
    for (const char* t : {"q_descale", "k_descale", "v_descale"})
      EXPECT_EQ(f.find(t) != nullptr, descaled) << name;
    EXPECT_EQ(f.find("do") != nullptr, !p.fp8()) << name;
    EXPECT_EQ(f.find("q")->dtype, st_dtype_of(p.dtype)) << name;
    EXPECT_EQ(lc.outputs.count("dq"), p.fp8() ? 0u : 1u) << name;
    EXPECT_EQ(lc.metadata.contains("descale"), descaled) << name;
    EXPECT_EQ(lc.metadata.contains("amax_fraction"), p.amax_fraction != 1) << name;
    EXPECT_EQ(lc.metadata["reference"].contains("emulated_fp8"), p.fp8()) << name;
    if (p.fp8()) {  // tolerances for the case's FP8 format, fp32, fp16, bf16; o's emulated storage in FP8 is bf16
      EXPECT_EQ(lc.tolerances.size(), 4u) << name;
      EXPECT_EQ(lc.tolerances.at(std::string(dtype_name(p.dtype))).at("o").storage, DType::BF16) << name;
    }
    const AttentionInputs drawn = make_random_inputs(p, c.seed, c.magnitude);
    EXPECT_EQ(lc.inputs.q, drawn.q) << name;
    EXPECT_EQ(lc.inputs.v, drawn.v) << name;
    EXPECT_EQ(lc.inputs.q_descale, drawn.q_descale) << name;
    EXPECT_EQ(lc.inputs.v_descale, drawn.v_descale) << name;
    for (const auto& [out, values] : recompute_exact(lc, {}))
      EXPECT_EQ(values, lc.outputs.at(out)) << name << out;
  }
}

// FA3's order rounds P = 2^8 e^(S - m) before normalizing, as FA1 and FA2 at any tile do here. (Two-pass and
// naive normalize P by l first: 2^8 P / l falls into the FP8 subnormals on long rows, a coarser pipeline that may
// exceed the bound, as it does on the magnitude-2 case below.)
TEST(Fp8Cases, OtherCorrectPipelinesPass) {
  TileConfig small;
  small.block_q = 32;
  small.block_k = 16;
  for (const auto& [name, c] : cases()) {
    if (!c.problem.fp8()) continue;
    const LoadedCase lc = load_case(make_case_file(c, {}), name);
    const DType d = lc.c.problem.dtype;
    EXPECT_TRUE(verify_case(lc, candidate(lc, d, Algorithm::Fa1), {}).pass) << name << " fa1";
    EXPECT_TRUE(verify_case(lc, candidate(lc, d, Algorithm::Fa2, small), {}).pass) << name << " fa2 32x16";
    EXPECT_TRUE(verify_case(lc, candidate(lc, d, Algorithm::Fa1, small), {}).pass) << name << " fa1 32x16";
    for (DType up : {DType::F32, DType::F16, DType::BF16})  // a kernel that dequantizes and computes in `up`
      EXPECT_TRUE(verify_case(lc, candidate(lc, up), {}).pass) << name << " " << dtype_name(up);
  }
}

TEST(Fp8Cases, PlantedBugsFail) {
  const auto all = cases();
  for (const char* name : {"head-gqa-causal", "tensor-e5m2", "varlen-saturate"}) {
    const LoadedCase lc = load_case(make_case_file(all.at(name), {}), name);
    const AttentionProblem& p = lc.c.problem;
    const auto run = [&](const AttentionInputs& in) {
      AttentionOutputs got;
      EXPECT_TRUE(compute_emulated(p, in, p.dtype, {}, got));
      Outputs out = candidate(lc, p.dtype);
      std::vector<double> o = got.get("o");
      for (double& x : o) x = round_to(x, DType::BF16);
      out.tensors["o"].values = o;
      out.tensors["lse"].values = got.get("lse");
      return verify_case(lc, out, {});
    };
    // The descales applied twice: the kernel's descales squared.
    AttentionInputs twice = lc.inputs;
    for (auto* d : {&twice.q_descale, &twice.k_descale, &twice.v_descale})
      for (double& x : *d) x = round_to(x * x, DType::F32);
    const CaseVerdict cv = run(twice);
    EXPECT_FALSE(output_passes(cv, "o")) << name;
    EXPECT_FALSE(output_passes(cv, "lse")) << name;
    // A per-tensor kernel given per-(batch, kv head) descales reads the first for every head.
    if (p.descale == Descale::PerHead) {
      AttentionInputs first = lc.inputs;
      for (auto* d : {&first.q_descale, &first.k_descale, &first.v_descale})
        std::fill(d->begin(), d->end(), d->at(0));
      EXPECT_FALSE(run(first).pass) << name;
    }
    // P's 2^8 left in the lse (its row sum not divided by 2^8): lse + 8 ln 2.
    Outputs out = candidate(lc, p.dtype);
    for (double& x : out.tensors["lse"].values) x = static_cast<float>(x + 8 * std::log(2.0));
    EXPECT_FALSE(output_passes(verify_case(lc, out, {}), "lse")) << name;
  }
}

std::string load_error(SafetensorsFile f) {
  try {
    load_case(f, "file");
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(Fp8Cases, MissingOrMisshapenDescalesAreRefused) {
  const SafetensorsFile good = make_case_file(cases().at("head-gqa-causal"), {});
  for (const char* tensor : {"q_descale", "k_descale", "v_descale"}) {
    SafetensorsFile f = good;
    std::erase_if(f.tensors, [&](const auto& t) { return t.first == tensor; });
    EXPECT_NE(load_error(f).find(std::string("has no tensor '") + tensor + "'"), std::string::npos)
        << load_error(f);
    f = good;
    for (auto& [n, t] : f.tensors)
      if (n == tensor) t.shape = {t.elements()};
    EXPECT_NE(load_error(f).find(std::string("tensor '") + tensor + "' has shape"), std::string::npos)
        << load_error(f);
  }
  // A descale that is not > 0 is refused naming it.
  SafetensorsFile f = good;
  for (auto& [n, t] : f.tensors)
    if (n == "k_descale")
      t = Tensor::from_doubles(StDType::F32, t.shape, std::vector<double>(t.elements(), 0.0));
  EXPECT_NE(load_error(f).find("k_descale"), std::string::npos) << load_error(f);
}

}  // namespace
}  // namespace flashsim::golden
