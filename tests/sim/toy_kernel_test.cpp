// Adding a kernel is one model in one file: this file defines a toy kernel (a copy of Q into O, a CTA per
// 256-row block), registers it, and finds it in the model list `sim kernels` prints, in `sim predict`'s JSON
// (flashsim::app's run_predict, the command's own code) and in `traffic compare`'s (sim::compare_ncu).
#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "flashsim/app/problem_flags.h"
#include "flashsim/app/sim_report.h"
#include "flashsim/error.h"
#include "flashsim/sim/hardware.h"
#include "flashsim/sim/kernel_model.h"
#include "flashsim/sim/ncu.h"

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

// The sim commands' problem of --batch 2 --heads 4 --seqlen 1000 --head-dim 64 (bf16, their default).
AttentionProblem toy_problem() {
  app::ProblemFlags pf;
  pf.batch = 2;
  pf.heads = 4;
  pf.seqlen = 1000;
  pf.head_dim = 64;
  pf.dtype = "bf16";
  return pf.problem();
}
constexpr int64_t kQBytes = 2 * 4 * 1000 * 64 * 2;  // batch x heads x seqlen x d x bf16

}  // namespace

TEST(ToyKernel, ListedBySimKernels) {
  toy();
  const auto& models = kernel_models();
  const auto it =
      std::find_if(models.begin(), models.end(), [](const KernelModel* m) { return m->name == "toy_copy"; });
  ASSERT_NE(it, models.end());
  EXPECT_EQ((*it)->summary, "toy: O = Q, a 256-row block per CTA");
  EXPECT_THROW(register_kernel_model(toy_copy_model()), InputError);  // one name, one model
}

TEST(ToyKernel, PredictedBySimPredict) {
  toy();
  for (const bool executed : {false, true}) {
    const char* mode = executed ? "executed" : "analytic";
    app::PredictRequest req;  // sim predict --kernel toy_copy --json [--executed]
    req.problem = toy_problem();
    req.apply_given = [](const TileConfig& base) { return base; };
    req.hw = "H100-SXM5-80GB";
    req.kernels = {"toy_copy"};
    req.executed = executed;
    const auto j = app::to_json(app::run_predict(req));
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
  // An ncu details page for one launch: 128 threads (4 warps) per CTA, the toy's grid, compared as `traffic
  // compare --json` does.
  const auto compare = [&](double read_bytes) {
    std::stringstream f;
    f << "\"ID\",\"Kernel Name\",\"Block Size\",\"Grid Size\",\"Metric Name\",\"Metric Unit\",\"Metric "
         "Value\"\n";
    for (const auto& [metric, value] : std::vector<std::pair<std::string, double>>{
             {"l1tex__m_xbar2l1tex_read_bytes.sum", read_bytes},
             {"l1tex__t_bytes_pipe_lsu_mem_global_op_st.sum", kQBytes}})
      f << "\"0\",\"void toy_copy_kernel<128>(Params)\",\"(128, 1, 1)\",\"(4, 2, 4)\",\"" << metric
        << "\",\"byte\",\"" << static_cast<int64_t>(value) << "\"\n";
    const auto kernels = parse_ncu_csv(f);
    return to_json(
        compare_ncu(kernels, toy_problem(), load_profile("H100-SXM5-80GB"), dram_counters_replayed(kernels)));
  };
  const auto j = compare(kQBytes);
  EXPECT_TRUE(j["ok"].get<bool>()) << j.dump(2);
  EXPECT_EQ(j["kernels"][0]["name"], "toy_copy (void toy_copy_kernel)");
  EXPECT_TRUE(j["kernels"][0]["recognized"].get<bool>());
  // a kernel reading Q one and a half times: flagged (the command exits 1)
  EXPECT_FALSE(compare(1.5 * kQBytes)["ok"].get<bool>());
}
