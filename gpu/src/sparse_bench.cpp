// The block-sparse benchmark (sparse_bench.h).
#include "flashsim/gpu/sparse_bench.h"

#include <fmt/format.h>

#include "device_profile.h"
#include "flashsim/error.h"
#include "flashsim/gpu/params.h"
#include "flashsim/sim/model.h"
#include "flashsim/sim/problem_data.h"

namespace flashsim::gpu {

namespace {

// bench()'s inputs are make_random_inputs(p, 1): the simulator predicts for the block mask of that seed.
constexpr uint64_t kBenchSeed = 1;

// The simulator's time of a pass (its kernels summed) and the block-sparse kernel's tile counts.
void predict_pass(const KernelVersion& v, const AttentionProblem& p, const TileConfig& c, Pass pass,
                  const sim::ProblemData& data, double& ms, int64_t& tiles, int64_t& skipped) {
  const auto kernels = sparse_pass_models(v, p, c, pass);
  ms = 0;
  for (const sim::KernelPrediction& k : sim::predict(p, c, device_profile(), kernels, false, 0, &data)) {
    ms += k.time_s * 1e3;
    if (k.counts.tiles + k.counts.skipped_tiles > 0) {
      tiles = k.counts.tiles;
      skipped = k.counts.skipped_tiles;
    }
  }
}

}  // namespace

// Until 2026-11-29 every version was predicted with FlashAttention-2's models, whose backward runs ~1.7x faster
// than fa2-v1's (its spilling 255-register main kernel): the sparse table's backward came out 0.48-0.62x.
std::vector<const sim::KernelModel*> sparse_pass_models(const KernelVersion& v, const AttentionProblem& p,
                                                        const TileConfig& c, Pass pass) {
  std::vector<const sim::KernelModel*> models;
  for (const std::string& name : v.sim_kernels)
    if (const sim::KernelModel& m = sim::kernel_model(name); m.pass == pass) models.push_back(&m);
  return models.empty() ? sim::kernels_for(p, c, v.algorithm, pass) : models;
}

SparseBenchRow sparse_bench(const KernelVersion& v, const AttentionProblem& p, const BenchOptions& o,
                            const TileOverride& user) {
  if (!(v.features & kFeatureTileSkip))
    throw InputError("kernel", fmt::format("{} does not skip inactive block-mask tiles", v.name));
  const TileConfig c = tile_for(v, p, user), cb = tile_for(v, p, user, Pass::Backward);
  BenchOptions ob = o;
  ob.bwd_tile = cb;
  const BenchResult r = bench(v, p, c, ob);
  if (!(r.fwd_ms > 0))
    throw InputError("kernel", fmt::format("{} cannot run {}: {}", v.name, p.describe(), r.skipped));
  SparseBenchRow row;
  row.spec = p.block_mask == BroadcastShape::None ? "none" : p.block_mask_spec;
  row.tile = fmt::format("fwd Br{} Bc{} w{} st{} | bwd Br{} Bc{} w{}", c.block_q, c.block_k, c.warps,
                         c.stages, cb.bwd_block_q, cb.bwd_block_k, cb.warps);
  row.fwd_ms = r.fwd_ms;
  row.bwd_ms = r.bwd_ms;
  const sim::ProblemData data = sim::problem_data(p, kBenchSeed);
  predict_pass(v, p, c, Pass::Forward, data, row.fwd_predicted_ms, row.fwd_tiles, row.fwd_skipped);
  if (o.time_backward && r.bwd_ms > 0)
    predict_pass(v, p, cb, Pass::Backward, data, row.bwd_predicted_ms, row.bwd_tiles, row.bwd_skipped);
  return row;
}

}  // namespace flashsim::gpu
