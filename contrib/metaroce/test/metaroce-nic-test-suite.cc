/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

/**
 * \file
 * ns-3 system tests of MetaRoceNic, the engine adapter on a simulated fabric: transfers through
 * leaf-spine ECMP (MetaRoCE and RoCEv2), attributes, incast with and without PFC, a failed
 * link, multiplane, determinism and the event scheduler's order. They run in an ns-3 tree
 * (./test.py -s metaroce-nic) and in the standalone build (ctest -R ns3-suite.metaroce-nic).
 */

#include "metaroce-seeded-test-case.h"

#include "ns3/boolean.h"
#include "ns3/data-rate.h"
#include "ns3/metaroce-channel.h"
#include "ns3/metaroce-fabric.h"
#include "ns3/metaroce-net-device.h"
#include "ns3/metaroce-nic.h"
#include "ns3/metaroce-stack-helper.h"
#include "ns3/metaroce-switch.h"
#include "ns3/metaroce-topology-helper.h"
#include "ns3/metaroce-workload-helper.h"
#include "ns3/node.h"
#include "ns3/object-factory.h"
#include "ns3/rng-seed-manager.h"
#include "ns3/simulator-impl.h"
#include "ns3/simulator.h"
#include "ns3/string.h"
#include "ns3/test.h"
#include "ns3/uinteger.h"

#include <cstdio>
#include <map>
#include <set>
#include <vector>

using namespace ns3;
using metaroce_test::Join;
using metaroce_test::SeededTestCase;

namespace
{

/// Completions collected per NIC.
struct CompletionLog
{
    std::vector<std::pair<Time, metaroce::Completion>> entries; //!< (time, completion)

    /// Record one.
    void Add(Ptr<MetaRoceNic>, const metaroce::Completion& c)
    {
        entries.emplace_back(Simulator::Now(), c);
    }

    /// \return the number of successful completions of opcode \p op.
    size_t Count(metaroce::WcOpcode op) const
    {
        size_t n = 0;
        for (const auto& e : entries)
        {
            n += e.second.status == metaroce::WcStatus::SUCCESS && e.second.opcode == op;
        }
        return n;
    }

    /// \return true if any completion failed.
    bool AnyError() const
    {
        for (const auto& e : entries)
        {
            if (e.second.status != metaroce::WcStatus::SUCCESS)
            {
                return true;
            }
        }
        return false;
    }
};

/// Frames a switch enqueued on each of its ports that face another switch.
std::map<uint32_t, uint64_t>
UplinkFrames(Ptr<MetaRoceSwitch> sw)
{
    std::map<uint32_t, uint64_t> frames;
    for (uint32_t i = 0; i < sw->GetNPorts(); ++i)
    {
        Ptr<MetaRoceNetDevice> peer = sw->GetPort(i)->GetPeer();
        if (peer && peer->GetNode()->GetObject<MetaRoceSwitch>())
        {
            frames[i] = sw->GetPortCounters(i).enqueuedFrames;
        }
    }
    return frames;
}

/// Counts the uplinks of \p sw that carried at least \p minFrames frames.
uint32_t
BusyUplinks(Ptr<MetaRoceSwitch> sw, uint64_t minFrames)
{
    uint32_t busy = 0;
    for (const auto& [port, frames] : UplinkFrames(sw))
    {
        busy += frames >= minFrames;
    }
    return busy;
}

/// The switch a host's first port is attached to.
Ptr<MetaRoceSwitch>
LeafOf(Ptr<MetaRoceNic> nic, uint32_t port = 0)
{
    return nic->GetPort(port)->GetPeer()->GetNode()->GetObject<MetaRoceSwitch>();
}

/**
 * One RDMA WRITE_WITH_IMM of real bytes from nics[a] to nics[b]; returns after Run().
 */
struct RealTransfer
{
    std::vector<uint8_t> src;  //!< source bytes
    std::vector<uint8_t> dst;  //!< destination bytes
    CompletionLog senderLog;   //!< sender completions
    CompletionLog receiverLog; //!< receiver completions

    /// Set up and post.
    void Post(Ptr<MetaRoceNic> a,
              Ptr<MetaRoceNic> b,
              const metaroce::ConnectionConfig& cfg,
              uint32_t bytes,
              Time at)
    {
        src.resize(bytes);
        dst.assign(bytes, 0);
        for (uint32_t i = 0; i < bytes; ++i)
        {
            src[i] = uint8_t((i * 131 + 7) ^ (i >> 9)) | 1;
        }
        a->SetCompletionCallback(MakeCallback(&CompletionLog::Add, &senderLog));
        b->SetCompletionCallback(MakeCallback(&CompletionLog::Add, &receiverLog));
        auto [qa, qb] = MetaRoceConnectionHelper::Connect(a, b, cfg);
        metaroce::MemoryRegion smr = a->RegisterMemory(src.data(), bytes, 0);
        metaroce::MemoryRegion dmr =
            b->RegisterMemory(dst.data(),
                              bytes,
                              metaroce::ACCESS_LOCAL_WRITE | metaroce::ACCESS_REMOTE_WRITE);
        metaroce::RecvWr rw;
        rw.wrId = 77;
        recvOk = b->PostRecv(qb, rw) == metaroce::PostStatus::OK;
        metaroce::SendWr wr;
        wr.wrId = 1;
        wr.opcode = metaroce::WrOpcode::RDMA_WRITE_WITH_IMM;
        wr.sge = {smr.addr, bytes, smr.lkey};
        wr.remoteAddr = dmr.addr;
        wr.rkey = dmr.rkey;
        wr.immData = 0xabc;
        Simulator::Schedule(at, [this, a, qa = qa, wr]() {
            sendOk = a->PostSend(qa, wr) == metaroce::PostStatus::OK;
        });
    }

    bool recvOk{false}; //!< the receive was posted
    bool sendOk{false}; //!< the send was posted (once the simulation reached it)
};

/// A leaf-spine with 2 leaves, 4 hosts each, 4 spines, and NICs on every host.
struct LeafSpine
{
    MetaRoceTopologyHelper topo;        //!< builder
    Ptr<MetaRoceFabric> fabric;         //!< the fabric
    std::vector<Ptr<MetaRoceNic>> nics; //!< NICs

    /// Build (\p delay: every link's delay; 0 = the helper's default).
    explicit LeafSpine(uint32_t planes = 1, Time delay = Time(0))
    {
        topo.SetPlaneCount(planes);
        if (delay > Time(0))
        {
            topo.SetLinkDelay(delay);
        }
        fabric = topo.BuildLeafSpine(2, 4, 1.0);
        MetaRoceStackHelper stack;
        nics = stack.Install(fabric);
        MetaRoceStackHelper::AssignStreams(nics, 100);
        fabric->AssignStreams(1000);
    }
};

/// The node at the other end of a host's port \p port.
Ptr<Node>
LeafNodeOf(Ptr<MetaRoceNic> nic, uint32_t port = 0)
{
    return nic->GetPort(port)->GetPeer()->GetNode();
}

/// A node one of whose links goes from \p leaf to a switch (a spine).
Ptr<Node>
FirstSpineOf(Ptr<Node> leaf)
{
    Ptr<MetaRoceSwitch> sw = leaf->GetObject<MetaRoceSwitch>();
    for (uint32_t i = 0; i < sw->GetNPorts(); ++i)
    {
        Ptr<Node> peer = sw->GetPort(i)->GetPeer()->GetNode();
        if (peer->GetObject<MetaRoceSwitch>())
        {
            return peer;
        }
    }
    return nullptr;
}

/**
 * Runs a permutation on the leaf-spine and returns every flow's FCT in nanoseconds.
 * \param transport metaroce or rocev2
 * \param scheduler the event scheduler's TypeId name (empty: ns-3's default)
 * \param tieBreak its TieBreak attribute, for ns3::MetaRoceScheduler
 */
std::vector<int64_t>
PermutationFcts(const std::string& transport,
                const std::string& scheduler = "",
                const std::string& tieBreak = "",
                const std::string& simulator = "")
{
    if (!simulator.empty())
    {
        Simulator::Destroy();
        ObjectFactory factory;
        factory.SetTypeId(simulator);
        Simulator::SetImplementation(factory.Create<SimulatorImpl>());
    }
    if (!scheduler.empty())
    {
        ObjectFactory factory;
        factory.SetTypeId(scheduler);
        if (!tieBreak.empty())
        {
            factory.Set("TieBreak", StringValue(tieBreak));
        }
        Simulator::SetScheduler(factory);
    }
    LeafSpine net;
    Ptr<MetaRoceWorkloadHelper> load = CreateObject<MetaRoceWorkloadHelper>();
    load->Setup(net.fabric, net.nics);
    metaroce::ConnectionConfig cfg = load->GetConnectionConfig();
    cfg.transport = transport;
    load->SetConnectionConfig(cfg);
    load->SetStopWhenDone(true);
    load->AddPermutation(300 * 1000, MicroSeconds(1), 7);
    Simulator::Stop(MilliSeconds(20));
    Simulator::Run();
    std::vector<int64_t> fcts;
    for (const MetaRoceFlow& f : load->GetFlows())
    {
        fcts.push_back(f.done ? f.Fct().GetNanoSeconds() : -1);
    }
    Simulator::Destroy();
    return fcts;
}

} // namespace

/**
 * \ingroup metaroce-tests
 * A 1 MiB MetaRoCE WRITE with immediate through a leaf-spine delivers every byte and sprays
 * over all four uplinks.
 */
class MetaRoceNicSprayTestCase : public SeededTestCase
{
  public:
    MetaRoceNicSprayTestCase()
        : SeededTestCase("a MetaRoCE transfer through a leaf-spine delivers every byte and sprays")
    {
    }

  private:
    void DoRun() override
    {
        LeafSpine net;
        NS_TEST_ASSERT_MSG_EQ(net.fabric->GetHostCount(), 8U, "hosts");
        Ptr<MetaRoceNic> a = net.nics[0];
        Ptr<MetaRoceNic> b = net.nics[4]; // under the other leaf
        std::set<uint16_t> sourcePorts;
        uint64_t dataTx = 0;
        a->TraceConnectWithoutContext(
            "Tx",
            MakeBoundCallback(
                +[](std::set<uint16_t>* ports, uint64_t* n, const MetaRoceDatagramInfo& info) {
                    ports->insert(info.srcPort);
                    ++*n;
                },
                &sourcePorts,
                &dataTx));
        RealTransfer t;
        const uint32_t bytes = 1 << 20;
        t.Post(a, b, a->GetDefaultConnectionConfig(), bytes, MicroSeconds(1));
        Simulator::Stop(MilliSeconds(5));
        Simulator::Run();

        NS_TEST_ASSERT_MSG_EQ(t.recvOk && t.sendOk, true, "posted");
        NS_TEST_ASSERT_MSG_EQ(t.senderLog.entries.size(), 1U, "sender completions");
        NS_TEST_EXPECT_MSG_EQ(t.senderLog.Count(metaroce::WcOpcode::RDMA_WRITE), 1U, "a WRITE");
        NS_TEST_ASSERT_MSG_EQ(t.receiverLog.entries.size(), 1U, "receiver completions");
        NS_TEST_EXPECT_MSG_EQ(
            (t.receiverLog.entries[0].second.opcode == metaroce::WcOpcode::RECV_RDMA_WITH_IMM),
            true,
            "a receive with immediate");
        NS_TEST_EXPECT_MSG_EQ(t.receiverLog.entries[0].second.immData, 0xabcU, "immediate");
        NS_TEST_EXPECT_MSG_EQ((t.src == t.dst), true, "payload");
        // Spraying through real ECMP: the leaf spreads the connection's packets over its uplinks.
        NS_TEST_EXPECT_MSG_GT_OR_EQ(sourcePorts.size(), 8U, "source ports");
        NS_TEST_EXPECT_MSG_EQ(BusyUplinks(LeafOf(a), 20), 4U, "busy uplinks");
        const double fct = (t.senderLog.entries[0].first - MicroSeconds(1)).GetSeconds();
        const double goodput = bytes * 8.0 / fct;
        std::printf("[ metaroce ] 1 MiB MetaRoCE WRITE on a 100G leaf-spine: FCT %.2f us, "
                    "goodput %.1f Gb/s, %lu datagrams sent\n",
                    fct * 1e6,
                    goodput / 1e9,
                    static_cast<unsigned long>(dataTx));
        NS_TEST_EXPECT_MSG_GT(goodput, 50e9, "goodput");
    }
};

/**
 * \ingroup metaroce-tests
 * On a long path (a 10 ms round trip, far above SlowStartMinRtt) a MetaRoCE transfer reaches its
 * connection window in a few round trips (slow start, paced), and with SlowStartMinRtt 0 it
 * creeps up by one packet per path per round trip as on a datacenter path.
 */
class MetaRoceNicLongPathTestCase : public SeededTestCase
{
  public:
    MetaRoceNicLongPathTestCase()
        : SeededTestCase("a 10 ms round trip: slow start reaches the window in a few round trips")
    {
    }

  private:
    void DoRun() override
    {
        const uint32_t bytes = 8 << 20;
        double fct[2] = {0, 0};
        for (uint32_t slowStart : {1, 0})
        {
            // host - leaf - spine - leaf - host: 4 links of 1.25 ms, a 10 ms round trip.
            LeafSpine net(1, MicroSeconds(1250));
            Ptr<MetaRoceNic> a = net.nics[0];
            Ptr<MetaRoceNic> b = net.nics[4]; // under the other leaf
            metaroce::ConnectionConfig cfg = a->GetDefaultConnectionConfig();
            if (slowStart == 0)
            {
                cfg.slowStartMinRtt = 0; // (and with it the long-path pacing)
            }
            RealTransfer t;
            t.Post(a, b, cfg, bytes, MicroSeconds(1));
            Simulator::Stop(Seconds(2));
            Simulator::Run();
            NS_TEST_ASSERT_MSG_EQ(t.recvOk && t.sendOk, true, "posted");
            NS_TEST_ASSERT_MSG_EQ(t.senderLog.entries.size(), 1U, "sender completions");
            NS_TEST_EXPECT_MSG_EQ((t.src == t.dst), true, "payload, slow start " << slowStart);
            fct[slowStart] = (t.senderLog.entries[0].first - MicroSeconds(1)).GetSeconds();
            Simulator::Destroy();
        }
        std::printf("[ metaroce ] 8 MiB over a 10 ms round trip: FCT %.1f ms with slow start, "
                    "%.1f ms without\n",
                    fct[1] * 1e3,
                    fct[0] * 1e3);
        // The connection window (512 packets) is 2 MiB: at least 4 round trips of sending,
        // plus about 4 to grow from the first flight by slow start; hundreds without it.
        NS_TEST_EXPECT_MSG_LT(fct[1], 0.12, "with slow start, seconds");
        NS_TEST_EXPECT_MSG_LT(fct[1], 0.6 * fct[0], "slow start against additive increase");
    }
};

/**
 * \ingroup metaroce-tests
 * A RoCEv2 transfer delivers every byte on one uplink (one QP, one source port).
 */
class MetaRoceNicRoceV2TestCase : public SeededTestCase
{
  public:
    MetaRoceNicRoceV2TestCase()
        : SeededTestCase("a RoCEv2 transfer delivers every byte on one uplink")
    {
    }

  private:
    void DoRun() override
    {
        LeafSpine net;
        Ptr<MetaRoceNic> a = net.nics[1];
        Ptr<MetaRoceNic> b = net.nics[6];
        metaroce::ConnectionConfig cfg = a->GetDefaultConnectionConfig();
        cfg.transport = "rocev2";
        RealTransfer t;
        t.Post(a, b, cfg, 512 * 1024, MicroSeconds(1));
        Simulator::Stop(MilliSeconds(5));
        Simulator::Run();
        NS_TEST_ASSERT_MSG_EQ(t.recvOk && t.sendOk, true, "posted");
        NS_TEST_ASSERT_MSG_EQ(t.senderLog.entries.size(), 1U, "sender completions");
        NS_TEST_EXPECT_MSG_EQ(t.senderLog.AnyError(), false, "sender errors");
        NS_TEST_ASSERT_MSG_EQ(t.receiverLog.entries.size(), 1U, "receiver completions");
        NS_TEST_EXPECT_MSG_EQ(t.receiverLog.AnyError(), false, "receiver errors");
        NS_TEST_EXPECT_MSG_EQ((t.src == t.dst), true, "payload");
        NS_TEST_EXPECT_MSG_EQ(BusyUplinks(LeafOf(a), 20), 1U, "one uplink");
    }
};

/**
 * \ingroup metaroce-tests
 * The NIC's attributes map to the engine's configuration; the defaults are the engine's,
 * except Icrc (off in simulation, documented).
 */
class MetaRoceNicAttributesTestCase : public SeededTestCase
{
  public:
    MetaRoceNicAttributesTestCase()
        : SeededTestCase("attributes map to the engine configuration")
    {
    }

  private:
    void DoRun() override
    {
        Ptr<MetaRoceNic> nic = CreateObject<MetaRoceNic>();
        nic->SetAttribute("Transport", StringValue("rocev2"));
        nic->SetAttribute("NumPaths", UintegerValue(16));
        nic->SetAttribute("RtoMin", TimeValue(MicroSeconds(37)));
        nic->SetAttribute("PacingRate", DataRateValue(DataRate("25Gbps")));
        nic->SetAttribute("RoceDscp", UintegerValue(24));
        const metaroce::ConnectionConfig cfg = nic->GetDefaultConnectionConfig();
        NS_TEST_EXPECT_MSG_EQ(cfg.transport, "rocev2", "Transport");
        NS_TEST_EXPECT_MSG_EQ(cfg.numPaths, 16U, "NumPaths");
        NS_TEST_EXPECT_MSG_EQ(cfg.rtoMin, metaroce::MicroSeconds(37), "RtoMin");
        NS_TEST_EXPECT_MSG_EQ_TOL(cfg.lineRateBps, 25e9, 1, "PacingRate");
        NS_TEST_EXPECT_MSG_EQ(int(cfg.rocev2.dscp), 24, "RoceDscp");
        TimeValue rto;
        nic->GetAttribute("RtoMin", rto);
        NS_TEST_EXPECT_MSG_EQ(rto.Get(), MicroSeconds(37), "RtoMin read back");
        StringValue cc;
        nic->GetAttribute("CongestionControl", cc);
        NS_TEST_EXPECT_MSG_EQ(cc.Get(), "aimd", "CongestionControl's default");
        const metaroce::ConnectionConfig engine;
        Ptr<MetaRoceNic> fresh = CreateObject<MetaRoceNic>();
        NS_TEST_EXPECT_MSG_EQ(fresh->GetDefaultConnectionConfig().rtoInitial,
                              engine.rtoInitial,
                              "rtoInitial");
        NS_TEST_EXPECT_MSG_EQ(fresh->GetDefaultConnectionConfig().mtu, engine.mtu, "mtu");
        NS_TEST_EXPECT_MSG_EQ_TOL(fresh->GetDefaultConnectionConfig().rocev2.dcqcnRaiBps,
                                  engine.rocev2.dcqcnRaiBps,
                                  1e-6,
                                  "dcqcnRaiBps");
        BooleanValue icrc;
        fresh->GetAttribute("Icrc", icrc);
        NS_TEST_EXPECT_MSG_EQ(icrc.Get(), false, "Icrc off in simulation");
    }
};

/**
 * \ingroup metaroce-tests
 * A 16-to-1 incast without PFC overflows a shallow buffer, and MetaRoCE still delivers every
 * byte by retransmission.
 */
class MetaRoceNicLossyIncastTestCase : public SeededTestCase
{
  public:
    MetaRoceNicLossyIncastTestCase()
        : SeededTestCase("an incast without PFC drops, and MetaRoCE delivers every byte")
    {
    }

  private:
    void DoRun() override
    {
        MetaRoceTopologyHelper topo;
        topo.SetBuffer(MetaRoceSwitch::SHALLOW, 256 * 1024); // a shallow shared buffer
        topo.SetPfc(false);
        Ptr<MetaRoceFabric> fabric = topo.BuildSingleSwitch(17);
        MetaRoceStackHelper stack;
        std::vector<Ptr<MetaRoceNic>> nics = stack.Install(fabric);
        MetaRoceStackHelper::AssignStreams(nics, 10);
        Ptr<MetaRoceWorkloadHelper> load = CreateObject<MetaRoceWorkloadHelper>();
        load->Setup(fabric, nics);
        load->SetStopWhenDone(true);
        std::vector<uint32_t> senders;
        for (uint32_t i = 0; i < 16; ++i)
        {
            senders.push_back(i);
        }
        const uint64_t bytes = 256 * 1024;
        load->AddIncast(senders, 16, bytes, MicroSeconds(1));
        Simulator::Stop(MilliSeconds(50));
        Simulator::Run();

        Ptr<MetaRoceSwitch> sw = fabric->GetSwitch(0);
        NS_TEST_EXPECT_MSG_GT(sw->GetCounters().TotalDrops(),
                              0U,
                              "the incast should overflow the buffer");
        NS_TEST_EXPECT_MSG_EQ(load->GetFlowsDone(), 16U, "flows done");
        for (const MetaRoceFlow& f : load->GetFlows())
        {
            NS_TEST_EXPECT_MSG_EQ(f.done && f.received, true, "flow " << f.id);
            NS_TEST_EXPECT_MSG_EQ(f.failed, false, "flow " << f.id);
        }
        const metaroce::CounterSet& rx = nics[16]->GetEngineCounters();
        NS_TEST_EXPECT_MSG_EQ(rx.Get(metaroce::Counter::BYTES_PLACED), 16 * bytes, "placed");
        uint64_t retransmitted = 0;
        for (uint32_t i = 0; i < 16; ++i)
        {
            retransmitted += nics[i]->GetEngineCounters().Get(metaroce::Counter::TX_RETRANSMIT);
        }
        NS_TEST_EXPECT_MSG_GT(retransmitted, 0U, "retransmissions");
        std::printf("[ metaroce ] 16-to-1 incast of 256 KiB, 256 KiB buffer: %lu switch drops, "
                    "%lu retransmissions, last FCT %.1f us\n",
                    static_cast<unsigned long>(sw->GetCounters().TotalDrops()),
                    static_cast<unsigned long>(retransmitted),
                    Simulator::Now().GetSeconds() * 1e6);
    }
};

/**
 * \ingroup metaroce-tests
 * A RoCEv2 incast with PFC is paused and lossless: no drop, no retransmission.
 */
class MetaRoceNicPfcIncastTestCase : public SeededTestCase
{
  public:
    MetaRoceNicPfcIncastTestCase()
        : SeededTestCase("a RoCEv2 incast with PFC is paused and lossless")
    {
    }

  private:
    void DoRun() override
    {
        MetaRoceTopologyHelper topo;
        topo.SetPfc(true);
        Ptr<MetaRoceFabric> fabric = topo.BuildSingleSwitch(9);
        MetaRoceStackHelper stack;
        stack.SetNicAttribute("Transport", StringValue("rocev2"));
        std::vector<Ptr<MetaRoceNic>> nics = stack.Install(fabric);
        MetaRoceStackHelper::AssignStreams(nics, 10);
        Ptr<MetaRoceWorkloadHelper> load = CreateObject<MetaRoceWorkloadHelper>();
        load->Setup(fabric, nics);
        load->SetStopWhenDone(true);
        load->AddIncast({0, 1, 2, 3, 4, 5, 6, 7}, 8, 1 << 20, MicroSeconds(1));
        Simulator::Stop(MilliSeconds(50));
        Simulator::Run();
        NS_TEST_EXPECT_MSG_EQ(load->GetFlowsDone(), 8U, "flows done");
        Ptr<MetaRoceSwitch> sw = fabric->GetSwitch(0);
        NS_TEST_EXPECT_MSG_EQ(sw->GetCounters().TotalDrops(), 0U, "drops");
        NS_TEST_EXPECT_MSG_GT(sw->GetCounters().pfcPauseSent, 0U, "pauses sent");
        uint64_t pausesReceived = 0;
        for (uint32_t i = 0; i < 8; ++i)
        {
            pausesReceived += nics[i]->GetPort(0)->GetCounters().pauseReceived;
            NS_TEST_EXPECT_MSG_EQ(
                nics[i]->GetEngineCounters().Get(metaroce::Counter::TX_RETRANSMIT),
                0U,
                "sender " << i << " retransmitted");
        }
        NS_TEST_EXPECT_MSG_GT(pausesReceived, 0U, "pauses received");
    }
};

/**
 * \ingroup metaroce-tests
 * An uplink that fails mid-transfer is routed around and the transfer completes.
 */
class MetaRoceNicFailedLinkTestCase : public SeededTestCase
{
  public:
    MetaRoceNicFailedLinkTestCase()
        : SeededTestCase("a link failing mid-transfer is routed around, the transfer completes")
    {
    }

  private:
    void DoRun() override
    {
        LeafSpine net;
        Ptr<MetaRoceNic> a = net.nics[0];
        Ptr<Node> leaf = LeafNodeOf(a);
        Ptr<Node> spine = FirstSpineOf(leaf);
        NS_TEST_ASSERT_MSG_NE(spine, nullptr, "a spine");
        Ptr<MetaRoceWorkloadHelper> load = CreateObject<MetaRoceWorkloadHelper>();
        load->Setup(net.fabric, net.nics);
        load->SetStopWhenDone(true);
        load->AddFlow(0, 4, 8 << 20, MicroSeconds(1));
        net.fabric->FailLink(leaf, spine, MicroSeconds(100), Time::Max());
        uint64_t failedOrTimeout = 0;
        a->TraceConnectWithoutContext("PathEvent",
                                      MakeBoundCallback(
                                          +[](uint64_t* n, const MetaRocePathEventInfo& info) {
                                              *n += info.event == metaroce::PathEvent::TIMEOUT ||
                                                    info.event == metaroce::PathEvent::LOSS ||
                                                    info.event == metaroce::PathEvent::FAILED;
                                          },
                                          &failedOrTimeout));
        Simulator::Stop(MilliSeconds(50));
        Simulator::Run();
        NS_TEST_ASSERT_MSG_EQ(load->GetFlowsDone(), 1U, "flows done");
        const MetaRoceFlow& f = load->GetFlows()[0];
        NS_TEST_EXPECT_MSG_EQ(f.received, true, "received");
        NS_TEST_EXPECT_MSG_GT(f.finish, MicroSeconds(100), "the failure must hit the transfer");
        NS_TEST_EXPECT_MSG_EQ(net.nics[4]->GetEngineCounters().Get(metaroce::Counter::BYTES_PLACED),
                              8U << 20,
                              "placed");
        NS_TEST_EXPECT_MSG_GT(failedOrTimeout, 0U, "path events");
        const uint64_t retransmitted = a->GetEngineCounters().Get(metaroce::Counter::TX_RETRANSMIT);
        NS_TEST_EXPECT_MSG_GT(retransmitted, 0U, "retransmissions");
        std::printf("[ metaroce ] 8 MiB with a leaf-spine uplink failing at 100 us: FCT %.1f us "
                    "(ideal %.1f us), %lu retransmissions\n",
                    f.Fct().GetSeconds() * 1e6,
                    f.idealFct.GetSeconds() * 1e6,
                    static_cast<unsigned long>(retransmitted));
    }
};

/**
 * \ingroup metaroce-tests
 * A two-plane NIC uses both planes for data and for ACKs, and beats one plane.
 */
class MetaRoceNicMultiplaneTestCase : public SeededTestCase
{
  public:
    MetaRoceNicMultiplaneTestCase()
        : SeededTestCase("multiplane uses both planes")
    {
    }

  private:
    void DoRun() override
    {
        LeafSpine net(2);
        Ptr<MetaRoceNic> a = net.nics[0];
        NS_TEST_ASSERT_MSG_EQ(a->GetNPorts(), 2U, "ports");
        NS_TEST_EXPECT_MSG_EQ_TOL(a->GetLineRateBps(), 200e9, 1, "line rate");
        Ptr<MetaRoceWorkloadHelper> load = CreateObject<MetaRoceWorkloadHelper>();
        load->Setup(net.fabric, net.nics);
        load->SetStopWhenDone(true);
        load->AddFlow(0, 4, 4 << 20, MicroSeconds(1));
        Simulator::Stop(MilliSeconds(20));
        Simulator::Run();
        NS_TEST_ASSERT_MSG_EQ(load->GetFlowsDone(), 1U, "flows done");
        const uint64_t plane0 = a->GetPort(0)->GetCounters().txFrames;
        const uint64_t plane1 = a->GetPort(1)->GetCounters().txFrames;
        NS_TEST_EXPECT_MSG_GT(plane0, 300U, "data on plane 0");
        NS_TEST_EXPECT_MSG_GT(plane1, 300U, "data on plane 1");
        NS_TEST_EXPECT_MSG_GT(net.nics[4]->GetPort(0)->GetCounters().txFrames,
                              50U,
                              "ACKs on plane 0");
        NS_TEST_EXPECT_MSG_GT(net.nics[4]->GetPort(1)->GetCounters().txFrames,
                              50U,
                              "ACKs on plane 1");
        const MetaRoceFlow& f = load->GetFlows()[0];
        std::printf("[ metaroce ] 4 MiB over 2 planes of 100G: FCT %.1f us, goodput %.1f Gb/s, "
                    "frames per plane %lu / %lu\n",
                    f.Fct().GetSeconds() * 1e6,
                    f.bytes * 8.0 / f.Fct().GetSeconds() / 1e9,
                    static_cast<unsigned long>(plane0),
                    static_cast<unsigned long>(plane1));
        NS_TEST_EXPECT_MSG_GT(f.bytes * 8.0 / f.Fct().GetSeconds(), 110e9, "two planes beat one");
    }
};

/**
 * \ingroup metaroce-tests
 * The same seed reproduces identical FCTs, on both transports.
 */
class MetaRoceNicDeterminismTestCase : public SeededTestCase
{
  public:
    MetaRoceNicDeterminismTestCase()
        : SeededTestCase("the same seed reproduces identical FCTs")
    {
    }

  private:
    void DoRun() override
    {
        for (const char* transport : {"metaroce", "rocev2"})
        {
            RngSeedManager::SetRun(3);
            const std::vector<int64_t> first = PermutationFcts(transport);
            RngSeedManager::SetRun(3);
            const std::vector<int64_t> second = PermutationFcts(transport);
            NS_TEST_ASSERT_MSG_EQ(first.size(), 8U, transport);
            NS_TEST_EXPECT_MSG_EQ(Join(first), Join(second), transport);
            for (int64_t fct : first)
            {
                NS_TEST_EXPECT_MSG_GT(fct, 0, transport);
            }
        }
    }
};

/**
 * \ingroup metaroce-tests
 * The module's event scheduler keeps ns-3's order of equal-time events by default, so a run
 * gives the same results as with MapScheduler; its Link order is a different, equally
 * deterministic order.
 */
class MetaRoceNicSchedulerTestCase : public SeededTestCase
{
  public:
    MetaRoceNicSchedulerTestCase()
        : SeededTestCase(
              "MetaRoceScheduler and MetaRoceSimulatorImpl reproduce MapScheduler's FCTs")
    {
    }

  private:
    void DoRun() override
    {
        for (const char* transport : {"metaroce", "rocev2"})
        {
            RngSeedManager::SetRun(3);
            const std::vector<int64_t> map = PermutationFcts(transport, "ns3::MapScheduler");
            RngSeedManager::SetRun(3);
            const std::vector<int64_t> heap = PermutationFcts(transport, "ns3::MetaRoceScheduler");
            NS_TEST_EXPECT_MSG_EQ(Join(map), Join(heap), transport);
            // The module's simulator implementation: the same events in the same order.
            for (const char* scheduler : {"ns3::MapScheduler", "ns3::MetaRoceScheduler"})
            {
                RngSeedManager::SetRun(3);
                const std::vector<int64_t> fast =
                    PermutationFcts(transport, scheduler, "", "ns3::MetaRoceSimulatorImpl");
                NS_TEST_EXPECT_MSG_EQ(Join(map),
                                      Join(fast),
                                      transport << ", MetaRoceSimulatorImpl, " << scheduler);
            }
            RngSeedManager::SetRun(3);
            const std::vector<int64_t> link =
                PermutationFcts(transport, "ns3::MetaRoceScheduler", "Link");
            RngSeedManager::SetRun(3);
            const std::vector<int64_t> linkAgain =
                PermutationFcts(transport, "ns3::MetaRoceScheduler", "Link");
            NS_TEST_EXPECT_MSG_EQ(Join(link), Join(linkAgain), transport);
            NS_TEST_ASSERT_MSG_EQ(link.size(), map.size(), transport);
            for (std::size_t i = 0; i < link.size(); ++i)
            {
                NS_TEST_EXPECT_MSG_GT(link[i], 0, transport << " flow " << i);
                // Only the order of simultaneous events differs: FCTs stay close.
                NS_TEST_EXPECT_MSG_EQ_TOL(double(link[i]),
                                          double(map[i]),
                                          0.05 * double(map[i]),
                                          transport << " flow " << i);
            }
        }
    }
};

/**
 * \ingroup metaroce-tests
 * System tests of MetaRoceNic on simulated fabrics.
 */
class MetaRoceNicTestSuite : public TestSuite
{
  public:
    MetaRoceNicTestSuite()
        : TestSuite("metaroce-nic", TestSuite::Type::SYSTEM)
    {
        AddTestCase(new MetaRoceNicSprayTestCase);
        AddTestCase(new MetaRoceNicLongPathTestCase);
        AddTestCase(new MetaRoceNicRoceV2TestCase);
        AddTestCase(new MetaRoceNicAttributesTestCase);
        AddTestCase(new MetaRoceNicLossyIncastTestCase);
        AddTestCase(new MetaRoceNicPfcIncastTestCase);
        AddTestCase(new MetaRoceNicFailedLinkTestCase);
        AddTestCase(new MetaRoceNicMultiplaneTestCase);
        AddTestCase(new MetaRoceNicDeterminismTestCase);
        AddTestCase(new MetaRoceNicSchedulerTestCase);
    }
};

/// The suite's instance, registered with the TestRunner when the library loads.
static MetaRoceNicTestSuite g_metaRoceNicTestSuite;
