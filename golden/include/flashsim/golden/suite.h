#pragma once
// Golden cases and suite specs.
//
// A case is one attention problem, the seed of its inputs and their magnitude. A suite spec (JSON, see
// golden/README.md, "Suite specs") lists cases directly or as groups: a `base` problem and `vary`, a map from field
// to a list of values, expanded as a cartesian product in the order written. Fields are the problem's
// (batch heads_q heads_kv seqlen_q seqlen_k head_dim head_dim_v scale causal window_left window_right softcap
// dtype bias mask mask_keep alibi seqlens_q seqlens_k) plus seed, magnitude, name, description; `seqlen`
// sets seqlen_q and seqlen_k; unset head_dim_v / heads_kv follow head_dim / heads_q; `causal: true` sets
// window_right 0; `seqlens_q` (and `seqlens_k`, default the same) make a variable-length batch; a case
// without a seed gets its position in the suite. A paged KV cache: page_size, cache_seqlens (a list sets the
// batch; one integer applies to every sequence; seqlen_k defaults to the longest), seqlen_new, num_blocks,
// num_splits. A block-sparse mask: block_mask (its shape, as bias), block_q, block_k, block_mask_spec. Attention
// sinks: sinks (true: a sink logit per q head; only such cases write the field). Dropout: dropout_p (> 0: a
// keep mask drawn with 1 - p, stored as the dropout_keep input; only such cases write the field). FP8 inputs:
// dtype e4m3 or e5m2, descale (none, per-tensor, per-head) and amax_fraction (only such cases write them). MLA:
// mla (true: DeepSeek's latent attention, V a view of K's first head_dim_v columns; only such cases write the
// field), whose unset heads_kv is 1, head_dim 576 (d_latent 512 + d_rope 64) and head_dim_v head_dim - 64.
//
// `op` names the operation a case checks: attention (the default; its cases do not write the field, so their
// files are those of before), rmsnorm or layernorm. A norm case's fields: rows, hidden, eps, residual, dtype,
// seed, magnitude, offset, outlier_rows, outlier_scale, zero_rows (flashsim/norm.h); the spec's defaults
// apply to it only where they are fields of a norm.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "flashsim/norm.h"
#include "flashsim/problem.h"

namespace flashsim::golden {

struct GoldenCase {
  std::string name;         // the file is name + ".safetensors"; letters, digits, '-', '_', '.'
  std::string description;  // one line
  AttentionProblem problem;
  uint64_t seed = 0;
  double magnitude = 1.0;  // q, k, v, dO are N(0, 1) * magnitude, rounded to the dtype
  // Split-KV (Flash-Decoding) splits of the emulated pipeline the tolerances derive from (1: FA2's forward).
  int64_t num_splits = 1;
  // A norm case (op rmsnorm / layernorm): its problem and how its inputs are drawn (magnitude is the
  // spec's); `problem` is unused then.
  std::optional<NormProblem> norm;
  NormInputSpec norm_inputs;

  bool is_norm() const { return norm.has_value(); }
};

// "attention", "rmsnorm" or "layernorm".
std::string_view op_name(const GoldenCase& c);
// The case in one line: the problem's describe(), and the inputs' knobs that are not the defaults.
std::string describe(const GoldenCase& c);

// The case as JSON: the problem's fields under the names above (scale resolved to its value, causal as
// window_right == 0), seed, magnitude, name, description; a norm case's op and fields.
nlohmann::ordered_json case_to_json(const GoldenCase& c);
// The inverse; throws InputError(where + ": " + field) for a missing or bad field.
GoldenCase case_from_json(const nlohmann::json& j, const std::string& where);

struct SuiteSpec {
  std::string name;
  int64_t version = 1;
  std::string description;
  std::vector<GoldenCase> cases;
  std::string spec_sha256;  // of the spec's text: ties generated shards to one spec
};

// Parses and expands a spec; every case is validated. Throws InputError(source, ...) naming the problem.
SuiteSpec parse_suite_spec(const std::string& text, const std::string& source);
// A built-in suite by name (golden/suites/NAME.json, compiled in) or a spec file by path.
SuiteSpec load_suite_spec(const std::string& name_or_path);
std::vector<std::string> builtin_suite_names();

}  // namespace flashsim::golden
