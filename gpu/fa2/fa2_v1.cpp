// fa2-v1: the registry entry of FlashAttention-2's forward (fa2_fwd_v1.cu) and backward (fa2_bwd_v1.cu).
#include "fa2_v1.h"

#include <cstdint>
#include <string>

#include "flashsim/error.h"
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
  require(!p.varlen() || (args.cu_seqlens_q && args.cu_seqlens_k), "cu_seqlens_q, cu_seqlens_k");
  require_aligned(args.q, "q");
  require_aligned(args.k, "k");
  require_aligned(args.v, "v");
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
  kv.sim_kernels = {"fwd_fa2", "bwd_dot_do_o", "bwd_dq_dk_dv_group", "bwd_convert_dq"};
  kv.unsupported = fa2::forward_unsupported;
  kv.backward_unsupported = fa2::backward_unsupported;
  kv.workspace_bytes = fa2::backward_workspace_bytes;
  kv.forward = fa2::forward;
  kv.backward = fa2::backward;
  return kv;
}

}  // namespace flashsim::gpu
