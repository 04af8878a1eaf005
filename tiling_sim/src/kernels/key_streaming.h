#pragma once
// The forward kernels that keep a query block on chip and stream the key blocks past it, one CTA per (query
// block, batch, head) as FlashAttention-2's grid: FA2 itself (one pass over the keys, online softmax), the
// two-pass online softmax (statistics, then output) and the three-pass safe softmax (max, sum, output). Each
// pass loads K; the last also V. MLA (problem.mla): V is the first head_dim_v columns of the K tile the last
// pass loads anyway, so no V is loaded and V has no shared-memory buffer of its own.
#include "kernels.h"

namespace flashsim::sim::kernels {

KernelLaunch key_streaming_launch(const AttentionProblem& p, const TileConfig& c);
void key_streaming_cta(CtaBuilder& x, const TileConfig& c, int64_t b, int64_t h, int64_t m, int passes);
void key_streaming_sequence(SequenceCounter& x, const AttentionProblem& p, const TileConfig& c, int64_t b,
                            int passes);

// A model of the family: its passes over the keys fixed as a template argument (models hold plain functions).
template <int Passes>
KernelModel key_streaming_model(std::string name, Algorithm a, std::string summary) {
  KernelModel m;
  m.name = std::move(name);
  m.algorithm = a;
  m.pass = Pass::Forward;
  m.summary = std::move(summary);
  m.work_blocks = WorkBlocks::Forward;
  m.block_sparse = true;
  m.launch = key_streaming_launch;
  m.cta = [](CtaBuilder& x, const TileConfig& c, int64_t b, int64_t h, int64_t blk) {
    key_streaming_cta(x, c, b, h, blk, Passes);
  };
  m.sequence = [](SequenceCounter& x, const AttentionProblem& p, const TileConfig& c, int64_t b) {
    key_streaming_sequence(x, p, c, b, Passes);
  };
  return m;
}

}  // namespace flashsim::sim::kernels
