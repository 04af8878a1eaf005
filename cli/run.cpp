// The flashsim command line as a function: parses, calls the libraries, prints. Bad input: one line on stderr,
// exit 2.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <exception>
#include <memory>

#include "commands.h"
#include "flashsim/app/help_format.h"
#include "flashsim/app/suggest.h"
#include "flashsim/error.h"

namespace flashsim::cli {

using app::HelpFormatter;
using app::unknown_argument_message;
namespace {
int g_exit_code = 0;
}
void set_exit_code(int code) {
  g_exit_code = code;
}
}  // namespace flashsim::cli

namespace flashsim::cli {

int run(int argc, const char* const* argv) {
  g_exit_code = 0;
  CLI::App app{
      "flashsim: exact attention on the CPU, a GPU memory-hierarchy simulator, golden tests for kernels",
      "flashsim"};
  // Subcommands copy the formatter and the option defaults when they are added: both are set first, so every
  // command's help shows plain types and the defaults of its options.
  app.formatter(std::make_shared<HelpFormatter>());
  app.option_defaults()->always_capture_default();
  app.require_subcommand(1);
  app.set_version_flag("--version", "flashsim 0.1.0");
  add_demo_command(app);
  add_ref_command(app);
  add_golden_commands(app);
  add_sim_commands(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    // A misspelled flag or subcommand is named, with the nearest valid name, whatever CLI11 tripped over
    // first (a required subcommand or option that the typo left out, the leftover arguments).
    if (const auto unknown = unknown_argument_message(app)) {
      std::fprintf(stderr, "flashsim: error: %s\n", unknown->c_str());
    } else {
      std::fprintf(stderr, "flashsim: error: %s (see --help)\n", e.what());
    }
    return 2;
  } catch (const MemoryLimitError& e) {
    std::fprintf(stderr, "flashsim: error: %s (raise it with --max-memory)\n", e.what());
    return 2;
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "flashsim: error: out of memory\n");
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "flashsim: error: %s\n", e.what());
    return 2;
  }
  return g_exit_code;
}

}  // namespace flashsim::cli
