#pragma once
// Helpers the golden tests share: scratch folders and a small spec touching the features.
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "flashsim/golden/files.h"

namespace flashsim::golden::test {

// A fresh folder under the system temp dir, removed at scope exit.
class Scratch {
 public:
  explicit Scratch(const std::string& tag)
      : path_(std::filesystem::temp_directory_path() /
              ("flashsim-test-" + tag + "-" + std::to_string(::getpid()))) {
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~Scratch() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(const std::string& s) const { return path_ / s; }

 private:
  std::filesystem::path path_;
};

inline const char* kSmallSpec = R"({"name": "small", "version": 3,
  "defaults": {"seqlen": 40, "head_dim": 16, "heads_q": 2, "dtype": "bf16"},
  "cases": [
    {"name": "plain", "dtype": "fp16"},
    {"name": "gqa-causal", "heads_q": 4, "heads_kv": 2, "causal": true, "seqlen_q": 50, "seqlen_k": 30},
    {"name": "varlen", "seqlens_q": [9, 0, 33], "seqlens_k": [20, 4, 33]},
    {"name": "dma-softcap", "batch": 2, "bias": "b1qk", "mask": "bhqk", "mask_keep": 0.5, "softcap": 3.0},
    {"name": "fp32-alibi-window", "dtype": "fp32", "alibi": true, "window_left": 5, "window_right": 2}
  ]})";

// File name -> bytes of every file in a folder.
inline std::vector<std::pair<std::string, std::vector<uint8_t>>> folder_bytes(
    const std::filesystem::path& dir) {
  std::vector<std::pair<std::string, std::vector<uint8_t>>> out;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    out.emplace_back(e.path().filename().string(), read_file(e.path()));
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace flashsim::golden::test
