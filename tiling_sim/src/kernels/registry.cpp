// The registry of kernel models: the one table every part of flashsim reads (kernel_model.h).
#include <fmt/format.h>

#include <cctype>
#include <memory>
#include <mutex>

#include "flashsim/error.h"
#include "kernels.h"

namespace flashsim::sim {

namespace {

struct Registry {
  std::vector<std::unique_ptr<KernelModel>> owned;
  std::vector<const KernelModel*> models;
  void add(KernelModel m) {
    if (!m.launch || !m.cta)
      throw InputError("kernel", fmt::format("kernel model '{}' needs a launch and a CTA function", m.name));
    for (const auto* k : models)
      if (k->name == m.name)
        throw InputError("kernel", fmt::format("a kernel named '{}' is registered", m.name));
    owned.push_back(std::make_unique<KernelModel>(std::move(m)));
    models.push_back(owned.back().get());
  }
};

Registry& registry() {
  static Registry r = [] {
    Registry b;
    // Each algorithm's kernels in launch order, forward passes first.
    for (auto make :
         {kernels::naive_forward_scores, kernels::naive_forward_softmax, kernels::naive_forward_pv,
          kernels::three_pass_forward, kernels::two_pass_forward, kernels::fa1_forward, kernels::fa2_forward,
          kernels::naive_backward_scores, kernels::naive_backward_softmax, kernels::naive_backward_dp,
          kernels::naive_backward_ds, kernels::naive_backward_dv, kernels::naive_backward_dq,
          kernels::naive_backward_dk, kernels::fa2_backward_dot_do_o, kernels::fa2_backward_dq_dk_dv,
          kernels::fa2_backward_convert_dq,
          // by name only (no algorithm step of the reference): flashsim's own gpu/ kernels, and FA2's
          // split-KV / paged-cache forward (kernels_for picks them for a KV cache or num_splits > 1)
          kernels::fa2_v1_forward, kernels::fa2_backward_dot_do_o_lse, kernels::fa2_backward_dq_dk_dv_group,
          kernels::fa2_backward_convert_dq_rows, kernels::fa2_splitkv_forward, kernels::fa2_splitkv_combine,
          kernels::decode_combine,
          // fa3-v1 (gpu/fa3/, Hopper), by name: sim predict --kernel fwd_fa3 / bwd_fa3 ..., traffic compare
          kernels::fa3_forward, kernels::fa3_backward_dot_do_o, kernels::fa3_backward,
          kernels::fa3_backward_convert_dq})
      b.add(make());
    return b;
  }();
  return r;
}

std::mutex& registry_mutex() {
  static std::mutex m;
  return m;
}

}  // namespace

const std::vector<const KernelModel*>& kernel_models() {
  return registry().models;
}

const KernelModel& kernel_model(std::string_view name) {
  std::string known;
  for (const auto* k : kernel_models()) {
    if (k->name == name) return *k;
    known += (known.empty() ? "" : ", ") + k->name;
  }
  throw InputError("kernel", fmt::format("no kernel model named '{}' (known: {})", name, known));
}

std::vector<const KernelModel*> kernels_of(Algorithm a, Pass pass) {
  const Algorithm owner = pass == Pass::Backward ? backward_of(a) : a;
  std::vector<const KernelModel*> out;
  for (const auto* k : kernel_models())
    if (k->algorithm == owner && k->pass == pass) out.push_back(k);
  return out;
}

const KernelModel& kernel_model(const KernelStep& step) {
  const auto ks = kernels_of(step.algorithm, step.pass);
  if (step.index < 0 || step.index >= static_cast<int>(ks.size()))
    throw InputError(
        "kernel", fmt::format("the {} {} pass has {} kernels, no kernel {}", algorithm_name(step.algorithm),
                              pass_name(step.pass), ks.size(), step.index));
  return *ks[static_cast<size_t>(step.index)];
}

std::optional<TileRuleBreak> tile_misfit(const KernelModel& m, const TileConfig& c) {
  auto broken = m.tile_rule ? m.tile_rule(c) : std::nullopt;
  if (broken) broken->message = m.name + ": " + broken->message;
  return broken;
}

void check_tile(const KernelModel& m, const TileConfig& c) {
  if (const auto broken = tile_misfit(m, c)) throw InputError(broken->field, broken->message);
}

const KernelModel& register_kernel_model(KernelModel m) {
  const std::lock_guard<std::mutex> lock(registry_mutex());
  registry().add(std::move(m));
  return *registry().models.back();
}

KernelLaunch launch(const KernelModel& m, const AttentionProblem& p, const TileConfig& c,
                    const ProblemData* data) {
  KernelLaunch l = m.launch(p, c);
  l.model = &m;
  if (data && p.block_mask != BroadcastShape::None && m.list_block_mask_steps)
    m.list_block_mask_steps(l, p, c, *data);
  return l;
}

const std::string& KernelLaunch::name() const {
  static const std::string unknown = "?";
  return model ? model->name : unknown;
}

int64_t KernelLaunch::smem_bytes() const {
  int64_t s = 0;
  for (const auto& b : smem) s += b.bytes;
  return s;
}

std::string ncu_name_hint(const NcuName& n) {
  std::string id;
  for (const char* ch = n.pattern; std::isalnum(static_cast<unsigned char>(*ch)) || *ch == '_'; ++ch)
    id += *ch;
  return id;
}

int64_t ncu_template_int(const std::ssub_match& s, const std::string& name) {
  const std::string digits = s.str();
  if (digits.size() > 9)  // past what any tile or head dim can be, and than int64 holds
    throw InputError("ncu", "kernel '" + name.substr(0, 200) + "' has a template argument out of range");
  return std::stoll(digits);
}

TileConfig checked_ncu_config(const TileConfig& c, const std::string& name) {
  try {
    c.validate();
  } catch (const InputError& e) {
    throw InputError("ncu", "kernel '" + name.substr(0, 200) + "' has a bad tile config: " + e.what());
  }
  return c;
}

}  // namespace flashsim::sim
