#pragma once
// Misspelled flags and subcommands: after a failed parse, names the first argument that no command knew and
// suggests the nearest valid name ("unknown flag --seqeln for 'flashsim sim predict'; did you mean
// --seqlen?").
#include <CLI/CLI.hpp>
#include <optional>
#include <string>
#include <vector>

namespace flashsim::app {

// Damerau-Levenshtein distance (optimal string alignment: insert, delete, substitute, swap neighbours).
std::size_t edit_distance(const std::string& a, const std::string& b);

// The candidate nearest to `typed` (case-insensitive), if it is close: distance <= max(2, length / 3) and
// shorter than the typed name (a two-letter name is not "close" to every other two-letter name). Ties go to
// the first candidate.
std::optional<std::string> nearest(const std::string& typed, const std::vector<std::string>& candidates);

// After `root.parse` threw: the message for the first unknown flag or subcommand on the parsed command path
// (without the "flashsim: error: " prefix), or nothing when every argument was known to some command.
std::optional<std::string> unknown_argument_message(CLI::App& root);

}  // namespace flashsim::app
