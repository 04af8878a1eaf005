#include "flashsim/golden/files.h"

#include <fmt/format.h>
#include <openssl/evp.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>

#include "flashsim/error.h"
#include "flashsim/memory.h"

namespace flashsim::golden {

namespace {
struct FileCloser {
  void operator()(std::FILE* f) const { std::fclose(f); }
};
using File = std::unique_ptr<std::FILE, FileCloser>;
}  // namespace

std::vector<uint8_t> read_file(const std::filesystem::path& path, uint64_t max_bytes) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) throw InputError(path.string(), "is a directory, not a file");
  File f(std::fopen(path.c_str(), "rb"));
  if (!f) throw InputError(path.string(), fmt::format("cannot open: {}", std::strerror(errno)));
  if (std::fseek(f.get(), 0, SEEK_END) != 0) throw InputError(path.string(), "cannot seek");
  const long size = std::ftell(f.get());
  if (size < 0) throw InputError(path.string(), "cannot tell its size");
  if (static_cast<uint64_t>(size) > max_bytes)
    throw InputError(path.string(), fmt::format("is {} bytes, more than the limit of {}", size, max_bytes));
  std::rewind(f.get());
  std::vector<uint8_t> bytes(static_cast<size_t>(size));
  if (size > 0 && std::fread(bytes.data(), 1, bytes.size(), f.get()) != bytes.size())
    throw InputError(path.string(), "read failed");
  return bytes;
}

std::string read_text_file(const std::filesystem::path& path) {
  const auto bytes = read_file(path, 64u << 20);  // specs and manifests are small; 64 MiB is absurd for one
  return std::string(bytes.begin(), bytes.end());
}

std::vector<uint8_t> read_case_file(const std::filesystem::path& path, int64_t max_memory_bytes) {
  const int64_t limit = max_memory_bytes > 0 ? max_memory_bytes : default_memory_limit();
  std::error_code ec;
  const auto size = std::filesystem::file_size(path, ec);
  if (!ec && static_cast<double>(size) * kCaseBytesPerFileByte > static_cast<double>(limit))
    throw MemoryLimitError(
        fmt::format("{} is {} bytes; reading it needs about {} bytes, over the memory limit of {} "
                    "bytes",
                    path.string(), size, static_cast<double>(size) * kCaseBytesPerFileByte, limit));
  return read_file(path);
}

void write_file(const std::filesystem::path& path, const void* data, size_t size) {
  const std::filesystem::path tmp = path.string() + ".tmp";
  {
    File f(std::fopen(tmp.c_str(), "wb"));
    if (!f)
      throw std::runtime_error(fmt::format("{}: cannot create: {}", tmp.string(), std::strerror(errno)));
    if (size > 0 && std::fwrite(data, 1, size, f.get()) != size)
      throw std::runtime_error(fmt::format("{}: write failed: {}", tmp.string(), std::strerror(errno)));
    if (std::fflush(f.get()) != 0)
      throw std::runtime_error(fmt::format("{}: write failed: {}", tmp.string(), std::strerror(errno)));
  }
  std::filesystem::rename(tmp, path);
}

void write_file(const std::filesystem::path& path, const std::vector<uint8_t>& bytes) {
  write_file(path, bytes.data(), bytes.size());
}

void write_text_file(const std::filesystem::path& path, const std::string& text) {
  write_file(path, text.data(), text.size());
}

void refuse_existing(const std::filesystem::path& out, bool force) {
  std::error_code ec;
  if (!std::filesystem::exists(out, ec)) return;
  if (!force) throw InputError(out.string(), "already exists; pass --force to replace it");
  if (!std::filesystem::is_directory(out, ec))
    throw InputError(out.string(), "exists and is not a folder; refusing to replace it");
}

TempDir::TempDir(const std::filesystem::path& out) {
  const std::filesystem::path parent = out.has_parent_path() ? out.parent_path() : std::filesystem::path(".");
  std::filesystem::create_directories(parent);
  path_ = parent / fmt::format(".{}.tmp-{}", out.filename().string(), ::getpid());
  std::filesystem::remove_all(path_);
  std::filesystem::create_directories(path_);
}

TempDir::~TempDir() {
  if (!committed_) {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
}

void TempDir::commit(const std::filesystem::path& out) {
  std::error_code ec;
  if (std::filesystem::exists(out, ec)) std::filesystem::remove_all(out);
  std::filesystem::rename(path_, out);
  committed_ = true;
}

std::string sha256_hex(const uint8_t* data, size_t size) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (EVP_Digest(data, size, digest, &len, EVP_sha256(), nullptr) != 1)
    throw std::runtime_error("sha256: OpenSSL EVP_Digest failed");
  std::string hex;
  for (unsigned int i = 0; i < len; ++i) hex += fmt::format("{:02x}", digest[i]);
  return hex;
}

std::string sha256_hex(const std::vector<uint8_t>& bytes) {
  return sha256_hex(bytes.data(), bytes.size());
}

}  // namespace flashsim::golden
