#pragma once
// A progress bar with ETA on stderr for long commands: redrawn in place on a terminal, one line per 10% (and
// the last) otherwise, so CI logs stay short.
#include <chrono>
#include <string>

#include "flashsim/golden/generate.h"

namespace flashsim::app {

class ProgressBar {
 public:
  explicit ProgressBar(std::string what);
  void operator()(const golden::Progress& p);

 private:
  std::string what_;
  std::chrono::steady_clock::time_point start_;
  bool tty_;
  int last_decile_ = -1;
};

}  // namespace flashsim::app
