// flashsim: the command line. Parses, calls the libraries, prints. Bad input: one line on stderr, exit 2.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <exception>

#include "commands.h"
#include "flashsim/error.h"

namespace flashsim::cli {
namespace {
int g_exit_code = 0;
}
void set_exit_code(int code) {
  g_exit_code = code;
}
}  // namespace flashsim::cli

int main(int argc, char** argv) {
  using namespace flashsim::cli;
  CLI::App app{
      "flashsim: exact attention on the CPU, a GPU memory-hierarchy simulator, golden tests for kernels"};
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
    std::fprintf(stderr, "flashsim: error: %s (see --help)\n", e.what());
    return 2;
  } catch (const flashsim::MemoryLimitError& e) {
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
