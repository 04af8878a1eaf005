#pragma once
// fa3-v1's spec (gpu/fa3/, FlashAttention forward on Hopper: TMA, wgmma, warp specialization): the tiles it is
// compiled for, one per head dim, and the arithmetic that sizes them. Header-only, no CUDA: the CUDA dispatch
// (gpu/fa3/fa3_fwd_launch.cuh), the host checks (gpu/fa3/fa3_v1.cpp) and the simulator read the same table.
//
// A CTA is three warpgroups (384 threads): warpgroup 0 is the producer (one elected thread issues the TMA
// loads; the warpgroup gives its registers back with setmaxnreg), warpgroups 1 and 2 are consumers, each owning
// 64 of the kBlockM = 128 query rows (wgmma's M is 64 a warpgroup).
//
// Registers (65536 a SM, one CTA a SM): setmaxnreg gives the producer 24 a thread and each consumer 240:
// 128 x (24 + 2 x 240) = 64512 <= 65536. A consumer thread keeps O (64 d / 128 = d / 2 fp32), S (64 Bc / 128 =
// Bc / 2 fp32) and P (Bc / 4 32-bit registers of two 16-bit values): d128 Bc128: 64 + 64 + 32 = 160, leaving
// 80 for addresses, row statistics and the wgmma descriptors; d256 Bc64: 128 + 32 + 16 = 176.
//
// Shared memory (227 KB opt-in on the H100, read from the device at launch): Q (kBlockM x d) once, K and V
// (Bc x d) kStages deep each, 2-byte elements, 1 KB alignment (128-byte swizzle) and the mbarriers:
//   d64  Bc128 st2: 16 + 2 x 2 x 16 = 80 KB      d128 Bc128 st2: 32 + 2 x 2 x 32 = 160 KB
//   d96  Bc128 st2: 24 + 2 x 2 x 24 = 120 KB     d256 Bc64  st2: 64 + 2 x 2 x 32 = 192 KB
#include <cstdint>

namespace flashsim {

struct Fa3FwdInstance {
  int head_dim, block_q, block_k, stages;
  // Whether its softcapped kernel is compiled: not where the softcap's tanh pushes it past the registers (ptxas
  // -warn-spills); a softcapped problem then runs on the head dim's first instance that has one.
  bool softcap = true;
};

// The schedule a problem runs with (gpu/fa3/fa3_fwd_params.h): ping-pong (the two consumer warpgroups take turns
// at the tensor cores, so that one's softmax runs under the other's GEMMs) everywhere, and a persistent grid
// (one CTA a SM walking the tiles gridDim apart) where the tiles are equal or short:
//  - no mask: persistent, each (batch, head)'s query blocks in turn;
//  - causal with fewer than kFa3PersistentCausalKeys keys and at least kFa3PersistentCausalTilesPerSm tiles an
//    SM: persistent, the (batch, head)s taken kFa3PersistentCausalGroup at a time and, within a group, the
//    heaviest query blocks of every head first. A one-CTA-a-tile grid pays each short tile's launch and fill;
//    measured on causal lengths of 512 .. 6144 keys the bench grid lacks (31 to 64 tiles an SM), persistent in
//    groups of 16 ran 19-25% faster at 512, 8-12% at 1536, 9-11% at 2048, 3-6% at 3072, even at 6144, and
//    10-20% slower at 16384 (calibration fa3.schedule_h100). With few tiles an SM the static walk leaves its
//    last round unbalanced (b2 h16/4 n912 d64 causal, 2 tiles an SM: 30.2 us persistent, 25.7 one CTA a tile
//    in another run);
//  - longer causal: persistent too where the launch walks balanced (walk.h: each tile to the CTA with the least
//    work so far), at least 8 tiles an SM: on an H200 1-6% faster than one CTA a tile at 4096 .. 16384 keys, d64
//    and d128 (calibration fa3.balanced_walk_h200), the (batch, head)s in the L2-sized groups below; without the
//    balanced walk (a launch with no workspace) one CTA a tile, as the static walk ran 10-20% slower at 16384;
//  - every windowed launch (and causal ones with fewer tiles): one CTA a tile (the hardware's dynamic hand-out),
//    the (batch, head)s in groups whose K and V fit half the L2 (the share data read again keeps on an H100: 24
//    of 50 MiB, calibration h100.l2_reuse_bytes), heavy blocks first.
struct Fa3Schedule {
  bool persistent, pingpong;
  int head_group;  // 0: each (batch, head)'s blocks in turn; G: G (batch, head)s at a time, heavy blocks first
};
inline constexpr int64_t kFa3PersistentCausalKeys = 4096;  // static walk: 3072 persistent faster, 6144 even
inline constexpr int64_t kFa3PersistentCausalGroup = 16;   // within 5% of the best of 4 .. 64 at 512 .. 3072
inline constexpr int64_t kFa3PersistentCausalTilesPerSm = 8;  // a quarter of the fewest measured (31)
// tiles: the launch's (query block, head, batch) tiles; sms: the device's SMs; balanced_walk: whether the launch
// can walk a persistent grid balanced (fa3-v1's can with a workspace, as bench/gpu/fa3_dev.cu's fwdshape does;
// the dev driver's other modes walk statically).
constexpr Fa3Schedule fa3_fwd_schedule(bool causal, bool windowed, int64_t seqlen_k, int64_t tiles,
                                       int64_t sms, int64_t kv_bytes_per_head, int64_t l2_bytes,
                                       int64_t batch_heads, bool balanced_walk = true) {
  if (!causal && !windowed) return {true, true, 0};
  int64_t group = kv_bytes_per_head > 0 ? l2_bytes / 2 / kv_bytes_per_head : batch_heads;
  group = group < 1 ? 1 : group > batch_heads ? batch_heads : group;
  if (causal && !windowed && tiles >= kFa3PersistentCausalTilesPerSm * sms) {
    if (seqlen_k < kFa3PersistentCausalKeys)
      return {true, true,
              static_cast<int>(batch_heads < kFa3PersistentCausalGroup ? batch_heads
                                                                       : kFa3PersistentCausalGroup)};
    if (balanced_walk) return {true, true, static_cast<int>(group)};
  }
  return {false, true, static_cast<int>(group)};
}

inline constexpr int kFa3ConsumerWarpgroups = 2;  // wgmma's M is 64 rows a warpgroup: 128 query rows a CTA
inline constexpr int kFa3Threads = (1 + kFa3ConsumerWarpgroups) * 128;
inline constexpr int64_t kFa3ElementBytes = 2;  // bf16 / fp16 tiles (wgmma's 16-bit operands)

// The forward's instances: per head dim the hand-kept tile first (fa3_fwd_instance(d) returns it; the launch
// table falls back to it), then the others `flashsim-gpu autotune --kernel fa3-v1` times and `flashsim sim tune
// --kernel fa3-fwd` ranks (none measured 5% faster than the hand-kept tile on the bench grid, nor predicted so:
// calibration fa3.tune_h100). Registers a consumer thread needs for O, S and P (d / 2 + Bc / 2 + Bc / 4 of 240)
// and the shared memory (Q + stages x (K + V)) are given per line; 227 KB is the H100's opt-in limit.
// clang-format off
inline constexpr Fa3FwdInstance kFa3FwdInstances[] = {
    // Bc128 at d <= 128: S of 64 x 128 a warpgroup (64 fp32 a thread) beside O; two stages let the producer
    // load block n - 1 while the consumers multiply block n.
    {64, 128, 128, 2}, {96, 128, 128, 2}, {128, 128, 128, 2},
    // d256: O alone is 128 fp32 a thread, so S shrinks to Bc64 (32 a thread), and Q (64 KB) + two stages of
    // K and V (128 KB) is the most that fits 227 KB. Its softcapped kernel spilled 4 bytes (12 loaded): a
    // softcap at d256 runs Bc32.
    {256, 128, 64, 2, false},
    // The candidates. d64: Bc160 (32 + 80 + 40 = 152 registers, 96 KB; Bc192, FlashAttention-3's non-causal
    // d64 width, 176, spilled 60-84 bytes here: ptxas -warn-spills, CUDA 13.0), Bc64 (half the work a step,
    // twice the steps: 48 KB), three stages of Bc128 (112 KB).
    {64, 128, 160, 2}, {64, 128, 64, 2}, {64, 128, 128, 3},
    // d96: Bc64 (48 + 32 + 16 = 96 registers, 72 KB), three stages of Bc128 (168 KB).
    {96, 128, 64, 2}, {96, 128, 128, 3},
    // d128: Bc64 (64 + 32 + 16 = 112, 96 KB), Bc96 (136, 128 KB), three stages of Bc128 (224 KB, the most that
    // fits). Bc176, FlashAttention-3's non-causal d128 tile, spilled in this kernel (the results README).
    {128, 128, 64, 2}, {128, 128, 96, 2}, {128, 128, 128, 3},
    // d256: Bc32 (128 + 16 + 8 = 152 registers, 64 + 2 x 2 x 16 = 128 KB), and three stages of it (160 KB).
    // Bc80 (188 registers, 224 KB: FlashAttention-3's d256 tile) spilled 116-208 bytes here.
    {256, 128, 32, 2}, {256, 128, 32, 3},
};
// clang-format on

// A backward instance: Br query rows a step, Bc key rows a CTA (two consumer warpgroups of 64 keys), stages of
// the Q and dO pipelines. A consumer thread keeps dK and dV (64 d / 128 = d / 2 fp32 each), S^T and dP^T
// (64 Br / 128 = 32 each), P^T and dS^T rounded (16 each) and its half of dQ (64 (d / 2) / 128 = d / 4): d128:
// 64 + 64 + 32 + 32 + 16 + 16 + 32 = 256 at most, 192 live at once (S^T and dP^T die as P and dS are formed),
// under 240. Shared memory: K, V (Bc x d) once, Q and dO (Br x d) two stages each, dS (Br x Bc):
//   d64: 16 + 16 + 16 + 16 + 16 = 80 KB;  d96: 120 KB;  d128: 32 + 32 + 32 + 32 + 16 = 144 KB.
// At d256 dK and dV of a warpgroup's 64 keys would be 256 registers a thread: its tile is Bc64, both warpgroups
// on the same keys, each taking half of the queries of S^T and half of the head dim of dK, dV and dQ
// (fa3_bwd_traits.h kSplitHeadDim; P then goes through shared memory beside dS). Per head dim the hand-kept
// instance first (fa3_bwd_instance(d)); a softcapped problem runs the head dim's first with a softcapped kernel.
struct Fa3BwdInstance {
  int head_dim, block_q, block_k, stages;
  // Whether its softcapped kernel is compiled (the score's tanh and its derivative a score on top; fa3_bwd_kernel.cuh
  // kSoftcap): at d128 it spilled 92 .. 180 bytes in every form tried (ptxas -warn-spills, CUDA 13.0), so a
  // softcapped d128 backward is refused, saying so.
  bool softcap = true;
};
inline constexpr Fa3BwdInstance kFa3BwdInstances[] = {
    {64, 64, 128, 2},
    {96, 64, 128, 2},
    {128, 64, 128, 2, false},
    // A softcapped d128 runs the split tile: dK, dV, dQ 32 registers a thread each leave the softcap's tanh room
    // (no spill: ptxas -warn-spills, CUDA 13.0); K, V 16 + 16, Q, dO two stages 32 + 32, dS, P 8 + 8, sdQ 32 =
    // 144 KB. Twice the key blocks of Bc128: Q and dO are read twice as often.
    {128, 64, 64, 2},
    // d256: both warpgroups on 64 keys, split by queries and head dim (fa3_bwd_traits.h kSplitHeadDim): dK, dV
    // and dQ 64 registers a thread each. Shared memory K, V 32 + 32, Q, dO one stage 32 + 32, dS and P 8 + 8,
    // sdQ 64 (64 x 256 fp32) = 208 KB: a second stage of Q and dO (64 KB) is over the 227 KB.
    {256, 64, 64, 1},
};

// The instance a problem of the head dim runs: the hand-kept one (the head dim's first), or with a softcap the
// first that has a softcapped kernel (nullptr: none).
constexpr const Fa3BwdInstance* fa3_bwd_instance(int head_dim, bool softcap = false) {
  for (const Fa3BwdInstance& e : kFa3BwdInstances)
    if (e.head_dim == head_dim && (!softcap || e.softcap)) return &e;
  return nullptr;
}

// Shared memory of a forward tile, bytes (the kernel's SharedStorage adds its barriers, under 1 KB).
constexpr int64_t fa3_fwd_smem_bytes(int head_dim, int block_q, int block_k, int stages) {
  return (static_cast<int64_t>(block_q) + 2LL * stages * block_k) * head_dim * kFa3ElementBytes;
}

// The hand-kept instance of a head dim (its first in kFa3FwdInstances); nullptr when fa3-v1 has none.
constexpr const Fa3FwdInstance* fa3_fwd_instance(int head_dim) {
  for (const Fa3FwdInstance& e : kFa3FwdInstances)
    if (e.head_dim == head_dim) return &e;
  return nullptr;
}
// The instance of a head dim with this tile; nullptr when it is not one.
constexpr const Fa3FwdInstance* fa3_fwd_instance(int head_dim, int block_q, int block_k, int stages) {
  for (const Fa3FwdInstance& e : kFa3FwdInstances)
    if (e.head_dim == head_dim && e.block_q == block_q && e.block_k == block_k && e.stages == stages)
      return &e;
  return nullptr;
}
constexpr bool operator==(const Fa3FwdInstance& a, const Fa3FwdInstance& b) {
  return a.head_dim == b.head_dim && a.block_q == b.block_q && a.block_k == b.block_k &&
         a.stages == b.stages && a.softcap == b.softcap;
}
// The instance a softcapped problem of the head dim runs where its pick has no softcapped kernel: the head dim's
// first that has one (nullptr: none).
constexpr const Fa3FwdInstance* fa3_fwd_softcap_instance(int head_dim) {
  for (const Fa3FwdInstance& e : kFa3FwdInstances)
    if (e.head_dim == head_dim && e.softcap) return &e;
  return nullptr;
}

}  // namespace flashsim
