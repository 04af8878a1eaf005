#pragma once
// Norm cases (op rmsnorm / layernorm) in the golden format: inputs x weight (bias: LayerNorm) (residual) dy in
// the case's dtype; exact outputs in F64: y (h) rstd (mean) dx dweight (dbias) (dresidual), in that order;
// __metadata__["flashsim.case"] as for attention (the case, generator, reference, tolerance rule and table).
// The tolerance rule is attention's (tolerance.h) with each output's own magnitude (dx and dresidual share
// theirs) and L = max(rows, hidden): a row's statistics sum hidden terms, dweight and dbias sum rows.
#include <map>
#include <string>
#include <vector>

#include "flashsim/golden/safetensors.h"
#include "flashsim/golden/suite.h"
#include "flashsim/norm.h"
#include "flashsim/ref/norm.h"
#include "flashsim/ref/options.h"

namespace flashsim::golden {

std::vector<std::string> norm_input_names(const NormProblem& p);
std::vector<std::string> norm_output_names(const NormProblem& p);
// [rows, hidden], [rows] or [hidden]; throws InputError("output") for a name the problem has not.
std::vector<int64_t> norm_output_shape(const NormProblem& p, const std::string& name);

using NamedOutputs = std::map<std::string, std::vector<double>>;
// Forward and backward by the reference (ref::norm_forward / norm_backward), by output name.
NamedOutputs norm_outputs(const NormProblem& p, const NormInputs& in, const ref::NormOptions& opt);
// The emulated pipeline in `compute` on the inputs rounded to it; false (and nothing) when they overflow it.
bool norm_emulated(const NormProblem& p, const NormInputs& in, DType compute, ref::NormOrder order,
                   int threads, NamedOutputs& out);

SafetensorsFile make_norm_case_file(const GoldenCase& c, const ref::RunOptions& opt);
// The inputs of a norm case file, checked against the problem (dtype, shape, representable values).
NormInputs load_norm_inputs(const SafetensorsFile& f, const NormProblem& p, const std::string& source);
// A candidate file as a norm kernel in `compute` writes one: rstd and mean in fp32, the rest in `compute`.
SafetensorsFile norm_candidate_file(const NormProblem& p, const NamedOutputs& out, DType compute);

// Generation cost (for the ETA) and memory (for the limit) of a norm case.
double norm_generation_work(const NormProblem& p);
int64_t norm_generation_memory_bytes(const NormProblem& p);

}  // namespace flashsim::golden
