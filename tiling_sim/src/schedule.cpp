// What every schedule shares: the CTA loop in launch order and the visible block ranges.
#include "flashsim/sim/schedule.h"

#include <algorithm>

#include "flashsim/sim/counts.h"
#include "flashsim/sim/kernel_model.h"
#include "int_math.h"

namespace flashsim::sim {

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

const ProblemData& resolve_data(const AttentionProblem& p, const ProblemData* data, ProblemData& storage) {
  if (data) {
    check_problem_data(p, *data);
    return *data;
  }
  if (p.kv_cache() || p.block_mask != BroadcastShape::None) storage = problem_data(p, 0);
  return storage;
}

KernelSchedule schedule(const KernelModel& m, const AttentionProblem& p, const TileConfig& c,
                        const ProblemData* data) {
  ProblemData storage;
  const ProblemData& d = resolve_data(p, data, storage);
  KernelSchedule s{launch(m, p, c, &d), {}};
  s.ctas.reserve(static_cast<size_t>(s.launch.ctas()));
  for_each_cta(s.launch, [&](int64_t b, int64_t h, int64_t blk) {
    CtaWork& w = s.ctas.emplace_back(CtaWork{b, h, blk, {}, 0, 0, 0, 0, 0});
    CtaBuilder x{p, dtype_bytes(p.dtype), &w, &d};
    m.cta(x, c, b, h, blk);
  });
  return s;
}

void CtaBuilder::add_paged(ref::AccessKind k, ref::TensorId t, int64_t b, int64_t hk, int64_t k0, int64_t n,
                           int64_t dim) {
  for (int64_t j = k0; j < k0 + n;) {
    const int64_t run = std::min(k0 + n, (j / p.page_size + 1) * p.page_size) - j;
    const int64_t row = cache_row(p, *data, b, j);
    w->moves.push_back(Move{k, t, 0, hk, row, run, dim, e, (row * p.heads_kv + hk) * dim, p.heads_kv * dim});
    j += run;
  }
}

void CtaBuilder::add_table(int64_t b, int64_t first, int64_t n) {
  if (n > 0)
    w->moves.push_back(Move{ref::AccessKind::Load, tensor::BlockTable, b, 0, first, n, 1, 4,
                            b * p.max_blocks_per_seq() + first, 1});
}

bool CtaBuilder::tile(int64_t b, int64_t h, int64_t q0, int64_t nq, int64_t k0, int64_t nk) {
  const bool active = !data || tile_active(p, *data, b, h, q0, nq, k0, nk);
  ++(active ? w->tiles : w->skipped_tiles);
  return active;
}

}  // namespace flashsim::sim
