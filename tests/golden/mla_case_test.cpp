// Golden MLA cases (problem.mla): the file holds no v, v_cache or v_new (V is the first head_dim_v columns of
// k / k_cache / k_new) and no dv output (dk holds V's gradient); loading rebuilds V from K, the inputs equal the
// generator's and recompute to the same bytes; other correct pipelines pass (FA1, two-pass / naive at other
// tiles, fp32, split-KV); scores from the latent columns alone (the rotary part dropped) and a dk without V's
// gradient fail; a spec's mla defaults are DeepSeek's (heads_kv 1, head_dim 576, head_dim_v 512); cases without
// MLA write no field.
#include <gtest/gtest.h>

#include "flashsim/error.h"
#include "flashsim/golden/case_file.h"
#include "flashsim/golden/verify.h"

namespace flashsim::golden {
namespace {

constexpr const char* kSpec = R"({"name": "m", "defaults": {"mla": true, "heads_q": 8, "head_dim": 80,
  "head_dim_v": 64, "causal": true, "dtype": "bf16"},
  "cases": [
    {"name": "decode", "seqlen_q": 1, "page_size": 64, "cache_seqlens": [1, 100, 64]},
    {"name": "decode-append-page1", "seqlen_q": 2, "seqlen_new": 2, "page_size": 1, "cache_seqlens": [0, 30],
     "num_splits": 3, "dtype": "fp16"},
    {"name": "prefill", "batch": 2, "seqlen": 50},
    {"name": "prefill-varlen-fp32", "seqlens_q": [20, 0, 33], "seqlens_k": [20, 4, 33], "dtype": "fp32"},
    {"name": "plain", "mla": false, "heads_kv": 8, "seqlen": 40}]})";

std::map<std::string, GoldenCase> cases() {
  std::map<std::string, GoldenCase> out;
  for (const auto& c : parse_suite_spec(kSpec, "m").cases) out.emplace(c.name, c);
  return out;
}

// The outputs of `got` stored as a kernel in `compute` stores them (lse in fp32).
Outputs stored(const AttentionProblem& p, const AttentionOutputs& got, DType compute) {
  Outputs out;
  for (const auto& name : output_names(p)) {
    const DType storage = name == "lse" ? DType::F32 : compute;
    std::vector<double> v = got.get(name);
    for (double& x : v) x = round_to(x, storage);
    out.tensors[name] = {std::move(v), output_shape(p, name), storage};
  }
  out.compute = compute;
  return out;
}

Outputs candidate(const LoadedCase& lc, DType compute, Algorithm fwd, Algorithm bwd, const TileConfig& tile) {
  AttentionOutputs got;
  EXPECT_TRUE(compute_emulated(lc.c.problem, lc.inputs, compute, {}, got, fwd, bwd, tile));
  return stored(lc.c.problem, got, compute);
}

TEST(MlaCases, FilesHoldNoValuesAndRoundTrip) {
  for (const auto& [name, c] : cases()) {
    const SafetensorsFile f = make_case_file(c, {});
    const LoadedCase lc = load_case(parse(serialize(f), name), name);
    const AttentionProblem& p = lc.c.problem;
    const bool mla = c.problem.mla;
    EXPECT_EQ(p.mla, mla) << name;
    EXPECT_EQ(lc.metadata.contains("mla"), mla) << name;
    if (!mla) {
      EXPECT_NE(f.find("v"), nullptr);
      EXPECT_NE(f.find("dv"), nullptr);
      continue;
    }
    for (const char* t : {"v", "v_cache", "v_new", "dv"}) EXPECT_EQ(f.find(t), nullptr) << name << " " << t;
    EXPECT_EQ(p.heads_kv, 1) << name;
    EXPECT_NE(f.find(p.kv_cache() ? "k_cache" : "k"), nullptr) << name;
    if (p.seqlen_new > 0) {
      EXPECT_NE(f.find("k_new"), nullptr) << name;
    }
    EXPECT_EQ(lc.outputs.count("dk"), p.kv_cache() ? 0u : 1u) << name;
    const AttentionInputs drawn = make_random_inputs(p, c.seed, c.magnitude);
    EXPECT_EQ(lc.inputs.k, drawn.k) << name;
    EXPECT_EQ(lc.inputs.v, drawn.v) << name;
    EXPECT_EQ(lc.inputs.v, latent_values(lc.inputs.k, p.head_dim, p.head_dim_v)) << name;
    EXPECT_EQ(lc.inputs.cache.v_cache, drawn.cache.v_cache) << name;
    for (const auto& [out, values] : recompute_exact(lc, {}))
      EXPECT_EQ(values, lc.outputs.at(out)) << name << out;
  }
}

TEST(MlaCases, OtherCorrectPipelinesPass) {
  TileConfig small;
  small.block_q = 16;
  small.block_k = 32;
  small.bwd_block_q = 32;
  small.bwd_block_k = 16;
  for (const auto& [name, c] : cases()) {
    if (!c.problem.mla) continue;
    const LoadedCase lc = load_case(make_case_file(c, {}), name);
    const DType d = lc.c.problem.dtype;
    EXPECT_TRUE(verify_case(lc, candidate(lc, d, Algorithm::Fa1, Algorithm::Fa2, small), {}).pass) << name;
    EXPECT_TRUE(verify_case(lc, candidate(lc, d, Algorithm::TwoPass, Algorithm::Naive, {}), {}).pass) << name;
    EXPECT_TRUE(verify_case(lc, candidate(lc, DType::F32, Algorithm::Fa2, Algorithm::Fa2, {}), {}).pass)
        << name;
  }
}

TEST(MlaCases, PlantedBugsFail) {
  for (const auto& [name, c] : cases()) {
    if (!c.problem.mla) continue;
    const LoadedCase lc = load_case(make_case_file(c, {}), name);
    const AttentionProblem& p = lc.c.problem;
    const DType d = p.dtype;
    // The rotary part dropped: the scores of the latent columns alone (q's and k's last columns zeroed; V, the
    // latent columns, unchanged).
    AttentionInputs latent_only = lc.inputs;
    const auto zero_rope = [&](std::vector<double>& t) {
      for (size_t r = 0; r < t.size() / static_cast<size_t>(p.head_dim); ++r)
        for (int64_t col = p.head_dim_v; col < p.head_dim; ++col)
          t[r * static_cast<size_t>(p.head_dim) + static_cast<size_t>(col)] = 0;
    };
    zero_rope(latent_only.q);
    zero_rope(latent_only.k);
    zero_rope(latent_only.cache.k_cache);
    zero_rope(latent_only.cache.k_new);
    AttentionOutputs got;
    ASSERT_TRUE(compute_emulated(p, latent_only, d, {}, got));
    EXPECT_FALSE(verify_case(lc, stored(p, got, d), {}).pass) << name << ": rotary part dropped";
    if (p.forward_only()) continue;
    // dk without V's gradient in its first head_dim_v columns (a kernel that forgot V is K's view).
    ASSERT_TRUE(compute_emulated(p, lc.inputs, d, {}, got));
    AttentionProblem separate = p;
    separate.mla = false;
    AttentionOutputs apart;
    ASSERT_TRUE(compute_emulated(separate, lc.inputs, d, {}, apart));
    got.grads.dk = apart.grads.dk;  // the scores' part of dk alone
    const CaseVerdict v = verify_case(lc, stored(p, got, d), {});
    EXPECT_FALSE(v.pass) << name << ": dk without dV";
  }
}

TEST(MlaCases, SpecDefaultsAreDeepSeeks) {
  const auto spec = parse_suite_spec(
      R"({"name": "d", "cases": [{"name": "a", "mla": true, "heads_q": 16, "seqlen": 4},
                                 {"name": "b", "mla": true, "head_dim": 192, "seqlen": 4}]})",
      "d");
  const AttentionProblem& a = spec.cases[0].problem;
  EXPECT_TRUE(a.mla);
  EXPECT_EQ(a.heads_kv, 1);
  EXPECT_EQ(a.head_dim, 576);
  EXPECT_EQ(a.head_dim_v, 512);
  EXPECT_EQ(spec.cases[1].problem.head_dim_v, 128);  // d_rope 64
  try {
    parse_suite_spec(R"({"name": "d", "cases": [{"name": "a", "mla": true, "heads_kv": 2, "heads_q": 4}]})",
                     "d");
    ADD_FAILURE() << "two latent heads accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("one latent KV head"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace flashsim::golden
