// Standard attention (the FlashAttention paper's Figure 2): every matrix materialized in global memory between
// kernels, one CTA per (batch, head) and kernel. Each kernel is a list of whole-matrix moves, written once in
// the table below; the CTA moves, the closed form (the CTA counted) and the launch follow from it. MLA
// (problem.mla): there is no V tensor: the kernels that read V read the first head_dim_v columns of K's rows
// (P V, dO V^T), the one that writes V's gradient writes those of dK, and dK's kernel reads them back to add
// dS^T Q to them (dK of the one latent tensor).
#include "kernels.h"

namespace flashsim::sim::kernels {

using ref::AccessKind;
using ref::TensorId;

namespace {

enum class Rows { Query, Key };                    // a matrix's rows: the sequence's queries or keys
enum class Cols { HeadDim, HeadDimV, Keys, One };  // its columns
enum class Flops { None, QK, PV };                 // the kernel's GEMM: 2 pairs d (QK-like) or 2 pairs dv

struct NaiveMove {
  AccessKind kind;
  TensorId tensor;
  Rows rows;
  Cols cols;
  bool mla_only = false;  // a move of MLA problems alone
};

struct NaiveKernel {
  const char* name;
  Pass pass;
  const char* summary;
  std::vector<NaiveMove> moves;
  Flops flops;
  bool exp;  // one exp per score
};

constexpr auto L = AccessKind::Load;
constexpr auto S = AccessKind::Store;

// dP and dS reuse S's buffer (Scores); P is Probs. The backward recomputes S and P from scratch.
const NaiveKernel kNaive[] = {
    {"naive_scores",
     Pass::Forward,
     "S = scale Q K^T, written in fp32",
     {{L, TensorId::Q, Rows::Query, Cols::HeadDim},
      {L, TensorId::K, Rows::Key, Cols::HeadDim},
      {S, TensorId::Scores, Rows::Query, Cols::Keys}},
     Flops::QK,
     false},
    {"naive_softmax",
     Pass::Forward,
     "P = softmax(S) and lse, written in fp32",
     {{L, TensorId::Scores, Rows::Query, Cols::Keys},
      {S, TensorId::Probs, Rows::Query, Cols::Keys},
      {S, TensorId::Lse, Rows::Query, Cols::One}},
     Flops::None,
     true},
    {"naive_pv",
     Pass::Forward,
     "O = P V",
     {{L, TensorId::Probs, Rows::Query, Cols::Keys},
      {L, TensorId::V, Rows::Key, Cols::HeadDimV},
      {S, TensorId::O, Rows::Query, Cols::HeadDimV}},
     Flops::PV,
     false},
    {"naive_bwd_scores",
     Pass::Backward,
     "S = scale Q K^T again",
     {{L, TensorId::Q, Rows::Query, Cols::HeadDim},
      {L, TensorId::K, Rows::Key, Cols::HeadDim},
      {S, TensorId::Scores, Rows::Query, Cols::Keys}},
     Flops::QK,
     false},
    {"naive_bwd_softmax",
     Pass::Backward,
     "P = softmax(S) again",
     {{L, TensorId::Scores, Rows::Query, Cols::Keys}, {S, TensorId::Probs, Rows::Query, Cols::Keys}},
     Flops::None,
     true},
    {"naive_bwd_dp",
     Pass::Backward,
     "dP = dO V^T",
     {{L, TensorId::dO, Rows::Query, Cols::HeadDimV},
      {L, TensorId::V, Rows::Key, Cols::HeadDimV},
      {S, TensorId::Scores, Rows::Query, Cols::Keys}},
     Flops::PV,
     false},
    {"naive_bwd_ds",
     Pass::Backward,
     "dS = P o (dP - rowsum(dO o O))",
     {{L, TensorId::Probs, Rows::Query, Cols::Keys},
      {L, TensorId::Scores, Rows::Query, Cols::Keys},
      {L, TensorId::dO, Rows::Query, Cols::HeadDimV},
      {L, TensorId::O, Rows::Query, Cols::HeadDimV},
      {S, TensorId::Scores, Rows::Query, Cols::Keys}},
     Flops::None,
     false},
    {"naive_bwd_dv",
     Pass::Backward,
     "dV = P^T dO",
     {{L, TensorId::Probs, Rows::Query, Cols::Keys},
      {L, TensorId::dO, Rows::Query, Cols::HeadDimV},
      {S, TensorId::dV, Rows::Key, Cols::HeadDimV}},
     Flops::PV,
     false},
    {"naive_bwd_dq",
     Pass::Backward,
     "dQ = scale dS K",
     {{L, TensorId::Scores, Rows::Query, Cols::Keys},
      {L, TensorId::K, Rows::Key, Cols::HeadDim},
      {S, TensorId::dQ, Rows::Query, Cols::HeadDim}},
     Flops::QK,
     false},
    {"naive_bwd_dk",
     Pass::Backward,
     "dK = scale dS^T Q",
     {{L, TensorId::Scores, Rows::Query, Cols::Keys},
      {L, TensorId::Q, Rows::Query, Cols::HeadDim},
      {L, TensorId::dK, Rows::Key, Cols::HeadDimV, true},  // MLA: V's gradient, dK's first dv columns
      {S, TensorId::dK, Rows::Key, Cols::HeadDim}},
     Flops::QK,
     false},
};

KernelLaunch naive_launch(const AttentionProblem& p, const TileConfig& c) {
  return per_head_launch(p, 1, c.warps * 32);
}

template <int I>
void naive_cta(CtaBuilder& x, const TileConfig&, int64_t b, int64_t h, int64_t) {
  const NaiveKernel& k = kNaive[I];
  const auto& p = x.p;
  const int64_t sq = p.len_q(b), sk = p.len_k(b);
  if (sk == 0) return;
  for (const auto& m : k.moves) {
    if (m.mla_only && !p.mla) continue;
    // MLA: V is the first dv columns of K's rows, and V's gradient those of dK's.
    const bool latent = p.mla && (m.tensor == TensorId::V || m.tensor == TensorId::dV || m.mla_only);
    const TensorId t = !p.mla                     ? m.tensor
                       : m.tensor == TensorId::V  ? TensorId::K
                       : m.tensor == TensorId::dV ? TensorId::dK
                                                  : m.tensor;
    // The inputs K and V are read at their kv head; every other tensor has one head per query head.
    const bool kv_input = m.kind == L && (t == TensorId::K || t == TensorId::V);
    const bool fp32 =
        m.tensor == TensorId::Scores || m.tensor == TensorId::Probs || m.tensor == TensorId::Lse;
    const int64_t cols = m.cols == Cols::HeadDim    ? p.head_dim
                         : m.cols == Cols::HeadDimV ? p.head_dim_v
                         : m.cols == Cols::Keys     ? sk
                                                    : 1;
    const int64_t head = kv_input ? p.kv_head(h) : h, rows = m.rows == Rows::Query ? sq : sk;
    const int eb = fp32 ? 4 : m.tensor == TensorId::O ? x.out_e() : x.e;
    if (latent) {
      x.add_columns(m.kind, t, b, head, 0, rows, cols, p.head_dim, eb);
    } else {
      x.add(m.kind, t, b, head, 0, rows, cols, eb);
    }
  }
  const double pairs = static_cast<double>(sq) * static_cast<double>(sk);
  if (k.flops != Flops::None)  // 2 sq sk d (S, dQ, dK) or 2 sq sk dv (O, dP, dV)
    x.w->mma_flops += 2.0 * pairs * static_cast<double>(k.flops == Flops::QK ? p.head_dim : p.head_dim_v);
  if (k.exp) x.w->exp_ops += pairs;
}

template <int I>
KernelModel naive_model() {
  const NaiveKernel& k = kNaive[I];
  KernelModel m;
  m.name = k.name;
  m.algorithm = Algorithm::Naive;
  m.pass = k.pass;
  m.summary = std::string("standard attention: ") + k.summary;
  m.launch = naive_launch;
  m.cta = naive_cta<I>;
  return m;
}

}  // namespace

KernelModel naive_forward_scores() {
  return naive_model<0>();
}
KernelModel naive_forward_softmax() {
  return naive_model<1>();
}
KernelModel naive_forward_pv() {
  return naive_model<2>();
}
KernelModel naive_backward_scores() {
  return naive_model<3>();
}
KernelModel naive_backward_softmax() {
  return naive_model<4>();
}
KernelModel naive_backward_dp() {
  return naive_model<5>();
}
KernelModel naive_backward_ds() {
  return naive_model<6>();
}
KernelModel naive_backward_dv() {
  return naive_model<7>();
}
KernelModel naive_backward_dq() {
  return naive_model<8>();
}
KernelModel naive_backward_dk() {
  return naive_model<9>();
}

}  // namespace flashsim::sim::kernels
