// The decode (paged KV cache, split-KV) and sparse (block mask) goldens: the case files round-trip, the built-in
// suites generate deterministically, the reference's emulated pipeline in another order passes, and the bugs
// such kernels have fail: a wrong page index, a dropped last partial page, a split combined without rescaling,
// a block mask read transposed.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>

#include "flashsim/error.h"
#include "flashsim/golden/case_file.h"
#include "flashsim/golden/generate.h"
#include "flashsim/golden/verify.h"
#include "flashsim/kv_cache.h"
#include "golden_test_util.h"

namespace flashsim::golden {
namespace {

using test::folder_bytes;
using test::Scratch;

// Small cases of each kind the suites hold (the suites' own cases are too large to generate in a unit test).
constexpr const char* kDecodeSpec = R"({"name": "mini-decode",
  "defaults": {"heads_q": 8, "heads_kv": 2, "head_dim": 64, "seqlen_q": 1, "dtype": "bf16"},
  "cases": [
    {"name": "page7-splits3", "page_size": 7, "cache_seqlens": [1, 50, 300, 129], "num_splits": 3},
    {"name": "page16-spec-causal", "page_size": 16, "cache_seqlens": [33, 100, 250], "seqlen_q": 4,
     "causal": true, "num_splits": 4},
    {"name": "page1-mqa-fp16", "page_size": 1, "heads_kv": 1, "cache_seqlens": [70, 3], "dtype": "fp16",
     "num_splits": 2},
    {"name": "append", "page_size": 16, "cache_seqlens": [0, 15, 200], "seqlen_new": 3, "seqlen_q": 3,
     "causal": true, "num_splits": 2},
    {"name": "page256-empty-seq", "page_size": 256, "cache_seqlens": [0, 600], "num_splits": 5}
  ]})";

constexpr const char* kSparseSpec = R"({"name": "mini-sparse",
  "defaults": {"heads_q": 4, "heads_kv": 2, "seqlen": 256, "head_dim": 32, "dtype": "bf16",
               "block_mask": "1hqk", "block_q": 32, "block_k": 32},
  "cases": [
    {"name": "s2", "block_mask_spec": "s2:local=1,stride=4", "causal": true},
    {"name": "local-sink-fp16", "block_mask_spec": "local-sink:local=2,sink=1", "causal": true, "dtype": "fp16"},
    {"name": "random-bhqk", "batch": 2, "block_mask": "bhqk", "block_mask_spec": "random:keep=0.4"},
    {"name": "random-bias", "block_mask_spec": "random:keep=0.5", "bias": "1hqk", "block_q": 48, "block_k": 40,
     "seqlen_q": 200, "seqlen_k": 240}
  ]})";

std::map<std::string, LoadedCase> load_spec(const char* spec) {
  std::map<std::string, LoadedCase> out;
  for (const auto& c : parse_suite_spec(spec, "mini").cases)
    out.emplace(c.name, load_case(make_case_file(c, {}), c.name));
  return out;
}

const std::map<std::string, LoadedCase>& decode_cases() {
  static const auto* m = new std::map<std::string, LoadedCase>(load_spec(kDecodeSpec));
  return *m;
}
const std::map<std::string, LoadedCase>& sparse_cases() {
  static const auto* m = new std::map<std::string, LoadedCase>(load_spec(kSparseSpec));
  return *m;
}

// Outputs as a kernel stores them: the dtype of the case, lse in fp32.
Outputs stored(const AttentionProblem& p, const AttentionOutputs& got) {
  Outputs out;
  for (const auto& name : output_names(p)) {
    const DType storage = name == "lse" ? DType::F32 : p.dtype;
    std::vector<double> v = got.get(name);
    for (double& x : v) x = round_to(x, storage);
    out.tensors[name] = {std::move(v), output_shape(p, name), storage};
  }
  return out;
}

// The emulated pipeline in the case's dtype on (problem, inputs) as a candidate changed them.
Outputs emulated(const AttentionProblem& p, const AttentionInputs& in, int64_t num_splits,
                 Algorithm fwd = Algorithm::Fa2, Algorithm bwd = Algorithm::Fa2, int64_t block_k = 64) {
  AttentionOutputs got;
  TileConfig tile;
  tile.num_splits = num_splits;
  tile.block_k = block_k;
  EXPECT_TRUE(compute_emulated(p, in, p.dtype, {}, got, fwd, bwd, tile));
  return stored(p, got);
}

// The decode cases a buggy candidate fails, and the ones it passes.
int64_t failures(const std::map<std::string, LoadedCase>& cases,
                 const std::function<Outputs(const LoadedCase&)>& candidate) {
  int64_t failed = 0;
  for (const auto& [name, lc] : cases)
    if (!verify_case(lc, candidate(lc), {}).pass) ++failed;
  return failed;
}

TEST(DecodeGoldens, CaseFileHoldsTheCacheNotTheGatheredKeys) {
  const LoadedCase& lc = decode_cases().at("append");
  const AttentionProblem& p = lc.c.problem;
  const SafetensorsFile f = make_case_file(lc.c, {});
  for (const char* name :
       {"q", "k_cache", "v_cache", "block_table", "cache_seqlens", "k_new", "v_new", "o", "lse"})
    EXPECT_NE(f.find(name), nullptr) << name;
  for (const char* name : {"k", "v", "do", "dq", "dk", "dv"}) EXPECT_EQ(f.find(name), nullptr) << name;
  EXPECT_EQ(f.find("block_table")->shape, (std::vector<int64_t>{3, p.max_blocks_per_seq()}));
  EXPECT_EQ(lc.metadata["num_splits"], 2);
  EXPECT_EQ(lc.metadata["page_size"], 16);
  // The loaded inputs gather the same keys make_random_inputs did, and the exact outputs recompute.
  const AttentionInputs fresh = make_random_inputs(p, lc.c.seed, lc.c.magnitude);
  EXPECT_EQ(lc.inputs.k, fresh.k);
  EXPECT_EQ(lc.inputs.v, fresh.v);
  const AttentionOutputs now = compute_exact(p, lc.inputs, {});
  EXPECT_EQ(now.fwd.o, lc.outputs.at("o"));
}

TEST(DecodeGoldens, PagedAndContiguousGiveIdenticalOutputs) {
  // The same keys as a dense varlen problem (queries of equal length): bit-identical o and lse.
  for (const auto& [name, lc] : decode_cases()) {
    const AttentionProblem& p = lc.c.problem;
    AttentionProblem dense = p;
    dense.page_size = 0;
    dense.cache_seqlens.clear();
    dense.seqlen_new = 0;
    dense.num_blocks = 0;
    for (int64_t b = 0; b < p.batch; ++b) {
      dense.seqlens_q.push_back(p.seqlen_q);
      dense.seqlens_k.push_back(p.len_k(b));
    }
    AttentionInputs in = lc.inputs;
    in.cache = {};
    AttentionOutputs got;
    got.fwd = ref::forward(dense, in, Algorithm::Fa2);
    ASSERT_EQ(got.fwd.o, lc.outputs.at("o")) << name;  // same row layout: equal seqlen_q per sequence
    for (int64_t b = 0; b < p.batch; ++b)
      for (int64_t h = 0; h < p.heads_q; ++h)
        for (int64_t i = 0; i < p.seqlen_q; ++i) {
          const double want = lc.outputs.at("lse")[p.lse_index(b, h, i)];
          const double have = got.fwd.lse[dense.lse_index(b, h, i)];
          ASSERT_TRUE(want == have || (std::isinf(want) && std::isinf(have))) << name;
        }
  }
}

TEST(DecodeGoldens, AnotherOrderPasses) {
  // Other split counts and key tiles (another summation order, another combine) and the two-pass forward.
  for (const auto& [name, lc] : decode_cases()) {
    const AttentionProblem& p = lc.c.problem;
    for (const int64_t splits : {int64_t{1}, int64_t{7}}) {
      const CaseVerdict cv =
          verify_case(lc, emulated(p, lc.inputs, splits, Algorithm::Fa2, Algorithm::Fa2, 128), {});
      EXPECT_TRUE(cv.pass) << name << " splits " << splits;
    }
    EXPECT_TRUE(verify_case(lc, emulated(p, lc.inputs, 1, Algorithm::TwoPass), {}).pass) << name;
  }
}

TEST(DecodeGoldens, WrongPageIndexFails) {
  // The kernel ignores the shuffle: page i of a sequence read from its first page + i (contiguous tables only).
  const int64_t failed = failures(decode_cases(), [](const LoadedCase& lc) {
    const AttentionProblem& p = lc.c.problem;
    AttentionInputs in = lc.inputs;
    // The append is right (appended() writes k_new where it belongs); the reads go through the wrong pages.
    KvCache c = appended(lc.inputs.cache, p.heads_kv, p.head_dim, p.head_dim_v);
    KvCacheLayout& l = c.layout;
    for (int64_t b = 0; b < p.batch; ++b) {
      l.cache_seqlens[b] = static_cast<int32_t>(p.len_k(b));
      for (int64_t i = 1; i < p.cache_pages(b); ++i)
        l.block_table[b * l.max_blocks_per_seq + i] =
            static_cast<int32_t>((l.block_table[b * l.max_blocks_per_seq] + i) % l.num_blocks);
    }
    l.seqlen_new = 0;
    c.k_new.clear();
    c.v_new.clear();
    AttentionProblem pa = p;
    for (int64_t b = 0; b < p.batch; ++b) pa.cache_seqlens[b] = p.len_k(b);
    pa.seqlen_new = 0;
    gather_keys(c, pa, in.k, in.v);
    return emulated(p, in, lc.c.num_splits);
  });
  EXPECT_EQ(failed, static_cast<int64_t>(decode_cases().size()));
}

TEST(DecodeGoldens, DroppedLastPartialPageFails) {
  // The kernel loops over len / page_size whole pages: the keys of a partly filled last page are never seen
  // (the causal alignment still uses the true length). Emulated with an element mask hiding those keys.
  int64_t with_partial = 0;
  const int64_t failed = failures(decode_cases(), [&](const LoadedCase& lc) {
    AttentionProblem p = lc.c.problem;
    AttentionInputs in = lc.inputs;
    p.mask = BroadcastShape::BHQK;
    p.mask_keep = 1.0;
    in.mask.assign(p.mask_elems(), 1);
    bool partial = false;
    for (int64_t b = 0; b < p.batch; ++b) {
      const int64_t whole = p.len_k(b) / p.page_size * p.page_size;
      partial |= whole < p.len_k(b);
      for (int64_t h = 0; h < p.heads_q; ++h)
        for (int64_t i = 0; i < p.seqlen_q; ++i)
          for (int64_t j = whole; j < p.len_k(b); ++j) in.mask[p.broadcast_index(p.mask, b, h, i, j)] = 0;
    }
    with_partial += partial;
    return emulated(p, in, lc.c.num_splits);
  });
  EXPECT_GE(with_partial, 4);  // page sizes 7, 16, 256 leave partial pages; page 1 never does
  EXPECT_EQ(failed, with_partial);
}

TEST(DecodeGoldens, SplitCombinedWithoutRescalingFails) {
  // o = mean of the splits' normalized partials (no exp(lse_s - lse) weights); lse combined correctly.
  int64_t multi_split = 0;
  const int64_t failed = failures(decode_cases(), [&](const LoadedCase& lc) {
    const AttentionProblem& p = lc.c.problem;
    const auto n = static_cast<int>(lc.c.num_splits);
    multi_split += n > 1;
    AttentionProblem pc = p;
    ref::RunOptions opt;
    opt.precision = ref::Precision::Emulated;
    TileConfig tile;
    const ref::SplitKvResult r = ref::forward_split_kv(pc, lc.inputs, n, tile, opt);
    AttentionOutputs got;
    got.fwd = r.combined;
    const int64_t rows = p.lse_elems(), dv = p.head_dim_v, per_split = p.o_elems();
    for (int64_t b = 0; b < p.batch; ++b)
      for (int64_t h = 0; h < p.heads_q; ++h)
        for (int64_t i = 0; i < p.seqlen_q; ++i) {
          const int64_t row = p.lse_index(b, h, i), orow = ((b * p.seqlen_q + i) * p.heads_q + h) * dv;
          int live = 0;
          std::vector<double> sum(dv, 0.0);
          for (int s = 0; s < n; ++s) {
            if (std::isinf(r.partial_lse[s * rows + row])) continue;
            ++live;
            for (int64_t c = 0; c < dv; ++c) sum[c] += r.partial_o[s * per_split + orow + c];
          }
          for (int64_t c = 0; c < dv; ++c) got.fwd.o[orow + c] = live > 0 ? sum[c] / live : 0.0;
        }
    return stored(p, got);
  });
  EXPECT_GE(multi_split, 5);
  EXPECT_EQ(failed, multi_split);
}

TEST(SparseGoldens, CaseFileHoldsTheBlockMask) {
  const LoadedCase& lc = sparse_cases().at("random-bias");
  const AttentionProblem& p = lc.c.problem;
  EXPECT_EQ(p.block_mask_shape(), (std::vector<int64_t>{1, 4, 5, 6}));  // ceil(200/48), ceil(240/40)
  EXPECT_EQ(lc.inputs.block_mask, make_random_inputs(p, lc.c.seed).block_mask);
  EXPECT_EQ(lc.metadata["block_q"], 48);
  EXPECT_EQ(lc.metadata["block_mask_spec"], "random:keep=0.5");
  for (const char* name : {"o", "lse", "dq", "dk", "dv", "dbias"})
    EXPECT_TRUE(lc.outputs.count(name)) << name;
}

TEST(SparseGoldens, AnotherOrderPasses) {
  for (const auto& [name, lc] : sparse_cases()) {
    const AttentionProblem& p = lc.c.problem;
    EXPECT_TRUE(verify_case(lc, emulated(p, lc.inputs, 1, Algorithm::TwoPass, Algorithm::Naive), {}).pass)
        << name;
    EXPECT_TRUE(verify_case(lc, emulated(p, lc.inputs, 1, Algorithm::Fa2, Algorithm::Fa2, 128), {}).pass)
        << name;
  }
}

TEST(SparseGoldens, BlockMaskReadTransposedFails) {
  // The kernel reads tile (qb, kb) at (kb, qb) (square grids; others read with the roles swapped mod the grid).
  const int64_t failed = failures(sparse_cases(), [](const LoadedCase& lc) {
    const AttentionProblem& p = lc.c.problem;
    AttentionInputs in = lc.inputs;
    const auto s = p.block_mask_shape();
    for (int64_t bh = 0; bh < s[0] * s[1]; ++bh)
      for (int64_t qb = 0; qb < s[2]; ++qb)
        for (int64_t kb = 0; kb < s[3]; ++kb)
          in.block_mask[(bh * s[2] + qb) * s[3] + kb] =
              lc.inputs.block_mask[(bh * s[2] + kb % s[2]) * s[3] + qb % s[3]];
    return emulated(p, in, 1);
  });
  EXPECT_EQ(failed, static_cast<int64_t>(sparse_cases().size()));
}

TEST(SparseGoldens, FullyInactiveRowsAreZero) {
  const SuiteSpec spec = parse_suite_spec(
      R"({"name": "none", "cases": [{"name": "none", "seqlen": 70, "head_dim": 16, "block_mask": "11qk",
          "block_q": 32, "block_k": 32, "block_mask_spec": "random:keep=0.0"}]})",
      "none");
  const LoadedCase lc = load_case(make_case_file(spec.cases[0], {}), "none");
  for (const double x : lc.outputs.at("o")) EXPECT_EQ(x, 0.0);
  for (const double x : lc.outputs.at("lse")) EXPECT_EQ(x, -std::numeric_limits<double>::infinity());
  for (const char* g : {"dq", "dk", "dv"})
    for (const double x : lc.outputs.at(g)) EXPECT_EQ(x, 0.0) << g;
}

TEST(DecodeSparseSuites, GenerateByteIdenticallyWithOneAndTwoThreads) {
  // Cases of each built-in suite (the whole suites take a minute): the same bytes with 1 and 2 threads.
  for (const char* name : {"decode", "sparse"}) {
    const SuiteSpec spec = load_suite_spec(name);
    Scratch s(std::string("gen-") + name);
    GenerateOptions opt;
    SuiteSpec some = spec;  // the four cheapest cases
    std::stable_sort(some.cases.begin(), some.cases.end(), [](const GoldenCase& a, const GoldenCase& b) {
      return generation_work(a) < generation_work(b);
    });
    some.cases.resize(4);
    opt.run.threads = 1;
    generate_suite(some, s / "t1", opt);
    opt.run.threads = 2;
    generate_suite(some, s / "t2", opt);
    const auto a = folder_bytes(s / "t1");
    EXPECT_EQ(a.size(), 5u) << name;  // + manifest.json
    EXPECT_EQ(a, folder_bytes(s / "t2")) << name;
  }
}

TEST(DecodeGoldens, BadCacheInputsAreInputErrors) {
  const LoadedCase& lc = decode_cases().at("page7-splits3");
  SafetensorsFile f = make_case_file(lc.c, {});
  // A block table entry past num_blocks.
  SafetensorsFile bad = f;
  Tensor* table_ptr = nullptr;
  for (auto& [n, t] : bad.tensors)
    if (n == "block_table") table_ptr = &t;
  ASSERT_NE(table_ptr, nullptr);
  Tensor& table = *table_ptr;
  std::vector<int64_t> entries;
  for (const double x : table.to_doubles()) entries.push_back(static_cast<int64_t>(x));
  entries[1 * lc.c.problem.max_blocks_per_seq()] =
      lc.c.problem.cache_num_blocks();  // sequence 1's first page
  table = Tensor::from_int64(StDType::I32, table.shape, entries);
  try {
    load_case(bad, "bad.safetensors");
    ADD_FAILURE() << "a page past num_blocks was accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("num_blocks"), std::string::npos) << e.what();
  }
}

TEST(SparseGoldens, BlockMaskOfTheWrongShapeIsAnInputError) {
  const LoadedCase& lc = sparse_cases().at("random-bias");  // block mask [1, 4, 5, 6]
  SafetensorsFile bad = make_case_file(lc.c, {});
  for (auto& [n, t] : bad.tensors)
    if (n == "block_mask") t = Tensor::from_bytes({1, 4, 6, 5}, std::vector<uint8_t>(120, 1), StDType::BOOL);
  try {
    load_case(bad, "bad.safetensors");
    ADD_FAILURE() << "a transposed block mask shape was accepted";
  } catch (const InputError& e) {
    EXPECT_NE(
        std::string(e.what()).find("tensor 'block_mask' has shape [1, 4, 6, 5], the case needs [1, 4, 5, 6]"),
        std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace flashsim::golden
