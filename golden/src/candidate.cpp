#include "flashsim/golden/candidate.h"

#include <fmt/format.h>

#include "flashsim/error.h"
#include "flashsim/golden/case_file.h"
#include "flashsim/golden/files.h"
#include "flashsim/golden/norm_case.h"
#include "flashsim/golden/safetensors.h"
#include "flashsim/golden/verify.h"

namespace flashsim::golden {

namespace fs = std::filesystem;

SafetensorsFile candidate_file(const AttentionProblem& p, const AttentionOutputs& out, DType compute) {
  SafetensorsFile f;
  f.metadata[kComputeDtypeKey] = std::string(dtype_name(compute));
  for (const auto& name : output_names(p)) {
    // lse stays fp32, as in FA2; dsinks too (the sinks are fp32 parameters)
    // an FP8 kernel stores o in bf16 (FlashAttention-3's)
    const StDType st = name == "lse" || name == "dsinks"
                           ? StDType::F32
                           : st_dtype_of(is_fp8(compute) ? DType::BF16 : compute);
    f.add(name, Tensor::from_doubles(st, output_shape(p, name), out.get(name)));
  }
  return f;
}

int64_t write_reference_candidate(const fs::path& golden, const fs::path& out, const CandidateOptions& opt) {
  const Manifest m = read_manifest(golden);
  refuse_existing(out, opt.force);
  TempDir tmp(out);  // renamed to out when every file is written: a failed run leaves nothing
  Progress pr;
  pr.total = static_cast<int64_t>(m.cases.size());
  int64_t written = 0;
  for (const auto& e : m.cases) {
    pr.current = e.name;
    if (opt.progress) opt.progress(pr);
    const fs::path gpath = golden / e.file;
    const LoadedCase lc =
        load_case(parse(read_case_file(gpath, opt.run.max_memory_bytes), gpath.string()), gpath.string());
    SafetensorsFile f;
    if (lc.c.norm) {  // a norm kernel's own order: warp-strided row sums, per-block row partials
      NamedOutputs got;
      if (norm_emulated(*lc.c.norm, lc.norm_inputs, opt.compute, ref::NormOrder::Tree, opt.run.threads, got))
        f = norm_candidate_file(*lc.c.norm, got, opt.compute);
    } else {
      AttentionOutputs got;
      if (compute_emulated(lc.c.problem, lc.inputs, opt.compute, opt.run, got, opt.forward, opt.backward,
                           opt.tile))
        f = candidate_file(lc.c.problem, got, opt.compute);
    }
    // the inputs overflow the dtype: an empty file (every output missing) is what such a kernel gives
    if (f.tensors.empty()) f.metadata[kComputeDtypeKey] = std::string(dtype_name(opt.compute));
    write_file(tmp.path() / e.file, serialize(f));
    ++written;
    ++pr.done;
  }
  tmp.commit(out);
  pr.current.clear();
  if (opt.progress) opt.progress(pr);
  return written;
}

}  // namespace flashsim::golden
