// Nearest names for misspellings: see nearest.h.
#include "flashsim/nearest.h"

#include <algorithm>
#include <cctype>
#include <vector>

namespace flashsim {

std::size_t edit_distance(const std::string& a, const std::string& b) {
  const std::size_t n = a.size(), m = b.size();
  std::vector<std::vector<std::size_t>> d(n + 1, std::vector<std::size_t>(m + 1));
  for (std::size_t i = 0; i <= n; ++i) d[i][0] = i;
  for (std::size_t j = 0; j <= m; ++j) d[0][j] = j;
  for (std::size_t i = 1; i <= n; ++i) {
    for (std::size_t j = 1; j <= m; ++j) {
      const std::size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  }
  return d[n][m];
}

namespace {

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

}  // namespace

std::optional<std::string> nearest(const std::string& typed, const std::vector<std::string>& candidates) {
  const std::string t = lower(typed);
  const std::size_t limit = std::max<std::size_t>(2, t.size() / 3);
  std::optional<std::string> best;
  std::size_t best_d = limit + 1;
  for (const std::string& c : candidates) {
    const std::size_t d = edit_distance(t, lower(c));
    if (d < best_d && d < t.size()) {
      best = c;
      best_d = d;
    }
  }
  return best;
}

}  // namespace flashsim
