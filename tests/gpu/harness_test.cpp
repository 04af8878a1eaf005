// gpu/'s host side, where no GPU is: the registry, the kernel parameters, and the harness driven by the CPU
// stand-in version and by deliberately broken versions.
#include "flashsim/gpu/harness.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <iterator>
#include <set>
#include <tuple>
#include <utility>
#include <vector>

#include "ci_instances.h"
#include "fa2_bwd_params.cuh"  // gpu/fa2: the backward's host-and-device index arithmetic
#include "flashsim/error.h"
#include "flashsim/families/fa2/instances.h"
#include "flashsim/families/fa2/launch_table.h"  // the generated launch table
#include "flashsim/golden/case_file.h"
#include "flashsim/golden/files.h"
#include "flashsim/golden/manifest.h"
#include "flashsim/golden/safetensors.h"
#include "flashsim/golden/suite.h"
#include "flashsim/gpu/sparse_bench.h"
#include "flashsim/gpu/test_versions.h"
#include "flashsim/sim/kernel_model.h"
#include "problem_builder.h"

using flashsim::test::runs;

using namespace flashsim;
using flashsim::test::ProblemBuilder;

namespace {

const std::filesystem::path kSmoke = std::filesystem::path(FLASHSIM_SOURCE_DIR) / "golden/data/smoke";

golden::LoadedCase smoke_case(const std::string& name) {
  const auto m = golden::read_manifest(kSmoke);
  for (const auto& e : m.cases)
    if (e.name == name) {
      const auto path = kSmoke / e.file;
      return golden::load_case(golden::parse(golden::read_case_file(path, 0), path.string()), path.string());
    }
  throw std::runtime_error("no smoke case " + name);
}

gpu::KernelVersion stand_in() {
  return gpu::kernel_version("host-emulated-v1");
}

}  // namespace

TEST(GpuRegistry, NamesAreUniqueAndSimulatorKernelsExist) {
  std::set<std::string> names;
  for (const auto& v : gpu::kernel_versions()) {
    EXPECT_TRUE(names.insert(v.name).second) << v.name;
    EXPECT_TRUE(v.forward) << v.name;
    EXPECT_TRUE(v.unsupported) << v.name;
    for (const auto& k : v.sim_kernels) EXPECT_NO_THROW(sim::kernel_model(k)) << v.name << ": " << k;
  }
  EXPECT_THROW(gpu::kernel_version("nope"), InputError);
}

// sparse-bench predicts a version with its own kernel models (fa2-v1's), an emulating version with its algorithm's.
TEST(SparseBench, PredictsAVersionWithItsOwnKernelModels) {
  const AttentionProblem p =
      ProblemBuilder().batch(1).heads(2).seqlen(256).head_dim(64).dtype(DType::BF16).build();
  const auto names = [&](const std::string& version, Pass pass) {
    std::vector<std::string> out;
    for (const sim::KernelModel* m :
         gpu::sparse_pass_models(gpu::kernel_version(version), p, TileConfig{}, pass))
      out.push_back(m->name);
    return out;
  };
  EXPECT_EQ(names("fa2-v1", Pass::Forward), std::vector<std::string>{"fwd_fa2_v1"});
  EXPECT_EQ(names("fa2-v1", Pass::Backward),
            (std::vector<std::string>{"bwd_dot_do_o_lse", "bwd_dq_dk_dv_group", "bwd_convert_dq_rows"}));
  EXPECT_EQ(names("host-emulated-v1", Pass::Forward), std::vector<std::string>{"fwd_fa2"});
}

// The planted-bug versions are not in the production registry; a test or bench binary adds them
// (flashsim::gpu_test_versions), once, after the production versions, their simulator kernels known.
TEST(GpuRegistry, TestVersionsOnlyWhenRegistered) {
  const auto named = [](const std::string& name) {
    const auto& all = gpu::kernel_versions();
    return std::any_of(all.begin(), all.end(), [&](const gpu::KernelVersion& v) { return v.name == name; });
  };
  EXPECT_FALSE(named("fa2-v1-heads-first"));
  const size_t production = gpu::kernel_versions().size();
  gpu::register_test_versions();
  gpu::register_test_versions();  // a second call adds nothing
  ASSERT_EQ(gpu::kernel_versions().size(), production + 1);
  const auto& planted = gpu::kernel_version("fa2-v1-heads-first");
  EXPECT_EQ(&planted, &gpu::kernel_versions().back());
  for (const auto& k : planted.sim_kernels) EXPECT_NO_THROW(sim::kernel_model(k)) << k;
  gpu::KernelVersion taken = stand_in();  // a name already registered
  EXPECT_THROW(gpu::register_test_version(taken), InputError);
}

TEST(GpuParams, BroadcastStridesWindowAndVarlen) {
  const auto p = ProblemBuilder().batch(2).heads(4, 2).seqlen(5, 7).head_dim(16).window(3, 0).build();
  auto q = p;
  q.bias = BroadcastShape::OneHQK;
  q.mask = BroadcastShape::BOneQK;
  const auto a = gpu::make_params(q);
  EXPECT_EQ(a.group, 2);
  EXPECT_EQ(a.window_left, 3);
  EXPECT_EQ(a.window_right, 0);
  // bias [1, h, q, k]: index h*q*k + i*k + j; mask [b, 1, q, k]: index b*q*k + i*k + j
  for (int b = 0; b < 2; ++b)
    for (int h = 0; h < 4; ++h) {
      EXPECT_EQ(b * a.bias_stride_b + h * a.bias_stride_h + 3 * a.bias_stride_q + 6,
                q.broadcast_index(q.bias, b, h, 3, 6));
      EXPECT_EQ(b * a.mask_stride_b + h * a.mask_stride_h + 3 * a.mask_stride_q + 6,
                q.broadcast_index(q.mask, b, h, 3, 6));
    }
  // The window as the problem sees it, bottom-right aligned.
  for (int i = 0; i < 5; ++i)
    for (int j = 0; j < 7; ++j) EXPECT_EQ(gpu::window_visible(a, 5, 7, i, j), p.window_visible(0, i, j));
  const auto v = ProblemBuilder().varlen({3, 9}, {4, 1}).heads(2, 2).head_dim(8).build();
  const auto av = gpu::make_params(v);
  const int32_t cu_q[] = {0, 3, 12};
  EXPECT_TRUE(av.varlen);
  EXPECT_EQ(gpu::seq_len(av, cu_q, av.seqlen_q, 1), 9);
  EXPECT_EQ(gpu::lse_index(av, cu_q, 1, 1, 2), v.lse_index(1, 1, 2));
}

TEST(GpuHarness, StandInPassesEveryKindOfCase) {
  for (const char* name : {"bf16-gqa", "fp16-window", "bf16-varlen-causal", "bf16-bias-b1qk",
                           "fp16-alibi-causal", "bf16-mostly-masked", "bf16-softcap"}) {
    const auto lc = smoke_case(name);
    const auto v = stand_in();
    const auto out = gpu::run_case(v, lc, TileConfig{});
    const auto verdict = golden::verify_case(lc, out, {});
    EXPECT_TRUE(verdict.pass) << name;
    EXPECT_EQ(out.tensors.count("dbias"), lc.c.problem.bias != BroadcastShape::None ? 1u : 0u) << name;
  }
}

TEST(GpuHarness, UnwrittenOutputsAreNaNAndFail) {
  auto v = stand_in();
  v.name = "writes-nothing";
  v.forward = [](const AttentionProblem&, const TileConfig&, const gpu::DeviceArgs&) {};
  v.backward = nullptr;  // forward only: o and lse checked
  const auto lc = smoke_case("bf16-gqa");
  const auto out = gpu::run_case(v, lc, TileConfig{});
  EXPECT_TRUE(std::isnan(out.tensors.at("o").values[0]));
  golden::VerifyOptions fwd_only;
  fwd_only.outputs = {"o", "lse"};
  const auto verdict = golden::verify_case(lc, out, fwd_only);
  EXPECT_FALSE(verdict.pass);
  for (const auto& o : verdict.outputs) EXPECT_GT(o.stats.nonfinite, 0) << o.output;
}

TEST(GpuHarness, WrongResultsFailAndSkipsAreReported) {
  auto v = stand_in();
  v.forward = [](const AttentionProblem& p, const TileConfig& c, const gpu::DeviceArgs& a) {
    gpu::kernel_version("host-emulated-v1").forward(p, c, a);
    a.lse[0] += 0.01f;  // one row's lse off by 1%
  };
  v.backward = nullptr;
  const auto lc = smoke_case("fp32-basic");
  golden::VerifyOptions fwd_only;
  fwd_only.outputs = {"o", "lse"};
  const auto verdict = golden::verify_case(lc, gpu::run_case(v, lc, TileConfig{}), fwd_only);
  EXPECT_FALSE(verdict.pass);
  gpu::CheckOptions opt;
  opt.golden = kSmoke;
  opt.kernels = {"host-emulated-v1"};
  opt.cases = {"fp32-*"};
  const auto reports = gpu::check(opt);
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_TRUE(reports[0].report.pass());
  EXPECT_EQ(reports[0].report.cases.size(), 3u);  // fp32-basic, fp32-dv-ne-d, fp32-scale-window-causal
}

TEST(GpuHarness, BadRequestsAreInputErrors) {
  gpu::CheckOptions opt;
  opt.golden = kSmoke;
  opt.kernels = {"no-such-version"};
  EXPECT_THROW(gpu::check(opt), InputError);
  if (!gpu::cuda_available()) {
    opt.kernels = {"naive-v1"};
    EXPECT_THROW(gpu::check(opt), InputError);  // a CUDA version where no device is
  }
  opt.kernels = {"host-emulated-v1"};
  opt.golden = kSmoke / "missing";
  EXPECT_THROW(gpu::check(opt), InputError);
}

TEST(GpuParams, StridesMatchTheProblemOnEverySmokeCase) {
  for (const auto& e : golden::read_manifest(kSmoke).cases) {
    const auto p = smoke_case(e.name).c.problem;
    const auto a = gpu::make_params(p);
    for (const auto& [shape, sb, sh, sq] :
         {std::tuple{p.bias, a.bias_stride_b, a.bias_stride_h, a.bias_stride_q},
          std::tuple{p.mask, a.mask_stride_b, a.mask_stride_h, a.mask_stride_q}}) {
      if (shape == BroadcastShape::None) continue;
      const int64_t b = p.batch - 1, h = p.heads_q - 1, i = p.seqlen_q - 1, j = p.seqlen_k - 1;
      EXPECT_EQ(b * sb + h * sh + i * sq + j, p.broadcast_index(shape, b, h, i, j)) << e.name;
    }
  }
}

TEST(GpuHarness, ABackwardThatCannotRunLeavesTheForwardChecked) {
  auto v = stand_in();
  v.backward_unsupported = [](const AttentionProblem&, const TileConfig&) { return std::string("not here"); };
  v.backward = [](const AttentionProblem&, const TileConfig&, const gpu::DeviceArgs&) {
    throw std::logic_error("the backward must not run");
  };
  const auto lc = smoke_case("bf16-gqa");
  const auto out = gpu::run_case(v, lc, TileConfig{});
  EXPECT_EQ(out.tensors.count("dq"), 0u);
  golden::VerifyOptions fwd_only;
  fwd_only.outputs = {"o", "lse"};
  EXPECT_TRUE(golden::verify_case(lc, out, fwd_only).pass);
}

// fa3-v1 (where the build has CUTLASS's headers): every head dim has a backward (d256 on the split Bc64 tile),
// a softcapped d128 backward runs that Bc64 tile too (the Bc128 one spills with a softcap), and a head dim it
// lacks is named with the ones it runs, each once.
// fa3-v1's workspace holds the forward's balanced walk (families/fa3/walk.h: an offset a CTA and a tile, at most a
// CTA a tile) ahead of the backward's dq_accum (an fp32 row a query row and head) and D, so that a forward and a
// backward of one case share it: b16 h16 n1024 d128, 2048 forward tiles of Br128.
TEST(GpuRegistry, Fa3WorkspaceHoldsTheWalkAndTheBackward) {
  const auto& versions = gpu::kernel_versions();
  if (std::none_of(versions.begin(), versions.end(), [](const auto& v) { return v.name == "fa3-v1"; }))
    GTEST_SKIP() << "fa3-v1 is not in this build (no CUTLASS headers)";
  const auto& v = gpu::kernel_version("fa3-v1");
  const auto p =
      ProblemBuilder().batch(16).heads(16).seqlen(1024).head_dim(128).dtype(DType::BF16).causal().build();
  const size_t walk = (2048 + 1 + 2048) * 4, dq_accum = size_t{16} * 1024 * 16 * 128 * 4,
               d = 16 * 1024 * 16 * 4;
  EXPECT_GE(v.workspace_bytes(p, v.launch_tile(p, Pass::Forward)), walk + dq_accum + d);
}

TEST(GpuRegistry, Fa3StatesWhatItsBackwardRuns) {
  const auto& versions = gpu::kernel_versions();
  if (std::none_of(versions.begin(), versions.end(), [](const auto& v) { return v.name == "fa3-v1"; }))
    GTEST_SKIP() << "fa3-v1 is not in this build (no CUTLASS headers)";
  const auto& v = gpu::kernel_version("fa3-v1");
  auto p = ProblemBuilder().batch(1).heads(4, 2).seqlen(300).head_dim(128).dtype(DType::BF16).build();
  EXPECT_EQ(v.launch_tile(p, Pass::Backward).bwd_block_k, 128);
  EXPECT_EQ(runs(v.backward_unsupported(p, v.launch_tile(p, Pass::Backward))), "");
  p.softcap = 30;
  const TileConfig capped = v.launch_tile(p, Pass::Backward);
  EXPECT_EQ(capped.bwd_block_k, 64);
  EXPECT_EQ(runs(v.backward_unsupported(p, capped)), "");
  TileConfig bc128 = capped;
  bc128.bwd_block_k = 128;
  EXPECT_NE(v.backward_unsupported(p, bc128).find("Bc64"), std::string::npos);  // names the tile it runs
  p.softcap = 0;
  p.head_dim = p.head_dim_v = 256;
  const TileConfig d256 = v.launch_tile(p, Pass::Backward);
  EXPECT_EQ(d256.bwd_block_k, 64);
  EXPECT_EQ(runs(v.backward_unsupported(p, d256)), "");
  p.head_dim = p.head_dim_v = 80;
  EXPECT_NE(v.unsupported(p, TileConfig{}).find("(fa3-v1 runs 64, 96, 128, 256)"), std::string::npos)
      << v.unsupported(p, TileConfig{});
}

TEST(GpuRegistry, Fa2StatesWhatItsBackwardRuns) {
  const auto& v = gpu::kernel_version("fa2-v1");
  ASSERT_TRUE(v.backward && v.backward_unsupported && v.workspace_bytes);
  const auto d128 =
      ProblemBuilder().batch(2).heads(4, 2).seqlen(300, 300).head_dim(128).dtype(DType::BF16).build();
  const TileConfig deflt;
  EXPECT_EQ(runs(v.unsupported(d128, deflt)), "");
  EXPECT_EQ(runs(v.backward_unsupported(d128, deflt)), "");
  auto d256 = d128;
  d256.head_dim = d256.head_dim_v = 256;
  EXPECT_NE(v.unsupported(d256, deflt), "");  // the forward's d256 tile is Br64
  TileConfig t256;
  t256.block_q = 64;
  EXPECT_EQ(runs(v.unsupported(d256, t256)), "");
  EXPECT_NE(v.backward_unsupported(d256, t256).find("Bc64"), std::string::npos);  // names the tile it runs
  t256.bwd_block_k = 64;
  EXPECT_EQ(runs(v.backward_unsupported(d256, t256)), "");
  auto fp32 = d128;
  fp32.dtype = DType::F32;
  EXPECT_NE(v.unsupported(fp32, deflt).find("fp32"), std::string::npos);
  // The deterministic dQ keeps one fp32 accumulator per key block: ceil(300 / 128) = 3 of them.
  TileConfig partials;
  partials.dq_strategy = DqStrategy::Partials;
  const size_t atomic_bytes = v.workspace_bytes(d128, deflt),
               partial_bytes = v.workspace_bytes(d128, partials);
  EXPECT_GT(partial_bytes, 2 * atomic_bytes);
  EXPECT_GE(atomic_bytes,
            size_t{2} * 384 * 4 * 128 * 4);  // 2 sequences x 384 padded rows x 4 heads x d x fp32
}

TEST(GpuRegistry, Fa2LaunchTableRunsEveryHeadDimAndPath) {
  // For every head dim, dtype and score path, the launch tile is one the version runs, forward and backward
  // (a launch table naming an uninstantiated tile would skip every case of that head dim).
  const auto& v = gpu::kernel_version("fa2-v1");
  ASSERT_NE(v.launch_tile, nullptr);
  for (const int64_t d : {64, 96, 128, 256})
    for (const DType t : {DType::BF16, DType::F16})
      for (const bool pipeline : {false, true}) {
        auto b = ProblemBuilder().batch(2).heads(4, 2).seqlen(200, 300).head_dim(d).dtype(t);
        if (pipeline) b.softcap(30);
        const AttentionProblem p = b.build();
        const TileConfig c = gpu::tile_for(v, p), cb = gpu::tile_for(v, p, {}, Pass::Backward);
        const std::string what =
            fmt::format("d{} {} {}: {} / {}", d, dtype_name(t), pipeline, c.describe(), cb.describe());
        EXPECT_EQ(runs(v.unsupported(p, c)), "") << what;
        EXPECT_EQ(runs(v.backward_unsupported(p, cb)), "") << what;
      }
}

// fa2::launch_tile takes its tiles from the generated table (fa2's launch_table.h): the entry of the problem's head
// dim, dtype, causal and pipeline flags at the nearest seqlen, per pass.
TEST(GpuRegistry, Fa2LaunchTileIsTheGeneratedTablesEntry) {
  const auto& v = gpu::kernel_version("fa2-v1");
  const auto problem_of = [](const gpu::fa2::LaunchEntry& e) {  // an entry's problem (softcap: the pipeline)
    auto b = ProblemBuilder()
                 .head_dim(e.head_dim)
                 .seqlen(e.seqlen, e.seqlen)
                 .dtype(e.bf16 ? DType::BF16 : DType::F16);
    if (e.causal) b.causal();
    if (e.pipeline) b.softcap(30);
    return b.build();
  };
  for (const gpu::fa2::LaunchEntry& e : gpu::fa2::kFwdLaunchTable) {
    const TileConfig c = gpu::tile_for(v, problem_of(e));
    EXPECT_EQ(std::tuple(c.block_q, c.block_k, c.warps, c.stages),
              std::tuple(int64_t{e.block_q}, int64_t{e.block_k}, e.warps, e.stages))
        << e.head_dim << " " << e.seqlen;
  }
  for (const gpu::fa2::LaunchEntry& e : gpu::fa2::kBwdLaunchTable) {
    const TileConfig c = gpu::tile_for(v, problem_of(e), {}, Pass::Backward);
    EXPECT_EQ(std::tuple(c.bwd_block_q, c.bwd_block_k, c.warps),
              std::tuple(int64_t{e.block_q}, int64_t{e.block_k}, e.warps))
        << e.head_dim << " " << e.seqlen;
  }
  // a seqlen between two entries takes the nearer one (log scale): 1500 is nearer 1024 than 4096
  const auto near = [&](int64_t n) {
    return gpu::tile_for(v, ProblemBuilder().head_dim(128).seqlen(n, n).dtype(DType::BF16).build())
        .describe();
  };
  EXPECT_EQ(near(1500), near(1024));
  EXPECT_EQ(near(3000), near(4096));
}

TEST(GpuRegistry, UserTileFlagsOverrideTheLaunchTile) {
  const auto& v = gpu::kernel_version("fa2-v1");
  const auto p = ProblemBuilder().head_dim(128).dtype(DType::BF16).build();
  // Only what the user changes changes: here the key block, the rest stays the launch table's.
  const TileConfig c = gpu::tile_for(v, p, [](TileConfig t) {
    t.block_k = 64;
    return t;
  });
  EXPECT_EQ(c.block_k, 64);
  EXPECT_EQ(c.stages, gpu::tile_for(v, p).stages);
  EXPECT_EQ(runs(v.unsupported(p, c)), "");
  // A version without a launch table runs TileConfig{}; an invalid override is an InputError.
  const TileConfig none = gpu::tile_for(stand_in(), p);
  EXPECT_EQ(none.describe(), TileConfig{}.describe());
  EXPECT_THROW(gpu::tile_for(v, p,
                             [](TileConfig t) {
                               t.block_q = 0;
                               return t;
                             }),
               InputError);
}

// fa2-v1's deterministic dQ: the main kernel writes a partial for each (query block, key block) pair the key
// block sees (queries_seeing), the convert kernel reads the pairs the query block sees (keys_seen). Both must be
// exactly the pairs whose rectangle holds a visible (i, j), or the convert kernel reads a partial nobody wrote.
TEST(GpuFa2Backward, VisibleBlockPairsAgreeBothWays) {
  int cases = 0;
  for (int lq : {1, 5, 64, 65, 130, 300})
    for (int lk : {1, 7, 128, 129, 300})
      for (auto [wl, wr] : {std::pair{-1, -1}, std::pair{-1, 0}, std::pair{0, 0}, std::pair{17, 3},
                            std::pair{200, -1}, std::pair{-1, 40}})
        for (auto [br, bc] : {std::pair{64, 128}, std::pair{64, 64}}) {
          gpu::AttentionParams a;
          a.window_left = wl;
          a.window_right = wr;
          const auto visible = [&](int i, int j) { return gpu::window_visible(a, lq, lk, i, j); };
          for (int q0 = 0; q0 < lq; q0 += br)
            for (int k0 = 0; k0 < lk; k0 += bc) {
              const int q1 = std::min(q0 + br, lq), k1 = std::min(k0 + bc, lk);
              bool any = false;
              for (int i = q0; i < q1 && !any; ++i)
                for (int j = k0; j < k1 && !any; ++j) any = visible(i, j);
              int lo, hi, first, last;
              gpu::fa2::queries_seeing(a, lq, lk, k0, k1, lo, hi);
              gpu::fa2::block_range(lo, hi, br, first, last);
              const bool by_key_block = q0 / br >= first && q0 / br < last;
              gpu::fa2::keys_seen(a, lq, lk, q0, q1, lo, hi);
              gpu::fa2::block_range(lo, hi, bc, first, last);
              const bool by_query_block = k0 / bc >= first && k0 / bc < last;
              EXPECT_EQ(by_key_block, any)
                  << lq << " " << lk << " " << wl << "," << wr << " " << q0 << " " << k0;
              EXPECT_EQ(by_query_block, any)
                  << lq << " " << lk << " " << wl << "," << wr << " " << q0 << " " << k0;
              ++cases;
            }
        }
  EXPECT_GT(cases, 1000);
}

TEST(GpuFa2Backward, AccumulatorRowsOfSequencesDoNotOverlap) {
  // Each sequence's rows rounded up to 128 from accum_row0, inside accum_rows, in order (varlen and not).
  for (const std::vector<int32_t>& lens :
       {std::vector<int32_t>{1, 127, 128, 129, 0, 300}, std::vector<int32_t>{64}}) {
    std::vector<int32_t> cu = {0};
    for (int32_t l : lens) cu.push_back(cu.back() + l);
    gpu::AttentionParams a;
    a.varlen = true;
    a.batch = static_cast<int>(lens.size());
    a.total_q = cu.back();
    int64_t end = 0;
    for (int b = 0; b < a.batch; ++b) {
      const int64_t row0 = gpu::fa2::accum_row0(a, cu.data(), b);
      EXPECT_GE(row0, end) << b;
      end = row0 + (lens[static_cast<size_t>(b)] + 127) / 128 * 128;
    }
    EXPECT_LE(end, gpu::fa2::accum_rows(a));
  }
}

// Every entry of the instance table (fa2's instances.h) is a tile fa2-v1 accepts on a problem of its head
// dim, forward at each of its stages and backward; a tile off the table is refused with the head dim's instances
// in the message.
TEST(GpuRegistry, Fa2RunsEveryInstanceAndRefusesTheRest) {
  const auto& v = gpu::kernel_version("fa2-v1");
  const auto problem = [](int64_t d) {
    return ProblemBuilder().batch(2).heads(4, 2).seqlen(300, 300).head_dim(d).dtype(DType::BF16).build();
  };
  int fwd = 0, bwd = 0;
  for (const Fa2FwdInstance& e : kFa2FwdInstances)
    for (int s = kFa2FwdMinStages; s <= kFa2FwdMaxStages; ++s) {
      TileConfig c;
      c.block_q = e.block_q;
      c.block_k = e.block_k;
      c.warps = e.warps;
      c.stages = s;
      const bool compiled = fa2_fwd_instantiated(e.head_dim, e.block_q, e.block_k, e.warps, s);
      EXPECT_EQ(runs(v.unsupported(problem(e.head_dim), c)), "") << "d" << e.head_dim << " " << c.describe();
      EXPECT_TRUE(compiled) << "d" << e.head_dim << " "
                            << c.describe();  // every entry fits at stages 2 today
      fwd += compiled ? 1 : 0;
    }
  for (const Fa2BwdInstance& e : kFa2BwdInstances) {
    TileConfig c;  // the forward's fields stay the default Br128 Bc64: the backward's tile is its own
    c.bwd_block_q = e.block_q;
    c.bwd_block_k = e.block_k;
    c.warps = e.warps;
    EXPECT_EQ(runs(v.backward_unsupported(problem(e.head_dim), c)), "")
        << "d" << e.head_dim << " " << c.describe();
    ++bwd;
  }
  EXPECT_EQ(fwd, 2 * static_cast<int>(std::size(kFa2FwdInstances)));
  EXPECT_EQ(bwd, static_cast<int>(std::size(kFa2BwdInstances)));

  // Off the table: forward d128 Br64 Bc32 w4, Br128 Bc128 w4 (256 accumulators), stages 3; backward d128 Br128.
  TileConfig off;
  off.block_q = 64;
  off.block_k = 32;
  const std::string why = v.unsupported(problem(128), off);
  EXPECT_NE(why.find("not instantiated"), std::string::npos) << why;
  EXPECT_NE(why.find(fa2_fwd_instances_text(128)), std::string::npos) << why;
  EXPECT_EQ(why.find("d64:"), std::string::npos) << why;  // only the problem's head dim is listed
  off.block_q = 128;
  off.block_k = 128;
  EXPECT_NE(v.unsupported(problem(128), off), "");
  EXPECT_EQ(runs(v.unsupported(problem(64), off)), "");  // 192 accumulators at d64
  off.block_k = 64;
  off.stages = 3;
  EXPECT_NE(v.unsupported(problem(128), off), "");
  TileConfig bwd_off;
  bwd_off.bwd_block_q = 128;
  const std::string bwhy = v.backward_unsupported(problem(128), bwd_off);
  EXPECT_NE(bwhy.find(fa2_bwd_instances_text(128)), std::string::npos) << bwhy;
  EXPECT_NE(bwhy.find("8-warp kernel"), std::string::npos) << bwhy;
  // TileConfig warps 2: a 4-warp backward at Br64 Bc64, no forward at Br128.
  TileConfig w2;
  w2.warps = 2;
  w2.bwd_block_k = 64;
  EXPECT_EQ(runs(v.backward_unsupported(problem(96), w2)), "");
  EXPECT_NE(v.unsupported(problem(96), w2), "");
  EXPECT_NE(v.backward_unsupported(problem(256), w2), "");  // 320 accumulators: not instantiated

#if FLASHSIM_GPU_INSTANCES_CI
  // This build compiles fa2-v1's CI subset (FLASHSIM_GPU_INSTANCES=ci): a tile of the table that it left out
  // (the default tile at d128, forward and backward) is refused, saying so and naming the head dim's tile.
  const std::string left_out = v.unsupported(problem(128), TileConfig{});
  EXPECT_NE(left_out.find(
                "not compiled in this build (FLASHSIM_GPU_INSTANCES=ci: head_dim 128 has only Br64 Bc128"),
            std::string::npos)
      << left_out;
  EXPECT_NE(v.backward_unsupported(problem(128), TileConfig{}).find("not compiled in this build"),
            std::string::npos);
#endif

  static_assert(fa2_fwd_instantiated(64, 128, 128, 4, 2) && !fa2_fwd_instantiated(96, 128, 128, 4, 1));
  static_assert(fa2_bwd_instantiated(256, 64, 32, 4) && !fa2_bwd_instantiated(256, 64, 64, 2));
  static_assert(fa2_fwd_smem_bytes(256, 128, 64, 2) == 192 * 1024);  // the largest forward: fits 227 KB
}

namespace {

// A small block-sparse case: mask tiles (48 x 80) that neither divide the sequences nor match a kernel tile.
golden::LoadedCase block_sparse_case(const std::string& block_mask, bool causal) {
  const golden::SuiteSpec spec = golden::parse_suite_spec(
      fmt::format(R"({{"name": "bs", "cases": [{{"name": "bs", "batch": 2, "heads_q": 4, "heads_kv": 2,
          "seqlen_q": 150, "seqlen_k": 230, "head_dim": 16, "dtype": "bf16", "causal": {}, "block_mask": "{}",
          "block_q": 48, "block_k": 80, "block_mask_spec": "random:keep=0.5"}}]}})",
                  causal ? "true" : "false", block_mask),
      "bs");
  return golden::load_case(golden::make_case_file(spec.cases[0], {}), "bs");
}

}  // namespace

TEST(GpuParams, BlockMaskTilesAreTheProblemsElementMask) {
  // The kernels' block-mask arithmetic (params.h) against the problem's element rule, for every broadcast
  // shape: block_mask_visible per element, block_mask_tiles (any / all) over rectangles as the elements say.
  for (const char* shape : {"bhqk", "1hqk", "b1qk", "11qk"}) {
    const auto lc = block_sparse_case(shape, false);
    const AttentionProblem& p = lc.c.problem;
    const auto a = gpu::make_params(p);
    ASSERT_TRUE(a.has_block_mask);
    const auto& m = lc.inputs.block_mask;
    int64_t inactive = 0;
    for (int b = 0; b < p.batch; ++b)
      for (int h = 0; h < p.heads_q; ++h) {
        const uint8_t* plane = gpu::block_mask_plane(a, m.data(), b, h);
        for (int i = 0; i < p.seqlen_q; ++i)
          for (int j = 0; j < p.seqlen_k; ++j) {
            const bool on = p.block_mask_active(m, b, h, i, j);
            inactive += on ? 0 : 1;
            ASSERT_EQ(gpu::block_mask_visible(a, plane, i, j), on) << shape << " " << b << h << " " << i << j;
          }
        for (const auto& [i0, i1, j0, j1] : {std::tuple{0, 64, 0, 64}, std::tuple{40, 100, 70, 170},
                                             std::tuple{128, 150, 192, 230}, std::tuple{5, 5, 0, 10}}) {
          bool any = false, all = true;
          for (int i = i0; i < i1; ++i)
            for (int j = j0; j < j1; ++j) {
              any = any || p.block_mask_active(m, b, h, i, j);
              all = all && p.block_mask_active(m, b, h, i, j);
            }
          EXPECT_EQ(gpu::block_mask_tiles(a, plane, i0, i1, j0, j1, true), any) << shape << i0 << j0;
          EXPECT_EQ(gpu::block_mask_tiles(a, plane, i0, i1, j0, j1, false), all) << shape << i0 << j0;
        }
      }
    EXPECT_GT(inactive, 0) << shape;  // keep=0.5: the mask hides something
  }
}

TEST(GpuHarness, BlockSparseTileCountsAreCheckedAgainstTheReference) {
  const auto v = stand_in();
  ASSERT_TRUE(v.features & gpu::kFeatureTileSkip);
  for (const bool causal : {false, true}) {
    const auto lc = block_sparse_case("bhqk", causal);
    TileConfig c;
    c.block_q = c.bwd_block_q = 32;
    c.block_k = c.bwd_block_k = 64;
    gpu::TileCounts counts{};
    const auto out = gpu::run_case(v, lc, c, c, &counts);
    EXPECT_TRUE(golden::verify_case(lc, out, {}).pass);
    EXPECT_GT(counts[1], 0);  // keep=0.5 over 48 x 80 tiles: some 32 x 64 tiles see only inactive ones
    EXPECT_GT(counts[0], 0);
    for (const auto& o : gpu::tile_count_verdicts(lc, c, c, true, counts)) EXPECT_TRUE(o.pass) << o.summary;
    // A kernel that computes one skippable tile (or miscounts) fails the check, forward and backward.
    for (const int at : {1, 3}) {
      gpu::TileCounts off = counts;
      off[at] -= 1;
      off[at - 1] += 1;
      const auto verdicts = gpu::tile_count_verdicts(lc, c, c, true, off);
      ASSERT_EQ(verdicts.size(), 2u);
      EXPECT_FALSE(verdicts[at / 2].pass);
      EXPECT_TRUE(verdicts[1 - at / 2].pass);
    }
  }
}
