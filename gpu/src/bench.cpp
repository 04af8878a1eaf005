// Kernel timing (bench.h).
#include "flashsim/gpu/bench.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <stdexcept>
#include <string>

#include "device_memory.h"
#include "flashsim/inputs.h"
#include "stored.h"

namespace flashsim::gpu {

namespace {

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(e));
}

std::vector<uint8_t> bytes_of(const std::vector<double>& v, DType t) {
  std::vector<uint8_t> b(v.size() * static_cast<size_t>(dtype_bytes(t)));
  to_stored(v, b.data(), t);
  return b;
}

// One set of a problem's buffers on the device; the inputs are the same values in every set.
struct BufferSet {
  DeviceArgs args;
  size_t bytes = 0;
};

BufferSet make_set(DeviceMemory& mem, const AttentionProblem& p, const AttentionInputs& in,
                   const KernelVersion& v, const TileConfig& c) {
  BufferSet s;
  const auto up = [&](const std::vector<uint8_t>& b) {
    s.bytes += b.size();
    return mem.upload(b);
  };
  DeviceArgs& a = s.args;
  a.q = up(bytes_of(in.q, p.dtype));
  a.k = up(bytes_of(in.k, p.dtype));
  a.v = up(bytes_of(in.v, p.dtype));
  a.dout = up(bytes_of(in.dout, p.dtype));
  a.bias = up(bytes_of(in.bias, p.dtype));
  a.mask = static_cast<const uint8_t*>(up(in.mask));
  a.alibi_slopes = static_cast<const float*>(up(bytes_of(in.alibi_slopes, DType::F32)));
  const auto out = [&](int64_t n, DType t) {
    const size_t b = static_cast<size_t>(n) * static_cast<size_t>(dtype_bytes(t));
    s.bytes += b;
    return mem.alloc(b);
  };
  a.o = out(p.o_elems(), p.dtype);
  a.lse = static_cast<float*>(out(p.lse_elems(), DType::F32));
  a.dq = out(p.q_elems(), p.dtype);
  a.dk = out(p.k_elems(), p.dtype);
  a.dv = out(p.v_elems(), p.dtype);
  if (p.bias != BroadcastShape::None) a.dbias = static_cast<float*>(out(p.bias_elems(), DType::F32));
  if (v.workspace_bytes) a.workspace = mem.alloc(v.workspace_bytes(p, c));  // not rotated: scratch only
  return s;
}

// The median time in ms of `repeats` calls of launch(set i), each between two events, after `warmup` calls.
template <class F>
double median_ms(int warmup, int repeats, size_t sets, F&& launch) {
  cudaEvent_t start, stop;
  check(cudaEventCreate(&start), "cudaEventCreate");
  check(cudaEventCreate(&stop), "cudaEventCreate");
  for (int i = 0; i < warmup; ++i) launch(static_cast<size_t>(i) % sets);
  std::vector<float> ms(static_cast<size_t>(repeats));
  for (int i = 0; i < repeats; ++i) {
    check(cudaEventRecord(start), "cudaEventRecord");
    launch(static_cast<size_t>(warmup + i) % sets);
    check(cudaEventRecord(stop), "cudaEventRecord");
    check(cudaEventSynchronize(stop), "kernel execution");
    check(cudaEventElapsedTime(&ms[static_cast<size_t>(i)], start, stop), "cudaEventElapsedTime");
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  std::nth_element(ms.begin(), ms.begin() + repeats / 2, ms.end());
  return ms[static_cast<size_t>(repeats / 2)];
}

}  // namespace

double conventional_forward_flops(const AttentionProblem& p) {
  const double f = 4.0 * static_cast<double>(p.batch * p.heads_q) * static_cast<double>(p.seqlen_q) *
                   static_cast<double>(p.seqlen_k) * static_cast<double>(p.head_dim);
  return p.causal() ? f / 2 : f;
}

BenchResult bench(const KernelVersion& v, const AttentionProblem& p, const TileConfig& c,
                  const BenchOptions& o) {
  BenchResult r;
  r.kernel = v.name;
  r.problem = p.describe();
  if (v.backend != Backend::Cuda) {
    r.skipped = "not a CUDA version";
    return r;
  }
  if (const std::string why = v.unsupported ? v.unsupported(p, c) : ""; !why.empty()) {
    r.skipped = why;
    return r;
  }
  const AttentionInputs in = make_random_inputs(p, 1);  // never zeros: real data, as a model would see
  DeviceMemory mem(Backend::Cuda);
  std::vector<BufferSet> sets;
  int64_t total = 0;
  do {  // enough copies that the rotation moves more bytes than L2 holds
    sets.push_back(make_set(mem, p, in, v, c));
    total += static_cast<int64_t>(sets.back().bytes);
  } while (total < o.rotate_bytes && sets.size() < 64);
  for (auto& s : sets) v.forward(p, c, s.args);  // o and lse for the backward
  mem.synchronize();
  const double fwd = conventional_forward_flops(p);
  r.fwd_ms = median_ms(o.warmup, o.repeats, sets.size(), [&](size_t i) { v.forward(p, c, sets[i].args); });
  r.fwd_tflops = fwd / (r.fwd_ms * 1e-3) / 1e12;
  if (v.backward) {
    r.bwd_ms = median_ms(o.warmup, o.repeats, sets.size(), [&](size_t i) { v.backward(p, c, sets[i].args); });
    r.bwd_tflops = 2.5 * fwd / (r.bwd_ms * 1e-3) / 1e12;
  }
  mem.synchronize();
  return r;
}

}  // namespace flashsim::gpu
