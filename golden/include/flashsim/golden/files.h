#pragma once
// File helpers for golden suites: whole-file reads with clear errors, SHA-256 (OpenSSL), atomic writes.
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace flashsim::golden {

// Reads a whole file; throws InputError(path, ...) when it cannot, or when it is larger than max_bytes.
std::vector<uint8_t> read_file(const std::filesystem::path& path, uint64_t max_bytes = UINT64_MAX);
std::string read_text_file(const std::filesystem::path& path);
// Reads a golden or candidate file that is about to be parsed and widened to doubles, which takes up to
// kCaseBytesPerFileByte times its size; throws MemoryLimitError first when that exceeds max_memory_bytes
// (0: the default limit, 80% of available memory).
constexpr int64_t kCaseBytesPerFileByte = 6;  // the bytes, the parsed tensors, and doubles from 2-byte values
std::vector<uint8_t> read_case_file(const std::filesystem::path& path, int64_t max_memory_bytes);
// Writes bytes to path (through path + ".tmp" and a rename, so no reader sees half a file).
void write_file(const std::filesystem::path& path, const void* data, size_t size);
void write_file(const std::filesystem::path& path, const std::vector<uint8_t>& bytes);
void write_text_file(const std::filesystem::path& path, const std::string& text);

// Throws InputError unless `out` is absent, or a folder and force is set (a file is never replaced).
void refuse_existing(const std::filesystem::path& out, bool force);

// A temporary folder beside `out` (".NAME.tmp-PID"), removed on destruction unless commit() moved it to out:
// commands that write a folder write here first, so a failed run leaves nothing behind.
class TempDir {
 public:
  explicit TempDir(const std::filesystem::path& out);
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }
  void commit(const std::filesystem::path& out);  // replaces what is at out

 private:
  std::filesystem::path path_;
  bool committed_ = false;
};

// SHA-256 of the bytes, as 64 lowercase hex digits.
std::string sha256_hex(const uint8_t* data, size_t size);
std::string sha256_hex(const std::vector<uint8_t>& bytes);

}  // namespace flashsim::golden
