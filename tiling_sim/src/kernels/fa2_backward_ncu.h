#pragma once
// FlashAttention-2's backward kernels, as ncu names them: <kernel><..., Flash_bwd_kernel_traits<kHeadDim,
// kBlockM, kBlockN, kNWarps, ...>>, and flashsim's own (gpu/fa2, fa2-v1), which move the same bytes:
// <kernel><kHeadDim, kBlockM, kBlockN, kNWarps, ...>; the backward launches twice the forward's warps.
#include "kernels.h"

namespace flashsim::sim::kernels {

inline TileConfig from_bwd_traits(const std::smatch& m, const std::string& name) {
  TileConfig c;
  c.bwd_block_q = ncu_template_int(m[2], name);
  c.bwd_block_k = ncu_template_int(m[3], name);
  c.warps = static_cast<int>(ncu_template_int(m[4], name) / 2);  // the launches double the forward warps
  return checked_ncu_config(c, name);
}

// The pattern of one backward kernel: its name, then its traits' first four arguments.
#define FLASHSIM_FA2_BWD_NCU_PATTERN(kernel) \
  kernel R"(.*Flash_bwd_kernel_traits<\s*(\d+),\s*(\d+),\s*(\d+),\s*(\d+))"

// flashsim's own kernel of the same job (gpu/fa2/fa2_bwd_*.cuh): its template arguments start alike.
#define FLASHSIM_GPU_BWD_NCU_PATTERN(kernel) kernel R"(<\s*(\d+),\s*(\d+),\s*(\d+),\s*(\d+))"

// A model of one of FA2's three backward kernels, answering to FA2's ncu name pattern and (optionally)
// flashsim's.
inline KernelModel fa2_backward_model(std::string name, std::string summary, const char* ncu_pattern,
                                      const char* flashsim_pattern = nullptr) {
  KernelModel m;
  m.name = std::move(name);
  m.algorithm = Algorithm::Fa2;
  m.pass = Pass::Backward;
  m.summary = std::move(summary);
  m.ncu_names = {{ncu_pattern, from_bwd_traits, 1, 0, 0, true}};  // group 1: the head dim (FA2's: padded)
  if (flashsim_pattern) m.ncu_names.push_back({flashsim_pattern, from_bwd_traits, 1});
  return m;
}

// Threads of FA2's backward kernels: twice the forward's warps.
inline int fa2_backward_threads(const TileConfig& c) {
  return 2 * c.warps * 32;
}

}  // namespace flashsim::sim::kernels
