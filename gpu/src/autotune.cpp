// The measured autotune of a kernel version's tile configs (flashsim/gpu/autotune.h): the configs are the
// version's (KernelVersion::tune_tiles: fa2-v1's instances.h, fa3-v1's).
#include "flashsim/gpu/autotune.h"

#include <fmt/format.h>

#include <algorithm>
#include <string>

#include "device_fill.h"
#include "device_memory.h"
#include "flashsim/error.h"
#include "flashsim/gpu/harness.h"  // cuda_available, why_no_backward
#include "flashsim/gpu/params.h"   // missing_gpu_feature
#include "flashsim/inputs.h"       // InputStream
#include "flashsim/sim/tune.h"     // tune_problem, parse_tune_features

namespace flashsim::gpu {

namespace {

// "plain", "causal", "bias" or "causal+bias": the features fa2-v1 is timed with (sim tune's names and problem).
sim::TuneFeatures parse_feature(const std::string& f) {
  const auto bad = [&] {
    return InputError("features", fmt::format("'{}': expected plain, causal, bias or causal+bias", f));
  };
  sim::TuneFeatures x;
  try {
    x = sim::parse_tune_features(f);
  } catch (const InputError&) {
    throw bad();
  }
  if (x.mask || x.softcap || x.alibi) throw bad();  // no buffers for them here
  return x;
}

bool same_fwd_tile(const TileConfig& a, const TileConfig& b) {
  return a.block_q == b.block_q && a.block_k == b.block_k && a.warps == b.warps && a.stages == b.stages;
}
bool same_bwd_tile(const TileConfig& a, const TileConfig& b) {
  return a.bwd_block_q == b.bwd_block_q && a.bwd_block_k == b.bwd_block_k && a.warps == b.warps;
}

// One rotation set of a problem's buffers, the inputs drawn on the device (N(0, 1), the host generator's
// distribution), outputs left as allocated (every timed launch writes them).
DeviceArgs device_case(DeviceMemory& mem, const AttentionProblem& p, bool backward, size_t workspace,
                       uint64_t set) {
  const auto input = [&](int64_t n, DType t, InputStream s) {
    void* d = mem.alloc(static_cast<size_t>(n) * static_cast<size_t>(dtype_bytes(t)));
    fill_normal_device(d, n, t, set * 16 + static_cast<uint64_t>(s));  // 16 > the streams of InputStream
    return d;
  };
  const auto output = [&](int64_t n, DType t) {
    return mem.alloc(static_cast<size_t>(n) * static_cast<size_t>(dtype_bytes(t)));
  };
  DeviceArgs a;
  a.q = input(p.q_elems(), p.dtype, InputStream::Q);
  a.k = input(p.k_elems(), p.dtype, InputStream::K);
  a.v = input(p.v_elems(), p.dtype, InputStream::V);
  if (p.bias != BroadcastShape::None) a.bias = input(p.bias_elems(), p.dtype, InputStream::Bias);
  a.o = output(p.o_elems(), p.dtype);
  a.lse = static_cast<float*>(output(p.lse_elems(), DType::F32));
  if (backward) {
    a.dout = input(p.o_elems(), p.dtype, InputStream::dO);
    a.dq = output(p.q_elems(), p.dtype);
    a.dk = output(p.k_elems(), p.dtype);
    a.dv = output(p.v_elems(), p.dtype);
    if (p.bias != BroadcastShape::None) a.dbias = static_cast<float*>(output(p.bias_elems(), DType::F32));
  }
  if (workspace > 0) {  // the backward's, or the forward's (fa3-v1's walk)
    a.workspace = mem.alloc(workspace);
    mem.fill(a.workspace, 0, workspace);
  }
  return a;
}

std::string csv_quoted(const std::string& s) {
  std::string out = "\"";
  for (const char ch : s) out += ch == '"' ? std::string("\"\"") : std::string(1, ch);
  return out + "\"";
}

std::string json_quoted(const std::string& s) {
  std::string out = "\"";
  for (const char ch : s) {
    if (ch == '"' || ch == '\\') {
      out += '\\';
      out += ch;
    } else if (static_cast<unsigned char>(ch) < 0x20) {
      out += fmt::format("\\u{:04x}", static_cast<unsigned>(ch));
    } else {
      out += ch;
    }
  }
  return out + "\"";
}

double row_flops(const AttentionProblem& p, TunePass pass) {
  const double fwd = conventional_forward_flops(p);
  return pass == TunePass::Fwd ? fwd : 2.5 * fwd;  // FlashAttention's backward convention: 2.5x the forward
}

}  // namespace

std::string_view tune_pass_name(TunePass p) {
  return p == TunePass::Fwd ? "fwd" : "bwd";
}

namespace {

// c with the pass's tile fields of t (the forward's Br, Bc, warps, stages and flags; the backward's Br, Bc, warps).
TileConfig with_pass_tile(TileConfig c, const TileConfig& t, TunePass pass) {
  if (pass == TunePass::Fwd) {
    c.block_q = t.block_q, c.block_k = t.block_k, c.warps = t.warps, c.stages = t.stages;
    c.q_in_registers = t.q_in_registers, c.kv_shared_buffer = t.kv_shared_buffer;
  } else {
    c.bwd_block_q = t.bwd_block_q, c.bwd_block_k = t.bwd_block_k, c.warps = t.warps;
  }
  return c;
}

// The head dims v has tiles of ("64, 96, 128, 256"): those of 8 .. 512 in steps of 8 (every kernel's head dim is
// a multiple of 8: 16-byte rows of 16-bit elements).
std::string tune_head_dims_text(const KernelVersion& v) {
  std::string s;
  for (int64_t d = 8; d <= 512; d += 8)
    if (!v.tune_tiles(d, Pass::Forward).empty() || !v.tune_tiles(d, Pass::Backward).empty())
      s += (s.empty() ? "" : ", ") + std::to_string(d);
  return s;
}

}  // namespace

AutotunePlan autotune_plan(const AutotuneGrid& g) {
  if (!g.fwd && !g.bwd) throw InputError("pass", "neither the forward nor the backward selected");
  const KernelVersion& v = kernel_version(g.kernel);  // InputError("kernel") naming the versions
  if (!v.tune_tiles)
    throw InputError("kernel",
                     fmt::format("{} has no tile configs to time (autotune runs fa2-v1, fa3-v1)", v.name));
  const std::vector<std::string>& features = g.features.empty() ? v.tune_features : g.features;
  if (g.head_dims.empty() || g.dtypes.empty() || g.seqlens.empty() || features.empty())
    throw InputError("autotune", "an empty grid (head dims, dtypes, seqlens and features each need a value)");
  for (const int64_t d : g.head_dims)
    if (v.tune_tiles(d, Pass::Forward).empty() && v.tune_tiles(d, Pass::Backward).empty())
      throw InputError("head-dims", fmt::format("no {} tile has head_dim {} (its tiles' head dims: {})",
                                                v.name, d, tune_head_dims_text(v)));
  for (const DType t : g.dtypes)
    if (t != DType::BF16 && t != DType::F16)
      throw InputError("dtypes", fmt::format("{}: {} runs bf16 and fp16", dtype_name(t), v.name));
  AutotunePlan plan;
  plan.kernel = v.name;
  for (const int64_t d : g.head_dims)
    for (const DType t : g.dtypes)
      for (const int64_t n : g.seqlens)
        for (const std::string& f : features) {
          // bench's convention: 16K tokens a batch, a model width of 2048; the problem sim tune predicts
          const sim::TuneRequest conv;
          const AttentionProblem p = sim::tune_problem(
              g.batch > 0 ? g.batch : std::max<int64_t>(1, conv.tokens / std::max<int64_t>(1, n)),
              g.heads > 0 ? g.heads : std::max<int64_t>(1, conv.width / d), d, t, parse_feature(f), n);
          const size_t index = plan.problems.size();
          plan.problems.push_back({p, f});
          // the rows' other fields: the launch table's; `hand` and `table` mark the two tables' picks
          const TileConfig hand = v.hand_tile ? v.hand_tile(p) : tile_for(v, p, {}, Pass::Forward);
          for (const TunePass pass : {TunePass::Fwd, TunePass::Bwd}) {
            if (!(pass == TunePass::Fwd ? g.fwd : g.bwd)) continue;
            const Pass sim_pass = pass == TunePass::Fwd ? Pass::Forward : Pass::Backward;
            const TileConfig table = tile_for(v, p, {}, sim_pass);
            const auto same = pass == TunePass::Fwd ? same_fwd_tile : same_bwd_tile;
            for (const TileConfig& tile : v.tune_tiles(d, sim_pass)) {
              const TileConfig c = with_pass_tile(table, tile, pass);
              plan.items.push_back({pass, index, c, same(c, hand), same(c, table)});
            }
          }
        }
  return plan;
}

double autotune_estimate_seconds(const AutotunePlan& plan, const BenchOptions& o, int rounds) {
  constexpr double kFwdRate = 250e12, kBwdRate = 150e12;  // FLOP/s: below fa2-v1's H100 figures (README)
  constexpr double kBandwidth = 2.5e12;                   // B/s: most of an H100's 3.35 TB/s
  double s = 0;
  for (const AutotuneItem& it : plan.items) {
    const AttentionProblem& p = plan.problems[it.problem].problem;
    // bias bytes: read once (the forward; half of them with a causal mask), plus dbias zeroed and written
    // in fp32 by the backward
    const double visible = p.causal() ? 0.5 : 1.0;
    const double bias = p.bias == BroadcastShape::None ? 0.0 : static_cast<double>(p.bias_elems()) * visible;
    const double t = it.pass == TunePass::Fwd
                         ? row_flops(p, it.pass) / kFwdRate + 2 * bias / kBandwidth
                         : row_flops(p, it.pass) / kBwdRate + (2 + 4 + 4) * bias / kBandwidth;
    s += t * (o.warmup + o.repeats);
  }
  return s * std::max(1, rounds);
}

void autotune(const KernelVersion& v, const AutotunePlan& plan, const BenchOptions& o,
              const std::function<void(size_t, const AutotuneRow&)>& row, int rounds) {
  std::string why_no_cuda;
  if (rounds < 1) throw InputError("rounds", fmt::format("{}: at least one round", rounds));
  if (!cuda_available(&why_no_cuda)) throw InputError("autotune", "needs a CUDA device: " + why_no_cuda);
  size_t done = 0;
  for (size_t first = 0; first < plan.items.size();) {
    const size_t pi = plan.items[first].problem;
    size_t last = first;
    while (last < plan.items.size() && plan.items[last].problem == pi) ++last;
    const AttentionProblem& p = plan.problems[pi].problem;
    const TileConfig hand = tile_for(v, p);  // the forward's launch tile
    // The forward at the launch table's tile makes o and lse for the backward's configs.
    std::string why_not = missing_gpu_feature(p, v.features);
    if (why_not.empty() && v.unsupported) why_not = v.unsupported(p, hand);
    bool backward = false;
    size_t workspace = v.workspace_bytes ? v.workspace_bytes(p, hand) : 0;
    for (size_t i = first; i < last; ++i)
      if (plan.items[i].pass == TunePass::Bwd && why_no_backward(v, p, plan.items[i].tile).empty()) {
        backward = true;
        if (v.workspace_bytes) workspace = std::max(workspace, v.workspace_bytes(p, plan.items[i].tile));
      }
    DeviceMemory mem(Backend::Cuda);
    std::vector<DeviceArgs> sets;
    if (why_not.empty()) {
      do {  // enough copies that the rotation moves more bytes than L2 holds (as bench)
        sets.push_back(device_case(mem, p, backward, workspace, sets.size()));
      } while (mem.allocated_bytes() < static_cast<size_t>(o.rotate_bytes) && sets.size() < 64);
      for (const auto& s : sets) v.forward(p, hand, s);
      mem.synchronize();
    }
    std::vector<AutotuneRow> rows(last - first);
    std::vector<std::vector<double>> ms(last - first), tflops(last - first);
    for (size_t i = first; i < last; ++i) {
      AutotuneRow& r = rows[i - first];
      r.item = plan.items[i];
      if (!why_not.empty()) {
        r.skipped = "the launch tile's forward: " + why_not;
      } else {
        r.skipped =
            r.item.pass == TunePass::Fwd ? v.unsupported(p, r.item.tile) : why_no_backward(v, p, r.item.tile);
      }
    }
    // Round after round, the problem's configs in turn; a config's row goes out as its last round ends (with one
    // round: as soon as it is timed, so that a run cut short keeps every row it finished).
    for (int round = 0; round < rounds; ++round)
      for (size_t i = first; i < last; ++i) {
        AutotuneRow& r = rows[i - first];
        std::vector<double>& t = ms[i - first];
        if (r.skipped.empty()) {
          const bool fwd = r.item.pass == TunePass::Fwd;
          BenchOptions passes = o;
          passes.time_forward = fwd;
          passes.time_backward = !fwd;
          BenchResult b;
          time_passes(v, p, r.item.tile, sets, passes, b);
          t.push_back(fwd ? b.fwd_ms : b.bwd_ms);
          tflops[i - first].push_back(fwd ? b.fwd_tflops : b.bwd_tflops);
        }
        if (round + 1 < rounds) continue;
        if (!t.empty()) {
          const auto [fastest, slowest] = std::minmax_element(t.begin(), t.end());
          r.spread = (*slowest - *fastest) / *fastest;
          r.ms = upper_median(t);  // the rounds' median, as bench takes its launches'
          r.tflops = r.ms > 0 ? tflops[i - first][0] * t[0] / r.ms : 0;  // the same FLOPs each round
        }
        row(++done, r);
      }
    first = last;
  }
}

std::string autotune_csv_header() {
  return "kernel,pass,head_dim,dtype,seqlen_q,seqlen_k,batch,heads,causal,bias,"
         "block_q,block_k,warps,kernel_warps,stages,bwd_block_q,bwd_block_k,ms,tflops,hand,table,skipped,"
         "rounds_spread\n";
}

std::string autotune_csv_line(const AutotunePlan& plan, const AutotuneRow& r) {
  const AttentionProblem& p = plan.problems[r.item.problem].problem;
  const TileConfig& c = r.item.tile;
  const bool fwd = r.item.pass == TunePass::Fwd;
  // the forward's knobs on forward rows, the backward's on backward rows; warps is the TileConfig's and
  // kernel_warps what the kernel launches (the backward: twice as many)
  return fmt::format("{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{:.4f},{:.1f},{},{},{},{:.4f}\n",
                     plan.kernel, tune_pass_name(r.item.pass), p.head_dim, dtype_name(p.dtype), p.seqlen_q,
                     p.seqlen_k, p.batch, p.heads_q, p.causal() ? 1 : 0,
                     p.bias != BroadcastShape::None ? 1 : 0, fwd ? std::to_string(c.block_q) : "",
                     fwd ? std::to_string(c.block_k) : "", c.warps, fwd ? c.warps : 2 * c.warps,
                     fwd ? std::to_string(c.stages) : "", fwd ? "" : std::to_string(c.bwd_block_q),
                     fwd ? "" : std::to_string(c.bwd_block_k), r.ms, r.tflops, r.item.hand ? 1 : 0,
                     r.item.table ? 1 : 0, r.skipped.empty() ? "" : csv_quoted(r.skipped), r.spread);
}

std::string autotune_json(const AutotunePlan& plan, const std::vector<AutotuneRow>& rows) {
  std::string out = "[";
  for (size_t i = 0; i < rows.size(); ++i) {
    const AutotuneRow& r = rows[i];
    const AttentionProblem& p = plan.problems[r.item.problem].problem;
    const TileConfig& c = r.item.tile;
    const bool fwd = r.item.pass == TunePass::Fwd;
    const std::string tile = fwd ? fmt::format(
                                       "\"block_q\": {}, \"block_k\": {}, \"warps\": {}, "
                                       "\"kernel_warps\": {}, \"stages\": {}",
                                       c.block_q, c.block_k, c.warps, c.warps, c.stages)
                                 : fmt::format(
                                       "\"bwd_block_q\": {}, \"bwd_block_k\": {}, \"warps\": {}, "
                                       "\"kernel_warps\": {}",
                                       c.bwd_block_q, c.bwd_block_k, c.warps, 2 * c.warps);
    out += fmt::format(
        "{}\n  {{\"kernel\": \"{}\", \"pass\": \"{}\", \"head_dim\": {}, \"dtype\": \"{}\", \"seqlen_q\": "
        "{}, \"seqlen_k\": {}, "
        "\"batch\": {}, \"heads\": {}, \"causal\": {}, \"bias\": {}, {}, \"ms\": {:.4f}, \"tflops\": {:.1f}, "
        "\"hand\": {}, \"table\": {}, \"skipped\": {}, \"rounds_spread\": {:.4f}}}",
        i == 0 ? "" : ",", plan.kernel, tune_pass_name(r.item.pass), p.head_dim, dtype_name(p.dtype),
        p.seqlen_q, p.seqlen_k, p.batch, p.heads_q, p.causal(), p.bias != BroadcastShape::None, tile, r.ms,
        r.tflops, r.item.hand, r.item.table, json_quoted(r.skipped), r.spread);
  }
  return out + "\n]\n";
}

std::string autotune_label(const AutotunePlan& plan, const AutotuneItem& item) {
  const AutotuneProblem& ap = plan.problems[item.problem];
  const AttentionProblem& p = ap.problem;
  const TileConfig& c = item.tile;
  const std::string tile = item.pass == TunePass::Fwd
                               ? fmt::format("Br{} Bc{} w{} st{}", c.block_q, c.block_k, c.warps, c.stages)
                               : fmt::format("bwd Br{} Bc{} w{}", c.bwd_block_q, c.bwd_block_k, c.warps);
  return fmt::format("{} d{} {} {} n{} {}", tune_pass_name(item.pass), p.head_dim, dtype_name(p.dtype),
                     ap.feature, p.seqlen_q, tile);
}

}  // namespace flashsim::gpu
