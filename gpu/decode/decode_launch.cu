// decode-v1's instances and launches (decode_launch.h).
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "cuda_launch.h"
#include "decode_launch.h"
#include "decode_v1_kernel.cuh"
#include "decode_v2_kernel.cuh"

namespace flashsim::gpu::decode {

namespace {

#if defined(FLASHSIM_DECODE_INSTANCES_CI) && FLASHSIM_DECODE_INSTANCES_CI  // gpu/CMakeLists.txt
constexpr bool kCompilesAll = false;  // CI compiles bf16 d128 alone: every template path, a tenth of the time
#else
constexpr bool kCompilesAll = true;
#endif

// Calls f.template operator()<T, D, DV>() for a compiled (T, d, dv); false when there is none.
template <class T, class F>
bool with_dims(int d, int dv, F&& f) {
  if (d == 128 && dv == 128) return f.template operator()<T, 128, 128>(), true;
  if constexpr (kCompilesAll) {
    if (d == 64 && dv == 64) return f.template operator()<T, 64, 64>(), true;
    if (d == 128 && dv == 64) return f.template operator()<T, 128, 64>(), true;
    if (d == 256 && dv == 256) return f.template operator()<T, 256, 256>(), true;
  }
  return false;
}
template <class F>
bool with_instance(Elem elem, int d, int dv, F&& f) {
  if (elem == Elem::BF16) return with_dims<__nv_bfloat16>(d, dv, f);
  if constexpr (kCompilesAll) {
    if (elem == Elem::F16) return with_dims<__half>(d, dv, f);
    if (elem == Elem::F32) return with_dims<float>(d, dv, f);
  }
  return false;
}

template <class T, int D, int DV, int kRows>
void launch_split(const DecodeParams& p, int m_blocks, cudaStream_t stream) {
  using Tr = DecodeTraits<sizeof(T), D, DV, kRows>;
  const auto kernel = decode_split_kernel<T, D, DV, kRows>;
  // Once an instance and process: the attribute stays set, and the calls cost microseconds a launch that a
  // decode step of tens of microseconds cannot hide (the benchmark's events would count them).
  static const bool allowed =
      (allow_dynamic_smem(reinterpret_cast<const void*>(kernel), Tr::kSmemBytes, "decode-v1"), true);
  (void)allowed;
  const dim3 grid(m_blocks, p.num_splits, p.a.batch * p.a.heads_kv);
  kernel<<<grid, Tr::kThreads, Tr::kSmemBytes, stream>>>(p);
  FLASHSIM_CUDA_CHECK(cudaGetLastError());
}

template <class T, int D, int DV>
void launch_mma_split(const DecodeParams& p, int m_blocks, cudaStream_t stream) {
  using Tr = DecodeMmaTraits<D, DV>;
  const auto kernel = decode_mma_split_kernel<T, D, DV>;
  static const bool allowed =  // once an instance and process, as launch_split
      (allow_dynamic_smem(reinterpret_cast<const void*>(kernel), Tr::kSmemBytes, "decode-v2"), true);
  (void)allowed;
  const dim3 grid(m_blocks, p.num_splits, p.a.batch * p.a.heads_kv);
  kernel<<<grid, Tr::kThreads, Tr::kSmemBytes, stream>>>(p);
  FLASHSIM_CUDA_CHECK(cudaGetLastError());
}

struct Launch {
  const DecodeParams& p;
  Split split;
  cudaStream_t stream;
  template <class T, int D, int DV>
  void operator()() const {
    const bool mma = split == Split::TensorCores;
    const int packed = p.a.seqlen_q * p.a.group,
              rows = mma ? DecodeMmaTraits<D, DV>::kRows : rows_per_cta(packed);
    const int m_blocks = (packed + rows - 1) / rows;
    if (p.seqlen_new > 0) {
      // One thread a 16-byte chunk: 256 threads, at most 4096 CTAs (a grid-stride loop beyond).
      const int64_t chunks =
          static_cast<int64_t>(p.a.batch) * p.seqlen_new * p.a.heads_kv * (D + DV) * sizeof(T) / 16;
      const int blocks = static_cast<int>(std::min<int64_t>(4096, (chunks + 255) / 256));
      decode_append_kernel<<<blocks, 256, 0, stream>>>(p, static_cast<int>(sizeof(T)));
      FLASHSIM_CUDA_CHECK(cudaGetLastError());
    }
    if constexpr (!std::is_same_v<T, float>) {
      if (mma) launch_mma_split<T, D, DV>(p, m_blocks, stream);
    }
    if (!mma && rows == 4) launch_split<T, D, DV, 4>(p, m_blocks, stream);
    if (!mma && rows == 8) launch_split<T, D, DV, 8>(p, m_blocks, stream);
    if (!mma && rows == 16) launch_split<T, D, DV, 16>(p, m_blocks, stream);
    if (p.num_splits > 1) {
      const int64_t out_rows = static_cast<int64_t>(p.a.batch) * p.a.heads_q * p.a.seqlen_q;
      const auto blocks = static_cast<unsigned>((out_rows + kCombineWarps - 1) / kCombineWarps);
      decode_combine_kernel<T><<<blocks, kCombineWarps * 32, 0, stream>>>(p);
      FLASHSIM_CUDA_CHECK(cudaGetLastError());
    }
  }
};

struct NoOp {
  template <class T, int D, int DV>
  void operator()() const {}
};

}  // namespace

bool instances_compiled(int elem_bytes, bool bf16, int d, int dv) {
  const Elem e = elem_bytes == 4 ? Elem::F32 : bf16 ? Elem::BF16 : Elem::F16;
  return head_dims_supported(d, dv) && with_instance(e, d, dv, NoOp{});
}

void launch_decode(const DecodeParams& p, Split split, Elem elem, void* stream) {
  if (split == Split::TensorCores && elem == Elem::F32)
    throw std::runtime_error("decode-v2: fp32 has no mma.sync m16n8k16 (decode-v1 runs it)");
  if (!with_instance(elem, p.a.head_dim, p.a.head_dim_v, Launch{p, split, static_cast<cudaStream_t>(stream)}))
    throw std::runtime_error("decode-v1: no compiled instance for head dims " + std::to_string(p.a.head_dim) +
                             "/" + std::to_string(p.a.head_dim_v));
}

}  // namespace flashsim::gpu::decode
