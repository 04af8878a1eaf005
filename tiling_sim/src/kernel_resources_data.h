#pragma once
// The text of the built-in kernel resource tables (generated from families/fa2/resources/*.csv by CMake).
#include <string_view>
#include <utility>
#include <vector>

namespace flashsim::sim::detail {
// (file name without extension, CSV text) pairs, sorted by name.
const std::vector<std::pair<std::string_view, std::string_view>>& embedded_kernel_resources();
}  // namespace flashsim::sim::detail
