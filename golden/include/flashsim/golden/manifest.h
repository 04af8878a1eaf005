#pragma once
// manifest.json of a suite folder:
//   {"format": "flashsim.golden.manifest/1", "suite": NAME, "version": N, "description": ...,
//    "generator": ..., "spec_sha256": ..., "case_count": M, ["shard": {"index": I, "count": N},]
//    "cases": [{"index": i, "name": ..., "file": ..., "sha256": ..., "description": ..., ["op": ...]}, ...]}
// An entry's op is the case's (rmsnorm, layernorm); attention's entries have none.
// A shard's manifest lists its own cases (every count-th from index); a whole suite's has no "shard".
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace flashsim::golden {

struct ManifestEntry {
  int64_t index = 0;  // position in the suite
  std::string name, file, sha256, description;
  std::string op;  // "rmsnorm", "layernorm"; empty: attention
  std::string_view op_name() const {
    return op.empty() ? std::string_view("attention") : std::string_view(op);
  }
};

struct Shard {
  int64_t index = 0, count = 1;
};
// "I/N" with 0 <= I < N; throws InputError("shard").
Shard parse_shard(const std::string& text);

struct Manifest {
  std::string suite, description, generator, spec_sha256;
  int64_t version = 1;
  int64_t case_count = 0;  // cases in the whole suite
  std::optional<Shard> shard;
  std::vector<ManifestEntry> cases;

  std::string to_json_text() const;  // deterministic, ends with a newline
};

Manifest parse_manifest(const std::string& text, const std::string& source);
// Reads DIR/manifest.json.
Manifest read_manifest(const std::filesystem::path& dir);

}  // namespace flashsim::golden
