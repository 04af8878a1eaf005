#include "flashsim/algorithm.h"

#include <string>

#include "flashsim/error.h"

namespace flashsim {

std::string_view algorithm_name(Algorithm a) {
  switch (a) {
    case Algorithm::Naive:
      return "naive";
    case Algorithm::ThreePass:
      return "three-pass";
    case Algorithm::TwoPass:
      return "two-pass";
    case Algorithm::Fa1:
      return "fa1";
    case Algorithm::Fa2:
      return "fa2";
  }
  return "?";
}

const std::vector<Algorithm>& all_algorithms() {
  static const std::vector<Algorithm> all = {Algorithm::Naive, Algorithm::ThreePass, Algorithm::TwoPass,
                                             Algorithm::Fa1, Algorithm::Fa2};
  return all;
}

Algorithm parse_algorithm(std::string_view s, const char* field) {
  for (auto a : all_algorithms())
    if (s == algorithm_name(a)) return a;
  throw InputError(field, "expected naive, three-pass, two-pass, fa1 or fa2, got '" + std::string(s) + "'");
}

bool has_backward(Algorithm a) {
  return a == Algorithm::Naive || a == Algorithm::Fa2;
}

std::string_view pass_name(Pass p) {
  return p == Pass::Forward ? "fwd" : "bwd";
}

}  // namespace flashsim
