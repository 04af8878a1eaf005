#pragma once
// Algorithm: how attention is computed. One id names a CPU algorithm (reference/), the kernels the simulator
// models for it (tiling_sim/) and, later, the CUDA kernels that implement it (gpu/); the command line spells
// each one way: naive, three-pass, two-pass, fa1, fa2.
#include <string_view>
#include <vector>

namespace flashsim {

enum class Algorithm {
  Naive,      // standard attention: S = scale*Q*K^T and P = softmax(S) materialized, O = P*V
  ThreePass,  // safe softmax over keys in three passes: row max; row sum of exp(s - m); normalize, times V
  TwoPass,    // online softmax: running max and rescaled sum in one pass over keys, then the output pass
  Fa1,        // FlashAttention, key blocks outer: O, m, l re-read and re-written per key block
  Fa2,        // FlashAttention-2, query blocks outer: O rescaled in registers and written once
};

enum class Pass { Forward, Backward };

std::string_view algorithm_name(Algorithm a);
// Throws InputError(field) listing the valid names.
Algorithm parse_algorithm(std::string_view s, const char* field = "algorithm");
const std::vector<Algorithm>& all_algorithms();
// Whether the algorithm has a backward of its own (naive and fa2); the streaming forwards (three-pass,
// two-pass, fa1) are paired with FA2's backward, which needs only the forward's o and lse.
bool has_backward(Algorithm a);
// The backward that goes with a forward algorithm: its own, else fa2.
inline Algorithm backward_of(Algorithm a) {
  return has_backward(a) ? a : Algorithm::Fa2;
}
std::string_view pass_name(Pass p);  // "fwd", "bwd"

// One kernel launch of an algorithm's pass: the index-th kernel it runs (the reference reports its steps so,
// and the simulator's registry maps the step to the kernel model that simulates it).
struct KernelStep {
  Algorithm algorithm;
  Pass pass;
  int index;
};

}  // namespace flashsim
