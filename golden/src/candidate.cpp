#include "flashsim/golden/candidate.h"

#include <fmt/format.h>

#include <cmath>

#include "flashsim/error.h"
#include "flashsim/golden/case_file.h"
#include "flashsim/golden/files.h"
#include "flashsim/golden/safetensors.h"
#include "flashsim/golden/verify.h"

namespace flashsim::golden {

namespace fs = std::filesystem;

int64_t write_reference_candidate(const fs::path& golden, const fs::path& out, const CandidateOptions& opt) {
  const Manifest m = read_manifest(golden);
  std::error_code ec;
  if (fs::exists(out, ec) && !opt.force)
    throw InputError(out.string(), "already exists; pass --force to replace it");
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
    AttentionProblem p = lc.c.problem;
    p.dtype = opt.compute;
    AttentionInputs in = lc.inputs;
    bool finite = true;
    for (auto* t : {&in.q, &in.k, &in.v, &in.dout, &in.bias})
      for (double& x : *t) {
        x = round_to(x, opt.compute);  // the kernel receives the inputs in its own dtype
        finite = finite && std::isfinite(x);
      }
    SafetensorsFile f;
    f.metadata[kComputeDtypeKey] = std::string(dtype_name(opt.compute));
    if (finite) {
      ref::RunOptions run = opt.run;
      run.precision = ref::Precision::Emulated;
      const ref::ForwardResult fwd = ref::forward(p, in, opt.forward, opt.tile, run);
      const ref::Gradients g = ref::backward(p, in, fwd, opt.backward, opt.tile, run);
      const StDType st = st_dtype_of(opt.compute);
      f.add("o", Tensor::from_doubles(st, p.o_shape(), fwd.o));
      f.add("lse", Tensor::from_doubles(StDType::F32, p.lse_shape(), fwd.lse));
      f.add("dq", Tensor::from_doubles(st, p.q_shape(), g.dq));
      f.add("dk", Tensor::from_doubles(st, p.k_shape(), g.dk));
      f.add("dv", Tensor::from_doubles(st, p.v_shape(), g.dv));
      if (p.bias != BroadcastShape::None)
        f.add("dbias", Tensor::from_doubles(st, p.broadcast_shape(p.bias), g.dbias));
    }  // else: inputs overflow the dtype; an empty file (every output missing) is what such a kernel gives
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
