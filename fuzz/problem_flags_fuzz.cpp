// libFuzzer target: the problem and tile flags of every subcommand. The input is split at newlines into
// arguments; parsing may reject them (CLI::ParseError, flashsim::InputError), never crash or overflow.
#include <CLI/CLI.hpp>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "flashsim/app/problem_flags.h"
#include "flashsim/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<std::string> args = {"flashsim"};
  std::string cur;
  for (size_t i = 0; i < size; ++i) {
    if (data[i] == '\n') {
      args.push_back(cur);
      cur.clear();
    } else {
      cur.push_back(static_cast<char>(data[i]));
    }
  }
  args.push_back(cur);
  std::vector<const char*> argv;
  for (const auto& a : args) argv.push_back(a.c_str());
  CLI::App app;
  flashsim::app::ProblemFlags problem;
  flashsim::app::TileFlags tile;
  problem.add_to(&app);
  tile.add_to(&app);
  try {
    app.parse(static_cast<int>(argv.size()), argv.data());
    const flashsim::AttentionProblem p = problem.problem();
    tile.config();
    // Derived sizes must be computable without overflow for any accepted problem.
    (void)p.q_elems();
    (void)p.o_elems();
    (void)p.lse_elems();
    (void)p.bias_elems();
    (void)p.describe();
  } catch (const CLI::Error&) {
  } catch (const flashsim::InputError&) {
  }
  return 0;
}
