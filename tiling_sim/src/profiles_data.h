#pragma once
// The JSON text of the built-in hardware profiles (generated from tiling_sim/profiles/*.json by CMake).
#include <string_view>
#include <vector>

namespace flashsim::sim::detail {
const std::vector<std::string_view>& embedded_profiles();
}
