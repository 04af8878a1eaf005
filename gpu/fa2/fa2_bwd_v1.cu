// fa2-v1's backward: FlashAttention-2's three backward kernels (fa2_bwd_rowwise.cuh, fa2_bwd_kernel.cuh), plus
// a dbias reduction where the bias broadcasts. This file: what it can run, the workspace and the launch; the
// kernels of each head dim are compiled in fa2_bwd_d<d>.cu (fa2_bwd_launch.cuh), one set per entry of
// fa2's instances.h.
//
// Instantiated: kFa2BwdInstances (fa2's instances.h): backward tiles Br x Bc with TileConfig warps w, the
// kernel launching 2 w warps (as FlashAttention-2's and the simulator's models do); bf16 and fp16, plain and
// score-pipeline kernels; dq_strategy atomic or partials (run-time). Why the launch table's tiles
// (fa2_bwd_traits.h has the arithmetic):
//   - Bc128 over 8 warps gives each warp one m16 tile of keys, whose dK and dV (16 x d each, fp32) stay in
//     registers for the whole CTA: 2 d / 8 x 4 = 128 registers at d128. It is FlashAttention-2's d128
//     backward tile on A100 / H100 (Flash_bwd_kernel_traits<128, 64, 128, 8, ...>).
//   - Br64: S^T and dP^T of a step are 16 x 64 per warp, 2 x 32 registers; Br128 would need 64 more.
//   - Bc64 with 8 warps: the two warps of a key tile split the head dim (each recomputes the tile's S^T and
//     dP^T: 1.4x the tensor-core work of Bc128). At d256 the launch table's choice (dK + dV of 16 full rows
//     would take 256 registers); at d128 the launch table's choice for the score-pipeline kernel, whose bias /
//     mask indexing on top of 192 accumulators spills 72 bytes per query block at Bc128 (128 accumulators at
//     Bc64: none). d256's shared memory: 201 KB (Q, dO double-buffered at 64 KB each).
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <iterator>
#include <stdexcept>
#include <string>
#include <utility>

#include "cuda_launch.h"       // FLASHSIM_CUDA_CHECK, device_smem_optin
#include "fa2_block_mask.cuh"  // block_mask_bitmap_bytes
#include "fa2_bwd_params.cuh"
#include "fa2_launch.h"
#include "fa2_v1.h"
#include "flashsim/error.h"
#include "flashsim/families/fa2/instances.h"

namespace flashsim::gpu::fa2 {

namespace {

bool bias_broadcast(const AttentionProblem& p) {
  const auto shape = p.broadcast_shape(p.bias);  // [b|1, h|1, seqlen_q, seqlen_k]
  return shape[0] != p.batch || shape[1] != p.heads_q;
}

// The workspace, in order, each part 256-byte aligned: the lse shift, D (lse_elems fp32 each), the dQ accumulator
// (accum_rows x heads_q x d fp32, once per key block for the partials), dS for a broadcast bias (B H Sq Sk fp32).
struct WorkspaceLayout {
  size_t lse_shift = 0, dsum = 0, accum = 0, dbias_full = 0, total = 0;
};
size_t aligned(size_t x) {
  return (x + 255) / 256 * 256;
}
WorkspaceLayout workspace_layout(const AttentionProblem& p, const TileConfig& c) {
  const AttentionParams a = params_of(p);
  WorkspaceLayout w;
  const size_t lse = aligned(static_cast<size_t>(p.lse_elems()) * sizeof(float));
  size_t accum =
      static_cast<size_t>(accum_rows(a)) * static_cast<size_t>(p.heads_q * p.head_dim) * sizeof(float);
  if (c.dq_strategy == DqStrategy::Partials)
    accum *= static_cast<size_t>((p.seqlen_k + c.bwd_block_k - 1) / c.bwd_block_k);
  const size_t full = p.bias != BroadcastShape::None && bias_broadcast(p)
                          ? static_cast<size_t>(p.batch * p.heads_q * p.seqlen_q * p.seqlen_k) * sizeof(float)
                          : 0;
  w.lse_shift = 0;
  w.dsum = lse;
  w.accum = 2 * lse;
  w.dbias_full = w.accum + aligned(accum);
  w.total = w.dbias_full + aligned(full);
  return w;
}

// The head dim's translation unit (fa2_bwd_d<d>.cu) launches the tile's kernels.
void launch(const AttentionProblem& p, const TileConfig& c, const Fa2BwdParams& prm, float* dbias,
            cudaStream_t stream) {
  const auto any_dim = [&]<size_t... I>(std::index_sequence<I...>) {
    return ((p.head_dim == kFa2HeadDims[I] &&
             (launch_bwd_head_dim<kFa2HeadDims[I]>(c, p, prm, dbias, stream), true)) ||
            ...);
  };
  const bool ran = any_dim(std::make_index_sequence<std::size(kFa2HeadDims)>{});
  if (!ran) throw std::logic_error("fa2-v1: head_dim passed backward_unsupported() but has no instance");
}

// The most (query head, query block) steps a main-kernel CTA walks: the block-sparse bitmaps' bits.
int bwd_bitmap_items(const AttentionProblem& p, const TileConfig& c) {
  return static_cast<int>((p.seqlen_q + c.bwd_block_q - 1) / c.bwd_block_q * p.group_size());
}

}  // namespace

// What the backward lacks beyond the limits of both passes (problem_unsupported: dtype, heads, grid).
std::string backward_unsupported(const AttentionProblem& p, const TileConfig& c) {
  if (!fa2_bwd_head_dim(p.head_dim))
    return "head_dim " + std::to_string(p.head_dim) + " (fa2-v1's backward runs 64, 96, 128, 256)";
  const std::string tile = "backward tile bwd Br" + std::to_string(c.bwd_block_q) + " Bc" +
                           std::to_string(c.bwd_block_k) + " w" + std::to_string(c.warps) + " (a " +
                           std::to_string(2 * c.warps) + "-warp kernel)";
  if (!fa2_bwd_instantiated(p.head_dim, c.bwd_block_q, c.bwd_block_k, c.warps))
    return tile + " is not instantiated for head_dim " + std::to_string(p.head_dim) +
           " (instantiated: " + fa2_bwd_instances_text(p.head_dim) + ")";
  if (!fa2_bwd_compiled(p.head_dim, c.bwd_block_q, c.bwd_block_k, c.warps))
    return tile + " is " + fa2_not_compiled_text(p.head_dim, false);
  const int64_t smem = fa2_bwd_smem_bytes(p.head_dim, c.bwd_block_q, c.bwd_block_k) +
                       (p.block_mask != BroadcastShape::None ? block_mask_bitmap_bytes(bwd_bitmap_items(p, c))
                                                             : 0);  // the block-sparse bitmaps
  if (const int64_t optin = device_smem_optin(); optin > 0 && smem > optin)
    return tile + " needs " + std::to_string(smem) + " bytes of shared memory a CTA; this device allows " +
           std::to_string(optin);
  return "";
}

size_t backward_workspace_bytes(const AttentionProblem& p, const TileConfig& c) {
  return workspace_layout(p, c).total;
}

void backward(const AttentionProblem& p, const TileConfig& c, const DeviceArgs& args) {
  if (std::string why = problem_unsupported(p); !why.empty()) throw InputError("fa2-v1", why);
  if (std::string why = backward_unsupported(p, c); !why.empty()) throw InputError("fa2-v1", why);
  require_inputs(p, args);
  require(args.o && args.lse && args.dout, "o, lse, dout");
  require(args.dq && args.dk && args.dv, "dq, dk, dv");
  require(p.bias == BroadcastShape::None || args.dbias, "dbias");
  require(args.workspace, "workspace");
  for (const auto& [ptr, what] : {std::pair<const void*, const char*>{args.o, "o"},
                                  {args.dout, "dout"},
                                  {args.dq, "dq"},
                                  {args.dk, "dk"},
                                  {args.dv, "dv"}})
    require_aligned(ptr, what);  // 16-byte loads (dot_do_o, cp.async) and stores (dK, dV, dQ)

  Fa2BwdParams prm;
  set_problem(prm, p, args);
  const auto stream = static_cast<cudaStream_t>(args.stream);
  const auto zero = [&](void* dst, int64_t elems, size_t elem_bytes) {
    if (elems > 0)
      FLASHSIM_CUDA_CHECK(cudaMemsetAsync(dst, 0, elem_bytes * static_cast<size_t>(elems), stream));
  };
  const auto elem = static_cast<size_t>(dtype_bytes(p.dtype));
  if (prm.a.total_k == 0 || prm.a.total_q == 0) {  // no key or no query anywhere: every gradient is zero
    zero(args.dq, p.q_elems(), elem);
    zero(args.dk, p.k_elems(), elem);
    zero(args.dv, p.v_elems(), elem);
    if (args.dbias) zero(args.dbias, p.bias_elems(), sizeof(float));
    return;
  }
  const WorkspaceLayout w = workspace_layout(p, c);
  auto* ws = static_cast<unsigned char*>(args.workspace);
  prm.o = args.o;
  prm.dout = args.dout;
  prm.lse = args.lse;
  prm.dq = args.dq;
  prm.dk = args.dk;
  prm.dv = args.dv;
  prm.lse_shift = reinterpret_cast<float*>(ws + w.lse_shift);
  prm.dsum = reinterpret_cast<float*>(ws + w.dsum);
  prm.dq_accum = reinterpret_cast<float*>(ws + w.accum);
  prm.deterministic = c.dq_strategy == DqStrategy::Partials;
  prm.bm_items = prm.a.has_block_mask ? bwd_bitmap_items(p, c) : 0;
  prm.accum_rows = accum_rows(prm.a);
  if (prm.a.has_bias) {
    // dS goes straight into dbias when the bias has the full [B, H, Sq, Sk] shape, else into the workspace and
    // is reduced over the broadcast dims afterwards. Elements no CTA visits (hidden by the window, outside a
    // sequence) stay 0.
    const bool direct = !bias_broadcast(p);
    prm.dbias = direct ? args.dbias : reinterpret_cast<float*>(ws + w.dbias_full);
    prm.dbias_stride_q = prm.a.seqlen_k;
    prm.dbias_stride_h = direct ? prm.a.bias_stride_h : int64_t{prm.a.seqlen_q} * prm.a.seqlen_k;
    prm.dbias_stride_b = direct ? prm.a.bias_stride_b : int64_t{prm.a.heads_q} * prm.dbias_stride_h;
    const size_t elems = direct ? static_cast<size_t>(p.bias_elems())
                                : static_cast<size_t>(p.batch * p.heads_q * p.seqlen_q * p.seqlen_k);
    zero(prm.dbias, static_cast<int64_t>(elems), sizeof(float));
  }
  launch(p, c, prm, args.dbias, stream);
}

}  // namespace flashsim::gpu::fa2
