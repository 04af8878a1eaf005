#include "flashsim/golden/suite.h"

#include <fmt/format.h>

#include <cmath>
#include <filesystem>
#include <limits>
#include <set>

#include "flashsim/error.h"
#include "flashsim/golden/files.h"
#include "flashsim/nearest.h"
#include "suites_data.h"

namespace flashsim::golden {

using ojson = nlohmann::ordered_json;

namespace {

const std::set<std::string>& known_fields() {
  static const std::set<std::string> f = {
      "batch", "heads_q", "heads_kv", "seqlen", "seqlen_q", "seqlen_k", "head_dim", "head_dim_v", "scale",
      "causal", "window_left", "window_right", "softcap", "dtype", "bias", "mask", "mask_keep", "alibi",
      "sinks", "dropout_p", "descale", "amax_fraction", "mla", "seqlens_q", "seqlens_k", "seed", "magnitude",
      "name", "description",
      // paged KV cache and split-KV (flashsim/kv_cache.h), block-sparse mask (flashsim/block_mask.h)
      "page_size", "num_blocks", "seqlen_new", "cache_seqlens", "num_splits", "block_mask", "block_q",
      "block_k", "block_mask_spec", "op"};
  return f;
}

// The fields of a norm case (flashsim/norm.h), the op's own and those every case has.
const std::set<std::string>& norm_fields() {
  static const std::set<std::string> f = {
      "op",        "rows", "hidden",      "eps",    "residual",     "dtype",         "seed",
      "magnitude", "name", "description", "offset", "outlier_rows", "outlier_scale", "zero_rows"};
  return f;
}

// Whether a case's fields name a norm op ("op" absent or "attention": attention).
template <class J>
bool is_norm_op(const J& j, const std::string& where) {
  if (!j.contains("op") || j["op"].is_null()) return false;
  if (!j["op"].is_string()) throw InputError(where, "op must be a string (attention, rmsnorm, layernorm)");
  const std::string op = j["op"].template get<std::string>();
  if (op == "attention") return false;
  try {
    parse_norm_kind(op);
  } catch (const InputError&) {
    throw InputError(where, fmt::format("op '{}' is not attention, rmsnorm or layernorm", op));
  }
  return true;
}

template <class J>
int64_t get_int(const J& j, const std::string& field, const std::string& where) {
  if (!j.is_number_integer()) throw InputError(where, fmt::format("{} must be an integer", field));
  if (j.is_number_unsigned() && j.template get<uint64_t>() > static_cast<uint64_t>(INT64_MAX))
    throw InputError(where, fmt::format("{} is too large", field));
  return j.template get<int64_t>();
}
template <class J>
double get_num(const J& j, const std::string& field, const std::string& where) {
  if (!j.is_number()) throw InputError(where, fmt::format("{} must be a number", field));
  return j.template get<double>();
}
template <class J>
std::string get_str(const J& j, const std::string& field, const std::string& where) {
  if (!j.is_string()) throw InputError(where, fmt::format("{} must be a string", field));
  return j.template get<std::string>();
}
template <class J>
std::vector<int64_t> get_int_list(const J& j, const std::string& field, const std::string& where) {
  if (!j.is_array()) throw InputError(where, fmt::format("{} must be a list of integers", field));
  std::vector<int64_t> v;
  for (const auto& e : j) v.push_back(get_int(e, field, where));
  return v;
}

template <class J>
bool get_bool(const J& j, const std::string& field, const std::string& where) {
  if (!j.is_boolean()) throw InputError(where, fmt::format("{} must be true or false", field));
  return j.template get<bool>();
}

// A norm case from a flat object of fields.
template <class J>
GoldenCase norm_case_from_fields(const J& j, const std::string& where) {
  for (const auto& [k, v] : j.items())
    if (!norm_fields().count(k))
      throw InputError(where,
                       fmt::format("'{}' is not a field of op {}", k, j["op"].template get<std::string>()));
  GoldenCase c;
  NormProblem p;
  NormInputSpec& in = c.norm_inputs;
  auto has = [&](const char* f) { return j.contains(f) && !j[f].is_null(); };
  p.kind = parse_norm_kind(get_str(j["op"], "op", where));
  if (has("rows")) p.rows = get_int(j["rows"], "rows", where);
  if (has("hidden")) p.hidden = get_int(j["hidden"], "hidden", where);
  if (has("eps")) p.eps = get_num(j["eps"], "eps", where);
  if (has("residual")) p.residual = get_bool(j["residual"], "residual", where);
  if (has("dtype")) p.dtype = parse_dtype(get_str(j["dtype"], "dtype", where));
  if (has("magnitude")) in.magnitude = get_num(j["magnitude"], "magnitude", where);
  if (has("offset")) in.offset = get_num(j["offset"], "offset", where);
  if (has("outlier_rows")) in.outlier_rows = get_int(j["outlier_rows"], "outlier_rows", where);
  if (has("outlier_scale")) in.outlier_scale = get_num(j["outlier_scale"], "outlier_scale", where);
  if (has("zero_rows")) in.zero_rows = get_int(j["zero_rows"], "zero_rows", where);
  c.magnitude = in.magnitude;
  if (has("seed")) {
    if (!j["seed"].is_number_unsigned()) throw InputError(where, "seed must be a non-negative integer");
    c.seed = j["seed"].template get<uint64_t>();
  }
  if (has("name")) c.name = get_str(j["name"], "name", where);
  if (has("description")) c.description = get_str(j["description"], "description", where);
  try {
    p.validate();
    in.validate(p);
  } catch (const InputError& e) {
    throw InputError(where, e.what());
  }
  c.norm = p;
  return c;
}

// A case from a flat object of fields (spec entries and metadata alike).
template <class J>
GoldenCase case_from_fields(const J& j, const std::string& where) {
  if (!j.is_object()) throw InputError(where, "a case must be a JSON object");
  if (is_norm_op(j, where)) return norm_case_from_fields(j, where);
  for (const auto& [k, v] : j.items())
    if (!known_fields().count(k)) throw InputError(where, fmt::format("unknown field '{}'", k));
  GoldenCase c;
  AttentionProblem& p = c.problem;
  auto has = [&](const char* f) { return j.contains(f) && !j[f].is_null(); };
  if (has("batch")) p.batch = get_int(j["batch"], "batch", where);
  if (has("heads_q")) p.heads_q = get_int(j["heads_q"], "heads_q", where);
  if (has("mla")) {
    if (!j["mla"].is_boolean()) throw InputError(where, "mla must be true or false");
    p.mla = j["mla"].template get<bool>();
  }
  // MLA's defaults: one latent KV head, d_latent 512 + d_rope 64 (DeepSeek-V2/V3's, FlashMLA's)
  p.heads_kv = has("heads_kv") ? get_int(j["heads_kv"], "heads_kv", where) : p.mla ? 1 : p.heads_q;
  if (has("seqlen")) p.seqlen_q = p.seqlen_k = get_int(j["seqlen"], "seqlen", where);
  if (has("seqlen_q")) p.seqlen_q = get_int(j["seqlen_q"], "seqlen_q", where);
  if (has("seqlen_k")) p.seqlen_k = get_int(j["seqlen_k"], "seqlen_k", where);
  if (p.mla) p.head_dim = 576;
  if (has("head_dim")) p.head_dim = get_int(j["head_dim"], "head_dim", where);
  if (p.mla && !has("head_dim_v") && p.head_dim <= 64)
    throw InputError(where,
                     fmt::format("mla with head_dim {} needs head_dim_v (the latent columns; the default "
                                 "leaves 64 rotary ones)",
                                 p.head_dim));
  p.head_dim_v = has("head_dim_v") ? get_int(j["head_dim_v"], "head_dim_v", where)
                 : p.mla           ? p.head_dim - 64
                                   : p.head_dim;
  if (has("scale")) p.scale = get_num(j["scale"], "scale", where);
  if (has("window_left")) p.window_left = get_int(j["window_left"], "window_left", where);
  if (has("window_right")) p.window_right = get_int(j["window_right"], "window_right", where);
  if (has("causal")) {
    if (!j["causal"].is_boolean()) throw InputError(where, "causal must be true or false");
    if (j["causal"].template get<bool>()) {
      if (p.window_right > 0)
        throw InputError(where, "causal is true but window_right > 0 (causal means window_right 0)");
      p.window_right = 0;
    } else if (p.window_right == 0) {
      throw InputError(where, "causal is false but window_right is 0 (which is causal)");
    }
  }
  if (has("softcap")) p.softcap = get_num(j["softcap"], "softcap", where);
  if (has("dtype")) p.dtype = parse_dtype(get_str(j["dtype"], "dtype", where));
  if (has("bias")) p.bias = parse_broadcast(get_str(j["bias"], "bias", where), "bias");
  if (has("mask")) p.mask = parse_broadcast(get_str(j["mask"], "mask", where), "mask");
  if (has("mask_keep")) p.mask_keep = get_num(j["mask_keep"], "mask_keep", where);
  if (has("alibi")) {
    if (!j["alibi"].is_boolean()) throw InputError(where, "alibi must be true or false");
    p.alibi = j["alibi"].template get<bool>();
  }
  if (has("dropout_p")) p.dropout_p = get_num(j["dropout_p"], "dropout_p", where);
  if (has("descale")) p.descale = parse_descale(get_str(j["descale"], "descale", where), "descale");
  if (has("amax_fraction")) p.amax_fraction = get_num(j["amax_fraction"], "amax_fraction", where);
  if (has("sinks")) {
    if (!j["sinks"].is_boolean()) throw InputError(where, "sinks must be true or false");
    p.sinks = j["sinks"].template get<bool>();
  }
  if (has("seqlens_q")) {
    p.seqlens_q = get_int_list(j["seqlens_q"], "seqlens_q", where);
    p.seqlens_k = has("seqlens_k") ? get_int_list(j["seqlens_k"], "seqlens_k", where) : p.seqlens_q;
    if (p.seqlens_q.empty()) throw InputError(where, "seqlens_q must not be empty");
    p.batch = static_cast<int64_t>(p.seqlens_q.size());
    p.seqlen_q = 0;
    p.seqlen_k = 0;
    for (int64_t l : p.seqlens_q) p.seqlen_q = std::max(p.seqlen_q, l);
    for (int64_t l : p.seqlens_k) p.seqlen_k = std::max(p.seqlen_k, l);
  } else if (has("seqlens_k")) {
    throw InputError(where, "seqlens_k given without seqlens_q");
  }
  if (has("page_size")) p.page_size = get_int(j["page_size"], "page_size", where);
  if (has("num_blocks")) p.num_blocks = get_int(j["num_blocks"], "num_blocks", where);
  if (has("seqlen_new")) p.seqlen_new = get_int(j["seqlen_new"], "seqlen_new", where);
  if (has("cache_seqlens")) {
    if (!p.kv_cache()) throw InputError(where, "cache_seqlens given without page_size");
    if (j["cache_seqlens"].is_array()) {
      p.cache_seqlens = get_int_list(j["cache_seqlens"], "cache_seqlens", where);
      if (p.cache_seqlens.empty()) throw InputError(where, "cache_seqlens must not be empty");
      p.batch = static_cast<int64_t>(p.cache_seqlens.size());
    } else {
      p.cache_seqlens.assign(p.batch, get_int(j["cache_seqlens"], "cache_seqlens", where));
    }
    // The table's capacity: the longest sequence unless seqlen_k says more.
    int64_t longest = 0;
    for (int64_t l : p.cache_seqlens) longest = std::max(longest, l + p.seqlen_new);
    if (!has("seqlen_k")) p.seqlen_k = longest;
  } else if (p.kv_cache()) {
    p.cache_seqlens.assign(p.batch, p.seqlen_k - p.seqlen_new);
  }
  if (has("num_splits")) c.num_splits = get_int(j["num_splits"], "num_splits", where);
  if (c.num_splits < 1 || c.num_splits > 1024)
    throw InputError(where, fmt::format("num_splits must be in [1, 1024], got {}", c.num_splits));
  if (has("block_mask"))
    p.block_mask = parse_broadcast(get_str(j["block_mask"], "block_mask", where), "block_mask");
  if (has("block_q")) p.block_mask_q = get_int(j["block_q"], "block_q", where);
  if (has("block_k")) p.block_mask_k = get_int(j["block_k"], "block_k", where);
  if (has("block_mask_spec")) p.block_mask_spec = get_str(j["block_mask_spec"], "block_mask_spec", where);
  if (has("seed")) {
    if (!j["seed"].is_number_unsigned()) throw InputError(where, "seed must be a non-negative integer");
    c.seed = j["seed"].template get<uint64_t>();
  }
  if (has("magnitude")) c.magnitude = get_num(j["magnitude"], "magnitude", where);
  if (!(std::isfinite(c.magnitude) && c.magnitude > 0))
    throw InputError(where, fmt::format("magnitude must be finite and > 0, got {}", c.magnitude));
  if (has("name")) c.name = get_str(j["name"], "name", where);
  if (has("description")) c.description = get_str(j["description"], "description", where);
  try {
    p.validate();
  } catch (const InputError& e) {
    throw InputError(where, e.what());
  }
  return c;
}

// A short, file-name-safe token for one varied value: "d64", "bf16", "causal", "q97".
std::string token(const std::string& field, const ojson& v) {
  static const std::map<std::string, std::string> abbrev = {{"batch", "b"},
                                                            {"heads_q", "h"},
                                                            {"heads_kv", "kv"},
                                                            {"seqlen", "n"},
                                                            {"seqlen_q", "q"},
                                                            {"seqlen_k", "k"},
                                                            {"head_dim", "d"},
                                                            {"head_dim_v", "dv"},
                                                            {"window_left", "wl"},
                                                            {"window_right", "wr"},
                                                            {"softcap", "cap"},
                                                            {"bias", "bias-"},
                                                            {"mask", "mask-"},
                                                            {"mask_keep", "keep"},
                                                            {"magnitude", "x"},
                                                            {"scale", "scale"},
                                                            {"seed", "seed"},
                                                            {"seqlens_q", "varlen"},
                                                            {"seqlens_k", "varlenk"},
                                                            {"page_size", "page"},
                                                            {"num_blocks", "nb"},
                                                            {"seqlen_new", "new"},
                                                            {"cache_seqlens", "cache"},
                                                            {"num_splits", "splits"},
                                                            {"block_mask", "bm-"},
                                                            {"block_q", "bq"},
                                                            {"block_k", "bk"},
                                                            {"block_mask_spec", ""},
                                                            {"op", ""},
                                                            {"rows", "r"},
                                                            {"hidden", "h"},
                                                            {"offset", "off"},
                                                            {"outlier_rows", "outliers"},
                                                            {"outlier_scale", "outx"},
                                                            {"zero_rows", "zeros"}};
  std::string value;
  if (field == "dtype" && v.is_string()) return v.get<std::string>();
  if (v.is_boolean()) return v.get<bool>() ? field : "no" + field;
  if (v.is_array()) {
    for (const auto& e : v) value += (value.empty() ? "" : "_") + e.dump();
  } else if (v.is_string()) {
    value = v.get<std::string>();
  } else {
    value = v.dump();
  }
  std::string out = abbrev.count(field) ? abbrev.at(field) : field;
  for (char ch : value)
    out += (std::isalnum(static_cast<unsigned char>(ch)) || ch == '.') ? ch : ch == '-' ? 'm' : '_';
  return out;
}

void check_name(const std::string& name, const std::string& where) {
  if (name.empty() || name.size() > 200) throw InputError(where, "case name must have 1 to 200 characters");
  for (char ch : name)
    if (!(std::isalnum(static_cast<unsigned char>(ch)) || ch == '-' || ch == '_' || ch == '.'))
      throw InputError(where,
                       fmt::format("case name '{}' may only hold letters, digits, '-', '_', '.'", name));
  if (name[0] == '.') throw InputError(where, fmt::format("case name '{}' must not start with '.'", name));
}

}  // namespace

std::string_view op_name(const GoldenCase& c) {
  return c.norm ? norm_kind_name(c.norm->kind) : "attention";
}

std::string describe(const GoldenCase& c) {
  if (!c.norm) return c.problem.describe();
  const NormInputSpec& in = c.norm_inputs;
  std::string s = c.norm->describe();
  if (in.offset != 0) s += fmt::format(" offset{}", in.offset);
  if (in.outlier_rows > 0) s += fmt::format(" outlier-rows{}x{}", in.outlier_rows, in.outlier_scale);
  if (in.zero_rows > 0) s += fmt::format(" zero-rows{}", in.zero_rows);
  return s;
}

namespace {
ojson norm_case_to_json(const GoldenCase& c) {
  const NormProblem& p = *c.norm;
  const NormInputSpec& in = c.norm_inputs;
  ojson j;
  j["op"] = std::string(norm_kind_name(p.kind));
  j["name"] = c.name;
  j["description"] = c.description;
  j["rows"] = p.rows;
  j["hidden"] = p.hidden;
  j["eps"] = p.eps;
  j["residual"] = p.residual;
  j["dtype"] = std::string(dtype_name(p.dtype));
  j["seed"] = c.seed;
  j["magnitude"] = in.magnitude;
  j["offset"] = in.offset;
  j["outlier_rows"] = in.outlier_rows;
  j["outlier_scale"] = in.outlier_scale;
  j["zero_rows"] = in.zero_rows;
  return j;
}
}  // namespace

ojson case_to_json(const GoldenCase& c) {
  if (c.norm) return norm_case_to_json(c);
  const AttentionProblem& p = c.problem;
  ojson j;
  j["name"] = c.name;
  j["description"] = c.description;
  j["batch"] = p.batch;
  j["heads_q"] = p.heads_q;
  j["heads_kv"] = p.heads_kv;
  j["seqlen_q"] = p.seqlen_q;
  j["seqlen_k"] = p.seqlen_k;
  j["head_dim"] = p.head_dim;
  j["head_dim_v"] = p.head_dim_v;
  j["scale"] = p.softmax_scale();
  j["causal"] = p.causal();
  j["window_left"] = p.window_left;
  j["window_right"] = p.window_right;
  j["softcap"] = p.softcap;
  j["dtype"] = std::string(dtype_name(p.dtype));
  j["seed"] = c.seed;
  j["magnitude"] = c.magnitude;
  j["bias"] = std::string(broadcast_name(p.bias));
  j["mask"] = std::string(broadcast_name(p.mask));
  j["mask_keep"] = p.mask_keep;
  j["alibi"] = p.alibi;
  if (p.varlen()) {
    j["seqlens_q"] = p.seqlens_q;
    j["seqlens_k"] = p.seqlens_k;
  }
  // Only cases that use them carry the fields below, so the files of the other cases stay as they were.
  if (p.kv_cache()) {
    j["page_size"] = p.page_size;
    j["num_blocks"] = p.cache_num_blocks();
    j["seqlen_new"] = p.seqlen_new;
    j["cache_seqlens"] = p.cache_seqlens;
  }
  if (p.kv_cache() || c.num_splits != 1) j["num_splits"] = c.num_splits;
  if (p.sinks) j["sinks"] = true;
  if (p.mla) j["mla"] = true;
  if (p.dropout()) j["dropout_p"] = p.dropout_p;
  if (p.descale != Descale::None) j["descale"] = std::string(descale_name(p.descale));
  if (p.amax_fraction != 1) j["amax_fraction"] = p.amax_fraction;
  if (p.block_mask != BroadcastShape::None) {
    j["block_mask"] = std::string(broadcast_name(p.block_mask));
    j["block_q"] = p.block_mask_q;
    j["block_k"] = p.block_mask_k;
    j["block_mask_spec"] = p.block_mask_spec;
  }
  return j;
}

GoldenCase case_from_json(const nlohmann::json& j, const std::string& where) {
  if (!j.is_object()) throw InputError(where, "the case is not a JSON object");
  if (is_norm_op(j, where)) {  // the metadata's other keys (generator, tolerances, ...) are not fields
    nlohmann::json fields = nlohmann::json::object();
    for (const auto& [k, v] : j.items())
      if (norm_fields().count(k)) fields[k] = v;
    return norm_case_from_fields(fields, where);
  }
  nlohmann::json fields = nlohmann::json::object();
  for (const auto& [k, v] : j.items())
    if (known_fields().count(k)) fields[k] = v;
  // seqlen_q/seqlen_k are implied by seqlens_* with variable lengths.
  if (fields.contains("seqlens_q")) {
    fields.erase("seqlen_q");
    fields.erase("seqlen_k");
    fields.erase("batch");
  }
  return case_from_fields(fields, where);
}

SuiteSpec parse_suite_spec(const std::string& text, const std::string& source) {
  ojson spec;
  try {
    spec = ojson::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw InputError(source, fmt::format("not valid JSON ({})", e.what()));
  }
  if (!spec.is_object()) throw InputError(source, "a suite spec must be a JSON object");
  for (const auto& [k, v] : spec.items())
    if (k != "name" && k != "version" && k != "description" && k != "defaults" && k != "groups" &&
        k != "cases")
      throw InputError(source, fmt::format("unknown top-level field '{}'", k));
  SuiteSpec s;
  s.spec_sha256 = sha256_hex(reinterpret_cast<const uint8_t*>(text.data()), text.size());
  if (!spec.contains("name")) throw InputError(source, "the spec has no name");
  s.name = get_str(spec["name"], "name", source);
  check_name(s.name, source);
  if (spec.contains("version")) s.version = get_int(spec["version"], "version", source);
  if (spec.contains("description")) s.description = get_str(spec["description"], "description", source);
  const ojson defaults = spec.value("defaults", ojson::object());
  if (!defaults.is_object()) throw InputError(source, "defaults must be a JSON object");

  struct Raw {
    ojson fields;
    std::string where, auto_name;
  };
  std::vector<Raw> raws;
  // A norm case takes only the defaults that are fields of a norm (a suite's defaults are attention's).
  auto merged = [&](const ojson& over) {
    ojson m = ojson::object();
    const bool norm = is_norm_op(over, source) || (!over.contains("op") && is_norm_op(defaults, source));
    for (const auto& [k, v] : defaults.items())
      if (!norm || norm_fields().count(k)) m[k] = v;
    for (const auto& [k, v] : over.items()) m[k] = v;
    return m;
  };
  if (spec.contains("groups")) {
    if (!spec["groups"].is_array()) throw InputError(source, "groups must be a list");
    for (size_t g = 0; g < spec["groups"].size(); ++g) {
      const ojson& group = spec["groups"][g];
      const std::string gwhere = fmt::format("{}: groups[{}]", source, g);
      if (!group.is_object() || !group.contains("name"))
        throw InputError(gwhere, "a group must be an object with a name");
      for (const auto& [k, v] : group.items())
        if (k != "name" && k != "description" && k != "base" && k != "vary")
          throw InputError(gwhere, fmt::format("unknown group field '{}'", k));
      const std::string gname = get_str(group["name"], "name", gwhere);
      const ojson base = merged(group.value("base", ojson::object()));
      const ojson vary = group.value("vary", ojson::object());
      if (!vary.is_object()) throw InputError(gwhere, "vary must be an object of field: [values]");
      std::vector<std::pair<std::string, ojson>> axes;
      for (const auto& [k, v] : vary.items()) {
        if (!v.is_array() || v.empty())
          throw InputError(gwhere, fmt::format("vary.{} must be a non-empty list", k));
        axes.emplace_back(k, v);
      }
      // Cartesian product, the last axis varying fastest.
      std::vector<size_t> idx(axes.size(), 0);
      while (true) {
        ojson fields = base;
        std::string name = gname;
        for (size_t a = 0; a < axes.size(); ++a) {
          fields[axes[a].first] = axes[a].second[idx[a]];
          name += "-" + token(axes[a].first, axes[a].second[idx[a]]);
        }
        if (group.contains("description") && !fields.contains("description"))
          fields["description"] = group["description"];
        raws.push_back({fields, fmt::format("{} case {}", gwhere, name), name});
        size_t a = axes.size();
        while (a > 0 && ++idx[a - 1] == axes[a - 1].second.size()) idx[--a] = 0;
        if (a == 0) break;
      }
    }
  }
  if (spec.contains("cases")) {
    if (!spec["cases"].is_array()) throw InputError(source, "cases must be a list");
    for (size_t i = 0; i < spec["cases"].size(); ++i) {
      const ojson& c = spec["cases"][i];
      const std::string where = fmt::format("{}: cases[{}]", source, i);
      if (!c.is_object() || !c.contains("name"))
        throw InputError(where, "a case must be an object with a name");
      raws.push_back({merged(c), where, ""});
    }
  }
  if (raws.empty()) throw InputError(source, "the spec has no cases");
  std::set<std::string> names;
  for (size_t i = 0; i < raws.size(); ++i) {
    ojson fields = raws[i].fields;
    if (!fields.contains("name")) fields["name"] = raws[i].auto_name;
    if (!fields.contains("seed")) fields["seed"] = i;
    GoldenCase c = case_from_fields(fields, raws[i].where);
    check_name(c.name, raws[i].where);
    if (!names.insert(c.name).second)
      throw InputError(raws[i].where, fmt::format("duplicate case name '{}'", c.name));
    const std::string d = describe(c);
    c.description = c.description.empty() ? d : c.description + ": " + d;
    if (c.magnitude != 1.0) c.description += fmt::format(" inputs x{}", c.magnitude);
    s.cases.push_back(std::move(c));
  }
  return s;
}

std::vector<std::string> builtin_suite_names() {
  std::vector<std::string> names;
  for (const auto& [name, text] : detail::embedded_suites()) names.emplace_back(name);
  return names;
}

SuiteSpec load_suite_spec(const std::string& name_or_path) {
  for (const auto& [name, text] : detail::embedded_suites())
    if (name == name_or_path) return parse_suite_spec(std::string(text), "suite " + name_or_path);
  std::error_code ec;
  if (!std::filesystem::is_regular_file(name_or_path, ec)) {
    std::string known;
    for (const auto& n : builtin_suite_names()) known += (known.empty() ? "" : ", ") + n;
    const auto close = nearest(name_or_path, builtin_suite_names());
    throw InputError(
        "suite", fmt::format("'{}' is neither a built-in suite ({}) nor a spec file{}", name_or_path, known,
                             close ? fmt::format("; did you mean '{}'?", *close) : ""));
  }
  return parse_suite_spec(read_text_file(name_or_path), name_or_path);
}

}  // namespace flashsim::golden
