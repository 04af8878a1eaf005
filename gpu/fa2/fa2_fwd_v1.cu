// fa2-v1's forward: FlashAttention-2's forward as one fused kernel (fa2_fwd_kernel.cuh): a query block per CTA,
// K/V blocks streamed through shared memory by cp.async, S and P in registers, mma.sync tensor cores, O and
// lse written once. This file: what it can run and the launch (fa2_v1.h); the kernels of each head dim are
// compiled in fa2_fwd_d<d>.cu (fa2_fwd_launch.cuh), one per entry of fa2's instances.h.
//
// Instantiated configs: kFa2FwdInstances (fa2's instances.h, with the register and shared-memory
// arithmetic of each group), each for stages 1 and 2, bf16 and fp16. The launch table (fa2::launch_tile in
// fa2_v1.cpp, used when no tile is given): d64 Br128 Bc64 st2; d96 Br128 Bc64 st1 (plain) or Bc32 st2 (score
// pipeline); d128 Br128 Bc32 st2; d256 Br64 Bc64 st1: for d <= 128 the fastest tile whose kernel keeps every
// register of the key loop out of local memory (the SASS count of gpu/tools/sass.py spills, on sm_80 and sm_90).
// Why these (fa2_fwd_traits.h has the register and shared-memory arithmetic):
//   - Br128 Bc64 w4 is FlashAttention-2's own choice for d64..d128 on A100 / H100 (flash_fwd_launch_template.h):
//     4 warps x 32 rows keep the O accumulators (32 x d / 32 lanes) plus S (32 x 64 / 32) in <= 192 fp32
//     registers, and Bc64 amortizes the per-block O rescale (Br x d multiplies) and barriers over 64 keys.
//     At d128 those 192 accumulators leave ptxas too few registers: the plain kernel reloads ~60 bytes of
//     spilled loop state every key block (FA2's own build of this tile spills too), at d96 the score-pipeline
//     kernel does. Bc32 (160 accumulators at d128) runs spill-free; its cost (twice the rescales and barriers
//     per key) is partly won back by prefetching the next K/V block (stages 2).
//   - d256: 16 rows a warp (Br64 w4, or FA2's Br128 w8): 128 O + 32 S accumulators; Br128 w4 would need 320.
//   - stages 1 = FA2's schedule (one K and one V buffer: V[n] loads under Q K^T, K[n-1] under softmax + P V);
//     stages 2 = K and V of the next block prefetched under the whole current block.
// Each config has two kernels (the last template argument): the plain one (scale folded into exp2, masking
// only in the key blocks that cross a window limit or the end of the keys) and the full per-element score
// pipeline (softcap, bias, mask, ALiBi, or scale <= 0), chosen here per problem.
#include <cuda_runtime.h>

#include <cstdint>
#include <iterator>
#include <stdexcept>
#include <string>
#include <utility>

#include "cuda_launch.h"  // device_smem_optin
#include "fa2_fwd_kernel.cuh"
#include "fa2_launch.h"
#include "fa2_v1.h"
#include "flashsim/error.h"
#include "flashsim/families/fa2/instances.h"
#include "flashsim/gpu/kernel.h"
#include "flashsim/gpu/params.h"

namespace flashsim::gpu {

namespace {

using fa2::Fa2FwdParams;

// gridDim.y (batch) and gridDim.z (heads_q) are at most 65535.
constexpr int64_t kMaxGridYZ = 65535;

std::string head_dims_text() {
  std::string s;
  for (const int d : fa2::kFa2HeadDims) s += (s.empty() ? "" : ", ") + std::to_string(d);
  return s;
}

std::string problem_unsupported_impl(const AttentionProblem& p) {
  if (p.dtype != DType::F16 && p.dtype != DType::BF16)
    return "dtype " + std::string(dtype_name(p.dtype)) + " (fa2-v1 forward runs fp16 and bf16)";
  if (!fa2_fwd_head_dim(p.head_dim))
    return "head_dim " + std::to_string(p.head_dim) + " (fa2-v1 forward runs " + head_dims_text() + ")";
  if (p.head_dim_v != p.head_dim)
    return "head_dim_v " + std::to_string(p.head_dim_v) + " != head_dim " + std::to_string(p.head_dim) +
           " (fa2-v1 forward needs them equal)";
  if (p.heads_kv < 1 || p.heads_q % p.heads_kv != 0) return "heads_q is not a multiple of heads_kv";
  if (p.batch > kMaxGridYZ || p.heads_q > kMaxGridYZ)
    return "batch or heads_q over 65535 (gridDim.y, gridDim.z)";
  return "";
}

std::string unsupported_impl(const AttentionProblem& p, const TileConfig& c) {
  if (std::string why = problem_unsupported_impl(p); !why.empty()) return why;
  if (c.q_in_registers || c.kv_shared_buffer)
    return "tile " + c.describe() + ": q_in_registers and kv_shared_buffer are not implemented";
  if (!fa2_fwd_instantiated(p.head_dim, c.block_q, c.block_k, c.warps, c.stages))
    return "tile " + c.describe() + " is not instantiated for head_dim " + std::to_string(p.head_dim) +
           " (instantiated: " + fa2_fwd_instances_text(p.head_dim) + ")";
  if (!fa2::fa2_fwd_compiled(p.head_dim, c.block_q, c.block_k, c.warps))
    return "tile " + c.describe() + " is " + fa2::fa2_not_compiled_text(p.head_dim, true);
  const int64_t smem =
      fa2_fwd_smem_bytes(p.head_dim, c.block_q, c.block_k, c.stages) +
      (p.block_mask != BroadcastShape::None
           ? fa2::block_mask_bitmap_bytes(static_cast<int>((p.seqlen_k + c.block_k - 1) / c.block_k))
           : 0);  // the block-sparse bitmaps
  if (const int64_t optin = device_smem_optin(); optin > 0 && smem > optin)
    return "tile " + c.describe() + " needs " + std::to_string(smem) +
           " bytes of shared memory a CTA; this device allows " + std::to_string(optin);
  return "";
}

// The head dim's translation unit (fa2_fwd_d<d>.cu) launches the tile's kernel.
void launch(const AttentionProblem& p, const TileConfig& c, const Fa2FwdParams& prm, cudaStream_t stream) {
  const auto any_dim = [&]<size_t... I>(std::index_sequence<I...>) {
    return ((p.head_dim == fa2::kFa2HeadDims[I] &&
             (fa2::launch_fwd_head_dim<fa2::kFa2HeadDims[I]>(c, p.dtype, prm, stream), true)) ||
            ...);
  };
  const bool ran = any_dim(std::make_index_sequence<std::size(fa2::kFa2HeadDims)>{});
  if (!ran) throw std::logic_error("fa2-v1: head_dim passed unsupported() but has no instance");
}

}  // namespace

namespace fa2 {

std::string problem_unsupported(const AttentionProblem& p) {
  return problem_unsupported_impl(p);
}

std::string forward_unsupported(const AttentionProblem& p, const TileConfig& c) {
  return unsupported_impl(p, c);
}

namespace {
void forward_impl(const AttentionProblem& p, const TileConfig& c, const DeviceArgs& args, bool heads_first) {
  if (const std::string why = unsupported_impl(p, c); !why.empty()) throw InputError("fa2-v1", why);
  require_inputs(p, args);
  require(args.o && args.lse, "o, lse");
  require_aligned(args.o, "o");

  Fa2FwdParams prm;
  set_problem(prm, p, args);
  if (prm.a.seqlen_q == 0 || prm.a.total_q == 0) return;  // no query row: nothing to write
  prm.o = args.o;
  prm.lse = args.lse;
  constexpr float kLog2e = 1.4426950408889634f;
  prm.exp2_scale = prm.pipeline ? kLog2e : prm.a.scale * kLog2e;
  prm.heads_first = heads_first;
  prm.bm_items = prm.a.has_block_mask ? static_cast<int>((p.seqlen_k + c.block_k - 1) / c.block_k) : 0;
  launch(p, c, prm, static_cast<cudaStream_t>(args.stream));
}
}  // namespace

void forward(const AttentionProblem& p, const TileConfig& c, const DeviceArgs& args) {
  forward_impl(p, c, args, false);
}

void forward_heads_first(const AttentionProblem& p, const TileConfig& c, const DeviceArgs& args) {
  forward_impl(p, c, args, true);
}

}  // namespace fa2

}  // namespace flashsim::gpu
