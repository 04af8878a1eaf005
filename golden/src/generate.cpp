#include "flashsim/golden/generate.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cmath>
#include <map>

#include "flashsim/error.h"
#include "flashsim/golden/case_file.h"
#include "flashsim/golden/files.h"
#include "flashsim/golden/norm_case.h"
#include "flashsim/golden/safetensors.h"
#include "flashsim/memory.h"

namespace flashsim::golden {

namespace fs = std::filesystem;

double generation_work(const GoldenCase& c) {
  if (c.norm) return norm_generation_work(*c.norm);
  // one exact and tolerance_dtypes() emulated runs, each a forward and a backward (2.5x the forward; KV-cache
  // cases have no backward)
  const double runs = 1.0 + static_cast<double>(tolerance_dtypes(c.problem.dtype).size());
  return runs * (c.problem.forward_only() ? 1.0 : 3.5) * std::max(c.problem.forward_flops(), 1.0);
}

int64_t generation_memory_bytes(const GoldenCase& c) {
  if (c.norm) return norm_generation_memory_bytes(*c.norm);
  const AttentionProblem& p = c.problem;
  const double in =
      static_cast<double>(p.q_elems() + p.k_elems() + p.v_elems() + p.o_elems() + p.bias_elems());
  const double out = static_cast<double>(p.o_elems() + p.lse_elems() + p.q_elems() + p.k_elems() +
                                         p.v_elems() + p.bias_elems());
  // a KV cache's k_cache / v_cache (and their rounded copies) beside the gathered k / v
  const double cache =
      p.kv_cache()
          ? static_cast<double>(p.cache_num_blocks() * p.page_size * p.heads_kv * (p.head_dim + p.head_dim_v))
          : 0.0;
  const double masks = static_cast<double>(p.mask_elems() + p.block_mask_elems());
  const double file = (in + cache) * dtype_bytes(p.dtype) + out * 8 + masks;
  // inputs + rounded copy, exact + emulated outputs (8 bytes each), the file twice (tensors, then bytes)
  const double bytes = 8 * (2 * in + 2 * out + 2 * cache) + 2 * file + 3 * masks;
  return bytes > 9e18 ? INT64_MAX : static_cast<int64_t>(bytes);
}

Manifest generate_suite(const SuiteSpec& spec, const fs::path& out, const GenerateOptions& opt) {
  refuse_existing(out, opt.force);
  if (opt.shard.count < 1 || opt.shard.index < 0 || opt.shard.index >= opt.shard.count)
    throw InputError("shard", "needs 0 <= I < N");
  Manifest m;
  m.suite = spec.name;
  m.version = spec.version;
  m.description = spec.description;
  m.generator = generator_version();
  m.spec_sha256 = spec.spec_sha256;
  m.case_count = static_cast<int64_t>(spec.cases.size());
  if (opt.shard.count > 1) m.shard = opt.shard;

  std::vector<int64_t> mine;
  Progress pr;
  const int64_t limit = opt.run.max_memory_bytes > 0 ? opt.run.max_memory_bytes : default_memory_limit();
  for (int64_t i = opt.shard.index; i < m.case_count; i += opt.shard.count) {
    mine.push_back(i);
    pr.work_total += generation_work(spec.cases[i]);
    const int64_t need = generation_memory_bytes(spec.cases[i]);
    if (need > limit)
      throw MemoryLimitError(
          fmt::format("case {} needs {} bytes ({:.2f} GiB), over the memory limit of {} bytes "
                      "({:.2f} GiB)",
                      spec.cases[i].name, need, static_cast<double>(need) / (1 << 30), limit,
                      static_cast<double>(limit) / (1 << 30)));
  }
  pr.total = static_cast<int64_t>(mine.size());

  TempDir tmp(out);
  for (int64_t i : mine) {
    const GoldenCase& c = spec.cases[i];
    pr.current = c.name;
    if (opt.progress) opt.progress(pr);
    const std::vector<uint8_t> bytes = serialize(make_case_file(c, opt.run));
    const std::string file = c.name + ".safetensors";
    write_file(tmp.path() / file, bytes);
    m.cases.push_back(
        {i, c.name, file, sha256_hex(bytes), c.description, c.norm ? std::string(op_name(c)) : ""});
    ++pr.done;
    pr.work_done += generation_work(c);
  }
  write_text_file(tmp.path() / "manifest.json", m.to_json_text());
  tmp.commit(out);
  pr.current.clear();
  if (opt.progress) opt.progress(pr);
  return m;
}

Manifest merge_shards(const std::vector<fs::path>& shards, const fs::path& out, bool force) {
  if (shards.empty()) throw InputError("merge", "no shard folders given");
  refuse_existing(out, force);
  std::vector<Manifest> ms;
  for (const auto& s : shards) ms.push_back(read_manifest(s));
  const Manifest& first = ms[0];
  std::map<int64_t, std::pair<ManifestEntry, fs::path>> entries;
  for (size_t k = 0; k < ms.size(); ++k) {
    const Manifest& m = ms[k];
    const std::string src = shards[k].string();
    if (m.suite != first.suite || m.version != first.version || m.spec_sha256 != first.spec_sha256 ||
        m.generator != first.generator || m.case_count != first.case_count)
      throw InputError(
          src, fmt::format("is a shard of a different suite, spec or generator than {}", shards[0].string()));
    for (const auto& e : m.cases) {
      if (m.shard && e.index % m.shard->count != m.shard->index)
        throw InputError(src, fmt::format("case {} does not belong to shard {}/{}", e.name, m.shard->index,
                                          m.shard->count));
      if (entries.count(e.index))
        throw InputError(src, fmt::format("case {} (index {}) is also in {}", e.name, e.index,
                                          entries[e.index].second.string()));
      entries[e.index] = {e, shards[k]};
    }
  }
  if (static_cast<int64_t>(entries.size()) != first.case_count) {
    int64_t missing = -1;
    for (int64_t i = 0; i < first.case_count; ++i)
      if (!entries.count(i)) {
        missing = i;
        break;
      }
    throw InputError("merge",
                     fmt::format("the shards hold {} of the suite's {} cases (first missing index {})",
                                 entries.size(), first.case_count, missing));
  }
  Manifest m = first;
  m.shard.reset();
  m.cases.clear();
  TempDir tmp(out);
  for (const auto& [index, ep] : entries) {
    const auto& [e, dir] = ep;
    const std::vector<uint8_t> bytes = read_file(dir / e.file);
    if (sha256_hex(bytes) != e.sha256)
      throw InputError((dir / e.file).string(), "sha256 does not match its manifest");
    write_file(tmp.path() / e.file, bytes);
    m.cases.push_back(e);
  }
  write_text_file(tmp.path() / "manifest.json", m.to_json_text());
  tmp.commit(out);
  return m;
}

std::vector<CheckedCase> check_suite(const fs::path& dir, const ref::RunOptions& run,
                                     const ProgressFn& progress) {
  const Manifest m = read_manifest(dir);
  std::vector<CheckedCase> out;
  Progress pr;
  pr.total = static_cast<int64_t>(m.cases.size());
  for (const auto& e : m.cases) {
    CheckedCase cc;
    cc.name = e.name;
    pr.current = e.name;
    if (progress) progress(pr);
    const fs::path path = dir / e.file;
    try {
      const std::vector<uint8_t> bytes = read_case_file(path, run.max_memory_bytes);
      cc.sha_ok = sha256_hex(bytes) == e.sha256;
      if (!cc.sha_ok) cc.problem = "sha256 does not match the manifest";
      const LoadedCase lc = load_case(parse(bytes, path.string()), path.string());
      const auto now = recompute_exact(lc, run);
      for (const auto& [name, stored] : lc.outputs) {
        const ErrorStats s = error_stats(stored, now.at(name));
        double rel = s.magnitude > 0 ? s.max_abs / s.magnitude : s.max_abs;
        if (s.nonfinite > 0 || s.inf_mismatch > 0) rel = INFINITY;
        if (rel > cc.worst_rel || cc.worst_output.empty()) {
          cc.worst_rel = rel;
          cc.worst_output = name;
        }
      }
    } catch (const InputError& err) {
      cc.problem = err.what();
    }
    out.push_back(cc);
    ++pr.done;
  }
  pr.current.clear();
  if (progress) progress(pr);
  return out;
}

}  // namespace flashsim::golden
