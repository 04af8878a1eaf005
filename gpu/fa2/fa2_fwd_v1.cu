// fa2-v1's forward: FlashAttention-2's forward as one fused kernel (fa2_fwd_kernel.cuh): a query block per CTA,
// K/V blocks streamed through shared memory by cp.async, S and P in registers, mma.sync tensor cores, O and
// lse written once. This file: what it can run, the instantiated tile configs and the launch (fa2_v1.h).
//
// Instantiated configs (Br x Bc, warps, K/V stages), each for bf16 and fp16:
//   d64, d96, d128: Br128 Bc64 w4      d96, d128: Br128 Bc32 w4      d256: Br64 Bc64 w4      stages 1 and 2
// The launch table (fa2::launch_tile in fa2_v1.cpp, used when no tile is given): d64 Br128 Bc64 st2; d96 Br128
// Bc64 st1 (plain) or Bc32 st2 (score pipeline); d128 Br128 Bc32 st2; d256 Br64 Bc64 st1: for d <= 128 the
// fastest tile whose kernel keeps every register of the key loop out of local memory (the SASS count of
// bench/gpu/spills.py, on sm_80 and sm_90).
// Why these (fa2_fwd_traits.h has the register and shared-memory arithmetic):
//   - Br128 Bc64 w4 is FlashAttention-2's own choice for d64..d128 on A100 / H100 (flash_fwd_launch_template.h):
//     4 warps x 32 rows keep the O accumulators (32 x d / 32 lanes) plus S (32 x 64 / 32) in <= 192 fp32
//     registers, and Bc64 amortizes the per-block O rescale (Br x d multiplies) and barriers over 64 keys.
//     At d128 those 192 accumulators leave ptxas too few registers: the plain kernel reloads ~60 bytes of
//     spilled loop state every key block (FA2's own build of this tile spills too), at d96 the score-pipeline
//     kernel does. Bc32 (160 accumulators at d128) runs spill-free; its cost (twice the rescales and barriers
//     per key) is partly won back by prefetching the next K/V block (stages 2). The Bc64 tiles stay
//     instantiated for comparison (--block-k 64).
//   - d256: Br64 w4 (16 rows a warp): 128 O + 32 S accumulators; Br128 w4 would need 320 (spills). FA2 runs
//     Br64 Bc64 w4 where shared memory is short, and Br128 w8 on A100/H100 (8 warps: a later version).
//   - stages 1 = FA2's schedule (one K and one V buffer: V[n] loads under Q K^T, K[n-1] under softmax + P V);
//     stages 2 = K and V of the next block prefetched under the whole current block.
// Each config has two kernels (the last template argument): the plain one (scale folded into exp2, masking
// only in the key blocks that cross a window limit or the end of the keys) and the full per-element score
// pipeline (softcap, bias, mask, ALiBi, or scale <= 0), chosen here per problem: 48 kernels in all.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <stdexcept>
#include <string>

#include "device_memory.h"  // FLASHSIM_CUDA_CHECK, allow_dynamic_smem
#include "fa2_fwd_kernel.cuh"
#include "fa2_v1.h"
#include "flashsim/error.h"
#include "flashsim/gpu/kernel.h"
#include "flashsim/gpu/params.h"

namespace flashsim::gpu {

namespace {

using fa2::Fa2FwdParams;
using fa2::Fa2FwdTraits;

// gridDim.y (batch) and gridDim.z (heads_q) are at most 65535.
constexpr int64_t kMaxGridYZ = 65535;

// The instantiated tile configs (the dispatch in launch_t must list the same).
struct Instance {
  int head_dim, block_q, block_k, warps;
};
constexpr Instance kInstances[] = {{64, 128, 64, 4},  {96, 128, 64, 4},  {96, 128, 32, 4},
                                   {128, 128, 64, 4}, {128, 128, 32, 4}, {256, 64, 64, 4}};
constexpr int kMaxStages = 2;  // stages 1 and 2 of each
constexpr const char* kInstancesText =
    "d64, d96, d128: Br128 Bc64 w4; d96, d128: Br128 Bc32 w4; d256: Br64 Bc64 w4; each with stages 1 or 2, "
    "without q_in_registers or kv_shared_buffer";

bool instantiated(const AttentionProblem& p, const TileConfig& c) {
  if (c.q_in_registers || c.kv_shared_buffer || c.stages < 1 || c.stages > kMaxStages) return false;
  for (const Instance& i : kInstances)
    if (p.head_dim == i.head_dim && c.block_q == i.block_q && c.block_k == i.block_k && c.warps == i.warps)
      return true;
  return false;
}

std::string unsupported_impl(const AttentionProblem& p, const TileConfig& c) {
  if (p.dtype != DType::F16 && p.dtype != DType::BF16)
    return "dtype " + std::string(dtype_name(p.dtype)) + " (fa2-v1 forward runs fp16 and bf16)";
  if (p.head_dim != 64 && p.head_dim != 96 && p.head_dim != 128 && p.head_dim != 256)
    return "head_dim " + std::to_string(p.head_dim) + " (fa2-v1 forward runs 64, 96, 128, 256)";
  if (p.head_dim_v != p.head_dim)
    return "head_dim_v " + std::to_string(p.head_dim_v) + " != head_dim " + std::to_string(p.head_dim) +
           " (fa2-v1 forward needs them equal)";
  if (p.heads_kv < 1 || p.heads_q % p.heads_kv != 0) return "heads_q is not a multiple of heads_kv";
  if (p.batch > kMaxGridYZ || p.heads_q > kMaxGridYZ)
    return "batch or heads_q over 65535 (gridDim.y, gridDim.z)";
  if (!instantiated(p, c))
    return "tile " + c.describe() + " is not instantiated for head_dim " + std::to_string(p.head_dim) +
           " (instantiated: " + kInstancesText + ")";
  return "";
}

template <int kHeadDim, int kBlockM, int kBlockN, int kNWarps, int kStages, class Element, bool kPipeline>
void run(const Fa2FwdParams& prm, cudaStream_t stream) {
  using Tr = Fa2FwdTraits<kHeadDim, kBlockM, kBlockN, kNWarps, kStages, Element>;
  const auto kernel =
      fa2::flashsim_fa2_fwd_kernel<kHeadDim, kBlockM, kBlockN, kNWarps, kStages, Element, kPipeline>;
  constexpr size_t smem = Tr::kSmemBytes;
  allow_dynamic_smem(reinterpret_cast<const void*>(kernel), smem, "fa2-v1");
  const dim3 grid(static_cast<unsigned>((prm.a.seqlen_q + kBlockM - 1) / kBlockM),
                  static_cast<unsigned>(prm.a.batch), static_cast<unsigned>(prm.a.heads_q));
  kernel<<<grid, Tr::kThreads, smem, stream>>>(prm);
  FLASHSIM_CUDA_CHECK(cudaGetLastError());
}

template <int kHeadDim, int kBlockM, int kBlockN, int kNWarps, class Element>
void run_stages(int stages, const Fa2FwdParams& prm, cudaStream_t stream) {
  if (stages == 1)
    return prm.pipeline ? run<kHeadDim, kBlockM, kBlockN, kNWarps, 1, Element, true>(prm, stream)
                        : run<kHeadDim, kBlockM, kBlockN, kNWarps, 1, Element, false>(prm, stream);
  return prm.pipeline ? run<kHeadDim, kBlockM, kBlockN, kNWarps, 2, Element, true>(prm, stream)
                      : run<kHeadDim, kBlockM, kBlockN, kNWarps, 2, Element, false>(prm, stream);
}

template <class Element>
void launch_t(const AttentionProblem& p, const TileConfig& c, const Fa2FwdParams& prm, cudaStream_t stream) {
  const int s = c.stages;
  switch (p.head_dim) {  // the tiles were checked against kInstances
    case 64:
      return run_stages<64, 128, 64, 4, Element>(s, prm, stream);
    case 96:
      return c.block_k == 32 ? run_stages<96, 128, 32, 4, Element>(s, prm, stream)
                             : run_stages<96, 128, 64, 4, Element>(s, prm, stream);
    case 128:
      return c.block_k == 32 ? run_stages<128, 128, 32, 4, Element>(s, prm, stream)
                             : run_stages<128, 128, 64, 4, Element>(s, prm, stream);
    case 256:
      return run_stages<256, 64, 64, 4, Element>(s, prm, stream);
    default:
      throw std::logic_error("fa2-v1: head_dim passed unsupported() but has no instance");
  }
}

}  // namespace

namespace fa2 {

std::string forward_unsupported(const AttentionProblem& p, const TileConfig& c) {
  return unsupported_impl(p, c);
}

void forward(const AttentionProblem& p, const TileConfig& c, const DeviceArgs& args) {
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
  const auto stream = static_cast<cudaStream_t>(args.stream);
  if (p.dtype == DType::BF16)
    launch_t<__nv_bfloat16>(p, c, prm, stream);
  else
    launch_t<__half>(p, c, prm, stream);
}

}  // namespace fa2

}  // namespace flashsim::gpu
