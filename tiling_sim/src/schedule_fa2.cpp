// FlashAttention-2's kernels as tile schedules: forward (flash_fwd_kernel) and backward (flash_bwd_dot_do_o,
// flash_bwd_dq_dk_dv_loop_seqk_parallel with fp32 dQ atomics, flash_bwd_convert_dq).
#include <algorithm>

#include "flashsim/sim/schedule.h"

namespace flashsim::sim {

using ref::AccessKind;
using ref::TensorId;

std::string_view kernel_kind_name(KernelKind k) {
  switch (k) {
    case KernelKind::Fa2Forward:
      return "fwd_fa2";
    case KernelKind::Fa2DotDoO:
      return "bwd_dot_do_o";
    case KernelKind::Fa2DqDkDv:
      return "bwd_dq_dk_dv";
    case KernelKind::Fa2ConvertDq:
      return "bwd_convert_dq";
    case KernelKind::ThreePassForward:
      return "fwd_three_pass";
    case KernelKind::TwoPassForward:
      return "fwd_two_pass";
    case KernelKind::Fa1Forward:
      return "fwd_fa1";
    case KernelKind::NaiveScores:
      return "naive_scores";
    case KernelKind::NaiveSoftmax:
      return "naive_softmax";
    case KernelKind::NaivePv:
      return "naive_pv";
    case KernelKind::NaiveBwdScores:
      return "naive_bwd_scores";
    case KernelKind::NaiveBwdSoftmax:
      return "naive_bwd_softmax";
    case KernelKind::NaiveBwdDp:
      return "naive_bwd_dp";
    case KernelKind::NaiveBwdDs:
      return "naive_bwd_ds";
    case KernelKind::NaiveBwdDv:
      return "naive_bwd_dv";
    case KernelKind::NaiveBwdDq:
      return "naive_bwd_dq";
    case KernelKind::NaiveBwdDk:
      return "naive_bwd_dk";
  }
  return "?";
}

int key_passes(KernelKind k) {
  return k == KernelKind::ThreePassForward ? 3 : k == KernelKind::TwoPassForward ? 2 : 1;
}

int64_t KernelLaunch::smem_bytes() const {
  int64_t s = 0;
  for (const auto& b : smem) s += b.bytes;
  return s;
}

std::vector<KernelKind> fa2_forward_kernels() {
  return {KernelKind::Fa2Forward};
}
std::vector<KernelKind> naive_forward_kernels() {
  return {KernelKind::NaiveScores, KernelKind::NaiveSoftmax, KernelKind::NaivePv};
}

std::vector<KernelKind> naive_backward_kernels() {
  return {KernelKind::NaiveBwdScores, KernelKind::NaiveBwdSoftmax, KernelKind::NaiveBwdDp,
          KernelKind::NaiveBwdDs,     KernelKind::NaiveBwdDv,      KernelKind::NaiveBwdDq,
          KernelKind::NaiveBwdDk};
}

std::vector<KernelKind> fa2_backward_kernels() {
  return {KernelKind::Fa2DotDoO, KernelKind::Fa2DqDkDv, KernelKind::Fa2ConvertDq};
}

namespace {
int64_t ceil_div(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}
int64_t floor_div(int64_t a, int64_t b) {
  return a >= 0 ? a / b : -((-a + b - 1) / b);
}
}  // namespace

std::pair<int64_t, int64_t> visible_key_blocks(const AttentionProblem& p, int64_t b, int64_t q0, int64_t q1,
                                               int64_t block_k) {
  const int64_t sq = p.len_q(b), sk = p.len_k(b), shift = sk - sq;
  const int64_t lo = p.window_left < 0 ? 0 : std::max<int64_t>(0, q0 + shift - p.window_left);
  const int64_t hi = p.window_right < 0 ? sk : std::min(sk, q1 + shift + p.window_right);
  const int64_t first = lo / block_k, last = hi <= 0 ? 0 : ceil_div(hi, block_k);
  return last > first ? std::pair{first, last} : std::pair<int64_t, int64_t>{0, 0};
}

std::pair<int64_t, int64_t> visible_query_blocks(const AttentionProblem& p, int64_t b, int64_t k0, int64_t k1,
                                                 int64_t block_q) {
  const int64_t sq = p.len_q(b), sk = p.len_k(b), shift = sk - sq;
  const int64_t lo = p.window_right < 0 ? 0 : std::max<int64_t>(0, k0 - shift - p.window_right);
  const int64_t hi = p.window_left < 0 ? sq : std::min(sq, k1 - shift + p.window_left);
  const int64_t first = floor_div(lo, block_q), last = hi <= 0 ? 0 : ceil_div(hi, block_q);
  return last > first ? std::pair{first, last} : std::pair<int64_t, int64_t>{0, 0};
}

KernelLaunch fa2_launch(KernelKind kind, const AttentionProblem& p, const TileConfig& c) {
  const int64_t e = dtype_bytes(p.dtype), d = p.head_dim, dv = p.head_dim_v;
  KernelLaunch l;
  l.kind = kind;
  l.grid_y = p.batch;
  l.grid_z = p.heads_q;
  const int bwd_warps = 2 * c.warps;  // FA2's backward kernels use twice the forward's warps
  switch (kind) {
    case KernelKind::Fa1Forward:
      l.grid_x = 1;
      l.threads = c.warps * 32;
      l.smem = {{"Q", c.block_q * d * e},
                {"K", c.block_k * d * e},
                {"V", c.block_k * dv * e},
                {"O", c.block_q * dv * 4},
                {"m, l", c.block_q * 8}};
      break;
    case KernelKind::NaiveScores:
    case KernelKind::NaiveSoftmax:
    case KernelKind::NaivePv:
    case KernelKind::NaiveBwdScores:
    case KernelKind::NaiveBwdSoftmax:
    case KernelKind::NaiveBwdDp:
    case KernelKind::NaiveBwdDs:
    case KernelKind::NaiveBwdDv:
    case KernelKind::NaiveBwdDq:
    case KernelKind::NaiveBwdDk:
      l.grid_x = 1;
      l.threads = c.warps * 32;
      break;
    case KernelKind::Fa2Forward:
    case KernelKind::ThreePassForward:
    case KernelKind::TwoPassForward: {
      l.grid_x = ceil_div(p.seqlen_q, c.block_q);
      l.threads = c.warps * 32;
      l.regs_per_thread = 255;
      // O (Br x dv) and S/P (Br x Bc) in fp32; Q too when kept in registers (in the input dtype).
      l.accumulator_elems = c.block_q * (dv + c.block_k) + (c.q_in_registers ? c.block_q * d * e / 4 : 0);
      const int64_t q = c.block_q * d * e, k = c.block_k * d * e * c.stages,
                    v = c.block_k * dv * e * c.stages;
      if (c.kv_shared_buffer) {
        l.smem = {{"Q", q}, {"KV", std::max(k, v)}};
      } else {
        l.smem = {{"Q", q}, {"K", k}, {"V", v}};
      }
      if (c.q_in_registers)
        l.smem[0].bytes = std::max<int64_t>(0, q - l.smem[1].bytes);  // Q shares K's buffer
      break;
    }
    case KernelKind::Fa2DotDoO:
      l.grid_x = ceil_div(p.seqlen_q, c.bwd_block_q);
      l.threads = bwd_warps * 32;
      break;
    case KernelKind::Fa2DqDkDv: {
      const int64_t br = c.bwd_block_q, bc = c.bwd_block_k;
      l.grid_x = ceil_div(p.seqlen_k, bc);
      l.threads = bwd_warps * 32;
      l.regs_per_thread = 255;
      l.accumulator_elems = bc * (d + dv) + 2 * br * bc;  // dK, dV; S and dP
      l.smem = {{"Q (double buffer)", 2 * br * d * e},
                {"dO", br * dv * e},
                {"K", bc * d * e},
                {"V", bc * dv * e},
                {"dS", br * bc * e},
                {"P", br * bc * e}};
      break;
    }
    case KernelKind::Fa2ConvertDq:
      l.grid_x = ceil_div(p.seqlen_q, c.bwd_block_q);
      l.threads = bwd_warps * 32;
      l.smem = {{"dQ", c.bwd_block_q * d * e}};
      break;
  }
  return l;
}

namespace {

struct Builder {
  const AttentionProblem& p;
  int e;
  CtaWork* w;
  void add(AccessKind k, TensorId t, int64_t b, int64_t h, int64_t row0, int64_t rows, int64_t cols, int eb) {
    if (rows > 0) w->moves.push_back(Move{k, t, b, h, row0, rows, cols, eb});
  }
};

void fwd_cta(Builder& x, const TileConfig& c, int64_t b, int64_t h, int64_t m, int passes) {
  const auto& p = x.p;
  const int64_t sq = p.len_q(b), sk = p.len_k(b), q0 = m * c.block_q;
  if (q0 >= sq) return;
  const int64_t rq = std::min(c.block_q, sq - q0), hk = p.kv_head(h);
  const auto [n0, n1] = visible_key_blocks(p, b, q0, q0 + c.block_q, c.block_k);
  if (n1 > n0) {
    x.add(AccessKind::Load, TensorId::Q, b, h, q0, rq, p.head_dim, x.e);
    for (int pass = 1; pass <= passes; ++pass)
      for (int64_t i = n0; i < n1; ++i) {
        // FA2 walks the key blocks from the last visible one down (the masked diagonal block first).
        const int64_t n = passes == 1 ? n1 - 1 - (i - n0) : i;
        const int64_t k0 = n * c.block_k, rk = std::min(c.block_k, sk - k0);
        const bool last = pass == passes;
        x.add(AccessKind::Load, TensorId::K, b, hk, k0, rk, p.head_dim, x.e);
        if (last) x.add(AccessKind::Load, TensorId::V, b, hk, k0, rk, p.head_dim_v, x.e);
        x.w->mma_flops += 2.0 * static_cast<double>(rq) * static_cast<double>(rk) *
                          static_cast<double>(p.head_dim + (last ? p.head_dim_v : 0));
        if (pass > 1 || passes == 1) x.w->exp_ops += static_cast<double>(rq * rk);
        // Per score: max, scale-and-subtract, sum; per key block: O's rows rescaled.
        if (last)
          x.w->vector_ops += 3.0 * static_cast<double>(rq * rk) + static_cast<double>(rq * p.head_dim_v);
      }
  }
  x.add(AccessKind::Store, TensorId::O, b, h, q0, rq, p.head_dim_v, x.e);
  x.add(AccessKind::Store, TensorId::Lse, b, h, q0, rq, 1, 4);
}

void dot_cta(Builder& x, const TileConfig& c, int64_t b, int64_t h, int64_t m) {
  const auto& p = x.p;
  const int64_t sq = p.len_q(b), q0 = m * c.bwd_block_q;
  if (q0 >= sq) return;
  const int64_t rq = std::min(c.bwd_block_q, sq - q0);
  x.add(AccessKind::Load, TensorId::O, b, h, q0, rq, p.head_dim_v, x.e);
  x.add(AccessKind::Load, TensorId::dO, b, h, q0, rq, p.head_dim_v, x.e);
  x.add(AccessKind::Store, TensorId::Delta, b, h, q0, rq, 1, 4);
  x.add(AccessKind::Store, TensorId::RowSum, b, h, q0, rq, 1, 4);  // FA2 writes a second fp32 row statistic
  if (c.dq_strategy == DqStrategy::Atomic) {  // clears the dQ accumulator (partials need no clearing)
    const int64_t rz = std::min(c.bwd_block_q, fa2_padded_rows(sq) - q0);
    x.add(AccessKind::Store, TensorId::DqAccum, b, h, q0, rz, p.head_dim, 4);
  }
}

void main_cta(Builder& x, const TileConfig& c, int64_t b, int64_t h, int64_t n) {
  const auto& p = x.p;
  const int64_t sq = p.len_q(b), sk = p.len_k(b), k0 = n * c.bwd_block_k;
  if (k0 >= sk) return;
  const int64_t rk = std::min(c.bwd_block_k, sk - k0), hk = p.kv_head(h);
  const auto [m0, m1] = visible_query_blocks(p, b, k0, k0 + c.bwd_block_k, c.bwd_block_q);
  if (m1 > m0) {
    x.add(AccessKind::Load, TensorId::K, b, hk, k0, rk, p.head_dim, x.e);
    x.add(AccessKind::Load, TensorId::V, b, hk, k0, rk, p.head_dim_v, x.e);
    for (int64_t i = m0; i < m1; ++i) {
      const int64_t m = m1 - 1 - (i - m0);  // FA2 walks the query blocks from the last one down
      const int64_t q0 = m * c.bwd_block_q, rq = std::min(c.bwd_block_q, sq - q0);
      x.add(AccessKind::Load, TensorId::Q, b, h, q0, rq, p.head_dim, x.e);
      x.add(AccessKind::Load, TensorId::dO, b, h, q0, rq, p.head_dim_v, x.e);
      x.add(AccessKind::Load, TensorId::Lse, b, h, q0, rq, 1, 4);
      x.add(AccessKind::Load, TensorId::Delta, b, h, q0, rq, 1, 4);
      if (c.dq_strategy == DqStrategy::Atomic) {
        x.add(AccessKind::Reduce, TensorId::DqAccum, b, h, q0, c.bwd_block_q, p.head_dim, 4);  // unpredicated
      } else {  // this key block's own fp32 partial of dQ: plain stores, no atomics
        x.add(AccessKind::Store, TensorId::DqAccum, b, h, dq_partial_row(p, b, n, q0), rq, p.head_dim, 4);
      }
      x.w->mma_flops += 2.0 * static_cast<double>(rq) * static_cast<double>(rk) *
                        static_cast<double>(3 * p.head_dim + 2 * p.head_dim_v);
      x.w->exp_ops += static_cast<double>(rq * rk);
      x.w->vector_ops += 3.0 * static_cast<double>(rq * rk);  // P = exp(S - lse): FMA; dS = P o (dP - D)
    }
  }
  x.add(AccessKind::Store, TensorId::dK, b, h, k0, rk, p.head_dim, x.e);
  x.add(AccessKind::Store, TensorId::dV, b, h, k0, rk, p.head_dim_v, x.e);
}

void fa1_cta(Builder& x, const TileConfig& c, int64_t b, int64_t h) {
  const auto& p = x.p;
  const int64_t sq = p.len_q(b), sk = p.len_k(b), hk = p.kv_head(h);
  for (int64_t k0 = 0; k0 < sk; k0 += c.block_k) {
    const int64_t rk = std::min(c.block_k, sk - k0);
    const auto [m0, m1] = visible_query_blocks(p, b, k0, k0 + rk, c.block_q);
    if (m1 <= m0) continue;
    x.add(AccessKind::Load, TensorId::K, b, hk, k0, rk, p.head_dim, x.e);
    x.add(AccessKind::Load, TensorId::V, b, hk, k0, rk, p.head_dim_v, x.e);
    for (int64_t m = m0; m < m1; ++m) {
      const int64_t q0 = m * c.block_q, rq = std::min(c.block_q, sq - q0);
      x.add(AccessKind::Load, TensorId::Q, b, h, q0, rq, p.head_dim, x.e);
      x.add(AccessKind::Load, TensorId::O, b, h, q0, rq, p.head_dim_v, x.e);
      x.add(AccessKind::Load, TensorId::RowMax, b, h, q0, rq, 1, 4);
      x.add(AccessKind::Load, TensorId::RowSum, b, h, q0, rq, 1, 4);
      x.add(AccessKind::Store, TensorId::O, b, h, q0, rq, p.head_dim_v, x.e);
      x.add(AccessKind::Store, TensorId::RowMax, b, h, q0, rq, 1, 4);
      x.add(AccessKind::Store, TensorId::RowSum, b, h, q0, rq, 1, 4);
      x.w->mma_flops += 2.0 * static_cast<double>(rq) * static_cast<double>(rk) *
                        static_cast<double>(p.head_dim + p.head_dim_v);
      x.w->exp_ops += static_cast<double>(rq * rk);
    }
  }
}

void naive_cta(Builder& x, KernelKind kind, int64_t b, int64_t h) {
  const auto& p = x.p;
  const int64_t sq = p.len_q(b), sk = p.len_k(b), hk = p.kv_head(h);
  if (sk == 0) return;
  const double pairs = static_cast<double>(sq) * static_cast<double>(sk);
  switch (kind) {
    case KernelKind::NaiveScores:
    case KernelKind::NaiveBwdScores:  // the backward recomputes S the same way
      x.add(AccessKind::Load, TensorId::Q, b, h, 0, sq, p.head_dim, x.e);
      x.add(AccessKind::Load, TensorId::K, b, hk, 0, sk, p.head_dim, x.e);
      x.add(AccessKind::Store, TensorId::Scores, b, h, 0, sq, sk, 4);
      x.w->mma_flops += 2.0 * pairs * static_cast<double>(p.head_dim);
      break;
    case KernelKind::NaiveSoftmax:
      x.add(AccessKind::Load, TensorId::Scores, b, h, 0, sq, sk, 4);
      x.add(AccessKind::Store, TensorId::Probs, b, h, 0, sq, sk, 4);
      x.add(AccessKind::Store, TensorId::Lse, b, h, 0, sq, 1, 4);
      x.w->exp_ops += pairs;
      break;
    case KernelKind::NaivePv:
      x.add(AccessKind::Load, TensorId::Probs, b, h, 0, sq, sk, 4);
      x.add(AccessKind::Load, TensorId::V, b, hk, 0, sk, p.head_dim_v, x.e);
      x.add(AccessKind::Store, TensorId::O, b, h, 0, sq, p.head_dim_v, x.e);
      x.w->mma_flops += 2.0 * pairs * static_cast<double>(p.head_dim_v);
      break;
    case KernelKind::NaiveBwdSoftmax:
      x.add(AccessKind::Load, TensorId::Scores, b, h, 0, sq, sk, 4);
      x.add(AccessKind::Store, TensorId::Probs, b, h, 0, sq, sk, 4);
      x.w->exp_ops += pairs;
      break;
    case KernelKind::NaiveBwdDp:
      x.add(AccessKind::Load, TensorId::dO, b, h, 0, sq, p.head_dim_v, x.e);
      x.add(AccessKind::Load, TensorId::V, b, hk, 0, sk, p.head_dim_v, x.e);
      x.add(AccessKind::Store, TensorId::Scores, b, h, 0, sq, sk, 4);
      x.w->mma_flops += 2.0 * pairs * static_cast<double>(p.head_dim_v);
      break;
    case KernelKind::NaiveBwdDs:
      x.add(AccessKind::Load, TensorId::Probs, b, h, 0, sq, sk, 4);
      x.add(AccessKind::Load, TensorId::Scores, b, h, 0, sq, sk, 4);
      x.add(AccessKind::Load, TensorId::dO, b, h, 0, sq, p.head_dim_v, x.e);
      x.add(AccessKind::Load, TensorId::O, b, h, 0, sq, p.head_dim_v, x.e);
      x.add(AccessKind::Store, TensorId::Scores, b, h, 0, sq, sk, 4);
      break;
    case KernelKind::NaiveBwdDv:
      x.add(AccessKind::Load, TensorId::Probs, b, h, 0, sq, sk, 4);
      x.add(AccessKind::Load, TensorId::dO, b, h, 0, sq, p.head_dim_v, x.e);
      x.add(AccessKind::Store, TensorId::dV, b, h, 0, sk, p.head_dim_v, x.e);
      x.w->mma_flops += 2.0 * pairs * static_cast<double>(p.head_dim_v);
      break;
    case KernelKind::NaiveBwdDq:
      x.add(AccessKind::Load, TensorId::Scores, b, h, 0, sq, sk, 4);
      x.add(AccessKind::Load, TensorId::K, b, hk, 0, sk, p.head_dim, x.e);
      x.add(AccessKind::Store, TensorId::dQ, b, h, 0, sq, p.head_dim, x.e);
      x.w->mma_flops += 2.0 * pairs * static_cast<double>(p.head_dim);
      break;
    default:  // NaiveBwdDk
      x.add(AccessKind::Load, TensorId::Scores, b, h, 0, sq, sk, 4);
      x.add(AccessKind::Load, TensorId::Q, b, h, 0, sq, p.head_dim, x.e);
      x.add(AccessKind::Store, TensorId::dK, b, h, 0, sk, p.head_dim, x.e);
      x.w->mma_flops += 2.0 * pairs * static_cast<double>(p.head_dim);
      break;
  }
}

void convert_cta(Builder& x, const TileConfig& c, int64_t b, int64_t h, int64_t m) {
  const auto& p = x.p;
  const int64_t sq = p.len_q(b), q0 = m * c.bwd_block_q;
  if (q0 >= sq) return;
  const int64_t rq = std::min(c.bwd_block_q, sq - q0);
  if (c.dq_strategy == DqStrategy::Partials) {
    // The reduction kernel: the partials of every key block that sees this query block, summed in key-block
    // order (deterministic), then converted.
    const auto [n0, n1] = visible_key_blocks(p, b, q0, q0 + c.bwd_block_q, c.bwd_block_k);
    for (int64_t n = n0; n < n1; ++n)
      x.add(AccessKind::Load, TensorId::DqAccum, b, h, dq_partial_row(p, b, n, q0), rq, p.head_dim, 4);
    x.add(AccessKind::Store, TensorId::dQ, b, h, q0, rq, p.head_dim, x.e);
    return;
  }
  // The whole Br-row tile of the padded accumulator is read; only the dQ store is predicated.
  x.add(AccessKind::Load, TensorId::DqAccum, b, h, q0, std::min(c.bwd_block_q, fa2_padded_rows(sq) - q0),
        p.head_dim, 4);
  x.add(AccessKind::Store, TensorId::dQ, b, h, q0, rq, p.head_dim, x.e);
}

}  // namespace

KernelSchedule fa2_schedule(KernelKind kind, const AttentionProblem& p, const TileConfig& c) {
  KernelSchedule s{fa2_launch(kind, p, c), {}};
  s.ctas.reserve(static_cast<size_t>(s.launch.ctas()));
  for (int64_t h = 0; h < s.launch.grid_z; ++h)
    for (int64_t b = 0; b < s.launch.grid_y; ++b)
      for (int64_t blk = 0; blk < s.launch.grid_x; ++blk) {
        CtaWork& w = s.ctas.emplace_back(CtaWork{b, h, blk, {}, 0, 0});
        Builder x{p, dtype_bytes(p.dtype), &w};
        switch (kind) {
          case KernelKind::Fa1Forward:
            fa1_cta(x, c, b, h);
            break;
          case KernelKind::NaiveScores:
          case KernelKind::NaiveSoftmax:
          case KernelKind::NaivePv:
          case KernelKind::NaiveBwdScores:
          case KernelKind::NaiveBwdSoftmax:
          case KernelKind::NaiveBwdDp:
          case KernelKind::NaiveBwdDs:
          case KernelKind::NaiveBwdDv:
          case KernelKind::NaiveBwdDq:
          case KernelKind::NaiveBwdDk:
            naive_cta(x, kind, b, h);
            break;
          case KernelKind::Fa2Forward:
          case KernelKind::ThreePassForward:
          case KernelKind::TwoPassForward:
            fwd_cta(x, c, b, h, blk, key_passes(kind));
            break;
          case KernelKind::Fa2DotDoO:
            dot_cta(x, c, b, h, blk);
            break;
          case KernelKind::Fa2DqDkDv:
            main_cta(x, c, b, h, blk);
            break;
          case KernelKind::Fa2ConvertDq:
            convert_cta(x, c, b, h, blk);
            break;
        }
      }
  return s;
}

}  // namespace flashsim::sim
