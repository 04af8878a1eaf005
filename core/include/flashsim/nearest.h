#pragma once
// The nearest valid name to a misspelled one (flags, subcommands, suites, case names): "did you mean ...?".
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace flashsim {

// Damerau-Levenshtein distance (optimal string alignment: insert, delete, substitute, swap neighbours).
std::size_t edit_distance(const std::string& a, const std::string& b);

// The candidate nearest to `typed` (case-insensitive), if it is close: distance <= max(2, length / 3) and
// shorter than the typed name (a two-letter name is not "close" to every other two-letter name). Ties go to
// the first candidate.
std::optional<std::string> nearest(const std::string& typed, const std::vector<std::string>& candidates);

}  // namespace flashsim
