// The decode family: split-KV decoding over a paged KV cache (flash_attn_with_kvcache's layout), in three kernels:
// the append of k_new / v_new into the cache and the combine of the splits (decode_common.cuh), and between them
// the split kernel, a CTA per packed row block, split and (sequence, kv head), the group's query heads packed as
// rows so that K and V are read once a kv head. Two versions of the split kernel:
//   decode-v1 (decode_v1_kernel.cuh): fp32 products on CUDA cores, 4 / 8 / 16 rows a CTA; fp32, fp16, bf16. Its
//     instructions per cache byte hold it to ~0.8 of the copy bandwidth on the H100 (calibration
//     decode.bandwidth_h100; decode-v2 0.95-0.99).
//   decode-v2 (decode_v2_kernel.cuh): mma.sync m16n8k16 with fp32 accumulation, 16 rows a CTA, the tile's keys
//     split over the warps (each its own online softmax, merged once); fp16, bf16.
// The number of splits is the simulator's choice for the launch (sim::sweep_splits_of_tile on the device's
// profile with the version's tile), never a hand-set constant.
#include <fmt/format.h>

#include <map>
#include <mutex>
#include <tuple>

#include "cuda_launch.h"
#include "decode_kernel_limits.h"
#include "decode_launch.h"
#include "device_profile.h"
#include "flashsim/error.h"
#include "flashsim/gpu/kernel.h"
#include "flashsim/sim/hardware.h"
#include "flashsim/sim/sweep.h"
#include "versions.h"

namespace flashsim::gpu {

namespace {

using decode::DecodeTile;
using decode::Split;

// gridDim.y and gridDim.z are at most 65535.
constexpr int64_t kMaxGridYZ = 65535;

int elem_bytes(DType t) {
  return t == DType::F32 ? 4 : 2;
}

const char* name_of(Split s) {
  return s == Split::CudaCores ? "decode-v1" : "decode-v2";
}

std::string unsupported_by(Split s, const AttentionProblem& p, const TileConfig& c) {
  if (!p.kv_cache())
    return fmt::format(
        "not a paged KV cache case ({} runs flash_attn_with_kvcache's decode; fa2-v1 and fa3-v1 "
        "read dense k / v)",
        name_of(s));
  if (s == Split::CudaCores && p.dtype != DType::BF16 && p.dtype != DType::F16 && p.dtype != DType::F32)
    return "dtype " + std::string(dtype_name(p.dtype)) + " (decode-v1 runs bf16, fp16 and fp32)";
  if (s == Split::TensorCores && p.dtype != DType::BF16 && p.dtype != DType::F16)
    return "dtype " + std::string(dtype_name(p.dtype)) +
           " (decode-v2 runs bf16 and fp16 on mma.sync; decode-v1 runs fp32)";
  const int d = static_cast<int>(p.head_dim), dv = static_cast<int>(p.head_dim_v);
  if (!decode::head_dims_supported(d, dv))
    return fmt::format("head dims {}/{} ({} runs 64/64, 128/128, 128/64 and 256/256)", d, dv, name_of(s));
  if (!decode::instances_compiled(elem_bytes(p.dtype), p.dtype == DType::BF16, d, dv))
    return fmt::format(
        "{} d{}/{} is not compiled in this build (FLASHSIM_DECODE_INSTANCES=ci compiles bf16 "
        "d128 alone)",
        dtype_name(p.dtype), d, dv);
  if (p.heads_kv < 1 || p.heads_q % p.heads_kv != 0) return "heads_q is not a multiple of heads_kv";
  if (p.bias != BroadcastShape::None)
    return fmt::format("bias ({}'s score pipeline has scale, softcap, ALiBi and windows)", name_of(s));
  if (p.mask != BroadcastShape::None)
    return fmt::format("boolean mask ({}'s score pipeline has scale, softcap, ALiBi and windows)",
                       name_of(s));
  if (p.batch * p.heads_kv > kMaxGridYZ) return "batch x heads_kv over 65535 (gridDim.z)";
  if (c.num_splits > decode::kMaxCombinedSplits)
    return fmt::format("{} splits ({}'s combine takes at most {})", c.num_splits, name_of(s),
                       decode::kMaxCombinedSplits);
  static const int cc = device_compute_capability();  // asked once: forward() checks every launch
  if (cc != 0 && cc < 80)
    return fmt::format("compute capability below 8.0 ({} copies with cp.async)", name_of(s));
  return "";
}
template <Split s>
std::string unsupported(const AttentionProblem& p, const TileConfig& c) {
  return unsupported_by(s, p, c);
}

TileConfig tile_without_splits(Split s, const AttentionProblem& p) {
  const DecodeTile t = decode::decode_tile(s, elem_bytes(p.dtype), static_cast<int>(p.head_dim),
                                           static_cast<int>(p.head_dim_v), p.seqlen_q * p.group_size());
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
template <Split s>
TileConfig launch_tile(const AttentionProblem& p, Pass) {
  TileConfig c = tile_without_splits(s, p);
  if (!p.kv_cache() || c.block_q == 0 || !unsupported_by(s, p, c).empty()) return c;
  static std::mutex mu;
  static std::map<std::string, int64_t> chosen;
  std::string key = p.describe() + "|" + c.describe() + "|";
  for (const int64_t n : p.cache_seqlens) key += std::to_string(n) + ",";
  std::lock_guard<std::mutex> lock(mu);
  auto it = chosen.find(key);
  if (it == chosen.end())
    it = chosen.emplace(key, sim::pick_splits(sim::sweep_splits_of_tile(p, device_profile(), c))).first;
  c.num_splits = it->second;
  return c;
}

size_t workspace_bytes(const AttentionProblem& p, const TileConfig& c) {
  if (c.num_splits <= 1) return 0;
  const auto rows = static_cast<size_t>(c.num_splits * p.batch * p.heads_q * p.seqlen_q);
  return rows * static_cast<size_t>(p.head_dim_v + 1) * sizeof(float);  // o_accum, then lse_accum
}

template <Split s>
void forward(const AttentionProblem& p, const TileConfig& c, const DeviceArgs& args) {
  if (const std::string why = unsupported_by(s, p, c); !why.empty())
    throw InputError("kernel", fmt::format("{}: {}", name_of(s), why));
  const TileConfig expected = tile_without_splits(s, p);
  if (c.block_q != expected.block_q || c.block_k != expected.block_k || c.warps != expected.warps ||
      c.stages != expected.stages)
    throw InputError("tile", fmt::format("{} is compiled for {} on this problem (only --num-splits "
                                         "may change), got {}",
                                         name_of(s), expected.describe(), c.describe()));
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
      throw InputError("workspace",
                       fmt::format("{} needs its workspace for more than one split", name_of(s)));
    d.o_accum = static_cast<float*>(args.workspace);
    d.lse_accum = d.o_accum + c.num_splits * p.batch * p.heads_q * p.seqlen_q * p.head_dim_v;
  }
  const auto e = p.dtype == DType::BF16  ? decode::Elem::BF16
                 : p.dtype == DType::F16 ? decode::Elem::F16
                                         : decode::Elem::F32;
  decode::launch_decode(d, s, e, args.stream);
}

KernelVersion decode_version(Split s) {
  KernelVersion v;
  v.name = name_of(s);
  v.algorithm = Algorithm::Fa2;
  v.backend = Backend::Cuda;
  v.summary =
      s == Split::CudaCores
          ? "split-KV decoding over a paged KV cache: pack GQA, cp.async pages through the block table, "
            "fp32 CUDA-core products, a combine kernel; splits chosen by the simulator"
          : "decode-v1 with its products on tensor cores (mma.sync m16n8k16, 16 packed rows, a tile's "
            "keys split over the warps); bf16 / fp16";
  v.sim_kernels = {"fwd_splitkv", "decode_combine"};
  v.features = kFeatureKvCache;
  v.unsupported = s == Split::CudaCores ? unsupported<Split::CudaCores> : unsupported<Split::TensorCores>;
  v.workspace_bytes = workspace_bytes;
  v.launch_tile = s == Split::CudaCores ? launch_tile<Split::CudaCores> : launch_tile<Split::TensorCores>;
  v.forward = s == Split::CudaCores ? forward<Split::CudaCores> : forward<Split::TensorCores>;
  return v;
}

}  // namespace

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

KernelVersion decode_v1() {
  return decode_version(Split::CudaCores);
}
KernelVersion decode_v2() {
  return decode_version(Split::TensorCores);
}

}  // namespace flashsim::gpu
