#pragma once
// The tolerance rule of golden suites (see golden/README.md for the reasoning).
//
// For each case, output and compute dtype T, the suite stores the error of the emulated reference (the GPU
// precision pipeline in T: fp32 accumulation, P and dS rounded to T, outputs rounded to T) against the exact
// fp64 result. A candidate computed in T passes an output when
//   max|cand - exact|   <= factor * emulated_max_abs + floor_abs,   floor_abs = 2 ulp_S(M) + A M
//   relL2(cand, exact)  <= factor * emulated_rel_l2  + floor_rel,   floor_rel = u_S + A
//   A = 2 sqrt(L) u_acc   (the accumulation floor)
// with M the output's magnitude, max|exact| (for a gradient, the largest of dq, dk, dv, dbias: a gradient
// that is exactly 0 in exact arithmetic, like dq with one visible key per row where dS = dP - D cancels,
// still carries the rounding noise of that difference in any real kernel), factor 2 for forward outputs (o,
// lse) and 3 for gradients (dq, dk, dv, dbias), S the coarser of the emulated output's storage type and the
// candidate's, and no NaN or Inf where the exact value is finite (where the exact value is -inf, the lse of a
// fully masked row, the candidate must be -inf too). A covers summation order: a sum of L terms in the
// accumulation precision (fp32; fp64 for fp64) carries rounding of order sqrt(L) u_acc that another correct
// order (naive rows vs tiles) redistributes; L is the longest sum of the case, max(seqlen_q, seqlen_k,
// head_dim, head_dim_v). It matters for fp32 candidates only: in bf16/fp16 the output rounding dwarfs it.
#include <cstdint>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "flashsim/dtype.h"

namespace flashsim::golden {

constexpr double kForwardFactor = 2.0;   // flash-attention's tests compare with 2x a same-precision reference
constexpr double kBackwardFactor = 3.0;  // gradients go through two more rounded products (dS, then dQ/dK)
constexpr double kFloorUlps = 2.0;       // "a few ulps": the bound never collapses to 0 on easy outputs
constexpr double kAccumulationFactor = 2.0;  // 2 sqrt(L) u: twice the random-walk size of L roundings

// Errors of `got` against `exact` over the elements where exact is finite.
struct ErrorStats {
  double max_abs = 0;            // max |got - exact|
  double rel_l2 = 0;             // ||got - exact|| / ||exact|| (0 when both are 0, inf when only exact is 0)
  bool rel_defined = false;      // ||exact|| > 0; on an all-zero exact output only the max-abs bound applies
  double magnitude = 0;          // max |exact|
  int64_t worst = -1;            // flat index of the largest |got - exact|
  int64_t nonfinite = 0;         // NaN or Inf in got where exact is finite
  int64_t first_nonfinite = -1;  // flat index of the first of them (-1: none)
  int64_t inf_mismatch = 0;      // exact is +-inf and got differs
};
ErrorStats error_stats(const std::vector<double>& exact, const std::vector<double>& got);
// Elements with |got - exact| > bound (non-finite ones count).
int64_t count_above(const std::vector<double>& exact, const std::vector<double>& got, double bound);

// Spacing of t's numbers at |x| (ulp), for normal x; the smallest subnormal spacing for tiny x.
double ulp(double x, DType t);

// Gradients take kBackwardFactor: dq dk dv dbias (attention), dx dweight dbias dresidual (norms).
bool is_gradient_output(std::string_view name);
// The type the emulated pipeline stores an output in: lse stays fp32 (as FlashAttention-2), and a norm's
// rstd and mean (as norm kernels save them), the rest in T.
DType emulated_storage(std::string_view output, DType compute);

struct OutputTolerance {
  double emulated_max_abs = 0, emulated_rel_l2 = 0;
  double magnitude = 0;  // M: the scale the floor is measured at
  double factor = 0;
  double accumulation = 0;     // A above
  DType storage = DType::F64;  // of the emulated output

  // The floors and bounds for a candidate stored in `candidate_storage` (a coarser type raises the floor).
  // `scale`: the candidate stored its values times scale (an FP8 output with its scale factor, o_fp8 = o x
  // scale_o), so the storage's grid in the output's units is ulp_S(M scale) / scale.
  double floor_max_abs(DType candidate_storage, double scale = 1) const;  // 2 ulp_S(M) + A M
  double floor_rel_l2(DType candidate_storage) const;                     // u_S + A
  double bound_max_abs(DType candidate_storage, double scale = 1) const;
  double bound_rel_l2(DType candidate_storage) const;
};
// `magnitude` is M above (defaults to emulated.magnitude, the output's own max|exact|); accumulation_length
// is L (0: no accumulation floor).
OutputTolerance make_tolerance(std::string_view output, DType compute, const ErrorStats& emulated,
                               double magnitude = -1, int64_t accumulation_length = 0);

nlohmann::ordered_json to_json(const OutputTolerance& t);

// One compute dtype's row of a case's tolerance table, {output: to_json(tolerance)}, from the errors of each
// output of the emulated pipeline in `compute` (errors(name)), each output's magnitude M and the case's longest
// sum L; nullopt when an emulated output is not finite where the exact one is (no kernel in that dtype runs it).
std::optional<nlohmann::ordered_json> tolerance_row(
    const std::vector<std::string>& names, DType compute,
    const std::function<ErrorStats(const std::string&)>& errors,
    const std::map<std::string, double>& magnitude, int64_t accumulation_length);
OutputTolerance tolerance_from_json(const nlohmann::json& j, const std::string& where);

// compute dtype name ("bf16") -> output name ("dq") -> tolerance
using ToleranceTable = std::map<std::string, std::map<std::string, OutputTolerance>>;

}  // namespace flashsim::golden
