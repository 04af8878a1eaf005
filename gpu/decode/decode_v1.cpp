// decode-v1: the split-KV decode over a paged KV cache (flash_attn_with_kvcache's layout), in three kernels
// (decode_kernel.cuh): the append of k_new / v_new into the cache, the split kernel (a CTA per packed row
// block, split and (sequence, kv head); the group's query heads packed as rows so K and V are read once a kv
// head; CUDA cores in fp32: one to sixteen rows leave a tensor-core tile mostly empty, and decoding is bound by
// the cache's bytes), and the combine of the splits. The number of splits is the simulator's choice for the
// launch (sim::sweep_splits_of_tile on the device's profile), never a hand-set constant.
#include <fmt/format.h>

#include <map>
#include <mutex>
#include <tuple>

#include "cuda_launch.h"
#include "decode_kernel_limits.h"
#include "decode_launch.h"
#include "flashsim/error.h"
#include "flashsim/gpu/kernel.h"
#include "flashsim/sim/hardware.h"
#include "flashsim/sim/sweep.h"
#include "versions.h"

namespace flashsim::gpu {

namespace {

using decode::DecodeTile;

// gridDim.y and gridDim.z are at most 65535.
constexpr int64_t kMaxGridYZ = 65535;

int elem_bytes(DType t) {
  return t == DType::F32 ? 4 : 2;
}

std::string unsupported(const AttentionProblem& p, const TileConfig& c) {
  if (!p.kv_cache())
    return "not a paged KV cache case (decode-v1 runs flash_attn_with_kvcache's decode; fa2-v1 and fa3-v1 "
           "read "
           "dense k / v)";
  if (p.dtype != DType::BF16 && p.dtype != DType::F16 && p.dtype != DType::F32)
    return "dtype " + std::string(dtype_name(p.dtype)) + " (decode-v1 runs bf16, fp16 and fp32)";
  const int d = static_cast<int>(p.head_dim), dv = static_cast<int>(p.head_dim_v);
  if (!decode::head_dims_supported(d, dv))
    return fmt::format("head dims {}/{} (decode-v1 runs 64/64, 128/128, 128/64 and 256/256)", d, dv);
  if (!decode::instances_compiled(elem_bytes(p.dtype), p.dtype == DType::BF16, d, dv))
    return fmt::format(
        "{} d{}/{} is not compiled in this build (FLASHSIM_DECODE_INSTANCES=ci compiles bf16 d128 "
        "alone)",
        dtype_name(p.dtype), d, dv);
  if (p.heads_kv < 1 || p.heads_q % p.heads_kv != 0) return "heads_q is not a multiple of heads_kv";
  if (p.bias != BroadcastShape::None)
    return "bias (decode-v1's score pipeline has scale, softcap, ALiBi and windows)";
  if (p.mask != BroadcastShape::None)
    return "boolean mask (decode-v1's score pipeline has scale, softcap, ALiBi and windows)";
  if (p.batch * p.heads_kv > kMaxGridYZ) return "batch x heads_kv over 65535 (gridDim.z)";
  if (c.num_splits > decode::kMaxCombinedSplits)
    return fmt::format("{} splits (decode-v1's combine takes at most {})", c.num_splits,
                       decode::kMaxCombinedSplits);
  static const int cc = device_compute_capability();  // asked once: forward() checks every launch
  if (cc != 0 && cc < 80) return "compute capability below 8.0 (decode-v1 copies with cp.async)";
  return "";
}

// The device's hardware profile for the split choice: the built-in one its name matches, else the H100's (the
// GPU the models are calibrated on).
const sim::HardwareProfile& device_profile() {
  static const sim::HardwareProfile hw = [] {
    const std::string name = device_name();
    for (const auto& [part, profile] : {std::pair{"H200", "H200"}, std::pair{"A100", "A100-SXM4-80GB"},
                                        std::pair{"L4", "L4"}, std::pair{"A10", "A10"}})
      if (name.find(part) != std::string::npos) return sim::load_profile(profile);
    return sim::load_profile("H100-SXM5-80GB");
  }();
  return hw;
}

TileConfig tile_without_splits(const AttentionProblem& p) {
  const DecodeTile t =
      decode::decode_tile(elem_bytes(p.dtype), static_cast<int>(p.head_dim), static_cast<int>(p.head_dim_v),
                          decode::rows_per_cta(p.seqlen_q * p.group_size()));
  TileConfig c;
  if (t.rows == 0) return c;  // unsupported() says why
  c.block_q = t.rows;
  c.block_k = t.block_k;
  c.warps = t.threads / 32;
  c.stages = t.stages;
  c.q_in_registers = false;
  c.kv_shared_buffer = false;
  return c;
}

// The launch tile: the instance's tile with the model's fastest split count (memoized per problem: a sweep is
// ~0.1 s on the CPU, and a benchmark asks again every launch).
TileConfig launch_tile(const AttentionProblem& p, Pass) {
  TileConfig c = tile_without_splits(p);
  if (!p.kv_cache() || c.block_q == 0 || !unsupported(p, c).empty()) return c;
  static std::mutex mu;
  static std::map<std::string, int64_t> chosen;
  std::string key = p.describe() + "|" + c.describe() + "|";
  for (const int64_t n : p.cache_seqlens) key += std::to_string(n) + ",";
  std::lock_guard<std::mutex> lock(mu);
  auto it = chosen.find(key);
  if (it == chosen.end())
    it = chosen.emplace(key, sim::fastest_splits(sim::sweep_splits_of_tile(p, device_profile(), c))).first;
  c.num_splits = it->second;
  return c;
}

size_t workspace_bytes(const AttentionProblem& p, const TileConfig& c) {
  if (c.num_splits <= 1) return 0;
  const auto rows = static_cast<size_t>(c.num_splits * p.batch * p.heads_q * p.seqlen_q);
  return rows * static_cast<size_t>(p.head_dim_v + 1) * sizeof(float);  // o_accum, then lse_accum
}

void forward(const AttentionProblem& p, const TileConfig& c, const DeviceArgs& args) {
  if (const std::string why = unsupported(p, c); !why.empty())
    throw InputError("kernel", "decode-v1: " + why);
  const TileConfig expected = tile_without_splits(p);
  if (c.block_q != expected.block_q || c.block_k != expected.block_k || c.warps != expected.warps ||
      c.stages != expected.stages)
    throw InputError("tile", fmt::format("decode-v1 is compiled for {} on this problem (only --num-splits "
                                         "may change), got {}",
                                         expected.describe(), c.describe()));
  decode::DecodeParams d;
  d.a = make_params(p);
  d.q = args.q;
  d.o = args.o;
  d.lse = args.lse;
  d.slopes = args.alibi_slopes;
  d.k_cache = args.k_cache;
  d.v_cache = args.v_cache;
  d.block_table = args.block_table;
  d.cache_seqlens = args.cache_seqlens;
  d.k_new = args.k_new;
  d.v_new = args.v_new;
  d.page_size = static_cast<int>(p.page_size);
  d.max_blocks = static_cast<int>(p.max_blocks_per_seq());
  d.seqlen_new = static_cast<int>(p.seqlen_new);
  d.num_splits = static_cast<int>(c.num_splits);
  if (d.num_splits > 1) {
    if (!args.workspace)
      throw InputError("workspace", "decode-v1 needs its workspace for more than one split");
    d.o_accum = static_cast<float*>(args.workspace);
    d.lse_accum = d.o_accum + c.num_splits * p.batch * p.heads_q * p.seqlen_q * p.head_dim_v;
  }
  const auto e = p.dtype == DType::BF16  ? decode::Elem::BF16
                 : p.dtype == DType::F16 ? decode::Elem::F16
                                         : decode::Elem::F32;
  decode::launch_decode(d, e, args.stream);
}

}  // namespace

KernelVersion decode_v1() {
  KernelVersion v;
  v.name = "decode-v1";
  v.algorithm = Algorithm::Fa2;
  v.backend = Backend::Cuda;
  v.summary =
      "split-KV decoding over a paged KV cache (pack GQA, cp.async pages through the block table, fp32 "
      "CUDA-core "
      "products, a combine kernel); the split count is the simulator's choice";
  v.sim_kernels = {"fwd_splitkv", "fwd_splitkv_combine"};
  v.features = kFeatureKvCache;
  v.unsupported = unsupported;
  v.workspace_bytes = workspace_bytes;
  v.launch_tile = launch_tile;
  v.forward = forward;
  return v;
}

}  // namespace flashsim::gpu
