#pragma once
// Row normalizations over the last dim, as golden cases check them (issue 16):
//   RMSNorm:   y = x / sqrt(mean(x^2) + eps) * w
//   LayerNorm: y = (x - mean(x)) / sqrt(var(x) + eps) * w + b      (var with 1/N)
// with an optional fused residual: h = x + residual, then the norm of h; outputs y and h.
// Tensors: x, residual, dy, y, h, dx, dresidual [rows, hidden]; weight, bias, dweight, dbias [hidden];
// rstd, mean [rows] (the per-row statistics a kernel saves for its backward).
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "flashsim/dtype.h"

namespace flashsim {

enum class NormKind { RmsNorm, LayerNorm };
std::string_view norm_kind_name(NormKind k);  // "rmsnorm", "layernorm"
// Throws InputError("op") for another name.
NormKind parse_norm_kind(std::string_view s);

struct NormProblem {
  NormKind kind = NormKind::RmsNorm;
  int64_t rows = 1, hidden = 1;
  double eps = 1e-5;
  DType dtype = DType::BF16;  // of every input and output tensor (rstd and mean stay fp32 in a kernel)
  bool residual = false;

  bool has_bias() const { return kind == NormKind::LayerNorm; }
  int64_t elems() const { return rows * hidden; }
  // Throws InputError naming the field: rows, hidden >= 1, rows * hidden <= 2^31, eps finite and > 0.
  void validate() const;
  // "rmsnorm 4096x4096 eps1e-05 residual bf16"
  std::string describe() const;
};

// How a case's inputs are drawn (the golden case's own knobs, beside the seed).
struct NormInputSpec {
  double magnitude = 1.0;    // x and residual: N(0, 1) * magnitude
  double offset = 0.0;       // added to x: a large mean (LayerNorm's cancellation, RMSNorm's large mean(x^2))
  int64_t outlier_rows = 0;  // rows of x scaled by outlier_scale
  double outlier_scale = 100.0;  // an activation outlier's size relative to the other rows
  int64_t zero_rows = 0;         // rows where x (and residual) are exactly 0: h = 0, rstd = 1/sqrt(eps)
  // Throws InputError naming the field (finite magnitudes, counts within rows, zero + outlier rows <= rows).
  void validate(const NormProblem& p) const;
  std::vector<int64_t> zero_row_indices(int64_t rows) const;     // spread evenly, from row 0
  std::vector<int64_t> outlier_row_indices(int64_t rows) const;  // spread evenly, between the zero rows
};

// The tensors one norm problem reads, as doubles exactly representable in the problem's dtype.
struct NormInputs {
  std::vector<double> x, weight, bias, residual, dy;  // bias: LayerNorm only; residual: with residual only
  // Throws InputError when a size does not match the problem or a value is not representable in its dtype.
  void validate(const NormProblem& p) const;
};

// Streams of the generator (flashsim/random.h), one per tensor.
enum class NormStream : uint64_t { X = 21, Weight = 22, Bias = 23, Residual = 24, dY = 25 };

// x = offset + N(0,1) * magnitude (outlier rows x outlier_scale, zero rows 0), residual N(0,1) * magnitude (0 on
// zero rows), weight 1 + N(0,1) / 4 (weights sit near 1 in trained models), bias N(0,1) / 2, dy N(0,1), each
// rounded to the dtype. Throws InputError when a value overflows the dtype.
NormInputs make_random_norm_inputs(const NormProblem& p, uint64_t seed, const NormInputSpec& spec);

}  // namespace flashsim
