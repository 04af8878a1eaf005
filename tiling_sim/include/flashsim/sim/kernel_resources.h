#pragma once
// What ptxas gave each compiled fa2-v1 kernel (its registers a thread, from a table that also lists spills): the
// per-CTA model's occupancy takes these over its register estimate for a config fa2-v1 is compiled for. The
// tables are `bench/gpu/run.py resources`' CSV of the gpu/ build, one an architecture
// (families/fa2/resources/fa2_v1_<arch>.csv, embedded), regenerated with the kernels (ctest
// sim.kernel_resources_match_build compares them with the build's binary).
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <tuple>

#include "flashsim/sim/model.h"

namespace flashsim::sim {

struct CompiledKernel {
  int registers = 0;  // a thread's registers (ptxas)
};

class KernelResources {
 public:
  KernelResources() = default;
  // The CSV of gpu/tools/sass.py resources (header: pass, head_dim, block_q, block_k, warps, kernel_warps,
  // stages, dtype, pipeline, arch, registers, ...). InputError("resources") naming
  // the line on a malformed one; source names it in messages.
  static KernelResources parse(std::string_view csv, const std::string& source);
  static KernelResources from_file(const std::string& path);
  // The built-in table of an architecture ("sm_80", "sm_90"); empty when there is none.
  static KernelResources builtin(std::string_view arch);

  // The kernel fa2-v1 compiles for this pass, problem (head dim, dtype, score pipeline) and config (forward: Br,
  // Bc, warps, stages; backward: bwd Br, bwd Bc, warps); nullptr when it is not one of its instances.
  const CompiledKernel* find(Pass pass, const AttentionProblem& p, const TileConfig& c) const;
  bool empty() const { return kernels_.empty(); }
  size_t size() const { return kernels_.size(); }

 private:
  // (backward, head dim, Br, Bc, warps, stages, bf16, pipeline)
  using Key = std::tuple<bool, int64_t, int64_t, int64_t, int, int, bool, bool>;
  std::map<Key, CompiledKernel> kernels_;
};

}  // namespace flashsim::sim
