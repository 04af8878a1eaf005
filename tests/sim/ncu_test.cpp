#include "flashsim/sim/ncu.h"

#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <sstream>
#include <vector>

#include "flashsim/error.h"
#include "flashsim/sim/kernel_model.h"
#include "problem_builder.h"
#include "recorded_ncu.h"

using namespace flashsim;
using namespace flashsim::sim;
using flashsim::test::ProblemBuilder;
using namespace flashsim::test;

TEST(Ncu, ParsesThousandsAndUnits) {
  std::istringstream in(
      "==PROF== Connected\n\"ID\",\"Kernel Name\",\"Metric Name\",\"Metric Unit\",\"Metric Value\"\n"
      "\"0\",\"k\",\"a\",\"byte\",\"1,234,567\"\n\"0\",\"k\",\"b\",\"Kbyte\",\"2.5\"\n");
  const auto ks = parse_ncu_csv(in);
  ASSERT_EQ(ks.size(), 1u);
  EXPECT_DOUBLE_EQ(ks[0].metrics.at("a"), 1234567.0);
  EXPECT_DOUBLE_EQ(ks[0].metrics.at("b"), 2500.0);
}

TEST(Ncu, ConvertsPrefixedUnitsToBaseUnits) {
  std::istringstream in(
      "\"ID\",\"Kernel Name\",\"Metric Name\",\"Metric Unit\",\"Metric Value\"\n"
      "\"0\",\"k\",\"a\",\"Mibyte\",\"2\"\n\"0\",\"k\",\"b\",\"usecond\",\"1.5\"\n"
      "\"0\",\"k\",\"c\",\"Ksector\",\"3\"\n\"0\",\"k\",\"d\",\"second\",\"0.25\"\n"
      "\"0\",\"k\",\"e\",\"Gbyte\",\"1.25\"\n\"0\",\"k\",\"f\",\"Pbyte\",\"1\"\n"
      "\"0\",\"k\",\"g\",\"byte\",\"n/a\"\n");
  const auto ks = parse_ncu_csv(in);
  ASSERT_EQ(ks.size(), 1u);
  EXPECT_DOUBLE_EQ(ks[0].metrics.at("a"), 2.0 * 1048576);
  EXPECT_DOUBLE_EQ(ks[0].metrics.at("b"), 1500.0);  // nanoseconds
  EXPECT_DOUBLE_EQ(ks[0].metrics.at("c"), 3000.0);
  EXPECT_DOUBLE_EQ(ks[0].metrics.at("d"), 0.25e9);
  EXPECT_DOUBLE_EQ(ks[0].metrics.at("e"), 1.25e9);
  EXPECT_FALSE(ks[0].metrics.count("f"));  // a unit it cannot convert: kept aside, not taken as bytes
  EXPECT_EQ(ks[0].unknown_units.at("f"), "Pbyte");
  EXPECT_FALSE(ks[0].metrics.count("g"));  // not a number
}

// A metric the comparison reads, in a unit flashsim cannot convert, is an error rather than a wrong number.
TEST(Ncu, UnconvertibleUnitOfAComparedMetricIsAnError) {
  std::istringstream in(
      "\"ID\",\"Kernel Name\",\"Metric Name\",\"Metric Unit\",\"Metric Value\"\n"
      "\"0\",\"void flash_fwd_kernel<Flash_fwd_kernel_traits<64, 128, 128, 4, 0, 0, bfloat16_t>>\","
      "\"dram__bytes_read.sum\",\"Pbyte\",\"1\"\n");
  const auto ks = parse_ncu_csv(in);
  const AttentionProblem p = ProblemBuilder().dtype(DType::BF16).build();
  EXPECT_THROW(compare_ncu(ks, p, load_profile("H100-SXM5-80GB")), InputError);
}

// ncu --page raw (a column per metric, a row of units under the header) and the details page of the same
// problem, profiled one after the other (bench/gpu/run.py traffic layouts): the same kernels, and the same bytes
// between L2 and the SMs (deterministic; DRAM and time differ between runs).
TEST(Ncu, RawPageReadsAsTheDetailsPage) {
  const std::string dir = FLASHSIM_TEST_DATA "/ncu/csv_layouts/";
  std::ifstream raw_in(dir + "ncu_raw_d64_n1000_causal.csv"), details_in(dir + "ncu_d64_n1000_causal.csv");
  ASSERT_TRUE(raw_in && details_in);
  const auto raw = parse_ncu_csv(raw_in), details = parse_ncu_csv(details_in);
  ASSERT_EQ(raw.size(), 4u);
  ASSERT_EQ(details.size(), 4u);
  for (size_t i = 0; i < raw.size(); ++i) {
    EXPECT_EQ(raw[i].name, details[i].name);
    EXPECT_EQ(raw[i].grid, details[i].grid);
    EXPECT_TRUE(raw[i].unknown_units.empty());
    for (const char* m :
         {"l1tex__m_xbar2l1tex_read_bytes.sum", "l1tex__t_bytes_pipe_lsu_mem_global_op_st.sum",
          "l1tex__t_bytes_pipe_lsu_mem_global_op_red.sum", "launch__registers_per_thread"})
      EXPECT_EQ(raw[i].metrics.at(m), details[i].metrics.at(m)) << i << " " << m;
    EXPECT_NEAR(raw[i].metrics.at("dram__bytes_read.sum") / details[i].metrics.at("dram__bytes_read.sum"),
                1.0, 0.05);
    EXPECT_GT(raw[i].metrics.at("gpu__time_duration.sum"), 1000.0);  // nanoseconds: several microseconds
  }
}

TEST(Ncu, RecognizesFa2) {
  auto f =
      recognize_kernel("void flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4, 0, 0, bfloat16_t>>");
  ASSERT_TRUE(f);
  EXPECT_EQ(f->model, &kernel_model("fwd_fa2"));
  EXPECT_EQ(f->config.block_q, 128);
  EXPECT_EQ(f->config.block_k, 64);
  auto b = recognize_kernel(
      "void flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel<Flash_bwd_kernel_traits<128, 64, 128, 8, 2, 4, 2>>");
  ASSERT_TRUE(b);
  EXPECT_EQ(b->model, &kernel_model("bwd_dq_dk_dv"));
  EXPECT_EQ(b->config.bwd_block_q, 64);
  EXPECT_EQ(b->config.bwd_block_k, 128);
  EXPECT_FALSE(recognize_kernel("void other_kernel<int>"));
  // flashsim's own FA2 forward (gpu/fa2/), as ncu names a kernel in an anonymous namespace.
  auto ours = recognize_kernel(
      "void flashsim::gpu::(anonymous namespace)::flashsim_fa2_fwd_kernel<96, 64, 32, 2, 2, "
      "__nv_bfloat16>(Params)");
  ASSERT_TRUE(ours);
  EXPECT_EQ(ours->model, &kernel_model("fwd_fa2_v1"));
  EXPECT_EQ(ours->config.block_q, 64);
  EXPECT_EQ(ours->config.block_k, 32);
  EXPECT_EQ(ours->config.warps, 2);
  EXPECT_EQ(ours->config.stages, 2);  // fa2-v1's fifth template argument
  // Its backward's three kernels: template arguments <d, Br, Bc, warps (twice the forward's), ...>.
  const std::pair<const char*, const char*> bwd[] = {
      {"flashsim_fa2_bwd_dot_kernel", "bwd_dot_do_o_lse"},
      {"flashsim_fa2_bwd_main_kernel", "bwd_dq_dk_dv_group"},
      {"flashsim_fa2_bwd_convert_kernel", "bwd_convert_dq_rows"}};
  for (const auto& [kernel, model] : bwd) {
    auto k = recognize_kernel(std::string("void flashsim::gpu::fa2::") + kernel +
                              "<128, 64, 128, 8, __nv_bfloat16, false>(flashsim::gpu::fa2::Fa2BwdParams)");
    ASSERT_TRUE(k) << kernel;
    EXPECT_EQ(k->model, &kernel_model(model)) << kernel;
    EXPECT_EQ(k->config.bwd_block_q, 64) << kernel;
    EXPECT_EQ(k->config.bwd_block_k, 128) << kernel;
    EXPECT_EQ(k->config.warps, 4) << kernel;
  }
  EXPECT_FALSE(
      recognize_kernel("void flashsim::gpu::fa2::flashsim_fa2_bwd_dbias_kernel<128, 64, 128, 8>(P)"));
}

// gpu/decode's kernels: the split kernels' tile from their template arguments and the family's spec, the split
// count from the report's grid y; the combine takes the split count of the split kernel before it.
TEST(Ncu, RecognizesDecodeKernelsAndTheirSplitCount) {
  const auto v2 = recognize_kernel(
      "void flashsim::gpu::decode::decode_mma_split_kernel<__nv_bfloat16, 128, 128>"
      "(flashsim::gpu::decode::DecodeParams)");
  ASSERT_TRUE(v2);
  EXPECT_EQ(v2->model, &kernel_model("fwd_splitkv"));
  EXPECT_EQ(v2->config.block_q,
            16);  // decode-v2: an m16 tile of packed rows, 64 keys a tile, 3 stages at d128
  EXPECT_EQ(v2->config.block_k, 64);
  EXPECT_EQ(v2->config.stages, 3);
  EXPECT_EQ(v2->config.warps, 4);
  const auto v1 = recognize_kernel(
      "void flashsim::gpu::decode::decode_split_kernel<float, 64, 64, "
      "8>(flashsim::gpu::decode::DecodeParams)");
  ASSERT_TRUE(v1);
  EXPECT_EQ(v1->model, &kernel_model("fwd_splitkv"));
  EXPECT_EQ(v1->config.block_q, 8);
  EXPECT_EQ(v1->config.block_k, 64);  // fp32 d64: K and V rows of 512 bytes, 32 KiB a stage
  EXPECT_THROW(recognize_kernel("void flashsim::gpu::decode::decode_split_kernel<__half, 128, 128, 5>(P)"),
               InputError);  // 5 rows: no instance
  const auto combine =
      recognize_kernel("void flashsim::gpu::decode::decode_combine_kernel<__nv_bfloat16>(P)");
  ASSERT_TRUE(combine);
  EXPECT_EQ(combine->model, &kernel_model("decode_combine"));

  // A decode step of 8 sequences of 2K cached keys, 32 query heads over 8 kv heads, at 4 splits: the launch
  // check passes only with the grid's split count (4 x 8 x 8 CTAs), and the combine reads 4 partials a row.
  AttentionProblem p =
      ProblemBuilder().batch(8).heads(32, 8).seqlen(1, 2048).head_dim(128).dtype(DType::BF16).build();
  p.page_size = 16;
  p.cache_seqlens.assign(8, 2048);
  p.validate();
  const auto report = [](const std::string& grid) {
    NcuKernel split, comb;
    split.id = "0";
    split.name = "void flashsim::gpu::decode::decode_mma_split_kernel<__nv_bfloat16, 128, 128>(P)";
    split.grid = grid;
    split.block = "(128, 1, 1)";
    split.metrics["l1tex__m_xbar2l1tex_read_bytes.sum"] = 1;
    comb.id = "1";
    comb.name = "void flashsim::gpu::decode::decode_combine_kernel<__nv_bfloat16>(P)";
    comb.grid = "(64, 1, 1)";  // 8 x 32 output rows, 4 a CTA
    comb.block = "(128, 1, 1)";
    comb.metrics["l1tex__m_xbar2l1tex_read_bytes.sum"] = 1;
    // O (256 bytes a row) and lse, a lone 4-byte store a row that the LSU moves as a 32-byte sector (as measured)
    comb.metrics["l1tex__t_bytes_pipe_lsu_mem_global_op_st.sum"] = 8.0 * 32 * (256 + 32);
    return std::vector<NcuKernel>{split, comb};
  };
  const auto hw = load_profile("H100-SXM5-80GB");
  const Comparison c = compare_ncu(report("(1, 4, 64)"), p, hw);
  ASSERT_EQ(c.kernels.size(), 2u);
  ASSERT_TRUE(c.kernels[0].recognized && c.kernels[1].recognized);
  // The combine's predicted L2 -> SM bytes: every split's fp32 partial O and lse of the 8 x 32 rows.
  const auto loads = c.kernels[1].metrics.at(0);
  ASSERT_EQ(loads.metric, "l1tex__m_xbar2l1tex_read_bytes.sum");
  EXPECT_EQ(loads.predicted, 4.0 * 8 * 32 * (128 + 1) * 4);
  const auto stores = c.kernels[1].metrics.at(1);
  ASSERT_EQ(stores.metric, "l1tex__t_bytes_pipe_lsu_mem_global_op_st.sum");
  EXPECT_TRUE(stores.ok) << stores.predicted;
  EXPECT_THROW(compare_ncu(report("(1, 4, 32)"), p, hw), InputError);  // not this problem's grid
}

// A DRAM figure is held within its interval widened by the counters' run-to-run spread (the profile's
// ncu_dram_repeatability, a share of the kernel's measured DRAM bytes).
TEST(Ncu, DramIntervalHasTheCountersSpreadAsFloor) {
  const std::string name =
      "void flash_bwd_convert_dq_kernel<Flash_bwd_kernel_traits<64, 128, 128, 8, 4, 4, 4>>";
  const auto report = [&](double write) {
    NcuKernel k;
    k.id = "0";
    k.name = name;
    k.metrics["dram__bytes_read.sum"] = 4194304;  // dQaccum of the problem below, fp32
    k.metrics["dram__bytes_write.sum"] = write;
    return std::vector<NcuKernel>{k};
  };
  const AttentionProblem p = recorded_problem(kLayoutsShape);
  auto hw = load_profile("H100-SXM5-80GB");
  ASSERT_DOUBLE_EQ(hw.ncu_dram_repeatability, 0.01);
  const auto write_of = [](const Comparison& c) { return c.kernels.at(0).metrics.at(1); };
  // dQ (2 MB of bf16) may stay in L2 (lower 0) or be written back whole (upper 2 MB)
  auto m = write_of(compare_ncu(report(768), p, hw));
  ASSERT_EQ(m.metric, "dram__bytes_write.sum");
  EXPECT_EQ(m.predicted, 0);
  EXPECT_EQ(m.lower, 0);
  EXPECT_EQ(m.upper, 2 * 1000 * 8 * 64 * 2);
  EXPECT_NEAR(m.floor, 0.01 * (4194304 + 768), 1e-6);
  EXPECT_TRUE(m.ok);
  EXPECT_EQ(m.verdict, "ok (within the L2's range)");
  const double just_over = m.upper + 20000;  // within the 42 KB spread
  EXPECT_TRUE(write_of(compare_ncu(report(just_over), p, hw)).ok);
  EXPECT_FALSE(write_of(compare_ncu(report(m.upper + 80000), p, hw)).ok);  // beyond it
  hw.ncu_dram_repeatability = 0;                                           // not measured: the interval alone
  EXPECT_FALSE(write_of(compare_ncu(report(just_over), p, hw)).ok);
}

// A causal problem's read figures take the larger run-to-run spread its K/V re-reads showed
// (ncu_dram_reread_repeatability): a forward reading 3% of its kernel's bytes above the adverse bound is within
// it, as two correct SDPA forwards of the blind set read; a planted 1.5x K/V re-read stays far outside.
TEST(Ncu, CausalReadsTakeTheReReadSpreadAsFloor) {
  const RecordedShape& s = kRecorded[0];  // causal_d128_n4096
  ASSERT_TRUE(s.causal);
  const auto kernels = with_dram_counters(
      read_report(std::string(FLASHSIM_TEST_DATA "/ncu/") + s.set + "ncu_" + s.name + ".csv"),
      read_report(std::string(FLASHSIM_TEST_DATA "/ncu/single_pass/ncu_dram_") + s.name + ".csv"));
  auto hw = load_profile("H100-SXM5-80GB");
  ASSERT_DOUBLE_EQ(hw.ncu_dram_reread_repeatability, 0.054);
  const auto forward_reads = [&](const std::vector<NcuKernel>& ks, const HardwareProfile& h) {
    for (const auto& k : compare_ncu(ks, recorded_problem(s), h).kernels)
      if (k.name.find("fwd") != std::string::npos)
        for (const auto& m : k.metrics)
          if (m.metric == "dram__bytes_read.sum") return m;
    ADD_FAILURE() << "no forward read figure";
    return MetricComparison{};
  };
  const MetricComparison m = forward_reads(kernels, hw);
  size_t fwd = 0;
  while (kernels[fwd].name.find("fwd") == std::string::npos) ++fwd;
  const double bytes =
      kernels[fwd].metrics.at("dram__bytes_read.sum") + kernels[fwd].metrics.at("dram__bytes_write.sum");
  EXPECT_NEAR(m.floor, 0.054 * bytes, 1e-6 * bytes);
  EXPECT_TRUE(m.ok) << m.verdict;
  // reads R over the bound: the floor is a share of the kernel's bytes with them, R + W
  const double w = kernels[fwd].metrics.at("dram__bytes_write.sum");
  const auto reads_over = [&](double share, const HardwareProfile& h) {
    auto moved = kernels;
    moved[fwd].metrics["dram__bytes_read.sum"] = m.upper + share * (m.upper + w);
    return forward_reads(moved, h);
  };
  EXPECT_TRUE(reads_over(0.03, hw).ok);  // within the re-reads' spread
  EXPECT_EQ(reads_over(0.10, hw).verdict.rfind("EXCESS", 0), 0u) << reads_over(0.10, hw).verdict;
  hw.ncu_dram_reread_repeatability = 0;  // not measured: the 1% of every DRAM figure
  EXPECT_EQ(reads_over(0.03, hw).verdict.rfind("EXCESS", 0), 0u) << reads_over(0.03, hw).verdict;
  // a problem without the causal mask keeps the 1%: the calibration problem's forward reads
  hw = load_profile("H100-SXM5-80GB");
  const auto plain = with_dram_counters(
      read_report(FLASHSIM_TEST_DATA "/ncu_fa2_h100_calibration.csv"),
      read_report(FLASHSIM_TEST_DATA "/ncu/single_pass/ncu_dram_calibration_d128_n4096.csv"));
  int checked = 0;
  for (const auto& k : compare_ncu(plain, recorded_problem(kCalibration), hw).kernels) {
    if (k.name.find("fwd") == std::string::npos) continue;
    for (const auto& x : k.metrics) {
      if (x.metric != "dram__bytes_read.sum") continue;
      EXPECT_LT(x.floor, 0.02 * x.measured) << k.name;
      ++checked;
    }
  }
  EXPECT_EQ(checked, 1);
}

// The calibration problem with its DRAM counters measured in one ncu pass (the same kernels, re-run on an
// H100 the same day): every metric of the four kernels within tolerance.
TEST(Ncu, CalibrationH100WithinTolerance) {
  const auto kernels = with_dram_counters(
      read_report(FLASHSIM_TEST_DATA "/ncu_fa2_h100_calibration.csv"),
      read_report(FLASHSIM_TEST_DATA "/ncu/single_pass/ncu_dram_calibration_d128_n4096.csv"));
  const auto c = compare_ncu(kernels, recorded_problem(kCalibration), load_profile("H100-SXM5-80GB"));
  ASSERT_EQ(c.kernels.size(), 4u);
  for (const auto& k : c.kernels) {
    EXPECT_TRUE(k.recognized) << k.name;
    for (const auto& m : k.metrics) EXPECT_TRUE(m.ok) << k.name << " " << m.metric << " ratio " << m.ratio;
  }
  EXPECT_TRUE(c.ok);
}

// The calibration file alone: its DRAM counters were collected with 16 metrics, so ncu replayed each kernel,
// and every kernel after the first wrote 1.5 .. 3.5 MB more than one pass of the same kernels measures. With
// the profile's replay term (auto-detected from the metric list) every metric is within tolerance; without it
// the dQ convert kernel's DRAM writes are 10.4% over and nothing else fails.
TEST(Ncu, CalibrationFileWithReplayTerm) {
  const auto file = read_report(FLASHSIM_TEST_DATA "/ncu_fa2_h100_calibration.csv");
  const auto one_pass =
      read_report(FLASHSIM_TEST_DATA "/ncu/single_pass/ncu_dram_calibration_d128_n4096.csv");
  ASSERT_EQ(file.size(), one_pass.size());
  for (size_t i = 1; i < file.size(); ++i) {
    const double extra =
        file[i].metrics.at("dram__bytes_write.sum") - one_pass[i].metrics.at("dram__bytes_write.sum");
    EXPECT_GT(extra, 1.5e6) << file[i].name.substr(0, 40);
    EXPECT_LT(extra, 3.5e6) << file[i].name.substr(0, 40);
  }
  EXPECT_TRUE(dram_counters_replayed(file));
  EXPECT_FALSE(dram_counters_replayed(one_pass));
  const auto hw = load_profile("H100-SXM5-80GB");
  const auto with_term = compare_ncu(file, recorded_problem(kCalibration), hw, true);
  EXPECT_TRUE(with_term.ok);
  EXPECT_EQ(with_term.kernels[0].replay_write_bytes, 0);  // the first kernel profiled
  EXPECT_EQ(with_term.kernels[3].replay_write_bytes, hw.ncu_replay_write_bytes);
  // The term raises the predicted writes and the upper bound of the kernels after the first, not the lower
  // bound (the replay's dirty data is ncu's, not the kernel's).
  const auto without = compare_ncu(file, recorded_problem(kCalibration), hw, false);
  for (size_t i = 0; i < without.kernels.size(); ++i) {
    const auto& a = with_term.kernels[i].metrics.at(4);
    const auto& b = without.kernels[i].metrics.at(4);
    ASSERT_EQ(a.metric, "dram__bytes_write.sum");
    const double term = i > 0 ? hw.ncu_replay_write_bytes : 0;
    EXPECT_NEAR(a.predicted - b.predicted, term, 1) << i;
    EXPECT_NEAR(a.upper - b.upper, term, 1) << i;
    EXPECT_EQ(a.lower, b.lower) << i;
  }
}

TEST(Ncu, DramReportMustMatchKernels) {
  auto file = read_report(FLASHSIM_TEST_DATA "/ncu_fa2_h100_calibration.csv");
  auto fewer = file;
  fewer.pop_back();
  EXPECT_THROW((void)with_dram_counters(file, fewer), InputError);
  auto renamed = file;
  renamed[1].name = "other_kernel";
  EXPECT_THROW((void)with_dram_counters(file, renamed), InputError);
  auto no_dram = file;
  no_dram[0].metrics.erase("dram__bytes_write.sum");
  EXPECT_THROW((void)with_dram_counters(file, no_dram), InputError);
  auto scaled = file;
  scaled[2].metrics["dram__bytes_read.sum"] = 123;
  EXPECT_EQ(with_dram_counters(file, scaled)[2].metrics.at("dram__bytes_read.sum"), 123);
}

// Every recorded H100 shape: bytes between L2 and the SMs within 2% in every full report (first run, repeat,
// validation); every DRAM figure, from the one-pass reports and from the reports' own replayed counters, inside
// the range a correct L2 allows (dram_interval.h), the point prediction inside it too.
TEST(Ncu, RecordedH100ShapesWithinTolerance) {
  const auto hw = load_profile("H100-SXM5-80GB");
  int dram_total = 0, l2_total = 0, replayed_total = 0;
  const auto hold_range = [](const MetricComparison& m, const std::string& where) {
    EXPECT_TRUE(m.ok) << where << " measured " << m.measured << " range " << m.lower << " .. " << m.upper;
    EXPECT_LE(m.lower, m.predicted) << where;
    EXPECT_LE(m.predicted, m.upper) << where;
  };
  for (const auto& s : all_recorded()) {
    auto kernels = read_report(std::string(FLASHSIM_TEST_DATA "/ncu/") + s.set + "ncu_" + s.name + ".csv");
    for (const auto& k :
         compare_ncu(kernels, recorded_problem(s), hw, dram_counters_replayed(kernels)).kernels)
      for (const auto& m : k.metrics)
        if (m.interval) {
          ++replayed_total;
          hold_range(m, std::string("replayed ") + s.set + s.name + "/" + k.name + "/" + m.metric);
        }
    const bool hold_dram = std::string(s.set) != "repeat/";  // one DRAM report per shape
    if (hold_dram)
      kernels = with_dram_counters(
          kernels,
          read_report(std::string(FLASHSIM_TEST_DATA "/ncu/single_pass/ncu_dram_") + s.name + ".csv"));
    const auto c = compare_ncu(kernels, recorded_problem(s), hw);
    ASSERT_EQ(c.kernels.size(), 4u) << s.name;
    for (const auto& k : c.kernels) {
      ASSERT_TRUE(k.recognized) << k.name;
      for (const auto& m : k.metrics) {
        const std::string key = std::string(s.set) + s.name + "/" + k.name + "/" + m.metric;
        if (m.interval) {
          if (!hold_dram) continue;
          ++dram_total;
          hold_range(m, key);
        } else if (m.tolerance > 0) {
          ++l2_total;
          EXPECT_TRUE(m.ok) << key << " ratio " << m.ratio;
        }
      }
    }
  }
  EXPECT_EQ(l2_total, 23 * 4 * 3);  // 23 reports x 4 kernels x (load, store, reduction)
  EXPECT_EQ(dram_total, 16 * 4 * 2);
  EXPECT_EQ(replayed_total, 23 * 4 * 2);
}

// The time estimate against ncu's gpu__time_duration of the two FA2 kernels that do the math, on the 7
// recorded shapes (the profile's achieved MMA rates come from the calibration file, not from these): within
// 35%.
TEST(Ncu, RecordedH100KernelTimes) {
  const auto hw = load_profile("H100-SXM5-80GB");
  ASSERT_GT(hw.achieved_mma_flops_fwd, 0);
  int checked = 0;
  for (const auto& s : kRecorded) {
    std::ifstream in(std::string(FLASHSIM_TEST_DATA "/ncu/ncu_") + s.name + ".csv");
    ASSERT_TRUE(in) << s.name;
    const AttentionProblem p = recorded_problem(s);
    for (const auto& k : parse_ncu_csv(in)) {
      const auto rec = recognize_kernel(k.name);
      ASSERT_TRUE(rec) << k.name;
      if (rec->model != &kernel_model("fwd_fa2") && rec->model != &kernel_model("bwd_dq_dk_dv")) continue;
      const double measured = k.metrics.at("gpu__time_duration.sum") * 1e-9;
      const double predicted = predict_kernel(analytic_counts(*rec->model, p, rec->config), hw).time_s;
      EXPECT_NEAR(measured / predicted, 1.0, 0.35) << s.name << " " << k.name.substr(0, 40);
      ++checked;
    }
  }
  EXPECT_EQ(checked, 14);
}

// The memory-bound kernels (dot_do_o, convert_dq: 16 .. 47 us) on all 16 recorded shapes: their DRAM time
// plus the profile's launch latency (measured with copy kernels: calibration h100.kernel_latency_s)
// within 40% of ncu's time; their DRAM time alone is up to 2x short.
TEST(Ncu, RecordedH100MemoryBoundKernelTimes) {
  const auto hw = load_profile("H100-SXM5-80GB");
  ASSERT_GT(hw.kernel_latency_s, 0);
  int checked = 0, short_without_latency = 0;
  std::vector<RecordedShape> shapes(std::begin(kRecorded), std::end(kRecorded));
  shapes.insert(shapes.end(), std::begin(kValidation), std::end(kValidation));
  shapes.insert(shapes.end(), std::begin(kValidation2), std::end(kValidation2));
  for (const auto& s : shapes) {
    const AttentionProblem p = recorded_problem(s);
    for (const auto& k :
         read_report(std::string(FLASHSIM_TEST_DATA "/ncu/") + s.set + "ncu_" + s.name + ".csv")) {
      const auto rec = recognize_kernel(k.name);
      ASSERT_TRUE(rec) << k.name;
      if (rec->model != &kernel_model("bwd_dot_do_o") && rec->model != &kernel_model("bwd_convert_dq"))
        continue;
      const double measured = k.metrics.at("gpu__time_duration.sum") * 1e-9;
      const auto pr = predict_kernel(analytic_counts(*rec->model, p, rec->config), hw);
      EXPECT_TRUE(pr.bound == "memory" || pr.bound == "l2") << pr.bound;
      EXPECT_NEAR(measured / pr.time_s, 1.0, 0.40) << s.name << " " << k.name.substr(0, 40);
      short_without_latency += measured / (pr.time_s - pr.t_latency) > 1.4 ? 1 : 0;
      ++checked;
    }
  }
  EXPECT_EQ(checked, 32);
  EXPECT_GT(short_without_latency, 10);  // the latency term is what brings them within 40%
}

// The flags against what the report says (issue 32): the head dim the kernels were compiled for, FA2's Is_causal
// flag, the grid's batch and heads, and the GPU's compute capability against --hw's profile: each a one-line
// InputError naming the flag, before any figure is compared.
TEST(Ncu, FlagsThatDisagreeWithTheReportAreNamed) {
  const auto hw = load_profile("H100-SXM5-80GB");
  const auto calibration =
      read_report(FLASHSIM_TEST_DATA "/ncu_fa2_h100_calibration.csv");  // b2 h16 n4096 d128
  const auto causal_report = read_report(FLASHSIM_TEST_DATA "/ncu/ncu_causal_d128_n4096.csv");
  const AttentionProblem right = recorded_problem(kCalibration);
  EXPECT_NO_THROW(compare_ncu(calibration, right, hw));
  EXPECT_NO_THROW(compare_ncu(causal_report, recorded_problem(kRecorded[0]), hw));
  const auto expect = [&](const std::vector<NcuKernel>& report, const AttentionProblem& p,
                          const HardwareProfile& h, const std::string& field, const std::string& says) {
    try {
      compare_ncu(report, p, h);
      ADD_FAILURE() << "no error; expected " << says;
    } catch (const InputError& e) {
      EXPECT_EQ(e.field(), field) << e.what();
      EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << e.what();
    }
  };
  const auto with = [&](auto change) {
    ProblemBuilder b;
    b.batch(2).heads(16).seqlen(4096).head_dim(128).dtype(DType::BF16);
    change(b);
    return b.build();
  };
  expect(calibration, with([](ProblemBuilder& b) { b.head_dim(64); }), hw, "head-dim",
         "was compiled for head dim 128; --head-dim says 64");
  // FlashAttention-2 runs a d100 problem on its d128 kernel: those flags pass the head-dim check (and fail on
  // the bytes, not here)
  expect(calibration, with([](ProblemBuilder& b) { b.head_dim(96); }), hw, "head-dim",
         "was compiled for head dim 128; --head-dim says 96");
  try {
    compare_ncu(calibration, with([](ProblemBuilder& b) { b.head_dim(100); }), hw);
  } catch (const InputError& e) {
    EXPECT_NE(e.field(), "head-dim") << e.what();
  }
  expect(calibration, with([](ProblemBuilder& b) { b.causal(); }), hw, "causal",
         "was compiled without a causal mask; the flags say --causal");
  expect(causal_report, with([](ProblemBuilder&) {}), hw, "causal",
         "was compiled with a causal mask; the flags say no mask");
  expect(calibration, with([](ProblemBuilder& b) { b.window(256, 0); }), hw, "window",
         "was compiled without a sliding window (Is_local); the flags say --window");
  expect(calibration, with([](ProblemBuilder& b) { b.batch(1); }), hw, "ncu",
         "--batch says 1, the report ran 2");
  expect(calibration, with([](ProblemBuilder& b) { b.heads(8); }), hw, "ncu",
         "--heads says 8, the report ran 16");
  expect(calibration, with([](ProblemBuilder& b) { b.seqlen(2048); }), hw, "ncu",
         "--seqlen-q (or --seqlen) gives 16 query blocks, the report ran 32");
  expect(calibration, right, load_profile("A100-SXM4-80GB"), "hw",
         "ran on a compute capability 9.0 GPU; --hw A100-SXM4-80GB profiles an sm_80 GPU");
  // flashsim's backward main kernel: a CTA per kv head, so its grid tells --heads-kv apart
  const auto own = read_report(FLASHSIM_TEST_DATA "/ncu/own/ncu_fa2_bwd_d64_n8192.csv");  // b1 h16 n8192 d64
  const AttentionProblem own_problem =
      ProblemBuilder().batch(1).heads(16).seqlen(8192).head_dim(64).dtype(DType::BF16).build();
  EXPECT_NO_THROW(compare_ncu(own, own_problem, hw));
  expect(own, ProblemBuilder().batch(1).heads(16, 4).seqlen(8192).head_dim(64).dtype(DType::BF16).build(), hw,
         "ncu", "--heads-kv says 4, the report ran 16 kv heads");
}
