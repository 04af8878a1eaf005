// fa3-v1: the registry entry of the Hopper FlashAttention forward (fa3_fwd_kernel.cuh): what it runs, its tile,
// and the launch (the head dim's translation unit, fa3_launch.h).
#include <cuda_runtime.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "cuda_launch.h"  // device_compute_capability, device_l2_bytes
#include "fa3_launch.h"
#include "flashsim/error.h"
#include "flashsim/families/fa3/instances.h"
#include "flashsim/families/fa3/launch.h"
#include "flashsim/families/fa3/tiles.h"
#include "flashsim/families/fa3/walk.h"
#include "flashsim/gpu/kernel.h"
#include "flashsim/gpu/params.h"
#include "flashsim/sim/schedule.h"  // fa3_forward_walk
#include "flashsim/sim/tune.h"      // tune_space
#include "versions.h"

namespace flashsim::gpu {

namespace fa3 {
namespace {

// gridDim.y (heads) and gridDim.z (batch) are at most 65535; TMA coordinates are 32-bit.
constexpr int64_t kMaxGridYZ = 65535;
constexpr int64_t kMaxRows = std::numeric_limits<int32_t>::max();

// The head dims of the instances, each once ("64, 96, 128, 256").
std::string head_dims_text() {
  std::set<int> dims;
  for (const Fa3FwdInstance& e : kFa3FwdInstances) dims.insert(e.head_dim);
  return fmt::format("{}", fmt::join(dims, ", "));
}

std::string problem_unsupported(const AttentionProblem& p) {
  if (p.dtype != DType::F16 && p.dtype != DType::BF16)
    return "dtype " + std::string(dtype_name(p.dtype)) + " (fa3-v1 runs fp16 and bf16)";
  if (!fa3_fwd_instance(static_cast<int>(p.head_dim)))
    return "head_dim " + std::to_string(p.head_dim) + " (fa3-v1 runs " + head_dims_text() + ")";
  if (!fa3_head_dim_compiled(static_cast<int>(p.head_dim)))
    return "head_dim " + std::to_string(p.head_dim) +
           " is not compiled in this build (FLASHSIM_GPU_INSTANCES=ci compiles fa3-v1's bf16 d128 alone)";
  if (kFa3HandOnly && p.dtype == DType::F16)
    return "fp16 is not compiled in this build (FLASHSIM_GPU_INSTANCES=ci compiles fa3-v1's bf16 d128 alone)";
  if (p.head_dim_v != p.head_dim)
    return "head_dim_v " + std::to_string(p.head_dim_v) + " != head_dim (fa3-v1 needs them equal)";
  if (p.heads_kv < 1 || p.heads_q % p.heads_kv != 0) return "heads_q is not a multiple of heads_kv";
  if (p.bias != BroadcastShape::None)
    return "bias (fa3-v1's score pipeline has scale, softcap and windows only)";
  if (p.mask != BroadcastShape::None)
    return "boolean mask (fa3-v1's score pipeline has scale, softcap and windows only)";
  if (p.alibi) return "ALiBi (fa3-v1's score pipeline has scale, softcap and windows only)";
  if (p.softmax_scale() <= 0)
    return "scale <= 0 (fa3-v1 keeps the row max of the unscaled scores, which needs scale > 0)";
  if (p.batch > kMaxGridYZ || p.heads_q > kMaxGridYZ)
    return "batch or heads_q over 65535 (gridDim.y, gridDim.z)";
  if (p.total_q() > kMaxRows || p.total_k() > kMaxRows)
    return "more than 2^31 - 1 rows (TMA coordinates are 32-bit)";
  if (const std::string why = missing_gpu_feature(p); !why.empty()) return why;
  if (const int cc = device_compute_capability(); cc != 0 && cc != 90)
    return "compute capability " + std::to_string(cc / 10) + "." + std::to_string(cc % 10) +
           " (fa3-v1 is built for sm_90a: wgmma and TMA, Hopper only)";
  return "";
}

// The forward instances of a head dim this build runs, as tiles ("Br128 Bc128 w12 st2, ...").
std::string compiled_tiles_text(int head_dim) {
  std::string s;
  for (const Fa3FwdInstance& e : kFa3FwdInstances)
    if (e.head_dim == head_dim && fa3_fwd_instance_compiled(e))
      s += (s.empty() ? "" : ", ") + fa3_instance_tile(e).describe();
  return s;
}

std::string unsupported(const AttentionProblem& p, const TileConfig& c) {
  if (std::string why = problem_unsupported(p); !why.empty()) return why;
  const int d = static_cast<int>(p.head_dim);
  const Fa3FwdInstance* e =
      fa3_fwd_instance(d, static_cast<int>(c.block_q), static_cast<int>(c.block_k), c.stages);
  if (!e || c.warps != kFa3Threads / 32 || c.q_in_registers || c.kv_shared_buffer)
    return "tile " + c.describe() + " is not an fa3-v1 instance of head_dim " + std::to_string(d) +
           " (it runs " + compiled_tiles_text(d) + ")";
  if (p.softcap > 0 && !e->softcap)
    return "tile " + c.describe() +
           " has no softcapped kernel (it spills: families/fa3/instances.h); a softcap at head_dim " +
           std::to_string(d) + " runs " + fa3_instance_tile(*fa3_fwd_softcap_instance(d)).describe();
  if (!fa3_fwd_instance_compiled(*e))
    return "tile " + c.describe() + " is not compiled in this build (FLASHSIM_GPU_INSTANCES=ci compiles " +
           compiled_tiles_text(d) + ")";
  return "";
}

std::string backward_unsupported(const AttentionProblem& p, const TileConfig& c) {
  const int d = static_cast<int>(p.head_dim);
  if (!fa3_bwd_instance(d)) return "head_dim " + std::to_string(d) + " has no backward instance";
  const Fa3BwdInstance* e = fa3_bwd_instance(d, p.softcap > 0);
  if (!e)
    return "softcap at head_dim " + std::to_string(d) +
           ": no backward instance has a softcapped kernel (families/fa3/instances.h)";
  if (!fa3_bwd_head_dim_compiled(d))
    return "head_dim " + std::to_string(d) +
           "'s backward is not compiled in this build (FLASHSIM_GPU_INSTANCES=ci compiles d128 alone)";
  if (kFa3HandOnly && e != fa3_bwd_instance(d))
    return "softcap at head_dim " + std::to_string(d) + ": its backward runs Br" +
           std::to_string(e->block_q) + " Bc" + std::to_string(e->block_k) +
           ", not compiled in this build (FLASHSIM_GPU_INSTANCES=ci compiles the hand-kept tile alone)";
  if (c.bwd_block_q != e->block_q || c.bwd_block_k != e->block_k)
    return "backward tile Br" + std::to_string(c.bwd_block_q) + " Bc" + std::to_string(c.bwd_block_k) +
           " is not instantiated (fa3-v1 runs Br" + std::to_string(e->block_q) + " Bc" +
           std::to_string(e->block_k) + ")";
  return "";
}

// dq_accum's blocks are the instance's Br rows (a head dim without one needs no workspace: its backward is
// refused).
int bwd_block_q(const AttentionProblem& p) {
  const Fa3BwdInstance* e = fa3_bwd_instance(static_cast<int>(p.head_dim), p.softcap > 0);
  return e ? e->block_q : 1;
}

// dq_accum's slabs: one (bulk reduces into it), or one a key block (partials: deterministic).
int dq_slabs(const AttentionProblem& p, const TileConfig& c) {
  const Fa3BwdInstance* e = fa3_bwd_instance(static_cast<int>(p.head_dim), p.softcap > 0);
  return c.dq_strategy == DqStrategy::Partials && e
             ? fa3_dq_partial_slabs(static_cast<int>(p.seqlen_k), e->block_k)
             : 1;
}

// The workspace: the forward's balanced walk (walk.h; at most a CTA a tile, Br at least wgmma's 64 rows),
// then, 128-byte aligned (the backward's bulk copies need 16), the backward's dq_accum and D.
size_t walk_region_bytes(const AttentionProblem& p) {
  const int64_t tiles = (p.seqlen_q + 63) / 64 * p.heads_q * p.batch;
  return static_cast<size_t>((fa3_walk_bytes(tiles, tiles) + 127) / 128 * 128);
}

size_t workspace_bytes(const AttentionProblem& p, const TileConfig& c) {
  return walk_region_bytes(p) +
         static_cast<size_t>(fa3_bwd_workspace_bytes(p.total_q(), static_cast<int>(p.batch), p.heads_q,
                                                     p.head_dim, bwd_block_q(p), dq_slabs(p, c)));
}

// Whether the persistent walk is the balanced one: the rule (fa3_fwd_walks_balanced), or FLASHSIM_FA3_WALK's
// `static` / `balanced` (to time one against the other); unset or empty: the rule.
bool balanced_walk(bool by_rule) {
  const char* env = std::getenv("FLASHSIM_FA3_WALK");
  const std::string walk = env ? env : "";
  if (walk.empty()) return by_rule;
  if (walk != "static" && walk != "balanced")
    throw InputError("FLASHSIM_FA3_WALK", "'" + walk + "' is neither static nor balanced (unset: the rule)");
  return walk == "balanced";
}

// Copies the forward's balanced walk to the workspace's head on `stream` (sim::fa3_forward_walk keeps the last
// one: repeated launches of a problem copy it without building it again; from pageable memory, the copy is
// staged before cudaMemcpyAsync returns).
cudaError_t copy_walk(const AttentionProblem& p, const TileConfig& c, int head_group, int64_t grid, void* to,
                      cudaStream_t stream) {
  const std::vector<int32_t> walk = sim::fa3_forward_walk(p, c.block_q, c.block_k, head_group, grid);
  return cudaMemcpyAsync(to, walk.data(), walk.size() * sizeof(int32_t), cudaMemcpyHostToDevice, stream);
}

// The launch table's instance (families/fa3's launch.h), or the hand-kept one where this build did not compile
// that (FLASHSIM_GPU_INSTANCES=ci).
TileConfig launch_tile(const AttentionProblem& p, Pass) {
  const int d = static_cast<int>(p.head_dim);
  const int64_t span = p.seqlen_q + p.seqlen_k;  // a window edge past every key is no edge (set_problem)
  const bool masked =
      (p.window_left >= 0 && p.window_left < span) || (p.window_right >= 0 && p.window_right < span);
  const Fa3FwdInstance* e = fa3_fwd_launch_instance(d, p.dtype == DType::BF16, masked,
                                                    std::max(p.seqlen_q, p.seqlen_k), p.softcap > 0);
  if (e && !fa3_fwd_instance_compiled(*e)) e = fa3_fwd_instance(d);
  return e ? fa3_instance_tile(*e, p.softcap > 0) : TileConfig{};
}

TileConfig hand_tile(const AttentionProblem& p) {
  const Fa3FwdInstance* e = fa3_fwd_instance(static_cast<int>(p.head_dim));
  return e ? fa3_instance_tile(*e, p.softcap > 0) : TileConfig{};
}

// Every forward instance of the head dim, as `sim tune` ranks them (a ci build runs the hand-kept one and skips
// the others, saying so); the backward's one tile.
std::vector<TileConfig> tune_tiles(int64_t head_dim, Pass pass) {
  const int d = static_cast<int>(head_dim);
  if (pass == Pass::Forward)
    return sim::tune_space(sim::TuneKernel::Fa3Fwd, sim::TuneSpace::Instances, head_dim);
  if (!fa3_bwd_instance(d)) return {};
  return {fa3_instance_tile(*fa3_fwd_instance(d))};
}

void require(bool ok, const char* what) {
  if (!ok) throw InputError("fa3-v1", std::string("missing device buffer: ") + what);
}

// TMA reads from 16-byte aligned addresses; the outputs' 4-byte stores need 4, dQ's 16-byte ones 16.
void require_aligned(const void* ptr, const char* what, uintptr_t bytes) {
  if (reinterpret_cast<uintptr_t>(ptr) % bytes != 0)
    throw InputError("fa3-v1", std::string(what) + " is not " + std::to_string(bytes) + "-byte aligned");
}

// The fields the forward's and backward's arguments share: sizes, offsets, scale and the windows (an edge past
// every key is no edge: the key-block ranges and the masks then skip it). Without keys no K/V tile is loaded, but
// a TMA descriptor needs a real address: q's stands in.
template <class Params>
void set_problem(Params& a, const AttentionProblem& p, const DeviceArgs& args) {
  const AttentionParams ap = make_params(p);
  a.q = args.q;
  a.k = p.total_k() > 0 ? args.k : args.q;
  a.v = p.total_k() > 0 ? args.v : args.q;
  a.cu_seqlens_q = args.cu_seqlens_q, a.cu_seqlens_k = args.cu_seqlens_k;
  a.batch = ap.batch, a.heads_q = ap.heads_q, a.heads_kv = ap.heads_kv, a.group = ap.group;
  a.seqlen_q = ap.seqlen_q, a.seqlen_k = ap.seqlen_k, a.total_q = ap.total_q, a.total_k = ap.total_k;
  a.head_dim = ap.head_dim, a.varlen = ap.varlen, a.scale = ap.scale;
  const int64_t span = p.seqlen_q + p.seqlen_k;
  a.window_left = ap.window_left >= span ? -1 : ap.window_left;
  a.window_right = ap.window_right >= span ? -1 : ap.window_right;
}

void forward(const AttentionProblem& p, const TileConfig& c, const DeviceArgs& args) {
  if (const std::string why = unsupported(p, c); !why.empty()) throw InputError("fa3-v1", why);
  require(args.q && args.o && args.lse, "q, o, lse");
  require(p.total_k() == 0 || (args.k && args.v), "k, v");
  require(!p.varlen() || (args.cu_seqlens_q && args.cu_seqlens_k), "cu_seqlens_q, cu_seqlens_k");
  require_aligned(args.q, "q", 16);
  require_aligned(args.k, "k", 16);
  require_aligned(args.v, "v", 16);
  require_aligned(args.o, "o", 4);
  Fa3FwdParams a;
  set_problem(a, p, args);
  a.o = args.o, a.lse = args.lse, a.softcap = static_cast<float>(p.softcap);
  const bool causal = a.window_left < 0 && a.window_right == 0;
  const bool windowed = !causal && (a.window_left >= 0 || a.window_right >= 0);
  a.block_k = static_cast<int>(c.block_k), a.stages = c.stages;  // the instance (unsupported() checked it)
  const int64_t tiles = (p.seqlen_q + c.block_q - 1) / c.block_q * p.heads_q * p.batch;
  // The balanced walk needs the workspace and a stream it may copy to from pageable memory (not one being
  // captured into a CUDA graph, where such a copy is an error: the static walk there).
  const auto stream = static_cast<cudaStream_t>(args.stream);
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  if (cudaError_t e = cudaStreamIsCapturing(stream, &capture); e != cudaSuccess)
    throw std::runtime_error(std::string("fa3-v1 forward: ") + cudaGetErrorString(e));
  const bool can_walk = args.workspace != nullptr && capture == cudaStreamCaptureStatusNone;
  const Fa3Schedule schedule =
      fa3_fwd_schedule(causal, windowed, p.seqlen_k, tiles, device_sm_count(),
                       2 * p.seqlen_k * p.head_dim * kFa3ElementBytes, device_l2_bytes(), p.batch * p.heads_q,
                       /*balanced_walk=*/can_walk);
  a.persistent = schedule.persistent;
  a.pingpong = schedule.pingpong;
  a.head_group = schedule.head_group;
  if (a.total_q == 0) return;  // no query row: nothing to write
  // A persistent grid of unequal tiles walks balanced: the walk built here, copied to the workspace's head
  // (stream-ordered: the previous launch has read its own). Without a workspace (or in a capture): static.
  const int64_t grid = std::min<int64_t>(tiles, device_sm_count());
  if (can_walk && balanced_walk(fa3_fwd_walks_balanced(a.persistent && grid < tiles, causal, a.varlen))) {
    if (cudaError_t e = copy_walk(p, c, a.head_group, grid, args.workspace, stream); e != cudaSuccess)
      throw std::runtime_error(std::string("fa3-v1 forward's walk: ") + cudaGetErrorString(e));
    a.persistent = true;
    a.walk = static_cast<const int32_t*>(args.workspace);
    a.walk_ctas = static_cast<int>(grid);
  }
  const cudaError_t e = launch_fwd(a, p.dtype == DType::BF16, stream);
  if (e != cudaSuccess)
    throw std::runtime_error(std::string("fa3-v1 forward launch: ") + cudaGetErrorString(e));
}

void backward(const AttentionProblem& p, const TileConfig& c, const DeviceArgs& args) {
  if (const std::string why = problem_unsupported(p); !why.empty()) throw InputError("fa3-v1", why);
  if (const std::string why = backward_unsupported(p, c); !why.empty()) throw InputError("fa3-v1", why);
  require(args.q && args.o && args.lse && args.dout && args.dq && args.workspace,
          "q, o, lse, dout, dq, workspace");
  require(p.total_k() == 0 || (args.k && args.v && args.dk && args.dv), "k, v, dk, dv");
  require(!p.varlen() || (args.cu_seqlens_q && args.cu_seqlens_k), "cu_seqlens_q, cu_seqlens_k");
  for (const auto& [ptr, what] : {std::pair{args.q, "q"}, {args.k, "k"}, {args.v, "v"}, {args.dout, "dout"}})
    if (ptr) require_aligned(ptr, what, 16);
  for (const auto& [ptr, what] : {std::pair{static_cast<const void*>(args.dk), "dk"}, {args.dv, "dv"}})
    if (ptr) require_aligned(ptr, what, 4);
  require_aligned(args.dq, "dq", 16);  // convert_dq stores its rows 16 bytes a thread
  Fa3BwdParams a;
  set_problem(a, p, args);
  a.o = args.o, a.dout = args.dout, a.lse = args.lse;
  a.dq = args.dq, a.dk = args.dk, a.dv = args.dv;
  a.dq_slabs = dq_slabs(p, c);
  a.softcap = static_cast<float>(p.softcap);
  fa3_bwd_set_workspace(a, static_cast<char*>(args.workspace) + walk_region_bytes(p), bwd_block_q(p));
  const cudaError_t e = launch_bwd(a, p.dtype == DType::BF16, static_cast<cudaStream_t>(args.stream));
  if (e != cudaSuccess)
    throw std::runtime_error(std::string("fa3-v1 backward launch: ") + cudaGetErrorString(e));
}

}  // namespace
}  // namespace fa3

KernelVersion fa3_v1() {
  KernelVersion kv;
  kv.name = "fa3-v1";
  kv.algorithm = Algorithm::Fa2;
  kv.backend = Backend::Cuda;
  kv.summary =
      "FlashAttention forward and backward on Hopper (sm_90a): TMA loads into swizzled shared memory, "
      "a producer warpgroup and two consumer warpgroups (setmaxnreg), wgmma for QK^T and PV, softmax "
      "overlapped with PV; backward with a key block per CTA (dK, dV in registers, dQ added to an fp32 "
      "accumulator by bulk reduces from shared memory; deterministic with --dq-strategy partials: a slab "
      "a key block, summed in order)";
  kv.sim_kernels = {"fwd_fa3", "bwd_fa3_dot_do_o", "bwd_fa3", "bwd_fa3_convert"};
  kv.unsupported = fa3::unsupported;
  kv.launch_tile = fa3::launch_tile;
  kv.tune_tiles = fa3::tune_tiles;
  kv.hand_tile = fa3::hand_tile;
  kv.tune_features = {"plain", "causal"};  // no bias (its score pipeline has none)
  kv.forward = fa3::forward;
  kv.backward = fa3::backward;
  kv.backward_unsupported = fa3::backward_unsupported;
  kv.workspace_bytes = fa3::workspace_bytes;
  return kv;
}

}  // namespace flashsim::gpu
