// Adding a kernel is one model in one file: this file defines a toy kernel (a copy of Q into O, a CTA per
// 256-row block), registers it, and finds it in the CLI's list, in `sim predict` and in `traffic compare`.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "commands.h"
#include "flashsim/error.h"
#include "flashsim/sim/kernel_model.h"

using namespace flashsim;
using namespace flashsim::sim;

namespace {

constexpr int64_t kRows = 256;  // rows per CTA of the toy kernel

KernelModel toy_copy_model() {
  KernelModel m;
  m.name = "toy_copy";
  m.summary = "toy: O = Q, a 256-row block per CTA";
  m.ncu_names = {{R"(toy_copy_kernel<\s*(\d+)>)", [](const std::smatch& match, const std::string& name) {
                    TileConfig c;
                    c.warps = static_cast<int>(ncu_template_int(match[1], name) / 32);
                    return checked_ncu_config(c, name);
                  }}};
  m.launch = [](const AttentionProblem& p, const TileConfig& c) {
    KernelLaunch l;
    l.grid_x = (p.seqlen_q + kRows - 1) / kRows;
    l.grid_y = p.batch;
    l.grid_z = p.heads_q;
    l.threads = c.warps * 32;
    return l;
  };
  m.cta = [](CtaBuilder& x, const TileConfig&, int64_t b, int64_t h, int64_t blk) {
    const int64_t r0 = blk * kRows, rows = std::min(kRows, x.p.len_q(b) - r0);
    x.add(ref::AccessKind::Load, ref::TensorId::Q, b, h, r0, rows, x.p.head_dim, x.e);
    x.add(ref::AccessKind::Store, ref::TensorId::O, b, h, r0, rows, x.p.head_dim, x.e);
  };
  return m;  // no closed form: the analytic model counts the CTAs of one (batch, head)
}

const KernelModel& toy() {
  static const KernelModel& m = register_kernel_model(toy_copy_model());
  return m;
}

// flashsim's command line run in-process: (exit code, stdout).
std::pair<int, std::string> run_flashsim(std::vector<std::string> args) {
  args.insert(args.begin(), "flashsim");
  std::vector<const char*> argv;
  for (const auto& a : args) argv.push_back(a.c_str());
  testing::internal::CaptureStdout();
  const int code = flashsim::cli::run(static_cast<int>(argv.size()), argv.data());
  return {code, testing::internal::GetCapturedStdout()};
}

const std::vector<std::string> kProblem = {"--batch",  "2",    "--heads",    "4",
                                           "--seqlen", "1000", "--head-dim", "64"};
constexpr int64_t kQBytes = 2 * 4 * 1000 * 64 * 2;  // batch x heads x seqlen x d x bf16

}  // namespace

TEST(ToyKernel, ListedBySimKernels) {
  toy();
  const auto [code, out] = run_flashsim({"sim", "kernels"});
  EXPECT_EQ(code, 0);
  EXPECT_NE(out.find("toy_copy"), std::string::npos) << out;
  EXPECT_NE(out.find("toy: O = Q"), std::string::npos) << out;
  EXPECT_THROW(register_kernel_model(toy_copy_model()), InputError);  // one name, one model
}

TEST(ToyKernel, PredictedBySimPredict) {
  toy();
  for (const char* mode : {"analytic", "executed"}) {
    std::vector<std::string> args = {"sim", "predict", "--kernel", "toy_copy", "--json"};
    args.insert(args.end(), kProblem.begin(), kProblem.end());
    if (std::string(mode) == "executed") args.push_back("--executed");
    const auto [code, out] = run_flashsim(args);
    ASSERT_EQ(code, 0) << out;
    const auto j = nlohmann::json::parse(out);
    ASSERT_EQ(j["kernels"].size(), 1u);
    const auto& k = j["kernels"][0];
    EXPECT_EQ(k["kernel"], "toy_copy") << mode;
    EXPECT_EQ(k["grid"], nlohmann::json({4, 2, 4})) << mode;  // ceil(1000 / 256) blocks
    EXPECT_EQ(k["load_bytes"], kQBytes) << mode;
    EXPECT_EQ(k["store_bytes"], kQBytes) << mode;
    EXPECT_EQ(k["dram_read_bytes"], kQBytes) << mode;  // Q read once from a cold L2
  }
}

TEST(ToyKernel, ComparedByTrafficCompare) {
  toy();
  const auto dir = std::filesystem::path(testing::TempDir()) / "toy_kernel";
  std::filesystem::create_directories(dir);
  const auto csv = (dir / "ncu.csv").string();
  // An ncu details page for one launch: 128 threads (4 warps) per CTA, the toy's grid.
  const auto write = [&](double read_bytes) {
    std::ofstream f(csv);
    f << "\"ID\",\"Kernel Name\",\"Block Size\",\"Grid Size\",\"Metric Name\",\"Metric Unit\",\"Metric "
         "Value\"\n";
    for (const auto& [metric, value] : std::vector<std::pair<std::string, double>>{
             {"l1tex__m_xbar2l1tex_read_bytes.sum", read_bytes},
             {"l1tex__t_bytes_pipe_lsu_mem_global_op_st.sum", kQBytes}})
      f << "\"0\",\"void toy_copy_kernel<128>(Params)\",\"(128, 1, 1)\",\"(4, 2, 4)\",\"" << metric
        << "\",\"byte\",\"" << static_cast<int64_t>(value) << "\"\n";
  };
  std::vector<std::string> args = {"traffic", "compare", "--ncu", csv, "--json"};
  args.insert(args.end(), kProblem.begin(), kProblem.end());
  write(kQBytes);
  auto [code, out] = run_flashsim(args);
  ASSERT_EQ(code, 0) << out;
  auto j = nlohmann::json::parse(out);
  EXPECT_TRUE(j["ok"].get<bool>());
  EXPECT_EQ(j["kernels"][0]["name"], "toy_copy (void toy_copy_kernel)");
  EXPECT_TRUE(j["kernels"][0]["recognized"].get<bool>());
  write(1.5 * kQBytes);  // a kernel reading Q one and a half times: flagged
  std::tie(code, out) = run_flashsim(args);
  EXPECT_EQ(code, 1) << out;
  EXPECT_FALSE(nlohmann::json::parse(out)["ok"].get<bool>());
}
