#pragma once
// The built-in suite specs (golden/suites/*.json), compiled into the library by CMake.
#include <string_view>
#include <utility>
#include <vector>

namespace flashsim::golden::detail {
// (name, spec text) pairs, sorted by name.
const std::vector<std::pair<std::string_view, std::string_view>>& embedded_suites();
}  // namespace flashsim::golden::detail
