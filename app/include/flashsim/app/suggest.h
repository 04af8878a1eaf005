#pragma once
// Misspelled flags and subcommands: after a failed parse, names the first argument that no command knew and
// suggests the nearest valid name ("unknown flag --seqeln for 'flashsim sim predict'; did you mean
// --seqlen?").
#include <CLI/CLI.hpp>
#include <optional>
#include <string>
#include <vector>

#include "flashsim/nearest.h"

namespace flashsim::app {

using flashsim::edit_distance;  // flashsim/nearest.h
using flashsim::nearest;

// After `root.parse` threw: the message for the first unknown flag or subcommand on the parsed command path
// (without the "flashsim: error: " prefix), or nothing when every argument was known to some command.
std::optional<std::string> unknown_argument_message(CLI::App& root);

}  // namespace flashsim::app
