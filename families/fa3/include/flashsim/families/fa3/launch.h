#pragma once
// The forward instance fa3-v1 launches a problem with, read by the kernel's host code (gpu/fa3/fa3_v1.cpp) and
// the simulator's fwd_fa3 model alike: the generated launch table's (launch_table.h) entry of the problem's head
// dim, dtype and mask (causal, or any window: a masked problem takes the causal entry) whose seqlen is nearest
// in log scale, else the head dim's hand-kept instance; with a softcap, an instance whose softcapped kernel is
// compiled (instances.h).
#include <algorithm>
#include <cmath>
#include <cstdint>

#include "flashsim/families/fa3/instances.h"
#include "flashsim/families/fa3/launch_table.h"

namespace flashsim {

// nullptr when fa3-v1 has no instance of the head dim.
inline const Fa3FwdInstance* fa3_fwd_launch_instance(int head_dim, bool bf16, bool masked, int64_t seqlen,
                                                     bool softcap) {
  const Fa3FwdInstance* hand = fa3_fwd_instance(head_dim);
  if (!hand) return nullptr;
  const double n = std::log(static_cast<double>(std::max<int64_t>(1, seqlen)));
  const Fa3LaunchEntry* best = nullptr;
  double gap = 0;
  for (const Fa3LaunchEntry& e : kFa3FwdLaunchTable) {
    if (e.head_dim != head_dim || e.bf16 != bf16 || e.causal != masked) continue;
    const double g = std::abs(std::log(static_cast<double>(e.seqlen)) - n);
    if (!best || g < gap) best = &e, gap = g;
  }
  const Fa3FwdInstance* pick =
      best ? fa3_fwd_instance(head_dim, best->block_q, best->block_k, best->stages) : nullptr;
  if (!pick) pick = hand;
  return softcap && !pick->softcap ? fa3_fwd_softcap_instance(head_dim) : pick;
}

}  // namespace flashsim
