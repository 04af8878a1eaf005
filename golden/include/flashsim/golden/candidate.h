#pragma once
// The reference as a candidate: a folder of candidate files computed by a reference algorithm through the
// emulated GPU pipeline in a chosen dtype, the way a kernel would produce them (o, dq, dk, dv, dbias stored
// in that dtype, lse in fp32). Used by the quick start and the tests as a real, independent-path candidate.
// A norm case's candidate is its emulated pipeline in the Tree order (ref::NormOrder): another summation
// order than the tolerances' reference; the attention algorithms and tile do not apply to it.
#include <filesystem>

#include "flashsim/dtype.h"
#include "flashsim/golden/case_file.h"
#include "flashsim/golden/generate.h"
#include "flashsim/golden/safetensors.h"
#include "flashsim/ref/attention.h"
#include "flashsim/tile_config.h"

namespace flashsim::golden {

struct CandidateOptions {
  DType compute = DType::BF16;
  Algorithm forward = Algorithm::TwoPass;
  Algorithm backward = Algorithm::Naive;  // naive or fa2 (has_backward)
  TileConfig tile;
  ref::RunOptions run;
  bool force = false;
  ProgressFn progress;
};

// A candidate file as a kernel in `compute` writes one: o, dq, dk, dv, dbias stored in that dtype, lse in
// fp32, and __metadata__["flashsim.compute_dtype"].
SafetensorsFile candidate_file(const AttentionProblem& p, const AttentionOutputs& out, DType compute);

// Writes one candidate file per golden case (same file names) into out; returns the number written.
int64_t write_reference_candidate(const std::filesystem::path& golden, const std::filesystem::path& out,
                                  const CandidateOptions& opt);

}  // namespace flashsim::golden
