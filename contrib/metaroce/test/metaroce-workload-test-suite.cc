/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

/**
 * \file
 * ns-3 system tests of MetaRoceWorkloadHelper: htsim connection matrices (parsing, errors with
 * line numbers, a run with slowdowns), ring all-reduce and all-to-all on both transports, READ
 * all-to-all, and a 1,024-host fat-tree permutation. They run in an ns-3 tree
 * (./test.py -s metaroce-workload) and in the standalone build
 * (ctest -R ns3-suite.metaroce-workload).
 */

#include "metaroce-seeded-test-case.h"

#include "ns3/metaroce-fabric.h"
#include "ns3/metaroce-net-device.h"
#include "ns3/metaroce-nic.h"
#include "ns3/metaroce-stack-helper.h"
#include "ns3/metaroce-switch.h"
#include "ns3/metaroce-topology-helper.h"
#include "ns3/metaroce-workload-helper.h"
#include "ns3/node.h"
#include "ns3/simulator.h"
#include "ns3/test.h"

#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

using namespace ns3;
using metaroce_test::SeededTestCase;

namespace
{

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

    /// Run the flows over \p transport.
    void SetTransport(const std::string& transport)
    {
        metaroce::ConnectionConfig cfg = load->GetConnectionConfig();
        cfg.transport = transport;
        load->SetConnectionConfig(cfg);
    }
};

} // namespace

/**
 * \ingroup metaroce-tests
 * An htsim connection matrix parses: nodes, connections, ids, starts, sizes, line numbers,
 * comments, blank lines and CRLF.
 */
class MetaRoceHtsimParseTestCase : public SeededTestCase
{
  public:
    MetaRoceHtsimParseTestCase()
        : SeededTestCase("an htsim connection matrix parses")
    {
    }

  private:
    void DoRun() override
    {
        MetaRoceHtsimMatrix m;
        const std::string text = "Nodes 8\n"
                                 "Connections 3\n"
                                 "# a comment\n"
                                 "\n"
                                 "0->5 id 1 start 0 size 100000\n"
                                 "3->2 start 12.5 size 4096\r\n"
                                 "7->0 id 9 start 3 size 1 send_done_trigger 2\n";
        NS_TEST_ASSERT_MSG_EQ(ParseError(text, &m), "", "parse");
        NS_TEST_EXPECT_MSG_EQ(m.nodes, 8U, "nodes");
        NS_TEST_EXPECT_MSG_EQ(m.connections, 3U, "connections");
        NS_TEST_ASSERT_MSG_EQ(m.flows.size(), 3U, "flows");
        NS_TEST_EXPECT_MSG_EQ(m.flows[0].src, 0U, "src");
        NS_TEST_EXPECT_MSG_EQ(m.flows[0].dst, 5U, "dst");
        NS_TEST_EXPECT_MSG_EQ(m.flows[0].id, 1U, "id");
        NS_TEST_EXPECT_MSG_EQ(m.flows[0].bytes, 100000U, "size");
        NS_TEST_EXPECT_MSG_EQ_TOL(m.flows[1].startUs, 12.5, 1e-12, "start");
        NS_TEST_EXPECT_MSG_EQ(m.flows[1].line, 6U, "line");
        NS_TEST_EXPECT_MSG_EQ(m.flows[2].id, 9U, "id");
        NS_TEST_EXPECT_MSG_EQ(m.flows[2].bytes, 1U, "size");
    }
};

/**
 * \ingroup metaroce-tests
 * Each malformed htsim input gives an error that starts with its line number and cause.
 */
class MetaRoceHtsimErrorsTestCase : public SeededTestCase
{
  public:
    MetaRoceHtsimErrorsTestCase()
        : SeededTestCase("malformed htsim lines give the line number")
    {
    }

  private:
    void DoRun() override
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
            NS_TEST_EXPECT_MSG_EQ(error.rfind(c.expect, 0),
                                  0U,
                                  "input:\n"
                                      << c.text << "error: " << error);
        }
    }
};

/**
 * \ingroup metaroce-tests
 * An htsim file runs: unloaded flows finish close to their ideal FCT, the flow table is
 * written, and a missing file or a matrix larger than the fabric is refused with a reason.
 */
class MetaRoceHtsimRunTestCase : public SeededTestCase
{
  public:
    MetaRoceHtsimRunTestCase()
        : SeededTestCase("an htsim file runs and records slowdowns")
    {
    }

  private:
    void DoRun() override
    {
        const std::string path = CreateTempDirFilename("metaroce-workload-test.cm");
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
        NS_TEST_ASSERT_MSG_EQ(net.load->AddHtsimConnectionMatrix(path, error), true, error);
        Simulator::Stop(MilliSeconds(10));
        Simulator::Run();
        NS_TEST_ASSERT_MSG_EQ(net.load->GetFlowsDone(), 4U, "flows done");
        for (const MetaRoceFlow& f : net.load->GetFlows())
        {
            NS_TEST_EXPECT_MSG_EQ(f.done, true, "flow " << f.id);
            // Unloaded flows on disjoint paths: close to ideal, and never better than its one
            // optimism: bytes / R and the base RTT both count the serialisation of the first
            // packet (a one-packet flow takes baseRtt, not bytes / R + baseRtt).
            const double firstPacket = std::min<uint64_t>(f.bytes, 4096) * 8.0 / 100e9;
            NS_TEST_EXPECT_MSG_GT_OR_EQ(f.Fct().GetSeconds(),
                                        f.idealFct.GetSeconds() - firstPacket,
                                        "flow " << f.id);
            NS_TEST_EXPECT_MSG_GT_OR_EQ(f.Slowdown(), 0.95, "flow " << f.id);
            NS_TEST_EXPECT_MSG_LT(f.Slowdown(), 3.0, "flow " << f.id);
        }
        NS_TEST_EXPECT_MSG_EQ(net.load->GetFlows()[1].start, MicroSeconds(5), "start");
        NS_TEST_EXPECT_MSG_EQ(net.load->GetFlows()[2].id, 12U, "id");
        NS_TEST_EXPECT_MSG_EQ(net.load->HopCount(0, 4), 4U, "hops across the spines");
        NS_TEST_EXPECT_MSG_EQ(net.load->HopCount(0, 1), 2U, "hops within a leaf");
        std::ostringstream table;
        net.load->WriteFlows(table);
        NS_TEST_EXPECT_MSG_EQ(
            table.str().rfind(
                "id src dst bytes start_us finish_us fct_us ideal_us slowdown\n10 0 4 65536 ",
                0),
            0U,
            "the flow table");
        std::remove(path.c_str());

        std::string missing;
        NS_TEST_EXPECT_MSG_EQ(net.load->AddHtsimConnectionMatrix("/nonexistent/x.cm", missing),
                              false,
                              "a missing file");
        NS_TEST_EXPECT_MSG_NE(missing.find("cannot open"), std::string::npos, missing);
        std::istringstream big("Nodes 64\n0->63 start 0 size 10\n");
        MetaRoceHtsimMatrix m;
        NS_TEST_ASSERT_MSG_EQ(MetaRoceWorkloadHelper::ParseHtsimConnectionMatrix(big, m, error),
                              true,
                              error);
        NS_TEST_EXPECT_MSG_EQ(net.load->AddHtsimConnectionMatrix(m, error),
                              false,
                              "more nodes than hosts");
        NS_TEST_EXPECT_MSG_NE(error.find("64 nodes but the fabric 8 hosts"),
                              std::string::npos,
                              error);
    }
};

/**
 * \ingroup metaroce-tests
 * A ring all-reduce over 8 ranks completes on both transports, each rank receiving 2 (N - 1)
 * chunks per channel; MetaRoCE keeps a high bus bandwidth.
 */
class MetaRoceRingAllReduceTestCase : public SeededTestCase
{
  public:
    MetaRoceRingAllReduceTestCase()
        : SeededTestCase("ring all-reduce completes on both transports")
    {
    }

  private:
    void DoRun() override
    {
        for (const char* transport : {"metaroce", "rocev2"})
        {
            SmallNet net;
            net.SetTransport(transport);
            const uint64_t bytes = 8 << 20;
            net.load->AddRingAllReduce({0, 4, 1, 5, 2, 6, 3, 7}, bytes, 4, MicroSeconds(1));
            Simulator::Stop(MilliSeconds(50));
            Simulator::Run();
            NS_TEST_ASSERT_MSG_EQ(net.load->GetCollectives().size(), 1U, transport);
            const MetaRoceCollective& c = net.load->GetCollectives()[0];
            NS_TEST_EXPECT_MSG_EQ(c.done, true, transport);
            NS_TEST_EXPECT_MSG_EQ(c.failed, false, transport);
            NS_TEST_EXPECT_MSG_EQ(c.chunkBytes, bytes / 32, transport);
            NS_TEST_EXPECT_MSG_EQ(
                net.nics[3]->GetEngineCounters().Get(metaroce::Counter::BYTES_PLACED),
                14 * 4 * c.chunkBytes,
                transport);
            std::printf("[ metaroce ] %s ring all-reduce, 8 ranks x 8 MiB, 4 channels: %.1f us, "
                        "bus bandwidth %.1f Gb/s\n",
                        transport,
                        (c.finish - c.start).GetSeconds() * 1e6,
                        c.BusBandwidth() / 1e9);
            // RoCEv2 pins each channel's QP to one ECMP path: colliding QPs get ECN-marked and
            // DCQCN recovers slowly, so only MetaRoCE is held to a high bar.
            NS_TEST_EXPECT_MSG_GT(c.BusBandwidth(),
                                  (std::string(transport) == "metaroce" ? 60e9 : 5e9),
                                  transport);
            Simulator::Destroy();
        }
    }
};

/**
 * \ingroup metaroce-tests
 * An all-to-all of 64 KiB completes all 56 flows; so does a READ all-to-all on both transports,
 * each reader placing what it read.
 */
class MetaRoceAllToAllTestCase : public SeededTestCase
{
  public:
    MetaRoceAllToAllTestCase()
        : SeededTestCase("all-to-all, and READ all-to-all on both transports")
    {
    }

  private:
    void DoRun() override
    {
        {
            SmallNet net;
            net.load->AddAllToAll({}, 64 * 1024, MicroSeconds(1));
            Simulator::Stop(MilliSeconds(20));
            Simulator::Run();
            NS_TEST_EXPECT_MSG_EQ(net.load->GetFlows().size(), 56U, "flows");
            NS_TEST_EXPECT_MSG_EQ(net.load->GetFlowsDone(), 56U, "flows done");
            Simulator::Destroy();
        }
        for (const char* transport : {"metaroce", "rocev2"})
        {
            SmallNet net;
            net.SetTransport(transport);
            net.load->SetFlowOperation(MetaRoceFlowApplication::READ);
            net.load->AddAllToAll({}, 64 * 1024, MicroSeconds(1));
            Simulator::Stop(MilliSeconds(20));
            Simulator::Run();
            NS_TEST_ASSERT_MSG_EQ(net.load->GetFlows().size(), 56U, transport);
            NS_TEST_EXPECT_MSG_EQ(net.load->GetFlowsDone(), 56U, transport);
            for (const MetaRoceFlow& f : net.load->GetFlows())
            {
                NS_TEST_EXPECT_MSG_EQ(f.done && f.received && !f.failed,
                                      true,
                                      transport << " flow " << f.id);
            }
            // A reader places what it reads: each host read 64 KiB from each of the 7 others
            // (the engine counts READ bytes where they land).
            for (uint32_t h = 0; h < 8; ++h)
            {
                NS_TEST_EXPECT_MSG_EQ(
                    net.nics[h]->GetEngineCounters().Get(metaroce::Counter::BYTES_PLACED),
                    7U * 64 * 1024,
                    transport << " host " << h);
            }
            Simulator::Destroy();
        }
    }
};

/**
 * \ingroup metaroce-tests
 * A 1,024-flow permutation of 64 KiB on a k = 16 fat tree completes (its wall times are
 * printed, not tested: speed is measured by the benchmarks).
 */
class MetaRoceFatTreePermutationTestCase : public SeededTestCase
{
  public:
    MetaRoceFatTreePermutationTestCase()
        : SeededTestCase("a 1,024-host fat-tree permutation completes")
    {
    }

  private:
    void DoRun() override
    {
        const auto t0 = std::chrono::steady_clock::now();
        MetaRoceTopologyHelper topo;
        Ptr<MetaRoceFabric> fabric = topo.BuildFatTree(16, 3);
        NS_TEST_ASSERT_MSG_EQ(fabric->GetHostCount(), 1024U, "hosts");
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
        NS_TEST_ASSERT_MSG_EQ(load->GetFlowsDone(), 1024U, "flows done");
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
};

/**
 * \ingroup metaroce-tests
 * System tests of MetaRoceWorkloadHelper.
 */
class MetaRoceWorkloadTestSuite : public TestSuite
{
  public:
    MetaRoceWorkloadTestSuite()
        : TestSuite("metaroce-workload", TestSuite::Type::SYSTEM)
    {
        AddTestCase(new MetaRoceHtsimParseTestCase);
        AddTestCase(new MetaRoceHtsimErrorsTestCase);
        AddTestCase(new MetaRoceHtsimRunTestCase);
        AddTestCase(new MetaRoceRingAllReduceTestCase);
        AddTestCase(new MetaRoceAllToAllTestCase);
        AddTestCase(new MetaRoceFatTreePermutationTestCase);
    }
};

/// The suite's instance, registered with the TestRunner when the library loads.
static MetaRoceWorkloadTestSuite g_metaRoceWorkloadTestSuite;
