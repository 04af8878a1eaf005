#pragma once
// AttentionInputs: the tensors one attention problem reads, held as doubles whose values are exactly
// representable in the problem's dtype (so fp64 computation on them is computation "on the inputs as
// stored").
#include <cstdint>
#include <vector>

#include "flashsim/problem.h"

namespace flashsim {

struct AttentionInputs {
  std::vector<double> q, k, v;
  std::vector<double> dout;          // dO, the upstream gradient (same layout as o)
  std::vector<double> bias;          // problem.bias shape, or empty
  std::vector<uint8_t> mask;         // problem.mask shape, or empty; != 0 keeps the score
  std::vector<double> alibi_slopes;  // [heads_q] (fp32 values), or empty

  // Throws InputError when a tensor's size does not match the problem, or a value is not representable in
  // the problem's dtype.
  void validate(const AttentionProblem& p) const;
};

// Stream numbers of the generator (flashsim/random.h), one per tensor.
enum class InputStream : uint64_t { Q = 1, K = 2, V = 3, dO = 4, Bias = 5, Mask = 6, BlockMask = 7 };

// Inputs drawn from N(0, 1) * magnitude (q, k, v, dO; bias N(0,1) without the magnitude), each rounded to
// the problem's dtype; mask entries keep with probability problem.mask_keep. Elements are indexed by their
// position in the tensor, so a tensor's values do not depend on the thread count.
AttentionInputs make_random_inputs(const AttentionProblem& p, uint64_t seed, double magnitude = 1.0);

}  // namespace flashsim
