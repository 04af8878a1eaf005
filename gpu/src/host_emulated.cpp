// "host-emulated-v1": the CPU reference's emulated kernel pipeline (fp32 accumulation, P and dS rounded to the
// input dtype; FlashAttention-2's tiles) run on host buffers as a kernel version would run on device buffers.
// It stands in for a GPU where there is none, so that the harness (buffers in stored dtypes, NaN-filled
// outputs, the in-process verification) is tested in CI.
#include <cstring>

#include "flashsim/inputs.h"
#include "flashsim/ref/attention.h"
#include "stored.h"
#include "versions.h"

namespace flashsim::gpu {

namespace {

std::string unsupported(const AttentionProblem& p, const TileConfig&) {
  return p.dtype == DType::F64 ? "fp64 inputs (kernels compute in fp32, fp16 or bf16)" : "";
}

AttentionInputs read_inputs(const AttentionProblem& p, const DeviceArgs& a) {
  AttentionInputs in;
  in.q = from_stored(a.q, p.q_elems(), p.dtype);
  in.k = from_stored(a.k, p.k_elems(), p.dtype);
  in.v = from_stored(a.v, p.v_elems(), p.dtype);
  if (a.dout) in.dout = from_stored(a.dout, p.o_elems(), p.dtype);
  if (a.bias) in.bias = from_stored(a.bias, p.bias_elems(), p.dtype);
  if (a.mask) in.mask.assign(a.mask, a.mask + p.mask_elems());
  if (a.alibi_slopes) in.alibi_slopes = from_stored(a.alibi_slopes, p.heads_q, DType::F32);
  if (a.block_mask) in.block_mask.assign(a.block_mask, a.block_mask + p.block_mask_elems());
  return in;
}

ref::RunOptions emulated() {
  ref::RunOptions opt;
  opt.precision = ref::Precision::Emulated;
  return opt;
}

void forward(const AttentionProblem& p, const TileConfig& c, const DeviceArgs& a) {
  const auto r = ref::forward(p, read_inputs(p, a), Algorithm::Fa2, c, emulated());
  to_stored(r.o, a.o, p.dtype);
  to_stored(r.lse, a.lse, DType::F32);
  if (a.tile_counts) {  // the reference's loop skips tiles as a block-sparse kernel does
    a.tile_counts[0] += static_cast<unsigned long long>(r.tiles_computed);
    a.tile_counts[1] += static_cast<unsigned long long>(r.tiles_skipped);
  }
}

void backward(const AttentionProblem& p, const TileConfig& c, const DeviceArgs& a) {
  ref::ForwardResult fwd{from_stored(a.o, p.o_elems(), p.dtype),
                         from_stored(a.lse, p.lse_elems(), DType::F32)};
  const auto g = ref::backward(p, read_inputs(p, a), fwd, Algorithm::Fa2, c, emulated());
  to_stored(g.dq, a.dq, p.dtype);
  to_stored(g.dk, a.dk, p.dtype);
  to_stored(g.dv, a.dv, p.dtype);
  if (a.dbias) to_stored(g.dbias, a.dbias, DType::F32);
  if (a.tile_counts) {
    a.tile_counts[2] += static_cast<unsigned long long>(g.tiles_computed);
    a.tile_counts[3] += static_cast<unsigned long long>(g.tiles_skipped);
  }
}

}  // namespace

KernelVersion host_emulated_v1() {
  KernelVersion v;
  v.name = "host-emulated-v1";
  v.algorithm = Algorithm::Fa2;
  v.backend = Backend::Host;
  v.summary = "the CPU reference's emulated FA2 pipeline on host buffers: the harness's stand-in for a GPU";
  v.features = kFeatureBlockMask | kFeatureTileSkip;
  v.unsupported = unsupported;
  v.forward = forward;
  v.backward = backward;
  return v;
}

}  // namespace flashsim::gpu
