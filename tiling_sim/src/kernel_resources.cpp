// The compiled fa2-v1 kernels' resources (kernel_resources.h).
#include "flashsim/sim/kernel_resources.h"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <vector>

#include "flashsim/error.h"
#include "flashsim/sim/ncu.h"  // split_csv
#include "kernel_resources_data.h"

namespace flashsim::sim {

KernelResources KernelResources::parse(std::string_view csv, const std::string& source) {
  std::istringstream in{std::string(csv)};
  std::string line;
  if (!std::getline(in, line)) throw InputError("resources", source + ": empty");
  const auto header = split_csv(line);
  auto col = [&](const char* name) {
    const auto it = std::find(header.begin(), header.end(), name);
    if (it == header.end())
      throw InputError("resources",
                       fmt::format("{}: no column '{}' (gpu/tools/sass.py resources' CSV)", source, name));
    return static_cast<size_t>(it - header.begin());
  };
  const size_t pass = col("pass"), d = col("head_dim"), bq = col("block_q"), bk = col("block_k"),
               warps = col("warps"), stages = col("stages"), dtype = col("dtype"), pipe = col("pipeline"),
               regs = col("registers");
  KernelResources out;
  int lineno = 1;
  while (std::getline(in, line)) {
    ++lineno;
    if (line.empty()) continue;
    const auto f = split_csv(line);
    try {
      if (f.size() < header.size()) throw std::invalid_argument("too few fields");
      if (f[pass] != "fwd" && f[pass] != "bwd") throw std::invalid_argument("pass '" + f[pass] + "'");
      if (f[dtype] != "bf16" && f[dtype] != "fp16") throw std::invalid_argument("dtype '" + f[dtype] + "'");
      const bool bwd = f[pass] == "bwd";
      const Key k{bwd,
                  std::stoll(f[d]),
                  std::stoll(f[bq]),
                  std::stoll(f[bk]),
                  std::stoi(f[warps]),
                  bwd || f[stages].empty() ? 1 : std::stoi(f[stages]),
                  f[dtype] == "bf16",
                  f[pipe] == "1"};
      CompiledKernel c;
      c.registers = std::stoi(f[regs]);
      if (c.registers < 1 || c.registers > 255) throw std::invalid_argument("registers out of 1..255");
      out.kernels_[k] = c;
    } catch (const std::exception& e) {
      throw InputError("resources", fmt::format("{}:{}: {}", source, lineno, e.what()));
    }
  }
  return out;
}

KernelResources KernelResources::from_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw InputError("resources", "cannot open " + path);
  std::stringstream text;
  text << in.rdbuf();
  return parse(text.str(), path);
}

KernelResources KernelResources::builtin(std::string_view arch) {
  if (arch.empty()) return {};
  const std::string name = fmt::format("fa2_v1_{}", arch);
  for (const auto& [file, text] : detail::embedded_kernel_resources())
    if (file == name) return parse(text, "families/fa2/resources/" + name + ".csv");
  return {};
}

const CompiledKernel* KernelResources::find(Pass pass, const AttentionProblem& p, const TileConfig& c) const {
  const bool bwd = pass == Pass::Backward;
  // Attention sinks (p.sinks) and dropout (p.dropout_p) are ignored on purpose: a sink is one exp per row at the
  // end, dropout a keep-mask read and a multiply per score; no compiled kernel of their own here.
  const bool pipeline =
      p.bias != BroadcastShape::None || p.mask != BroadcastShape::None || p.softcap > 0 || p.alibi;
  if (p.dtype != DType::BF16 && p.dtype != DType::F16) return nullptr;
  const Key k{bwd,     p.head_dim,         bwd ? c.bwd_block_q : c.block_q, bwd ? c.bwd_block_k : c.block_k,
              c.warps, bwd ? 1 : c.stages, p.dtype == DType::BF16,          pipeline};
  const auto it = kernels_.find(k);
  return it == kernels_.end() ? nullptr : &it->second;
}

}  // namespace flashsim::sim
