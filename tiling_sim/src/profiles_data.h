#pragma once
// The JSON text of the built-in hardware profiles (generated from tiling_sim/profiles/*.json by CMake).
#include <string_view>
#include <utility>
#include <vector>

namespace flashsim::sim::detail {
// (file name, JSON text) pairs, sorted by name.
const std::vector<std::pair<std::string_view, std::string_view>>& embedded_profiles();
}  // namespace flashsim::sim::detail
