#pragma once
// Runs the flashsim command line (FLASHSIM_CLI, the binary of this build) for the CLI tests: exit code and
// the merged stdout + stderr.
#include <sys/wait.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <string>

namespace flashsim::test {

struct CliResult {
  int code;
  std::string out;
};

inline CliResult run_cli(const std::string& args) {
  const std::string cmd = std::string(FLASHSIM_CLI) + " " + args + " 2>&1";
  FILE* pipe = popen(cmd.c_str(), "r");
  std::string out;
  std::array<char, 4096> buf;
  while (size_t n = fread(buf.data(), 1, buf.size(), pipe)) out.append(buf.data(), n);
  const int status = pclose(pipe);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

inline int count_lines(const std::string& s) {
  return static_cast<int>(std::count(s.begin(), s.end(), '\n'));
}

}  // namespace flashsim::test
