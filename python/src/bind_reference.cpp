// flashsim.attention / attention_backward: the exact reference on the caller's arrays. The problem is read off
// the shapes (BSHD, or packed rows with cu_seqlens), the inputs widened to double once, the GIL released while
// computing.
#include <fmt/format.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>

#include <algorithm>
#include <optional>

#include "arrays.h"
#include "bindings.h"
#include "flashsim/error.h"
#include "flashsim/ref/attention.h"

namespace flashsim::py {

namespace {

using OptArray = std::optional<InArray>;

// The keyword arguments both functions take besides the arrays.
struct Semantics {
  bool causal = false;
  int64_t window_left = -1, window_right = -1;
  double softcap = 0.0;
  std::optional<double> scale;
  std::string precision = "exact", algorithm = "fa2";
  std::optional<int64_t> block_q, block_k;
  int threads = 0;
  int64_t max_memory_bytes = 0;
};

struct Arrays {
  InArray q, k, v;
  OptArray bias, mask, alibi_slopes, cu_seqlens_q, cu_seqlens_k;
};

struct Call {
  AttentionProblem p;
  AttentionInputs in;
  Algorithm algo = Algorithm::Fa2;
  TileConfig tile;
  ref::RunOptions opt;
};

void expect_ndim(const InArray& a, const std::string& name, size_t ndim, const char* layout) {
  if (a.ndim() != ndim)
    throw InputError(name,
                     fmt::format("shape {}: expected {} ({} dims)", shape_text(shape_of(a)), layout, ndim));
}

// Per-sequence lengths from cu_seqlens (batch + 1 offsets from 0 to the packed rows).
std::vector<int64_t> lengths_of(const InArray& cu, const std::string& name, int64_t rows) {
  expect_ndim(cu, name, 1, "[batch + 1]");
  const auto off = integers(cu, name);
  if (off.size() < 2) throw InputError(name, "needs at least 2 offsets (batch + 1)");
  if (off.front() != 0) throw InputError(name, fmt::format("starts at {}: expected 0", off.front()));
  if (off.back() != rows)
    throw InputError(name, fmt::format("ends at {} but the packed tensor has {} rows", off.back(), rows));
  std::vector<int64_t> len(off.size() - 1);
  for (size_t b = 0; b < len.size(); ++b) {
    len[b] = off[b + 1] - off[b];
    if (len[b] < 0) throw InputError(name, fmt::format("decreases at index {}", b + 1));
  }
  return len;
}

// Which dims of a [batch|1, heads_q|1, seqlen_q, seqlen_k] tensor are broadcast.
BroadcastShape broadcast_of(const InArray& a, const std::string& name, const AttentionProblem& p) {
  const auto s = shape_of(a);
  const bool ok = s.size() == 4 && s[2] == p.seqlen_q && s[3] == p.seqlen_k &&
                  (s[0] == p.batch || s[0] == 1) && (s[1] == p.heads_q || s[1] == 1);
  if (!ok)
    throw InputError(
        name,
        fmt::format("shape {}: expected [batch|1, heads_q|1, seqlen_q, seqlen_k] = [{}|1, {}|1, {}, {}]",
                    shape_text(s), p.batch, p.heads_q, p.seqlen_q, p.seqlen_k));
  const bool b = s[0] == p.batch, h = s[1] == p.heads_q;
  return b && h ? BroadcastShape::BHQK
         : h    ? BroadcastShape::OneHQK
         : b    ? BroadcastShape::BOneQK
                : BroadcastShape::OneOneQK;
}

Call make_call(const Arrays& a, const Semantics& s) {
  Call c;
  AttentionProblem& p = c.p;
  const bool varlen = a.cu_seqlens_q || a.cu_seqlens_k;
  if (varlen && !(a.cu_seqlens_q && a.cu_seqlens_k))
    throw InputError(a.cu_seqlens_q ? "cu_seqlens_k" : "cu_seqlens_q",
                     "variable lengths need both cu_seqlens_q and cu_seqlens_k");
  const char* qkv = varlen ? "[total, heads, head_dim] (packed rows, with cu_seqlens)"
                           : "[batch, seqlen, heads, head_dim] (BSHD)";
  const size_t nd = varlen ? 3 : 4;
  expect_ndim(a.q, "q", nd, qkv);
  expect_ndim(a.k, "k", nd, qkv);
  expect_ndim(a.v, "v", nd, qkv);
  const auto qs = shape_of(a.q), ks = shape_of(a.k), vs = shape_of(a.v);
  p.heads_q = qs[nd - 2];
  p.head_dim = qs[nd - 1];
  p.heads_kv = ks[nd - 2];
  p.head_dim_v = vs[nd - 1];
  if (ks[nd - 1] != p.head_dim)
    throw InputError("k", fmt::format("head_dim {} differs from q's {}", ks[nd - 1], p.head_dim));
  if (!std::equal(ks.begin(), ks.end() - 1, vs.begin()))
    throw InputError(
        "v", fmt::format("shape {} does not match k's {} but in head_dim_v", shape_text(vs), shape_text(ks)));
  if (varlen) {
    p.seqlens_q = lengths_of(*a.cu_seqlens_q, "cu_seqlens_q", qs[0]);
    p.seqlens_k = lengths_of(*a.cu_seqlens_k, "cu_seqlens_k", ks[0]);
    if (p.seqlens_q.size() != p.seqlens_k.size())
      throw InputError("cu_seqlens_k", fmt::format("{} sequences but cu_seqlens_q has {}", p.seqlens_k.size(),
                                                   p.seqlens_q.size()));
    p.batch = static_cast<int64_t>(p.seqlens_q.size());
    p.seqlen_q = *std::max_element(p.seqlens_q.begin(), p.seqlens_q.end());
    p.seqlen_k = *std::max_element(p.seqlens_k.begin(), p.seqlens_k.end());
  } else {
    if (ks[0] != qs[0]) throw InputError("k", fmt::format("batch {} differs from q's {}", ks[0], qs[0]));
    p.batch = qs[0];
    p.seqlen_q = qs[1];
    p.seqlen_k = ks[1];
  }
  p.dtype = float_dtype(a.q, "q");
  for (const auto& [t, name] : {std::pair{&a.k, "k"}, std::pair{&a.v, "v"}})
    if (float_dtype(*t, name) != p.dtype)
      throw InputError(name, fmt::format("dtype {} differs from q's {}", dtype_name(float_dtype(*t, name)),
                                         dtype_name(p.dtype)));
  p.scale = s.scale;
  p.softcap = s.softcap;
  p.window_left = s.window_left;
  p.window_right = s.window_right;
  if (s.causal) {
    if (s.window_right > 0)
      throw InputError("window", fmt::format("causal attention sees no key to the right; got window right {}",
                                             s.window_right));
    p.window_right = 0;
  }
  if (a.bias) p.bias = broadcast_of(*a.bias, "bias", p);
  if (a.mask) p.mask = broadcast_of(*a.mask, "mask", p);
  if (a.alibi_slopes) {
    const auto sh = shape_of(*a.alibi_slopes);
    if (sh.size() != 1 || sh[0] != p.heads_q)
      throw InputError("alibi_slopes",
                       fmt::format("shape {}: expected [heads_q] = [{}] (one slope per query head)",
                                   shape_text(sh), p.heads_q));
    p.alibi = true;
  }
  p.validate();

  AttentionInputs& in = c.in;
  in.q = widen(a.q, "q");
  in.k = widen(a.k, "k");
  in.v = widen(a.v, "v");
  if (a.bias) in.bias = widen(*a.bias, "bias");
  if (a.mask) in.mask = booleans(*a.mask, "mask");
  if (a.alibi_slopes) in.alibi_slopes = widen(*a.alibi_slopes, "alibi_slopes");

  c.algo = parse_algorithm(s.algorithm);
  if (s.block_q) c.tile.block_q = *s.block_q;
  if (s.block_k) c.tile.block_k = *s.block_k;
  c.tile.validate();
  c.opt.precision = ref::parse_precision(s.precision);
  c.opt.threads = s.threads;
  c.opt.max_memory_bytes = s.max_memory_bytes;
  return c;
}

// The type results are stored in: fp64 exact, fp32 for the fp32 pipeline, the input dtype for the emulated one
// (its lse stays fp32, as FlashAttention-2 keeps it).
DType result_storage(const Call& c, bool is_lse) {
  switch (c.opt.precision) {
    case ref::Precision::Exact:
      return DType::F64;
    case ref::Precision::Fp32:
      return DType::F32;
    case ref::Precision::Emulated:
      return is_lse ? (c.p.dtype == DType::F64 ? DType::F64 : DType::F32) : c.p.dtype;
  }
  return DType::F64;
}

nb::object result(std::vector<double>&& v, const std::vector<int64_t>& shape, DType storage) {
  return storage == DType::F64 ? to_numpy(std::move(v), shape) : to_numpy(v, shape, storage);
}

nb::tuple attention(const InArray& q, const InArray& k, const InArray& v, const OptArray& bias,
                    const OptArray& mask, const OptArray& alibi_slopes, const OptArray& cu_seqlens_q,
                    const OptArray& cu_seqlens_k, const Semantics& s) {
  Call c;
  ref::ForwardResult fwd;
  {
    nb::gil_scoped_release unlocked;
    c = make_call({q, k, v, bias, mask, alibi_slopes, cu_seqlens_q, cu_seqlens_k}, s);
    fwd = ref::forward(c.p, c.in, c.algo, c.tile, c.opt);  // validates the inputs
  }
  return nb::make_tuple(result(std::move(fwd.o), c.p.o_shape(), result_storage(c, false)),
                        result(std::move(fwd.lse), c.p.lse_shape(), result_storage(c, true)));
}

void expect_shape(const InArray& a, const std::string& name, const std::vector<int64_t>& want) {
  if (shape_of(a) != want)
    throw InputError(name, fmt::format("shape {}: expected {}", shape_text(shape_of(a)), shape_text(want)));
}

nb::tuple attention_backward(const InArray& q, const InArray& k, const InArray& v, const InArray& o,
                             const InArray& dout, const InArray& lse, const OptArray& bias,
                             const OptArray& mask, const OptArray& alibi_slopes, const OptArray& cu_seqlens_q,
                             const OptArray& cu_seqlens_k, const Semantics& s) {
  Call c;
  ref::Gradients g;
  {
    nb::gil_scoped_release unlocked;
    c = make_call({q, k, v, bias, mask, alibi_slopes, cu_seqlens_q, cu_seqlens_k}, s);
    expect_shape(o, "o", c.p.o_shape());
    expect_shape(dout, "do", c.p.o_shape());
    expect_shape(lse, "lse", c.p.lse_shape());
    ref::ForwardResult fwd;
    fwd.o = widen(o, "o");
    fwd.lse = widen(lse, "lse");
    c.in.dout = widen(dout, "do");
    g = ref::backward(c.p, c.in, fwd, c.algo, c.tile, c.opt);  // validates the inputs
  }
  const DType st = result_storage(c, false);
  nb::object dbias = nb::none();
  if (c.p.bias != BroadcastShape::None) dbias = result(std::move(g.dbias), c.p.broadcast_shape(c.p.bias), st);
  return nb::make_tuple(result(std::move(g.dq), c.p.q_shape(), st),
                        result(std::move(g.dk), c.p.k_shape(), st),
                        result(std::move(g.dv), c.p.v_shape(), st), dbias);
}

constexpr const char* kSemanticsDoc =
    "causal: bottom-right aligned causal mask (window right 0). window_left / window_right: sliding window, "
    "-1 unbounded. softcap: c > 0 gives s = c tanh(s / c). scale: softmax scale (default 1/sqrt(head_dim)). "
    "precision: 'exact' (fp64, float64 results), 'fp32' (float32 results) or 'emulated' (a GPU kernel's "
    "pipeline in the input dtype: results in it, lse in float32). algorithm: naive, three-pass, two-pass, "
    "fa1, "
    "fa2 (the backward: naive or fa2). block_q / block_k: the tiled algorithms' tile. threads: OpenMP "
    "threads "
    "(0: all cores). max_memory_bytes: refuse beyond it (0: 80% of the available memory).";

}  // namespace

void bind_reference(nb::module_& m) {
  using namespace nb::literals;
  // Docstrings live as long as the module (nanobind keeps the pointer).
  static const std::string fwd_doc =
      std::string(
          "Attention forward on CPU arrays (q [b, s, h, d], k, v [b, s, h_kv, d]; packed [total, h, d] "
          "with cu_seqlens): returns (o, lse) as NumPy arrays (lse [b, h, s], or [h, total]). ") +
      kSemanticsDoc;
  static const std::string bwd_doc =
      std::string(
          "Attention backward from the forward's o and lse and the upstream gradient do: returns (dq, "
          "dk, dv, dbias) (dbias None without a bias). ") +
      kSemanticsDoc;
  m.def(
      "attention",
      [](const InArray& q, const InArray& k, const InArray& v, const OptArray& bias, const OptArray& mask,
         const OptArray& alibi_slopes, const OptArray& cu_seqlens_q, const OptArray& cu_seqlens_k,
         bool causal, int64_t window_left, int64_t window_right, double softcap, std::optional<double> scale,
         const std::string& precision, const std::string& algorithm, std::optional<int64_t> block_q,
         std::optional<int64_t> block_k, int threads, int64_t max_memory_bytes) {
        return attention(q, k, v, bias, mask, alibi_slopes, cu_seqlens_q, cu_seqlens_k,
                         {causal, window_left, window_right, softcap, scale, precision, algorithm, block_q,
                          block_k, threads, max_memory_bytes});
      },
      "q"_a, "k"_a, "v"_a, nb::kw_only(), "bias"_a = nb::none(), "mask"_a = nb::none(),
      "alibi_slopes"_a = nb::none(), "cu_seqlens_q"_a = nb::none(), "cu_seqlens_k"_a = nb::none(),
      "causal"_a = false, "window_left"_a = -1, "window_right"_a = -1, "softcap"_a = 0.0,
      "scale"_a = nb::none(), "precision"_a = "exact", "algorithm"_a = "fa2", "block_q"_a = nb::none(),
      "block_k"_a = nb::none(), "threads"_a = 0, "max_memory_bytes"_a = 0, fwd_doc.c_str());
  m.def(
      "attention_backward",
      [](const InArray& q, const InArray& k, const InArray& v, const InArray& o, const InArray& dout,
         const InArray& lse, const OptArray& bias, const OptArray& mask, const OptArray& alibi_slopes,
         const OptArray& cu_seqlens_q, const OptArray& cu_seqlens_k, bool causal, int64_t window_left,
         int64_t window_right, double softcap, std::optional<double> scale, const std::string& precision,
         const std::string& algorithm, std::optional<int64_t> block_q, std::optional<int64_t> block_k,
         int threads, int64_t max_memory_bytes) {
        return attention_backward(q, k, v, o, dout, lse, bias, mask, alibi_slopes, cu_seqlens_q, cu_seqlens_k,
                                  {causal, window_left, window_right, softcap, scale, precision, algorithm,
                                   block_q, block_k, threads, max_memory_bytes});
      },
      "q"_a, "k"_a, "v"_a, "o"_a, "do"_a, "lse"_a, nb::kw_only(), "bias"_a = nb::none(),
      "mask"_a = nb::none(), "alibi_slopes"_a = nb::none(), "cu_seqlens_q"_a = nb::none(),
      "cu_seqlens_k"_a = nb::none(), "causal"_a = false, "window_left"_a = -1, "window_right"_a = -1,
      "softcap"_a = 0.0, "scale"_a = nb::none(), "precision"_a = "exact", "algorithm"_a = "fa2",
      "block_q"_a = nb::none(), "block_k"_a = nb::none(), "threads"_a = 0, "max_memory_bytes"_a = 0,
      bwd_doc.c_str());
}

}  // namespace flashsim::py
