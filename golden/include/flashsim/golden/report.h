#pragma once
// The text report of a verification, as `flashsim golden verify` and `flashsim-gpu check` print it: a table per
// case (each output's error, bound, relL2, worst index with its axes, non-finite and out-of-bound counts), then
// the summary line and ALL PASS or SOME OUTPUTS FAILED.
#include <string>

#include "flashsim/golden/verify.h"

namespace flashsim::golden {

// quiet: only the failing cases' failing outputs, and the summary.
std::string format_report(const VerifyReport& r, bool quiet);

}  // namespace flashsim::golden
