#include "flashsim/golden/norm_case.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "case_tensors.h"
#include "flashsim/error.h"
#include "flashsim/golden/case_file.h"
#include "flashsim/golden/tolerance.h"
#include "flashsim/golden/verify.h"

namespace flashsim::golden {

using ojson = nlohmann::ordered_json;

std::vector<std::string> norm_input_names(const NormProblem& p) {
  std::vector<std::string> n = {"x", "weight"};
  if (p.has_bias()) n.emplace_back("bias");
  if (p.residual) n.emplace_back("residual");
  n.emplace_back("dy");
  return n;
}

std::vector<std::string> norm_output_names(const NormProblem& p) {
  std::vector<std::string> n = {"y"};
  if (p.residual) n.emplace_back("h");
  n.emplace_back("rstd");
  if (p.has_bias()) n.emplace_back("mean");
  n.insert(n.end(), {"dx", "dweight"});
  if (p.has_bias()) n.emplace_back("dbias");
  if (p.residual) n.emplace_back("dresidual");
  return n;
}

std::vector<int64_t> norm_output_shape(const NormProblem& p, const std::string& name) {
  const auto names = norm_output_names(p);
  if (std::find(names.begin(), names.end(), name) == names.end())
    throw InputError("output", fmt::format("'{}' is not an output of this {} case ({})", name,
                                           norm_kind_name(p.kind), fmt::join(names, " ")));
  if (name == "rstd" || name == "mean") return {p.rows};
  if (name == "dweight" || name == "dbias") return {p.hidden};
  return {p.rows, p.hidden};
}

NamedOutputs norm_outputs(const NormProblem& p, const NormInputs& in, const ref::NormOptions& opt) {
  ref::NormForward f = ref::norm_forward(p, in, opt);
  ref::NormGradients g = ref::norm_backward(p, in, f, opt);
  NamedOutputs out = {{"y", std::move(f.y)},
                      {"rstd", std::move(f.rstd)},
                      {"dx", std::move(g.dx)},
                      {"dweight", std::move(g.dweight)}};
  if (p.residual) {
    out["h"] = std::move(f.h);
    out["dresidual"] = std::move(g.dresidual);
  }
  if (p.has_bias()) {
    out["mean"] = std::move(f.mean);
    out["dbias"] = std::move(g.dbias);
  }
  return out;
}

bool norm_emulated(const NormProblem& p, const NormInputs& in, DType compute, ref::NormOrder order,
                   int threads, NamedOutputs& out) {
  NormProblem pc = p;
  pc.dtype = compute;
  NormInputs ic = in;
  for (auto* t : {&ic.x, &ic.weight, &ic.bias, &ic.residual, &ic.dy})
    if (!detail::round_all(*t, compute)) return false;
  out = norm_outputs(pc, ic, {ref::Precision::Emulated, order, threads});
  return true;
}

SafetensorsFile make_norm_case_file(const GoldenCase& c, const ref::RunOptions& opt) {
  const NormProblem& p = *c.norm;
  const NormInputs in = make_random_norm_inputs(p, c.seed, c.norm_inputs);
  const NamedOutputs exact = norm_outputs(p, in, {ref::Precision::Exact, {}, opt.threads});
  const auto names = norm_output_names(p);

  // M: each output's own max|exact| (dresidual is dx)
  std::map<std::string, double> magnitude;
  for (const auto& name : names) magnitude[name] = error_stats(exact.at(name), exact.at(name)).magnitude;
  const int64_t accumulation_length = std::max(p.rows, p.hidden);  // a row's statistics; dweight's row sum

  ojson tol = ojson::object();
  for (DType d : tolerance_dtypes(p.dtype)) {
    NamedOutputs emu;
    if (!norm_emulated(p, in, d, ref::NormOrder::Sequential, opt.threads, emu))
      continue;  // inputs overflow d
    const auto row = tolerance_row(
        names, d, [&](const std::string& n) { return error_stats(exact.at(n), emu.at(n)); }, magnitude,
        accumulation_length);
    if (row) tol[std::string(dtype_name(d))] = *row;
  }

  SafetensorsFile f;
  const StDType st = st_dtype_of(p.dtype);
  const std::vector<int64_t> matrix = {p.rows, p.hidden}, vec = {p.hidden};
  f.add("x", Tensor::from_doubles(st, matrix, in.x));
  f.add("weight", Tensor::from_doubles(st, vec, in.weight));
  if (p.has_bias()) f.add("bias", Tensor::from_doubles(st, vec, in.bias));
  if (p.residual) f.add("residual", Tensor::from_doubles(st, matrix, in.residual));
  f.add("dy", Tensor::from_doubles(st, matrix, in.dy));
  for (const auto& name : names)
    f.add(name, Tensor::from_doubles(StDType::F64, norm_output_shape(p, name), exact.at(name)));

  ojson meta = case_to_json(c);
  meta["generator"] = generator_version();
  meta["reference"] = {
      {"forward", p.kind == NormKind::RmsNorm ? "y = h rstd w, rstd = 1/sqrt(mean(h^2) + eps)"
                                              : "y = (h - mean) rstd w + b, rstd = 1/sqrt(var(h) + eps)"},
      {"backward",
       "closed form: dh = rstd (g - xhat mean(g xhat) [- mean(g)]), g = dy w; dweight = sum_rows dy "
       "xhat; dx = dresidual = dh"},
      {"precision", "exact (fp64 on the inputs as stored)"},
      {"emulated",
       "h = x + residual in fp32 stored in the dtype; statistics of the stored h in fp32, rstd and mean kept "
       "in "
       "fp32; dweight, dbias summed over rows in fp32; outputs rounded to the dtype"}};
  meta["tolerance_rule"] = {
      {"max_abs", "factor * emulated_max_abs + 2 ulp_S(magnitude) + accumulation * magnitude"},
      {"rel_l2", "factor * emulated_rel_l2 + u_S + accumulation"},
      {"S", "the coarser of storage (the emulated output's dtype) and the candidate's storage dtype"},
      {"magnitude", "max|exact| of the output"},
      {"accumulation", "2 sqrt(L) u_fp32, L = max(rows, hidden)"},
      {"factor_forward", kForwardFactor},
      {"factor_backward", kBackwardFactor}};
  meta["tolerances"] = tol;
  f.metadata[kFormatMetadataKey] = kFormatName;
  f.metadata[kCaseMetadataKey] = meta.dump();
  return f;
}

NormInputs load_norm_inputs(const SafetensorsFile& f, const NormProblem& p, const std::string& source) {
  const std::vector<int64_t> matrix = {p.rows, p.hidden}, vec = {p.hidden};
  NormInputs in;
  in.x = detail::input(f, "x", matrix, p.dtype, source);
  in.weight = detail::input(f, "weight", vec, p.dtype, source);
  if (p.has_bias()) in.bias = detail::input(f, "bias", vec, p.dtype, source);
  if (p.residual) in.residual = detail::input(f, "residual", matrix, p.dtype, source);
  in.dy = detail::input(f, "dy", matrix, p.dtype, source);
  try {
    in.validate(p);
  } catch (const InputError& e) {
    throw InputError(source, e.what());
  }
  return in;
}

SafetensorsFile norm_candidate_file(const NormProblem& p, const NamedOutputs& out, DType compute) {
  SafetensorsFile f;
  f.metadata[kComputeDtypeKey] = std::string(dtype_name(compute));
  for (const auto& name : norm_output_names(p))
    f.add(name, Tensor::from_doubles(st_dtype_of(emulated_storage(name, compute)), norm_output_shape(p, name),
                                     out.at(name)));
  return f;
}

double norm_generation_work(const NormProblem& p) {
  // about 30 operations an element for a forward and backward, one exact and 3-4 emulated runs
  return 30.0 * static_cast<double>(p.elems()) *
         (1.0 + static_cast<double>(tolerance_dtypes(p.dtype).size()));
}

int64_t norm_generation_memory_bytes(const NormProblem& p) {
  // elements of [rows, hidden]: inputs x residual dy and their rounded copy, outputs y h dx dresidual exact and
  // emulated, the backward's xhat, 8 bytes each; the file (inputs in the dtype, outputs in F64) twice
  const double e = static_cast<double>(p.elems());
  const double bytes = 8 * e * (2 * 3 + 2 * 4 + 1) + 2 * e * (3 * dtype_bytes(p.dtype) + 4 * 8);
  return bytes > 9e18 ? INT64_MAX : static_cast<int64_t>(bytes);
}

}  // namespace flashsim::golden
