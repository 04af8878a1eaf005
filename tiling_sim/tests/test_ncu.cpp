#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "flashsim/sim/ncu.h"

using namespace flashsim;
using namespace flashsim::sim;

TEST(Ncu, ParsesThousandsAndUnits) {
  std::istringstream in(
      "==PROF== Connected\n\"ID\",\"Kernel Name\",\"Metric Name\",\"Metric Unit\",\"Metric Value\"\n"
      "\"0\",\"k\",\"a\",\"byte\",\"1,234,567\"\n\"0\",\"k\",\"b\",\"Kbyte\",\"2.5\"\n");
  const auto ks = parse_ncu_csv(in);
  ASSERT_EQ(ks.size(), 1u);
  EXPECT_DOUBLE_EQ(ks[0].metrics.at("a"), 1234567.0);
  EXPECT_DOUBLE_EQ(ks[0].metrics.at("b"), 2500.0);
}

TEST(Ncu, RecognizesFa2) {
  auto f =
      recognize_kernel("void flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4, 0, 0, bfloat16_t>>");
  ASSERT_TRUE(f);
  EXPECT_EQ(f->kind, KernelKind::Fa2Forward);
  EXPECT_EQ(f->config.block_q, 128);
  EXPECT_EQ(f->config.block_k, 64);
  auto b = recognize_kernel(
      "void flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel<Flash_bwd_kernel_traits<128, 64, 128, 8, 2, 4, 2>>");
  ASSERT_TRUE(b);
  EXPECT_EQ(b->kind, KernelKind::Fa2DqDkDv);
  EXPECT_EQ(b->config.bwd_block_q, 64);
  EXPECT_EQ(b->config.bwd_block_k, 128);
  EXPECT_FALSE(recognize_kernel("void other_kernel<int>"));
}

TEST(Ncu, CalibrationH100WithinTolerance) {
  std::ifstream in(FLASHSIM_SIM_TEST_DATA "/ncu_fa2_h100_calibration.csv");
  ASSERT_TRUE(in);
  AttentionProblem p;
  p.batch = 2;
  p.heads_q = p.heads_kv = 16;
  p.seqlen_q = p.seqlen_k = 4096;
  p.head_dim = p.head_dim_v = 128;
  p.dtype = DType::BF16;
  const auto c = compare_ncu(parse_ncu_csv(in), p, load_profile("H100-SXM5-80GB"));
  ASSERT_EQ(c.kernels.size(), 4u);
  for (const auto& k : c.kernels) {
    EXPECT_TRUE(k.recognized) << k.name;
    for (const auto& m : k.metrics) EXPECT_TRUE(m.ok) << k.name << " " << m.metric << " ratio " << m.ratio;
  }
  EXPECT_TRUE(c.ok);
}
