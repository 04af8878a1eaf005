// One case's buffers (case_buffers.h).
#include "case_buffers.h"

#include "stored.h"

namespace flashsim::gpu {

namespace {

// An output of n elements of dtype t, all bits set: NaN in fp32, fp16 and bf16.
void* nan_output(DeviceMemory& mem, int64_t n, DType t) {
  const size_t bytes = static_cast<size_t>(n) * static_cast<size_t>(dtype_bytes(t));
  void* p = mem.alloc(bytes);
  mem.fill(p, 0xFF, bytes);
  return p;
}

}  // namespace

DeviceArgs upload_case(DeviceMemory& mem, const AttentionProblem& p, const AttentionInputs& in,
                       const KernelVersion& v, const TileConfig& c, bool backward) {
  DeviceArgs a;
  a.q = mem.upload(stored_bytes(in.q, p.dtype));
  a.k = mem.upload(stored_bytes(in.k, p.dtype));  // with a cache: the gathered keys (a reference's input)
  a.v = mem.upload(stored_bytes(in.v, p.dtype));
  if (backward) a.dout = mem.upload(stored_bytes(in.dout, p.dtype));
  if (p.kv_cache()) {  // the cache as stored before the append (a decode kernel appends in place)
    const KvCacheLayout& l = in.cache.layout;
    const auto i32 = [](const std::vector<int32_t>& v32) {
      return golden::Tensor::from_int64(golden::StDType::I32, {static_cast<int64_t>(v32.size())},
                                        std::vector<int64_t>(v32.begin(), v32.end()))
          .data;
    };
    a.k_cache = mem.upload(stored_bytes(in.cache.k_cache, p.dtype));
    a.v_cache = mem.upload(stored_bytes(in.cache.v_cache, p.dtype));
    a.block_table = static_cast<const int32_t*>(mem.upload(i32(l.block_table)));
    a.cache_seqlens = static_cast<const int32_t*>(mem.upload(i32(l.cache_seqlens)));
    if (p.seqlen_new > 0) {
      a.k_new = mem.upload(stored_bytes(in.cache.k_new, p.dtype));
      a.v_new = mem.upload(stored_bytes(in.cache.v_new, p.dtype));
    }
  }
  a.block_mask = static_cast<const uint8_t*>(mem.upload(in.block_mask));
  a.bias = mem.upload(stored_bytes(in.bias, p.dtype));
  a.mask = static_cast<const uint8_t*>(mem.upload(in.mask));
  a.alibi_slopes = static_cast<const float*>(mem.upload(stored_bytes(in.alibi_slopes, DType::F32)));
  if (p.varlen()) {  // int32, as flash-attention's varlen API takes them
    const auto cu = [](const std::vector<int64_t>& v64) {
      return golden::Tensor::from_int64(golden::StDType::I32, {static_cast<int64_t>(v64.size())}, v64).data;
    };
    a.cu_seqlens_q = static_cast<const int32_t*>(mem.upload(cu(p.cu_seqlens_q())));
    a.cu_seqlens_k = static_cast<const int32_t*>(mem.upload(cu(p.cu_seqlens_k())));
  }
  a.o = nan_output(mem, p.o_elems(), p.dtype);
  a.lse = static_cast<float*>(nan_output(mem, p.lse_elems(), DType::F32));
  if (backward) {
    a.dq = nan_output(mem, p.q_elems(), p.dtype);
    a.dk = nan_output(mem, p.k_elems(), p.dtype);
    a.dv = nan_output(mem, p.v_elems(), p.dtype);
    if (p.bias != BroadcastShape::None)
      a.dbias = static_cast<float*>(nan_output(mem, p.bias_elems(), DType::F32));
  }
  if (v.workspace_bytes) {  // the backward's, a forward-only version's partials, fa3-v1's forward walk
    const size_t bytes = v.workspace_bytes(p, c);
    a.workspace = mem.alloc(bytes);
    mem.fill(a.workspace, 0, bytes);
  }
  return a;
}

}  // namespace flashsim::gpu
