// Suite specs: expansion, naming, defaults and errors; the built-in suites cover what the issue asks.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "flashsim/error.h"
#include "flashsim/golden/suite.h"

namespace flashsim::golden {
namespace {

std::string error_of(const std::string& text) {
  try {
    parse_suite_spec(text, "spec.json");
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(SuiteSpec, GroupsExpandAsACartesianProduct) {
  const SuiteSpec s = parse_suite_spec(R"({"name": "t", "defaults": {"seqlen": 10, "head_dim": 8},
    "groups": [{"name": "g", "base": {"heads_q": 4}, "vary": {"dtype": ["fp16", "bf16"], "heads_kv": [1, 2, 4]}}],
    "cases": [{"name": "one", "seqlens_q": [3, 0, 5], "causal": true, "seed": 99}]})",
                                       "t");
  ASSERT_EQ(s.cases.size(), 7u);
  EXPECT_EQ(s.cases[0].name, "g-fp16-kv1");
  EXPECT_EQ(s.cases[1].name, "g-fp16-kv2");  // the last axis varies fastest
  EXPECT_EQ(s.cases[3].name, "g-bf16-kv1");
  EXPECT_EQ(s.cases[3].problem.dtype, DType::BF16);
  EXPECT_EQ(s.cases[3].problem.heads_q, 4);
  EXPECT_EQ(s.cases[5].problem.heads_kv, 4);
  for (size_t i = 0; i < 6; ++i) EXPECT_EQ(s.cases[i].seed, i) << "default seed: the position in the suite";
  const GoldenCase& one = s.cases[6];
  EXPECT_EQ(one.seed, 99u);
  EXPECT_TRUE(one.problem.varlen());
  EXPECT_EQ(one.problem.batch, 3);
  EXPECT_EQ(one.problem.seqlen_q, 5);
  EXPECT_EQ(one.problem.seqlens_k, one.problem.seqlens_q);
  EXPECT_TRUE(one.problem.causal());
  EXPECT_EQ(one.problem.head_dim_v, 8);
  EXPECT_NE(one.description.find("varlen"), std::string::npos);
}

TEST(SuiteSpec, CaseJsonRoundTrips) {
  const SuiteSpec s = parse_suite_spec(R"({"name": "t", "cases": [
      {"name": "a", "heads_q": 6, "heads_kv": 2, "seqlen_q": 7, "seqlen_k": 9, "head_dim": 16, "head_dim_v": 24,
       "window_left": 3, "window_right": 0, "softcap": 2.5, "bias": "1hqk", "mask": "b1qk", "mask_keep": 0.25,
       "alibi": true, "dtype": "fp16", "magnitude": 3.0, "scale": 0.5, "batch": 2}]})",
                                       "t");
  const GoldenCase& c = s.cases[0];
  const GoldenCase back = case_from_json(nlohmann::json::parse(case_to_json(c).dump()), "m");
  EXPECT_EQ(back.problem.describe(), c.problem.describe());
  EXPECT_EQ(back.problem.softmax_scale(), 0.5);
  EXPECT_EQ(back.problem.mask_keep, 0.25);
  EXPECT_EQ(back.magnitude, 3.0);
  EXPECT_EQ(back.seed, c.seed);
  const auto j = case_to_json(c);
  for (const char* f : {"batch", "heads_q", "heads_kv", "seqlen_q", "seqlen_k", "head_dim", "head_dim_v",
                        "scale", "causal", "window_left", "window_right", "softcap", "dtype", "seed"})
    EXPECT_TRUE(j.contains(f)) << f;
  EXPECT_EQ(j["causal"], true);
}

TEST(SuiteSpec, BadSpecsNameTheProblem) {
  EXPECT_NE(error_of("{").find("not valid JSON"), std::string::npos);
  EXPECT_NE(error_of(R"({"name": "t"})").find("no cases"), std::string::npos);
  EXPECT_NE(error_of(R"({"name": "t", "cases": [{"name": "a", "hedas": 2}]})").find("unknown field 'hedas'"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"name": "t", "cases": [{"name": "a"}, {"name": "a"}]})").find("duplicate"),
            std::string::npos);
  EXPECT_NE(
      error_of(R"({"name": "t", "cases": [{"name": "a", "heads_q": 3, "heads_kv": 2}]})").find("heads_kv"),
      std::string::npos);
  EXPECT_NE(error_of(R"({"name": "t", "cases": [{"name": "a/b"}]})").find("may only hold"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"name": "t", "cases": [{"name": "a", "dtype": "fp8"}]})").find("dtype"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"name": "t", "cases": [{"name": "a", "seqlen": -4}]})").find("seqlen"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"name": "t", "groups": [{"name": "g", "vary": {"seqlen": []}}]})").find("non-empty"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"name": "t", "cases": [{"name": "a", "magnitude": 0}]})").find("magnitude"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"name": "t", "cases": [{"name": "a", "causal": true, "window_right": 3}]})")
                .find("causal"),
            std::string::npos);
}

TEST(SuiteSpec, BuiltInSuitesCoverTheFeatures) {
  const auto names = builtin_suite_names();
  for (const char* n : {"smoke", "default", "long"})
    EXPECT_NE(std::find(names.begin(), names.end(), n), names.end()) << n;
  const SuiteSpec smoke = load_suite_spec("smoke");
  EXPECT_LE(smoke.cases.size(), 20u);
  const SuiteSpec d = load_suite_spec("default");
  EXPECT_GE(d.cases.size(), 150u);
  std::set<DType> dtypes;
  std::set<int64_t> dims;
  int64_t min_len = 1 << 30, max_len = 0;
  bool q_lt_k = false, q_gt_k = false, gqa = false, mqa = false, varlen = false, masked_rows = false,
       large = false, dma = false, odd_len = false, window = false, softcap = false, alibi = false,
       paged = false, split = false, sparse = false, dv_default_scale = false;
  std::set<BroadcastShape> dbias_shapes_gqa_causal;
  for (const auto& c : d.cases) {
    const AttentionProblem& p = c.problem;
    dtypes.insert(p.dtype);
    dims.insert(p.head_dim);
    min_len = std::min({min_len, p.seqlen_q, p.seqlen_k});
    max_len = std::max({max_len, p.seqlen_q, p.seqlen_k});
    q_lt_k |= p.seqlen_q < p.seqlen_k;
    q_gt_k |= p.seqlen_q > p.seqlen_k;
    gqa |= p.heads_kv > 1 && p.heads_kv < p.heads_q;
    mqa |= p.heads_kv == 1 && p.heads_q > 1;
    varlen |= p.varlen();
    masked_rows |=
        (p.causal() && p.seqlen_q > p.seqlen_k) || (p.mask != BroadcastShape::None && p.mask_keep < 0.05);
    large |= c.magnitude >= 16;
    dma |= p.mask != BroadcastShape::None && p.bias != BroadcastShape::None;
    odd_len |= p.seqlen_q % 64 != 0 && p.seqlen_q > 128;
    window |= p.window_left >= 0;
    softcap |= p.softcap > 0;
    alibi |= p.alibi;
    paged |= p.kv_cache() && p.page_size % 2 == 1;
    split |= c.num_splits > 1;
    sparse |= p.block_mask != BroadcastShape::None;
    dv_default_scale |= p.head_dim_v != p.head_dim && !p.scale;
    if (p.bias != BroadcastShape::None && p.heads_kv < p.heads_q && p.causal())
      dbias_shapes_gqa_causal.insert(p.bias);
  }
  EXPECT_EQ(dtypes, (std::set<DType>{DType::F32, DType::F16, DType::BF16, DType::E4M3, DType::E5M2}));
  EXPECT_TRUE(dims.count(32) && dims.count(256) && dims.count(17) && dims.count(111));
  EXPECT_EQ(min_len, 1);
  EXPECT_EQ(max_len, 8192);  // errors that grow with the length need long cases (issue 13)
  for (bool b : {q_lt_k, q_gt_k, gqa, mqa, varlen, masked_rows, large, dma, odd_len, window, softcap, alibi,
                 paged, split, sparse, dv_default_scale})
    EXPECT_TRUE(b);
  EXPECT_EQ(dbias_shapes_gqa_causal.size(), 4u);
  // The decode and sparse suites: page sizes 1, 16, 256 and an odd one, caches up to 32K, seqlen_q 1 and 4,
  // splits up to 16, MQA and GQA 8:1; every block-mask pattern and shape.
  std::set<int64_t> pages, q_lens, splits, groups;
  int64_t longest_cache = 0;
  for (const auto& c : load_suite_spec("decode").cases) {
    const AttentionProblem& p = c.problem;
    ASSERT_TRUE(p.kv_cache()) << c.name;
    pages.insert(p.page_size);
    q_lens.insert(p.seqlen_q);
    splits.insert(c.num_splits);
    groups.insert(p.group_size());
    for (const int64_t l : p.cache_seqlens) longest_cache = std::max(longest_cache, l);
  }
  EXPECT_TRUE(pages.count(1) && pages.count(16) && pages.count(256) && pages.count(7));
  EXPECT_TRUE(q_lens.count(1) && q_lens.count(4));
  EXPECT_TRUE(splits.count(1) && splits.count(16));
  EXPECT_TRUE(groups.count(8) && groups.count(1));
  EXPECT_EQ(longest_cache, 32768);
  // The mla suite (FlashMLA's shapes): decode from a latent cache of pages 64 and 1 with a length off the page,
  // batch 1 to 4, 16 and 128 query heads, bf16 and fp16, DeepSeek's 576 / 512; causal prefill with a backward.
  // The default suite has one MLA decode and one MLA prefill.
  std::set<int64_t> mla_pages, mla_heads, mla_batches;
  std::set<DType> mla_dtypes;
  bool mla_off_page = false, mla_prefill = false, mla_deepseek = false;
  for (const auto& c : load_suite_spec("mla").cases) {
    const AttentionProblem& p = c.problem;
    ASSERT_TRUE(p.mla) << c.name;
    EXPECT_EQ(p.heads_kv, 1) << c.name;
    mla_deepseek |= p.head_dim == 576 && p.head_dim_v == 512;
    if (p.kv_cache()) {
      mla_pages.insert(p.page_size);
      mla_heads.insert(p.heads_q);
      mla_batches.insert(p.batch);
      mla_dtypes.insert(p.dtype);
      for (const int64_t l : p.cache_seqlens) mla_off_page |= l > p.page_size && l % p.page_size != 0;
    } else {
      mla_prefill |= p.causal() && p.seqlen_q == p.seqlen_k && !p.forward_only() && p.seqlen_q > 1;
    }
  }
  EXPECT_TRUE(mla_pages.count(64) && mla_pages.count(1));
  EXPECT_TRUE(mla_heads.count(16) && mla_heads.count(128));
  EXPECT_TRUE(mla_batches.count(1) && mla_batches.count(4));
  EXPECT_TRUE(mla_dtypes.count(DType::BF16) && mla_dtypes.count(DType::F16));
  EXPECT_TRUE(mla_off_page && mla_prefill && mla_deepseek);
  int default_mla_decode = 0, default_mla_prefill = 0;
  for (const auto& c : d.cases) {
    default_mla_decode += c.problem.mla && c.problem.kv_cache();
    default_mla_prefill += c.problem.mla && !c.problem.forward_only();
  }
  EXPECT_EQ(default_mla_decode, 1);
  EXPECT_EQ(default_mla_prefill, 1);
  std::set<std::string> patterns;
  std::set<BroadcastShape> shapes;
  bool sparse_causal = false, sparse_gqa = false;
  for (const auto& c : load_suite_spec("sparse").cases) {
    const AttentionProblem& p = c.problem;
    ASSERT_NE(p.block_mask, BroadcastShape::None) << c.name;
    patterns.insert(p.block_mask_spec.substr(0, p.block_mask_spec.find(':')));
    shapes.insert(p.block_mask);
    sparse_causal |= p.causal();
    sparse_gqa |= p.heads_kv < p.heads_q;
  }
  EXPECT_EQ(patterns, (std::set<std::string>{"s2", "s2-homo", "local-sink", "random"}));
  EXPECT_EQ(shapes.size(), 4u);
  EXPECT_TRUE(sparse_causal && sparse_gqa);
  const SuiteSpec l = load_suite_spec("long");
  for (const auto& c : l.cases) {
    EXPECT_GE(c.problem.seqlen_q, 8192);
    EXPECT_LE(c.problem.seqlen_q, 32768);
  }
  EXPECT_THROW(load_suite_spec("no-such-suite"), InputError);
}

}  // namespace
}  // namespace flashsim::golden
