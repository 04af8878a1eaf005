#include "flashsim/golden/verify.h"

#include <fmt/format.h>
#include <fnmatch.h>

#include <algorithm>
#include <cmath>

#include "flashsim/error.h"
#include "flashsim/golden/case_file.h"
#include "flashsim/golden/files.h"
#include "flashsim/golden/manifest.h"
#include "flashsim/golden/safetensors.h"

namespace flashsim::golden {

namespace fs = std::filesystem;

namespace {

std::string multi_index(int64_t flat, const std::vector<int64_t>& shape) {
  if (flat < 0) return "-";
  std::vector<int64_t> idx(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    const int64_t n = std::max<int64_t>(shape[d], 1);
    idx[d] = flat % n;
    flat /= n;
  }
  return fmt::format("[{}]", fmt::join(idx, ","));
}

bool selected(const std::string& name, const std::vector<std::string>& globs) {
  if (globs.empty()) return true;
  return std::any_of(globs.begin(), globs.end(),
                     [&](const std::string& g) { return ::fnmatch(g.c_str(), name.c_str(), 0) == 0; });
}

}  // namespace

VerifyReport verify_suite(const fs::path& golden, const fs::path& candidate, const VerifyOptions& opt) {
  const Manifest m = read_manifest(golden);
  std::error_code ec;
  if (!fs::is_directory(candidate, ec))
    throw InputError(candidate.string(), "is not a folder of candidate files");
  for (const auto& o : opt.outputs)
    if (o != "o" && o != "lse" && o != "dq" && o != "dk" && o != "dv" && o != "dbias")
      throw InputError("outputs", fmt::format("unknown output '{}' (o lse dq dk dv dbias)", o));
  VerifyReport r;
  int64_t matched = 0;
  for (const auto& e : m.cases) {
    if (!selected(e.name, opt.cases)) continue;
    ++matched;
    const fs::path gpath = golden / e.file;
    const std::vector<uint8_t> gbytes = read_case_file(gpath, opt.max_memory_bytes);
    if (sha256_hex(gbytes) != e.sha256)
      throw InputError(gpath.string(), "sha256 does not match the manifest (the golden file was changed)");
    const LoadedCase lc = load_case(parse(gbytes, gpath.string()), gpath.string());
    const AttentionProblem& p = lc.c.problem;

    CaseVerdict cv;
    cv.name = e.name;
    cv.file = e.file;
    const fs::path cpath = candidate / e.file;
    std::optional<SafetensorsFile> cand;
    if (fs::exists(cpath, ec)) cand = parse(read_case_file(cpath, opt.max_memory_bytes), cpath.string());

    DType compute = p.dtype;
    if (cand) {
      auto it = cand->metadata.find(kComputeDtypeKey);
      if (it != cand->metadata.end()) {
        try {
          compute = parse_dtype(it->second);
        } catch (const InputError&) {
          throw InputError(cpath.string(), fmt::format("__metadata__[\"{}\"] is '{}', not a dtype",
                                                       kComputeDtypeKey, it->second));
        }
      }
    }
    if (opt.compute) compute = *opt.compute;
    cv.compute_dtype = std::string(dtype_name(compute));
    const auto row = lc.tolerances.find(cv.compute_dtype);

    std::vector<std::string> names = output_names(p);
    if (!opt.outputs.empty()) {
      std::vector<std::string> keep;
      for (const auto& n : names)
        if (std::find(opt.outputs.begin(), opt.outputs.end(), n) != opt.outputs.end()) keep.push_back(n);
      names = keep;
    }
    for (const auto& name : names) {
      OutputVerdict ov;
      ov.output = name;
      const Tensor* t = cand ? cand->find(name) : nullptr;
      const std::vector<int64_t> shape = output_shape(p, name);
      if (!cand) {
        ov.note = "candidate file missing";
      } else if (!t) {
        ov.note = "output missing from the candidate file";
      } else if (!st_is_float(t->dtype)) {
        throw InputError(cpath.string(), fmt::format("output '{}' is {}, not a floating-point dtype", name,
                                                     st_dtype_name(t->dtype)));
      } else if (t->shape != shape) {
        throw InputError(cpath.string(), fmt::format("output '{}' has shape [{}], the case needs [{}]", name,
                                                     fmt::join(t->shape, ", "), fmt::join(shape, ", ")));
      } else {
        ov.present = true;
        ov.candidate_dtype = std::string(st_dtype_name(t->dtype));
        const std::vector<double> got = t->to_doubles();
        const std::vector<double>& exact = lc.outputs.at(name);
        ov.stats = error_stats(exact, got);
        ov.worst_index = multi_index(ov.stats.worst, shape);
        if (row == lc.tolerances.end()) {
          ov.note = fmt::format(
              "the suite has no tolerance for compute dtype {} (the emulated {} pipeline overflows on this "
              "case)",
              cv.compute_dtype, cv.compute_dtype);
        } else {
          const OutputTolerance& tol = row->second.at(name);
          const DType storage = float_dtype_of(t->dtype);
          ov.bound_abs = tol.bound_max_abs(storage);
          ov.bound_rel = tol.bound_rel_l2(storage);
          ov.mismatches = count_above(exact, got, ov.bound_abs);
          const bool rel_ok = !ov.stats.rel_defined || ov.stats.rel_l2 <= ov.bound_rel;
          ov.pass = ov.stats.nonfinite == 0 && ov.stats.inf_mismatch == 0 &&
                    ov.stats.max_abs <= ov.bound_abs && rel_ok;
          if (ov.stats.nonfinite > 0)
            ov.note = fmt::format("{} NaN/Inf where the exact value is finite", ov.stats.nonfinite);
          else if (ov.stats.inf_mismatch > 0)
            ov.note = fmt::format("{} elements not -inf where the exact value is", ov.stats.inf_mismatch);
          else if (ov.stats.max_abs > ov.bound_abs)
            ov.note = "max abs error over bound";
          else if (!rel_ok)
            ov.note = "relative L2 error over bound";
        }
      }
      ++r.outputs_checked;
      if (!ov.pass) ++r.outputs_failed;
      cv.outputs.push_back(ov);
    }
    cv.pass =
        std::all_of(cv.outputs.begin(), cv.outputs.end(), [](const OutputVerdict& o) { return o.pass; });
    if (!cv.pass) ++r.cases_failed;
    r.cases.push_back(std::move(cv));
  }
  if (matched == 0)
    throw InputError("case",
                     opt.cases.empty() ? "the suite has no cases" : "no case of the suite matches --case");
  return r;
}

nlohmann::ordered_json to_json(const VerifyReport& r) {
  nlohmann::ordered_json j;
  j["ok"] = r.pass();
  j["cases_checked"] = r.cases.size();
  j["cases_failed"] = r.cases_failed;
  j["outputs_checked"] = r.outputs_checked;
  j["outputs_failed"] = r.outputs_failed;
  j["cases"] = nlohmann::ordered_json::array();
  auto num = [](double x) -> nlohmann::ordered_json {
    if (std::isfinite(x)) return x;
    return std::isnan(x) ? "nan" : (x > 0 ? "inf" : "-inf");
  };
  for (const auto& c : r.cases) {
    nlohmann::ordered_json cj;
    cj["name"] = c.name;
    cj["file"] = c.file;
    cj["compute_dtype"] = c.compute_dtype;
    cj["ok"] = c.pass;
    cj["outputs"] = nlohmann::ordered_json::array();
    for (const auto& o : c.outputs) {
      cj["outputs"].push_back(
          {{"output", o.output},
           {"present", o.present},
           {"candidate_dtype", o.candidate_dtype},
           {"max_abs", num(o.stats.max_abs)},
           {"rel_l2", o.stats.rel_defined ? num(o.stats.rel_l2) : nlohmann::ordered_json(nullptr)},
           {"bound_max_abs", num(o.bound_abs)},
           {"bound_rel_l2", num(o.bound_rel)},
           {"worst_index", o.worst_index},
           {"mismatches", o.mismatches},
           {"nonfinite", o.stats.nonfinite + o.stats.inf_mismatch},
           {"ok", o.pass},
           {"note", o.note}});
    }
    j["cases"].push_back(cj);
  }
  return j;
}

}  // namespace flashsim::golden
