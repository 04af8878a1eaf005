// Block-sparse mask patterns (block_mask.h).
#include "flashsim/block_mask.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <map>

#include "flashsim/error.h"
#include "flashsim/inputs.h"
#include "flashsim/random.h"

namespace flashsim {

namespace {

// "k=v,k=v" -> map; InputError on a malformed item.
std::map<std::string, std::string> parse_params(std::string_view s, std::string_view spec) {
  std::map<std::string, std::string> out;
  while (!s.empty()) {
    const size_t comma = s.find(',');
    const std::string_view item = s.substr(0, comma);
    const size_t eq = item.find('=');
    if (eq == std::string_view::npos || eq == 0 || eq + 1 == item.size())
      throw InputError("block_mask", fmt::format("'{}': '{}' is not name=value", spec, item));
    out[std::string(item.substr(0, eq))] = std::string(item.substr(eq + 1));
    s = comma == std::string_view::npos ? std::string_view() : s.substr(comma + 1);
  }
  return out;
}

int64_t int_param(std::map<std::string, std::string>& params, const char* name, int64_t min,
                  std::string_view spec) {
  const auto it = params.find(name);
  if (it == params.end()) throw InputError("block_mask", fmt::format("'{}' needs {}=N", spec, name));
  int64_t v = 0;
  const auto [ptr, ec] = std::from_chars(it->second.data(), it->second.data() + it->second.size(), v);
  if (ec != std::errc() || ptr != it->second.data() + it->second.size() || v < min || v > (int64_t{1} << 30))
    throw InputError("block_mask",
                     fmt::format("'{}': {}={} must be an integer >= {}", spec, name, it->second, min));
  params.erase(it);
  return v;
}

}  // namespace

std::string BlockMaskSpec::text() const {
  switch (kind) {
    case Kind::S2:
      return fmt::format("s2:local={},stride={}", local, stride);
    case Kind::S2Homo:
      return fmt::format("s2-homo:local={},stride={}", local, stride);
    case Kind::LocalSink:
      return fmt::format("local-sink:local={},sink={}", local, sink);
    case Kind::Random:
      return fmt::format("random:keep={}", keep);
  }
  return "";
}

BlockMaskSpec parse_block_mask_spec(std::string_view spec) {
  const size_t colon = spec.find(':');
  const std::string_view name = spec.substr(0, colon);
  auto params =
      parse_params(colon == std::string_view::npos ? std::string_view() : spec.substr(colon + 1), spec);
  BlockMaskSpec s;
  if (name == "s2" || name == "s2-homo") {
    s.kind = name == "s2" ? BlockMaskSpec::Kind::S2 : BlockMaskSpec::Kind::S2Homo;
    s.local = int_param(params, "local", 0, spec);
    s.stride = int_param(params, "stride", 1, spec);
  } else if (name == "local-sink") {
    s.kind = BlockMaskSpec::Kind::LocalSink;
    s.local = int_param(params, "local", 0, spec);
    s.sink = int_param(params, "sink", 0, spec);
  } else if (name == "random") {
    s.kind = BlockMaskSpec::Kind::Random;
    const auto it = params.find("keep");
    if (it == params.end()) throw InputError("block_mask", fmt::format("'{}' needs keep=P", spec));
    size_t used = 0;
    try {
      s.keep = std::stod(it->second, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != it->second.size() || !(s.keep >= 0.0 && s.keep <= 1.0))
      throw InputError("block_mask",
                       fmt::format("'{}': keep={} must be a number in [0, 1]", spec, it->second));
    params.erase(it);
  } else {
    throw InputError("block_mask",
                     fmt::format("unknown pattern '{}' (known: s2, s2-homo, local-sink, random)", name));
  }
  if (!params.empty())
    throw InputError("block_mask", fmt::format("'{}': unknown parameter '{}'", spec, params.begin()->first));
  return s;
}

std::vector<uint8_t> make_block_mask(const BlockMaskSpec& spec, int64_t heads, int64_t q_blocks,
                                     int64_t k_blocks, uint64_t seed) {
  if (heads < 1 || q_blocks < 0 || k_blocks < 0)
    throw InputError("block_mask",
                     fmt::format("bad grid: {} heads x {} x {} blocks", heads, q_blocks, k_blocks));
  std::vector<uint8_t> m(heads * q_blocks * k_blocks, 0);
  const int64_t row0 = k_blocks - q_blocks;  // bottom-right: query block qb is row qb + row0 of the square
  const int64_t step = std::max<int64_t>(1, spec.stride / heads);
  for (int64_t h = 0; h < heads; ++h)
    for (int64_t qb = 0; qb < q_blocks; ++qb)
      for (int64_t kb = 0; kb < k_blocks; ++kb) {
        const int64_t row = qb + row0, idx = (h * q_blocks + qb) * k_blocks + kb;
        const bool causal = row >= kb, local = causal && row - kb < spec.local;
        bool on = false;
        switch (spec.kind) {
          case BlockMaskSpec::Kind::S2:  // (kb + h * step + 1) % stride == 0: the stride shifted per head
            on = causal && (local || (kb + h * step + 1) % spec.stride == 0);
            break;
          case BlockMaskSpec::Kind::S2Homo:
            on = causal && (local || (kb + 1) % spec.stride == 0);
            break;
          case BlockMaskSpec::Kind::LocalSink:
            on = causal && (local || kb < spec.sink);
            break;
          case BlockMaskSpec::Kind::Random:  // element idx of the stream: thread-count independent
            on = uniform_open01(seed, static_cast<uint64_t>(InputStream::BlockMask),
                                static_cast<uint64_t>(idx)) < spec.keep;
            break;
        }
        m[idx] = on ? 1 : 0;
      }
  return m;
}

}  // namespace flashsim
