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

std::string_view algorithm_name(ForwardAlgorithm a) {
  switch (a) {
    case ForwardAlgorithm::Naive:
      return "naive";
    case ForwardAlgorithm::ThreePass:
      return "three-pass";
    case ForwardAlgorithm::TwoPass:
      return "two-pass";
    case ForwardAlgorithm::TiledFa1:
      return "tiled-fa1";
    case ForwardAlgorithm::TiledFa2:
      return "tiled-fa2";
  }
  return "?";
}

std::string_view algorithm_name(BackwardAlgorithm a) {
  return a == BackwardAlgorithm::Naive ? "naive" : "tiled";
}

const std::vector<ForwardAlgorithm>& all_forward_algorithms() {
  static const std::vector<ForwardAlgorithm> all = {ForwardAlgorithm::Naive, ForwardAlgorithm::ThreePass,
                                                    ForwardAlgorithm::TwoPass, ForwardAlgorithm::TiledFa1,
                                                    ForwardAlgorithm::TiledFa2};
  return all;
}

ForwardAlgorithm parse_forward_algorithm(std::string_view s) {
  for (auto a : all_forward_algorithms())
    if (s == algorithm_name(a)) return a;
  throw InputError("algorithm", "expected naive, three-pass, two-pass, tiled-fa1 or tiled-fa2, got '" +
                                    std::string(s) + "'");
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
