/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

/**
 * \file
 * The scenario runner's scenario layer (examples/runner/metaroce-run-scenario.h,
 * metaroce-run-plan.h) without a simulation: merging texts with their locations, --set paths,
 * attribute checks, NIC settings, the completed, validated scenario, and the plan loaded from a
 * file and the command line's options. Bad input throws ScenarioError naming its place.
 */

#include "metaroce-run-plan.h"

#include "ns3/config.h"
#include "ns3/string.h"

#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <string>
#include <unistd.h>

namespace
{

using metaroce_run::ScenarioError;
using metaroce_run::ScenarioLoader;

/**
 * \param f something that should throw ScenarioError
 * \return its message ("" if it did not throw)
 */
template <typename F>
std::string
ErrorOf(F f)
{
    try
    {
        f();
    }
    catch (const ScenarioError& e)
    {
        return e.what();
    }
    return "";
}

/// A small scenario file's text.
const char* const SCENARIO = R"(name: "unit"
topology {
  kind: LEAF_SPINE
  leaves: 2
  hosts_per_leaf: 4
  oversubscription: 1
}
transport {
  name: "metaroce"
  paths: 4
}
workload { kind: INCAST senders: 3 receiver: 0 flow_bytes: 65536 }
)";

/**
 * Load SCENARIO and \p overrides (each a --set argument) and complete it.
 * \param overrides --set arguments
 * \param[out] cfg the connection configuration
 * \return the completed scenario
 */
metaroce::results::Scenario
Completed(const std::vector<std::string>& overrides, metaroce::ConnectionConfig& cfg)
{
    ScenarioLoader loader;
    loader.Merge(SCENARIO, "unit.textproto", true, true);
    for (const std::string& s : overrides)
    {
        const std::string text = metaroce_run::SetToTextFormat(s);
        loader.Merge(text, "--set '" + s + "'", false, text == s);
    }
    ns3::Ptr<ns3::MetaRoceNic> nic = ns3::CreateObject<ns3::MetaRoceNic>();
    const metaroce_run::NicSettings settings(loader, nic);
    cfg = nic->GetDefaultConnectionConfig();
    metaroce_run::Complete(loader, settings, cfg);
    return loader.Get();
}

TEST(ScenarioLoaderTest, FieldsKnowWhereTheyWereSet)
{
    ScenarioLoader loader;
    loader.Merge(SCENARIO, "unit.textproto", true, true);
    loader.Merge("transport { paths: 8 }", "--set 'transport.paths=8'", false, false);
    EXPECT_EQ(loader.Where("topology.leaves"), "unit.textproto:4:3");
    EXPECT_EQ(loader.Where("transport.paths"), "--set 'transport.paths=8'");
    EXPECT_EQ(loader.Where("transport.name"), "unit.textproto:9:3");
    EXPECT_EQ(loader.Where("seed"), "scenario (default)");
    EXPECT_EQ(loader.Get().transport().paths(), 8U);
    EXPECT_EQ(ErrorOf([&] { loader.Invalid("topology.leaves", "too few"); }),
              "unit.textproto:4:3: topology.leaves: too few");
}

TEST(ScenarioLoaderTest, SyntaxErrorsNameTheirPlace)
{
    ScenarioLoader loader;
    EXPECT_EQ(ErrorOf([&] { loader.Merge("seed 2\n", "bad.textproto", true, true); }),
              "bad.textproto:1:6: Expected \":\", found \"2\".");
    EXPECT_EQ(ErrorOf([&] { loader.Merge("nope: 1", "--set 'nope=1'", false, false); }),
              "--set 'nope=1': Message type \"metaroce.results.Scenario\" has no field named "
              "\"nope\".");
}

TEST(SetToTextFormatTest, PathsBecomeTextFormat)
{
    EXPECT_EQ(metaroce_run::SetToTextFormat("transport.paths=4"), "transport { paths: 4 }");
    EXPECT_EQ(metaroce_run::SetToTextFormat("transport.cc=dc\"tcp"),
              "transport { cc: \"dc\\\"tcp\" }");
    EXPECT_EQ(metaroce_run::SetToTextFormat("seed: 3"), "seed: 3"); // text format as it is
    EXPECT_EQ(ErrorOf([] { metaroce_run::SetToTextFormat("transport.pathz=4"); }),
              "--set 'transport.pathz=4': no field 'pathz' in metaroce.results.Transport");
    EXPECT_EQ(ErrorOf([] { metaroce_run::SetToTextFormat("seed.x=4"); }),
              "--set 'seed.x=4': 'seed' is not a message");
}

TEST(CheckAttributeTest, NamesValuesAndEnums)
{
    const ns3::TypeId nic = ns3::MetaRoceNic::GetTypeId();
    metaroce::results::Attribute a;
    a.set_name("CongestionControl");
    a.set_value("dctcp");
    EXPECT_EQ(metaroce_run::CheckAttribute(nic, a), "");
    a.set_value("cubic");
    EXPECT_EQ(metaroce_run::CheckAttribute(nic, a),
              "bad value 'cubic' for CongestionControl: expected aimd, dctcp or fixed");
    a.set_name("RtoMin");
    a.set_value("soon");
    EXPECT_EQ(metaroce_run::CheckAttribute(nic, a).rfind("bad time 'soon' for RtoMin", 0), 0U);
    a.set_name("Mtus");
    EXPECT_EQ(metaroce_run::CheckAttribute(nic, a), "no attribute 'Mtus' in ns3::MetaRoceNic");

    EXPECT_EQ(ErrorOf([] { metaroce_run::CheckAttributeOption("--seed=3"); }), "");
    EXPECT_EQ(ErrorOf([] { metaroce_run::CheckAttributeOption("--ns3::MetaRoceNic::Mtu=2048"); }),
              "");
    EXPECT_EQ(
        ErrorOf([] { metaroce_run::CheckAttributeOption("--ns3::MetaRoceNic::PathScheduler=rr"); }),
        "--ns3::MetaRoceNic::PathScheduler=rr: bad value 'rr' for PathScheduler: expected "
        "spray or single");
    EXPECT_EQ(ErrorOf([] { metaroce_run::CheckAttributeOption("--ns3::NoSuchType::X=1"); }),
              "--ns3::NoSuchType::X=1: no type ns3::NoSuchType (attribute defaults are "
              "--ns3::Type::Attribute=value)");
}

TEST(CompleteTest, FillsDefaultsFromTheNic)
{
    metaroce::ConnectionConfig cfg;
    const metaroce::results::Scenario s = Completed({}, cfg);
    EXPECT_EQ(s.seed(), 1U);
    EXPECT_EQ(s.stop_time_ms(), 1000);
    EXPECT_EQ(s.transport().cc(), cfg.congestionControl);
    EXPECT_EQ(s.transport().path_scheduler(), "spray");
    EXPECT_EQ(s.transport().mtu(), cfg.mtu);
    EXPECT_EQ(cfg.numPaths, 4U);
    EXPECT_EQ(metaroce_run::HostCount(s.topology()), 8U);

    Completed({"transport { nic_attributes { name: \"CongestionControl\" value: \"dctcp\" } }"},
              cfg);
    EXPECT_EQ(cfg.congestionControl, "dctcp");
}

TEST(CompleteTest, RejectsBadValuesAndConflicts)
{
    metaroce::ConnectionConfig cfg;
    EXPECT_EQ(ErrorOf([&] { Completed({"transport.cc=cubic"}, cfg); }),
              "--set 'transport.cc=cubic': transport.cc: 'cubic': expected aimd, dctcp or fixed");
    EXPECT_EQ(ErrorOf([&] {
                  Completed({"topology.kind=FAT_TREE", "topology.k=5"}, cfg);
              }),
              "--set 'topology.k=5': topology.k: must be even and at most 64");
    EXPECT_EQ(ErrorOf([&] {
                  Completed({"transport { nic_attributes { name: \"NumPaths\" value: \"2\" } }"},
                            cfg);
              }),
              "unit.textproto:10:3: transport.paths: 4 disagrees with --set 'transport { "
              "nic_attributes { name: \"NumPaths\" value: \"2\" } }': transport.nic_attributes[0] "
              "NumPaths=2; give the setting in one place (docs/scenarios.md, \"NIC settings\")");
    EXPECT_EQ(ErrorOf([&] { Completed({"workload.receiver=9"}, cfg); }),
              "--set 'workload.receiver=9': workload.receiver: host 9 but the topology has 8 "
              "hosts");
}

/// A scenario file in a folder of its own, removed afterwards.
class LoadScenarioTest : public ::testing::Test
{
  protected:
    void SetUp() override
    {
        m_dir = std::filesystem::temp_directory_path() /
                ("metaroce-run-plan-" + std::to_string(::getpid()));
        std::filesystem::create_directories(m_dir);
        m_file = m_dir / "unit.textproto";
        std::ofstream(m_file) << SCENARIO;
    }

    void TearDown() override
    {
        std::filesystem::remove_all(m_dir);
    }

    std::filesystem::path m_dir;  //!< the folder
    std::filesystem::path m_file; //!< the scenario file
};

TEST_F(LoadScenarioTest, OptionsOverrideTheFileInOrder)
{
    metaroce_run::ScenarioOptions options;
    options.scenarioPath = m_file.string();
    options.seed = "7";
    options.transport = "rocev2";
    options.stopMs = "200";
    options.loss = "ge:0.01,0.5,0,0.5";
    options.sets = {"transport.rocev2_recovery=irn", "seed=9"};
    const metaroce_run::ScenarioPlan plan = metaroce_run::LoadScenario(options);
    const metaroce::results::Scenario& s = plan.loader.Get();
    EXPECT_EQ(s.name(), "unit");
    EXPECT_EQ(s.seed(), 9U); // --set comes last
    EXPECT_EQ(plan.loader.Where("seed"), "--set 'seed=9'");
    EXPECT_EQ(s.transport().name(), "rocev2");
    EXPECT_EQ(s.transport().paths(), 1U); // a RoCEv2 QP has one path
    EXPECT_EQ(plan.connection.transport, "rocev2");
    EXPECT_EQ(plan.connection.rocev2.recovery, "irn");
    EXPECT_DOUBLE_EQ(s.loss().gilbert_elliott().p(), 0.01);
    EXPECT_EQ(plan.directory, std::filesystem::absolute(m_dir));
    EXPECT_TRUE(plan.warnings.empty());
}

TEST_F(LoadScenarioTest, ReportsBadInputAndWarnings)
{
    metaroce_run::ScenarioOptions options;
    options.scenarioPath = m_dir.string();
    EXPECT_EQ(ErrorOf([&] { metaroce_run::LoadScenario(options); }),
              m_dir.string() + ": is a directory; --scenario takes a scenario file (for example "
                               "examples/scenarios/incast-leaf-spine.textproto)");
    options.scenarioPath = (m_dir / "missing.textproto").string();
    EXPECT_EQ(ErrorOf([&] { metaroce_run::LoadScenario(options); }),
              options.scenarioPath + ": cannot open the scenario file");
    options.scenarioPath = m_file.string();
    options.loss = "ge:0.01,0.5";
    EXPECT_EQ(ErrorOf([&] { metaroce_run::LoadScenario(options); }),
              "--loss=ge:0.01,0.5: expected ge:p,r,h_g,h_b");
    options.loss = "";
    // Go-back-N's local ACK timeout is 67.1 ms by default: a warning, not an error.
    options.transport = "rocev2";
    options.stopMs = "50";
    const metaroce_run::ScenarioPlan plan = metaroce_run::LoadScenario(options);
    ASSERT_EQ(plan.warnings.size(), 1U);
    EXPECT_EQ(plan.warnings[0].rfind("stop_time_ms 50 is shorter than the RoCEv2 local ACK "
                                     "timeout (RoceLocalAckTimeout 14: 4.096 us * 2^14) = 67.109 "
                                     "ms",
                                     0),
              0U)
        << plan.warnings[0];
}

} // namespace
