// forward() and backward(): validation, the memory guard and dispatch to the algorithms by accumulator type.
#include <fmt/format.h>
#include <omp.h>

#include <algorithm>
#include <string>

#include "backward_common.h"
#include "flashsim/error.h"
#include "kernels.h"
#include "memory_limit.h"

namespace flashsim::ref {

namespace {

template <class Acc>
void run_forward(const detail::ProblemContext& ctx, Algorithm algo, const TileConfig& tile,
                 ForwardResult& out) {
  switch (algo) {
    case Algorithm::Naive:
      return detail::forward_naive<Acc>(ctx, out);
    case Algorithm::Fa1:
      return detail::forward_fa1<Acc>(ctx, tile, out);
    default:
      return detail::forward_streaming<Acc>(ctx, tile, algo, out);
  }
}

// Working memory each algorithm allocates beyond its outputs (per concurrently running task).
int64_t forward_workspace_bytes(const detail::ProblemContext& ctx, Algorithm algo, const TileConfig& tile,
                                int acc_bytes) {
  const AttentionProblem& p = ctx.p;
  const int64_t threads = ctx.threads();
  const int64_t dmax = std::max(p.head_dim, p.head_dim_v);
  switch (algo) {
    case Algorithm::Naive:  // S (P in place), Q, K, V, O of one head per thread
      return threads * (p.seqlen_q * p.seqlen_k + 2 * (p.seqlen_q + p.seqlen_k) * dmax) * acc_bytes;
    case Algorithm::Fa1:  // O, m, l of one head per thread, plus tiles
      return threads *
             (p.seqlen_q * (dmax + 2) + 4 * (tile.block_q + tile.block_k) * dmax +
              2 * tile.block_q * tile.block_k) *
             acc_bytes;
    default:  // tiles only
      return threads * (4 * (tile.block_q + tile.block_k) * dmax + 2 * tile.block_q * tile.block_k) *
             acc_bytes;
  }
}

}  // namespace

ForwardResult forward(const AttentionProblem& p, const AttentionInputs& in, Algorithm algo,
                      const TileConfig& tile, const RunOptions& opt) {
  in.validate(p);
  tile.validate();
  if (opt.threads < 0) throw InputError("threads", "must be >= 0 (0: OpenMP's default)");
  detail::ProblemContext ctx(p, in, opt);
  const int acc_bytes = opt.precision == Precision::Exact ? 8 : 4;
  detail::require_memory(
      ctx, forward_workspace_bytes(ctx, algo, tile, acc_bytes) + (p.o_elems() + p.lse_elems()) * 8,
      std::string(algorithm_name(algo)) + " forward");
  ForwardResult out;
  out.o.assign(p.o_elems(), 0.0);
  out.lse.assign(p.lse_elems(), 0.0);
  if (opt.precision == Precision::Exact) {
    run_forward<double>(ctx, algo, tile, out);
  } else {
    run_forward<float>(ctx, algo, tile, out);
  }
  return out;
}

SplitKvResult forward_split_kv(const AttentionProblem& p, const AttentionInputs& in, int num_splits,
                               const TileConfig& tile, const RunOptions& opt) {
  in.validate(p);
  tile.validate();
  if (num_splits < 1 || num_splits > 1024)
    throw InputError("num_splits", "must be in [1, 1024], got " + std::to_string(num_splits));
  if (opt.threads < 0) throw InputError("threads", "must be >= 0 (0: OpenMP's default)");
  if (opt.observer) throw InputError("num_splits", "the split-KV forward has no traffic model yet");
  detail::ProblemContext ctx(p, in, opt);
  const int acc_bytes = opt.precision == Precision::Exact ? 8 : 4;
  // FA2's tiles, each task's partials of its split, and the outputs with the partials.
  const int64_t partials = ctx.threads() * num_splits * tile.block_q * (p.head_dim_v + 1) * acc_bytes;
  detail::require_memory(ctx,
                         forward_workspace_bytes(ctx, Algorithm::Fa2, tile, acc_bytes) + partials +
                             (num_splits + 1) * (p.o_elems() + p.lse_elems()) * 8,
                         "split-KV forward");
  SplitKvResult r;
  r.combined.o.assign(p.o_elems(), 0.0);
  r.combined.lse.assign(p.lse_elems(), 0.0);
  r.partial_o.assign(num_splits * p.o_elems(), 0.0);
  r.partial_lse.assign(num_splits * p.lse_elems(), 0.0);
  if (opt.precision == Precision::Exact)
    detail::forward_split_kv<double>(ctx, tile, num_splits, r);
  else
    detail::forward_split_kv<float>(ctx, tile, num_splits, r);
  return r;
}

Gradients backward(const AttentionProblem& p, const AttentionInputs& in, const ForwardResult& fwd,
                   Algorithm algo, const TileConfig& tile, const RunOptions& opt) {
  if (!has_backward(algo))
    throw InputError("algorithm", "the " + std::string(algorithm_name(algo)) +
                                      " algorithm has no backward of its own: use naive or fa2");
  if (p.fp8())
    throw InputError("dtype",
                     fmt::format("{} inputs are forward only (FP8 attention kernels have no backward)",
                                 dtype_name(p.dtype)));
  in.validate(p);
  tile.validate();
  if (in.dout.empty()) throw InputError("do", "the backward needs dO (the upstream gradient)");
  if (static_cast<int64_t>(fwd.o.size()) != p.o_elems()) throw InputError("o", "does not match the problem");
  if (static_cast<int64_t>(fwd.lse.size()) != p.lse_elems())
    throw InputError("lse", "does not match the problem");
  if (opt.threads < 0) throw InputError("threads", "must be >= 0 (0: OpenMP's default)");
  detail::ProblemContext ctx(p, in, opt);
  const int64_t acc_bytes = opt.precision == Precision::Exact ? 8 : 4;
  Gradients out;
  if (algo == Algorithm::Naive) {
    // Six lq x lk matrices (S, dcap, P, dP and two copies inside the GEMMs' operands) per thread.
    detail::require_memory(ctx,
                           ctx.threads() * 6 * p.seqlen_q * p.seqlen_k * acc_bytes +
                               detail::bias_gradient_bytes(p, static_cast<int>(acc_bytes)),
                           "naive backward");
    if (opt.precision == Precision::Exact) {
      detail::backward_naive<double>(ctx, fwd, out);
    } else {
      detail::backward_naive<float>(ctx, fwd, out);
    }
  } else if (opt.precision == Precision::Exact) {
    detail::backward_tiled<double>(ctx, tile, fwd, out);
  } else {
    detail::backward_tiled<float>(ctx, tile, fwd, out);
  }
  if (p.mla) {  // V is K's first head_dim_v columns: K's gradient is dK + [dV, 0], and there is no V to differentiate
    const int64_t rows = p.total_k() * p.heads_kv;
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < p.head_dim_v; ++c) out.dk[r * p.head_dim + c] += out.dv[r * p.head_dim_v + c];
    out.dv.clear();
  }
  return out;
}

}  // namespace flashsim::ref
