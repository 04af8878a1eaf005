// FlashAttention-2's forward (flash_fwd_kernel): a query block per CTA, key blocks streamed once with the
// online softmax, O written once.
#include "key_streaming.h"

namespace flashsim::sim::kernels {

namespace {
// flash_fwd_kernel<Flash_fwd_kernel_traits<kHeadDim, kBlockM, kBlockN, kNWarps, ...>>: Br, Bc, warps.
TileConfig from_fwd_traits(const std::smatch& m, const std::string& name) {
  TileConfig c;
  c.block_q = ncu_template_int(m[2], name);
  c.block_k = ncu_template_int(m[3], name);
  c.warps = static_cast<int>(ncu_template_int(m[4], name));
  return checked_ncu_config(c, name);
}
}  // namespace

KernelModel fa2_forward() {
  KernelModel m = key_streaming_model<1>(
      "fwd_fa2", Algorithm::Fa2, "FA2 forward: Q block resident, K/V blocks streamed, O and lse stored once");
  // Dao-AILab's kernel (PyTorch's SDPA flash backend builds the same), and ours (gpu/fa2/), whose first four
  // template arguments are the same: head dim, Br, Bc, warps.
  m.ncu_names = {
      {R"(flash_fwd_kernel<Flash_fwd_kernel_traits<\s*(\d+),\s*(\d+),\s*(\d+),\s*(\d+))", from_fwd_traits},
      {R"(flashsim_fa2_fwd_kernel<\s*(\d+),\s*(\d+),\s*(\d+),\s*(\d+))", from_fwd_traits}};
  return m;
}

}  // namespace flashsim::sim::kernels
