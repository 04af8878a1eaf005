// The text report of a verification (report.h).
#include "flashsim/golden/report.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <iterator>

namespace flashsim::golden {

namespace {

std::string sci(double x) {
  return std::isfinite(x) ? fmt::format("{:.2e}", x) : fmt::format("{}", x);
}

// relL2 and its bound; "-" where relL2 does not apply (an all-zero exact output).
std::string rel_cell(const OutputVerdict& o, double x) {
  return o.stats.rel_defined ? sci(x) : "-";
}

// The max-abs bound; "~0 (exact)" where it is the floor at 0 (two subnormals: the candidate must be exact).
std::string abs_bound_cell(const OutputVerdict& o) {
  return o.zero_bound ? "~0 (exact)" : sci(o.bound_abs);
}

// name_width: the output column's width (6, wider for a norm's dresidual)
void output_row(std::string& out, const OutputVerdict& o, size_t name_width) {
  constexpr const char* kRow = "  {:<{}} {:<5} {:>10} {:>11} {:>10} {:>10} {:>20} {:>8} {:>7}  {}\n";
  if (!o.summary.empty()) {
    fmt::format_to(std::back_inserter(out), "  {:<{}} {}  {}\n", o.output, name_width, o.summary,
                   o.pass ? "ok" : "FAIL " + o.note);
    return;
  }
  if (!o.present) {
    fmt::format_to(std::back_inserter(out), kRow, o.output, name_width, "-", "-", "-", "-", "-", "-", "-",
                   "-", "FAIL " + o.note);
    return;
  }
  fmt::format_to(std::back_inserter(out), kRow, o.output, name_width, o.candidate_dtype, sci(o.stats.max_abs),
                 abs_bound_cell(o), rel_cell(o, o.stats.rel_l2), rel_cell(o, o.bound_rel), o.worst_index,
                 o.stats.nonfinite + o.stats.inf_mismatch, o.mismatches, o.pass ? "ok" : "FAIL " + o.note);
}

}  // namespace

std::string format_report(const VerifyReport& r, bool quiet) {
  std::string out;
  const auto it = std::back_inserter(out);
  for (const auto& c : r.cases) {
    if (quiet && c.pass) continue;
    fmt::format_to(it, "{}  ({}, compute {})\n", c.name, c.pass ? "pass" : "FAIL", c.compute_dtype);
    size_t width = 6;  // "output"
    for (const auto& o : c.outputs) width = std::max(width, o.output.size());
    fmt::format_to(it, "  {:<{}} {:<5} {:>10} {:>11} {:>10} {:>10} {:>20} {:>8} {:>7}\n", "output", width,
                   "dtype", "max|err|", "abs bound", "relL2", "rel bound", "worst index", "nan/inf", "over");
    for (const auto& o : c.outputs)
      if (!quiet || !o.pass) output_row(out, o, width);
  }
  fmt::format_to(it, "{} cases, {} outputs checked: {} cases passed, {} failed ({} outputs failed)\n",
                 r.cases.size(), r.outputs_checked, r.cases.size() - r.cases_failed, r.cases_failed,
                 r.outputs_failed);
  if (r.cases_skipped > 0)
    fmt::format_to(it, "{} cases skipped: they have none of the outputs asked for\n", r.cases_skipped);
  if (!r.stray_files.empty())
    fmt::format_to(it, "{} candidate files match no case of the suite (misnamed?): {}\n",
                   r.stray_files.size(), fmt::join(r.stray_files, ", "));
  // A run that checked nothing passed nothing: said apart from ALL PASS (every case skipped: a kernel that runs
  // none of the suite's features, tiles this build did not compile).
  fmt::format_to(it, "{}\n",
                 !r.pass()                ? "SOME OUTPUTS FAILED"
                 : r.outputs_checked == 0 ? "NOTHING CHECKED: no case ran (see the skips)"
                                          : "ALL PASS");
  return out;
}

}  // namespace flashsim::golden
