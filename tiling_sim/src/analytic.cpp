// Closed-form counts of the FA2 schedules: per sequence, per block, the visible range's row sums, times
// heads. Equal to execute_counts(fa2_schedule(...)) on load/store/reduce bytes and sectors (tests hold them
// equal).
#include <algorithm>

#include "flashsim/sim/counts.h"

namespace flashsim::sim {

using ref::TensorId;

namespace {

int64_t ceil_div(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}

struct Acc {
  KernelCounts& k;
  void add(DirectionBytes TensorTraffic::*dir, TensorId t, int64_t rows, int64_t cols, int eb) {
    auto& d = k.tensors[static_cast<size_t>(t)].*dir;
    d.bytes += rows * cols * eb;
    d.sectors += rows * ((cols * eb + 31) / 32);
  }
  void footprint(TensorId t, int64_t rows, int64_t cols, int eb) {
    k.tensors[static_cast<size_t>(t)].unique_bytes += rows * cols * eb;
  }
};

constexpr auto kLoad = &TensorTraffic::load;
constexpr auto kStore = &TensorTraffic::store;
constexpr auto kReduce = &TensorTraffic::reduce;

// Rows of the blocks [first, last) of size blk over a sequence of length len.
int64_t block_rows(int64_t first, int64_t last, int64_t blk, int64_t len) {
  return last > first ? std::min(len, last * blk) - first * blk : 0;
}

// One sequence (batch entry) of one kernel, for one query head; scaled by `times` (heads, equal batches).
void sequence(KernelKind kind, const AttentionProblem& p, const TileConfig& c, int64_t b, int64_t times,
              Acc& a, std::vector<double>* work = nullptr) {
  const int e = dtype_bytes(p.dtype);
  const int64_t sq = p.len_q(b), sk = p.len_k(b), d = p.head_dim, dv = p.head_dim_v;
  KernelCounts one;
  Acc x{one};
  switch (kind) {
    case KernelKind::Fa2Forward:
    case KernelKind::ThreePassForward:
    case KernelKind::TwoPassForward: {
      const int passes = key_passes(kind);
      for (int64_t q0 = 0; q0 < sq; q0 += c.block_q) {
        const int64_t rq = std::min(c.block_q, sq - q0);
        const auto [n0, n1] = visible_key_blocks(p, b, q0, q0 + c.block_q, c.block_k);
        const int64_t rk = block_rows(n0, n1, c.block_k, sk);
        if (n1 > n0) x.add(kLoad, TensorId::Q, rq, d, e);
        x.add(kLoad, TensorId::K, rk * passes, d, e);
        x.add(kLoad, TensorId::V, rk, dv, e);
        const double pairs = static_cast<double>(rq) * static_cast<double>(rk);
        if (work) work->push_back(2.0 * pairs * static_cast<double>(passes * d + dv));
        one.mma_flops += 2.0 * pairs * static_cast<double>(passes * d + dv);
        one.exp_ops += pairs * (passes == 1 ? 1 : passes - 1);
        if (n1 > n0) one.vector_ops += 3.0 * pairs + static_cast<double>(rq * dv * (n1 - n0));
      }
      x.add(kStore, TensorId::O, sq, dv, e);
      x.add(kStore, TensorId::Lse, sq, 1, 4);
      break;
    }
    case KernelKind::Fa1Forward:
      for (int64_t k0 = 0; k0 < sk; k0 += c.block_k) {
        const int64_t rk = std::min(c.block_k, sk - k0);
        const auto [m0, m1] = visible_query_blocks(p, b, k0, k0 + rk, c.block_q);
        if (m1 <= m0) continue;
        const int64_t rq = block_rows(m0, m1, c.block_q, sq);
        x.add(kLoad, TensorId::K, rk, d, e);
        x.add(kLoad, TensorId::V, rk, dv, e);
        x.add(kLoad, TensorId::Q, rq, d, e);
        for (auto dir : {kLoad, kStore}) {
          x.add(dir, TensorId::O, rq, dv, e);
          x.add(dir, TensorId::RowMax, rq, 1, 4);
          x.add(dir, TensorId::RowSum, rq, 1, 4);
        }
        const double pairs = static_cast<double>(rq) * static_cast<double>(rk);
        one.mma_flops += 2.0 * pairs * static_cast<double>(d + dv);
        one.exp_ops += pairs;
      }
      break;
    case KernelKind::NaiveScores:
    case KernelKind::NaiveSoftmax:
    case KernelKind::NaivePv: {
      if (sk == 0) break;
      const double pairs = static_cast<double>(sq) * static_cast<double>(sk);
      if (kind == KernelKind::NaiveScores) {
        x.add(kLoad, TensorId::Q, sq, d, e);
        x.add(kLoad, TensorId::K, sk, d, e);
        x.add(kStore, TensorId::Scores, sq, sk, 4);
        one.mma_flops += 2.0 * pairs * static_cast<double>(d);
      } else if (kind == KernelKind::NaiveSoftmax) {
        x.add(kLoad, TensorId::Scores, sq, sk, 4);
        x.add(kStore, TensorId::Probs, sq, sk, 4);
        x.add(kStore, TensorId::Lse, sq, 1, 4);
        one.exp_ops += pairs;
      } else {
        x.add(kLoad, TensorId::Probs, sq, sk, 4);
        x.add(kLoad, TensorId::V, sk, dv, e);
        x.add(kStore, TensorId::O, sq, dv, e);
        one.mma_flops += 2.0 * pairs * static_cast<double>(dv);
      }
      break;
    }
    case KernelKind::NaiveBwdScores:
    case KernelKind::NaiveBwdSoftmax:
    case KernelKind::NaiveBwdDp:
    case KernelKind::NaiveBwdDs:
    case KernelKind::NaiveBwdDv:
    case KernelKind::NaiveBwdDq:
    case KernelKind::NaiveBwdDk: {
      if (sk == 0) break;
      const double pairs = static_cast<double>(sq) * static_cast<double>(sk);
      // Every kernel but the softmax reads or writes one N x N fp32 matrix besides P/S: see the schedule.
      switch (kind) {
        case KernelKind::NaiveBwdScores:
          x.add(kLoad, TensorId::Q, sq, d, e);
          x.add(kLoad, TensorId::K, sk, d, e);
          x.add(kStore, TensorId::Scores, sq, sk, 4);
          one.mma_flops += 2.0 * pairs * static_cast<double>(d);
          break;
        case KernelKind::NaiveBwdSoftmax:
          x.add(kLoad, TensorId::Scores, sq, sk, 4);
          x.add(kStore, TensorId::Probs, sq, sk, 4);
          one.exp_ops += pairs;
          break;
        case KernelKind::NaiveBwdDp:
          x.add(kLoad, TensorId::dO, sq, dv, e);
          x.add(kLoad, TensorId::V, sk, dv, e);
          x.add(kStore, TensorId::Scores, sq, sk, 4);
          one.mma_flops += 2.0 * pairs * static_cast<double>(dv);
          break;
        case KernelKind::NaiveBwdDs:
          x.add(kLoad, TensorId::Probs, sq, sk, 4);
          x.add(kLoad, TensorId::Scores, sq, sk, 4);
          x.add(kLoad, TensorId::dO, sq, dv, e);
          x.add(kLoad, TensorId::O, sq, dv, e);
          x.add(kStore, TensorId::Scores, sq, sk, 4);
          break;
        case KernelKind::NaiveBwdDv:
          x.add(kLoad, TensorId::Probs, sq, sk, 4);
          x.add(kLoad, TensorId::dO, sq, dv, e);
          x.add(kStore, TensorId::dV, sk, dv, e);
          one.mma_flops += 2.0 * pairs * static_cast<double>(dv);
          break;
        case KernelKind::NaiveBwdDq:
          x.add(kLoad, TensorId::Scores, sq, sk, 4);
          x.add(kLoad, TensorId::K, sk, d, e);
          x.add(kStore, TensorId::dQ, sq, d, e);
          one.mma_flops += 2.0 * pairs * static_cast<double>(d);
          break;
        default:
          x.add(kLoad, TensorId::Scores, sq, sk, 4);
          x.add(kLoad, TensorId::Q, sq, d, e);
          x.add(kStore, TensorId::dK, sk, d, e);
          one.mma_flops += 2.0 * pairs * static_cast<double>(d);
          break;
      }
      break;
    }
    case KernelKind::Fa2DotDoO: {
      x.add(kLoad, TensorId::O, sq, dv, e);
      x.add(kLoad, TensorId::dO, sq, dv, e);
      x.add(kStore, TensorId::Delta, sq, 1, 4);
      x.add(kStore, TensorId::RowSum, sq, 1, 4);
      if (c.dq_strategy == DqStrategy::Atomic)
        x.add(kStore, TensorId::DqAccum,
              std::min(fa2_padded_rows(sq), ceil_div(sq, c.bwd_block_q) * c.bwd_block_q), d, 4);
      break;
    }
    case KernelKind::Fa2DqDkDv:
      for (int64_t k0 = 0; k0 < sk; k0 += c.bwd_block_k) {
        const int64_t rk = std::min(c.bwd_block_k, sk - k0);
        const auto [m0, m1] = visible_query_blocks(p, b, k0, k0 + c.bwd_block_k, c.bwd_block_q);
        const int64_t rq = block_rows(m0, m1, c.bwd_block_q, sq);
        if (m1 > m0) {
          x.add(kLoad, TensorId::K, rk, d, e);
          x.add(kLoad, TensorId::V, rk, dv, e);
        }
        x.add(kLoad, TensorId::Q, rq, d, e);
        x.add(kLoad, TensorId::dO, rq, dv, e);
        x.add(kLoad, TensorId::Lse, rq, 1, 4);
        x.add(kLoad, TensorId::Delta, rq, 1, 4);
        if (c.dq_strategy == DqStrategy::Atomic) {
          x.add(kReduce, TensorId::DqAccum, (m1 - m0) * c.bwd_block_q, d, 4);
        } else {
          x.add(kStore, TensorId::DqAccum, rq, d, 4);
        }
        if (work)
          work->push_back(2.0 * static_cast<double>(rq) * static_cast<double>(rk) *
                          static_cast<double>(3 * d + 2 * dv));
        one.mma_flops +=
            2.0 * static_cast<double>(rq) * static_cast<double>(rk) * static_cast<double>(3 * d + 2 * dv);
        one.exp_ops += static_cast<double>(rq * rk);
        one.vector_ops += 3.0 * static_cast<double>(rq * rk);
      }
      x.add(kStore, TensorId::dK, sk, d, e);
      x.add(kStore, TensorId::dV, sk, dv, e);
      break;
    case KernelKind::Fa2ConvertDq:
      if (c.dq_strategy == DqStrategy::Partials) {  // the reduction of the key blocks' partials
        for (int64_t q0 = 0; q0 < sq; q0 += c.bwd_block_q) {
          const auto [n0, n1] = visible_key_blocks(p, b, q0, q0 + c.bwd_block_q, c.bwd_block_k);
          x.add(kLoad, TensorId::DqAccum, (n1 - n0) * std::min(c.bwd_block_q, sq - q0), d, 4);
        }
        x.add(kStore, TensorId::dQ, sq, d, e);
        break;
      }
      // Each CTA reads its whole Br-row tile of the (padded) accumulator; the dQ store is predicated.
      x.add(kLoad, TensorId::DqAccum,
            std::min(fa2_padded_rows(sq), ceil_div(sq, c.bwd_block_q) * c.bwd_block_q), d, 4);
      x.add(kStore, TensorId::dQ, sq, d, e);
      break;
  }
  for (size_t t = 0; t < one.tensors.size(); ++t) {
    for (auto dir : {kLoad, kStore, kReduce}) {
      (a.k.tensors[t].*dir).bytes += (one.tensors[t].*dir).bytes * times;
      (a.k.tensors[t].*dir).sectors += (one.tensors[t].*dir).sectors * times;
    }
  }
  a.k.mma_flops += one.mma_flops * static_cast<double>(times);
  a.k.exp_ops += one.exp_ops * static_cast<double>(times);
  a.k.vector_ops += one.vector_ops * static_cast<double>(times);
}

}  // namespace

KernelCounts analytic_counts(KernelKind kind, const AttentionProblem& p, const TileConfig& c) {
  KernelCounts k;
  k.launch = fa2_launch(kind, p, c);
  Acc a{k};
  // CTAs of unequal work (masked blocks skipped, varlen): their work in launch order (heads, batch, blocks).
  const bool blocked = kind == KernelKind::Fa2Forward || kind == KernelKind::ThreePassForward ||
                       kind == KernelKind::TwoPassForward || kind == KernelKind::Fa2DqDkDv;
  const bool bwd = kind == KernelKind::Fa2DqDkDv;
  const int64_t bq = bwd ? c.bwd_block_q : c.block_q, bk = bwd ? c.bwd_block_k : c.block_k;
  const bool uneven = blocked && (p.varlen() || p.window_left >= 0 || p.window_right >= 0 ||
                                  p.seqlen_q % bq != 0 || p.seqlen_k % bk != 0);
  std::vector<std::vector<double>> work(uneven ? static_cast<size_t>(p.varlen() ? p.batch : 1) : 0);
  if (p.varlen()) {
    for (int64_t b = 0; b < p.batch; ++b)
      sequence(kind, p, c, b, p.heads_q, a, uneven ? &work[static_cast<size_t>(b)] : nullptr);
  } else {
    sequence(kind, p, c, 0, p.batch * p.heads_q, a, uneven ? &work[0] : nullptr);
  }
  if (uneven) {  // equal sequences: one (batch, head)'s blocks, repeated; varlen: every CTA
    const int64_t pattern_heads = p.varlen() ? k.launch.grid_z : 1, pattern_batch = p.varlen() ? p.batch : 1;
    k.cta_work.reserve(static_cast<size_t>(pattern_heads * pattern_batch * k.launch.grid_x));
    for (int64_t h = 0; h < pattern_heads; ++h)
      for (int64_t b = 0; b < pattern_batch; ++b) {
        const auto& w = work[static_cast<size_t>(b)];
        for (int64_t x = 0; x < k.launch.grid_x; ++x)
          k.cta_work.push_back(x < static_cast<int64_t>(w.size()) ? w[static_cast<size_t>(x)] : 0.0);
      }
    k.cta_work_repeat = p.varlen() ? 1 : k.launch.grid_y * k.launch.grid_z;
  }
  // Footprints (what a cold L2 must fetch or eventually write back) of the tensors the kernel touches.
  const int e = dtype_bytes(p.dtype);
  const int64_t tq = p.total_q(), tk = p.total_k(), hq = p.heads_q, hk = p.heads_kv;
  int64_t padded = 0;
  int64_t score_elems = 0;
  for (int64_t b = 0; b < p.batch; ++b) score_elems += p.len_q(b) * p.len_k(b) * hq;
  for (int64_t b = 0; b < p.batch; ++b)
    padded += std::min(fa2_padded_rows(p.len_q(b)), ceil_div(p.len_q(b), c.bwd_block_q) * c.bwd_block_q);
  auto touched = [&](TensorId t) {
    const auto& tt = k.tensors[static_cast<size_t>(t)];
    return tt.load.bytes + tt.store.bytes + tt.reduce.bytes > 0;
  };
  const std::pair<TensorId, int64_t> fp[] = {{TensorId::Q, tq * hq * p.head_dim * e},
                                             {TensorId::K, tk * hk * p.head_dim * e},
                                             {TensorId::V, tk * hk * p.head_dim_v * e},
                                             {TensorId::O, tq * hq * p.head_dim_v * e},
                                             {TensorId::dO, tq * hq * p.head_dim_v * e},
                                             {TensorId::Lse, tq * hq * 4},
                                             {TensorId::RowMax, tq * hq * 4},
                                             {TensorId::Scores, score_elems * 4},
                                             {TensorId::Probs, score_elems * 4},
                                             {TensorId::Delta, tq * hq * 4},
                                             {TensorId::RowSum, tq * hq * 4},
                                             {TensorId::dQ, tq * hq * p.head_dim * e},
                                             {TensorId::dK, tk * hq * p.head_dim * e},
                                             {TensorId::dV, tk * hq * p.head_dim_v * e},
                                             {TensorId::DqAccum, padded * hq * p.head_dim * 4}};
  for (const auto& [t, bytes] : fp)
    if (touched(t)) k.tensors[static_cast<size_t>(t)].unique_bytes = bytes;
  if (c.dq_strategy == DqStrategy::Partials) {  // each partial row is written once, then read once
    auto& acc = k.tensors[static_cast<size_t>(TensorId::DqAccum)];
    acc.unique_bytes = acc.load.bytes + acc.store.bytes;
  }
  return k;
}

}  // namespace flashsim::sim
