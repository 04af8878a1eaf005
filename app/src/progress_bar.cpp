#include "flashsim/app/progress_bar.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>

namespace flashsim::app {

namespace {
std::string clock_time(double s) {
  if (!std::isfinite(s) || s < 0) return "?";
  const long t = std::lround(s);
  return t >= 3600 ? fmt::format("{}:{:02}:{:02}", t / 3600, t / 60 % 60, t % 60)
                   : fmt::format("{}:{:02}", t / 60, t % 60);
}
}  // namespace

ProgressBar::ProgressBar(std::string what)
    : what_(std::move(what)), start_(std::chrono::steady_clock::now()), tty_(::isatty(2) != 0) {}

void ProgressBar::operator()(const golden::Progress& p) {
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  // Fraction by estimated work when known (cases differ by orders of magnitude in cost), else by count.
  const double frac = p.work_total > 0 ? p.work_done / p.work_total
                      : p.total > 0    ? static_cast<double>(p.done) / static_cast<double>(p.total)
                                       : 1.0;
  const double eta = frac > 0 ? elapsed * (1 - frac) / frac : NAN;
  constexpr int kWidth = 30;
  const int filled = static_cast<int>(frac * kWidth);
  const std::string bar = std::string(filled, '#') + std::string(kWidth - filled, '.');
  const bool finished = p.done == p.total && p.current.empty();
  const std::string line =
      fmt::format("{} [{}] {}/{} {:3.0f}%  elapsed {}  eta {}  {}", what_, bar, p.done, p.total, 100 * frac,
                  clock_time(elapsed), finished ? "0:00" : clock_time(eta), p.current);
  if (tty_) {
    std::fprintf(stderr, "\r%-120s%s", line.c_str(), finished ? "\n" : "");
  } else {
    const int decile = static_cast<int>(frac * 10);
    if (decile != last_decile_ || finished) std::fprintf(stderr, "%s\n", line.c_str());
    last_decile_ = decile;
  }
  std::fflush(stderr);
}

}  // namespace flashsim::app
