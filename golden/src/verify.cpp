#include "flashsim/golden/verify.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <fnmatch.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <functional>
#include <numeric>
#include <set>
#include <string_view>

#include "flashsim/error.h"
#include "flashsim/golden/files.h"
#include "flashsim/golden/manifest.h"
#include "flashsim/golden/safetensors.h"
#include "flashsim/nearest.h"

namespace flashsim::golden {

namespace fs = std::filesystem;

namespace {

bool selected(const std::string& name, const std::vector<std::string>& globs) {
  if (globs.empty()) return true;
  return std::any_of(globs.begin(), globs.end(),
                     [&](const std::string& g) { return ::fnmatch(g.c_str(), name.c_str(), 0) == 0; });
}

// Every op's outputs: attention's, then the norms'.
constexpr std::string_view kOutputNames[] = {"o", "lse", "dq",   "dk",   "dv", "dbias",   "dsinks",
                                             "y", "h",   "rstd", "mean", "dx", "dweight", "dresidual"};

void check_output_names(const std::vector<std::string>& names) {
  for (const auto& o : names)
    if (std::find(std::begin(kOutputNames), std::end(kOutputNames), o) == std::end(kOutputNames))
      throw InputError(
          "outputs",
          fmt::format("unknown output '{}' (attention: o lse dq dk dv dbias dsinks; norms: y h rstd mean dx "
                      "dweight dbias dresidual)",
                      o));
}

// The case's outputs in file order, only those in `only` when it is not empty.
std::vector<std::string> selected_outputs(const GoldenCase& c, const std::vector<std::string>& only) {
  std::vector<std::string> names = output_names(c);
  if (!only.empty())
    std::erase_if(names,
                  [&](const std::string& n) { return std::find(only.begin(), only.end(), n) == only.end(); });
  return names;
}

void check_shape(const std::string& source, const std::string& name, const std::vector<int64_t>& shape,
                 const std::vector<int64_t>& needed) {
  if (shape != needed)
    throw InputError(source, fmt::format("output '{}' has shape [{}], the case needs [{}]", name,
                                         fmt::join(shape, ", "), fmt::join(needed, ", ")));
}

// One letter per axis of an output's layout (problem.h), without and with variable lengths.
std::string_view output_axes(const std::string& name, size_t rank) {
  struct Layout {
    std::string_view name, axes;
  };
  static constexpr Layout kLayouts[] = {{"o", "bshd"},
                                        {"o", "thd"},
                                        {"dq", "bshd"},
                                        {"dq", "thd"},
                                        {"dk", "bshd"},
                                        {"dk", "thd"},
                                        {"dv", "bshd"},
                                        {"dv", "thd"},
                                        {"lse", "bhs"},
                                        {"lse", "ht"},
                                        {"dbias", "bhqk"},
                                        {"dsinks", "h"},
                                        // norms: rows x hidden
                                        {"y", "rh"},
                                        {"h", "rh"},
                                        {"dx", "rh"},
                                        {"dresidual", "rh"},
                                        {"rstd", "r"},
                                        {"mean", "r"},
                                        {"dweight", "h"},
                                        {"dbias", "h"}};
  for (const auto& l : kLayouts)
    if (name == l.name && l.axes.size() == rank) return l.axes;
  throw InputError("candidate",
                   fmt::format("output '{}' with {} dims is not an output of any op", name, rank));
}

// "[b1,s37,h0,d27]": the row-major flat index split over the shape, flat = (i0 n1 + i1) n2 + i2 ...
std::string worst_index(int64_t flat, const std::vector<int64_t>& shape, std::string_view axes) {
  if (flat < 0) return "-";
  std::vector<std::string> parts(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    const int64_t n = std::max<int64_t>(shape[d], 1);
    parts[d] = fmt::format("{}{}", axes[d], flat % n);
    flat /= n;
  }
  return fmt::format("[{}]", fmt::join(parts, ","));
}

// {"text": "[b1,s37,h0,d27]", "flat": 123, "coords": {"b": 1, "s": 37, ...}, "nonfinite": false}; null
// without a worst element.
nlohmann::ordered_json worst_index_json(const OutputVerdict& o) {
  if (o.worst_flat < 0) return nullptr;
  nlohmann::ordered_json coords = nlohmann::ordered_json::object();
  for (const auto& [axis, i] : o.worst_coords) coords[std::string(1, axis)] = i;
  return {
      {"text", o.worst_index}, {"flat", o.worst_flat}, {"coords", coords}, {"nonfinite", o.worst_nonfinite}};
}

// The errors of `got` against `exact`, before any bound.
OutputVerdict measure(const std::string& name, const std::vector<double>& exact,
                      const std::vector<int64_t>& shape, const CandidateTensor& got) {
  check_shape("candidate", name, got.shape, shape);
  const std::string_view axes = output_axes(name, shape.size());
  const int64_t n = std::accumulate(shape.begin(), shape.end(), int64_t{1}, std::multiplies<>());
  if (std::ssize(exact) != n || std::ssize(got.values) != n)
    throw InputError("candidate",
                     fmt::format("output '{}': {} exact and {} candidate values, its shape holds {}", name,
                                 exact.size(), got.values.size(), n));
  OutputVerdict v;
  v.output = name;
  v.present = true;
  v.candidate_dtype = std::string(safetensors_name(got.storage));
  v.stats = error_stats(exact, got.values);
  // a NaN or Inf where the exact value is finite is the worst error there is: point at it
  v.worst_nonfinite = v.stats.first_nonfinite >= 0;
  v.worst_flat = v.worst_nonfinite ? v.stats.first_nonfinite : v.stats.worst;
  v.worst_index = worst_index(v.worst_flat, shape, axes);
  for (int64_t flat = v.worst_flat, d = static_cast<int64_t>(shape.size()) - 1; v.worst_flat >= 0 && d >= 0;
       --d) {
    const int64_t extent = std::max<int64_t>(shape[static_cast<size_t>(d)], 1);
    v.worst_coords.insert(v.worst_coords.begin(), {axes[static_cast<size_t>(d)], flat % extent});
    flat /= extent;
  }
  return v;
}

std::string failure_note(const ErrorStats& s, double bound_abs, bool rel_ok) {
  if (s.nonfinite > 0) return fmt::format("{} NaN/Inf where the exact value is finite", s.nonfinite);
  if (s.inf_mismatch > 0) return fmt::format("{} elements not -inf where the exact value is", s.inf_mismatch);
  if (s.max_abs > bound_abs) return "max abs error over bound";
  if (!rel_ok) return "relative L2 error over bound";
  return "";
}

// The bounds for the candidate's storage dtype, and the pass rule: no NaN/Inf where exact is finite, -inf
// where it is -inf, max|got - exact| <= bound_abs, relL2 <= bound_rel where relL2 is defined.
void judge(OutputVerdict& v, const std::vector<double>& exact, const CandidateTensor& got,
           const OutputTolerance& tol) {
  v.bound_abs = tol.bound_max_abs(got.storage, got.scale);
  v.bound_rel = tol.bound_rel_l2(got.storage);
  v.zero_bound = tol.magnitude == 0 && tol.emulated_max_abs == 0;  // bound_abs = 2 ulp_S(0)
  v.mismatches = count_above(exact, got.values, v.bound_abs);
  const ErrorStats& s = v.stats;
  const bool rel_ok = !s.rel_defined || s.rel_l2 <= v.bound_rel;
  v.pass = s.nonfinite == 0 && s.inf_mismatch == 0 && s.max_abs <= v.bound_abs && rel_ok;
  v.note = failure_note(s, v.bound_abs, rel_ok);
}

// Output `name` of the case: absent, without a tolerance for `compute`, or judged.
OutputVerdict check_output(const LoadedCase& lc, const Outputs& out, const std::string& name,
                           const std::string& compute) {
  const auto got = out.tensors.find(name);
  if (got == out.tensors.end()) {
    OutputVerdict v;
    v.output = name;
    v.note = "output missing from the candidate file";
    return v;
  }
  const std::vector<int64_t> shape = output_shape(lc.c, name);
  const std::vector<double>& exact = lc.outputs.at(name);
  const auto row = lc.tolerances.find(compute);
  if (row != lc.tolerances.end()) return verify_output(name, exact, shape, got->second, row->second.at(name));
  OutputVerdict v = measure(name, exact, shape, got->second);
  v.note = fmt::format(
      "the suite has no tolerance for compute dtype {} (the emulated {} pipeline overflows on this case)",
      compute, compute);
  return v;
}

// The compute dtype a candidate file states in its metadata, if it does.
std::optional<DType> stated_compute(const SafetensorsFile& f, const std::string& source) {
  const auto it = f.metadata.find(kComputeDtypeKey);
  if (it == f.metadata.end()) return std::nullopt;
  try {
    return parse_dtype(it->second);
  } catch (const InputError&) {
    throw InputError(source,
                     fmt::format("__metadata__[\"{}\"] is '{}', not a dtype", kComputeDtypeKey, it->second));
  }
}

// The scale a candidate file states for output `name` (kScaleKeyPrefix), 1 where it states none.
double stated_scale(const SafetensorsFile& f, const std::string& name, const std::string& source) {
  const auto it = f.metadata.find(kScaleKeyPrefix + name);
  if (it == f.metadata.end()) return 1;
  double v = 0;
  const auto [end, ec] = std::from_chars(it->second.data(), it->second.data() + it->second.size(), v);
  if (ec != std::errc{} || end != it->second.data() + it->second.size() || !std::isfinite(v) || v <= 0)
    throw InputError(source, fmt::format("__metadata__[\"{}{}\"] is '{}', not a positive number",
                                         kScaleKeyPrefix, name, it->second));
  return v;
}

// The outputs `names` of a candidate file, in memory; nullopt when the file does not exist. Throws InputError
// for a malformed file or a named output of a non-float dtype or the wrong shape.
std::optional<Outputs> read_candidate(const fs::path& path, const GoldenCase& c,
                                      const std::vector<std::string>& names, int64_t max_memory_bytes) {
  std::error_code ec;
  if (!fs::exists(path, ec)) return std::nullopt;
  const std::string source = path.string();
  const SafetensorsFile f = parse(read_case_file(path, max_memory_bytes), source);
  Outputs out;
  out.compute = stated_compute(f, source);
  for (const auto& name : names) {
    const Tensor* t = f.find(name);
    if (!t) continue;
    if (!st_is_float(t->dtype))
      throw InputError(source, fmt::format("output '{}' is {}, not a floating-point dtype", name,
                                           st_dtype_name(t->dtype)));
    check_shape(source, name, t->shape, output_shape(c, name));
    const double scale = stated_scale(f, name, source);
    std::vector<double> values = t->to_doubles();
    for (double& v : values) v /= scale;  // the file holds value x scale
    out.tensors[name] = {std::move(values), t->shape, float_dtype_of(t->dtype), scale};
  }
  return out;
}

// One case of the suite: its golden file against its candidate file (missing: every output fails so);
// nullopt when the case has none of the outputs opt.outputs names (a norm case for o,lse).
std::optional<CaseVerdict> verify_entry(const fs::path& golden, const fs::path& candidate,
                                        const ManifestEntry& e, const VerifyOptions& opt) {
  const LoadedCase lc = read_golden_case(golden, e, opt.max_memory_bytes);
  const std::vector<std::string> names = selected_outputs(lc.c, opt.outputs);
  if (names.empty()) return std::nullopt;
  const std::optional<Outputs> cand = read_candidate(candidate / e.file, lc.c, names, opt.max_memory_bytes);
  const Outputs none{};
  CaseVerdict cv = verify_case(lc, cand ? *cand : none, opt);
  if (!cand)
    for (auto& o : cv.outputs) o.note = fmt::format("candidate file missing: {}", e.file);
  cv.name = e.name;  // as the manifest lists it
  cv.file = e.file;
  return cv;
}

nlohmann::ordered_json num(double x) {
  if (std::isfinite(x)) return x;
  return std::isnan(x) ? "nan" : (x > 0 ? "inf" : "-inf");
}

nlohmann::ordered_json output_json(const OutputVerdict& o) {
  const nlohmann::ordered_json undefined(nullptr);  // relL2 and its bound where relL2 does not apply
  return {{"output", o.output},
          {"present", o.present},
          {"candidate_dtype", o.candidate_dtype},
          {"max_abs", num(o.stats.max_abs)},
          {"rel_l2", o.stats.rel_defined ? num(o.stats.rel_l2) : undefined},
          {"bound_max_abs", num(o.bound_abs)},
          {"bound_rel_l2", o.stats.rel_defined ? num(o.bound_rel) : undefined},
          {"worst_index", worst_index_json(o)},
          {"mismatches", o.mismatches},
          {"nonfinite", o.stats.nonfinite + o.stats.inf_mismatch},
          {"ok", o.pass},
          {"note", o.note},
          {"summary", o.summary}};
}

}  // namespace

void add_case(VerifyReport& r, CaseVerdict cv) {
  r.outputs_checked += std::ssize(cv.outputs);
  r.outputs_failed +=
      std::count_if(cv.outputs.begin(), cv.outputs.end(), [](const auto& o) { return !o.pass; });
  if (!cv.pass) ++r.cases_failed;
  r.cases.push_back(std::move(cv));
}

SafetensorsFile read_golden_file(const fs::path& golden, const ManifestEntry& e, int64_t max_memory_bytes) {
  const fs::path path = golden / e.file;
  const std::vector<uint8_t> bytes = read_case_file(path, max_memory_bytes);
  if (sha256_hex(bytes) != e.sha256)
    throw InputError(path.string(), "sha256 does not match the manifest (the golden file was changed)");
  return parse(bytes, path.string());
}

LoadedCase read_golden_case(const fs::path& golden, const ManifestEntry& e, int64_t max_memory_bytes) {
  return load_case(read_golden_file(golden, e, max_memory_bytes), (golden / e.file).string());
}

OutputVerdict verify_output(const std::string& name, const std::vector<double>& exact,
                            const std::vector<int64_t>& shape, const CandidateTensor& got,
                            const OutputTolerance& tol) {
  OutputVerdict v = measure(name, exact, shape, got);
  judge(v, exact, got, tol);
  return v;
}

CaseVerdict verify_case(const LoadedCase& lc, const Outputs& out, const VerifyOptions& opt) {
  check_output_names(opt.outputs);
  const DType case_dtype = lc.c.norm ? lc.c.norm->dtype : lc.c.problem.dtype;
  CaseVerdict cv;
  cv.name = lc.c.name;
  cv.compute_dtype = std::string(dtype_name(opt.compute.value_or(out.compute.value_or(case_dtype))));
  const std::vector<std::string> names = selected_outputs(lc.c, opt.outputs);
  if (names.empty())  // only outputs of another op asked for: nothing would be checked
    throw InputError("outputs",
                     fmt::format("case {} ({}) has none of {} (it has {})", lc.c.name, op_name(lc.c),
                                 fmt::join(opt.outputs, ","), fmt::join(output_names(lc.c), " ")));
  for (const auto& name : names) cv.outputs.push_back(check_output(lc, out, name, cv.compute_dtype));
  cv.pass = std::all_of(cv.outputs.begin(), cv.outputs.end(), [](const OutputVerdict& o) { return o.pass; });
  return cv;
}

VerifyReport verify_suite(const fs::path& golden, const fs::path& candidate, const VerifyOptions& opt) {
  const Manifest m = read_manifest(golden);
  std::error_code ec;
  if (!fs::is_directory(candidate, ec))
    throw InputError(candidate.string(), "is not a folder of candidate files");
  check_output_names(opt.outputs);
  VerifyReport r;
  for (const auto& e : m.cases)
    if (selected(e.name, opt.cases)) {
      if (auto cv = verify_entry(golden, candidate, e, opt))
        add_case(r, std::move(*cv));
      else
        ++r.cases_skipped;
    }
  if (opt.cases.empty()) {  // candidate files named like no case: a misnamed output of the kernel's harness
    std::set<std::string> known;
    for (const auto& e : m.cases) known.insert(e.file);
    for (const auto& f : fs::directory_iterator(candidate, ec))
      if (f.path().extension() == ".safetensors" && !known.count(f.path().filename().string()))
        r.stray_files.push_back(f.path().filename().string());
    std::sort(r.stray_files.begin(), r.stray_files.end());
  }
  if (r.cases.empty() && !opt.cases.empty() && r.cases_skipped == 0) {  // a misspelled name: the nearest case
    std::vector<std::string> names;
    for (const auto& e : m.cases) names.push_back(e.name);
    std::string close;
    for (const auto& g : opt.cases)
      if (const auto n = nearest(g, names)) close += fmt::format("{}'{}'", close.empty() ? "" : " or ", *n);
    throw InputError("case",
                     fmt::format("no case of the suite matches --case {}{}", fmt::join(opt.cases, ", "),
                                 close.empty() ? "" : "; did you mean " + close + "?"));
  }
  if (r.cases.empty())
    throw InputError("case", opt.cases.empty() && r.cases_skipped == 0
                                 ? "the suite has no cases"
                                 : "no case of the suite has the outputs --outputs names");
  return r;
}

nlohmann::ordered_json to_json(const VerifyReport& r) {
  nlohmann::ordered_json j;
  j["ok"] = r.pass();
  j["cases_checked"] = r.cases.size();
  j["cases_failed"] = r.cases_failed;
  j["cases_skipped"] = r.cases_skipped;
  j["outputs_checked"] = r.outputs_checked;
  j["outputs_failed"] = r.outputs_failed;
  if (!r.stray_files.empty()) j["stray_files"] = r.stray_files;
  j["cases"] = nlohmann::ordered_json::array();
  for (const auto& c : r.cases) {
    nlohmann::ordered_json cj;
    cj["name"] = c.name;
    cj["file"] = c.file;
    cj["compute_dtype"] = c.compute_dtype;
    cj["ok"] = c.pass;
    cj["outputs"] = nlohmann::ordered_json::array();
    for (const auto& o : c.outputs) cj["outputs"].push_back(output_json(o));
    j["cases"].push_back(cj);
  }
  return j;
}

}  // namespace flashsim::golden
