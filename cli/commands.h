#pragma once
// Each subcommand group registers itself on the app; its callback sets the process exit code through
// set_exit_code (0 ok, 1 a check failed, 2 bad input).
#include <CLI/CLI.hpp>

namespace flashsim::cli {

// Runs the command line on argv (argv[0] the program name); returns the exit code. Tests call it in-process.
int run(int argc, const char* const* argv);

void set_exit_code(int code);

void add_ref_command(CLI::App& app);      // cmd_ref.cpp: flashsim ref
void add_demo_command(CLI::App& app);     // cmd_demo.cpp: flashsim demo (the quick start's main job)
void add_golden_commands(CLI::App& app);  // cmd_golden.cpp: flashsim golden ...
void add_sim_commands(CLI::App& app);     // cmd_sim.cpp: flashsim sim ..., hw ..., traffic ...
void add_tune_command(CLI::App* sim);     // cmd_tune.cpp: flashsim sim tune

}  // namespace flashsim::cli
