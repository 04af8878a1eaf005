#include <omp.h>

#include <string>

#include "flashsim/error.h"
#include "flashsim/ref/attention.h"
#include "flashsim/ref/traffic.h"
#include "problem_context.h"

namespace flashsim::ref {

std::string_view precision_name(Precision p) {
  switch (p) {
    case Precision::Exact:
      return "exact";
    case Precision::Fp32:
      return "fp32";
    case Precision::Emulated:
      return "emulated";
  }
  return "?";
}

Precision parse_precision(std::string_view s) {
  if (s == "exact" || s == "fp64") return Precision::Exact;
  if (s == "fp32") return Precision::Fp32;
  if (s == "emulated") return Precision::Emulated;
  throw InputError("precision", "expected exact, fp32 or emulated, got '" + std::string(s) + "'");
}

std::string_view tensor_name(TensorId t) {
  switch (t) {
    case TensorId::Q:
      return "q";
    case TensorId::K:
      return "k";
    case TensorId::V:
      return "v";
    case TensorId::O:
      return "o";
    case TensorId::Lse:
      return "lse";
    case TensorId::dO:
      return "do";
    case TensorId::Delta:
      return "delta";
    case TensorId::dQ:
      return "dq";
    case TensorId::dK:
      return "dk";
    case TensorId::dV:
      return "dv";
    case TensorId::DqAccum:
      return "dq_accum";
    case TensorId::Bias:
      return "bias";
    case TensorId::Mask:
      return "mask";
    case TensorId::dBias:
      return "dbias";
    case TensorId::Scores:
      return "scores";
    case TensorId::Probs:
      return "probs";
    case TensorId::RowMax:
      return "row_max";
    case TensorId::RowSum:
      return "row_sum";
  }
  return "?";
}

namespace detail {
int ProblemContext::threads() const {
  if (opt.observer) return 1;
  return opt.threads > 0 ? opt.threads : omp_get_max_threads();
}
}  // namespace detail

}  // namespace flashsim::ref
