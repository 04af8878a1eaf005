// The harness (harness.h): suite -> cases -> each version's launches -> verify_case.
#include "flashsim/gpu/harness.h"

#include <cuda_runtime.h>
#include <fmt/format.h>
#include <fnmatch.h>

#include <algorithm>
#include <cstring>

#include "case_buffers.h"
#include "flashsim/error.h"
#include "flashsim/golden/manifest.h"
#include "flashsim/gpu/params.h"
#include "flashsim/ref/attention.h"
#include "stored.h"

namespace flashsim::gpu {

namespace {

golden::CandidateTensor downloaded(DeviceMemory& mem, const void* src, const AttentionProblem& p,
                                   const std::string& name, DType t) {
  golden::CandidateTensor c;
  c.shape = golden::output_shape(p, name);
  int64_t n = 1;
  for (auto s : c.shape) n *= s;
  const auto bytes = mem.download(src, static_cast<size_t>(n) * static_cast<size_t>(dtype_bytes(t)));
  c.values = from_stored(bytes.data(), n, t);
  c.storage = t;
  return c;
}

bool selected(const std::string& name, const std::vector<std::string>& globs) {
  return globs.empty() || std::any_of(globs.begin(), globs.end(), [&](const std::string& g) {
           return ::fnmatch(g.c_str(), name.c_str(), 0) == 0;
         });
}

}  // namespace

bool cuda_available(std::string* why) {
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess || n == 0) {
    if (why) *why = e != cudaSuccess ? cudaGetErrorString(e) : "no CUDA device";
    return false;
  }
  return true;
}

std::string why_no_backward(const KernelVersion& v, const AttentionProblem& p, const TileConfig& c) {
  if (!v.backward) return "forward-only version";
  return v.backward_unsupported ? v.backward_unsupported(p, c) : "";
}

golden::Outputs run_case(const KernelVersion& v, const golden::LoadedCase& lc, const TileConfig& c) {
  return run_case(v, lc, c, c);
}

golden::Outputs run_case(const KernelVersion& v, const golden::LoadedCase& lc, const TileConfig& fwd,
                         const TileConfig& bwd, TileCounts* counts) {
  const AttentionProblem& p = lc.c.problem;
  const AttentionInputs& in = lc.inputs;
  const bool backward = why_no_backward(v, p, bwd).empty();
  DeviceMemory mem(v.backend);
  DeviceArgs a = upload_case(mem, p, in, v, bwd, backward);
  constexpr size_t kCountBytes = 4 * sizeof(unsigned long long);
  if (counts && p.block_mask != BroadcastShape::None && (v.features & kFeatureTileSkip)) {
    a.tile_counts = static_cast<unsigned long long*>(mem.alloc(kCountBytes));
    mem.fill(a.tile_counts, 0, kCountBytes);
  }
  v.forward(p, fwd, a);
  if (backward) v.backward(p, bwd, a);
  mem.synchronize();
  if (a.tile_counts) {
    const std::vector<uint8_t> bytes = mem.download(a.tile_counts, kCountBytes);
    unsigned long long c[4];
    std::memcpy(c, bytes.data(), kCountBytes);
    for (int i = 0; i < 4; ++i) (*counts)[i] = static_cast<int64_t>(c[i]);
  }

  golden::Outputs out;
  out.compute = p.dtype;  // kernels compute in their input dtype
  out.tensors["o"] = downloaded(mem, a.o, p, "o", p.dtype);
  out.tensors["lse"] = downloaded(mem, a.lse, p, "lse", DType::F32);
  if (backward) {
    out.tensors["dq"] = downloaded(mem, a.dq, p, "dq", p.dtype);
    out.tensors["dk"] = downloaded(mem, a.dk, p, "dk", p.dtype);
    out.tensors["dv"] = downloaded(mem, a.dv, p, "dv", p.dtype);
    if (a.dbias) out.tensors["dbias"] = downloaded(mem, a.dbias, p, "dbias", DType::F32);
  }
  return out;
}

std::vector<golden::OutputVerdict> tile_count_verdicts(const golden::LoadedCase& lc, const TileConfig& fwd,
                                                       const TileConfig& bwd, bool backward,
                                                       const TileCounts& counts) {
  const AttentionProblem& p = lc.c.problem;
  const ref::ForwardResult f = ref::forward(p, lc.inputs, Algorithm::Fa2, fwd);
  const auto verdict = [](const char* name, int64_t computed, int64_t skipped, int64_t ref_computed,
                          int64_t ref_skipped) {
    golden::OutputVerdict o;
    o.output = name;
    o.present = true;
    o.pass = computed == ref_computed && skipped == ref_skipped;
    o.summary = fmt::format("{} of {} tiles skipped (reference {} of {})", skipped, computed + skipped,
                            ref_skipped, ref_computed + ref_skipped);
    if (!o.pass) o.note = "tile counts differ from the reference's";
    return o;
  };
  std::vector<golden::OutputVerdict> out{
      verdict("tiles_fwd", counts[0], counts[1], f.tiles_computed, f.tiles_skipped)};
  if (backward) {
    const ref::Gradients g = ref::backward(p, lc.inputs, f, Algorithm::Fa2, bwd);
    out.push_back(verdict("tiles_bwd", counts[2], counts[3], g.tiles_computed, g.tiles_skipped));
  }
  return out;
}

std::vector<VersionReport> check(const CheckOptions& opt) {
  std::vector<const KernelVersion*> versions;
  std::string why_no_cuda;
  const bool cuda = cuda_available(&why_no_cuda);
  if (opt.kernels.empty()) {
    for (const auto& v : kernel_versions())
      if (v.backend == Backend::Host || cuda) versions.push_back(&v);
  } else {
    for (const auto& name : opt.kernels) {
      const auto& v = kernel_version(name);
      if (v.backend == Backend::Cuda && !cuda)
        throw InputError("kernel", fmt::format("{} runs on a CUDA device and none is usable here ({})", name,
                                               why_no_cuda));
      versions.push_back(&v);
    }
  }
  const golden::Manifest m = golden::read_manifest(opt.golden);
  std::vector<VersionReport> reports;
  for (const auto* v : versions) reports.push_back({v, {}, {}, {}});
  for (const auto& e : m.cases) {
    if (!selected(e.name, opt.cases)) continue;
    if (!e.op.empty()) {  // a norm case: our kernels are attention kernels
      for (auto& r : reports)
        r.skipped.emplace_back(e.name, fmt::format("op {}: not an attention case", e.op_name()));
      continue;
    }
    const golden::LoadedCase lc = golden::read_golden_case(opt.golden, e, opt.max_memory_bytes);
    for (auto& r : reports) {
      const TileConfig c = tile_for(*r.version, lc.c.problem,
                                    opt.tiles_for == TilePasses::Backward ? TileOverride{} : opt.tiles);
      const TileConfig cb =
          tile_for(*r.version, lc.c.problem,
                   opt.tiles_for == TilePasses::Forward ? TileOverride{} : opt.tiles, Pass::Backward);
      std::string skip = missing_gpu_feature(lc.c.problem, r.version->features);
      if (skip.empty() && r.version->unsupported) skip = r.version->unsupported(lc.c.problem, c);
      if (!skip.empty()) {
        r.skipped.emplace_back(e.name, skip);
        continue;
      }
      golden::VerifyOptions vo;
      if (const std::string why = why_no_backward(*r.version, lc.c.problem, cb); !why.empty()) {
        vo.outputs = {"o", "lse"};
        if (r.version->backward) r.forward_only.emplace_back(e.name, why);
      }
      TileCounts counts{};
      golden::CaseVerdict cv = golden::verify_case(lc, run_case(*r.version, lc, c, cb, &counts), vo);
      cv.file = e.file;
      if (lc.c.problem.block_mask != BroadcastShape::None && (r.version->features & kFeatureTileSkip)) {
        const bool backward = why_no_backward(*r.version, lc.c.problem, cb).empty();
        for (golden::OutputVerdict& o : tile_count_verdicts(lc, c, cb, backward, counts)) {
          cv.pass = cv.pass && o.pass;
          cv.outputs.push_back(std::move(o));
        }
      }
      r.report.outputs_checked += static_cast<int64_t>(cv.outputs.size());
      for (const auto& o : cv.outputs) r.report.outputs_failed += o.pass ? 0 : 1;
      r.report.cases_failed += cv.pass ? 0 : 1;
      r.report.cases.push_back(std::move(cv));
    }
  }
  return reports;
}

}  // namespace flashsim::gpu
