// Built-in hardware profiles and their JSON form.
#include "flashsim/sim/hardware.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <optional>
#include <sstream>

#include "flashsim/error.h"
#include "profiles_data.h"

namespace flashsim::sim {

namespace {
// The measured figures a profile may lack (0: not measured): read, checked (>= 0) and written by one list.
constexpr std::pair<const char*, double HardwareProfile::*> kMeasuredFields[] = {
    {"achieved_mma_flops_fwd", &HardwareProfile::achieved_mma_flops_fwd},
    {"achieved_mma_flops_bwd", &HardwareProfile::achieved_mma_flops_bwd},
    {"achieved_dram_bytes_per_s", &HardwareProfile::achieved_dram_bytes_per_s},
    {"ncu_replay_write_bytes", &HardwareProfile::ncu_replay_write_bytes},
    {"ncu_dram_repeatability", &HardwareProfile::ncu_dram_repeatability},
    {"ncu_dram_reread_repeatability", &HardwareProfile::ncu_dram_reread_repeatability},
    {"kernel_latency_s", &HardwareProfile::kernel_latency_s},
    {"cta_dram_latency_s", &HardwareProfile::cta_dram_latency_s},
    {"sm_dram_bytes_per_s", &HardwareProfile::sm_dram_bytes_per_s},
    {"mma_sync_flops", &HardwareProfile::mma_sync_flops},
    {"smem_bytes_per_s", &HardwareProfile::smem_bytes_per_s},
    {"clock_hz", &HardwareProfile::clock_hz},
    {"l2_latency_s", &HardwareProfile::l2_latency_s},
    {"step_overhead_cycles", &HardwareProfile::step_overhead_cycles},
    {"mma_sync_warp_cycles", &HardwareProfile::mma_sync_warp_cycles},
    {"overlap_norm", &HardwareProfile::overlap_norm},
    {"warp_cpi", &HardwareProfile::warp_cpi},
    {"lockstep_cpi_factor", &HardwareProfile::lockstep_cpi_factor},
    {"direct_load_inflight_bytes", &HardwareProfile::direct_load_inflight_bytes},
    {"tma_latency_s", &HardwareProfile::tma_latency_s},
    {"tma_bytes_per_s", &HardwareProfile::tma_bytes_per_s},
    {"mbarrier_cycles", &HardwareProfile::mbarrier_cycles},
    {"named_barrier_cycles", &HardwareProfile::named_barrier_cycles},
};

// The JSON of the built-in profile named `name` (profiles/*.json), nullopt where there is none.
std::optional<nlohmann::json> builtin_json(std::string_view name) {
  for (const auto& [file, text] : detail::embedded_profiles()) {
    auto j = nlohmann::json::parse(text);
    if (j.value("name", std::string()) == name) return j;
  }
  return std::nullopt;
}

// The key that names a measured_steps entry: a child's entry replaces its parent's of the same key.
nlohmann::json measured_steps_key(const nlohmann::json& e) {
  return {e.value("kernel", ""), e.value("head_dim", 0), e.value("block_q", 0),
          e.value("block_k", 0), e.value("stages", 0),   e.value("persistent", false)};
}

// A child's measured_steps over its parent's, entry by entry: a card measures some kernels' tile costs itself
// (the H200 its forward's) and keeps its parent's for the rest. The source names both. An empty list is none:
// a profile that times every kernel by its component estimate.
void merge_measured_steps(const nlohmann::json& parent, nlohmann::json& own, const std::string& parent_name) {
  if (!own.contains("measured_steps") || !parent.contains("measured_steps") ||
      own.at("measured_steps").empty())
    return;
  nlohmann::json merged = nlohmann::json::array();
  for (const auto& e : parent.at("measured_steps")) {
    bool replaced = false;
    for (const auto& o : own.at("measured_steps"))
      replaced = replaced || measured_steps_key(o) == measured_steps_key(e);
    if (!replaced) merged.push_back(e);
  }
  for (const auto& o : own.at("measured_steps")) merged.push_back(o);
  own["measured_steps"] = merged;
  own["measured_steps_source"] = own.value("measured_steps_source", std::string()) +
                                 " The other entries, from " + parent_name + ": " +
                                 parent.value("measured_steps_source", std::string());
}

// j with its "inherits" resolved: the named built-in profile's fields, j's own over them (a JSON merge patch,
// so a child replaces a whole field, but measured_steps entry by entry). A chain deeper than kMaxInherits is a
// cycle.
nlohmann::json resolve_inherits(const nlohmann::json& j, int depth = 0) {
  constexpr int kMaxInherits = 4;  // H200 -> H100 is one level; four leave room without hiding a cycle
  if (!j.is_object() || !j.contains("inherits")) return j;
  if (!j.at("inherits").is_string())
    throw InputError("hw", "bad hardware profile: inherits must name a profile");
  const auto parent_name = j.at("inherits").get<std::string>();
  if (depth >= kMaxInherits)
    throw InputError("hw", fmt::format("profile inherits '{}': a chain over {} profiles (a cycle?)",
                                       parent_name, kMaxInherits));
  auto parent = builtin_json(parent_name);
  if (!parent)
    throw InputError("hw",
                     fmt::format("profile inherits '{}': no built-in profile of that name", parent_name));
  nlohmann::json merged = resolve_inherits(*parent, depth + 1);
  if (merged.contains("measured_steps") && merged.at("measured_steps").is_array())
    for (auto& e : merged.at("measured_steps"))  // where each was measured (a grandparent's keeps its own)
      if (e.is_object() && !e.contains("measured_on")) e["measured_on"] = parent_name;
  nlohmann::json own = j;
  own.erase("inherits");
  // a profile written back by to_json holds its merged list already (and inherited_fields)
  if (!own.contains("inherited_fields")) merge_measured_steps(merged, own, parent_name);
  merged.merge_patch(own);
  if (!own.contains("inherited_fields")) {  // which fields came from the parent (to_json writes them back)
    nlohmann::json inherited = nlohmann::json::array();
    for (const auto& [key, value] : merged.items())
      if (!own.contains(key)) inherited.push_back(key);
    merged["inherited_fields"] = inherited;
  }
  merged["inherits"] = parent_name;  // kept for readers (to_json, sim info)
  return merged;
}
}  // namespace

HardwareProfile profile_from_json(const nlohmann::json& raw) {
  HardwareProfile p;
  const nlohmann::json j = resolve_inherits(raw);
  try {
    p.name = j.at("name").get<std::string>();
    p.description = j.value("description", "");
    p.inherits = j.value("inherits", "");
    p.inherited_fields = j.value("inherited_fields", std::vector<std::string>{});
    p.sms = j.at("sms").get<int>();
    p.shared_memory_per_sm = j.at("shared_memory_per_sm").get<int64_t>();
    p.shared_memory_per_block = j.at("shared_memory_per_block").get<int64_t>();
    p.shared_memory_reserved_per_block = j.value("shared_memory_reserved_per_block", int64_t{0});
    p.registers_per_sm = j.value("registers_per_sm", int64_t{65536});
    p.max_threads_per_sm = j.value("max_threads_per_sm", 2048);
    p.max_ctas_per_sm = j.value("max_ctas_per_sm", 32);
    p.l2_bytes = j.at("l2_bytes").get<int64_t>();
    p.l2_effective_bytes = j.value("l2_effective_bytes", p.l2_bytes * 4 / 5);
    p.l2_dirty_bytes = j.value("l2_dirty_bytes", int64_t{0});
    p.l2_reuse_bytes = j.value("l2_reuse_bytes", int64_t{0});
    p.l2_adverse_reuse_bytes = j.value("l2_adverse_reuse_bytes", int64_t{0});
    p.l2_partitions = j.value("l2_partitions", 1);
    p.l2_ways = j.value("l2_ways", 16);
    p.l2_replacement = j.value("l2_replacement", std::string("lru"));
    p.l2_partitioned_adverse_bytes = j.value("l2_partitioned_adverse_bytes", int64_t{0});
    p.kernel_code_bytes = j.value("kernel_code_bytes", int64_t{0});
    p.sector_bytes = j.value("sector_bytes", 32);
    p.line_bytes = j.value("line_bytes", 128);
    p.dram_bytes_per_s = j.at("dram_bytes_per_s").get<double>();
    p.l2_bytes_per_s = j.value("l2_bytes_per_s", 2.5 * p.dram_bytes_per_s);
    p.tensor_flops_fp16 = j.at("tensor_flops_fp16").get<double>();
    p.fp32_flops = j.at("fp32_flops").get<double>();
    p.exp_per_s = j.at("exp_per_s").get<double>();
    for (const auto& [name, member] : kMeasuredFields) p.*member = j.value(name, 0.0);
    p.achieved_source = j.value("achieved_source", std::string());
    p.l2_source = j.value("l2_source", std::string());
    p.ncu_replay_source = j.value("ncu_replay_source", std::string());
    p.ncu_dram_repeatability_source = j.value("ncu_dram_repeatability_source", std::string());
    p.kernel_latency_source = j.value("kernel_latency_source", std::string());
    p.cta_dram_source = j.value("cta_dram_source", std::string());
    p.kernel_arch = j.value("kernel_arch", std::string());
    p.schedulers_per_sm = j.value("schedulers_per_sm", 4);
    p.cta_model_source = j.value("cta_model_source", std::string());
    p.wgmma_ss_flops_per_clock = j.value("wgmma_ss_flops_per_clock", std::vector<double>{});
    p.wgmma_rs_flops_per_clock = j.value("wgmma_rs_flops_per_clock", std::vector<double>{});
    p.hopper_source = j.value("hopper_source", std::string());
    for (const auto& e : j.value("measured_steps", nlohmann::json::array())) {
      MeasuredSteps m;
      m.kernel = e.at("kernel").get<std::string>();
      m.head_dim = e.at("head_dim").get<int>();
      m.block_q = e.at("block_q").get<int>();
      m.block_k = e.at("block_k").get<int>();
      m.stages = e.at("stages").get<int>();
      m.persistent = e.at("persistent").get<bool>();
      m.tile_s_by_steps = e.at("tile_s_by_steps").get<std::vector<std::pair<double, double>>>();
      m.masked_step_s = e.value("masked_step_s", 0.0);
      m.measured_on = e.value("measured_on", std::string());
      for (const auto& l : e.value("load", nlohmann::json::array())) {
        StreamLoad sl;
        sl.page_size = l.at("page_size").get<int>();
        for (const auto& pt : l.at("points")) {  // [ctas, step_s, cta_s]
          const auto v = pt.get<std::vector<double>>();
          if (v.size() != 3) throw InputError("hw", "measured_steps load: a point is [ctas, step_s, cta_s]");
          sl.points.push_back({v[0], v[1], v[2]});
        }
        m.load.push_back(sl);
      }
      p.measured_steps.push_back(m);
    }
    p.measured_steps_source = j.value("measured_steps_source", std::string());
  } catch (const nlohmann::json::exception& e) {
    throw InputError("hw", std::string("bad hardware profile: ") + e.what());
  }
  auto positive = [&](const char* field, double v) {
    if (!(v > 0 && std::isfinite(v)))
      throw InputError("hw", fmt::format("profile {}: {} must be positive, got {}", p.name, field, v));
  };
  auto non_negative = [&](const char* field, double v) {
    if (!(v >= 0 && std::isfinite(v)))
      throw InputError("hw", fmt::format("profile {}: {} must be >= 0, got {}", p.name, field, v));
  };
  positive("sms", p.sms);
  positive("shared_memory_per_sm", static_cast<double>(p.shared_memory_per_sm));
  positive("shared_memory_per_block", static_cast<double>(p.shared_memory_per_block));
  non_negative("shared_memory_reserved_per_block", static_cast<double>(p.shared_memory_reserved_per_block));
  positive("registers_per_sm", static_cast<double>(p.registers_per_sm));
  positive("max_threads_per_sm", p.max_threads_per_sm);
  positive("max_ctas_per_sm", p.max_ctas_per_sm);
  positive("l2_bytes", static_cast<double>(p.l2_bytes));
  positive("l2_effective_bytes", static_cast<double>(p.l2_effective_bytes));
  non_negative("l2_dirty_bytes", static_cast<double>(p.l2_dirty_bytes));
  non_negative("l2_reuse_bytes", static_cast<double>(p.l2_reuse_bytes));
  non_negative("l2_adverse_reuse_bytes", static_cast<double>(p.l2_adverse_reuse_bytes));
  positive("l2_partitions", p.l2_partitions);
  positive("l2_ways", p.l2_ways);
  if (std::find(kL2Replacements.begin(), kL2Replacements.end(), p.l2_replacement) == kL2Replacements.end())
    throw InputError("hw", fmt::format("profile {}: l2_replacement must be one of {}, got \"{}\"", p.name,
                                       fmt::join(kL2Replacements, ", "), p.l2_replacement));
  non_negative("l2_partitioned_adverse_bytes", static_cast<double>(p.l2_partitioned_adverse_bytes));
  non_negative("kernel_code_bytes", static_cast<double>(p.kernel_code_bytes));
  positive("sector_bytes", p.sector_bytes);
  positive("line_bytes", p.line_bytes);
  for (auto [field, v] : {std::pair{"dram_bytes_per_s", p.dram_bytes_per_s},
                          {"l2_bytes_per_s", p.l2_bytes_per_s},
                          {"tensor_flops_fp16", p.tensor_flops_fp16},
                          {"fp32_flops", p.fp32_flops},
                          {"exp_per_s", p.exp_per_s}})
    positive(field, v);
  for (const auto& [name, member] : kMeasuredFields) non_negative(name, p.*member);
  for (const auto& [field, table] : {std::pair{"wgmma_ss_flops_per_clock", &p.wgmma_ss_flops_per_clock},
                                     {"wgmma_rs_flops_per_clock", &p.wgmma_rs_flops_per_clock}}) {
    if (!table->empty() && table->size() != 3)
      throw InputError(
          "hw", fmt::format("profile {}: {} holds the rates at N = 64, 128, 256 (3 values), got {}", p.name,
                            field, table->size()));
    for (const double v : *table) positive(field, v);
  }
  for (const MeasuredSteps& m : p.measured_steps) {
    const std::string what = fmt::format("measured_steps {} d{}", m.kernel, m.head_dim);
    for (const int v : {m.head_dim, m.block_q, m.block_k, m.stages}) positive(what.c_str(), v);
    if (m.tile_s_by_steps.size() < 2)
      throw InputError("hw",
                       fmt::format("profile {}: {}: tile_s_by_steps needs 2 points at least", p.name, what));
    for (size_t i = 0; i < m.tile_s_by_steps.size(); ++i) {
      positive((what + " tile_s_by_steps").c_str(), m.tile_s_by_steps[i].second);
      if (i > 0 && !(m.tile_s_by_steps[i].first > m.tile_s_by_steps[i - 1].first))
        throw InputError(
            "hw", fmt::format("profile {}: {}: tile_s_by_steps' step counts must increase", p.name, what));
    }
    for (const StreamLoad& l : m.load) {
      if (l.page_size < 0 || l.points.empty())
        throw InputError("hw", fmt::format("profile {}: {}: a load entry needs a page size >= 0 and a point",
                                           p.name, what));
      for (size_t i = 0; i < l.points.size(); ++i) {
        const StreamLoadPoint& pt = l.points[i];
        if (!(pt.ctas >= 1 && pt.step_s > 0 && pt.cta_s >= 0 && std::isfinite(pt.step_s) &&
              std::isfinite(pt.cta_s)) ||
            (i > 0 && !(pt.ctas > l.points[i - 1].ctas)))
          throw InputError("hw",
                           fmt::format("profile {}: {}: load points are [ctas >= 1 increasing, step_s > 0, "
                                       "cta_s >= 0]",
                                       p.name, what));
      }
    }
    // a masked step may cost less than a plain one, but not less than nothing
    if (!std::isfinite(m.masked_step_s) || m.masked_step_s + m.step_s() < 0)
      throw InputError(
          "hw", fmt::format("profile {}: {}: masked_step_s {} makes a masked step cost less than 0", p.name,
                            what, m.masked_step_s));
  }
  positive("schedulers_per_sm", p.schedulers_per_sm);
  for (auto [field, v] : {std::pair{"ncu_dram_repeatability", p.ncu_dram_repeatability},
                          {"ncu_dram_reread_repeatability", p.ncu_dram_reread_repeatability}})
    if (v >= 1)
      throw InputError("hw", fmt::format("profile {}: {} is a fraction below 1, got {}", p.name, field, v));
  if (p.shared_memory_per_block > p.shared_memory_per_sm)
    throw InputError("hw",
                     fmt::format("profile {}: shared_memory_per_block exceeds shared_memory_per_sm", p.name));
  return p;
}

std::string HardwareProfile::measured_on(std::string_view field) const {
  for (const auto& f : inherited_fields)
    if (f == field) return "the " + inherits;
  return "this GPU";
}

double MeasuredSteps::tile_s(double steps) const {
  const auto& v = tile_s_by_steps;
  size_t i = 1;  // the segment [i - 1, i] that holds (or, at the ends, extends to) steps
  while (i + 1 < v.size() && steps > v[i].first) ++i;
  const auto [n0, t0] = v[i - 1];
  const auto [n1, t1] = v[i];
  return std::max(0.0, t0 + (t1 - t0) * (steps - n0) / (n1 - n0));
}

// (step_s, cta_s) of one page size's points at `ctas`: linear between them, the ends held.
static std::pair<double, double> load_at(const StreamLoad& l, double ctas) {
  const auto& v = l.points;
  if (ctas <= v.front().ctas) return {v.front().step_s, v.front().cta_s};
  if (ctas >= v.back().ctas) return {v.back().step_s, v.back().cta_s};
  size_t i = 1;
  while (ctas > v[i].ctas) ++i;
  const double w = (ctas - v[i - 1].ctas) / (v[i].ctas - v[i - 1].ctas);
  return {v[i - 1].step_s + w * (v[i].step_s - v[i - 1].step_s),
          v[i - 1].cta_s + w * (v[i].cta_s - v[i - 1].cta_s)};
}

std::pair<double, double> MeasuredSteps::at_load(double ctas, int page_size) const {
  if (load.empty()) return {0, 0};
  // lookups a step: block_k / page (a contiguous cache: none)
  const auto lookups = [&](int page) { return page > 0 ? static_cast<double>(block_k) / page : 0.0; };
  std::vector<const StreamLoad*> by(load.size());
  for (size_t i = 0; i < load.size(); ++i) by[i] = &load[i];
  std::sort(by.begin(), by.end(),
            [&](auto* a, auto* b) { return lookups(a->page_size) < lookups(b->page_size); });
  const double x = lookups(page_size);
  if (x <= lookups(by.front()->page_size)) return load_at(*by.front(), ctas);
  if (x >= lookups(by.back()->page_size)) return load_at(*by.back(), ctas);
  size_t i = 1;
  while (x > lookups(by[i]->page_size)) ++i;
  const double x0 = lookups(by[i - 1]->page_size), x1 = lookups(by[i]->page_size);
  const double w = (x - x0) / (x1 - x0);
  const auto [s0, c0] = load_at(*by[i - 1], ctas);
  const auto [s1, c1] = load_at(*by[i], ctas);
  return {s0 + w * (s1 - s0), c0 + w * (c1 - c0)};
}

double MeasuredSteps::step_s() const {
  const auto& v = tile_s_by_steps;
  return (v.back().second - v[v.size() - 2].second) / (v.back().first - v[v.size() - 2].first);
}

static nlohmann::json measured_steps_json(const std::vector<MeasuredSteps>& steps) {
  nlohmann::json out = nlohmann::json::array();
  for (const MeasuredSteps& m : steps) {
    out.push_back({{"kernel", m.kernel},
                   {"head_dim", m.head_dim},
                   {"block_q", m.block_q},
                   {"block_k", m.block_k},
                   {"stages", m.stages},
                   {"persistent", m.persistent},
                   {"tile_s_by_steps", m.tile_s_by_steps},
                   {"masked_step_s", m.masked_step_s}});
    if (!m.measured_on.empty()) out.back()["measured_on"] = m.measured_on;
    if (!m.load.empty()) {
      nlohmann::json load = nlohmann::json::array();
      for (const StreamLoad& l : m.load) {
        nlohmann::json points = nlohmann::json::array();
        for (const StreamLoadPoint& pt : l.points) points.push_back({pt.ctas, pt.step_s, pt.cta_s});
        load.push_back({{"page_size", l.page_size}, {"points", points}});
      }
      out.back()["load"] = load;
    }
  }
  return out;
}

nlohmann::json to_json(const HardwareProfile& p) {
  nlohmann::json j = {{"name", p.name},
                      {"description", p.description},
                      {"sms", p.sms},
                      {"shared_memory_per_sm", p.shared_memory_per_sm},
                      {"shared_memory_per_block", p.shared_memory_per_block},
                      {"shared_memory_reserved_per_block", p.shared_memory_reserved_per_block},
                      {"registers_per_sm", p.registers_per_sm},
                      {"max_threads_per_sm", p.max_threads_per_sm},
                      {"max_ctas_per_sm", p.max_ctas_per_sm},
                      {"l2_bytes", p.l2_bytes},
                      {"l2_effective_bytes", p.l2_effective_bytes},
                      {"l2_dirty_bytes", p.l2_dirty_bytes},
                      {"l2_reuse_bytes", p.l2_reuse_bytes},
                      {"l2_adverse_reuse_bytes", p.l2_adverse_reuse_bytes},
                      {"l2_partitions", p.l2_partitions},
                      {"l2_ways", p.l2_ways},
                      {"l2_replacement", p.l2_replacement},
                      {"l2_partitioned_adverse_bytes", p.l2_partitioned_adverse_bytes},
                      {"kernel_code_bytes", p.kernel_code_bytes},
                      {"sector_bytes", p.sector_bytes},
                      {"line_bytes", p.line_bytes},
                      {"dram_bytes_per_s", p.dram_bytes_per_s},
                      {"l2_bytes_per_s", p.l2_bytes_per_s},
                      {"tensor_flops_fp16", p.tensor_flops_fp16},
                      {"fp32_flops", p.fp32_flops},
                      {"exp_per_s", p.exp_per_s},
                      {"achieved_source", p.achieved_source},
                      {"l2_source", p.l2_source},
                      {"ncu_replay_source", p.ncu_replay_source},
                      {"ncu_dram_repeatability_source", p.ncu_dram_repeatability_source},
                      {"kernel_latency_source", p.kernel_latency_source},
                      {"cta_dram_source", p.cta_dram_source},
                      {"schedulers_per_sm", p.schedulers_per_sm},
                      {"cta_model_source", p.cta_model_source},
                      {"wgmma_ss_flops_per_clock", p.wgmma_ss_flops_per_clock},
                      {"wgmma_rs_flops_per_clock", p.wgmma_rs_flops_per_clock},
                      {"hopper_source", p.hopper_source},
                      {"measured_steps", measured_steps_json(p.measured_steps)},
                      {"measured_steps_source", p.measured_steps_source},
                      {"kernel_arch", p.kernel_arch}};
  for (const auto& [name, member] : kMeasuredFields) j[name] = p.*member;
  if (!p.inherits.empty()) {  // every field above is already the merged one
    j["inherits"] = p.inherits;
    j["inherited_fields"] = p.inherited_fields;
  }
  return j;
}

namespace {
std::vector<HardwareProfile> builtins() {
  std::vector<HardwareProfile> out;
  for (const auto& [file, text] : detail::embedded_profiles())
    out.push_back(profile_from_json(nlohmann::json::parse(text)));
  return out;
}
}  // namespace

std::vector<std::string> profile_names() {
  std::vector<std::string> names;
  for (const auto& p : builtins()) names.push_back(p.name);
  names.emplace_back("host");
  return names;
}

HardwareProfile load_profile(std::string_view name) {
  if (name == "host") return host_profile();
  for (auto& p : builtins())
    if (p.name == name) return p;
  if (name.size() > 5 && name.substr(name.size() - 5) == ".json") {
    std::ifstream in{std::string(name)};
    if (!in) throw InputError("hw", "cannot open " + std::string(name));
    try {
      return profile_from_json(nlohmann::json::parse(in));
    } catch (const nlohmann::json::parse_error& e) {
      throw InputError("hw", std::string(name) + ": " + e.what());
    }
  }
  std::string known;
  for (const auto& n : profile_names()) known += (known.empty() ? "" : ", ") + n;
  throw InputError("hw", "unknown hardware profile '" + std::string(name) + "' (known: " + known + ")");
}

}  // namespace flashsim::sim
