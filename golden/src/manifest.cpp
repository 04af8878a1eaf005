#include "flashsim/golden/manifest.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "flashsim/error.h"
#include "flashsim/golden/files.h"

namespace flashsim::golden {

using ojson = nlohmann::ordered_json;

Shard parse_shard(const std::string& text) {
  Shard s;
  const auto slash = text.find('/');
  try {
    if (slash == std::string::npos) throw std::invalid_argument("no slash");
    size_t used = 0;
    s.index = std::stoll(text.substr(0, slash), &used);
    if (used != slash) throw std::invalid_argument("index");
    const std::string count = text.substr(slash + 1);
    s.count = std::stoll(count, &used);
    if (used != count.size()) throw std::invalid_argument("count");
  } catch (const std::exception&) {
    throw InputError("shard", fmt::format("'{}' is not I/N (e.g. 0/4)", text));
  }
  if (s.count < 1 || s.index < 0 || s.index >= s.count)
    throw InputError("shard", fmt::format("'{}' needs 0 <= I < N", text));
  return s;
}

std::string Manifest::to_json_text() const {
  ojson j;
  j["format"] = "flashsim.golden.manifest/1";
  j["suite"] = suite;
  j["version"] = version;
  j["description"] = description;
  j["generator"] = generator;
  j["spec_sha256"] = spec_sha256;
  j["case_count"] = case_count;
  if (shard) j["shard"] = {{"index", shard->index}, {"count", shard->count}};
  j["cases"] = ojson::array();
  for (const auto& c : cases) {
    ojson e = {{"index", c.index},
               {"name", c.name},
               {"file", c.file},
               {"sha256", c.sha256},
               {"description", c.description}};
    if (!c.op.empty()) e["op"] = c.op;  // attention's entries carry no op, as before ops were added
    j["cases"].push_back(e);
  }
  return j.dump(2) + "\n";
}

Manifest parse_manifest(const std::string& text, const std::string& source) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw InputError(source, fmt::format("not valid JSON ({})", e.what()));
  }
  auto str = [&](const nlohmann::json& o, const char* k, const std::string& where) {
    if (!o.contains(k) || !o[k].is_string())
      throw InputError(source, fmt::format("{} has no string '{}'", where, k));
    return o[k].get<std::string>();
  };
  auto integer = [&](const nlohmann::json& o, const char* k, const std::string& where) {
    if (!o.contains(k) || !o[k].is_number_integer())
      throw InputError(source, fmt::format("{} has no integer '{}'", where, k));
    return o[k].get<int64_t>();
  };
  auto optional_str = [&](const nlohmann::json& o, const char* k, const std::string& where) {
    if (o.contains(k) && !o[k].is_string())
      throw InputError(source, fmt::format("{} has a '{}' that is not a string", where, k));
    return o.value(k, std::string());
  };
  if (!j.is_object()) throw InputError(source, "a manifest must be a JSON object");
  if (str(j, "format", "the manifest") != "flashsim.golden.manifest/1")
    throw InputError(source, "unknown manifest format (expected flashsim.golden.manifest/1)");
  Manifest m;
  m.suite = str(j, "suite", "the manifest");
  m.version = integer(j, "version", "the manifest");
  m.description = optional_str(j, "description", "the manifest");
  m.generator = str(j, "generator", "the manifest");
  m.spec_sha256 = str(j, "spec_sha256", "the manifest");
  m.case_count = integer(j, "case_count", "the manifest");
  if (m.case_count < 0) throw InputError(source, "case_count is negative");
  if (j.contains("shard")) {
    const auto& s = j["shard"];
    if (!s.is_object()) throw InputError(source, "shard is not an object");
    m.shard = Shard{integer(s, "index", "shard"), integer(s, "count", "shard")};
    if (m.shard->count < 1 || m.shard->index < 0 || m.shard->index >= m.shard->count)
      throw InputError(source, "shard needs 0 <= index < count");
  }
  if (!j.contains("cases") || !j["cases"].is_array())
    throw InputError(source, "the manifest has no cases list");
  for (size_t i = 0; i < j["cases"].size(); ++i) {
    const auto& c = j["cases"][i];
    const std::string where = fmt::format("cases[{}]", i);
    if (!c.is_object()) throw InputError(source, where + " is not an object");
    ManifestEntry e{integer(c, "index", where),
                    str(c, "name", where),
                    str(c, "file", where),
                    str(c, "sha256", where),
                    optional_str(c, "description", where),
                    optional_str(c, "op", where)};
    if (e.op == "attention") e.op.clear();
    if (e.index < 0 || e.index >= m.case_count)
      throw InputError(source,
                       fmt::format("{} has index {} outside 0..{}", where, e.index, m.case_count - 1));
    if (e.file.empty() || e.file.find('/') != std::string::npos || e.file.find('\\') != std::string::npos ||
        e.file[0] == '.')
      throw InputError(
          source, fmt::format("{} has file '{}': it must be a plain file name in the folder", where, e.file));
    if (e.sha256.size() != 64) throw InputError(source, fmt::format("{} has a malformed sha256", where));
    m.cases.push_back(std::move(e));
  }
  return m;
}

Manifest read_manifest(const std::filesystem::path& dir) {
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec))
    throw InputError(dir.string(), "is not a folder (a golden suite is a folder with manifest.json)");
  const auto path = dir / "manifest.json";
  if (!std::filesystem::exists(path, ec))
    throw InputError(path.string(), "not found: not a golden suite folder");
  return parse_manifest(read_text_file(path), path.string());
}

}  // namespace flashsim::golden
