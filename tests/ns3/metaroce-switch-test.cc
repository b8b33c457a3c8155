/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

/**
 * \file
 * MetaRoceSwitch: ECMP, ECN marking, PFC, failures and routing reconvergence.
 */

#include "metaroce-test-traffic.h"

#include "ns3/metaroce-channel.h"
#include "ns3/metaroce-fabric.h"
#include "ns3/metaroce-net-device.h"
#include "ns3/metaroce-switch.h"
#include "ns3/metaroce-topology-helper.h"
#include "ns3/node.h"
#include "ns3/random-variable-stream.h"
#include "ns3/rng-seed-manager.h"
#include "ns3/simulator.h"
#include "ns3/uinteger.h"

#include <gtest/gtest.h>
#include <map>
#include <memory>
#include <set>
#include <vector>

using namespace ns3;

namespace
{

class MetaRoceSwitchTest : public ::testing::Test
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

/// Parses a forwarded frame.
metaroce::ParsedFrame
Parse(Ptr<const Packet> frame)
{
    uint8_t headers[METAROCE_HEADER_PEEK_SIZE];
    metaroce::ParsedFrame parsed;
    EXPECT_EQ(MetaRocePeekFrame(frame, headers, parsed), metaroce::FrameStatus::OK);
    return parsed;
}

/// What a switch forwarded: source port -> egress ports.
struct ForwardLog
{
    Ptr<MetaRoceSwitch> sw;
    std::map<uint16_t, std::set<uint32_t>> portsBySource;
    std::map<uint32_t, uint64_t> framesByPort;

    void Attach(Ptr<MetaRoceSwitch> s)
    {
        sw = s;
        s->TraceConnectWithoutContext("Forward", MakeCallback(&ForwardLog::Forward, this));
    }

    void Forward(Ptr<const Packet> frame, uint32_t, uint32_t outPort, uint8_t)
    {
        portsBySource[Parse(frame).meta.srcPort].insert(outPort);
        ++framesByPort[outPort];
    }
};

TEST_F(MetaRoceSwitchTest, EcmpSpreadsSourcePortsAndPinsEachFlow)
{
    MetaRoceTopologyHelper topo;
    // 2 leaves x 4 hosts, no oversubscription: 4 spines, 4 equal-cost uplinks per leaf.
    Ptr<MetaRoceFabric> fabric = topo.BuildLeafSpine(2, 4, 1.0);
    ASSERT_EQ(fabric->GetSwitchCount(), 6U);
    metaroce_test::Sink sink;
    sink.Attach(fabric->GetHostPorts(4)[0]);
    metaroce_test::Blaster blaster(fabric->GetHostPorts(0)[0],
                                   fabric->GetHostAddress(0),
                                   fabric->GetHostAddress(4));
    std::vector<uint16_t> sourcePorts;
    for (uint16_t p = 0; p < 64; ++p)
    {
        sourcePorts.push_back(static_cast<uint16_t>(49152 + p));
    }
    blaster.SetSourcePorts(sourcePorts);
    blaster.SetFrames(64 * 8); // 8 frames per source port, round robin
    blaster.SetPayload(500);
    ForwardLog leaf;
    leaf.Attach(fabric->GetSwitch(0));
    std::vector<std::unique_ptr<ForwardLog>> spines;
    for (uint32_t s = 2; s < 6; ++s)
    {
        spines.push_back(std::make_unique<ForwardLog>());
        spines.back()->Attach(fabric->GetSwitch(s));
    }
    blaster.Start(MicroSeconds(1));
    Simulator::Run();

    EXPECT_EQ(sink.frames, 64U * 8);
    // Each 5-tuple took exactly one uplink at the leaf...
    ASSERT_EQ(leaf.portsBySource.size(), 64U);
    for (const auto& [port, uplinks] : leaf.portsBySource)
    {
        EXPECT_EQ(uplinks.size(), 1U) << "source port " << port;
    }
    // ...and crossed exactly one spine.
    std::map<uint16_t, int> spinesBySource;
    for (const auto& spine : spines)
    {
        for (const auto& [port, ports] : spine->portsBySource)
        {
            ++spinesBySource[port];
        }
    }
    for (const auto& [port, count] : spinesBySource)
    {
        EXPECT_EQ(count, 1) << "source port " << port;
    }
    // All four uplinks (ports 4-7 of the leaf) carry traffic, none more than half of it.
    ASSERT_EQ(leaf.framesByPort.size(), 4U);
    for (const auto& [port, frames] : leaf.framesByPort)
    {
        EXPECT_GE(port, 4U);
        EXPECT_GT(frames, 0U);
        EXPECT_LT(frames, 64U * 8 / 2);
    }
    // Four hops of TTL: leaf, spine, leaf.
    EXPECT_EQ(sink.ttls.front(), 61);
}

TEST_F(MetaRoceSwitchTest, EcmpHashIsSaltedPerSwitch)
{
    MetaRoceTopologyHelper topo;
    Ptr<MetaRoceFabric> fabric = topo.BuildLeafSpine(2, 4, 1.0);
    metaroce::DatagramMeta meta;
    meta.srcIp = fabric->GetHostAddress(0);
    meta.dstIp = fabric->GetHostAddress(4);
    int differ = 0;
    for (uint16_t p = 0; p < 100; ++p)
    {
        meta.srcPort = static_cast<uint16_t>(1000 + p);
        const uint64_t h0 = fabric->GetSwitch(0)->HashFiveTuple(meta);
        EXPECT_EQ(h0, fabric->GetSwitch(0)->HashFiveTuple(meta));
        differ += (h0 % 4) != (fabric->GetSwitch(1)->HashFiveTuple(meta) % 4);
    }
    EXPECT_GT(differ, 50); // two switches choose independently (no polarization)
    fabric->GetSwitch(0)->SetAttribute("EcmpSalt", UintegerValue(12345));
    meta.srcPort = 1000;
    EXPECT_NE(fabric->GetSwitch(0)->HashFiveTuple(meta), fabric->GetSwitch(1)->HashFiveTuple(meta));
}

/// Observes every frame a switch forwards, with the egress queue depth before it.
struct EcnLog
{
    Ptr<MetaRoceSwitch> sw;
    uint32_t ectSource;
    uint64_t markedAtOrBelowKmin{0};
    uint64_t marked{0};
    uint64_t unmarkedAboveKmax{0};
    uint64_t notEctMarked{0};
    uint64_t forwarded{0};
    uint64_t maxDepth{0};
    uint64_t kmin;
    uint64_t kmax;
    std::vector<uint64_t> markTraceDepths;

    void Forward(Ptr<const Packet> frame, uint32_t, uint32_t outPort, uint8_t priority)
    {
        const uint64_t depth = sw->GetPort(outPort)->GetQueueBytes(priority);
        const metaroce::ParsedFrame parsed = Parse(frame);
        const bool ce = parsed.meta.ecn == metaroce::Ecn::CE;
        ++forwarded;
        maxDepth = std::max(maxDepth, depth);
        if (parsed.meta.srcIp != ectSource)
        {
            notEctMarked += ce;
            return;
        }
        marked += ce;
        if (ce && depth <= kmin)
        {
            ++markedAtOrBelowKmin;
        }
        if (!ce && depth > kmax)
        {
            ++unmarkedAboveKmax;
        }
    }

    void Mark(Ptr<const Packet>, uint32_t, uint64_t depth)
    {
        markTraceDepths.push_back(depth);
    }
};

/// Two senders at line rate into one receiver through one switch; returns the log.
void
RunEcnIncast(uint64_t kmin, uint64_t kmax, double pmax, EcnLog& log, metaroce_test::Sink& sink)
{
    MetaRoceTopologyHelper topo;
    topo.SetBuffer(MetaRoceSwitch::DEEP);
    topo.SetEcn(true, kmin, kmax, pmax);
    Ptr<MetaRoceFabric> fabric = topo.BuildSingleSwitch(3);
    fabric->AssignStreams(1);
    log.sw = fabric->GetSwitch(0);
    log.kmin = kmin;
    log.kmax = kmax;
    log.ectSource = fabric->GetHostAddress(0);
    log.sw->TraceConnectWithoutContext("Forward", MakeCallback(&EcnLog::Forward, &log));
    log.sw->TraceConnectWithoutContext("EcnMark", MakeCallback(&EcnLog::Mark, &log));
    sink.Attach(fabric->GetHostPorts(2)[0]);
    metaroce_test::Blaster ect(fabric->GetHostPorts(0)[0],
                               fabric->GetHostAddress(0),
                               fabric->GetHostAddress(2));
    metaroce_test::Blaster notEct(fabric->GetHostPorts(1)[0],
                                  fabric->GetHostAddress(1),
                                  fabric->GetHostAddress(2));
    notEct.SetEcn(metaroce::Ecn::NOT_ECT);
    for (metaroce_test::Blaster* b : {&ect, &notEct})
    {
        b->SetFrames(400);
        b->SetPayload(1000);
        b->Start(MicroSeconds(1));
    }
    Simulator::Run();
}

TEST_F(MetaRoceSwitchTest, RedEcnMarksOnlyAboveKmin)
{
    EcnLog log;
    metaroce_test::Sink sink;
    RunEcnIncast(40000, 160000, 0.5, log, sink);
    EXPECT_EQ(sink.frames, 800U);
    EXPECT_GT(log.maxDepth, 160000U); // the queue crossed the whole RED ramp
    EXPECT_GT(log.marked, 0U);
    EXPECT_EQ(log.markedAtOrBelowKmin, 0U);
    EXPECT_EQ(log.unmarkedAboveKmax, 0U);
    EXPECT_EQ(log.notEctMarked, 0U);
    EXPECT_EQ(sink.notEctFrames, 400U); // Not-ECT frames arrive Not-ECT
    EXPECT_EQ(sink.ceFrames, log.marked);
    EXPECT_EQ(log.sw->GetCounters().ecnMarked, log.marked);
    ASSERT_EQ(log.markTraceDepths.size(), log.marked);
    for (uint64_t depth : log.markTraceDepths)
    {
        EXPECT_GT(depth, 40000U);
    }
}

TEST_F(MetaRoceSwitchTest, StepEcnMarksExactlyAboveK)
{
    EcnLog log;
    metaroce_test::Sink sink;
    RunEcnIncast(50000, 50000, 1.0, log, sink);
    EXPECT_GT(log.marked, 0U);
    EXPECT_EQ(log.markedAtOrBelowKmin, 0U);
    EXPECT_EQ(log.unmarkedAboveKmax, 0U); // step: everything above K is marked
    EXPECT_EQ(log.notEctMarked, 0U);
}

/// N senders at line rate into one receiver; returns (delivered, switch counters).
struct IncastResult
{
    uint64_t delivered{0};
    MetaRoceSwitch::Counters counters;
    uint64_t maxBufferUsed{0};
    uint64_t senderPausesReceived{0};
};

void
TrackMax(uint64_t* max, uint64_t, uint64_t now)
{
    *max = std::max(*max, now);
}

IncastResult
RunIncast(bool pfc, uint32_t senders, uint32_t framesEach)
{
    MetaRoceTopologyHelper topo;
    topo.SetBuffer(MetaRoceSwitch::SHALLOW, 1000000);
    topo.SetEcn(false, 0, 0, 0);
    topo.SetPfc(pfc);
    Ptr<MetaRoceFabric> fabric = topo.BuildSingleSwitch(senders + 1);
    fabric->AssignStreams(1);
    IncastResult result;
    Ptr<MetaRoceSwitch> sw = fabric->GetSwitch(0);
    sw->TraceConnectWithoutContext("BufferBytes",
                                   MakeBoundCallback(&TrackMax, &result.maxBufferUsed));
    metaroce_test::Sink sink;
    sink.Attach(fabric->GetHostPorts(senders)[0]);
    std::vector<std::unique_ptr<metaroce_test::Blaster>> blasters;
    for (uint32_t i = 0; i < senders; ++i)
    {
        blasters.push_back(
            std::make_unique<metaroce_test::Blaster>(fabric->GetHostPorts(i)[0],
                                                     fabric->GetHostAddress(i),
                                                     fabric->GetHostAddress(senders)));
        blasters.back()->SetFrames(framesEach);
        blasters.back()->SetPayload(1000);
        blasters.back()->Start(MicroSeconds(1));
    }
    Simulator::Run();
    result.delivered = sink.frames;
    result.counters = sw->GetCounters();
    for (uint32_t i = 0; i < senders; ++i)
    {
        result.senderPausesReceived += fabric->GetHostPorts(i)[0]->GetCounters().pauseReceived;
    }
    EXPECT_EQ(sw->GetBufferUsed(), 0U); // everything charged was released
    return result;
}

/// A trace sink that does nothing (its presence makes the device write pending rewrites).
void
IgnoreFrame(Ptr<const Packet>)
{
}

/// Every byte of every frame host 2 receives, in order.
struct ByteLog
{
    std::vector<std::vector<uint8_t>> frames;

    void Receive(Ptr<MetaRoceNetDevice>, Ptr<Packet> frame)
    {
        frames.emplace_back(frame->GetSize());
        frame->CopyData(frames.back().data(), frame->GetSize());
    }
};

/// Two senders on leaf 0 into host 2 on leaf 1 (three switch hops, ECN marks at the last);
/// with \p traceEveryPort a MacRx sink on every switch port makes each hop write its
/// rewrites into the bytes at once, as every hop did before the frame record.
std::vector<std::vector<uint8_t>>
RunThreeHops(bool traceEveryPort)
{
    MetaRoceTopologyHelper topo;
    topo.SetEcn(true, 2000, 20000, 0.5);
    Ptr<MetaRoceFabric> fabric = topo.BuildLeafSpine(2, 2, 1.0);
    fabric->AssignStreams(1);
    if (traceEveryPort)
    {
        for (uint32_t s = 0; s < fabric->GetSwitchCount(); ++s)
        {
            for (uint32_t p = 0; p < fabric->GetSwitch(s)->GetNPorts(); ++p)
            {
                fabric->GetSwitch(s)->GetPort(p)->TraceConnectWithoutContext(
                    "MacRx",
                    MakeCallback(&IgnoreFrame));
            }
        }
    }
    ByteLog log;
    fabric->GetHostPorts(2)[0]->SetFrameReceiveCallback(MakeCallback(&ByteLog::Receive, &log));
    metaroce_test::Blaster a(fabric->GetHostPorts(0)[0],
                             fabric->GetHostAddress(0),
                             fabric->GetHostAddress(2));
    metaroce_test::Blaster b(fabric->GetHostPorts(1)[0],
                             fabric->GetHostAddress(1),
                             fabric->GetHostAddress(2));
    for (metaroce_test::Blaster* blaster : {&a, &b})
    {
        blaster->SetSourcePorts({1000, 1001, 1002, 1003});
        blaster->SetFrames(300);
        blaster->SetPayload(1000);
        blaster->Start(MicroSeconds(1));
    }
    Simulator::Run();
    Simulator::Destroy();
    return log.frames;
}

// Issue 20: a switch hop adds its TTL, CE and MAC rewrites to the frame's record and the bytes
// get them when something reads them; the bytes a receiver sees are those of a run in which
// every hop wrote them at once.
TEST_F(MetaRoceSwitchTest, DeferredRewritesGiveTheSameBytesAsRewritingEveryHop)
{
    const std::vector<std::vector<uint8_t>> deferred = RunThreeHops(false);
    const std::vector<std::vector<uint8_t>> everyHop = RunThreeHops(true);
    ASSERT_EQ(deferred.size(), 600u);
    size_t marked = 0;
    for (const std::vector<uint8_t>& frame : deferred)
    {
        const uint8_t* ip = frame.data() + metaroce::ETHERNET_HEADER_SIZE;
        marked += (ip[metaroce::IPV4_TOS_OFFSET] & 3) == 3;
        EXPECT_EQ(ip[metaroce::IPV4_TTL_OFFSET], metaroce::IPV4_CANONICAL_TTL - 3);
        EXPECT_EQ(metaroce::InternetChecksum(ip, metaroce::IPV4_HEADER_SIZE), 0);
    }
    EXPECT_GT(marked, 0u);
    EXPECT_LT(marked, deferred.size());
    EXPECT_TRUE(deferred == everyHop);
}

TEST_F(MetaRoceSwitchTest, PfcStopsSendersBeforeTheBufferOverflows)
{
    const IncastResult lossless = RunIncast(true, 4, 2000);
    EXPECT_EQ(lossless.delivered, 8000U);
    EXPECT_EQ(lossless.counters.TotalDrops(), 0U);
    EXPECT_GT(lossless.counters.pfcPauseSent, 0U);
    EXPECT_GT(lossless.counters.pfcResumeSent, 0U);
    EXPECT_GT(lossless.senderPausesReceived, 0U);
    EXPECT_LT(lossless.maxBufferUsed, 1000000U);
}

TEST_F(MetaRoceSwitchTest, WithoutPfcTheIncastDrops)
{
    const IncastResult lossy = RunIncast(false, 4, 2000);
    EXPECT_LT(lossy.delivered, 8000U);
    EXPECT_GT(lossy.counters.Drops(MetaRoceDropReason::QUEUE_THRESHOLD) +
                  lossy.counters.Drops(MetaRoceDropReason::BUFFER_FULL),
              0U);
    EXPECT_EQ(lossy.delivered + lossy.counters.TotalDrops(), 8000U);
    EXPECT_EQ(lossy.counters.pfcPauseSent, 0U);
    EXPECT_EQ(lossy.senderPausesReceived, 0U);
}

TEST_F(MetaRoceSwitchTest, FailedLinkIsRoutedAroundAfterReconvergence)
{
    MetaRoceTopologyHelper topo;
    Ptr<MetaRoceFabric> fabric = topo.BuildLeafSpine(2, 2, 1.0); // 2 spines
    ASSERT_EQ(fabric->GetSwitchCount(), 4U);
    Ptr<Node> leaf1 = fabric->GetSwitchNode(1);
    Ptr<Node> spine0 = fabric->GetSwitchNode(2);
    // The far leaf's link to spine 0 fails at 10 us and comes back at 2 ms.
    topo.FailLink(leaf1, spine0, MicroSeconds(10), MilliSeconds(2));
    metaroce_test::Sink sink;
    sink.Attach(fabric->GetHostPorts(2)[0]);
    metaroce_test::Blaster blaster(fabric->GetHostPorts(0)[0],
                                   fabric->GetHostAddress(0),
                                   fabric->GetHostAddress(2));
    std::vector<uint16_t> ports;
    for (uint16_t p = 0; p < 32; ++p)
    {
        ports.push_back(static_cast<uint16_t>(50000 + p));
    }
    blaster.SetSourcePorts(ports);
    blaster.SetFrames(2000);
    blaster.SetPayload(1000);
    // New traffic after reconvergence (default delay 100 us): 2000 frames ~ 170 us.
    blaster.Start(MicroSeconds(200));
    ForwardLog leaf0;
    leaf0.Attach(fabric->GetSwitch(0));
    Simulator::Run();

    EXPECT_EQ(sink.frames, 2000U);
    uint64_t drops = 0;
    for (uint32_t s = 0; s < fabric->GetSwitchCount(); ++s)
    {
        drops += fabric->GetSwitch(s)->GetCounters().TotalDrops();
    }
    EXPECT_EQ(drops, 0U);
    // Initial computation, after the failure, after the recovery.
    EXPECT_EQ(fabric->GetRouteComputations(), 3U);
    // The source leaf sent nothing towards spine 0 (its port 2) while the far link was down.
    EXPECT_EQ(leaf0.framesByPort.count(2), 0U);
    EXPECT_EQ(leaf0.framesByPort[3], 2000U);
}

TEST_F(MetaRoceSwitchTest, FailureBeforeReconvergenceDropsAtTheDeadEnd)
{
    MetaRoceTopologyHelper topo;
    topo.SetFabricAttribute("ReconvergenceDelay", TimeValue(Time::Max()));
    Ptr<MetaRoceFabric> fabric = topo.BuildLeafSpine(2, 2, 1.0);
    topo.FailLink(fabric->GetSwitchNode(1),
                  fabric->GetSwitchNode(2),
                  MicroSeconds(10),
                  Time::Max());
    metaroce_test::Sink sink;
    sink.Attach(fabric->GetHostPorts(2)[0]);
    metaroce_test::Blaster blaster(fabric->GetHostPorts(0)[0],
                                   fabric->GetHostAddress(0),
                                   fabric->GetHostAddress(2));
    std::vector<uint16_t> ports;
    for (uint16_t p = 0; p < 32; ++p)
    {
        ports.push_back(static_cast<uint16_t>(50000 + p));
    }
    blaster.SetSourcePorts(ports);
    blaster.SetFrames(320);
    blaster.SetPayload(1000);
    blaster.Start(MicroSeconds(50));
    Simulator::Run();
    // Without reconvergence the source leaf still hashes some flows to spine 0, which has
    // no live way down: those frames are dropped there as LINK_DOWN.
    const uint64_t dead = fabric->GetSwitch(2)->GetCounters().Drops(MetaRoceDropReason::LINK_DOWN);
    EXPECT_GT(dead, 0U);
    EXPECT_EQ(sink.frames + dead, 320U);
    EXPECT_EQ(fabric->GetRouteComputations(), 1U);
}

TEST_F(MetaRoceSwitchTest, LocalUplinkFailureIsRepairedAtOnce)
{
    MetaRoceTopologyHelper topo;
    topo.SetFabricAttribute("ReconvergenceDelay", TimeValue(Time::Max()));
    Ptr<MetaRoceFabric> fabric = topo.BuildLeafSpine(2, 4, 1.0); // 4 spines
    // The source leaf's own uplink to spine 0 fails: ECMP skips the dead member at once.
    topo.FailLink(fabric->GetSwitchNode(0),
                  fabric->GetSwitchNode(2),
                  MicroSeconds(10),
                  Time::Max());
    metaroce_test::Sink sink;
    sink.Attach(fabric->GetHostPorts(4)[0]);
    metaroce_test::Blaster blaster(fabric->GetHostPorts(0)[0],
                                   fabric->GetHostAddress(0),
                                   fabric->GetHostAddress(4));
    std::vector<uint16_t> ports;
    for (uint16_t p = 0; p < 64; ++p)
    {
        ports.push_back(static_cast<uint16_t>(40000 + p));
    }
    blaster.SetSourcePorts(ports);
    blaster.SetFrames(640);
    blaster.SetPayload(1000);
    blaster.Start(MicroSeconds(20));
    ForwardLog leaf0;
    leaf0.Attach(fabric->GetSwitch(0));
    Simulator::Run();
    EXPECT_EQ(sink.frames, 640U);
    EXPECT_EQ(leaf0.framesByPort.count(4), 0U); // port 4 = uplink to spine 0
    EXPECT_EQ(leaf0.framesByPort.size(), 3U);
    for (const auto& [port, uplinks] : leaf0.portsBySource)
    {
        EXPECT_EQ(uplinks.size(), 1U);
    }
}

TEST_F(MetaRoceSwitchTest, RandomAndMutatedFramesAreCountedNeverCrash)
{
    MetaRoceTopologyHelper topo;
    Ptr<MetaRoceFabric> fabric = topo.BuildSingleSwitch(2);
    metaroce_test::Sink sink;
    sink.Attach(fabric->GetHostPorts(1)[0]);
    Ptr<MetaRoceNetDevice> port = fabric->GetHostPorts(0)[0];
    Ptr<UniformRandomVariable> random = CreateObject<UniformRandomVariable>();
    random->SetStream(42);
    const uint32_t dst = fabric->GetHostAddress(1);
    Simulator::Schedule(MicroSeconds(1), [&]() {
        for (uint32_t i = 0; i < 3000; ++i)
        {
            uint8_t bytes[300];
            uint32_t size;
            if (i % 2 == 0)
            {
                // Random bytes, sometimes with an IPv4 EtherType and version nibble.
                size = random->GetInteger(0, sizeof(bytes));
                for (uint32_t b = 0; b < size; ++b)
                {
                    bytes[b] = static_cast<uint8_t>(random->GetInteger(0, 255));
                }
                if (size > 15 && i % 4 == 0)
                {
                    bytes[12] = 0x08;
                    bytes[13] = 0x00;
                    bytes[14] = 0x45;
                }
            }
            else
            {
                // A valid frame with one to three header bytes changed, maybe truncated.
                size = metaroce_test::MakeFrame(1, dst, uint16_t(i), 200)->CopyData(bytes, 300);
                for (uint32_t m = random->GetInteger(1, 3); m > 0; --m)
                {
                    bytes[random->GetInteger(0, 45)] =
                        static_cast<uint8_t>(random->GetInteger(0, 255));
                }
                if (i % 5 == 1)
                {
                    size = random->GetInteger(0, size);
                }
            }
            port->Enqueue(Create<Packet>(bytes, size), 3);
        }
    });
    Simulator::Run();
    Ptr<MetaRoceSwitch> sw = fabric->GetSwitch(0);
    const MetaRoceSwitch::Counters& c = sw->GetCounters();
    const MetaRoceNetDevice::Counters& ingress = sw->GetPort(0)->GetCounters();
    // Every frame the switch logic saw was either forwarded or dropped with a cause...
    EXPECT_EQ(c.rxFrames, c.enqueuedFrames + c.TotalDrops());
    EXPECT_GT(c.Drops(MetaRoceDropReason::MALFORMED), 1000U);
    // ...and every frame sent reached the port: runts (< 14 bytes) are MAC-level MALFORMED
    // drops, MAC control frames (random bytes can spell 0x8808) stop at the MAC, the rest
    // reach the switch logic.
    EXPECT_EQ(port->GetCounters().txFrames, 3000U);
    EXPECT_GE(ingress.rxFrames + ingress.drops[uint32_t(MetaRoceDropReason::MALFORMED)], 3000U);
    EXPECT_LE(c.rxFrames, ingress.rxFrames);
    EXPECT_EQ(sink.frames + sink.malformed, c.enqueuedFrames);
    EXPECT_EQ(sink.malformed, 0U); // what the switch forwards always parses
}

} // namespace
