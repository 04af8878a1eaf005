#pragma once
// golden verify: a candidate's outputs against a suite's exact outputs, with the suite's derived tolerances.
#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "flashsim/dtype.h"
#include "flashsim/golden/tolerance.h"

namespace flashsim::golden {

// Metadata key a candidate file may set to the dtype it computed in ("bf16"); --as overrides it.
constexpr const char* kComputeDtypeKey = "flashsim.compute_dtype";

struct VerifyOptions {
  std::optional<DType> compute;  // the candidate's compute dtype; default: metadata, else the case's dtype
  std::vector<std::string> outputs;  // outputs to check (default: all of each case's)
  std::vector<std::string> cases;    // case-name globs to check (default: all)
  int64_t max_memory_bytes = 0;  // a file too large for it is refused before reading (0: 80% of available)
};

struct OutputVerdict {
  std::string output;
  bool present = false;
  std::string candidate_dtype;  // storage dtype of the candidate tensor
  ErrorStats stats;
  int64_t mismatches = 0;  // elements over bound_abs
  double bound_abs = 0, bound_rel = 0;
  std::string worst_index;  // "[b, s, h, d]"
  bool pass = false;
  std::string note;  // why it failed, when not by numbers
};

struct CaseVerdict {
  std::string name, file, compute_dtype;
  std::vector<OutputVerdict> outputs;
  bool pass = false;
};

struct VerifyReport {
  std::vector<CaseVerdict> cases;
  int64_t outputs_checked = 0, outputs_failed = 0, cases_failed = 0;
  bool pass() const { return outputs_failed == 0 && cases_failed == 0; }
};

// Throws InputError (exit 2) for a bad golden folder or a malformed candidate file, or a candidate output of
// the wrong shape or a non-float dtype; a missing candidate file or output is a failure in the report.
VerifyReport verify_suite(const std::filesystem::path& golden, const std::filesystem::path& candidate,
                          const VerifyOptions& opt);

nlohmann::ordered_json to_json(const VerifyReport& r);

}  // namespace flashsim::golden
