#pragma once
// What fa3-v1's forward and backward models share: TMA boxes over the packed [rows, heads, d] tensors, the GPUs
// the family runs on, and a warp's softmax ops on its scheduler.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "flashsim/sim/hardware.h"
#include "flashsim/sim/kernel_model.h"

namespace flashsim::sim::kernels {

// The persistent grid's CTAs: one an SM of the GPUs fa3-v1 runs on (sm_90a: the H100 SXM5 and the H200, 132
// SMs each), and their L2 (50 MiB), which sizes the causal schedule's head groups. The kernel asks the device; a
// launch (KernelModel::launch) has no profile, so the model takes the H100's (a 114-SM H100 PCIe would run 114).
inline constexpr int64_t kFa3PersistentCtas = 132;
inline constexpr int64_t kFa3L2Bytes = 52428800;

// A TMA load box of `rows` rows starting at packed row g0 of a tensor of `total` rows: the rows inside the tensor
// are read from memory (those of the next sequence too); the rows past its end are zeros that no memory backs,
// yet they cross to the SM as the others do. ncu counts whole boxes in l1tex__m_xbar2l1tex_read_bytes (calibration
// fa3.tma_box_rows_h200: the backward's Q / dO and the forward's Q, K, V read exactly a whole box of every block
// at a tensor's end, the rows past it included). So a box's L2 -> SM bytes are all its rows; its L2 lines and
// footprint the rows inside (box_rows).
inline int64_t box_rows(int64_t g0, int64_t rows, int64_t total) {
  return std::clamp<int64_t>(total - g0, 0, rows);
}

// A box's rows as moves of the sequences they belong to (a box may run into the next sequences' rows), so that
// the executed schedule touches the very rows (their addresses, their footprint) a neighbouring tile reads; the
// rows past the tensor's end as a zero-filled move (Move::zero_fill).
// cu: the packed tensor's sequence offsets (cu_seqlens), b: the box's sequence, row0: its first row there.
void add_box(CtaBuilder& x, ref::AccessKind k, ref::TensorId t, int64_t head, const std::vector<int64_t>& cu,
             int64_t b, int64_t row0, int64_t rows, int64_t cols);

// Cycles `warps` warps on one scheduler take for `mufu` MUFU ops (ex2, rcp, lg2) and `alu` other ops each: the MUFU
// ops at the SFU's rate (exp_per_s spread over the SMs' schedulers: about a quarter of a warp a clock), the slower
// of that and one instruction a clock.
inline double sfu_issue_cycles(double mufu, double alu, double warps, const HardwareProfile& hw) {
  const double lanes =
      hw.exp_per_s / (std::max(1, hw.sms) * hw.clock_hz * std::max(1, hw.schedulers_per_sm));  // a clock
  return warps * std::max(mufu * 32 / std::max(1.0, lanes), mufu + alu);
}

}  // namespace flashsim::sim::kernels
