#include "flashsim/sim/hardware.h"

#include <gtest/gtest.h>

#include "flashsim/error.h"

using namespace flashsim::sim;

TEST(Hardware, BuiltinsLoad) {
  const auto names = profile_names();
  for (const char* n : {"A100-SXM4-80GB", "A10", "H100-SXM5-80GB", "H200", "L4", "host"})
    EXPECT_NE(std::find(names.begin(), names.end(), n), names.end()) << n;
  const auto h = load_profile("H100-SXM5-80GB");
  EXPECT_EQ(h.sms, 132);
  EXPECT_EQ(h.l2_bytes, 50 * 1024 * 1024);
  EXPECT_EQ(h.sector_bytes, 32);
}

TEST(Hardware, HostFromHwloc) {
  const auto h = load_profile("host");
  EXPECT_GE(h.sms, 1);
  EXPECT_GT(h.l2_bytes, 0);
}

TEST(Hardware, UnknownIsInputError) {
  EXPECT_THROW(load_profile("nope"), flashsim::InputError);
}

TEST(Hardware, JsonRoundTrip) {
  const auto h = load_profile("A100-SXM4-80GB");
  EXPECT_EQ(to_json(profile_from_json(to_json(h))), to_json(h));
}

// The H200 profile names the H100's as its parent: the SM-side measurements (per-tile costs, Hopper rates, the FA2
// rates) come from there, its DRAM-side ones (copy bandwidth, launch latency, a CTA's DRAM latency) are its own,
// and the merged profile survives a JSON round trip.
TEST(Hardware, H200InheritsTheH100sSmSideAndKeepsItsOwnDram) {
  const auto h100 = load_profile("H100-SXM5-80GB");
  const auto h200 = load_profile("H200");
  EXPECT_EQ(h200.name, "H200");
  EXPECT_EQ(h200.inherits, "H100-SXM5-80GB");
  EXPECT_FALSE(h200.measured_steps.empty());
  EXPECT_GE(h200.measured_steps.size(), h100.measured_steps.size());  // the H100's, and tiles of its own
  EXPECT_EQ(h200.wgmma_ss_flops_per_clock, h100.wgmma_ss_flops_per_clock);
  EXPECT_EQ(h200.achieved_mma_flops_fwd, h100.achieved_mma_flops_fwd);
  EXPECT_EQ(h200.sms, h100.sms);
  EXPECT_GT(h200.achieved_dram_bytes_per_s, 1.3 * h100.achieved_dram_bytes_per_s);  // HBM3e: its own figure
  EXPECT_LT(h200.achieved_dram_bytes_per_s, h200.dram_bytes_per_s);
  EXPECT_GT(h200.kernel_latency_s, 0);
  EXPECT_GT(h200.cta_dram_latency_s, 0);
  EXPECT_NE(h200.achieved_source, h100.achieved_source);
  // what `sim` prints beside a time: where each measured figure comes from
  EXPECT_EQ(h200.measured_on("achieved_mma_flops_fwd"), "the H100-SXM5-80GB");
  EXPECT_EQ(h200.measured_on("kernel_latency_s"), "this GPU");
  EXPECT_EQ(h100.measured_on("achieved_mma_flops_fwd"), "this GPU");
  EXPECT_EQ(to_json(profile_from_json(to_json(h200))), to_json(h200));
}

// measured_steps merge entry by entry: the H200 measured fa3-v1's forward tile costs (fwd_fa3) and a lone decode
// CTA's (fwd_splitkv) itself and keeps the H100's for every other kernel; a child's entry replaces only the
// parent's entry of the same key.
TEST(Hardware, MeasuredStepsMergeEntryByEntry) {
  const auto h100 = load_profile("H100-SXM5-80GB");
  const auto h200 = load_profile("H200");
  const auto find = [](const HardwareProfile& p, const MeasuredSteps& key) -> const MeasuredSteps* {
    for (const auto& m : p.measured_steps)
      if (m.kernel == key.kernel && m.head_dim == key.head_dim && m.block_q == key.block_q &&
          m.block_k == key.block_k && m.stages == key.stages && m.persistent == key.persistent)
        return &m;
    return nullptr;
  };
  int own = 0, inherited = 0;
  for (const auto& m : h100.measured_steps) {
    const MeasuredSteps* e = find(h200, m);
    ASSERT_NE(e, nullptr) << m.kernel << " d" << m.head_dim << " missing from the H200";
    if (m.kernel == "fwd_fa3" || m.kernel == "fwd_splitkv") {
      own += e->tile_s_by_steps != m.tile_s_by_steps;
    } else {
      EXPECT_EQ(e->tile_s_by_steps, m.tile_s_by_steps) << m.kernel << " d" << m.head_dim;
      ++inherited;
    }
  }
  EXPECT_GT(own, 20);  // its own figures (30 entries; two cards do not time 30 tiles alike)
  EXPECT_GT(inherited, 10);
  // where each entry was measured (what `sim` prints beside a measured-steps time): the H200's own entries
  // here, the H100's there; the H100's all its own
  for (const auto& m : h200.measured_steps)
    EXPECT_EQ(m.measured_on, m.kernel == "fwd_fa3" || m.kernel == "fwd_splitkv" ? "" : "H100-SXM5-80GB")
        << m.kernel;
  for (const auto& m : h100.measured_steps) EXPECT_EQ(m.measured_on, "") << m.kernel;
  // two levels down: the H100's entries keep their GPU, the H200's are marked as the H200's
  const auto grandchild = profile_from_json({{"name", "H200-child"}, {"inherits", "H200"}});
  ASSERT_EQ(grandchild.measured_steps.size(), h200.measured_steps.size());
  for (size_t i = 0; i < h200.measured_steps.size(); ++i)
    EXPECT_EQ(grandchild.measured_steps[i].measured_on,
              h200.measured_steps[i].measured_on.empty() ? "H200" : h200.measured_steps[i].measured_on);
  EXPECT_NE(h200.measured_steps_source.find("fwd_fa3"), std::string::npos);
  EXPECT_NE(h200.measured_steps_source.find("fwd_splitkv"), std::string::npos);
  EXPECT_NE(h200.measured_steps_source.find(h100.measured_steps_source), std::string::npos);

  // a child of one entry: that entry replaced, one new appended, the rest the parent's, in the parent's order
  nlohmann::json child = {
      {"name", "H100-probe"}, {"inherits", "H100-SXM5-80GB"}, {"measured_steps_source", "probe"}};
  const MeasuredSteps& first = h100.measured_steps.front();
  child["measured_steps"] = {{{"kernel", first.kernel},
                              {"head_dim", first.head_dim},
                              {"block_q", first.block_q},
                              {"block_k", first.block_k},
                              {"stages", first.stages},
                              {"persistent", first.persistent},
                              {"tile_s_by_steps", {{1, 1e-6}, {2, 2e-6}}}},
                             {{"kernel", "fwd_fa3"},
                              {"head_dim", 192},
                              {"block_q", 128},
                              {"block_k", 64},
                              {"stages", 2},
                              {"persistent", true},
                              {"tile_s_by_steps", {{1, 3e-6}, {2, 4e-6}}}}};
  const auto p = profile_from_json(child);
  ASSERT_EQ(p.measured_steps.size(), h100.measured_steps.size() + 1);
  EXPECT_EQ(p.measured_steps[0].kernel,
            h100.measured_steps[1].kernel);  // the replaced entry moved to the end
  EXPECT_EQ(p.measured_steps[p.measured_steps.size() - 2].tile_s_by_steps,
            (std::vector<std::pair<double, double>>{{1, 1e-6}, {2, 2e-6}}));
  EXPECT_EQ(p.measured_steps.back().head_dim, 192);
  EXPECT_EQ(p.measured_steps_source.rfind("probe", 0), 0u);
  EXPECT_EQ(to_json(profile_from_json(to_json(p))), to_json(p));  // written back, merged once
  // an empty list: no measured steps at all (every kernel by its component estimate)
  const auto none = profile_from_json(
      {{"name", "H100-none"}, {"inherits", "H100-SXM5-80GB"}, {"measured_steps", nlohmann::json::array()}});
  EXPECT_TRUE(none.measured_steps.empty());
}

TEST(Hardware, InheritsMergesFieldByField) {
  const nlohmann::json j = {{"name", "L4-fast"}, {"inherits", "L4"}, {"dram_bytes_per_s", 1e12}};
  const auto p = profile_from_json(j);
  const auto l4 = load_profile("L4");
  EXPECT_EQ(p.name, "L4-fast");
  EXPECT_EQ(p.dram_bytes_per_s, 1e12);
  EXPECT_EQ(p.sms, l4.sms);
  EXPECT_EQ(p.l2_bytes, l4.l2_bytes);
  // a parent that is no built-in profile, or an inherits that is no name: InputError naming it
  try {
    profile_from_json({{"name", "x"}, {"inherits", "B300"}});
    ADD_FAILURE() << "no error for an unknown parent";
  } catch (const flashsim::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("'B300'"), std::string::npos) << e.what();
  }
  EXPECT_THROW(profile_from_json({{"name", "x"}, {"inherits", 3}}), flashsim::InputError);
}

// A measured entry's load points (MeasuredSteps::load) survive a JSON round trip, and bad ones are input errors:
// CTA counts that do not increase, a step of zero, a negative page size, a point that is not a triple.
TEST(Hardware, LoadPointsRoundTripAndBadOnesAreInputErrors) {
  const auto h200 = load_profile("H200");
  int loaded = 0;
  for (const auto& m : h200.measured_steps) loaded += !m.load.empty();
  // decode-v2's and decode-v1's d64, d128 and d256 tiles (calibration decode.load_h200)
  EXPECT_EQ(loaded, 6);
  auto j = to_json(h200);
  EXPECT_EQ(to_json(profile_from_json(j)), j);
  nlohmann::json* entry = nullptr;
  for (auto& e : j["measured_steps"])
    if (e.contains("load")) entry = &e;
  ASSERT_NE(entry, nullptr);
  const nlohmann::json good = (*entry)["load"];
  for (const nlohmann::json& bad :
       {nlohmann::json::array({{{"page_size", 16}, {"points", {{66, 2e-6, 5e-6}, {1, 2e-6, 4e-6}}}}}),
        nlohmann::json::array({{{"page_size", 16}, {"points", {{1, 0.0, 4e-6}}}}}),
        nlohmann::json::array({{{"page_size", -1}, {"points", {{1, 2e-6, 4e-6}}}}}),
        nlohmann::json::array({{{"page_size", 16}, {"points", {{1, 2e-6}}}}})}) {
    (*entry)["load"] = bad;
    EXPECT_THROW(profile_from_json(j), flashsim::InputError) << bad.dump();
  }
  (*entry)["load"] = good;
  EXPECT_NO_THROW(profile_from_json(j));
}

// The partitioned L2's replacement (l2_replacement): "lru" where a profile says nothing, what the profile says
// after a JSON round trip, and an input error naming the field for anything else.
TEST(Hardware, L2ReplacementIsLruSrripOrDrrip) {
  auto j = to_json(load_profile("H200"));
  j.erase("l2_replacement");
  EXPECT_EQ(profile_from_json(j).l2_replacement, "lru");
  for (const char* policy : {"srrip", "drrip"}) {
    j["l2_replacement"] = policy;
    EXPECT_EQ(profile_from_json(j).l2_replacement, policy);
    EXPECT_EQ(to_json(profile_from_json(j))["l2_replacement"], policy);
  }
  j["l2_replacement"] = "fifo";
  try {
    profile_from_json(j);
    ADD_FAILURE() << "fifo accepted";
  } catch (const flashsim::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("l2_replacement"), std::string::npos) << e.what();
  }
}
