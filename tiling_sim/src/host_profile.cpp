// The "host" profile: this machine's CPU as hwloc sees it (cores as SMs, last-level cache as L2).
#include <hwloc.h>

#include <thread>

#include "flashsim/sim/hardware.h"

namespace flashsim::sim {

HardwareProfile host_profile() {
  HardwareProfile p;
  p.name = "host";
  hwloc_topology_t topo;
  int cores = static_cast<int>(std::thread::hardware_concurrency());
  int64_t l1 = 32 * 1024, llc = 8 * 1024 * 1024;
  if (hwloc_topology_init(&topo) == 0) {
    if (hwloc_topology_load(topo) == 0) {
      const int n = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_CORE);
      if (n > 0) cores = n;
      for (hwloc_obj_type_t t : {HWLOC_OBJ_L3CACHE, HWLOC_OBJ_L2CACHE}) {
        if (hwloc_obj_t o = hwloc_get_obj_by_type(topo, t, 0); o && o->attr) {
          llc = static_cast<int64_t>(o->attr->cache.size) * hwloc_get_nbobjs_by_type(topo, t);
          break;
        }
      }
      if (hwloc_obj_t o = hwloc_get_obj_by_type(topo, HWLOC_OBJ_L1CACHE, 0); o && o->attr)
        l1 = static_cast<int64_t>(o->attr->cache.size);
    }
    hwloc_topology_destroy(topo);
  }
  p.description = "this machine's CPU (hwloc): cores as SMs, L1 data cache as shared memory, LLC as L2";
  p.sms = cores > 0 ? cores : 1;
  p.shared_memory_per_sm = l1;
  p.shared_memory_per_block = l1;
  p.l2_bytes = llc;
  p.l2_effective_bytes = llc * 4 / 5;
  p.max_threads_per_sm = 1024;
  p.max_ctas_per_sm = 1;
  p.dram_bytes_per_s = 20e9 * p.sms / 2;
  p.l2_bytes_per_s = 2.5 * p.dram_bytes_per_s;
  p.tensor_flops_fp16 = 50e9 * p.sms;
  p.fp32_flops = 50e9 * p.sms;
  p.exp_per_s = 2e9 * p.sms;
  return p;
}

}  // namespace flashsim::sim
