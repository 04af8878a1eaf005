#pragma once
// The harness: every kernel version on every case of a golden suite it supports, judged in process by the
// golden library's verifier (the rule and report of `flashsim golden verify`; no files in between).
#include <array>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "flashsim/golden/case_file.h"
#include "flashsim/golden/verify.h"
#include "flashsim/gpu/kernel.h"

namespace flashsim::gpu {

// The passes the user's tile flags apply to; the other pass runs at the version's launch tile.
enum class TilePasses { Both, Forward, Backward };

struct CheckOptions {
  std::filesystem::path golden;      // suite folder (manifest.json and its case files)
  std::vector<std::string> kernels;  // version names; empty: every version whose backend is available here
  std::vector<std::string> cases;    // case-name globs (empty: all)
  TileOverride tiles;                // the user's tile flags over each version's launch tile (tile_for)
  // Backward: the forward runs at the launch tile and the flags set the backward's only (a backward tile whose
  // TileConfig warps no forward instance has, e.g. fa2-v1's 4-warp backward, still gets its o and lse).
  TilePasses tiles_for = TilePasses::Both;
  int64_t max_memory_bytes = 0;  // golden files larger than this are refused (0: 80% of available)
};

struct VersionReport {
  const KernelVersion* version = nullptr;
  golden::VerifyReport report;                               // the cases it ran
  std::vector<std::pair<std::string, std::string>> skipped;  // (case, why the version cannot run it)
  // (case, why its backward cannot run): cases whose forward ran and was checked (o, lse) without a backward
  std::vector<std::pair<std::string, std::string>> forward_only;
};

// Whether a CUDA device can run kernels here; why not in *why.
bool cuda_available(std::string* why = nullptr);

// Why v's backward cannot run p at tile c ("" when it can): a forward-only version, or its backward_unsupported.
std::string why_no_backward(const KernelVersion& v, const AttentionProblem& p, const TileConfig& c);

// Runs the version on one case: inputs uploaded in their stored dtypes, outputs NaN-filled, forward (and
// backward when the version has one), outputs downloaded as the verifier's candidate.
golden::Outputs run_case(const KernelVersion& v, const golden::LoadedCase& lc, const TileConfig& c);
// The tiles a block-sparse version reported (DeviceArgs::tile_counts): forward computed, forward skipped,
// backward computed, backward skipped.
using TileCounts = std::array<int64_t, 4>;
// The same with the forward at tile fwd and the backward at tile bwd (the backward's workspace too); with a
// block mask and a version that skips tiles (kFeatureTileSkip), the tiles it reported into *counts.
golden::Outputs run_case(const KernelVersion& v, const golden::LoadedCase& lc, const TileConfig& fwd,
                         const TileConfig& bwd, TileCounts* counts = nullptr);
// The check of reported tile counts against the reference's at the same tiles (ref::forward / ref::backward by
// FA2's loops at fwd's block_q x block_k and bwd's bwd_block_q x bwd_block_k): "tiles_fwd" (and "tiles_bwd"
// with `backward`) verdicts, each passing when computed and skipped both match.
std::vector<golden::OutputVerdict> tile_count_verdicts(const golden::LoadedCase& lc, const TileConfig& fwd,
                                                       const TileConfig& bwd, bool backward,
                                                       const TileCounts& counts);

// Throws InputError for a bad suite folder, an unknown version, or a CUDA version where no device is.
std::vector<VersionReport> check(const CheckOptions& opt);

}  // namespace flashsim::gpu
