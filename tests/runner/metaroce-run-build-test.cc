/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

/**
 * \file
 * The scenario runner's topology and workload build (examples/runner/metaroce-run-topology.h,
 * metaroce-run-workload.h) without running a simulation: which links get random loss, incast
 * senders, htsim flow checks, and a small scenario built into a fabric, NICs and flows, with
 * link events naming nodes that do not exist rejected.
 */

#include "metaroce-run-topology.h"
#include "metaroce-run-workload.h"

#include "ns3/simulator.h"

#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <string>
#include <unistd.h>

namespace
{

namespace pb = metaroce::results;
using metaroce_run::ScenarioError;

TEST(RunTopologyTest, LossScopesSelectLinks)
{
    EXPECT_TRUE(metaroce_run::LossApplies(pb::Loss::ALL_LINKS, true));
    EXPECT_TRUE(metaroce_run::LossApplies(pb::Loss::ALL_LINKS, false));
    EXPECT_FALSE(metaroce_run::LossApplies(pb::Loss::FABRIC_LINKS, true));
    EXPECT_TRUE(metaroce_run::LossApplies(pb::Loss::FABRIC_LINKS, false));
    EXPECT_TRUE(metaroce_run::LossApplies(pb::Loss::HOST_LINKS, true));
    EXPECT_FALSE(metaroce_run::LossApplies(pb::Loss::HOST_LINKS, false));
    EXPECT_TRUE(metaroce_run::LossApplies(pb::Loss::HOST_DOWNLINKS, true));
    EXPECT_FALSE(metaroce_run::LossApplies(pb::Loss::HOST_DOWNLINKS, false));
}

TEST(RunWorkloadTest, IncastSendersSkipTheReceiver)
{
    EXPECT_EQ(metaroce_run::IncastSenders(8, 2, 3), (std::vector<uint32_t>{0, 1, 3}));
    EXPECT_EQ(metaroce_run::IncastSenders(4, 0, 9), (std::vector<uint32_t>{1, 2, 3}));
    EXPECT_TRUE(metaroce_run::IncastSenders(1, 0, 4).empty());
    pb::Workload w;
    EXPECT_EQ(metaroce_run::WorkloadHosts(w, 3), (std::vector<uint32_t>{0, 1, 2}));
    w.set_hosts(2);
    EXPECT_EQ(metaroce_run::WorkloadHosts(w, 8), (std::vector<uint32_t>{0, 1}));
}

TEST(RunWorkloadTest, HtsimFlowsMustFitTheOutstandingRequests)
{
    metaroce::ConnectionConfig cfg;
    cfg.maxMessageSize = 1000;
    cfg.maxOutstandingWrs = 2;
    ns3::MetaRoceHtsimMatrix matrix;
    matrix.flows.push_back({0, 1, 0, 0, 2000, 3});
    EXPECT_NO_THROW(metaroce_run::CheckHtsimFlows(matrix, cfg, "m.cm"));
    matrix.flows.push_back({1, 0, 1, 0, 2001, 4});
    try
    {
        metaroce_run::CheckHtsimFlows(matrix, cfg, "m.cm");
        ADD_FAILURE() << "no error";
    }
    catch (const ScenarioError& e)
    {
        EXPECT_EQ(std::string(e.what()),
                  "m.cm: line 4: flow needs more messages than MaxOutstandingWrs");
    }
}

/// A small scenario, loaded into a plan from a file in a folder of its own.
class RunBuildTest : public ::testing::Test
{
  protected:
    void TearDown() override
    {
        ns3::Simulator::Destroy();
        std::filesystem::remove_all(m_dir);
    }

    /**
     * \param sets --set arguments
     * \return the plan of the scenario with them
     */
    metaroce_run::ScenarioPlan Plan(const std::vector<std::string>& sets)
    {
        m_dir = std::filesystem::temp_directory_path() /
                ("metaroce-run-build-" + std::to_string(::getpid()));
        std::filesystem::create_directories(m_dir);
        std::ofstream(m_dir / "unit.textproto") << R"(name: "unit"
topology { kind: LEAF_SPINE leaves: 2 hosts_per_leaf: 4 oversubscription: 1 }
transport { name: "metaroce" paths: 4 }
workload { kind: INCAST senders: 3 receiver: 5 flow_bytes: 65536 }
)";
        metaroce_run::ScenarioOptions options;
        options.scenarioPath = (m_dir / "unit.textproto").string();
        options.sets = sets;
        return metaroce_run::LoadScenario(options);
    }

    std::filesystem::path m_dir; //!< the scenario's folder
};

TEST_F(RunBuildTest, BuildsTheFabricNicsAndFlowsOfTheScenario)
{
    const metaroce_run::ScenarioPlan plan = Plan({});
    const pb::Scenario& sc = plan.loader.Get();
    metaroce_run::ConfigureSimulator(sc);
    ns3::Ptr<ns3::MetaRoceFabric> fabric = metaroce_run::BuildFabric(sc.topology(), 1);
    ASSERT_EQ(fabric->GetHostCount(), metaroce_run::HostCount(sc.topology()));
    EXPECT_EQ(fabric->GetSwitchCount(), 6U); // 2 leaves, 4 spines at 1:1
    int64_t streams = -1;
    const auto nics = metaroce_run::InstallNics(sc.transport(), fabric, streams);
    EXPECT_EQ(nics.size(), 8U);
    EXPECT_GT(streams, 0);
    const metaroce_run::NodeNames names(fabric);
    metaroce_run::ApplyLoss(plan.loader, fabric, names, streams);
    ns3::Ptr<ns3::MetaRoceWorkloadHelper> load = metaroce_run::BuildWorkload(plan, fabric, nics);
    ASSERT_EQ(load->GetFlows().size(), 3U);
    EXPECT_EQ(load->GetFlows()[0].src, 0U);
    EXPECT_EQ(load->GetFlows()[2].src, 2U);
    EXPECT_EQ(load->GetFlows()[0].dst, 5U);
    EXPECT_EQ(metaroce_run::ReceivingHosts(load, 8), (std::vector<uint32_t>{5}));
}

TEST_F(RunBuildTest, ReadFlowsAndTheRingsThatCannotBe)
{
    for (const bool ring : {false, true})
    {
        const metaroce_run::ScenarioPlan plan =
            Plan({ring ? "workload { kind: RING_ALLREDUCE operation: READ }"
                       : "workload { operation: READ }"});
        const pb::Scenario& sc = plan.loader.Get();
        ns3::Ptr<ns3::MetaRoceFabric> fabric = metaroce_run::BuildFabric(sc.topology(), 1);
        int64_t streams = 0;
        const auto nics = metaroce_run::InstallNics(sc.transport(), fabric, streams);
        try
        {
            ns3::Ptr<ns3::MetaRoceWorkloadHelper> load =
                metaroce_run::BuildWorkload(plan, fabric, nics);
            EXPECT_FALSE(ring) << "a READ ring was accepted";
            ASSERT_EQ(load->GetFlows().size(), 3U);
            ns3::Simulator::Stop(ns3::MilliSeconds(5));
            ns3::Simulator::Run();
            EXPECT_EQ(load->GetFlowsDone(), 3U);
            // The incast's senders read from the receiver: host 5 placed nothing.
            EXPECT_EQ(nics[5]->GetEngineCounters().Get(metaroce::Counter::BYTES_PLACED), 0U);
            EXPECT_EQ(nics[0]->GetEngineCounters().Get(metaroce::Counter::BYTES_PLACED), 65536U);
        }
        catch (const ScenarioError& e)
        {
            EXPECT_TRUE(ring) << e.what();
            EXPECT_NE(std::string(e.what()).find("workload.operation"), std::string::npos)
                << e.what();
        }
        ns3::Simulator::Destroy();
    }
}

TEST_F(RunBuildTest, LinkEventsMustNameExistingNodesAndLinks)
{
    for (const auto& [set, error] : std::vector<std::pair<std::string, std::string>>{
             {"loss { fail_link { a: \"h0\" b: \"s9\" } }",
              "loss.fail_link[0].b: no node 's9' (hosts h0..h7, switches s0..s5)"},
             {"loss { degrade_link { a: \"h0\" b: \"h1\" fraction: 0.5 } }",
              "loss.degrade_link[0].a: no link between h0 and h1"}})
    {
        const metaroce_run::ScenarioPlan plan = Plan({set});
        const pb::Scenario& sc = plan.loader.Get();
        ns3::Ptr<ns3::MetaRoceFabric> fabric = metaroce_run::BuildFabric(sc.topology(), 1);
        int64_t streams = 0;
        metaroce_run::InstallNics(sc.transport(), fabric, streams);
        const metaroce_run::NodeNames names(fabric);
        try
        {
            metaroce_run::ApplyLoss(plan.loader, fabric, names, streams);
            ADD_FAILURE() << "no error for " << set;
        }
        catch (const ScenarioError& e)
        {
            EXPECT_EQ(std::string(e.what()), "--set '" + set + "': " + error);
        }
        ns3::Simulator::Destroy();
    }
}

TEST_F(RunBuildTest, AMissingHtsimFileIsAnError)
{
    const metaroce_run::ScenarioPlan plan =
        Plan({"workload { kind: HTSIM_FILE file: \"missing.cm\" }"});
    const pb::Scenario& sc = plan.loader.Get();
    ns3::Ptr<ns3::MetaRoceFabric> fabric = metaroce_run::BuildFabric(sc.topology(), 1);
    int64_t streams = 0;
    const auto nics = metaroce_run::InstallNics(sc.transport(), fabric, streams);
    try
    {
        metaroce_run::BuildWorkload(plan, fabric, nics);
        ADD_FAILURE() << "no error";
    }
    catch (const ScenarioError& e)
    {
        EXPECT_NE(std::string(e.what()).find("workload.file: cannot open " +
                                             (m_dir / "missing.cm").string()),
                  std::string::npos)
            << e.what();
    }
}

} // namespace
