#pragma once
// How a reference algorithm computes: accumulation precision, threads, the GEMM path, the memory limit.
#include <cstdint>
#include <string_view>

namespace flashsim::ref {

class TrafficObserver;

// Exact: every operation in fp64 on the inputs as stored (the golden outputs).
// Fp32: every operation in fp32 (inputs converted exactly unless they are fp64).
// Emulated: a GPU kernel's pipeline: fp32 accumulation; P rounded to the input dtype before P*V and P^T*dO;
//   dS rounded to the input dtype before dS*K and dS^T*Q; o, dq, dk, dv, dbias rounded to the input dtype at
//   the end; lse and D = rowsum(dO o O) kept in fp32 (as FlashAttention-2 does).
enum class Precision { Exact, Fp32, Emulated };
std::string_view precision_name(Precision p);
Precision parse_precision(std::string_view s);

struct RunOptions {
  Precision precision = Precision::Exact;
  int threads = 0;       // 0: OpenMP's default
  bool use_blas = true;  // false: plain loops instead of OpenBLAS (the slow path to check the fast one)
  int64_t max_memory_bytes = 0;  // 0: 80% of the memory available now; an operation needing more refuses
  TrafficObserver* observer = nullptr;  // counts tile moves (forces one thread); see traffic.h
};

}  // namespace flashsim::ref
