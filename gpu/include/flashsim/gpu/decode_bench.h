#pragma once
// The decode benchmark (flashsim-gpu decode-bench): a paged-cache decode step timed at every split count the
// simulator's sweep predicts, beside the prediction, and the device's copy bandwidth it is judged against.
#include <cstdint>
#include <vector>

#include "flashsim/gpu/bench.h"
#include "flashsim/gpu/kernel.h"

namespace flashsim::gpu {

struct DecodeBenchRow {
  int64_t num_splits = 1;
  bool chosen = false;      // the launch table's count (the model's fastest)
  double ms = 0;            // measured median
  double predicted_ms = 0;  // the simulator's time at this count
  double kv_bytes = 0;      // K and V of every sequence's keys: what the step must read
};

// Times version v (a paged-cache version: decode-v1) on p at each split count of the simulator's sweep for v's
// launch tile; inputs made on the device (the cache as large as the problem asks, rotated through o.rotate_bytes
// like bench()). The block table is shuffled (make_block_table), or with pages_in_order each sequence's pages
// follow one another in memory (the same lookups, a contiguous cache's addresses: what page order costs).
// Throws InputError when v cannot run p.
std::vector<DecodeBenchRow> decode_bench(const KernelVersion& v, const AttentionProblem& p,
                                         const BenchOptions& o, bool pages_in_order = false);

// A block table whose sequence b holds pages b x max_blocks_per_seq + 0, 1, ... (its cache rows contiguous).
std::vector<int32_t> in_order_block_table(const AttentionProblem& p);

// The device's copy bandwidth: bytes read plus bytes written per second of a device-to-device cudaMemcpy of
// `bytes` (median of 10 after 3 warm-up copies).
double copy_bytes_per_s(int64_t bytes);

}  // namespace flashsim::gpu
