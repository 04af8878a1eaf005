#pragma once
// AttentionInputs: the tensors one attention problem reads, held as doubles whose values are exactly
// representable in the problem's dtype (so fp64 computation on them is computation "on the inputs as
// stored").
#include <cstdint>
#include <vector>

#include "flashsim/kv_cache.h"
#include "flashsim/problem.h"

namespace flashsim {

struct AttentionInputs {
  std::vector<double> q, k, v;
  std::vector<double> dout;          // dO, the upstream gradient (same layout as o)
  std::vector<double> bias;          // problem.bias shape, or empty
  std::vector<uint8_t> mask;         // problem.mask shape, or empty; != 0 keeps the score
  std::vector<double> alibi_slopes;  // [heads_q] (fp32 values), or empty
  std::vector<uint8_t> block_mask;   // problem.block_mask_shape(), or empty; != 0: the tile is computed
  std::vector<double> sinks;         // [heads_q] finite fp32 values with problem.sinks, else empty
  std::vector<uint8_t>
      dropout_keep;  // [batch, heads_q, seqlen_q, seqlen_k] with problem.dropout(), else empty
  // FP8 descale factors (finite fp32 values > 0), problem.descale_shape() with a descale, else empty: the
  // algorithms compute on q * q_descale, k * k_descale, v * v_descale (each of its (batch, kv head)).
  std::vector<double> q_descale, k_descale, v_descale;
  // With a paged KV cache: the cache as stored (before the append) and k_new / v_new; k and v then hold the
  // keys gathered from it after the append (gather_keys), which is what the algorithms read.
  KvCache cache;

  // Throws InputError when a tensor's size does not match the problem, or a value is not representable in
  // the problem's dtype.
  void validate(const AttentionProblem& p) const;
};

// Stream numbers of the generator (flashsim/random.h), one per tensor.
enum class InputStream : uint64_t {
  Q = 1,
  K = 2,
  V = 3,
  dO = 4,
  Bias = 5,
  Mask = 6,
  BlockMask = 7,
  KNew = 8,
  VNew = 9,
  BlockTable = 10,  // a KV cache's k_cache / v_cache draw from K / V
  Sinks = 11,
  DropoutKeep = 12
};

// Inputs drawn from N(0, 1) * magnitude (q, k, v, dO; bias N(0,1) without the magnitude), each rounded to the
// problem's dtype; sinks log(seqlen_k) + N(0, 1) in fp32 (comparable to a row's log-sum-exp, so the sink takes a
// sizeable share of each row); dropout_keep entries keep with probability 1 - dropout_p; mask entries keep with
// probability problem.mask_keep; the block mask from problem.block_mask_spec (one pattern per head, the same for
// every sequence unless random). With a KV cache every row of k_cache / v_cache is drawn (unused rows too, so a
// kernel reading them is caught), k_new / v_new from their own streams, the block table from make_block_table, and
// k / v gathered. FP8 inputs: q, k, v drawn in fp64 as above, then per descale group (the whole tensor, or a
// (batch, kv head): for q the q heads of that kv head) descale = fp32(amax_fraction * amax / fp8 max) of the group's
// largest |x| (1 for a group of zeros or without descales) and stored = fp8(x / descale), saturating; no dO (FP8 is
// forward only). MLA: no V stream is drawn, v (v_cache, v_new) is latent_values of k (k_cache, k_new). Elements are indexed by their position in the tensor, so a tensor's values do not depend on the
// thread count.
// The block mask of problem p (p.block_mask_shape()): p.block_mask_spec's pattern per head (head 0's without a
// heads dim), the same for every sequence; a random spec draws the whole tensor from `seed`.
std::vector<uint8_t> make_block_mask_tensor(const AttentionProblem& p, uint64_t seed);

AttentionInputs make_random_inputs(const AttentionProblem& p, uint64_t seed, double magnitude = 1.0);

// MLA (problem.mla): the values of a latent key tensor [..., head_dim] (k, k_cache or k_new), its first head_dim_v
// columns [..., head_dim_v]: V is a view of K. make_random_inputs builds v, v_cache and v_new so, and validate()
// refuses an MLA input whose v is not exactly this view of k.
std::vector<double> latent_values(const std::vector<double>& k, int64_t head_dim, int64_t head_dim_v);

// FP8 inputs' real values: q * q_descale, k * k_descale, v * v_descale of each (batch, kv head), exact in fp64, the
// descale tensors cleared (a problem without descales then reads them as they are).
AttentionInputs dequantized(const AttentionProblem& p, const AttentionInputs& in);

}  // namespace flashsim
