// fa2-v1: the registry entry of FlashAttention-2's forward (fa2_fwd_v1.cu) and backward (fa2_bwd_v1.cu).
#include "fa2_v1.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "flashsim/error.h"
#include "flashsim/families/fa2/hand_table.h"
#include "flashsim/families/fa2/launch_table.h"
#include "flashsim/sim/tune.h"  // tune_space
#include "versions.h"

namespace flashsim::gpu {

namespace fa2 {

AttentionParams params_of(const AttentionProblem& p) {
  AttentionParams a = make_params(p);  // throws InputError when a size exceeds int
  if (a.window_left >= p.seqlen_q + p.seqlen_k) a.window_left = -1;
  if (a.window_right >= p.seqlen_q + p.seqlen_k) a.window_right = -1;
  return a;
}

void require(bool ok, const char* what) {
  if (!ok) throw InputError("fa2-v1", std::string("missing device buffer: ") + what);
}

void require_aligned(const void* ptr, const char* what) {
  if (reinterpret_cast<uintptr_t>(ptr) % 16 != 0)
    throw InputError("fa2-v1", std::string(what) + " is not 16-byte aligned (16-byte cp.async / stores)");
}

void require_inputs(const AttentionProblem& p, const DeviceArgs& args) {
  require(args.q && args.k && args.v, "q, k, v");
  require(p.bias == BroadcastShape::None || args.bias, "bias");
  require(p.mask == BroadcastShape::None || args.mask, "mask");
  require(!p.alibi || args.alibi_slopes, "alibi_slopes");
  require(p.block_mask == BroadcastShape::None || args.block_mask, "block_mask");
  require(!p.varlen() || (args.cu_seqlens_q && args.cu_seqlens_k), "cu_seqlens_q, cu_seqlens_k");
  require_aligned(args.q, "q");
  require_aligned(args.k, "k");
  require_aligned(args.v, "v");
}

namespace {
// Whether the problem runs the score-pipeline kernels (the launch tables key on it); a problem whose sizes pass
// int counts as one: forward_unsupported refuses it whatever the tile.
bool launch_pipeline(const AttentionProblem& p) {
  try {
    return uses_score_pipeline(params_of(p));
  } catch (const InputError&) {
    return true;
  }
}
}  // namespace

TileConfig hand_launch_tile(const AttentionProblem& p) {
  return fa2_hand_launch_tile(p.head_dim, launch_pipeline(p));
}

std::vector<TileConfig> tune_tiles(int64_t head_dim, Pass pass) {
  // the configs `sim tune` ranks for this head dim: those the timings are checked against
  return sim::tune_space(pass == Pass::Forward ? sim::TuneKernel::Fa2Fwd : sim::TuneKernel::Fa2Bwd,
                         sim::TuneSpace::Instances, head_dim);
}

namespace {
// The entry of a generated table (fa2's launch_table.h) for the problem's head dim, dtype, causal and score
// pipeline flags whose seqlen is nearest the problem's in log scale; nullptr when the table has none.
template <size_t N>
const LaunchEntry* nearest_entry(const LaunchEntry (&table)[N], const AttentionProblem& p, bool pipeline) {
  const double n = std::log(static_cast<double>(std::max<int64_t>(1, std::max(p.seqlen_q, p.seqlen_k))));
  const LaunchEntry* best = nullptr;
  double gap = 0;
  for (const LaunchEntry& e : table) {
    if (e.head_dim != p.head_dim || e.bf16 != (p.dtype == DType::BF16) || e.causal != p.causal() ||
        e.pipeline != pipeline)
      continue;
    const double g = std::abs(std::log(static_cast<double>(e.seqlen)) - n);
    if (!best || g < gap) {
      best = &e;
      gap = g;
    }
  }
  return best;
}
}  // namespace

TileConfig launch_tile(const AttentionProblem& p, Pass pass) {
  TileConfig c = hand_launch_tile(p);  // head dims and dtypes the generated table does not cover
  const bool pipeline = launch_pipeline(p);
  if (pass == Pass::Forward) {
    if (const LaunchEntry* e = nearest_entry(kFwdLaunchTable, p, pipeline)) {
      c.block_q = e->block_q;
      c.block_k = e->block_k;
      c.warps = e->warps;
      c.stages = e->stages;
    }
  } else if (const LaunchEntry* e = nearest_entry(kBwdLaunchTable, p, pipeline)) {
    c.bwd_block_q = e->block_q;
    c.bwd_block_k = e->block_k;
    c.warps = e->warps;
  }
  return c;
}

}  // namespace fa2

KernelVersion fa2_v1() {
  KernelVersion kv;
  kv.name = "fa2-v1";
  kv.algorithm = Algorithm::Fa2;
  kv.backend = Backend::Cuda;
  kv.summary =
      "FlashAttention-2: forward with a query block per CTA (K/V streamed by cp.async, online softmax in "
      "registers); backward with a key block per CTA (dK, dV in registers, dQ by fp32 atomics or "
      "deterministic per-key-block partials); mma.sync m16n8k16";
  kv.sim_kernels = {"fwd_fa2_v1", "bwd_dot_do_o_lse", "bwd_dq_dk_dv_group", "bwd_convert_dq_rows"};
  kv.features = kFeatureBlockMask |
                kFeatureTileSkip;  // skips the (query block, key block) tiles the block mask leaves inactive
  kv.unsupported = fa2::forward_unsupported;
  kv.backward_unsupported = fa2::backward_unsupported;
  kv.workspace_bytes = fa2::backward_workspace_bytes;
  kv.launch_tile = fa2::launch_tile;
  kv.tune_tiles = fa2::tune_tiles;
  kv.hand_tile = fa2::hand_launch_tile;
  kv.tune_features = {"plain", "causal", "bias", "causal+bias"};
  kv.forward = fa2::forward;
  kv.backward = fa2::backward;
  return kv;
}

}  // namespace flashsim::gpu
