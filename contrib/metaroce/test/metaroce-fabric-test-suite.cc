/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

/**
 * \file
 * ns-3 system tests of MetaRoceFabric: the loss models (Gilbert-Elliott, Bernoulli), run-to-run
 * determinism, multiplane hosts and plane failure, a 1,024-host fat tree and a two-tier one.
 * They run in an ns-3 tree (./test.py -s metaroce-fabric) and in the standalone build
 * (ctest -R ns3-suite.metaroce-fabric). The loss setters' death tests stay GoogleTest
 * (tests/ns3/metaroce-fabric-test.cc).
 */

#include "metaroce-seeded-test-case.h"
#include "metaroce-test-traffic.h"

#include "ns3/double.h"
#include "ns3/metaroce-channel.h"
#include "ns3/metaroce-fabric.h"
#include "ns3/metaroce-gilbert-elliott-error-model.h"
#include "ns3/metaroce-net-device.h"
#include "ns3/metaroce-switch.h"
#include "ns3/metaroce-topology-helper.h"
#include "ns3/node.h"
#include "ns3/rng-seed-manager.h"
#include "ns3/simulator.h"
#include "ns3/test.h"

#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

using namespace ns3;
using metaroce_test::Join;
using metaroce_test::SeededTestCase;

namespace
{

/// Everything a determinism run observes.
std::vector<uint64_t>
RunLossyLeafSpine(uint32_t run)
{
    RngSeedManager::SetSeed(1);
    RngSeedManager::SetRun(run);
    MetaRoceTopologyHelper topo;
    topo.SetEcn(true, 20000, 80000, 0.3);
    Ptr<MetaRoceFabric> fabric = topo.BuildLeafSpine(2, 4, 2.0); // 2 spines
    const std::vector<MetaRoceLink>& links = fabric->GetLinks();
    // Loss on two fabric links, one Bernoulli and one bursty.
    fabric->SetBernoulliLoss(links[8].channel, 0.01);
    fabric->SetGilbertElliottLoss(links[9].channel, 0.01, 0.2, 0.0, 1.0);
    fabric->AssignStreams(100);
    metaroce_test::Sink sink;
    for (uint32_t h = 4; h < 8; ++h)
    {
        sink.Attach(fabric->GetHostPorts(h)[0]);
    }
    std::vector<std::unique_ptr<metaroce_test::Blaster>> blasters;
    for (uint32_t h = 0; h < 4; ++h)
    {
        blasters.push_back(
            std::make_unique<metaroce_test::Blaster>(fabric->GetHostPorts(h)[0],
                                                     fabric->GetHostAddress(h),
                                                     fabric->GetHostAddress(4 + (h % 2))));
        std::vector<uint16_t> ports;
        for (uint16_t p = 0; p < 16; ++p)
        {
            ports.push_back(static_cast<uint16_t>(1000 * (h + 1) + p));
        }
        blasters.back()->SetSourcePorts(ports);
        blasters.back()->SetFrames(1500);
        blasters.back()->SetPayload(1000);
        blasters.back()->Start(MicroSeconds(1 + h));
    }
    Simulator::Run();
    std::vector<uint64_t> observed = {sink.frames,
                                      sink.bytes,
                                      sink.ceFrames,
                                      uint64_t(Simulator::Now().GetTimeStep())};
    for (uint32_t s = 0; s < fabric->GetSwitchCount(); ++s)
    {
        const MetaRoceSwitch::Counters& c = fabric->GetSwitch(s)->GetCounters();
        observed.insert(observed.end(),
                        {c.rxFrames, c.enqueuedFrames, c.ecnMarked, c.TotalDrops()});
        observed.insert(observed.end(), c.drops.begin(), c.drops.end());
    }
    for (const MetaRoceLink& link : links)
    {
        observed.push_back(link.channel->GetDropped(0));
        observed.push_back(link.channel->GetDropped(1));
    }
    Simulator::Destroy();
    return observed;
}

} // namespace

/**
 * \ingroup metaroce-tests
 * The Gilbert-Elliott model's long-run loss rate is (r h_G + p h_B) / (p + r), in the formula
 * and in a million draws.
 */
class MetaRoceGilbertElliottRateTestCase : public SeededTestCase
{
  public:
    MetaRoceGilbertElliottRateTestCase()
        : SeededTestCase("Gilbert-Elliott: the long-run loss matches the formula")
    {
    }

  private:
    void DoRun() override
    {
        Ptr<MetaRoceGilbertElliottErrorModel> model =
            CreateObject<MetaRoceGilbertElliottErrorModel>();
        model->SetAttribute("GoodToBad", DoubleValue(0.01));
        model->SetAttribute("BadToGood", DoubleValue(0.2));
        model->SetAttribute("GoodLossRate", DoubleValue(0.001));
        model->SetAttribute("BadLossRate", DoubleValue(0.5));
        model->AssignStreams(7);
        // (r h_G + p h_B) / (p + r) = (0.2 * 0.001 + 0.01 * 0.5) / 0.21
        const double expected = (0.2 * 0.001 + 0.01 * 0.5) / 0.21;
        NS_TEST_EXPECT_MSG_EQ_TOL(model->GetMeanLossRate(), expected, 1e-12, "the formula");
        Ptr<Packet> packet = Create<Packet>(100);
        const uint32_t draws = 1000000;
        uint32_t lost = 0;
        for (uint32_t i = 0; i < draws; ++i)
        {
            lost += model->IsCorrupt(packet);
        }
        NS_TEST_EXPECT_MSG_EQ_TOL(double(lost) / draws, expected, 0.05 * expected, "measured");
    }
};

/**
 * \ingroup metaroce-tests
 * Gilbert-Elliott bursts (h_G 0, h_B 1) last 1 / r packets on average.
 */
class MetaRoceGilbertElliottBurstTestCase : public SeededTestCase
{
  public:
    MetaRoceGilbertElliottBurstTestCase()
        : SeededTestCase("Gilbert-Elliott: bursts have a mean length of 1 over r")
    {
    }

  private:
    void DoRun() override
    {
        Ptr<MetaRoceGilbertElliottErrorModel> model =
            CreateObject<MetaRoceGilbertElliottErrorModel>();
        model->SetAttribute("GoodToBad", DoubleValue(0.005));
        model->SetAttribute("BadToGood", DoubleValue(0.25));
        model->SetAttribute("GoodLossRate", DoubleValue(0.0));
        model->SetAttribute("BadLossRate", DoubleValue(1.0));
        model->AssignStreams(3);
        Ptr<Packet> packet = Create<Packet>(100);
        uint64_t bursts = 0;
        uint64_t lost = 0;
        bool previous = false;
        for (uint32_t i = 0; i < 1000000; ++i)
        {
            const bool now = model->IsCorrupt(packet);
            lost += now;
            bursts += now && !previous;
            previous = now;
        }
        NS_TEST_ASSERT_MSG_GT(bursts, 1000U, "bursts");
        NS_TEST_EXPECT_MSG_EQ_TOL(double(lost) / bursts, 1 / 0.25, 0.05 * 4, "mean burst");
    }
};

/**
 * \ingroup metaroce-tests
 * A Bernoulli link loss drops its rate of the frames, counted by the channel and the device.
 */
class MetaRoceBernoulliLossTestCase : public SeededTestCase
{
  public:
    MetaRoceBernoulliLossTestCase()
        : SeededTestCase("a Bernoulli link loss matches its rate")
    {
    }

  private:
    void DoRun() override
    {
        MetaRoceTopologyHelper topo;
        Ptr<MetaRoceFabric> fabric = topo.BuildSingleSwitch(2);
        Ptr<MetaRoceChannel> link =
            fabric->GetChannel(fabric->GetHost(0), fabric->GetSwitchNode(0));
        fabric->SetBernoulliLoss(link, 0.02);
        fabric->AssignStreams(10);
        metaroce_test::Sink sink;
        sink.Attach(fabric->GetHostPorts(1)[0]);
        metaroce_test::Blaster blaster(fabric->GetHostPorts(0)[0],
                                       fabric->GetHostAddress(0),
                                       fabric->GetHostAddress(1));
        blaster.SetFrames(20000);
        blaster.SetPayload(200);
        blaster.Start(MicroSeconds(1));
        Simulator::Run();
        const uint64_t lost = 20000 - sink.frames;
        NS_TEST_EXPECT_MSG_EQ(lost, link->GetDropped(0), "the channel's count");
        NS_TEST_EXPECT_MSG_EQ_TOL(double(lost) / 20000, 0.02, 0.004, "the rate (4 sigma)");
        const uint32_t reason = uint32_t(MetaRoceDropReason::CHANNEL_LOSS);
        NS_TEST_EXPECT_MSG_EQ(fabric->GetHostPorts(0)[0]->GetPeer()->GetCounters().drops[reason],
                              lost,
                              "the receiving device's count");
    }
};

/**
 * \ingroup metaroce-tests
 * The same seed and run reproduce every counter of a lossy, marking leaf-spine; another run
 * number changes them.
 */
class MetaRoceFabricDeterminismTestCase : public SeededTestCase
{
  public:
    MetaRoceFabricDeterminismTestCase()
        : SeededTestCase("the same seed reproduces identical counters")
    {
    }

  private:
    void DoRun() override
    {
        const std::vector<uint64_t> first = RunLossyLeafSpine(1);
        const std::vector<uint64_t> second = RunLossyLeafSpine(1);
        NS_TEST_EXPECT_MSG_EQ(Join(first), Join(second), "the same run");
        // The scenario exercises marking and loss, so the comparison means something...
        NS_TEST_EXPECT_MSG_GT(first[2], 0U, "CE marks");
        NS_TEST_EXPECT_MSG_LT(first[0], 6000U, "losses");
        // ...and another run number changes the random outcome.
        const std::vector<uint64_t> other = RunLossyLeafSpine(2);
        NS_TEST_EXPECT_MSG_NE(Join(first), Join(other), "another run");
    }
};

/**
 * \ingroup metaroce-tests
 * Multiplane hosts have one port per plane, and a plane fails alone.
 */
class MetaRoceMultiplaneFabricTestCase : public SeededTestCase
{
  public:
    MetaRoceMultiplaneFabricTestCase()
        : SeededTestCase("multiplane hosts have one port per plane and planes fail alone")
    {
    }

  private:
    void DoRun() override
    {
        MetaRoceTopologyHelper topo;
        topo.SetPlaneCount(2);
        Ptr<MetaRoceFabric> fabric = topo.BuildLeafSpine(2, 2, 1.0);
        NS_TEST_ASSERT_MSG_EQ(fabric->GetPlaneCount(), 2U, "planes");
        NS_TEST_ASSERT_MSG_EQ(fabric->GetHostCount(), 4U, "hosts");
        NS_TEST_ASSERT_MSG_EQ(fabric->GetSwitchCount(), 8U, "switches");
        for (uint32_t h = 0; h < 4; ++h)
        {
            NS_TEST_ASSERT_MSG_EQ(fabric->GetHostPorts(h).size(), 2U, "ports of host " << h);
        }
        // Plane 1 fails for good at 50 us.
        fabric->FailPlane(1, MicroSeconds(50), Time::Max());
        metaroce_test::Sink plane0;
        metaroce_test::Sink plane1;
        plane0.Attach(fabric->GetHostPorts(2)[0]);
        plane1.Attach(fabric->GetHostPorts(2)[1]);
        metaroce_test::Blaster b0(fabric->GetHostPorts(0)[0],
                                  fabric->GetHostAddress(0),
                                  fabric->GetHostAddress(2));
        metaroce_test::Blaster b1(fabric->GetHostPorts(0)[1],
                                  fabric->GetHostAddress(0),
                                  fabric->GetHostAddress(2));
        for (metaroce_test::Blaster* b : {&b0, &b1})
        {
            b->SetFrames(100);
            b->SetPayload(4000);
            b->SetRate(DataRate("10Gbps")); // 100 frames over ~330 us
            b->Start(MicroSeconds(1));
        }
        Simulator::Run();
        NS_TEST_EXPECT_MSG_EQ(plane0.frames, 100U, "plane 0");
        NS_TEST_EXPECT_MSG_GT(plane1.frames, 5U, "plane 1 before the failure");
        NS_TEST_EXPECT_MSG_LT(plane1.frames, 30U, "plane 1: nothing after it");
        NS_TEST_EXPECT_MSG_EQ(fabric->GetHostPorts(0)[1]->IsLinkUp(), false, "plane 1 down");
        NS_TEST_EXPECT_MSG_EQ(fabric->GetHostPorts(0)[0]->IsLinkUp(), true, "plane 0 up");
    }
};

/**
 * \ingroup metaroce-tests
 * A k = 16 fat tree (1,024 hosts, 320 switches, 3,072 links) builds with the documented
 * addresses and forwards frames within a leaf, a pod and across pods. (Its build time is
 * printed, not tested: speed is measured by the benchmarks.)
 */
class MetaRoceThousandHostFatTreeTestCase : public SeededTestCase
{
  public:
    MetaRoceThousandHostFatTreeTestCase()
        : SeededTestCase("a 1,024-host fat tree builds and forwards")
    {
    }

  private:
    void DoRun() override
    {
        MetaRoceTopologyHelper topo;
        const auto t0 = std::chrono::steady_clock::now();
        Ptr<MetaRoceFabric> fabric = topo.BuildFatTree(16, 3);
        const double buildSeconds =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        std::printf("[ metaroce ] k=16 fat tree (1024 hosts, 320 switches, 3072 links) built in "
                    "%.3f s\n",
                    buildSeconds);
        NS_TEST_ASSERT_MSG_EQ(fabric->GetHostCount(), 1024U, "hosts");
        NS_TEST_ASSERT_MSG_EQ(fabric->GetSwitchCount(), 320U, "switches");
        NS_TEST_ASSERT_MSG_EQ(fabric->GetLinks().size(), 3072U, "links");
        NS_TEST_EXPECT_MSG_EQ(fabric->GetHostAddress(0), 0x0a000001U, "10.0.0.1");
        NS_TEST_EXPECT_MSG_EQ(fabric->GetHostAddress(1023),
                              0x0a007f08U,
                              "leaf 127, host 8: 10.0.127.8");

        // A few frames end to end: same leaf, same pod, across pods.
        const std::vector<std::pair<uint32_t, uint32_t>> pairs = {{0, 1},
                                                                  {2, 9},
                                                                  {4, 1023},
                                                                  {512, 3},
                                                                  {777, 100}};
        const std::vector<int> ttls = {63, 61, 59, 59, 59};
        std::vector<std::unique_ptr<metaroce_test::Sink>> sinks;
        std::vector<std::unique_ptr<metaroce_test::Blaster>> blasters;
        for (const auto& [src, dst] : pairs)
        {
            sinks.push_back(std::make_unique<metaroce_test::Sink>());
            sinks.back()->Attach(fabric->GetHostPorts(dst)[0]);
            blasters.push_back(
                std::make_unique<metaroce_test::Blaster>(fabric->GetHostPorts(src)[0],
                                                         fabric->GetHostAddress(src),
                                                         fabric->GetHostAddress(dst)));
            blasters.back()->SetFrames(20);
            blasters.back()->SetSourcePorts({1, 2, 3, 4, 5});
            blasters.back()->Start(MicroSeconds(1));
        }
        Simulator::Run();
        for (size_t i = 0; i < pairs.size(); ++i)
        {
            NS_TEST_EXPECT_MSG_EQ(sinks[i]->frames, 20U, "pair " << i);
            NS_TEST_ASSERT_MSG_EQ(sinks[i]->ttls.empty(), false, "pair " << i);
            NS_TEST_EXPECT_MSG_EQ(int(sinks[i]->ttls[0]), ttls[i], "TTL, pair " << i);
        }
    }
};

/**
 * \ingroup metaroce-tests
 * A two-tier fat tree has k^2/2 hosts, k leaves and k/2 spines, and every leaf reaches a
 * remote host over its k/2 uplinks.
 */
class MetaRoceTwoTierFatTreeTestCase : public SeededTestCase
{
  public:
    MetaRoceTwoTierFatTreeTestCase()
        : SeededTestCase("the two-tier fat tree's shape")
    {
    }

  private:
    void DoRun() override
    {
        MetaRoceTopologyHelper topo;
        Ptr<MetaRoceFabric> fabric = topo.BuildFatTree(8, 2);
        NS_TEST_EXPECT_MSG_EQ(fabric->GetHostCount(), 32U, "k^2/2 hosts");
        NS_TEST_EXPECT_MSG_EQ(fabric->GetSwitchCount(), 12U, "k leaves + k/2 spines");
        NS_TEST_EXPECT_MSG_EQ(fabric->GetLinks().size(), 64U, "32 host links + 8 x 4 fabric links");
        const std::vector<uint32_t>* group =
            fabric->GetSwitch(0)->LookupRoute(fabric->GetHostAddress(31));
        NS_TEST_ASSERT_MSG_NE(group, nullptr, "a route");
        NS_TEST_EXPECT_MSG_EQ(group->size(), 4U, "over the 4 uplinks");
    }
};

/**
 * \ingroup metaroce-tests
 * System tests of MetaRoceFabric.
 */
class MetaRoceFabricTestSuite : public TestSuite
{
  public:
    MetaRoceFabricTestSuite()
        : TestSuite("metaroce-fabric", TestSuite::Type::SYSTEM)
    {
        AddTestCase(new MetaRoceGilbertElliottRateTestCase);
        AddTestCase(new MetaRoceGilbertElliottBurstTestCase);
        AddTestCase(new MetaRoceBernoulliLossTestCase);
        AddTestCase(new MetaRoceFabricDeterminismTestCase);
        AddTestCase(new MetaRoceMultiplaneFabricTestCase);
        AddTestCase(new MetaRoceThousandHostFatTreeTestCase);
        AddTestCase(new MetaRoceTwoTierFatTreeTestCase);
    }
};

/// The suite's instance, registered with the TestRunner when the library loads.
static MetaRoceFabricTestSuite g_metaRoceFabricTestSuite;
