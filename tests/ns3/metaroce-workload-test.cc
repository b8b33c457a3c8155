/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

/**
 * \file
 * MetaRoceWorkloadHelper: htsim connection matrices (good and malformed), ring all-reduce,
 * all-to-all, and a permutation on a 1,024-host fat tree.
 */

#include "ns3/metaroce-fabric.h"
#include "ns3/metaroce-net-device.h"
#include "ns3/metaroce-nic.h"
#include "ns3/metaroce-stack-helper.h"
#include "ns3/metaroce-switch.h"
#include "ns3/metaroce-topology-helper.h"
#include "ns3/metaroce-workload-helper.h"
#include "ns3/node.h"
#include "ns3/rng-seed-manager.h"
#include "ns3/simulator.h"

#include <chrono>
#include <cstdio>
#include <fstream>
#include <gtest/gtest.h>
#include <sstream>
#include <string>
#include <vector>

using namespace ns3;

namespace
{

class MetaRoceWorkloadTest : public ::testing::Test
{
  protected:
    void SetUp() override
    {
        RngSeedManager::SetSeed(1);
        RngSeedManager::SetRun(1);
    }

    void TearDown() override
    {
        Simulator::Destroy();
    }
};

/// Parses \p text; returns the error ("" on success).
std::string
ParseError(const std::string& text, MetaRoceHtsimMatrix* out = nullptr)
{
    std::istringstream in(text);
    MetaRoceHtsimMatrix m;
    std::string error;
    const bool ok = MetaRoceWorkloadHelper::ParseHtsimConnectionMatrix(in, m, error);
    if (out)
    {
        *out = m;
    }
    return ok ? std::string() : error;
}

TEST_F(MetaRoceWorkloadTest, HtsimConnectionMatrixParses)
{
    MetaRoceHtsimMatrix m;
    const std::string text = "Nodes 8\n"
                             "Connections 3\n"
                             "# a comment\n"
                             "\n"
                             "0->5 id 1 start 0 size 100000\n"
                             "3->2 start 12.5 size 4096\r\n"
                             "7->0 id 9 start 3 size 1 send_done_trigger 2\n";
    ASSERT_EQ(ParseError(text, &m), "");
    EXPECT_EQ(m.nodes, 8U);
    EXPECT_EQ(m.connections, 3U);
    ASSERT_EQ(m.flows.size(), 3U);
    EXPECT_EQ(m.flows[0].src, 0U);
    EXPECT_EQ(m.flows[0].dst, 5U);
    EXPECT_EQ(m.flows[0].id, 1U);
    EXPECT_EQ(m.flows[0].bytes, 100000U);
    EXPECT_DOUBLE_EQ(m.flows[1].startUs, 12.5);
    EXPECT_EQ(m.flows[1].line, 6U);
    EXPECT_EQ(m.flows[2].id, 9U);
    EXPECT_EQ(m.flows[2].bytes, 1U);
}

TEST_F(MetaRoceWorkloadTest, MalformedHtsimLinesGiveTheLineNumber)
{
    const std::string head = "Nodes 4\n";

    struct Case
    {
        std::string text;   //!< input
        std::string expect; //!< start of the error
    };

    const std::vector<Case> cases = {
        {head + "0->1 start 0 size 10\nbanana\n", "line 3: expected 'src->dst"},
        {head + "0-1 start 0 size 10\n", "line 2: expected 'src->dst"},
        {head + "a->1 start 0 size 10\n", "line 2: bad endpoints"},
        {head + "0->9 start 0 size 10\n", "line 2: node beyond"},
        {head + "2->2 start 0 size 10\n", "line 2: flow from node 2 to itself"},
        {head + "0->1 start 0\n", "line 2: flow without 'size"},
        {head + "0->1 size 10\n", "line 2: flow without 'start"},
        {head + "0->1 start -3 size 10\n", "line 2: bad start"},
        {head + "0->1 start 0 size 0\n", "line 2: bad size"},
        {head + "0->1 start 0 size 12kb\n", "line 2: bad size"},
        {head + "0->1 start 0 size\n", "line 2: 'size' without a value"},
        {head + "0->1 start 0 size 10 colour red\n", "line 2: unknown field 'colour'"},
        {"0->1 start 0 size 10\n", "line 1: flow before the 'Nodes N' line"},
        {"Nodes many\n", "line 1: expected 'Nodes <count>'"},
        {head + "Connections 2\n0->1 start 0 size 10\n", "'Connections 2' but 1 flows"},
        {"", "no 'Nodes N' line"},
    };
    for (const Case& c : cases)
    {
        const std::string error = ParseError(c.text);
        EXPECT_EQ(error.rfind(c.expect, 0), 0U) << "input:\n" << c.text << "error: " << error;
    }
}

/// A leaf-spine of 2 leaves x 4 hosts with NICs and a workload helper.
struct SmallNet
{
    MetaRoceTopologyHelper topo;        //!< builder
    Ptr<MetaRoceFabric> fabric;         //!< fabric
    std::vector<Ptr<MetaRoceNic>> nics; //!< NICs
    Ptr<MetaRoceWorkloadHelper> load;   //!< workload

    /// Build.
    SmallNet()
    {
        fabric = topo.BuildLeafSpine(2, 4, 1.0);
        MetaRoceStackHelper stack;
        nics = stack.Install(fabric);
        MetaRoceStackHelper::AssignStreams(nics, 0);
        load = CreateObject<MetaRoceWorkloadHelper>();
        load->Setup(fabric, nics);
        load->SetStopWhenDone(true);
    }
};

TEST_F(MetaRoceWorkloadTest, HtsimFileRunsAndRecordsSlowdowns)
{
    const std::string path = "/tmp/metaroce-workload-test.cm";
    {
        std::ofstream out(path);
        out << "Nodes 8\nConnections 4\n"
               "0->4 id 10 start 0 size 65536\n"
               "1->5 id 11 start 5 size 200000\n"
               "6->2 id 12 start 10 size 4096\n"
               "3->7 id 13 start 0 size 1000000\n";
    }
    SmallNet net;
    std::string error;
    ASSERT_TRUE(net.load->AddHtsimConnectionMatrix(path, error)) << error;
    Simulator::Stop(MilliSeconds(10));
    Simulator::Run();
    ASSERT_EQ(net.load->GetFlowsDone(), 4U);
    for (const MetaRoceFlow& f : net.load->GetFlows())
    {
        EXPECT_TRUE(f.done);
        // Unloaded flows on disjoint paths: close to ideal, and never better than its one
        // optimism: bytes / R and the base RTT both count the serialisation of the first
        // packet (a one-packet flow takes baseRtt, not bytes / R + baseRtt).
        const double firstPacket = std::min<uint64_t>(f.bytes, 4096) * 8.0 / 100e9;
        EXPECT_GE(f.Fct().GetSeconds(), f.idealFct.GetSeconds() - firstPacket) << "flow " << f.id;
        EXPECT_GE(f.Slowdown(), 0.95) << "flow " << f.id;
        EXPECT_LT(f.Slowdown(), 3.0) << "flow " << f.id;
    }
    EXPECT_EQ(net.load->GetFlows()[1].start, MicroSeconds(5));
    EXPECT_EQ(net.load->GetFlows()[2].id, 12U);
    EXPECT_EQ(net.load->HopCount(0, 4), 4U);
    EXPECT_EQ(net.load->HopCount(0, 1), 2U);
    std::ostringstream table;
    net.load->WriteFlows(table);
    EXPECT_EQ(table.str().rfind(
                  "id src dst bytes start_us finish_us fct_us ideal_us slowdown\n10 0 4 65536 ",
                  0),
              0U);
    std::remove(path.c_str());

    std::string missing;
    EXPECT_FALSE(net.load->AddHtsimConnectionMatrix("/nonexistent/x.cm", missing));
    EXPECT_NE(missing.find("cannot open"), std::string::npos);
    std::istringstream big("Nodes 64\n0->63 start 0 size 10\n");
    MetaRoceHtsimMatrix m;
    ASSERT_TRUE(MetaRoceWorkloadHelper::ParseHtsimConnectionMatrix(big, m, error));
    EXPECT_FALSE(net.load->AddHtsimConnectionMatrix(m, error));
    EXPECT_NE(error.find("64 nodes but the fabric 8 hosts"), std::string::npos) << error;
}

TEST_F(MetaRoceWorkloadTest, RingAllReduceCompletesOnBothTransports)
{
    for (const char* transport : {"metaroce", "rocev2"})
    {
        SmallNet net;
        metaroce::ConnectionConfig cfg = net.load->GetConnectionConfig();
        cfg.transport = transport;
        net.load->SetConnectionConfig(cfg);
        const uint64_t bytes = 8 << 20;
        net.load->AddRingAllReduce({0, 4, 1, 5, 2, 6, 3, 7}, bytes, 4, MicroSeconds(1));
        Simulator::Stop(MilliSeconds(50));
        Simulator::Run();
        ASSERT_EQ(net.load->GetCollectives().size(), 1U);
        const MetaRoceCollective& c = net.load->GetCollectives()[0];
        EXPECT_TRUE(c.done) << transport;
        EXPECT_FALSE(c.failed) << transport;
        EXPECT_EQ(c.chunkBytes, bytes / 32);
        // Each rank receives 2 (N-1) chunks per channel.
        EXPECT_EQ(net.nics[3]->GetEngineCounters().Get(metaroce::Counter::BYTES_PLACED),
                  14 * 4 * c.chunkBytes)
            << transport;
        std::printf("[ metaroce ] %s ring all-reduce, 8 ranks x 8 MiB, 4 channels: %.1f us, "
                    "bus bandwidth %.1f Gb/s\n",
                    transport,
                    (c.finish - c.start).GetSeconds() * 1e6,
                    c.BusBandwidth() / 1e9);
        // RoCEv2 pins each channel's QP to one ECMP path: colliding QPs get ECN-marked and
        // DCQCN recovers slowly, so only MetaRoCE is held to a high bar.
        EXPECT_GT(c.BusBandwidth(), std::string(transport) == "metaroce" ? 60e9 : 5e9) << transport;
        Simulator::Destroy();
    }
}

TEST_F(MetaRoceWorkloadTest, AllToAllCompletes)
{
    SmallNet net;
    net.load->AddAllToAll({}, 64 * 1024, MicroSeconds(1));
    Simulator::Stop(MilliSeconds(20));
    Simulator::Run();
    EXPECT_EQ(net.load->GetFlows().size(), 56U);
    EXPECT_EQ(net.load->GetFlowsDone(), 56U);
}

TEST_F(MetaRoceWorkloadTest, ReadAllToAllMovesTheBytesToTheReadersOnBothTransports)
{
    for (const char* transport : {"metaroce", "rocev2"})
    {
        SmallNet net;
        metaroce::ConnectionConfig cfg = net.load->GetConnectionConfig();
        cfg.transport = transport;
        net.load->SetConnectionConfig(cfg);
        net.load->SetFlowOperation(MetaRoceFlowApplication::READ);
        net.load->AddAllToAll({}, 64 * 1024, MicroSeconds(1));
        Simulator::Stop(MilliSeconds(20));
        Simulator::Run();
        ASSERT_EQ(net.load->GetFlows().size(), 56U) << transport;
        EXPECT_EQ(net.load->GetFlowsDone(), 56U) << transport;
        for (const MetaRoceFlow& f : net.load->GetFlows())
        {
            EXPECT_TRUE(f.done && f.received && !f.failed) << transport << " flow " << f.id;
        }
        // A reader places what it reads: each host read 64 KiB from each of the 7 others
        // (the engine counts READ bytes where they land).
        for (uint32_t h = 0; h < 8; ++h)
        {
            EXPECT_EQ(net.nics[h]->GetEngineCounters().Get(metaroce::Counter::BYTES_PLACED),
                      7U * 64 * 1024)
                << transport << " host " << h;
        }
        Simulator::Destroy();
    }
}

TEST_F(MetaRoceWorkloadTest, ThousandHostFatTreePermutationCompletes)
{
    const auto t0 = std::chrono::steady_clock::now();
    MetaRoceTopologyHelper topo;
    Ptr<MetaRoceFabric> fabric = topo.BuildFatTree(16, 3);
    ASSERT_EQ(fabric->GetHostCount(), 1024U);
    MetaRoceStackHelper stack;
    std::vector<Ptr<MetaRoceNic>> nics = stack.Install(fabric);
    MetaRoceStackHelper::AssignStreams(nics, 0);
    fabric->AssignStreams(5000);
    Ptr<MetaRoceWorkloadHelper> load = CreateObject<MetaRoceWorkloadHelper>();
    load->Setup(fabric, nics);
    load->SetStopWhenDone(true);
    load->AddPermutation(64 * 1024, MicroSeconds(1), 11);
    const auto t1 = std::chrono::steady_clock::now();
    Simulator::Stop(MilliSeconds(20));
    Simulator::Run();
    const auto t2 = std::chrono::steady_clock::now();
    ASSERT_EQ(load->GetFlowsDone(), 1024U);
    uint64_t hops = 0;
    for (uint32_t s = 0; s < fabric->GetSwitchCount(); ++s)
    {
        hops += fabric->GetSwitch(s)->GetCounters().enqueuedFrames;
    }
    for (const Ptr<MetaRoceNic>& nic : nics)
    {
        hops += nic->GetPort(0)->GetCounters().txFrames;
    }
    double worst = 0;
    double sum = 0;
    for (const MetaRoceFlow& f : load->GetFlows())
    {
        worst = std::max(worst, f.Slowdown());
        sum += f.Slowdown();
    }
    const double build = std::chrono::duration<double>(t1 - t0).count();
    const double run = std::chrono::duration<double>(t2 - t1).count();
    std::printf("[ metaroce ] k=16 fat tree, 1024-flow permutation of 64 KiB: build %.2f s, "
                "run %.2f s wall for %.1f us simulated, %lu packet-hops (%.2f M/s), slowdown "
                "mean %.2f max %.2f, %lu events\n",
                build,
                run,
                Simulator::Now().GetSeconds() * 1e6,
                static_cast<unsigned long>(hops),
                hops / run / 1e6,
                sum / 1024,
                worst,
                static_cast<unsigned long>(Simulator::GetEventCount()));
}

} // namespace
