/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

/**
 * \file
 * ns-3 system tests of MetaRoceSwitch in small fabrics: ECMP spreading and salting, RED and
 * step ECN marking, deferred header rewrites, PFC against an incast, link failure with and
 * without reconvergence, and random or mutated frames. They run in an ns-3 tree
 * (./test.py -s metaroce-switch) and in the standalone build (ctest -R ns3-suite.metaroce-switch).
 */

#include "metaroce-seeded-test-case.h"
#include "metaroce-test-traffic.h"

#include "ns3/metaroce-channel.h"
#include "ns3/metaroce-fabric.h"
#include "ns3/metaroce-net-device.h"
#include "ns3/metaroce-switch.h"
#include "ns3/metaroce-topology-helper.h"
#include "ns3/node.h"
#include "ns3/random-variable-stream.h"
#include "ns3/simulator.h"
#include "ns3/test.h"
#include "ns3/uinteger.h"

#include <algorithm>
#include <map>
#include <memory>
#include <set>
#include <tuple>
#include <vector>

using namespace ns3;
using metaroce_test::SeededTestCase;

namespace
{

/// Frames a Parse() call could not parse (each test expects none).
uint64_t g_unparsed = 0;

/// Parses a forwarded frame (counting a failure in g_unparsed).
metaroce::ParsedFrame
Parse(Ptr<const Packet> frame)
{
    uint8_t headers[METAROCE_HEADER_PEEK_SIZE];
    metaroce::ParsedFrame parsed;
    if (MetaRocePeekFrame(frame, headers, parsed) != metaroce::FrameStatus::OK)
    {
        ++g_unparsed;
    }
    return parsed;
}

/// What a switch forwarded: source port -> egress ports.
struct ForwardLog
{
    Ptr<MetaRoceSwitch> sw;                               //!< the switch
    std::map<uint16_t, std::set<uint32_t>> portsBySource; //!< egress ports by source port
    std::map<uint32_t, uint64_t> framesByPort;            //!< frames by egress port

    /// Watch \p s.
    void Attach(Ptr<MetaRoceSwitch> s)
    {
        sw = s;
        s->TraceConnectWithoutContext("Forward", MakeCallback(&ForwardLog::Forward, this));
    }

    /// The Forward trace.
    void Forward(Ptr<const Packet> frame, uint32_t, uint32_t outPort, uint8_t)
    {
        portsBySource[Parse(frame).meta.srcPort].insert(outPort);
        ++framesByPort[outPort];
    }
};

/// \return \p count source ports from \p first on
std::vector<uint16_t>
SourcePorts(uint16_t first, uint16_t count)
{
    std::vector<uint16_t> ports;
    for (uint16_t p = 0; p < count; ++p)
    {
        ports.push_back(static_cast<uint16_t>(first + p));
    }
    return ports;
}

/// Start a blast from host \p from to host \p to, counted by \p sink. \return the blaster.
std::unique_ptr<metaroce_test::Blaster>
Blast(Ptr<MetaRoceFabric> fabric,
      uint32_t from,
      uint32_t to,
      std::vector<uint16_t> sourcePorts,
      uint32_t frames,
      uint32_t payload,
      Time start,
      metaroce_test::Sink& sink)
{
    sink.Attach(fabric->GetHostPorts(to)[0]);
    auto blaster = std::make_unique<metaroce_test::Blaster>(fabric->GetHostPorts(from)[0],
                                                            fabric->GetHostAddress(from),
                                                            fabric->GetHostAddress(to));
    blaster->SetSourcePorts(std::move(sourcePorts));
    blaster->SetFrames(frames);
    blaster->SetPayload(payload);
    blaster->Start(start);
    return blaster;
}

/// Observes every frame a switch forwards, with the egress queue depth before it.
struct EcnLog
{
    Ptr<MetaRoceSwitch> sw;                //!< the switch
    uint32_t ectSource{0};                 //!< the ECN-capable sender's address
    uint64_t markedAtOrBelowKmin{0};       //!< marks at a depth <= Kmin
    uint64_t marked{0};                    //!< marks of the ECN-capable sender's frames
    uint64_t unmarkedAboveKmax{0};         //!< frames not marked at a depth > Kmax
    uint64_t notEctMarked{0};              //!< Not-ECT frames marked
    uint64_t forwarded{0};                 //!< frames forwarded
    uint64_t maxDepth{0};                  //!< largest depth seen
    uint64_t kmin{0};                      //!< Kmin
    uint64_t kmax{0};                      //!< Kmax
    std::vector<uint64_t> markTraceDepths; //!< depths the EcnMark trace gave

    /// The Forward trace.
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

    /// The EcnMark trace.
    void Mark(Ptr<const Packet>, uint32_t, uint64_t depth)
    {
        markTraceDepths.push_back(depth);
    }
};

/// Two senders at line rate into one receiver through one switch (one of them Not-ECT).
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

/// What an incast through one switch gave.
struct IncastResult
{
    uint64_t delivered{0};             //!< frames the receiver got
    MetaRoceSwitch::Counters counters; //!< the switch's counters
    uint64_t maxBufferUsed{0};         //!< the switch's largest buffer use
    uint64_t bufferUsedAtEnd{0};       //!< its buffer use at the end (0: all released)
    uint64_t senderPausesReceived{0};  //!< pauses the senders received
};

void
TrackMax(uint64_t* max, uint64_t, uint64_t now)
{
    *max = std::max(*max, now);
}

/// \p senders senders at line rate into one receiver, \p framesEach frames each.
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
    result.bufferUsedAtEnd = sw->GetBufferUsed();
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
    std::vector<std::vector<uint8_t>> frames; //!< the frames

    /// The frame receive callback.
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

} // namespace

/**
 * \ingroup metaroce-tests
 * ECMP spreads source ports over the uplinks and pins each 5-tuple to one path.
 */
class MetaRoceEcmpSpreadTestCase : public SeededTestCase
{
  public:
    MetaRoceEcmpSpreadTestCase()
        : SeededTestCase("ECMP spreads source ports and pins each flow")
    {
    }

  private:
    void DoRun() override
    {
        g_unparsed = 0;
        MetaRoceTopologyHelper topo;
        // 2 leaves x 4 hosts, no oversubscription: 4 spines, 4 equal-cost uplinks per leaf.
        Ptr<MetaRoceFabric> fabric = topo.BuildLeafSpine(2, 4, 1.0);
        NS_TEST_ASSERT_MSG_EQ(fabric->GetSwitchCount(), 6U, "switches");
        metaroce_test::Sink sink;
        // 8 frames per source port, round robin.
        auto blaster =
            Blast(fabric, 0, 4, SourcePorts(49152, 64), 64 * 8, 500, MicroSeconds(1), sink);
        ForwardLog leaf;
        leaf.Attach(fabric->GetSwitch(0));
        std::vector<std::unique_ptr<ForwardLog>> spines;
        for (uint32_t s = 2; s < 6; ++s)
        {
            spines.push_back(std::make_unique<ForwardLog>());
            spines.back()->Attach(fabric->GetSwitch(s));
        }
        Simulator::Run();

        NS_TEST_EXPECT_MSG_EQ(g_unparsed, 0U, "every forwarded frame parses");
        NS_TEST_EXPECT_MSG_EQ(sink.frames, 64U * 8, "delivered");
        // Each 5-tuple took exactly one uplink at the leaf...
        NS_TEST_ASSERT_MSG_EQ(leaf.portsBySource.size(), 64U, "source ports at the leaf");
        for (const auto& [port, uplinks] : leaf.portsBySource)
        {
            NS_TEST_EXPECT_MSG_EQ(uplinks.size(), 1U, "source port " << port);
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
            NS_TEST_EXPECT_MSG_EQ(count, 1, "spines crossed by source port " << port);
        }
        // All four uplinks (ports 4-7 of the leaf) carry traffic, none more than half of it.
        NS_TEST_ASSERT_MSG_EQ(leaf.framesByPort.size(), 4U, "uplinks used");
        for (const auto& [port, frames] : leaf.framesByPort)
        {
            NS_TEST_EXPECT_MSG_GT_OR_EQ(port, 4U, "an uplink");
            NS_TEST_EXPECT_MSG_GT(frames, 0U, "uplink " << port);
            NS_TEST_EXPECT_MSG_LT(frames, 64U * 8 / 2, "uplink " << port);
        }
        NS_TEST_EXPECT_MSG_EQ(int(sink.ttls.front()), 61, "TTL after leaf, spine, leaf");
    }
};

/**
 * \ingroup metaroce-tests
 * The ECMP hash is stable per switch and salted per switch (no polarization).
 */
class MetaRoceEcmpSaltTestCase : public SeededTestCase
{
  public:
    MetaRoceEcmpSaltTestCase()
        : SeededTestCase("the ECMP hash is salted per switch")
    {
    }

  private:
    void DoRun() override
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
            NS_TEST_EXPECT_MSG_EQ(h0, fabric->GetSwitch(0)->HashFiveTuple(meta), "stable");
            differ += (h0 % 4) != (fabric->GetSwitch(1)->HashFiveTuple(meta) % 4);
        }
        NS_TEST_EXPECT_MSG_GT(differ, 50, "two switches choose independently");
        fabric->GetSwitch(0)->SetAttribute("EcmpSalt", UintegerValue(12345));
        meta.srcPort = 1000;
        NS_TEST_EXPECT_MSG_NE(fabric->GetSwitch(0)->HashFiveTuple(meta),
                              fabric->GetSwitch(1)->HashFiveTuple(meta),
                              "a set salt");
    }
};

/**
 * \ingroup metaroce-tests
 * RED ECN marks only above Kmin, always above Kmax, never Not-ECT frames; the EcnMark trace
 * and the counter agree with the marks.
 */
class MetaRoceRedEcnTestCase : public SeededTestCase
{
  public:
    MetaRoceRedEcnTestCase()
        : SeededTestCase("RED ECN marks only above Kmin")
    {
    }

  private:
    void DoRun() override
    {
        g_unparsed = 0;
        EcnLog log;
        metaroce_test::Sink sink;
        RunEcnIncast(40000, 160000, 0.5, log, sink);
        NS_TEST_EXPECT_MSG_EQ(g_unparsed, 0U, "every forwarded frame parses");
        NS_TEST_EXPECT_MSG_EQ(sink.frames, 800U, "delivered");
        NS_TEST_EXPECT_MSG_GT(log.maxDepth, 160000U, "the queue crossed the whole RED ramp");
        NS_TEST_EXPECT_MSG_GT(log.marked, 0U, "marks");
        NS_TEST_EXPECT_MSG_EQ(log.markedAtOrBelowKmin, 0U, "marks at or below Kmin");
        NS_TEST_EXPECT_MSG_EQ(log.unmarkedAboveKmax, 0U, "unmarked above Kmax");
        NS_TEST_EXPECT_MSG_EQ(log.notEctMarked, 0U, "Not-ECT marked");
        NS_TEST_EXPECT_MSG_EQ(sink.notEctFrames, 400U, "Not-ECT frames arrive Not-ECT");
        NS_TEST_EXPECT_MSG_EQ(sink.ceFrames, log.marked, "CE frames received");
        NS_TEST_EXPECT_MSG_EQ(log.sw->GetCounters().ecnMarked, log.marked, "the counter");
        NS_TEST_ASSERT_MSG_EQ(log.markTraceDepths.size(), log.marked, "the trace");
        for (uint64_t depth : log.markTraceDepths)
        {
            NS_TEST_EXPECT_MSG_GT(depth, 40000U, "a traced mark's depth");
        }
    }
};

/**
 * \ingroup metaroce-tests
 * Step ECN (Kmin = Kmax, Pmax 1) marks exactly the frames above K.
 */
class MetaRoceStepEcnTestCase : public SeededTestCase
{
  public:
    MetaRoceStepEcnTestCase()
        : SeededTestCase("step ECN marks exactly above K")
    {
    }

  private:
    void DoRun() override
    {
        g_unparsed = 0;
        EcnLog log;
        metaroce_test::Sink sink;
        RunEcnIncast(50000, 50000, 1.0, log, sink);
        NS_TEST_EXPECT_MSG_EQ(g_unparsed, 0U, "every forwarded frame parses");
        NS_TEST_EXPECT_MSG_GT(log.marked, 0U, "marks");
        NS_TEST_EXPECT_MSG_EQ(log.markedAtOrBelowKmin, 0U, "marks at or below K");
        NS_TEST_EXPECT_MSG_EQ(log.unmarkedAboveKmax, 0U, "step: everything above K is marked");
        NS_TEST_EXPECT_MSG_EQ(log.notEctMarked, 0U, "Not-ECT marked");
    }
};

/**
 * \ingroup metaroce-tests
 * Issue 20: a switch hop adds its TTL, CE and MAC rewrites to the frame's record and the bytes
 * get them when something reads them; the bytes a receiver sees are those of a run in which
 * every hop wrote them at once.
 */
class MetaRoceDeferredRewriteTestCase : public SeededTestCase
{
  public:
    MetaRoceDeferredRewriteTestCase()
        : SeededTestCase("deferred rewrites give the same bytes as rewriting every hop")
    {
    }

  private:
    void DoRun() override
    {
        const std::vector<std::vector<uint8_t>> deferred = RunThreeHops(false);
        const std::vector<std::vector<uint8_t>> everyHop = RunThreeHops(true);
        NS_TEST_ASSERT_MSG_EQ(deferred.size(), 600U, "frames");
        size_t marked = 0;
        for (const std::vector<uint8_t>& frame : deferred)
        {
            const uint8_t* ip = frame.data() + metaroce::ETHERNET_HEADER_SIZE;
            marked += (ip[metaroce::IPV4_TOS_OFFSET] & 3) == 3;
            NS_TEST_EXPECT_MSG_EQ(int(ip[metaroce::IPV4_TTL_OFFSET]),
                                  int(metaroce::IPV4_CANONICAL_TTL) - 3,
                                  "TTL after three hops");
            NS_TEST_EXPECT_MSG_EQ(metaroce::InternetChecksum(ip, metaroce::IPV4_HEADER_SIZE),
                                  0,
                                  "the IPv4 checksum verifies");
        }
        NS_TEST_EXPECT_MSG_GT(marked, 0U, "some frames marked");
        NS_TEST_EXPECT_MSG_LT(marked, deferred.size(), "not all frames marked");
        NS_TEST_EXPECT_MSG_EQ((deferred == everyHop), true, "the same bytes");
    }
};

/**
 * \ingroup metaroce-tests
 * With PFC the incast pauses the senders before the buffer overflows: nothing is dropped; and
 * without PFC it drops, every frame delivered or dropped once.
 */
class MetaRocePfcIncastTestCase : public SeededTestCase
{
  public:
    /// \param pfc with PFC
    explicit MetaRocePfcIncastTestCase(bool pfc)
        : SeededTestCase(pfc ? "PFC stops the senders before the buffer overflows"
                             : "without PFC the incast drops"),
          m_pfc(pfc)
    {
    }

  private:
    void DoRun() override
    {
        const IncastResult r = RunIncast(m_pfc, 4, 2000);
        NS_TEST_EXPECT_MSG_EQ(r.bufferUsedAtEnd, 0U, "everything charged was released");
        if (m_pfc)
        {
            NS_TEST_EXPECT_MSG_EQ(r.delivered, 8000U, "delivered");
            NS_TEST_EXPECT_MSG_EQ(r.counters.TotalDrops(), 0U, "drops");
            NS_TEST_EXPECT_MSG_GT(r.counters.pfcPauseSent, 0U, "pauses sent");
            NS_TEST_EXPECT_MSG_GT(r.counters.pfcResumeSent, 0U, "resumes sent");
            NS_TEST_EXPECT_MSG_GT(r.senderPausesReceived, 0U, "pauses received");
            NS_TEST_EXPECT_MSG_LT(r.maxBufferUsed, 1000000U, "the buffer never filled");
            return;
        }
        NS_TEST_EXPECT_MSG_LT(r.delivered, 8000U, "delivered");
        NS_TEST_EXPECT_MSG_GT(r.counters.Drops(MetaRoceDropReason::QUEUE_THRESHOLD) +
                                  r.counters.Drops(MetaRoceDropReason::BUFFER_FULL),
                              0U,
                              "buffer drops");
        NS_TEST_EXPECT_MSG_EQ(r.delivered + r.counters.TotalDrops(),
                              8000U,
                              "each frame delivered or dropped");
        NS_TEST_EXPECT_MSG_EQ(r.counters.pfcPauseSent, 0U, "pauses sent");
        NS_TEST_EXPECT_MSG_EQ(r.senderPausesReceived, 0U, "pauses received");
    }

    bool m_pfc; //!< with PFC
};

/**
 * \ingroup metaroce-tests
 * A failed link is routed around after reconvergence, without drops, and used again after it
 * comes back.
 */
class MetaRoceReconvergenceTestCase : public SeededTestCase
{
  public:
    MetaRoceReconvergenceTestCase()
        : SeededTestCase("a failed link is routed around after reconvergence")
    {
    }

  private:
    void DoRun() override
    {
        g_unparsed = 0;
        MetaRoceTopologyHelper topo;
        Ptr<MetaRoceFabric> fabric = topo.BuildLeafSpine(2, 2, 1.0); // 2 spines
        NS_TEST_ASSERT_MSG_EQ(fabric->GetSwitchCount(), 4U, "switches");
        Ptr<Node> leaf1 = fabric->GetSwitchNode(1);
        Ptr<Node> spine0 = fabric->GetSwitchNode(2);
        // The far leaf's link to spine 0 fails at 10 us and comes back at 2 ms.
        topo.FailLink(leaf1, spine0, MicroSeconds(10), MilliSeconds(2));
        metaroce_test::Sink sink;
        // New traffic after reconvergence (default delay 100 us): 2000 frames ~ 170 us.
        auto blaster =
            Blast(fabric, 0, 2, SourcePorts(50000, 32), 2000, 1000, MicroSeconds(200), sink);
        ForwardLog leaf0;
        leaf0.Attach(fabric->GetSwitch(0));
        Simulator::Run();

        NS_TEST_EXPECT_MSG_EQ(sink.frames, 2000U, "delivered");
        uint64_t drops = 0;
        for (uint32_t s = 0; s < fabric->GetSwitchCount(); ++s)
        {
            drops += fabric->GetSwitch(s)->GetCounters().TotalDrops();
        }
        NS_TEST_EXPECT_MSG_EQ(drops, 0U, "drops");
        NS_TEST_EXPECT_MSG_EQ(fabric->GetRouteComputations(),
                              3U,
                              "initial, after the failure, after the recovery");
        NS_TEST_EXPECT_MSG_EQ(leaf0.framesByPort.count(2),
                              0U,
                              "nothing towards spine 0 while the far link was down");
        NS_TEST_EXPECT_MSG_EQ(leaf0.framesByPort[3], 2000U, "all through spine 1");
        NS_TEST_EXPECT_MSG_EQ(g_unparsed, 0U, "every forwarded frame parses");
    }
};

/**
 * \ingroup metaroce-tests
 * Without reconvergence, frames hashed to a spine that has no live way down are dropped there
 * as LINK_DOWN.
 */
class MetaRoceDeadEndTestCase : public SeededTestCase
{
  public:
    MetaRoceDeadEndTestCase()
        : SeededTestCase("a failure before reconvergence drops at the dead end")
    {
    }

  private:
    void DoRun() override
    {
        MetaRoceTopologyHelper topo;
        topo.SetFabricAttribute("ReconvergenceDelay", TimeValue(Time::Max()));
        Ptr<MetaRoceFabric> fabric = topo.BuildLeafSpine(2, 2, 1.0);
        topo.FailLink(fabric->GetSwitchNode(1),
                      fabric->GetSwitchNode(2),
                      MicroSeconds(10),
                      Time::Max());
        metaroce_test::Sink sink;
        auto blaster =
            Blast(fabric, 0, 2, SourcePorts(50000, 32), 320, 1000, MicroSeconds(50), sink);
        Simulator::Run();
        const uint64_t dead =
            fabric->GetSwitch(2)->GetCounters().Drops(MetaRoceDropReason::LINK_DOWN);
        NS_TEST_EXPECT_MSG_GT(dead, 0U, "dropped at spine 0");
        NS_TEST_EXPECT_MSG_EQ(sink.frames + dead, 320U, "delivered or dropped there");
        NS_TEST_EXPECT_MSG_EQ(fabric->GetRouteComputations(), 1U, "no reconvergence");
    }
};

/**
 * \ingroup metaroce-tests
 * A switch's own failed uplink is left out of ECMP at once, without reconvergence.
 */
class MetaRoceLocalUplinkTestCase : public SeededTestCase
{
  public:
    MetaRoceLocalUplinkTestCase()
        : SeededTestCase("a local uplink failure is repaired at once")
    {
    }

  private:
    void DoRun() override
    {
        g_unparsed = 0;
        MetaRoceTopologyHelper topo;
        topo.SetFabricAttribute("ReconvergenceDelay", TimeValue(Time::Max()));
        Ptr<MetaRoceFabric> fabric = topo.BuildLeafSpine(2, 4, 1.0); // 4 spines
        // The source leaf's own uplink to spine 0 fails: ECMP skips the dead member at once.
        topo.FailLink(fabric->GetSwitchNode(0),
                      fabric->GetSwitchNode(2),
                      MicroSeconds(10),
                      Time::Max());
        metaroce_test::Sink sink;
        auto blaster =
            Blast(fabric, 0, 4, SourcePorts(40000, 64), 640, 1000, MicroSeconds(20), sink);
        ForwardLog leaf0;
        leaf0.Attach(fabric->GetSwitch(0));
        Simulator::Run();
        NS_TEST_EXPECT_MSG_EQ(sink.frames, 640U, "delivered");
        NS_TEST_EXPECT_MSG_EQ(leaf0.framesByPort.count(4), 0U, "port 4 = uplink to spine 0");
        NS_TEST_EXPECT_MSG_EQ(leaf0.framesByPort.size(), 3U, "the other three uplinks");
        for (const auto& [port, uplinks] : leaf0.portsBySource)
        {
            NS_TEST_EXPECT_MSG_EQ(uplinks.size(), 1U, "source port " << port);
        }
        NS_TEST_EXPECT_MSG_EQ(g_unparsed, 0U, "every forwarded frame parses");
    }
};

/**
 * \ingroup metaroce-tests
 * Random bytes and mutated or truncated valid frames are counted and dropped with a cause,
 * never crash, and what the switch forwards always parses.
 */
class MetaRoceRandomFramesTestCase : public SeededTestCase
{
  public:
    MetaRoceRandomFramesTestCase()
        : SeededTestCase("random and mutated frames are counted, never crash")
    {
    }

  private:
    void DoRun() override
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
        NS_TEST_EXPECT_MSG_EQ(c.rxFrames, c.enqueuedFrames + c.TotalDrops(), "accounted");
        NS_TEST_EXPECT_MSG_GT(c.Drops(MetaRoceDropReason::MALFORMED), 1000U, "malformed");
        // ...and every frame sent reached the port: runts (< 14 bytes) are MAC-level MALFORMED
        // drops, MAC control frames (random bytes can spell 0x8808) stop at the MAC, the rest
        // reach the switch logic.
        NS_TEST_EXPECT_MSG_EQ(port->GetCounters().txFrames, 3000U, "sent");
        NS_TEST_EXPECT_MSG_GT_OR_EQ(ingress.rxFrames +
                                        ingress.drops[uint32_t(MetaRoceDropReason::MALFORMED)],
                                    3000U,
                                    "reached the port");
        NS_TEST_EXPECT_MSG_LT_OR_EQ(c.rxFrames, ingress.rxFrames, "reached the switch logic");
        NS_TEST_EXPECT_MSG_EQ(sink.frames + sink.malformed, c.enqueuedFrames, "forwarded");
        NS_TEST_EXPECT_MSG_EQ(sink.malformed, 0U, "what the switch forwards always parses");
    }
};

/**
 * \ingroup metaroce-tests
 * The route lookup against a reference: /32 routes over a run of addresses with holes,
 * inserted in rising, falling and random order (the hash table grows as they come) and
 * replaced, then a far address and one more; prefix routes serve what no host route covers.
 * Every lookup must name the group the longest matching route gives.
 */
class MetaRoceHostRouteTableTestCase : public SeededTestCase
{
  public:
    MetaRoceHostRouteTableTestCase()
        : SeededTestCase("route lookups against a reference (host and prefix routes)")
    {
    }

  private:
    /// The reference: host routes, then the longest prefix.
    struct Reference
    {
        std::map<uint32_t, uint32_t> hosts;                          //!< address -> group
        std::vector<std::tuple<uint8_t, uint32_t, uint32_t>> prefix; //!< length, prefix, group

        /// \return the group for \p dst, or -1
        int64_t Lookup(uint32_t dst) const
        {
            auto h = hosts.find(dst);
            if (h != hosts.end())
            {
                return h->second;
            }
            int best = -1;
            int64_t group = -1;
            for (const auto& [length, prefix, g] : prefix)
            {
                const uint32_t mask = length == 0 ? 0 : ~uint32_t(0) << (32 - length);
                if ((dst & mask) == prefix && int(length) > best)
                {
                    best = length;
                    group = g;
                }
            }
            return group;
        }
    };

    /// Check every address of [first, last] and \p extra against \p ref.
    void Check(Ptr<MetaRoceSwitch> sw,
               const Reference& ref,
               const std::vector<std::vector<uint32_t>>& groups,
               uint32_t first,
               uint32_t last,
               const std::vector<uint32_t>& extra,
               const std::string& when)
    {
        std::vector<uint32_t> addresses = extra;
        for (uint32_t a = first; a <= last; ++a)
        {
            addresses.push_back(a);
        }
        uint32_t wrong = 0;
        for (uint32_t a : addresses)
        {
            const std::vector<uint32_t>* got = sw->LookupRoute(a);
            const int64_t want = ref.Lookup(a);
            if (want < 0 ? got != nullptr : (got == nullptr || *got != groups[want]))
            {
                ++wrong;
            }
        }
        NS_TEST_EXPECT_MSG_EQ(wrong, 0U, "lookups that differ from the reference, " << when);
    }

    void DoRun() override
    {
        MetaRoceTopologyHelper topo;
        Ptr<MetaRoceFabric> fabric = topo.BuildLeafSpine(2, 2, 1.0);
        Ptr<MetaRoceSwitch> sw = fabric->GetSwitch(0);
        NS_TEST_ASSERT_MSG_GT(sw->GetNPorts(), 1U, "a leaf with ports");
        const std::vector<std::vector<uint32_t>> groups{{0}, {1}, {0, 1}};
        Ptr<UniformRandomVariable> random = CreateObject<UniformRandomVariable>();
        const uint32_t base = 0x0a010000; // 10.1.0.0
        for (int order = 0; order < 3; ++order)
        {
            sw->ClearRoutes();
            std::vector<uint32_t> ids;
            for (const auto& g : groups)
            {
                ids.push_back(sw->AddEcmpGroup(g));
            }
            Reference ref;
            auto add = [&](uint32_t dst, uint8_t length, uint32_t group) {
                sw->AddRoute(dst, length, ids[group]);
                if (length == 32)
                {
                    ref.hosts[dst] = group;
                }
                else
                {
                    const uint32_t mask = length == 0 ? 0 : ~uint32_t(0) << (32 - length);
                    ref.prefix.emplace_back(length, dst & mask, group);
                }
            };
            add(base, 16, 2);      // 10.1.0.0/16: what no host route covers
            add(0x0a000000, 8, 0); // 10.0.0.0/8
            std::vector<uint32_t> offsets;
            for (uint32_t i = 0; i < 600; ++i)
            {
                if (i % 7 != 3) // holes
                {
                    offsets.push_back(i);
                }
            }
            if (order == 1)
            {
                std::reverse(offsets.begin(), offsets.end());
            }
            if (order == 2)
            {
                for (size_t i = offsets.size(); i > 1; --i)
                {
                    std::swap(offsets[i - 1], offsets[random->GetInteger(0, uint32_t(i - 1))]);
                }
            }
            for (uint32_t off : offsets)
            {
                add(base + 100 + off, 32, random->GetInteger(0, 2));
            }
            for (uint32_t i = 0; i < 50; ++i) // replacements
            {
                add(base + 100 + offsets[random->GetInteger(0, uint32_t(offsets.size() - 1))],
                    32,
                    random->GetInteger(0, 2));
            }
            const std::vector<uint32_t> outside{0x0a020304, 0x0b000001, 0, 0xffffffff, base};
            Check(sw,
                  ref,
                  groups,
                  base,
                  base + 800,
                  outside,
                  "rising, falling or random order " + std::to_string(order));
            // An address far away from the others.
            add(0x0a7f0001, 32, 1);
            Check(sw,
                  ref,
                  groups,
                  base,
                  base + 800,
                  {0x0a020304, 0x0b000001, 0, 0xffffffff, 0x0a7f0001, 0x0a7f0002},
                  "with a far address, order " + std::to_string(order));
            add(base + 2, 32, 0); // and after it
            Check(sw, ref, groups, base, base + 800, {0x0a7f0001}, "one more after it");
        }
    }
};

/**
 * \ingroup metaroce-tests
 * System tests of MetaRoceSwitch.
 */
class MetaRoceSwitchTestSuite : public TestSuite
{
  public:
    MetaRoceSwitchTestSuite()
        : TestSuite("metaroce-switch", TestSuite::Type::SYSTEM)
    {
        AddTestCase(new MetaRoceEcmpSpreadTestCase);
        AddTestCase(new MetaRoceEcmpSaltTestCase);
        AddTestCase(new MetaRoceRedEcnTestCase);
        AddTestCase(new MetaRoceStepEcnTestCase);
        AddTestCase(new MetaRoceDeferredRewriteTestCase);
        AddTestCase(new MetaRocePfcIncastTestCase(true));
        AddTestCase(new MetaRocePfcIncastTestCase(false));
        AddTestCase(new MetaRoceReconvergenceTestCase);
        AddTestCase(new MetaRoceDeadEndTestCase);
        AddTestCase(new MetaRoceLocalUplinkTestCase);
        AddTestCase(new MetaRoceRandomFramesTestCase);
        AddTestCase(new MetaRoceHostRouteTableTestCase);
    }
};

/// The suite's instance, registered with the TestRunner when the library loads.
static MetaRoceSwitchTestSuite g_metaRoceSwitchTestSuite;
