// traffic compare's DRAM interval (dram_interval.h): planted excess traffic in recorded reports is flagged as
// the kernel's, with the tensor to look at; the JSON carries the interval.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "flashsim/sim/dram_interval.h"
#include "flashsim/sim/l2_sim.h"
#include "flashsim/sim/ncu.h"
#include "recorded_ncu.h"

using namespace flashsim;
using namespace flashsim::sim;
using namespace flashsim::test;

namespace {

// The 16 recorded shapes and the calibration problem, each with its one-pass DRAM counters.
struct Recorded {
  RecordedShape shape;
  std::vector<NcuKernel> kernels;
};
std::vector<Recorded> one_pass_reports() {
  std::vector<RecordedShape> shapes(std::begin(kRecorded), std::end(kRecorded));
  shapes.insert(shapes.end(), std::begin(kValidation), std::end(kValidation));
  shapes.insert(shapes.end(), std::begin(kValidation2), std::end(kValidation2));
  shapes.push_back(kCalibration);
  std::vector<Recorded> out;
  for (const auto& s : shapes) {
    const std::string full = s.name == std::string(kCalibration.name)
                                 ? FLASHSIM_TEST_DATA "/ncu_fa2_h100_calibration.csv"
                                 : std::string(FLASHSIM_TEST_DATA "/ncu/") + s.set + "ncu_" + s.name + ".csv";
    out.push_back(
        {s, with_dram_counters(read_report(full),
                               read_report(std::string(FLASHSIM_TEST_DATA "/ncu/single_pass/ncu_dram_") +
                                           s.name + ".csv"))});
  }
  return out;
}

const MetricComparison& metric(const Comparison& c, size_t kernel, const std::string& name) {
  for (const auto& m : c.kernels.at(kernel).metrics)
    if (m.metric == name) return m;
  throw std::runtime_error("no " + name);
}

// Bytes of a tensor's footprint in the forward kernel's counts (the problem's K, V or O).
double footprint(const AttentionProblem& p, const NcuKernel& k, ref::TensorId t) {
  const auto rec = recognize_kernel(k.name);
  return static_cast<double>(
      analytic_counts(*rec->model, p, rec->config).tensors[static_cast<size_t>(t)].unique_bytes);
}

}  // namespace

// A kernel that reads K and V 1.5x or 2x as often from DRAM as the recorded one (the K/V part of its measured
// reads scaled, everything else as measured), or writes O twice: flagged as EXCESS naming the tensor, on every
// shape whose interval the L2 does not widen past the planted bytes: all 9 non-causal shapes (and the
// calibration problem) for K/V reads in the forward, the 7 of them without GQA in the main backward kernel (with
// GQA, K and V are a quarter of the heads' bytes and 1.5x of them lies within the range the Q/dO re-reads span),
// and all 17 for doubled O writes. The causal forwards' ranges are wider (their K/V re-reads depend on how far
// the CTAs drift apart): the test holds how many of their 16 planted reads (8 shapes, 1.5x and 2x) are caught:
// the 5 shapes at head dims 64, 96 and 256, not the 3 at d128, whose schedules sit at the adverse LRU's edge
// (their upper bounds are 10 .. 27x the compulsory bytes).
TEST(NcuInterval, PlantedExcessTrafficIsFlagged) {
  const auto hw = load_profile("H100-SXM5-80GB");
  int kv_flagged_causal = 0, causal = 0;
  std::string missed;
  for (const auto& r : one_pass_reports()) {
    const AttentionProblem p = recorded_problem(r.shape);
    const Comparison unedited = compare_ncu(r.kernels, p, hw);
    ASSERT_TRUE(unedited.ok) << r.shape.name;  // within the L2's range
    const double kv =
        footprint(p, r.kernels[0], ref::TensorId::K) + footprint(p, r.kernels[0], ref::TensorId::V);
    const double o = footprint(p, r.kernels[0], ref::TensorId::O);
    for (const double f : {1.5, 2.0}) {
      for (const size_t kernel :
           {size_t{0}, size_t{2}}) {  // the forward and the main backward kernel read K/V
        auto edited = r.kernels;
        double& read = edited[kernel].metrics.at("dram__bytes_read.sum");
        // The K/V part of the measured reads: what exceeds the other tensors' compulsory bytes.
        const double kv_read =
            kv + std::max(0.0, read - metric(unedited, kernel, "dram__bytes_read.sum").lower);
        read += (f - 1) * kv_read;
        const auto c = compare_ncu(edited, p, hw);
        const auto& m = metric(c, kernel, "dram__bytes_read.sum");
        const std::string where =
            std::string(r.shape.name) + " kernel " + std::to_string(kernel) + " x" + std::to_string(f);
        const bool gqa_backward = kernel == 2 && r.shape.heads_kv < r.shape.heads;
        if (!r.shape.causal && !gqa_backward) {
          EXPECT_FALSE(c.ok) << where;
          EXPECT_EQ(m.verdict.rfind("EXCESS: reads", 0), 0u) << where << ": " << m.verdict;
          if (kernel == 0) {
            EXPECT_EQ(m.suspect, "k") << where;  // K and V re-read alike; K first
          }
        } else if (kernel == 0) {
          ++causal;
          kv_flagged_causal += m.ok ? 0 : 1;
          if (m.ok) missed += where + " ";
        }
        // Whatever the verdict, it is the interval's: flagged exactly when above upper + the spread.
        EXPECT_EQ(m.ok, m.measured <= m.upper + m.floor) << where;
      }
    }
    auto edited = r.kernels;
    edited[0].metrics.at("dram__bytes_write.sum") += o;  // O written twice
    const auto c = compare_ncu(edited, p, hw);
    const auto& w = metric(c, 0, "dram__bytes_write.sum");
    EXPECT_FALSE(c.ok) << r.shape.name;
    EXPECT_EQ(w.verdict.rfind("EXCESS: writes", 0), 0u) << r.shape.name << ": " << w.verdict;
    EXPECT_EQ(w.suspect, "o") << r.shape.name;
    // A kernel that spills may also be writing its spill frames back more than once: the verdict says so.
    const double spills = r.kernels[0].metrics.at("l1tex__t_bytes_pipe_lsu_mem_local_op_st.sum");
    EXPECT_EQ(w.verdict.find("register-spill frames (") != std::string::npos, spills > 0)
        << r.shape.name << ": " << w.verdict;
  }
  EXPECT_EQ(causal, 16);
  EXPECT_EQ(kv_flagged_causal, 10) << "not flagged: " << missed;  // 5 at 1.5x, 5 at 2x
}

// Fewer bytes than the compulsory ones (a report of a smaller problem, or a kernel that skips work) are BELOW.
TEST(NcuInterval, BelowTheCompulsoryBytesIsFlagged) {
  const auto hw = load_profile("H100-SXM5-80GB");
  auto r = one_pass_reports().front();
  r.kernels[1].metrics.at("dram__bytes_read.sum") *= 0.5;  // the dot kernel reads O and dO once: 67 MB
  const auto c = compare_ncu(r.kernels, recorded_problem(r.shape), hw);
  EXPECT_FALSE(c.ok);
  EXPECT_EQ(metric(c, 1, "dram__bytes_read.sum").verdict.rfind("BELOW: reads 0.50x", 0), 0u)
      << metric(c, 1, "dram__bytes_read.sum").verdict;
}

// --json: lower, predicted, upper and the verdict of every DRAM metric; the L2-side metrics keep their tolerance
// and have no interval.
TEST(NcuInterval, JsonCarriesTheInterval) {
  const auto hw = load_profile("H100-SXM5-80GB");
  const auto r = one_pass_reports().back();  // the calibration problem
  const auto j = to_json(compare_ncu(r.kernels, recorded_problem(r.shape), hw));
  int dram = 0;
  for (const auto& k : j.at("kernels"))
    for (const auto& m : k.at("metrics")) {
      const std::string name = m.at("metric");
      if (name.rfind("dram__", 0) == 0) {
        ++dram;
        EXPECT_LE(m.at("lower").get<double>(), m.at("predicted").get<double>()) << name;
        EXPECT_LE(m.at("predicted").get<double>(), m.at("upper").get<double>()) << name;
        EXPECT_EQ(m.at("verdict"), "ok (within the L2's range)");
        EXPECT_TRUE(m.at("suspect").is_string());
      } else if (name.rfind("l1tex__m_xbar", 0) == 0) {
        EXPECT_TRUE(m.at("lower").is_null());
        EXPECT_EQ(m.at("verdict"), "ok");
      }
    }
  EXPECT_EQ(dram, 8);
}

// The bounds come from the profile's named L2 quantities: a smaller adverse capacity can only widen the range of
// a kernel whose CTAs share data, and the lower bound of reads is the compulsory bytes whatever the L2.
TEST(NcuInterval, BoundsFollowTheProfile) {
  auto hw = load_profile("H100-SXM5-80GB");
  ASSERT_EQ(hw.l2_reuse_bytes, 24 << 20);
  ASSERT_EQ(hw.l2_adverse_reuse_bytes, 35 << 19);  // 17.5 MiB, calibration h100.l2_adverse_reuse_bytes
  const AttentionProblem p = recorded_problem(kRecorded[0]);  // causal d128 n4096
  const auto rec = recognize_kernel(one_pass_reports().front().kernels[0].name);
  ASSERT_TRUE(rec);
  const auto counts = analytic_counts(*rec->model, p, rec->config);
  const auto wide = dram_interval(*rec->model, p, rec->config, predict_kernel(counts, hw), hw, {});
  EXPECT_TRUE(wide.executed);
  EXPECT_EQ(wide.read.lower, static_cast<double>(counts.unique_loaded()));
  EXPECT_EQ(wide.read.suspect, "k");
  EXPECT_EQ(wide.adverse_l2_bytes, static_cast<double>(hw.l2_adverse_reuse_bytes));
  hw.l2_adverse_reuse_bytes *= 2;
  const auto narrow = dram_interval(*rec->model, p, rec->config, predict_kernel(counts, hw), hw, {});
  EXPECT_EQ(narrow.read.lower, wide.read.lower);
  EXPECT_LE(narrow.read.upper, wide.read.upper);
  EXPECT_GT(narrow.adverse_l2_bytes, wide.adverse_l2_bytes);
}

// The measured adverse capacity is the kernel's whatever it writes (dirty lines written once take none of it on
// the H100); the resident CTAs' spill frames take their bytes from it. Unmeasured, the kernel's dirty lines
// hold their share of l2_reuse_bytes, up to the dirty limit.
TEST(NcuInterval, AdverseCapacityAndDirtyLines) {
  auto hw = load_profile("H100-SXM5-80GB");
  const auto reports = one_pass_reports();
  // (kernel 0 the forward, 2 the main backward) of the report of `shape`: its interval and its dirty bytes
  const auto interval = [&](const char* shape, size_t kernel, double spills) {
    const auto r = std::find_if(reports.begin(), reports.end(),
                                [&](const Recorded& x) { return x.shape.name == std::string(shape); });
    EXPECT_NE(r, reports.end()) << shape;
    const AttentionProblem p = recorded_problem(r->shape);
    const auto rec = recognize_kernel(r->kernels.at(kernel).name);
    const auto counts = analytic_counts(*rec->model, p, rec->config);
    return std::pair{dram_interval(*rec->model, p, rec->config, predict_kernel(counts, hw), hw,
                                   SpillFacts{.store_bytes_per_cta = spills}),
                     static_cast<double>(counts.unique_dirty())};
  };
  const auto [fwd, fwd_dirty] = interval("d64_n1024", 0, 0);
  const auto [bwd, bwd_dirty] = interval("causal_d128_n4096", 2, 0);
  ASSERT_LT(fwd_dirty, static_cast<double>(hw.l2_dirty_bytes));  // O and lse: 17 MB
  ASSERT_GT(bwd_dirty, static_cast<double>(hw.l2_dirty_bytes));  // dQaccum, dK, dV: 134 MB
  EXPECT_EQ(fwd.adverse_l2_bytes, static_cast<double>(hw.l2_adverse_reuse_bytes));
  EXPECT_EQ(bwd.adverse_l2_bytes, static_cast<double>(hw.l2_adverse_reuse_bytes));
  const double frame = 64.0 * 1024;  // a CTA's spill stores a main-loop step (d64 n1024 Br128 Bc128: 8 steps)
  const auto spilling = interval("d64_n1024", 0, frame * 8).first;
  EXPECT_EQ(spilling.spill_frame_bytes_cta, frame);
  EXPECT_LT(spilling.adverse_l2_bytes, fwd.adverse_l2_bytes - frame * hw.sms);  // at least a CTA an SM
  EXPECT_GE(spilling.read.upper, fwd.read.upper);

  hw.l2_adverse_reuse_bytes = 0;
  const auto reuse = static_cast<double>(hw.l2_reuse_bytes), l2 = static_cast<double>(hw.l2_bytes);
  EXPECT_DOUBLE_EQ(interval("d64_n1024", 0, 0).first.adverse_l2_bytes, reuse * (1 - fwd_dirty / l2));
  EXPECT_DOUBLE_EQ(interval("causal_d128_n4096", 2, 0).first.adverse_l2_bytes,
                   reuse * (1 - static_cast<double>(hw.l2_dirty_bytes) / l2));
}

namespace {

// flashsim's own kernels as recorded on an H100 (tests/data/ncu/own; calibration h100.dram_interval): the full
// report with its one-pass DRAM counters.
std::vector<NcuKernel> own_report(const std::string& name) {
  const std::string dir = FLASHSIM_TEST_DATA "/ncu/own/";
  return with_dram_counters(read_report(dir + "ncu_" + name + ".csv"),
                            read_report(dir + "ncu_dram_" + name + ".csv"));
}

}  // namespace

// A real kernel that re-reads K/V from DRAM on purpose (fa2-v1-heads-first: fa2-v1's forward with the CTAs
// taking (batch, head) fastest) is flagged, naming k; fa2-v1 itself on the same problem is within the range.
TEST(NcuInterval, RealKernelRereadingKvIsFlagged) {
  const auto hw = load_profile("H100-SXM5-80GB");
  const AttentionProblem p =
      ProblemBuilder().batch(4).heads(32).seqlen(4096).head_dim(128).dtype(DType::BF16).build();
  const auto planted = compare_ncu(own_report("fa2_fwd_heads_first_d128_n4096"), p, hw);
  const auto& m = metric(planted, 0, "dram__bytes_read.sum");
  EXPECT_FALSE(planted.ok);
  EXPECT_EQ(m.verdict.rfind("EXCESS: reads", 0), 0u) << m.verdict;
  EXPECT_EQ(m.suspect, "k");
  EXPECT_GT(m.measured, 10 * m.upper);  // K/V once per query block: 32 query blocks a head
  const auto control = compare_ncu(own_report("fa2_fwd_d128_n4096_b4h32"), p, hw);
  EXPECT_TRUE(control.ok);
  EXPECT_TRUE(metric(control, 0, "dram__bytes_read.sum").ok);
}

// flashsim's dot kernel reads O, dO and the lse: its L2->SM reads are the model's to the byte, and its DRAM
// reads (1.1 MB over O + dO at d64 n8192) are inside the range.
TEST(NcuInterval, OwnBackwardIsWithinTheRange) {
  const auto hw = load_profile("H100-SXM5-80GB");
  const AttentionProblem p =
      ProblemBuilder().batch(1).heads(16).seqlen(8192).head_dim(64).dtype(DType::BF16).build();
  const auto c = compare_ncu(own_report("fa2_bwd_d64_n8192"), p, hw);
  EXPECT_TRUE(c.ok);
  const auto& sm = metric(c, 0, "l1tex__m_xbar2l1tex_read_bytes.sum");
  EXPECT_EQ(sm.measured, sm.predicted);
  EXPECT_TRUE(metric(c, 0, "dram__bytes_read.sum").ok);
}

// With a partitioned capacity (l2_partitioned_adverse_bytes: the H200 profile's), a causal forward's read upper
// bound is the smaller of the adverse LRU's and the partitioned L2's, less the resident spill frames, where the
// kernel's frame is known; a backward's is the LRU's alone, and a profile without the partitioned capacity keeps
// the LRU's.
TEST(NcuInterval, PartitionedL2BoundsForwardReads) {
  auto hw = load_profile("H200");
  ASSERT_EQ(hw.l2_partitions, 2);
  // derive l2-partitioned with the kernels' stack frames (calibration h200.l2_partitioned_adverse)
  ASSERT_EQ(hw.l2_partitioned_adverse_bytes, int64_t{50} << 20);
  ASSERT_EQ(load_profile("H100-SXM5-80GB").l2_partitioned_adverse_bytes, 0);  // its kernels' frames unknown
  auto lru_only = hw;
  lru_only.l2_partitioned_adverse_bytes = 0;
  const auto p =
      ProblemBuilder().batch(2).heads(8).seqlen(8192).head_dim(128).dtype(DType::BF16).causal().build();
  const auto interval = [&](const char* kernel, const HardwareProfile& h, SpillFacts spills) {
    const KernelModel& m = kernel_model(kernel);
    const TileConfig c{};
    const auto counts = analytic_counts(m, p, c);
    return dram_interval(m, p, c, predict_kernel(counts, h), h, spills);
  };
  const SpillFacts none{.store_bytes_per_cta = 0};  // a report that counts no spill stores
  const auto with = interval("fwd_fa2", hw, none);
  const auto without = interval("fwd_fa2", lru_only, none);
  EXPECT_EQ(with.partitioned_l2_bytes, static_cast<double>(hw.l2_partitioned_adverse_bytes));
  EXPECT_EQ(without.partitioned_l2_bytes, 0);
  EXPECT_EQ(with.read.lower, without.read.lower);
  // the LRU's cliff: a long causal forward re-reads K and V many times over; the partitioned L2 much less
  EXPECT_TRUE(with.executed);
  EXPECT_GT(without.read.upper, 4 * with.read.lower);
  EXPECT_LT(with.read.upper, 0.5 * without.read.upper);
  EXPECT_GT(with.read.upper, with.read.lower);
  // a kernel that spills from a frame of unknown size keeps the LRU's bound (its frame may hold more than its
  // stores a step: blind set 4's d128 failures); with its stack frame, the frames are walked with the schedule
  // (their room taken in the walk, not off the capacity), and come back from DRAM where the walk evicts them
  const double stores = 64.0 * 1024 * 150;
  const auto unknown = interval("fwd_fa2", hw, {.store_bytes_per_cta = stores});
  EXPECT_FALSE(unknown.frame_known);
  EXPECT_EQ(unknown.partitioned_l2_bytes, 0);
  EXPECT_DOUBLE_EQ(unknown.read.upper,
                   interval("fwd_fa2", lru_only, {.store_bytes_per_cta = stores}).read.upper);
  const auto spilled =
      interval("fwd_fa2", hw, {.store_bytes_per_cta = stores, .stack_bytes_per_thread = 376});
  EXPECT_TRUE(spilled.frame_known);
  EXPECT_EQ(spilled.partitioned_l2_bytes, with.partitioned_l2_bytes);
  EXPECT_GE(spilled.read.upper, with.read.upper);  // LRU sets: more lines walked, no fewer misses
  // the backward keeps the LRU's bound
  const auto bwd = interval("bwd_dq_dk_dv", hw, none);
  EXPECT_EQ(bwd.partitioned_l2_bytes, 0);
  // the reads start at the compulsory bytes, which the optimum of the whole L2 reads when everything fits
  EXPECT_EQ(with.read.lower, with.read.compulsory);
  EXPECT_EQ(with.read.compulsory,
            static_cast<double>(analytic_counts(kernel_model("fwd_fa2"), p, {}).unique_loaded()));
}

// Where the partitioned L2 bounds a causal forward's reads, they start at the executed schedule's reads through
// the optimum cache of l2_bytes when those are more than the compulsory bytes (an L2 of 4 MiB: K and V of a head
// take 4 MiB, so even the optimum re-reads); with the LRU's bound alone they start at the compulsory bytes.
TEST(NcuInterval, OptimumOfTheWholeL2RaisesAPartitionedForwardsLowerEnd) {
  auto hw = load_profile("H200");
  hw.l2_bytes = hw.l2_partitioned_adverse_bytes = int64_t{4} << 20;
  auto lru_only = hw;
  lru_only.l2_partitioned_adverse_bytes = 0;
  const auto p =
      ProblemBuilder().batch(2).heads(8).seqlen(8192).head_dim(128).dtype(DType::BF16).causal().build();
  const KernelModel& m = kernel_model("fwd_fa2");
  const TileConfig c{};
  const auto counts = analytic_counts(m, p, c);
  const SpillFacts none{.store_bytes_per_cta = 0};
  const auto pred = predict_kernel(counts, hw);
  const auto with = dram_interval(m, p, c, pred, hw, none);
  const auto without = dram_interval(m, p, c, predict_kernel(counts, lru_only), lru_only, none);
  const int64_t best =
      simulate_l2_optimal_reads(schedule(m, p, c), p, hw, pred.occ.resident_ctas, hw.l2_bytes).value();
  ASSERT_GT(best, counts.unique_loaded());
  EXPECT_EQ(with.read.lower, static_cast<double>(best));
  EXPECT_EQ(with.read.compulsory, static_cast<double>(counts.unique_loaded()));
  EXPECT_LE(with.read.lower, with.read.upper);
  EXPECT_EQ(without.read.lower, without.read.compulsory);
}

// A kernel's stack frame (cuobjdump's STACK, --stack-bytes) is walked with the schedule: stored when a CTA starts
// and loaded when it ends (SDPA's d128 causal forwards on the H200 wrote back and read back much of theirs,
// calibration h200.spill_frame_reads). It takes its room in the walk, not off the capacity; each CTA's frame is
// read back where the walk evicts it, written back once at most on top of the dirty data, and it is the frame the
// resident CTAs hold where it is larger than a step's spill stores.
TEST(NcuInterval, StackFrameIsWalkedWithTheSchedule) {
  const auto hw = load_profile("H200");
  const auto p =
      ProblemBuilder().batch(2).heads(8).seqlen(8192).head_dim(128).dtype(DType::BF16).causal().build();
  const KernelModel& m = kernel_model("fwd_fa2");
  const TileConfig c{};
  const auto counts = analytic_counts(m, p, c);
  const auto pr = predict_kernel(counts, hw);
  const auto plain = dram_interval(m, p, c, pr, hw, {.store_bytes_per_cta = 0});
  const double stack = 376;
  const auto framed =
      dram_interval(m, p, c, pr, hw, {.store_bytes_per_cta = 0, .stack_bytes_per_thread = stack});
  const double frame = stack * counts.launch.threads, ctas = static_cast<double>(counts.launch.ctas());
  EXPECT_EQ(framed.spill_frame_bytes_cta, frame);
  EXPECT_DOUBLE_EQ(framed.adverse_l2_bytes, plain.adverse_l2_bytes);
  EXPECT_DOUBLE_EQ(framed.partitioned_l2_bytes, plain.partitioned_l2_bytes);
  // the reads: at least the schedule's without frames (LRU sets), and the frames' reads back, some and at most
  // each CTA's once
  EXPECT_GT(framed.spill_read_bytes, 0);
  EXPECT_LE(framed.spill_read_bytes, frame * ctas);
  EXPECT_GE(framed.read.upper, plain.read.upper);
  // (the resident slots' frames, 264 of 48 KB, displace a little of the 50 MiB)
  EXPECT_LE(framed.read.upper, plain.read.upper + framed.spill_read_bytes + 0.25 * plain.read.lower);
  EXPECT_GE(framed.write.upper, plain.write.upper + frame * ctas);
  EXPECT_EQ(framed.read.lower, plain.read.lower);
  // a frame line comes back from DRAM only after it was written back: no more than the measured writes beyond
  // the kernel's least
  const double cap = std::floor(framed.spill_read_bytes / 2);
  const auto capped = dram_interval(m, p, c, pr, hw,
                                    {.store_bytes_per_cta = 0,
                                     .stack_bytes_per_thread = stack,
                                     .measured_write_bytes = framed.write.lower + cap});
  EXPECT_DOUBLE_EQ(capped.spill_read_bytes, cap);
  EXPECT_DOUBLE_EQ(capped.read.upper, framed.read.upper - framed.spill_read_bytes + cap);
  const auto none = dram_interval(m, p, c, pr, hw,
                                  {.store_bytes_per_cta = 0,
                                   .stack_bytes_per_thread = stack,
                                   .measured_write_bytes = framed.write.lower / 2});
  EXPECT_EQ(none.spill_read_bytes, 0);
  // without the frame, no read-back term (the writes alone leave the dirty limit's slack, which hides planted
  // re-reads: PlantedExcessTrafficIsFlagged); the verdict names the frame instead
  const auto full = dram_interval(
      m, p, c, pr, hw, {.store_bytes_per_cta = 1e6, .measured_write_bytes = framed.write.lower + 5e6});
  EXPECT_EQ(full.spill_read_bytes, 0);
  EXPECT_FALSE(full.frame_known);
  // a step's stores larger than the stack frame stand for the frame instead
  const double steps = std::ceil(8192.0 / static_cast<double>(c.block_k));
  const auto big = dram_interval(m, p, c, pr, hw,
                                 {.store_bytes_per_cta = 2 * frame * steps, .stack_bytes_per_thread = stack});
  EXPECT_DOUBLE_EQ(big.spill_frame_bytes_cta, 2 * frame);
}
