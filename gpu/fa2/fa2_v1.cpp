// fa2-v1: the registry entry of FlashAttention-2's forward (fa2_fwd_v1.cu) and backward (fa2_bwd_v1.cu).
#include "fa2_v1.h"

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
