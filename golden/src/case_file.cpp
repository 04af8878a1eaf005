#include "flashsim/golden/case_file.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "case_tensors.h"
#include "flashsim/error.h"
#include "flashsim/golden/norm_case.h"

namespace flashsim::golden {

using detail::check_shape;
using detail::input;
using detail::int_input;
using detail::need;
using detail::round_all;

using ojson = nlohmann::ordered_json;

std::string generator_version() {
  return "flashsim 0.1.0, golden format 1";
}

std::vector<std::string> output_names(const AttentionProblem& p) {
  // decode and FP8 kernels have no backward: the forward is the golden
  if (p.forward_only()) return {"o", "lse"};
  std::vector<std::string> n = {"o", "lse", "dq", "dk"};
  if (!p.mla) n.emplace_back("dv");  // MLA: V is a view of K, whose dk holds V's gradient too
  if (p.bias != BroadcastShape::None) n.emplace_back("dbias");
  if (p.sinks) n.emplace_back("dsinks");
  return n;
}

std::vector<int64_t> output_shape(const AttentionProblem& p, const std::string& name) {
  if (name == "o") return p.o_shape();
  if (name == "lse") return p.lse_shape();
  if (name == "dq") return p.q_shape();
  if (name == "dk") return p.k_shape();
  if (name == "dv") return p.v_shape();
  if (name == "dbias") return p.broadcast_shape(p.bias);
  if (name == "dsinks") return {p.heads_q};
  throw InputError("output", fmt::format("unknown output '{}'", name));
}

const std::vector<double>& AttentionOutputs::get(const std::string& name) const {
  if (name == "o") return fwd.o;
  if (name == "lse") return fwd.lse;
  if (name == "dq") return grads.dq;
  if (name == "dk") return grads.dk;
  if (name == "dv") return grads.dv;
  if (name == "dbias") return grads.dbias;
  if (name == "dsinks") return grads.dsinks;
  throw InputError("output", fmt::format("unknown output '{}'", name));
}

AttentionOutputs compute_exact(const AttentionProblem& p, const AttentionInputs& in, ref::RunOptions opt) {
  opt.precision = ref::Precision::Exact;
  AttentionOutputs out;
  const TileConfig tile;
  out.fwd = ref::forward(p, in, Algorithm::Fa2, tile, opt);
  if (!p.forward_only()) out.grads = ref::backward(p, in, out.fwd, Algorithm::Fa2, tile, opt);
  return out;
}

std::vector<int64_t> new_keys_shape(const AttentionProblem& p, int64_t dim) {
  return {p.batch, p.seqlen_new, p.heads_kv, dim};
}

bool compute_emulated(const AttentionProblem& p, const AttentionInputs& in, DType compute,
                      ref::RunOptions opt, AttentionOutputs& out, Algorithm fwd, Algorithm bwd,
                      const TileConfig& tile) {
  AttentionProblem pc = p;
  pc.dtype = compute;
  AttentionInputs ic = in;
  if (is_fp8(compute) && compute != p.dtype) return false;  // an FP8 kernel reads its own format only
  if (p.fp8() && !is_fp8(compute)) {  // a kernel that computes on the dequantized inputs in `compute`
    ic = dequantized(p, in);
    pc.descale = Descale::None;
    pc.amax_fraction = 1;
  }
  if (!(round_all(ic.q, compute) && round_all(ic.k, compute) && round_all(ic.v, compute) &&
        round_all(ic.dout, compute) && round_all(ic.bias, compute) && round_all(ic.cache.k_cache, compute) &&
        round_all(ic.cache.v_cache, compute) && round_all(ic.cache.k_new, compute) &&
        round_all(ic.cache.v_new, compute)))
    return false;
  opt.precision = ref::Precision::Emulated;
  // Split-KV: the splits' partials and their combine are part of the pipeline (fp32 partials, as
  // flash-attention's splitkv kernel keeps them).
  out.fwd = tile.num_splits > 1
                ? ref::forward_split_kv(pc, ic, static_cast<int>(tile.num_splits), tile, opt).combined
                : ref::forward(pc, ic, fwd, tile, opt);
  if (!p.forward_only()) out.grads = ref::backward(pc, ic, out.fwd, bwd, tile, opt);
  return true;
}

std::vector<DType> tolerance_dtypes(DType case_dtype) {
  // FP8: the FP8 pipeline, then fp32, fp16, bf16 for a kernel that dequantizes the inputs and computes in them.
  if (is_fp8(case_dtype)) return {case_dtype, DType::F32, DType::F16, DType::BF16};
  std::vector<DType> d = {DType::F32, DType::F16, DType::BF16};
  if (case_dtype == DType::F64) d.insert(d.begin(), DType::F64);
  return d;
}

std::vector<std::string> output_names(const GoldenCase& c) {
  return c.norm ? norm_output_names(*c.norm) : output_names(c.problem);
}

std::vector<int64_t> output_shape(const GoldenCase& c, const std::string& name) {
  return c.norm ? norm_output_shape(*c.norm, name) : output_shape(c.problem, name);
}

std::map<std::string, std::vector<double>> recompute_exact(const LoadedCase& lc, const ref::RunOptions& run) {
  if (lc.c.norm) return norm_outputs(*lc.c.norm, lc.norm_inputs, {ref::Precision::Exact, {}, run.threads});
  const AttentionOutputs now = compute_exact(lc.c.problem, lc.inputs, run);
  std::map<std::string, std::vector<double>> out;
  for (const auto& name : output_names(lc.c.problem)) out[name] = now.get(name);
  return out;
}

namespace {
// dsinks_h = -sum_i P_sink,i D_i with D_i = dO_i . O_i read from O as a kernel stored it. Rounding O to the dtype
// (relative error u) and P before P V move O_ic by independent errors of variance <= u^2 (O_ic^2 + W_ic),
// W_ic = sum_j P_ij^2 V_jc^2, so dsinks_h moves by a random walk of scale
//   M_h = sqrt(sum_i P_sink,i^2 sum_c dO_ic^2 (O_ic^2 + W_ic))
// and dsinks' floor, 2 ulp_S(max_h M_h) > 2 u M with S the compute dtype, is a few of its standard deviations
// (|dsinks| itself cancels and says nothing of its error). W comes from the exact forward on doubled logits
// (scale and softcap x2, bias, ALiBi slopes and sinks x2: scores 2x, whose softmax is P^2 / sum P^2) with V^2:
//   W_i = O2_i e^(lse2_i - 2 lse_i), and x 1 / (1 - p) with dropout (P' = P z, z^2 = z / (1 - p) where kept).
double dsinks_error_scale(const AttentionProblem& p, const AttentionInputs& in, const AttentionOutputs& exact,
                          ref::RunOptions opt) {
  opt.precision = ref::Precision::Exact;
  AttentionProblem p2 = p;
  p2.dtype = DType::F64;  // V^2 and the doubled bias need not be representable in the dtype
  p2.scale = 2 * p.softmax_scale();
  p2.softcap = 2 * p.softcap;  // 2c tanh(2 scale qk / 2c) = 2 (c tanh(scale qk / c))
  AttentionInputs in2 = in;
  for (double& x : in2.v) x *= x;
  for (auto* t : {&in2.bias, &in2.alibi_slopes, &in2.sinks})
    for (double& x : *t) x *= 2;
  const ref::ForwardResult f2 = ref::forward(p2, in2, Algorithm::Fa2, TileConfig{}, opt);
  const double z = p.dropout() ? 1 / (1 - p.dropout_p) : 1.0;
  const int64_t dv = p.head_dim_v;
  double worst = 0;
  for (int64_t h = 0; h < p.heads_q; ++h) {
    double var = 0;
    for (int64_t b = 0; b < p.batch; ++b)
      for (int64_t i = 0; i < p.len_q(b); ++i) {
        const int64_t li = p.lse_index(b, h, i);
        const double lse = exact.fwd.lse[li];
        const double p_sink = std::exp(in.sinks[h] - lse);
        const double w_scale =
            z * std::exp(f2.lse[li] - 2 * lse);  // sum_j P_j^2 = e^(lse2 - 2 lse) (sink too)
        const int64_t row = ((p.offset_q(b) + i) * p.heads_q + h) * dv;
        double row_var = 0;  // sum_c dO_ic^2 (O_ic^2 + W_ic)
        for (int64_t c = 0; c < dv; ++c) {
          const double o = exact.fwd.o[row + c];
          row_var += in.dout[row + c] * in.dout[row + c] * (o * o + f2.o[row + c] * w_scale);
        }
        var += p_sink * p_sink * row_var;
      }
    worst = std::max(worst, std::sqrt(var));
  }
  return worst;
}

SafetensorsFile make_attention_case_file(const GoldenCase& c, const ref::RunOptions& opt) {
  const AttentionProblem& p = c.problem;
  const AttentionInputs in = make_random_inputs(p, c.seed, c.magnitude);
  const AttentionOutputs exact = compute_exact(p, in, opt);

  // The floor's scale M: each forward output's own magnitude; for gradients the largest of them all (but
  // dsinks: dsinks_error_scale).
  std::map<std::string, double> magnitude;
  double grad_magnitude = 0;
  const auto shares_magnitude = [](const std::string& n) { return is_gradient_output(n) && n != "dsinks"; };
  for (const auto& name : output_names(p)) {
    magnitude[name] = error_stats(exact.get(name), exact.get(name)).magnitude;
    if (shares_magnitude(name)) grad_magnitude = std::max(grad_magnitude, magnitude[name]);
  }
  for (auto& [name, m] : magnitude)
    if (shares_magnitude(name)) m = grad_magnitude;
  if (p.sinks && !p.forward_only()) magnitude["dsinks"] = dsinks_error_scale(p, in, exact, opt);

  // L: the longest sum of the case (over keys for o and dq, over queries for dk and dv, over the head dim for
  // S)
  const int64_t accumulation_length = std::max({p.seqlen_q, p.seqlen_k, p.head_dim, p.head_dim_v});

  ojson tol = ojson::object();
  TileConfig tile;
  tile.num_splits = c.num_splits;
  for (DType d : tolerance_dtypes(p.dtype)) {
    AttentionOutputs emu;
    if (!compute_emulated(p, in, d, opt, emu, Algorithm::Fa2, Algorithm::Fa2, tile))
      continue;  // inputs overflow d: no kernel in d can run it
    const auto row = tolerance_row(
        output_names(p), d, [&](const std::string& n) { return error_stats(exact.get(n), emu.get(n)); },
        magnitude, accumulation_length);
    if (row) tol[std::string(dtype_name(d))] = *row;
  }

  SafetensorsFile f;
  const StDType st = st_dtype_of(p.dtype);
  f.add("q", Tensor::from_doubles(st, p.q_shape(), in.q));
  if (p.kv_cache()) {  // the cache as stored before the append, as flash_attn_with_kvcache takes it
    const KvCacheLayout& l = in.cache.layout;
    f.add("k_cache", Tensor::from_doubles(st, p.k_cache_shape(), in.cache.k_cache));
    // MLA: one compressed cache, read as K and (its first head_dim_v columns) as V: no v_cache, no v_new
    if (!p.mla) f.add("v_cache", Tensor::from_doubles(st, p.v_cache_shape(), in.cache.v_cache));
    f.add("block_table",
          Tensor::from_int64(StDType::I32, {p.batch, l.max_blocks_per_seq},
                             std::vector<int64_t>(l.block_table.begin(), l.block_table.end())));
    f.add("cache_seqlens", Tensor::from_int64(StDType::I32, {p.batch}, p.cache_seqlens));
    if (p.seqlen_new > 0) {
      f.add("k_new", Tensor::from_doubles(st, new_keys_shape(p, p.head_dim), in.cache.k_new));
      if (!p.mla) f.add("v_new", Tensor::from_doubles(st, new_keys_shape(p, p.head_dim_v), in.cache.v_new));
    }
  } else {
    f.add("k", Tensor::from_doubles(st, p.k_shape(), in.k));
    if (!p.mla) f.add("v", Tensor::from_doubles(st, p.v_shape(), in.v));  // MLA: v is k[..., :head_dim_v]
    if (!p.forward_only()) f.add("do", Tensor::from_doubles(st, p.o_shape(), in.dout));
  }
  if (p.descale != Descale::None) {  // FP8 descale factors, fp32 as FlashAttention-3 takes them
    f.add("q_descale", Tensor::from_doubles(StDType::F32, p.descale_shape(), in.q_descale));
    f.add("k_descale", Tensor::from_doubles(StDType::F32, p.descale_shape(), in.k_descale));
    f.add("v_descale", Tensor::from_doubles(StDType::F32, p.descale_shape(), in.v_descale));
  }
  if (p.bias != BroadcastShape::None)
    f.add("bias", Tensor::from_doubles(st, p.broadcast_shape(p.bias), in.bias));
  if (p.mask != BroadcastShape::None)
    f.add("mask", Tensor::from_bytes(p.broadcast_shape(p.mask), in.mask, StDType::BOOL));
  if (p.alibi) f.add("alibi_slopes", Tensor::from_doubles(StDType::F32, {p.heads_q}, in.alibi_slopes));
  if (p.sinks) f.add("sinks", Tensor::from_doubles(StDType::F32, {p.heads_q}, in.sinks));
  if (p.dropout())
    f.add("dropout_keep",
          Tensor::from_bytes(p.broadcast_shape(BroadcastShape::BHQK), in.dropout_keep, StDType::BOOL));
  if (p.block_mask != BroadcastShape::None)
    f.add("block_mask", Tensor::from_bytes(p.block_mask_shape(), in.block_mask, StDType::BOOL));
  if (p.varlen()) {
    // int32, as flash-attention's varlen API takes them
    f.add("cu_seqlens_q", Tensor::from_int64(StDType::I32, {p.batch + 1}, p.cu_seqlens_q()));
    f.add("cu_seqlens_k", Tensor::from_int64(StDType::I32, {p.batch + 1}, p.cu_seqlens_k()));
  }
  for (const auto& name : output_names(p))
    f.add(name, Tensor::from_doubles(StDType::F64, output_shape(p, name), exact.get(name)));

  ojson meta = case_to_json(c);
  meta["generator"] = generator_version();
  // Format 1 names the reference (Algorithm::Fa2 forward and backward) as it did when it was defined;
  // kept so that the files of a suite stay byte-identical across flashsim versions.
  meta["reference"] = {{"forward", "tiled-fa2"},
                       {"backward", "tiled"},
                       {"precision", "exact (fp64 on the inputs as stored)"},
                       {"emulated", "tiled-fa2 / tiled, fp32 accumulation, P and dS rounded to the dtype"}};
  meta["tolerance_rule"] = {
      {"max_abs", "factor * emulated_max_abs + 2 ulp_S(magnitude) + accumulation * magnitude"},
      {"rel_l2", "factor * emulated_rel_l2 + u_S + accumulation"},
      {"S", "the coarser of storage (the emulated output's dtype) and the candidate's storage dtype"},
      {"magnitude", "max|exact| of the output; for gradients the largest over dq, dk, dv, dbias"},
      {"accumulation", "2 sqrt(L) u_fp32, L = max(seqlen_q, seqlen_k, head_dim, head_dim_v)"},
      {"factor_forward", kForwardFactor},
      {"factor_backward", kBackwardFactor}};
  if (p.sinks)  // only sinks cases carry it, so the other files stay byte-identical
    meta["tolerance_rule"]["magnitude_dsinks"] =
        "max_h sum_i P_sink,i sum_c |dO_ic| (P |V|)_ic: how far rounding O moves D = dO.O, summed as dsinks "
        "sums; "
        "S is the compute dtype (O's storage); dsinks has no rel_l2 bound (it cancels)";
  if (p.fp8())  // only FP8 cases carry it, so the other files stay byte-identical
    meta["reference"]["emulated_fp8"] =
        "S = q.k in fp32 times scale * q_descale * k_descale; P = 2^8 exp(S - m) rounded to the input's FP8 "
        "format (FlashAttention-3's Max_offset), the row sum from the unrounded P; P V in fp32 on V * "
        "v_descale; "
        "o stored in bf16, lse in fp32";
  if (c.num_splits > 1)
    meta["reference"]["emulated_split_kv"] =
        "num_splits splits of whole key blocks, partial o and lse in fp32, combined with the lse rescaling";
  meta["tolerances"] = tol;
  f.metadata[kFormatMetadataKey] = kFormatName;
  f.metadata[kCaseMetadataKey] = meta.dump();
  return f;
}
}  // namespace

SafetensorsFile make_case_file(const GoldenCase& c, const ref::RunOptions& opt) {
  return c.norm ? make_norm_case_file(c, opt) : make_attention_case_file(c, opt);
}

namespace {
AttentionInputs load_attention_inputs(const SafetensorsFile& f, const AttentionProblem& p,
                                      const std::string& source) {
  AttentionInputs in;
  in.q = input(f, "q", p.q_shape(), p.dtype, source);
  if (p.kv_cache()) {
    in.cache.k_cache = input(f, "k_cache", p.k_cache_shape(), p.dtype, source);
    // MLA: the values are the latent cache's first head_dim_v columns (the file has no v_cache, v_new)
    in.cache.v_cache = p.mla ? latent_values(in.cache.k_cache, p.head_dim, p.head_dim_v)
                             : input(f, "v_cache", p.v_cache_shape(), p.dtype, source);
    if (p.seqlen_new > 0) {
      in.cache.k_new = input(f, "k_new", new_keys_shape(p, p.head_dim), p.dtype, source);
      in.cache.v_new = p.mla ? latent_values(in.cache.k_new, p.head_dim, p.head_dim_v)
                             : input(f, "v_new", new_keys_shape(p, p.head_dim_v), p.dtype, source);
    }
    const auto table = int_input(f, "block_table", {p.batch, p.max_blocks_per_seq()}, source);
    in.cache.layout = kv_cache_layout(p, std::vector<int32_t>(table.begin(), table.end()));
    const auto lens = int_input(f, "cache_seqlens", {p.batch}, source);
    if (lens != p.cache_seqlens)
      throw InputError(source, "tensor 'cache_seqlens' disagrees with the case's cache_seqlens");
    try {
      gather_keys(in.cache, p, in.k, in.v);  // validates the layout: pages inside num_blocks, capacity
    } catch (const InputError& e) {
      throw InputError(source, e.what());
    }
  } else {
    in.k = input(f, "k", p.k_shape(), p.dtype, source);
    in.v =
        p.mla ? latent_values(in.k, p.head_dim, p.head_dim_v) : input(f, "v", p.v_shape(), p.dtype, source);
    if (!p.forward_only()) in.dout = input(f, "do", p.o_shape(), p.dtype, source);
  }
  if (p.descale != Descale::None) {
    for (auto [name, dst] : {std::pair{"q_descale", &in.q_descale}, std::pair{"k_descale", &in.k_descale},
                             std::pair{"v_descale", &in.v_descale}}) {
      const Tensor& t = need(f, name, source);
      if (t.dtype != StDType::F32) throw InputError(source, fmt::format("tensor '{}' is not F32", name));
      check_shape(t, p.descale_shape(), name, source);
      *dst = t.to_doubles();
    }
  }
  if (p.bias != BroadcastShape::None) in.bias = input(f, "bias", p.broadcast_shape(p.bias), p.dtype, source);
  if (p.mask != BroadcastShape::None) {
    const Tensor& t = need(f, "mask", source);
    if (t.dtype != StDType::BOOL && t.dtype != StDType::U8)
      throw InputError(source, fmt::format("tensor 'mask' is {}, not BOOL or U8", st_dtype_name(t.dtype)));
    check_shape(t, p.broadcast_shape(p.mask), "mask", source);
    in.mask = t.data;
  }
  if (p.block_mask != BroadcastShape::None) {
    const Tensor& t = need(f, "block_mask", source);
    if (t.dtype != StDType::BOOL && t.dtype != StDType::U8)
      throw InputError(source,
                       fmt::format("tensor 'block_mask' is {}, not BOOL or U8", st_dtype_name(t.dtype)));
    check_shape(t, p.block_mask_shape(), "block_mask", source);
    in.block_mask = t.data;
  }
  if (p.alibi) {
    const Tensor& t = need(f, "alibi_slopes", source);
    if (!st_is_float(t.dtype)) throw InputError(source, "tensor 'alibi_slopes' is not floating point");
    check_shape(t, {p.heads_q}, "alibi_slopes", source);
    in.alibi_slopes = t.to_doubles();
  }
  if (p.dropout()) {
    const Tensor& t = need(f, "dropout_keep", source);
    if (t.dtype != StDType::BOOL && t.dtype != StDType::U8)
      throw InputError(source,
                       fmt::format("tensor 'dropout_keep' is {}, not BOOL or U8", st_dtype_name(t.dtype)));
    check_shape(t, p.broadcast_shape(BroadcastShape::BHQK), "dropout_keep", source);
    in.dropout_keep = t.data;
  }
  if (p.sinks) {
    const Tensor& t = need(f, "sinks", source);
    if (t.dtype != StDType::F32) throw InputError(source, "tensor 'sinks' is not F32");
    check_shape(t, {p.heads_q}, "sinks", source);
    in.sinks = t.to_doubles();
  }
  if (p.varlen()) {
    for (const char* name : {"cu_seqlens_q", "cu_seqlens_k"}) {
      const Tensor& t = need(f, name, source);
      check_shape(t, {p.batch + 1}, name, source);
      const auto want = std::string(name) == "cu_seqlens_q" ? p.cu_seqlens_q() : p.cu_seqlens_k();
      const auto got = t.to_doubles();
      for (size_t i = 0; i < want.size(); ++i)
        if (got[i] != static_cast<double>(want[i]))
          throw InputError(source, fmt::format("tensor '{}' disagrees with the case's seqlens", name));
    }
  }
  try {
    in.validate(p);
  } catch (const InputError& e) {
    throw InputError(source, e.what());
  }
  return in;
}
}  // namespace

LoadedCase load_case(const SafetensorsFile& f, const std::string& source) {
  LoadedCase lc;
  auto it = f.metadata.find(kCaseMetadataKey);
  if (it == f.metadata.end())
    throw InputError(
        source, fmt::format("has no __metadata__[\"{}\"]: not a flashsim golden file", kCaseMetadataKey));
  try {
    lc.metadata = nlohmann::json::parse(it->second);
  } catch (const nlohmann::json::exception& e) {
    throw InputError(source,
                     fmt::format("__metadata__[\"{}\"] is not valid JSON ({})", kCaseMetadataKey, e.what()));
  }
  lc.c = case_from_json(lc.metadata, source);
  if (lc.c.norm)
    lc.norm_inputs = load_norm_inputs(f, *lc.c.norm, source);
  else
    lc.inputs = load_attention_inputs(f, lc.c.problem, source);
  for (const auto& name : output_names(lc.c)) {
    const Tensor& t = need(f, name, source);
    if (!st_is_float(t.dtype))
      throw InputError(source, fmt::format("output '{}' is not floating point", name));
    check_shape(t, output_shape(lc.c, name), name, source);
    lc.outputs[name] = t.to_doubles();
  }
  if (lc.metadata.contains("tolerances")) {
    const auto& tj = lc.metadata["tolerances"];
    if (!tj.is_object()) throw InputError(source, "tolerances is not a JSON object");
    for (const auto& [dname, row] : tj.items()) {
      const DType d = parse_dtype(dname);
      auto& out = lc.tolerances[std::string(dtype_name(d))];
      for (const auto& name : output_names(lc.c)) {
        if (!row.contains(name))
          throw InputError(source, fmt::format("tolerances.{} has no entry for '{}'", dname, name));
        out[name] = tolerance_from_json(row[name], fmt::format("{}: tolerances.{}.{}", source, dname, name));
      }
    }
  }
  return lc;
}

}  // namespace flashsim::golden
