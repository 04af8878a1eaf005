#pragma once
// RMSNorm and LayerNorm forward and backward (flashsim/norm.h has the formulas and the tensors), exact in fp64
// or through a GPU kernel's pipeline.
//
// Exact (Precision::Exact): every operation in fp64 on the inputs as stored; h = x + residual; the statistics
// of h; the closed-form gradients
//   RMSNorm:   xhat = h rstd, g = dy w, dh = rstd (g - xhat mean(g xhat))
//   LayerNorm: xhat = (h - mean) rstd, dh = rstd (g - xhat mean(g xhat) - mean(g))
//   dx = dresidual = dh, dweight = sum over rows of dy xhat, dbias = sum over rows of dy.
// Emulated (Precision::Emulated; Fp32 is the same with outputs kept in fp32): the pipeline of a fused norm
// kernel in the problem's dtype T on inputs already in T: h = x + residual added in fp32 and stored in T; the
// statistics of the stored h summed in fp32 (the coarser of the two choices kernels make, so that a kernel
// normalizing the fp32 h passes too), rstd = 1 / sqrt(ms + eps) and mean kept in fp32; y computed in fp32 and
// rounded to T. The backward reads the stored h, rstd and mean, computes in fp32, sums dweight and dbias over
// rows in fp32 and rounds dx, dresidual, dweight, dbias to T. An fp64 problem computes in fp64 in every
// precision (fp64 kernels accumulate in fp64).
#include <cstdint>
#include <vector>

#include "flashsim/norm.h"
#include "flashsim/ref/options.h"

namespace flashsim::ref {

struct NormForward {
  std::vector<double> y;  // [rows, hidden]
  std::vector<double> h;  // [rows, hidden], with a residual only (x + residual)
  std::vector<double>
      rstd;  // [rows]: 1 / sqrt(mean(h^2) + eps) (RMSNorm), 1 / sqrt(var(h) + eps) (LayerNorm)
  std::vector<double> mean;  // [rows], LayerNorm only
};

struct NormGradients {
  std::vector<double> dx;         // [rows, hidden]
  std::vector<double> dweight;    // [hidden]
  std::vector<double> dbias;      // [hidden], LayerNorm only
  std::vector<double> dresidual;  // [rows, hidden], with a residual only
};

// The summation order of the emulated pipeline's fp32 sums (exact sums are in fp64 in row order either way).
// Sequential: left to right (the tolerances' reference). Tree: a kernel's order: 32-lane strided partials
// reduced pairwise over a row, and per-block partials of 64 rows summed pairwise for dweight / dbias.
enum class NormOrder { Sequential, Tree };

struct NormOptions {
  Precision precision = Precision::Exact;
  NormOrder order = NormOrder::Sequential;
  int threads = 0;  // 0: OpenMP's default; results are the same for any count
};

// Throws InputError for inputs that do not match the problem (NormInputs::validate); dy is not needed.
NormForward norm_forward(const NormProblem& p, const NormInputs& in, const NormOptions& opt = {});
// fwd: this problem's forward (its h, rstd and mean are what the backward reads, as a kernel's saved tensors).
// Throws InputError when in.dy is empty or fwd does not match the problem.
NormGradients norm_backward(const NormProblem& p, const NormInputs& in, const NormForward& fwd,
                            const NormOptions& opt = {});

}  // namespace flashsim::ref
