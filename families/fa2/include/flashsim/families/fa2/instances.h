#pragma once
// The tile configs fa2-v1 (gpu/fa2/, FlashAttention-2 on mma.sync) is compiled for: one table that the CUDA
// dispatch instantiates entry by entry (gpu/fa2/fa2_fwd_launch.cuh, fa2_bwd_launch.cuh), that the gpu host code
// checks a requested TileConfig against (forward_unsupported, backward_unsupported), and that the simulator
// enumerates to rank every config the GPU can run. Adding an instance is one line here (its head dim must be
// one of those with a translation unit: gpu/fa2/fa2_fwd_d*.cu, fa2_bwd_d*.cu). Header-only, no CUDA. Part of
// flashsim::fa2_spec (families/fa2/).
//
// Register and shared-memory arithmetic (the traits, gpu/fa2/fa2_fwd_traits.h and fa2_bwd_traits.h, assert it):
//   forward   fp32 accumulators a thread keeps across the key loop: O (Br / w) d / 32 + S (Br / w) Bc / 32, at
//             most 192 (ptxas needs the rest of the 255 for fragments, addresses and the row statistics);
//             shared memory (Br + 2 stages Bc) d x 2 bytes.
//   backward  dK + dV of the warp's 16 key rows (d Bc / (32 w): the 2 w warps of a CTA split the Bc / 16 key
//             tiles and, when there are more warps than tiles, the head dim) + S^T and dP^T of a step (Br),
//             at most 192; shared memory (2 Bc d + 4 Br d + Bc Br) x 2 bytes + 16 Br (lse shift and D).
// The hardware's shared-memory limit a block is a parameter (max_smem_bytes: the hardware profile's
// shared_memory_per_block, or the device's cudaDevAttrMaxSharedMemoryPerBlockOptin): every stages value is
// compiled, and a device with less than a config needs refuses it at run time (forward_unsupported names the
// limit). tests/sim/tune_test.cpp holds every entry within the H100 profile's limit.
// Registers and spills of each kernel: gpu/tools/sass.py resources (recorded for sm_90: calibration
// fa2.register_overhead); the "spills" below are its LDL / STL in
// the kernel's loops on sm_90.
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

namespace flashsim {

// A forward instance: head dim, Br (TileConfig block_q), Bc (block_k), warps a CTA. Compiled for every stages
// value in [kFa2FwdMinStages, kFa2FwdMaxStages], bf16 and fp16, plain and score-pipeline kernels.
struct Fa2FwdInstance {
  int head_dim, block_q, block_k, warps;
};
// A backward instance: head dim, backward Br (TileConfig bwd_block_q), backward Bc (bwd_block_k), and the
// TileConfig's warps: the backward kernel launches 2 x warps (FlashAttention-2's and the simulator's models).
struct Fa2BwdInstance {
  int head_dim, block_q, block_k, warps;
};

inline constexpr int kFa2FwdMinStages = 1;      // FA2's schedule: one K and one V buffer
inline constexpr int kFa2FwdMaxStages = 2;      // the next block's K and V prefetched under the current one
inline constexpr int64_t kFa2ElementBytes = 2;  // bf16 / fp16 tiles (mma.m16n8k16 operands)

// clang-format off
inline constexpr Fa2FwdInstance kFa2FwdInstances[] = {
    // Br128 Bc64 w4: FlashAttention-2's d64..d128 tile on A100 / H100; 32 query rows a warp: 128 / 160 / 192
    // accumulators (d128 at the limit: its loop spills, 8-16 LDL; d96: 1-2).
    {64, 128, 64, 4}, {96, 128, 64, 4}, {128, 128, 64, 4},
    // Br128 Bc32 w4: half of S: 96 / 128 / 160 accumulators; the launch table's spill-free d96 / d128 tile.
    {64, 128, 32, 4}, {96, 128, 32, 4}, {128, 128, 32, 4},
    // Br128 Bc128 w4 at d64 only: 64 O + 128 S = 192 accumulators (d96 would need 224, d128 256); the plain
    // kernel is spill-free, the score-pipeline one spills ~72 LDL + 35 STL a key block.
    {64, 128, 128, 4},
    // Br64 w4: 16 rows a warp, half of Br128's accumulators (Bc64: 64 / 80 / 96; Bc128: 96 / 112 / 128): twice
    // the CTAs (short sequences fill the SMs) for twice the K / V reads from L2 a query row.
    {64, 64, 64, 4}, {96, 64, 64, 4}, {128, 64, 64, 4},
    {64, 64, 128, 4}, {96, 64, 128, 4}, {128, 64, 128, 4},
    // Br128 w8: 16 rows a warp as Br64 w4 (the same accumulators), 128 query rows sharing each K / V tile.
    // Br128 Bc128 w8 needs 160 KB at d128 stages 2.
    {64, 128, 64, 8}, {96, 128, 64, 8}, {128, 128, 64, 8},
    {64, 128, 128, 8}, {96, 128, 128, 8}, {128, 128, 128, 8},
    // d256, 16 rows a warp (Br128 w4 would need 320 accumulators): 128 O + 32 S (Bc64) or 16 S (Bc32); Br128 w8
    // is FlashAttention-2's d256 tile on A100 / H100. Shared memory: Br64 Bc64 96 / 160 KB (stages 1 / 2), Bc32
    // 64 / 96 KB; Br128 Bc64 128 / 192 KB, Bc32 96 / 128 KB. Br64 Bc64 and Br128 Bc64 stages 1 spill 1 LDL in the
    // score-pipeline kernel.
    {256, 64, 64, 4}, {256, 64, 32, 4}, {256, 128, 64, 8}, {256, 128, 32, 8},
};

inline constexpr Fa2BwdInstance kFa2BwdInstances[] = {
    // Br64 Bc128, 8 warps: FlashAttention-2's d128 backward tile on A100 / H100; a key tile a warp with the
    // whole head dim: dK + dV 64 / 96 / 128 + S^T, dP^T 64 = 128 / 160 / 192 accumulators; 144 KB at d128
    // (its score-pipeline kernel spills 17 LDL a query block).
    {64, 64, 128, 4}, {96, 64, 128, 4}, {128, 64, 128, 4},
    // Br64 Bc64, 8 warps: two warps a key tile, each half the head dim (S^T and dP^T computed twice: 1.4x the
    // tensor-core work): 96 / 112 / 128 / 192 accumulators; d256's only fit (201 KB), d128's spill-free
    // score-pipeline tile (d256 spills 1 LDL, 7 in its score-pipeline kernel).
    {64, 64, 64, 4}, {96, 64, 64, 4}, {128, 64, 64, 4}, {256, 64, 64, 4},
    // Br128 Bc128, 8 warps, d64: S^T + dP^T of 128 queries 128 + dK + dV 64 = 192 accumulators; 130 KB. Its
    // score-pipeline kernel spills (19 LDL + 17 STL a query block), the plain one 1 LDL.
    {64, 128, 128, 4},
    // Br64 Bc64, 4 warps (TileConfig warps 2): a key tile a warp with the whole head dim, no recomputed
    // products: 128 / 160 / 192 accumulators (d256 would need 320); d128 spills 3-5 LDL a query block.
    {64, 64, 64, 2}, {96, 64, 64, 2}, {128, 64, 64, 2},
    // Br64 Bc32, 8 warps, d256: four warps a key tile, 64 columns each: 64 + 64 = 128 accumulators, 164 KB (S^T
    // and dP^T computed four times).
    {256, 64, 32, 4},
};
// clang-format on

// Dynamic shared memory of a forward launch (Fa2FwdTraits::kSmemBytes): Q, then stages K and V buffers.
constexpr int64_t fa2_fwd_smem_bytes(int64_t head_dim, int64_t block_q, int64_t block_k, int64_t stages) {
  return (block_q + 2 * stages * block_k) * head_dim * kFa2ElementBytes;
}
// Of the backward's main kernel (Fa2BwdTraits::kSmemBytes): K, V, Q and dO double-buffered, dS^T, and the fp32
// lse shift and D of two query blocks.
constexpr int64_t fa2_bwd_smem_bytes(int64_t head_dim, int64_t block_q, int64_t block_k) {
  return (2 * block_k * head_dim + 4 * block_q * head_dim + block_k * block_q) * kFa2ElementBytes +
         4 * block_q * int64_t{sizeof(float)};
}

// Whether the forward is compiled for this tile (q_in_registers and kv_shared_buffer are not implemented: the
// caller checks them; so is whether the hardware's shared memory holds it: fa2_fwd_fits).
constexpr bool fa2_fwd_instantiated(int64_t head_dim, int64_t block_q, int64_t block_k, int64_t warps,
                                    int64_t stages) {
  if (stages < kFa2FwdMinStages || stages > kFa2FwdMaxStages) return false;
  for (const Fa2FwdInstance& e : kFa2FwdInstances)
    if (e.head_dim == head_dim && e.block_q == block_q && e.block_k == block_k && e.warps == warps)
      return true;
  return false;
}
// Whether the backward is compiled for this tile; warps: the TileConfig's (the kernel runs twice as many).
constexpr bool fa2_bwd_instantiated(int64_t head_dim, int64_t bwd_block_q, int64_t bwd_block_k,
                                    int64_t warps) {
  for (const Fa2BwdInstance& e : kFa2BwdInstances)
    if (e.head_dim == head_dim && e.block_q == bwd_block_q && e.block_k == bwd_block_k && e.warps == warps)
      return true;
  return false;
}

// Whether a forward tile's shared memory fits max_smem_bytes a block (the hardware profile's
// shared_memory_per_block, or the device's opt-in limit).
constexpr bool fa2_fwd_fits(int64_t head_dim, int64_t block_q, int64_t block_k, int64_t stages,
                            int64_t max_smem_bytes) {
  return fa2_fwd_smem_bytes(head_dim, block_q, block_k, stages) <= max_smem_bytes;
}
constexpr bool fa2_bwd_fits(int64_t head_dim, int64_t bwd_block_q, int64_t bwd_block_k,
                            int64_t max_smem_bytes) {
  return fa2_bwd_smem_bytes(head_dim, bwd_block_q, bwd_block_k) <= max_smem_bytes;
}

// Whether any instance has this head dim.
constexpr bool fa2_fwd_head_dim(int64_t head_dim) {
  for (const Fa2FwdInstance& e : kFa2FwdInstances)
    if (e.head_dim == head_dim) return true;
  return false;
}
constexpr bool fa2_bwd_head_dim(int64_t head_dim) {
  for (const Fa2BwdInstance& e : kFa2BwdInstances)
    if (e.head_dim == head_dim) return true;
  return false;
}

namespace detail {
// The head dims of a table, in the order they first appear.
template <class Table>
std::string fa2_instances_text(const Table& table, int64_t head_dim, bool forward, int64_t max_smem_bytes) {
  std::string out;
  std::vector<int64_t> seen;
  for (const auto& first : table) {
    if (std::find(seen.begin(), seen.end(), first.head_dim) != seen.end() ||
        (head_dim != 0 && first.head_dim != head_dim))
      continue;
    seen.push_back(first.head_dim);
    out += (out.empty() ? "d" : "; d") + std::to_string(first.head_dim) + ":";
    bool first_tile = true;
    for (const auto& e : table) {
      if (e.head_dim != first.head_dim) continue;
      out += std::string(first_tile ? " " : ", ") + (forward ? "" : "bwd ") + "Br" +
             std::to_string(e.block_q) + " Bc" + std::to_string(e.block_k) + " w" + std::to_string(e.warps);
      if (forward && max_smem_bytes > 0)
        for (int s = kFa2FwdMinStages; s <= kFa2FwdMaxStages; ++s)
          if (!fa2_fwd_fits(e.head_dim, e.block_q, e.block_k, s, max_smem_bytes))
            out += " (st" + std::to_string(s) + " over " + std::to_string(max_smem_bytes / 1024) + " KB)";
      first_tile = false;
    }
  }
  return out.empty() ? "none for head_dim " + std::to_string(head_dim) : out;
}
}  // namespace detail

// The instances as text, grouped by head dim ("d64: Br128 Bc64 w4, ...; d96: ..."), only head_dim's when it is
// not 0: what an error message lists. A forward stages value over max_smem_bytes (when not 0) is marked.
inline std::string fa2_fwd_instances_text(int64_t head_dim = 0, int64_t max_smem_bytes = 0) {
  return detail::fa2_instances_text(kFa2FwdInstances, head_dim, true, max_smem_bytes) +
         "; each with stages " + std::to_string(kFa2FwdMinStages) + " and " +
         std::to_string(kFa2FwdMaxStages);
}
inline std::string fa2_bwd_instances_text(int64_t head_dim = 0) {
  return detail::fa2_instances_text(kFa2BwdInstances, head_dim, false, 0) +
         " (w: TileConfig warps; the backward kernel runs twice as many)";
}

}  // namespace flashsim
