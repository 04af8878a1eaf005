#pragma once
// What traffic compare (ncu.cpp) shares with the report's problem inference (ncu_problem.cpp).
#include <cstdint>
#include <string>
#include <vector>

#include "flashsim/sim/ncu.h"

namespace flashsim::sim {

// "(128, 1, 1)" -> {128, 1, 1}; empty when the text is not three integers in parentheses.
std::vector<int64_t> parse_dim3(const std::string& text);

// The SM-side figures traffic compare holds a kernel to: bytes from L2 to the SMs, the load/store unit's store
// and reduce bytes, and (dQ by bulk copies, else -1) the L2's reduce sectors.
struct SmSidePrediction {
  double load = 0, stores = 0, reduces = 0, bulk_reduce_sectors = -1;
};
SmSidePrediction sm_side_prediction(const KernelModel& m, const KernelCounts& counts,
                                    const AttentionProblem& p, const TileConfig& c);

}  // namespace flashsim::sim
