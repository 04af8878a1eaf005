// flashsim.golden's native half: generating a suite, opening one case of a suite folder (its sha256 checked),
// the case's tensors as stored, and verifying outputs in memory with the suite's tolerance rule.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>

#include "arrays.h"
#include "bindings.h"
#include "flashsim/app/progress_bar.h"
#include "flashsim/dropout_check.h"
#include "flashsim/error.h"
#include "flashsim/golden/case_file.h"
#include "flashsim/golden/files.h"
#include "flashsim/golden/generate.h"
#include "flashsim/golden/report.h"
#include "flashsim/golden/verify.h"

namespace flashsim::py {

namespace {

namespace fs = std::filesystem;

// One golden case: the file as stored and loaded.
struct NativeCase {
  golden::SafetensorsFile file;
  golden::LoadedCase loaded;
};

NativeCase open_case(const std::string& dir, const std::string& name, int64_t max_memory_bytes) {
  const auto manifest = golden::read_manifest(dir);
  const auto it = std::find_if(manifest.cases.begin(), manifest.cases.end(),
                               [&](const auto& e) { return e.name == name; });
  if (it == manifest.cases.end())
    throw InputError("case", fmt::format("no case '{}' in the suite at {}", name, dir));
  NativeCase c{golden::read_golden_file(dir, *it, max_memory_bytes), {}};
  c.loaded = golden::load_case(c.file, (fs::path(dir) / it->file).string());
  return c;
}

NativeCase open_file(const std::string& path, int64_t max_memory_bytes) {
  NativeCase c{golden::parse(golden::read_case_file(path, max_memory_bytes), path), {}};
  c.loaded = golden::load_case(c.file, path);
  return c;
}

// A stored tensor as a NumPy array of its own type (bfloat16 as uint16 bit patterns).
nb::object stored_tensor(const NativeCase& c, const std::string& name) {
  const golden::Tensor* t = c.file.find(name);
  if (!t) throw InputError(name, fmt::format("not in case {}", c.loaded.c.name));
  using golden::StDType;
  const char* np = "float64";
  switch (t->dtype) {
    case StDType::F64:
      np = "float64";
      break;
    case StDType::F32:
      np = "float32";
      break;
    case StDType::F16:
      np = "float16";
      break;
    case StDType::BF16:
      np = "uint16";
      break;
    case StDType::BOOL:
      np = "bool";
      break;
    case StDType::U8:
    case StDType::F8_E4M3:  // FP8 codes as uint8 (NumPy has no FP8 type; ml_dtypes views them)
    case StDType::F8_E5M2:
      np = "uint8";
      break;
    case StDType::I32:
      np = "int32";
      break;
    case StDType::I64:
      np = "int64";
      break;
  }
  // A byte copy into a fresh NumPy array (file data is little-endian, as this machine).
  nb::module_ numpy = nb::module_::import_("numpy");
  nb::object a = numpy.attr("empty")(nb::cast(t->shape), np);
  Py_buffer view;
  if (PyObject_GetBuffer(a.ptr(), &view, PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS) != 0) throw nb::python_error();
  std::memcpy(view.buf, t->data.data(), std::min<size_t>(view.len, t->data.size()));
  PyBuffer_Release(&view);
  return a;
}

nb::object expected_output(const NativeCase& c, const std::string& name) {
  const auto it = c.loaded.outputs.find(name);
  if (it == c.loaded.outputs.end())
    throw InputError(name, fmt::format("not an output of case {} (it has {})", c.loaded.c.name,
                                       fmt::join(golden::output_names(c.loaded.c), ", ")));
  return to_numpy(it->second, golden::output_shape(c.loaded.c, name), DType::F64);
}

// Verifies outputs given by name; returns (report as JSON text, the report as `golden verify` prints it).
// stored: name -> (dtype, scale) for outputs the kernel stored in a format NumPy lacks (FP8: "e4m3", "e5m2"),
// passed as their float values times scale (the FP8 codes' values; scale the kernel's scale factor).
std::pair<std::string, std::string> verify(const NativeCase& c, const nb::dict& outputs,
                                           const std::optional<std::string>& compute,
                                           const nb::dict& stored) {
  golden::Outputs out;
  golden::VerifyOptions opt;
  for (const auto& [key, value] : outputs) {
    const std::string name = nb::cast<std::string>(key);
    const InArray a = nb::cast<InArray>(value);
    golden::CandidateTensor t;
    t.storage = float_dtype(a, name);
    t.values = widen(a, name);
    t.shape = shape_of(a);
    if (stored.contains(key)) {
      const auto [dtype, scale] = nb::cast<std::pair<std::string, double>>(stored[key]);
      if (!(std::isfinite(scale) && scale > 0))
        throw InputError(name, fmt::format("stored scale {}: a scale factor is a positive number", scale));
      t.storage = parse_dtype(dtype);
      t.scale = scale;
      for (double& v : t.values) v /= scale;  // the values the kernel meant: codes / scale
    }
    out.tensors.emplace(name, std::move(t));
    opt.outputs.push_back(name);
  }
  if (opt.outputs.empty())
    throw InputError("outputs", "nothing to verify: pass outputs by name (o=..., lse=...)");
  if (compute) opt.compute = parse_dtype(*compute);
  golden::VerifyReport r;
  {
    nb::gil_scoped_release unlocked;
    golden::add_case(r, golden::verify_case(c.loaded, out, opt));
  }
  return {golden::to_json(r).dump(), golden::format_report(r, false)};
}

std::string generate(const std::string& suite, const std::string& out, int threads, bool force,
                     bool progress) {
  golden::GenerateOptions opt;
  opt.run.threads = threads;
  opt.force = force;
  const auto spec = golden::load_suite_spec(suite);
  if (progress) opt.progress = app::ProgressBar("generate " + spec.name);
  nb::gil_scoped_release unlocked;
  return golden::generate_suite(spec, out, opt).to_json_text();
}

}  // namespace

void bind_golden(nb::module_& m) {
  using namespace nb::literals;
  nb::class_<NativeCase>(m, "NativeCase",
                         "One golden case file, read and loaded (flashsim.golden.Case wraps it).")
      .def_prop_ro("name", [](const NativeCase& c) { return c.loaded.c.name; })
      .def_prop_ro(
          "case_json", [](const NativeCase& c) { return golden::case_to_json(c.loaded.c).dump(); },
          "The case as JSON: the problem's fields, seed, magnitude, name, description.")
      .def_prop_ro(
          "metadata_json", [](const NativeCase& c) { return c.loaded.metadata.dump(); },
          "The file's flashsim.case metadata (case, generator, tolerance table) as JSON.")
      .def_prop_ro(
          "tensor_names",
          [](const NativeCase& c) {
            std::vector<std::string> names;
            for (const auto& [n, t] : c.file.tensors) names.push_back(n);
            return names;
          },
          "Every tensor in the file, in file order.")
      .def_prop_ro(
          "output_names", [](const NativeCase& c) { return golden::output_names(c.loaded.c); },
          "The exact outputs the case holds (o lse dq dk dv, dbias with a bias; o lse for a KV-cache case; a "
          "norm's y h rstd mean dx dweight dbias dresidual).")
      .def_prop_ro(
          "op", [](const NativeCase& c) { return std::string(golden::op_name(c.loaded.c)); },
          "The case's op: attention, rmsnorm or layernorm.")
      .def("tensor", &stored_tensor, "name"_a, "A tensor as stored (bfloat16 as uint16 bit patterns).")
      .def("expected", &expected_output, "name"_a, "An exact output (float64).")
      .def("verify", &verify, "outputs"_a, "compute"_a = nb::none(), "stored"_a = nb::dict(),
           "Verifies the named outputs (dict of arrays); stored: name -> (dtype, scale) of outputs given as "
           "the float values of FP8 codes; returns (report JSON, report text).");
  m.def("open_case", &open_case, "suite_dir"_a, "name"_a, "max_memory_bytes"_a = 0,
        "Opens case `name` of a suite folder, its sha256 checked against the manifest.");
  m.def("open_file", &open_file, "path"_a, "max_memory_bytes"_a = 0, "Opens one golden case file.");
  m.def("generate_suite", &generate, "suite"_a, "out"_a, "threads"_a = 0, "force"_a = false,
        "progress"_a = true,
        "Generates a suite (built-in name or spec file) into the folder out; returns the manifest as JSON "
        "text.");
  m.def("builtin_suites", &golden::builtin_suite_names, "The built-in suites' names.");
  m.def(
      "check_keep_fraction",
      [](int64_t kept, int64_t n, double p, double false_alarm) {
        const KeepFractionCheck c = check_keep_fraction(kept, n, p, false_alarm);
        return std::make_tuple(c.ok, c.fraction, c.bound.lo(), c.bound.hi(), c.z_score, c.bound.method);
      },
      "kept"_a, "n"_a, "p"_a, "false_alarm"_a,
      "A dropout RNG's kept fraction against the binomial bound (flashsim/dropout_check.h): "
      "(ok, fraction, lo, hi, z_score, method).");
  m.def(
      "suite_spec_sha256",
      [](const std::string& suite) { return golden::load_suite_spec(suite).spec_sha256; }, "suite"_a,
      "The sha256 of a suite spec (built-in name or file): names the folder a suite is cached in.");
  m.def(
      "normalize_case",
      [](const std::string& json_text) {
        const auto c = golden::case_from_json(nlohmann::json::parse(json_text), "problem");
        return std::make_pair(golden::case_to_json(c).dump(), golden::describe(c));
      },
      "case_json"_a,
      "A case (problem fields as in suite specs) validated and completed: (case JSON, one-line "
      "description).");
}

}  // namespace flashsim::py
