#pragma once
// golden verify: a candidate's outputs against a suite's exact outputs, with the suite's derived tolerances.
// verify_output and verify_case work on outputs in memory (a harness calls them in-process); verify_suite
// reads a suite folder and a folder of candidate files and calls verify_case on each case.
#include <cstdint>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "flashsim/dtype.h"
#include "flashsim/golden/case_file.h"
#include "flashsim/golden/manifest.h"
#include "flashsim/golden/tolerance.h"

namespace flashsim::golden {

// Metadata key a candidate file may set to the dtype it computed in ("bf16"); --as overrides it.
constexpr const char* kComputeDtypeKey = "flashsim.compute_dtype";
// __metadata__["flashsim.scale.o"] = "256": the candidate file stores o x 256 (an FP8 output and its scale
// factor); verify divides by it and takes the FP8 grid at that scale.
constexpr const char* kScaleKeyPrefix = "flashsim.scale.";

struct VerifyOptions {
  std::optional<DType> compute;  // the candidate's compute dtype; default: Outputs::compute, else the case's
  std::vector<std::string> outputs;  // outputs to check (default: all of each case's)
  std::vector<std::string> cases;    // case-name globs to check (default: all; verify_suite only)
  int64_t max_memory_bytes = 0;  // a file too large for it is refused before reading (0: 80% of available)
};

// One candidate output in memory: row-major values widened to double, its shape, and the dtype the kernel
// stored it in (the values are that dtype's; it sets the tolerance's floor).
struct CandidateTensor {
  std::vector<double> values;  // in the output's units (an FP8 output's codes divided by its scale)
  std::vector<int64_t> shape;
  DType storage = DType::F32;
  double scale = 1;  // the candidate stored values x scale (an FP8 output's scale factor): its grid's unit
};

// A candidate's outputs in memory: output name ("o" "lse" "dq" "dk" "dv" "dbias") -> tensor in the case's
// layout (output_shape). An output the check covers that is absent fails; other names are ignored.
struct Outputs {
  std::map<std::string, CandidateTensor> tensors;
  std::optional<DType> compute;  // the dtype the candidate computed in (default: the case's)
};

struct OutputVerdict {
  std::string output;
  bool present = false;
  std::string candidate_dtype;  // storage dtype of the candidate tensor ("BF16")
  ErrorStats stats;
  int64_t mismatches = 0;  // elements over bound_abs
  double bound_abs = 0, bound_rel = 0;
  // The exact output is all 0 (-inf in a fully masked lse) and so is the emulated error: bound_abs is the
  // floor at 0, two of the smallest subnormals of the storage type, so the candidate must equal the exact.
  bool zero_bound = false;
  // The worst element: the first NaN / Inf where exact is finite (worst_nonfinite), else the largest |error|;
  // axes named by the layout: "[b1,s37,h0,d27]"; "-" without one. JSON: {"text", "flat", "coords", "nonfinite"}.
  std::string worst_index;
  int64_t worst_flat = -1;
  std::vector<std::pair<char, int64_t>> worst_coords;
  bool worst_nonfinite = false;
  bool pass = false;
  std::string note;  // why it failed, when not by numbers
  // A check that compares no tensor (a block-sparse kernel's tile counts against the reference's): the report
  // shows this line in place of the error columns.
  std::string summary;
};

struct CaseVerdict {
  std::string name, file, compute_dtype;
  std::vector<OutputVerdict> outputs;
  bool pass = false;
};

struct VerifyReport {
  std::vector<CaseVerdict> cases;
  int64_t outputs_checked = 0, outputs_failed = 0, cases_failed = 0;
  int64_t cases_skipped = 0;  // cases without any of the outputs VerifyOptions::outputs names (another op's)
  // .safetensors files of the candidate folder named like no case of the suite (listed when no --case selects)
  std::vector<std::string> stray_files{};
  bool pass() const { return outputs_failed == 0 && cases_failed == 0; }
};

// One output `name` of `shape` (its layout names the worst index's axes): `got` against `exact` under `tol`.
// Throws InputError when got's shape is not `shape` or the value counts disagree with it.
OutputVerdict verify_output(const std::string& name, const std::vector<double>& exact,
                            const std::vector<int64_t>& shape, const CandidateTensor& got,
                            const OutputTolerance& tol);

// Every output of the case that opt.outputs selects. Throws InputError for an unknown name in opt.outputs, a
// selection with none of the case's outputs (another op's), or a candidate tensor of the wrong shape; an absent output, or a compute dtype the case has no tolerance for,
// is a failure in the verdict.
CaseVerdict verify_case(const LoadedCase& lc, const Outputs& out, const VerifyOptions& opt);

// Adds a case's verdict to the report's tallies.
void add_case(VerifyReport& r, CaseVerdict cv);

// The golden file of a manifest entry in the suite folder `golden`, read (refused over max_memory_bytes, 0: 80% of
// the memory available), its sha256 checked against the manifest's, and loaded. Throws InputError.
LoadedCase read_golden_case(const std::filesystem::path& golden, const ManifestEntry& e,
                            int64_t max_memory_bytes);
// The same file parsed but not loaded (its tensors as stored).
SafetensorsFile read_golden_file(const std::filesystem::path& golden, const ManifestEntry& e,
                                 int64_t max_memory_bytes);

// Throws InputError (exit 2) for a bad golden folder or a malformed candidate file, or a candidate output of
// the wrong shape or a non-float dtype; a missing candidate file or output is a failure in the report.
VerifyReport verify_suite(const std::filesystem::path& golden, const std::filesystem::path& candidate,
                          const VerifyOptions& opt);

nlohmann::ordered_json to_json(const VerifyReport& r);

}  // namespace flashsim::golden
