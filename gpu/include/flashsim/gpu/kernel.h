#pragma once
// A GPU kernel version: one named implementation of an algorithm (gpu/<algorithm>/<version>.cu), what it
// supports, and its launches; every production version is registered in one table (src/registry.cpp) that the
// harness (`flashsim-gpu check`, `bench`) reads. Test-only variants (planted bugs) are added by the test and
// bench binaries that want them (register_test_version, flashsim/gpu/test_versions.h).
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "flashsim/algorithm.h"
#include "flashsim/gpu/params.h"
#include "flashsim/tile_config.h"

namespace flashsim::gpu {

// Buffers of one case on the device the version runs on (a CUDA device, or host memory for a CPU version).
// Inputs in the goldens' stored dtypes: q, k, v, dout and bias in the problem's dtype, mask one byte per entry
// (!= 0 keeps the score), alibi_slopes fp32 [heads_q], cu_seqlens int32 [batch + 1] (with variable lengths).
// Outputs: o, dq, dk, dv in the problem's dtype, lse fp32, dbias fp32 (the bias's own shape, reduced over its
// broadcast dims). The harness fills every output with NaN before a launch.
struct DeviceArgs {
  const void *q = nullptr, *k = nullptr, *v = nullptr, *dout = nullptr, *bias = nullptr;
  const uint8_t* mask = nullptr;
  const float* alibi_slopes = nullptr;
  const int32_t *cu_seqlens_q = nullptr, *cu_seqlens_k = nullptr;
  void* o = nullptr;
  float* lse = nullptr;
  void *dq = nullptr, *dk = nullptr, *dv = nullptr;
  float* dbias = nullptr;
  // With a paged KV cache (flashsim/kv_cache.h; q, o and lse keep their layouts, k / v / dout are not given):
  // k_cache / v_cache [num_blocks, page_size, heads_kv, d | dv] in the problem's dtype, updated in place by the
  // append; block_table int32 [batch, max_blocks_per_seq]; cache_seqlens int32 [batch] (before the append);
  // k_new / v_new [batch, seqlen_new, heads_kv, d | dv] (nullptr without an append).
  void *k_cache = nullptr, *v_cache = nullptr;
  const int32_t *block_table = nullptr, *cache_seqlens = nullptr;
  const void *k_new = nullptr, *v_new = nullptr;
  // A block-sparse mask (flashsim/block_mask.h): one byte per block_mask_q x block_mask_k tile, != 0 computed.
  const uint8_t* block_mask = nullptr;
  // With a block mask, a version that skips tiles (kFeatureTileSkip) adds the (query tile, key tile, query
  // head) pairs its loops visit to tile_counts when given: [0] forward computed, [1] forward skipped, [2]
  // backward computed, [3] backward skipped (zeroed by the harness), as the reference counts them
  // (flashsim/ref/attention.h, at the launch's tiles).
  unsigned long long* tile_counts = nullptr;
  void* workspace = nullptr;  // workspace_bytes(...) bytes, zeroed when allocated
  void* stream = nullptr;     // cudaStream_t of the launch (nullptr: the default stream)
};

enum class Backend { Cuda, Host };

// Problem features beyond dense attention that a version takes (KernelVersion::features, a bit set); the
// harness skips a case with a feature its version lacks (missing_gpu_feature, params.h).
enum GpuFeature : unsigned {
  kFeatureKvCache = 1u,
  kFeatureBlockMask = 2u,
  kFeatureSinks = 4u,
  kFeatureDropout = 8u,
  // With a block mask: skips the tiles it leaves inactive and reports them (DeviceArgs::tile_counts), checked
  // against the reference's counts (kFeatureBlockMask alone: the scores of inactive tiles are masked).
  kFeatureTileSkip = 16u,
  kFeatureMla =
      32u  // DeepSeek MLA (problem.mla: V a view of K's first head_dim_v columns); no version has it yet
};

struct KernelVersion {
  std::string name;  // "naive-v1": the --kernel argument and the report's name
  Algorithm algorithm = Algorithm::Naive;
  Backend backend = Backend::Cuda;
  std::string summary;  // one line: how it computes
  // The simulator's kernel models of its launches, in launch order (sim::kernel_model names), forward then
  // backward: `flashsim traffic compare` recognizes them by their ncu names.
  std::vector<std::string> sim_kernels;
  unsigned features = 0;  // GpuFeature bits: the paged cache, block mask, sinks, dropout, MLA it takes
  // Why the version cannot run this case ("" when it can): dtype, head dim, a feature it lacks.
  std::string (*unsupported)(const AttentionProblem& p, const TileConfig& c) = nullptr;
  // Why the backward cannot run a case the forward runs ("" when it can; nullptr: never): the harness then
  // checks o and lse only and lists the case's backward as skipped.
  std::string (*backward_unsupported)(const AttentionProblem& p, const TileConfig& c) = nullptr;
  // Device scratch of a case's launches, forward and backward (nullptr: none): the backward's, a forward-only
  // version's (split-KV partials), fa3-v1's forward walk.
  size_t (*workspace_bytes)(const AttentionProblem& p, const TileConfig& c) = nullptr;
  // The tile config the version runs a problem with when the user names none (nullptr: TileConfig{}): its
  // launch table, per head dim and score path, as flash-attention's run_mha_fwd_hdim* choose.
  // Per pass: the backward's tile fields (bwd_block_q, bwd_block_k, warps) may differ from the forward's.
  TileConfig (*launch_tile)(const AttentionProblem& p, Pass pass) = nullptr;
  // `flashsim-gpu autotune`'s configs (nullptr: the version has none to tune): every tile of a head dim and pass
  // the version is built for (empty: none of that head dim), the forward's fields on forward tiles and the
  // backward's on backward ones; and the hand-kept tile of a problem (the one a generated launch table keeps
  // unless the model's best beats it by sim::kTuneResolution).
  std::vector<TileConfig> (*tune_tiles)(int64_t head_dim, Pass pass) = nullptr;
  TileConfig (*hand_tile)(const AttentionProblem& p) = nullptr;
  // The problem variants autotune times where its grid names none ("plain", "causal", "bias", "causal+bias").
  std::vector<std::string> tune_features;
  // Launches (asynchronous on args.stream); throw InputError for a config they cannot run.
  void (*forward)(const AttentionProblem& p, const TileConfig& c, const DeviceArgs& args) = nullptr;
  // nullptr: forward only (the harness checks o and lse).
  void (*backward)(const AttentionProblem& p, const TileConfig& c, const DeviceArgs& args) = nullptr;
};

// The tile v runs p with: its launch tile (TileConfig{} without one), passed through `user` (the command
// line's tile flags applied over it; empty: unchanged), validated (InputError naming the field).
using TileOverride = std::function<TileConfig(const TileConfig& launch_tile)>;
// `pass`: whose launch tile (the forward's by default).
TileConfig tile_for(const KernelVersion& v, const AttentionProblem& p, const TileOverride& user = {},
                    Pass pass = Pass::Forward);

// Every registered version, in registration order: the production table, then the test-only variants
// registered so far.
const std::vector<KernelVersion>& kernel_versions();
// Adds a test-only variant (a planted bug) after the production versions; InputError("kernel") if its name is
// taken. For test and bench binaries, before they look versions up (it may move the table's elements).
void register_test_version(KernelVersion v);
// Throws InputError("kernel") listing the known names.
const KernelVersion& kernel_version(const std::string& name);

}  // namespace flashsim::gpu
