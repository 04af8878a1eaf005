// The decode benchmark (decode_bench.h).
#include "flashsim/gpu/decode_bench.h"

#include <cuda_runtime.h>
#include <fmt/format.h>

#include <algorithm>
#include <limits>

#include "device_fill.h"
#include "device_memory.h"
#include "device_profile.h"
#include "flashsim/error.h"
#include "flashsim/gpu/params.h"
#include "flashsim/inputs.h"
#include "flashsim/kv_cache.h"
#include "flashsim/sim/hardware.h"
#include "flashsim/sim/sweep.h"

namespace flashsim::gpu {

namespace {

// One rotation set: q and the whole cache drawn on the device (N(0, 1), as the host generator), a shuffled block
// table (make_block_table, seeded by the set) or the in-order one, outputs as allocated.
DeviceArgs decode_case(DeviceMemory& mem, const AttentionProblem& p, size_t workspace, uint64_t set,
                       bool pages_in_order) {
  const auto input = [&](int64_t n, InputStream s) {
    void* d = mem.alloc(static_cast<size_t>(n) * static_cast<size_t>(dtype_bytes(p.dtype)));
    fill_normal_device(d, n, p.dtype,
                       set * 16 + static_cast<uint64_t>(s));  // 16 > the streams of InputStream
    return d;
  };
  const auto upload_i32 = [&](const std::vector<int32_t>& v) {
    std::vector<uint8_t> bytes(v.size() * sizeof(int32_t));
    std::copy_n(reinterpret_cast<const uint8_t*>(v.data()), bytes.size(), bytes.data());
    return static_cast<const int32_t*>(mem.upload(bytes));
  };
  const auto elems = [](const std::vector<int64_t>& shape) {
    int64_t n = 1;
    for (const int64_t s : shape) n *= s;
    return n;
  };
  DeviceArgs a;
  a.q = input(p.q_elems(), InputStream::Q);
  a.k_cache = input(elems(p.k_cache_shape()), InputStream::K);
  a.v_cache = input(elems(p.v_cache_shape()), InputStream::V);
  const KvCacheLayout l =
      kv_cache_layout(p, pages_in_order ? in_order_block_table(p) : make_block_table(p, set));
  a.block_table = upload_i32(l.block_table);
  a.cache_seqlens = upload_i32(l.cache_seqlens);
  a.o = mem.alloc(static_cast<size_t>(p.o_elems()) * static_cast<size_t>(dtype_bytes(p.dtype)));
  a.lse = static_cast<float*>(mem.alloc(static_cast<size_t>(p.lse_elems()) * sizeof(float)));
  if (workspace > 0) a.workspace = mem.alloc(workspace);
  return a;
}

}  // namespace

std::vector<int32_t> in_order_block_table(const AttentionProblem& p) {
  const int64_t cols = p.max_blocks_per_seq();
  if (p.cache_num_blocks() > std::numeric_limits<int32_t>::max())
    throw InputError("num_blocks",
                     fmt::format("{} pages do not fit int32 page indices", p.cache_num_blocks()));
  std::vector<int32_t> table(static_cast<size_t>(p.batch * cols), 0);
  int32_t next = 0;  // sequence after sequence, each one's pages in key order
  for (int64_t b = 0; b < p.batch; ++b)
    for (int64_t i = 0; i < p.cache_pages(b); ++i) table[static_cast<size_t>(b * cols + i)] = next++;
  return table;
}

std::vector<DecodeBenchRow> decode_bench(const KernelVersion& v, const AttentionProblem& p,
                                         const BenchOptions& o, bool pages_in_order) {
  if (!p.kv_cache()) throw InputError("page-size", "decode-bench times a paged KV cache: give --page-size");
  if (p.seqlen_new > 0)
    throw InputError("seqlen-new", "decode-bench times the attention over the cache, without an append");
  const TileConfig launch = tile_for(v, p);
  if (const std::string why =
          missing_gpu_feature(p, v.features) + (v.unsupported ? v.unsupported(p, launch) : "");
      !why.empty())
    throw InputError("kernel", fmt::format("{} cannot run {}: {}", v.name, p.describe(), why));
  const sim::SplitSweepResult sweep =
      sim::sweep_splits_of_tile(p, device_profile(), launch);  // the profile the launch chose with
  size_t workspace = 0;
  for (const auto& row : sweep.rows) {
    TileConfig c = launch;
    c.num_splits = row.num_splits;
    if (v.workspace_bytes) workspace = std::max(workspace, v.workspace_bytes(p, c));
  }
  DeviceMemory mem(Backend::Cuda);
  std::vector<DeviceArgs> sets;
  do {
    sets.push_back(decode_case(mem, p, workspace, sets.size(), pages_in_order));
  } while (mem.allocated_bytes() < static_cast<size_t>(o.rotate_bytes) && sets.size() < 64);
  mem.synchronize();
  std::vector<DecodeBenchRow> rows;
  for (const auto& row : sweep.rows) {
    TileConfig c = launch;
    c.num_splits = row.num_splits;
    BenchOptions fwd = o;
    fwd.time_backward = false;
    BenchResult r;
    time_passes(v, p, c, sets, fwd, r);
    DecodeBenchRow out;
    out.num_splits = row.num_splits;
    out.chosen = row.num_splits == launch.num_splits;
    out.ms = r.fwd_ms;
    out.predicted_ms = row.time_s * 1e3;
    out.kv_bytes = sweep.kv_bytes;
    rows.push_back(out);
  }
  return rows;
}

double copy_bytes_per_s(int64_t bytes) {
  DeviceMemory mem(Backend::Cuda);
  void* src = mem.alloc(static_cast<size_t>(bytes));
  void* dst = mem.alloc(static_cast<size_t>(bytes));
  mem.fill(src, 1, static_cast<size_t>(bytes));
  cudaEvent_t start, stop;
  FLASHSIM_CUDA_CHECK(cudaEventCreate(&start));
  FLASHSIM_CUDA_CHECK(cudaEventCreate(&stop));
  std::vector<float> ms;
  for (int i = 0; i < 13; ++i) {
    FLASHSIM_CUDA_CHECK(cudaEventRecord(start));
    FLASHSIM_CUDA_CHECK(cudaMemcpyAsync(dst, src, static_cast<size_t>(bytes), cudaMemcpyDeviceToDevice));
    FLASHSIM_CUDA_CHECK(cudaEventRecord(stop));
    FLASHSIM_CUDA_CHECK(cudaEventSynchronize(stop));
    float t = 0;
    FLASHSIM_CUDA_CHECK(cudaEventElapsedTime(&t, start, stop));
    if (i >= 3) ms.push_back(t);  // 3 warm-up copies
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  std::nth_element(ms.begin(), ms.begin() + static_cast<long>(ms.size() / 2), ms.end());
  return 2.0 * static_cast<double>(bytes) / (ms[ms.size() / 2] * 1e-3);
}

}  // namespace flashsim::gpu
