// fa2-v1-heads-first: a planted traffic bug for `flashsim traffic compare`. fa2-v1's forward kernels, unchanged
// in name, numbers and tiles, but taking their work in launch order with the (batch, head) index fastest: the
// CTAs resident at once work on as many different heads, so no K/V block is still in L2 when the next CTA of
// its head needs it, and K/V are read from DRAM once per query block. Its outputs are correct (it passes the
// goldens); its DRAM reads are what `traffic compare` must flag (calibration h100.dram_interval).
#include "fa2_v1.h"
#include "planted_versions.h"

namespace flashsim::gpu {

KernelVersion fa2_v1_heads_first() {
  KernelVersion kv;
  kv.name = "fa2-v1-heads-first";
  kv.algorithm = Algorithm::Fa2;
  kv.backend = Backend::Cuda;
  kv.summary =
      "planted traffic bug: fa2-v1's forward with CTAs taking (batch, head) fastest, so K/V are re-read from "
      "DRAM per query block (forward only)";
  kv.sim_kernels = {"fwd_fa2_v1"};
  kv.unsupported = fa2::forward_unsupported;
  kv.launch_tile = fa2::launch_tile;
  kv.forward = fa2::forward_heads_first;
  return kv;
}

}  // namespace flashsim::gpu
