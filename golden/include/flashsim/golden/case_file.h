#pragma once
// One golden case as a safetensors file: inputs in their stored dtype (q k v do, and bias mask alibi_slopes
// block_mask cu_seqlens_q cu_seqlens_k where the case has them, sinks [heads_q] in F32 with attention sinks,
// dropout_keep [batch, heads_q, seqlen_q, seqlen_k] in BOOL with dropout; a KV-cache case has k_cache v_cache
// block_table cache_seqlens, and k_new v_new when it appends, in place of k v, and no do; an FP8 case has q k v
// in F8_E4M3 / F8_E5M2, q_descale k_descale v_descale in F32 with descales, and no do; an MLA case has no v,
// v_cache or v_new: V is the first head_dim_v columns of k / k_cache / k_new), exact outputs in F64
// (o lse dq dk dv, dbias with a bias, dsinks [heads_q] with sinks; o lse only for a KV-cache or FP8 case; no dv
// for MLA, whose dk is the whole gradient of K, V's part added into its first head_dim_v columns), and
// __metadata__["flashsim.case"]: the case (golden::case_to_json), the generator version, the reference algorithms
// used and the tolerance table.
// A norm case (op rmsnorm / layernorm) holds its own tensors instead (golden/norm_case.h); the functions
// below taking a GoldenCase or a LoadedCase work for every op.
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "flashsim/golden/safetensors.h"
#include "flashsim/golden/suite.h"
#include "flashsim/golden/tolerance.h"
#include "flashsim/inputs.h"
#include "flashsim/ref/attention.h"

namespace flashsim::golden {

constexpr const char* kCaseMetadataKey = "flashsim.case";
constexpr const char* kFormatMetadataKey = "format";
constexpr const char* kFormatName = "flashsim.golden/1";
std::string generator_version();  // "flashsim 0.1.0, golden format 1"

// Output names in file order; dbias only when the problem has a bias, dsinks only with sinks, dv only without MLA;
// o and lse only for a forward-only case (a KV cache, FP8 inputs).
std::vector<std::string> output_names(const AttentionProblem& p);
std::vector<int64_t> output_shape(const AttentionProblem& p, const std::string& name);
// The same for a case of any op.
std::vector<std::string> output_names(const GoldenCase& c);
std::vector<int64_t> output_shape(const GoldenCase& c, const std::string& name);
// k_new / v_new of a KV-cache case: [batch, seqlen_new, heads_kv, dim].
std::vector<int64_t> new_keys_shape(const AttentionProblem& p, int64_t dim);

struct AttentionOutputs {
  ref::ForwardResult fwd;
  ref::Gradients grads;
  const std::vector<double>& get(const std::string& name) const;  // "o", "lse", "dq", ...
};

// The golden outputs: tiled FlashAttention-2 forward and backward in fp64 (tested against naive fp64 and
// an independent oracle to 1e-12 in tests/).
AttentionOutputs compute_exact(const AttentionProblem& p, const AttentionInputs& in, ref::RunOptions opt);
// The reference computed through a GPU kernel's pipeline in `compute`, on the inputs rounded to it, by the
// given algorithms (default: tiled FlashAttention-2, the tolerances' reference); with tile.num_splits > 1 the
// forward is split-KV's (ref::forward_split_kv). KV-cache and FP8 problems have no backward. An FP8 case in a
// non-FP8 dtype computes on its dequantized inputs. Returns false (and nothing) when the rounded inputs are not
// finite (e.g. large bf16 values in fp16), or for an FP8 dtype that is not the case's own.
bool compute_emulated(const AttentionProblem& p, const AttentionInputs& in, DType compute,
                      ref::RunOptions opt, AttentionOutputs& out, Algorithm fwd = Algorithm::Fa2,
                      Algorithm bwd = Algorithm::Fa2, const TileConfig& tile = {});

// The compute dtypes a case's tolerance table covers: fp32, fp16, bf16 (and fp64 for an fp64 case); an FP8
// case's own FP8 dtype first.
std::vector<DType> tolerance_dtypes(DType case_dtype);

// Everything a golden file holds, ready to serialize.
SafetensorsFile make_case_file(const GoldenCase& c, const ref::RunOptions& opt);

// A golden file read back.
struct LoadedCase {
  GoldenCase c;
  AttentionInputs inputs;                              // an attention case's
  NormInputs norm_inputs;                              // a norm case's
  std::map<std::string, std::vector<double>> outputs;  // exact, by name
  ToleranceTable tolerances;
  nlohmann::json metadata;  // the parsed flashsim.case
};
LoadedCase load_case(const SafetensorsFile& f, const std::string& source);

// The exact outputs of a loaded case recomputed from its inputs by the current reference, by name (golden
// check).
std::map<std::string, std::vector<double>> recompute_exact(const LoadedCase& lc, const ref::RunOptions& run);

}  // namespace flashsim::golden
