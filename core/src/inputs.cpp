#include "flashsim/inputs.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "flashsim/block_mask.h"
#include "flashsim/error.h"
#include "flashsim/random.h"

namespace flashsim {

namespace {

void check_size(const char* name, size_t got, int64_t want) {
  if (static_cast<int64_t>(got) != want)
    throw InputError(name, fmt::format("has {} elements, the problem needs {}", got, want));
}

void check_values(const char* name, const std::vector<double>& t, DType dtype) {
  for (size_t n = 0; n < t.size(); ++n) {
    const double x = t[n];
    if (std::isnan(x)) continue;  // NaN inputs are allowed: they propagate as they would on a GPU
    if (round_to(x, dtype) != x)
      throw InputError(name,
                       fmt::format("element {} ({}) is not representable in {}", n, x, dtype_name(dtype)));
  }
}

std::vector<double> normal_tensor(int64_t n, uint64_t seed, InputStream stream, double magnitude,
                                  DType dtype) {
  std::vector<double> t(n);
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; ++i)
    t[i] = round_to(
        magnitude * standard_normal(seed, static_cast<uint64_t>(stream), static_cast<uint64_t>(i)), dtype);
  return t;
}

void check_descale(const char* name, const std::vector<double>& d, const AttentionProblem& p) {
  check_size(name, d.size(), p.descale_elems());
  for (size_t g = 0; g < d.size(); ++g)
    if (!(std::isfinite(d[g]) && d[g] > 0) || round_to(d[g], DType::F32) != d[g])
      throw InputError(name, fmt::format("element {}: {} is not a finite fp32 value > 0", g, d[g]));
}

// FP8 inputs (inputs.h): a tensor of `heads` heads over the query rows (query_side) or key rows, drawn in fp64,
// its descale factors from each group's largest |x|, stored = fp8(x / descale).
void draw_fp8(const AttentionProblem& p, uint64_t seed, InputStream stream, double magnitude, bool query_side,
              int64_t heads, int64_t dim, std::vector<double>& stored, std::vector<double>& descale) {
  const int64_t rows = query_side ? p.total_q() : p.total_k();
  stored = normal_tensor(rows * heads * dim, seed, stream, magnitude, DType::F64);
  std::vector<int64_t> group(rows * heads, 0);  // the descale group of each (row, head)
  for (int64_t b = 0; b < p.batch; ++b) {
    const int64_t r0 = query_side ? p.offset_q(b) : p.offset_k(b);
    const int64_t r1 = query_side ? p.offset_q(b + 1) : p.offset_k(b + 1);
    for (int64_t r = r0; r < r1; ++r)
      for (int64_t h = 0; h < heads; ++h)
        group[r * heads + h] = p.descale_index(b, query_side ? p.kv_head(h) : h);
  }
  descale.assign(p.descale_elems(), 1.0);
  if (p.descale != Descale::None) {
    std::vector<double> amax(descale.size(), 0.0);
    for (int64_t n = 0; n < static_cast<int64_t>(stored.size()); ++n)
      amax[group[n / dim]] = std::max(amax[group[n / dim]], std::fabs(stored[n]));
    for (size_t g = 0; g < descale.size(); ++g)
      if (amax[g] > 0) descale[g] = round_to(p.amax_fraction * amax[g] / max_finite(p.dtype), DType::F32);
  }
  const bool with_descale = p.descale != Descale::None;
#pragma omp parallel for schedule(static)
  for (int64_t n = 0; n < static_cast<int64_t>(stored.size()); ++n)
    stored[n] = round_to(with_descale ? stored[n] / descale[group[n / dim]] : stored[n], p.dtype);
}

// MLA: v must be the first head_dim_v columns of k, bit for bit (NaN where k has NaN).
void check_latent_view(const char* name, const std::vector<double>& v, const std::vector<double>& k,
                       const AttentionProblem& p) {
  const std::vector<double> want = latent_values(k, p.head_dim, p.head_dim_v);
  check_size(name, v.size(), static_cast<int64_t>(want.size()));
  for (size_t n = 0; n < v.size(); ++n)
    if (!(v[n] == want[n] || (std::isnan(v[n]) && std::isnan(want[n]))))
      throw InputError(name,
                       fmt::format("an MLA problem's values are a view of the keys (their first {} columns): "
                                   "element {} is {}, the key's is {}",
                                   p.head_dim_v, n, v[n], want[n]));
}

}  // namespace

std::vector<double> latent_values(const std::vector<double>& k, int64_t head_dim, int64_t head_dim_v) {
  const int64_t rows = static_cast<int64_t>(k.size()) / head_dim;
  std::vector<double> v(rows * head_dim_v);
  for (int64_t r = 0; r < rows; ++r)
    std::copy_n(k.begin() + r * head_dim, head_dim_v, v.begin() + r * head_dim_v);
  return v;
}

void AttentionInputs::validate(const AttentionProblem& p) const {
  p.validate();
  check_size("q", q.size(), p.q_elems());
  check_size("k", k.size(), p.k_elems());
  check_size("v", v.size(), p.v_elems());
  if (!dout.empty()) check_size("do", dout.size(), p.o_elems());
  check_size("bias", bias.size(), p.bias_elems());
  check_size("mask", mask.size(), p.mask_elems());
  check_size("alibi_slopes", alibi_slopes.size(), p.alibi ? p.heads_q : 0);
  check_size("block_mask", block_mask.size(), p.block_mask_elems());
  check_size("sinks", sinks.size(), p.sinks ? p.heads_q : 0);
  check_size("dropout_keep", dropout_keep.size(), p.dropout_keep_elems());
  check_descale("q_descale", q_descale, p);
  check_descale("k_descale", k_descale, p);
  check_descale("v_descale", v_descale, p);
  for (size_t h = 0; h < sinks.size(); ++h)
    if (!std::isfinite(sinks[h]) || round_to(sinks[h], DType::F32) != sinks[h])
      throw InputError("sinks", fmt::format("head {}: {} is not a finite fp32 value", h, sinks[h]));
  if (p.kv_cache()) {
    cache.validate(p.heads_kv, p.head_dim, p.head_dim_v);
    const KvCacheLayout want = kv_cache_layout(p, cache.layout.block_table);
    if (cache.layout.num_blocks != want.num_blocks || cache.layout.page_size != want.page_size ||
        cache.layout.seqlen_new != want.seqlen_new || cache.layout.cache_seqlens != want.cache_seqlens ||
        cache.layout.max_blocks_per_seq != want.max_blocks_per_seq)
      throw InputError("block_table",
                       "the cache's layout does not match the problem's (num_blocks, page_size, "
                       "cache_seqlens, seqlen_new or the table's width)");
    check_values("k_cache", cache.k_cache, p.dtype);
    check_values("v_cache", cache.v_cache, p.dtype);
    check_values("k_new", cache.k_new, p.dtype);
    check_values("v_new", cache.v_new, p.dtype);
    if (p.mla) {
      check_latent_view("v_cache", cache.v_cache, cache.k_cache, p);
      check_latent_view("v_new", cache.v_new, cache.k_new, p);
    }
  }
  if (p.mla) check_latent_view("v", v, k, p);
  check_values("q", q, p.dtype);
  check_values("k", k, p.dtype);
  check_values("v", v, p.dtype);
  check_values("do", dout, p.dtype);
  check_values("bias", bias, p.dtype);
}

AttentionInputs dequantized(const AttentionProblem& p, const AttentionInputs& in) {
  AttentionInputs out = in;
  out.q_descale.clear();
  out.k_descale.clear();
  out.v_descale.clear();
  if (in.q_descale.empty()) return out;
  const auto scale_rows = [&](std::vector<double>& t, const std::vector<double>& d, bool query_side,
                              int64_t heads, int64_t dim) {
    for (int64_t b = 0; b < p.batch; ++b) {
      const int64_t r0 = query_side ? p.offset_q(b) : p.offset_k(b);
      const int64_t r1 = query_side ? p.offset_q(b + 1) : p.offset_k(b + 1);
      for (int64_t r = r0; r < r1; ++r)
        for (int64_t h = 0; h < heads; ++h) {
          const double f = d[p.descale_index(b, query_side ? p.kv_head(h) : h)];
          for (int64_t c = 0; c < dim; ++c) t[(r * heads + h) * dim + c] *= f;
        }
    }
  };
  scale_rows(out.q, in.q_descale, true, p.heads_q, p.head_dim);
  scale_rows(out.k, in.k_descale, false, p.heads_kv, p.head_dim);
  scale_rows(out.v, in.v_descale, false, p.heads_kv, p.head_dim_v);
  return out;
}

std::vector<uint8_t> make_block_mask_tensor(const AttentionProblem& p, uint64_t seed) {
  const BlockMaskSpec spec = parse_block_mask_spec(p.block_mask_spec);
  const auto shape = p.block_mask_shape();
  const int64_t per_batch = shape[1] * shape[2] * shape[3];
  if (spec.kind == BlockMaskSpec::Kind::Random)
    return make_block_mask(spec, shape[0] * shape[1], shape[2], shape[3], seed);
  const std::vector<uint8_t> one = make_block_mask(spec, shape[1], shape[2], shape[3], seed);
  std::vector<uint8_t> m(shape[0] * per_batch);
  for (int64_t b = 0; b < shape[0]; ++b) std::copy(one.begin(), one.end(), m.begin() + b * per_batch);
  return m;
}

AttentionInputs make_random_inputs(const AttentionProblem& p, uint64_t seed, double magnitude) {
  p.validate();
  if (!(std::isfinite(magnitude) && magnitude > 0))
    throw InputError("magnitude", fmt::format("must be finite and > 0, got {}", magnitude));
  AttentionInputs in;
  if (p.fp8()) {  // no cache, bias or dropout (validate), no dO (forward only)
    draw_fp8(p, seed, InputStream::Q, magnitude, true, p.heads_q, p.head_dim, in.q, in.q_descale);
    draw_fp8(p, seed, InputStream::K, magnitude, false, p.heads_kv, p.head_dim, in.k, in.k_descale);
    draw_fp8(p, seed, InputStream::V, magnitude, false, p.heads_kv, p.head_dim_v, in.v, in.v_descale);
  } else {
    in.q = normal_tensor(p.q_elems(), seed, InputStream::Q, magnitude, p.dtype);
  }
  if (p.kv_cache()) {
    in.cache.layout = kv_cache_layout(p, make_block_table(p, seed));
    const int64_t rows = in.cache.layout.num_blocks * p.page_size, new_rows = p.batch * p.seqlen_new;
    in.cache.k_cache =
        normal_tensor(rows * p.heads_kv * p.head_dim, seed, InputStream::K, magnitude, p.dtype);
    in.cache.k_new =
        normal_tensor(new_rows * p.heads_kv * p.head_dim, seed, InputStream::KNew, magnitude, p.dtype);
    if (p.mla) {  // one compressed cache: the values are the keys' first head_dim_v columns
      in.cache.v_cache = latent_values(in.cache.k_cache, p.head_dim, p.head_dim_v);
      in.cache.v_new = latent_values(in.cache.k_new, p.head_dim, p.head_dim_v);
    } else {
      in.cache.v_cache =
          normal_tensor(rows * p.heads_kv * p.head_dim_v, seed, InputStream::V, magnitude, p.dtype);
      in.cache.v_new =
          normal_tensor(new_rows * p.heads_kv * p.head_dim_v, seed, InputStream::VNew, magnitude, p.dtype);
    }
    gather_keys(in.cache, p, in.k, in.v);
  } else if (!p.fp8()) {
    in.k = normal_tensor(p.k_elems(), seed, InputStream::K, magnitude, p.dtype);
    in.v = p.mla ? latent_values(in.k, p.head_dim, p.head_dim_v)
                 : normal_tensor(p.v_elems(), seed, InputStream::V, magnitude, p.dtype);
  }
  if (!p.fp8()) in.dout = normal_tensor(p.o_elems(), seed, InputStream::dO, magnitude, p.dtype);
  in.bias = normal_tensor(p.bias_elems(), seed, InputStream::Bias, 1.0, p.dtype);
  in.mask.resize(p.mask_elems());
  for (int64_t i = 0; i < p.mask_elems(); ++i)
    in.mask[i] = uniform_open01(seed, static_cast<uint64_t>(InputStream::Mask), static_cast<uint64_t>(i)) <
                 p.mask_keep;
  if (p.block_mask != BroadcastShape::None) in.block_mask = make_block_mask_tensor(p, seed);
  in.dropout_keep.resize(p.dropout_keep_elems());
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < p.dropout_keep_elems(); ++i)
    in.dropout_keep[i] = uniform_open01(seed, static_cast<uint64_t>(InputStream::DropoutKeep),
                                        static_cast<uint64_t>(i)) >= p.dropout_p;  // keep with 1 - p
  if (p.sinks) {
    in.sinks.resize(p.heads_q);
    const double centre = std::log(static_cast<double>(std::max<int64_t>(p.seqlen_k, 1)));
    for (int64_t h = 0; h < p.heads_q; ++h)
      in.sinks[h] = round_to(
          centre + standard_normal(seed, static_cast<uint64_t>(InputStream::Sinks), static_cast<uint64_t>(h)),
          DType::F32);
  }
  if (p.alibi) {
    in.alibi_slopes.resize(p.heads_q);
    for (int64_t h = 0; h < p.heads_q; ++h) in.alibi_slopes[h] = round_to(p.alibi_slope(h), DType::F32);
  }
  return in;
}

}  // namespace flashsim
