/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

// Recovery in round trips, not RTOs (issue 16): time-based loss detection across paths, the
// tail-loss probe, failure told from congestion by the other paths, the adaptive RTO, the
// per-connection first flight and 128 paths. Each test runs the mechanism against the
// behaviour it replaces, which stays selectable by name.

#include "engine-network.h"
#include "metaroce-icrc.h"
#include "pair-fixture.h"

#include <gtest/gtest.h>
#include <map>
#include <set>
#include <string>

namespace metaroce
{
namespace test
{
namespace
{

/// The pre-issue-16 recovery: SACK gaps only, RTO-only failure detection, fixed RTO floor.
ConnectionConfig
Classic()
{
    ConnectionConfig cfg;
    cfg.lossDetection = "sack-gap";
    cfg.tailProbe = "none";
    cfg.failureDetection = "rto";
    cfg.rtoPolicy = "fixed";
    cfg.initialWindow = "per-path";
    cfg.ackPolicy = "per-path";
    return cfg;
}

/// Every recovery mechanism of issue 16 on.
ConnectionConfig
InRoundTrips()
{
    ConnectionConfig cfg;
    cfg.lossDetection = "rack";
    cfg.tailProbe = "tlp";
    cfg.failureDetection = "cross-path";
    cfg.rtoPolicy = "adaptive";
    cfg.initialWindow = "per-connection";
    cfg.ackPolicy = "coalesced";
    return cfg;
}

class RecoveryTest : public PairTest
{
  protected:
    /// Drop the first transmission of the data packet the sender sends as its \p n-th (0-based).
    void DropNthDataPacket(int n)
    {
        for (int path = -1; path < int(ConnectionConfig::MAX_PATHS); ++path)
        {
            m_net->Link(m_a, m_b, path).dropIf = [this, n](const WireInfo& w) {
                if (w.opcode != MR_WRITE)
                {
                    return false;
                }
                return m_dataSeen++ == n;
            };
        }
    }

    /// Run one 8-packet WRITE (one packet per path) that loses its \p n-th packet once.
    /// \return the completion time in us.
    double OnePacketPerPathLosing(const ConnectionConfig& cfg, int n)
    {
        m_dataSeen = 0;
        Build(cfg, 8 * 4096);
        DropNthDataPacket(n);
        Write(1, 0, uint32_t(m_src.size()));
        m_net->RunUntilIdle(MilliSeconds(10));
        EXPECT_EQ(m_net->Completions(m_a).size(), 1u);
        EXPECT_EQ(m_src, m_dst);
        return double(m_lastCompletion) / 1e6;
    }

    int m_dataSeen{0}; //!< data packets seen on the wire
};

TEST_F(RecoveryTest, RackFindsALostPacketFromLaterPacketsOnOtherPaths)
{
    // Packet 3 is the only packet of its path: no SACK gap can reveal its loss.
    double classic = OnePacketPerPathLosing(Classic(), 3);
    EXPECT_EQ(CounterA(Counter::RTO), 1u);
    ConnectionConfig cfg = Classic();
    cfg.lossDetection = "rack";
    double rack = OnePacketPerPathLosing(cfg, 3);
    EXPECT_EQ(CounterA(Counter::RTO), 0u);
    EXPECT_EQ(CounterA(Counter::LOSS_DETECTED), 1u);
    EXPECT_EQ(CounterA(Counter::TX_RETRANSMIT), 1u);
    // Round trip about 4.5 us: a few of them, against one RtoMin (100 us) and more.
    EXPECT_LT(rack, 20.0);
    EXPECT_GT(classic, 100.0);
}

TEST_F(RecoveryTest, RackTailFindsALostTailPacketFromLaterPacketsOnOtherPaths)
{
    // The whole message is one flight, so the connection is at its tail once it is sent:
    // "rack-tail" judges packet 3, alone on its path, by time, as "rack" does.
    ConnectionConfig cfg = Classic();
    cfg.lossDetection = "rack-tail";
    double rackTail = OnePacketPerPathLosing(cfg, 3);
    EXPECT_EQ(CounterA(Counter::RTO), 0u);
    EXPECT_EQ(CounterA(Counter::LOSS_DETECTED), 1u);
    EXPECT_EQ(CounterA(Counter::TX_RETRANSMIT), 1u);
    EXPECT_LT(rackTail, 20.0);
}

TEST_F(RecoveryTest, RackConfirmFindsALostPacketWithAProbeOfItsPath)
{
    // Packet 3 is the only packet of its path; the later packets of the other paths make it
    // a suspect, and the reply to a probe of its path, which does not acknowledge it, makes it
    // lost: no RTO, one resend, one confirmation probe.
    ConnectionConfig cfg = Classic();
    cfg.lossDetection = "rack-confirm";
    double confirmed = OnePacketPerPathLosing(cfg, 3);
    EXPECT_EQ(CounterA(Counter::RTO), 0u);
    EXPECT_EQ(CounterA(Counter::CONFIRM_PROBE), 1u);
    EXPECT_EQ(CounterA(Counter::LOSS_DETECTED), 1u);
    EXPECT_EQ(CounterA(Counter::TX_RETRANSMIT), 1u);
    EXPECT_LT(confirmed, 20.0); // a few 4.5-us round trips, against one RtoMin (100 us)
}

TEST_F(RecoveryTest, RackConfirmAsksALostConfirmationProbeAgain)
{
    // The first confirmation probe is lost: a second one, a round trip later, confirms the
    // loss, still long before the RTO.
    ConnectionConfig cfg = Classic();
    cfg.lossDetection = "rack-confirm";
    m_dataSeen = 0;
    Build(cfg, 8 * 4096);
    DropNthDataPacket(3);
    int probes = 0;
    m_net->Link(m_a, m_b, 3).dropIf = [this, &probes](const WireInfo& w) {
        if (w.opcode == MR_PROBE)
        {
            return probes++ == 0;
        }
        return w.opcode == MR_WRITE && m_dataSeen++ == 3;
    };
    Write(1, 0, uint32_t(m_src.size()));
    m_net->RunUntilIdle(MilliSeconds(10));
    ASSERT_EQ(m_net->Completions(m_a).size(), 1u);
    EXPECT_EQ(m_src, m_dst);
    EXPECT_EQ(CounterA(Counter::CONFIRM_PROBE), 2u);
    EXPECT_EQ(CounterA(Counter::RTO), 0u);
    EXPECT_EQ(CounterA(Counter::TX_RETRANSMIT), 1u);
    EXPECT_LT(double(m_lastCompletion) / 1e6, 40.0);
}

TEST_F(RecoveryTest, AProbeReplyThatAcknowledgesDataIsTakenNotDiscarded)
{
    // A late reply to a confirmation probe (the confirmation was answered meanwhile) carries
    // the path's state, with the ACK of data that arrived since merged into it. At the tail
    // nothing else acknowledges that data: discarded, it waited for the next confirmation,
    // an RTO later (the 32-path permutation's p99 slowdown, 1.505 with "rack-confirm").
    ConnectionConfig cfg = Classic();
    cfg.lossDetection = "rack-confirm";
    Build(cfg, 4096);
    m_net->Link(m_b, m_a).dropIf = [](const WireInfo& w) {
        return w.opcode == MR_ACK || w.opcode == MR_ACK_COALESCED; // the data's own ACKs
    };
    Write(1, 0, 4096);
    m_net->RunUntil(m_net->Now() + MicroSeconds(10));
    ASSERT_EQ(m_src, m_dst) << "the packet arrived";
    ASSERT_EQ(m_net->Completions(m_a).size(), 0u);
    uint32_t path = 0;
    while (PathOf(path).inflight == 0)
    {
        ++path;
    }

    // The reply, as the responder writes one: the probe's serial in TriggerPsn.
    auto reply = [&]() {
        ParsedPacket pkt;
        pkt.info = &LookupOpcode(MR_ACK);
        pkt.bth.opcode = MR_ACK;
        pkt.bth.destQp = m_qa;
        pkt.mah.pathId = uint8_t(path);
        pkt.mah.pathEpoch = PathOf(path).epoch;
        pkt.mah.cumulativePsn = PathOf(path).nextPsn;
        pkt.mah.triggerPsn = 0x5A5A5A;
        pkt.mah.flags = Mah::FLAG_PROBE_REPLY;
        DatagramMeta meta;
        meta.srcIp = EngineNetwork::AddressOf(m_b);
        meta.dstIp = EngineNetwork::AddressOf(m_a);
        meta.srcPort = 50000;
        std::vector<uint8_t> buf(256);
        size_t len = WriteDatagram(buf.data(), buf.size(), pkt, nullptr, 0);
        ASSERT_GT(len, 0u);
        StoreIcrc(buf.data() + len - ICRC_SIZE,
                  ComputeDatagramIcrc(meta, buf.data(), len - ICRC_SIZE));
        A().HandleDatagram(m_net->Now(), meta, buf.data(), len);
        m_net->Kick(m_a);
    };
    const Time srtt = PathOf(path).rtt.Smoothed();
    reply();
    EXPECT_EQ(m_net->Completions(m_a).size(), 1u) << "the reply's acknowledgement is taken";
    EXPECT_EQ(PathOf(path).inflight, 0u);
    EXPECT_EQ(PathOf(path).rtt.Smoothed(), srtt) << "the probe's serial is no data RTT sample";
    // The same reply again acknowledges nothing new: it changes nothing.
    reply();
    EXPECT_EQ(m_net->Completions(m_a).size(), 1u);
    m_net->RunUntilIdle(MilliSeconds(10));
    EXPECT_EQ(CounterA(Counter::RTO), 0u);
    EXPECT_EQ(CounterA(Counter::TX_RETRANSMIT), 0u);
}

TEST_F(RecoveryTest, RackTailLeavesAQueueingPathToItsSackGapsMidTransfer)
{
    // Path 3 is a tenth of the others' rate: its queue grows while the other paths' later
    // packets are acknowledged. Nothing is lost, so every loss declared is spurious.
    std::map<std::string, uint64_t> declared;
    for (const char* detection : {"rack", "rack-tail", "rack-confirm"})
    {
        SCOPED_TRACE(detection);
        ConnectionConfig cfg = InRoundTrips();
        cfg.lossDetection = detection;
        Build(cfg, 4 << 20);
        m_net->Link(m_a, m_b, 3).rateBps = 10e9;
        Write(1, 0, uint32_t(m_src.size()));
        m_net->RunUntilIdle(MilliSeconds(50));
        ASSERT_EQ(m_net->Completions(m_a).size(), 1u);
        EXPECT_EQ(m_src, m_dst);
        declared[detection] = CounterA(Counter::LOSS_DETECTED);
    }
    EXPECT_GT(declared["rack"], 0u) << "the case no longer shows what rack-tail avoids";
    EXPECT_EQ(declared["rack-tail"], 0u);
    EXPECT_EQ(declared["rack-confirm"], 0u); // the probes' replies acknowledge the queue
}

TEST_F(RecoveryTest, AReturnedPathStartsWithTheOtherPathsShareOfTheWindow)
{
    // Path 2 is black-holed for the first 3 ms of a long transfer, fails, and comes
    // back on a probe reply: "share" gives it the others' mean window, "initial" 4 packets.
    std::map<std::string, double> returned;
    for (const char* policy : {"share", "initial"})
    {
        SCOPED_TRACE(policy);
        ConnectionConfig cfg = InRoundTrips();
        cfg.lossDetection = "sack-gap";
        cfg.returnWindow = policy;
        Build(cfg, 128 << 20);
        m_net->Link(m_a, m_b, 2).blackHole = true;
        m_net->At(MilliSeconds(3), [&]() { m_net->Link(m_a, m_b, 2).blackHole = false; });
        Write(1, 0, uint32_t(m_src.size()));
        m_net->RunUntil(MilliSeconds(3));
        ASSERT_EQ(PathOf(2).status, PathStatus::FAILED);
        Time t = MilliSeconds(3);
        while (PathOf(2).status != PathStatus::ACTIVE && t < MilliSeconds(4))
        {
            t += NanoSeconds(100);
            m_net->RunUntil(t);
        }
        ASSERT_EQ(PathOf(2).status, PathStatus::ACTIVE);
        ASSERT_TRUE(m_net->Completions(m_a).empty()) << "the transfer must still be running";
        double others = 0;
        for (uint32_t p = 0; p < cfg.numPaths; ++p)
        {
            others += p == 2 ? 0 : PathOf(p).cwnd / (cfg.numPaths - 1);
        }
        returned[policy] = PathOf(2).cwnd;
        if (std::string(policy) == "share")
        {
            EXPECT_NEAR(PathOf(2).cwnd, std::max(others, cfg.initialPathWindow), 0.5);
        }
        m_net->RunUntilIdle(MilliSeconds(100));
        ASSERT_EQ(m_net->Completions(m_a).size(), 1u);
        EXPECT_EQ(m_src, m_dst);
    }
    EXPECT_LE(returned["initial"], ConnectionConfig().initialPathWindow + 1);
    EXPECT_GT(returned["share"], 2 * returned["initial"]);
}

TEST_F(RecoveryTest, RepeatedAckRecordsMakeGoodALostAckOfASparsePath)
{
    // Paced to 2 Gb/s, each of the 8 paths carries a packet only every ~130 us, far apart
    // from its RTO: when the one ACK that reports a path's packet is lost, no later packet of
    // that path brings its state back in time. With ackRepeat the next ACKs of the
    // connection, sent for the other paths' packets, repeat the record.
    std::map<uint32_t, uint64_t> retransmits;
    std::map<uint32_t, uint64_t> rtos;
    for (uint32_t repeat : {0u, 1u})
    {
        SCOPED_TRACE(repeat);
        ConnectionConfig cfg = InRoundTrips();
        cfg.lossDetection = "sack-gap";
        cfg.lineRateBps = 2e9;
        cfg.ackRepeat = repeat;
        Build(cfg, 64 * 4096);
        int acksSeen = 0;
        m_net->Link(m_b, m_a, -1).dropIf = [&acksSeen](const WireInfo& w) {
            // Every fifth ACK, never two in a row.
            return w.opcode == MR_ACK_COALESCED && ++acksSeen % 5 == 3;
        };
        for (int path = 0; path < int(ConnectionConfig::MAX_PATHS); ++path)
        {
            m_net->Link(m_b, m_a, path).dropIf = m_net->Link(m_b, m_a, -1).dropIf;
        }
        Write(1, 0, uint32_t(m_src.size()));
        m_net->RunUntilIdle(MilliSeconds(50));
        ASSERT_EQ(m_net->Completions(m_a).size(), 1u);
        EXPECT_EQ(m_net->Completions(m_a)[0].status, WcStatus::SUCCESS);
        EXPECT_EQ(m_src, m_dst);
        retransmits[repeat] = CounterA(Counter::TX_RETRANSMIT);
        rtos[repeat] = CounterA(Counter::RTO);
    }
    // Nothing is lost but ACKs: every resend is spurious.
    EXPECT_GT(retransmits[0], 3u) << "the case no longer shows what repeated records avoid";
    EXPECT_GT(rtos[0], 3u);
    EXPECT_EQ(retransmits[1], 0u);
    EXPECT_EQ(rtos[1], 0u);
}

TEST_F(RecoveryTest, TailProbeRecoversALostLastPacket)
{
    // The newest packet is lost: nothing sent after it can reveal the loss.
    for (const char* acks : {"per-path", "coalesced"})
    {
        SCOPED_TRACE(acks);
        ConnectionConfig cfg = Classic();
        cfg.ackPolicy = acks;
        cfg.lossDetection = "rack";
        double rackOnly = OnePacketPerPathLosing(cfg, 7);
        EXPECT_EQ(CounterA(Counter::RTO), 1u);
        cfg.tailProbe = "tlp";
        double tlp = OnePacketPerPathLosing(cfg, 7);
        EXPECT_EQ(CounterA(Counter::RTO), 0u);
        EXPECT_EQ(CounterA(Counter::TAIL_PROBE), 1u);
        // (a coalesced ACK holds the tail's ACK for up to ackDelay, 2 us)
        EXPECT_LT(tlp, 27.0);
        EXPECT_GT(rackOnly, 100.0);
    }
}

TEST_F(RecoveryTest, LostTailProbeFallsBackToTheRto)
{
    // The last packet and its probe are both lost: the RTO is the backstop.
    ConnectionConfig cfg = InRoundTrips();
    m_dataSeen = 0;
    Build(cfg, 8 * 4096);
    for (int path = -1; path < int(ConnectionConfig::MAX_PATHS); ++path)
    {
        m_net->Link(m_a, m_b, path).dropIf = [this](const WireInfo& w) {
            return w.opcode == MR_WRITE && (m_dataSeen++ == 7 || m_dataSeen == 9);
        };
    }
    Write(1, 0, uint32_t(m_src.size()));
    m_net->RunUntilIdle(MilliSeconds(10));
    ASSERT_EQ(m_net->Completions(m_a).size(), 1u);
    EXPECT_EQ(m_net->Completions(m_a)[0].status, WcStatus::SUCCESS);
    EXPECT_EQ(m_src, m_dst);
    EXPECT_EQ(CounterA(Counter::TAIL_PROBE), 1u);
    EXPECT_GE(CounterA(Counter::RTO), 1u);
}

TEST_F(RecoveryTest, TailProbeAfterEachTimeoutShortensALossChainAtTheTail)
{
    // The last packet, its tail probe and its resend after the RTO are all lost. With "tlp"
    // (one probe until progress) the third copy waits for a second, backed-off RTO; with
    // "tlp-rto" a timeout allows another probe, which goes a probe timeout after the resend.
    std::map<std::string, double> done;
    for (const char* probe : {"tlp", "tlp-rto"})
    {
        SCOPED_TRACE(probe);
        ConnectionConfig cfg = InRoundTrips();
        cfg.tailProbe = probe;
        m_dataSeen = 0;
        Build(cfg, 8 * 4096);
        for (int path = -1; path < int(ConnectionConfig::MAX_PATHS); ++path)
        {
            m_net->Link(m_a, m_b, path).dropIf = [this](const WireInfo& w) {
                if (w.opcode != MR_WRITE)
                {
                    return false;
                }
                int n = m_dataSeen++;
                return n >= 7 && n <= 9; // the last packet, its probe, its resend
            };
        }
        Write(1, 0, uint32_t(m_src.size()));
        m_net->RunUntilIdle(MilliSeconds(10));
        ASSERT_EQ(m_net->Completions(m_a).size(), 1u);
        EXPECT_EQ(m_net->Completions(m_a)[0].status, WcStatus::SUCCESS);
        EXPECT_EQ(m_src, m_dst);
        done[probe] = double(m_lastCompletion) / 1e6;
        if (std::string(probe) == "tlp")
        {
            EXPECT_EQ(CounterA(Counter::TAIL_PROBE), 1u);
            EXPECT_EQ(CounterA(Counter::RTO), 2u);
        }
        else
        {
            EXPECT_EQ(CounterA(Counter::TAIL_PROBE), 2u);
            EXPECT_EQ(CounterA(Counter::RTO), 1u);
        }
    }
    EXPECT_LT(done["tlp-rto"], done["tlp"]);
}

TEST_F(RecoveryTest, SilentPathIsSuspectedFromTheOtherPathsBeforeItsRto)
{
    // Path 2 becomes a black hole 50 us into a 4 MiB transfer. With the RTO alone, its
    // packets wait one RTO (at least 100 us); with evidence from the other paths they move
    // within a few round trips.
    auto run = [this](const ConnectionConfig& cfg, Time* firstEvent) {
        Build(cfg, 4 << 20);
        m_net->At(MicroSeconds(50), [this] {
            m_net->Link(m_a, m_b, 2).dropIf = [](const WireInfo&) { return true; };
        });
        *firstEvent = -1;
        Write(1, 0, uint32_t(m_src.size()));
        Time lastCheck = 0;
        while (m_net->Completions(m_a).empty() && m_net->Now() < MilliSeconds(50))
        {
            lastCheck += MicroSeconds(1);
            m_net->RunUntil(lastCheck);
            if (*firstEvent < 0 && PathOf(2).status != PathStatus::ACTIVE)
            {
                *firstEvent = m_net->Now();
            }
        }
        ASSERT_EQ(m_net->Completions(m_a).size(), 1u);
        EXPECT_EQ(m_net->Completions(m_a)[0].status, WcStatus::SUCCESS);
        EXPECT_EQ(m_src, m_dst);
    };
    Time rtoOnly;
    run(Classic(), &rtoOnly);
    EXPECT_EQ(CounterA(Counter::PATH_SUSPECT), 0u);
    ConnectionConfig cfg = Classic();
    cfg.lossDetection = "rack";
    cfg.failureDetection = "cross-path";
    Time crossPath;
    run(cfg, &crossPath);
    EXPECT_GE(CounterA(Counter::PATH_SUSPECT), 1u);
    ASSERT_GT(rtoOnly, MicroSeconds(50));
    ASSERT_GT(crossPath, MicroSeconds(50));
    EXPECT_GE(rtoOnly - MicroSeconds(50), MicroSeconds(100));
    EXPECT_LE(crossPath - MicroSeconds(50), MicroSeconds(30)) << "a few round trips of ~5 us";
}

TEST_F(RecoveryTest, AHeldPathTakesNoSendsWhileItsConfirmationIsOut)
{
    // A paced sender (as under a receiver's rate hint) sprays a long transfer; path 2 becomes
    // a black hole 50 us in. With "none" it keeps taking its share of the paced sends until
    // it is found failed; with "hold" it takes none once a confirmation probe asks it about
    // an overdue packet, so fewer packets go into the hole and the others carry them.
    std::map<std::string, uint64_t> intoTheHole;
    for (const char* hold : {"none", "hold"})
    {
        SCOPED_TRACE(hold);
        ConnectionConfig cfg = ConnectionConfig();
        cfg.confirmHold = hold;
        cfg.lineRateBps = 50e9;
        Build(cfg, 8 << 20);
        uint64_t sentBefore = 0;
        m_net->At(MicroSeconds(50), [this, &sentBefore] {
            sentBefore = PathOf(2).packetsSent;
            m_net->Link(m_a, m_b, 2).dropIf = [](const WireInfo&) { return true; };
        });
        Write(1, 0, uint32_t(m_src.size()));
        Time t = 0;
        while (PathOf(2).status == PathStatus::ACTIVE && t < MilliSeconds(5))
        {
            t += MicroSeconds(1);
            m_net->RunUntil(t);
        }
        ASSERT_NE(PathOf(2).status, PathStatus::ACTIVE) << "the hole is never found";
        intoTheHole[hold] = PathOf(2).packetsSent - sentBefore;
        m_net->RunUntilIdle(MilliSeconds(100));
        ASSERT_EQ(m_net->Completions(m_a).size(), 1u);
        EXPECT_EQ(m_net->Completions(m_a)[0].status, WcStatus::SUCCESS);
        EXPECT_EQ(m_src, m_dst);
    }
    EXPECT_GT(intoTheHole["hold"], 0u);
    EXPECT_LT(2 * intoTheHole["hold"], intoTheHole["none"]);
}

TEST_F(RecoveryTest, CongestionAloneSuspectsNoPath)
{
    // A bottleneck with ECN and a deep queue: RTTs rise and marks arrive, ACKs still flow on
    // every path. Nothing is lost, so nothing may be declared lost or suspect.
    NetworkConfig net;
    net.downlinkRateBps = 25e9;
    net.ecnThresholdBytes = 256 * 1024;
    Build(InRoundTrips(), 8 << 20, net);
    Write(1, 0, uint32_t(m_src.size()));
    m_net->RunUntilIdle(MilliSeconds(50));
    ASSERT_EQ(m_net->Completions(m_a).size(), 1u);
    EXPECT_EQ(m_src, m_dst);
    EXPECT_EQ(CounterA(Counter::PATH_SUSPECT), 0u);
    EXPECT_EQ(CounterA(Counter::RTO), 0u);
    EXPECT_EQ(CounterA(Counter::TX_RETRANSMIT), 0u);
}

TEST_F(RecoveryTest, AdaptiveRtoFloorFollowsTheMinimumRtt)
{
    ConnectionConfig cfg = Classic();
    cfg.numPaths = 1;
    Build(cfg, 256 * 1024);
    Write(1, 0, uint32_t(m_src.size()));
    m_net->RunUntilIdle(MilliSeconds(10));
    EXPECT_EQ(PathOf(0).rtt.Rto(), cfg.rtoMin); // 4 us round trips, floored at 100 us
    cfg.rtoPolicy = "adaptive";
    Build(cfg, 256 * 1024);
    Write(1, 0, uint32_t(m_src.size()));
    m_net->RunUntilIdle(MilliSeconds(10));
    Time minRtt = PathOf(0).rtt.Min();
    EXPECT_GT(minRtt, MicroSeconds(4));
    EXPECT_LT(PathOf(0).rtt.Rto(), MicroSeconds(50));
    EXPECT_GE(PathOf(0).rtt.Rto(), std::max(cfg.rtoFloor, Time(minRtt * cfg.rtoMinRttFactor)));
}

TEST_F(RecoveryTest, FirstFlightIsBoundedPerConnectionNotPerPath)
{
    NetworkConfig net;
    net.lineRateBps = 0; // the NIC does not limit the first flight: the windows do
    for (const char* policy : {"per-path", "per-connection"})
    {
        ConnectionConfig cfg = Classic();
        cfg.numPaths = 64;
        cfg.initialWindow = policy;
        Build(cfg, 4 << 20, net);
        Write(1, 0, uint32_t(m_src.size()));
        m_net->RunUntil(MicroSeconds(3)); // before the first ACK (2 us links)
        uint64_t flight = CounterA(Counter::TX_DATA);
        if (std::string(policy) == "per-path")
        {
            EXPECT_EQ(flight, 64u * 4u);
        }
        else
        {
            EXPECT_EQ(flight, uint64_t(cfg.initialConnectionWindow));
        }
        m_net->RunUntilIdle(MilliSeconds(50));
        ASSERT_EQ(m_net->Completions(m_a).size(), 1u) << policy;
        EXPECT_EQ(m_src, m_dst);
    }
}

TEST_F(RecoveryTest, BdpStartGivesFewPathsTheWholeFirstFlight)
{
    // "per-connection" caps a path at initialPathWindow (4), so one path starts with 4
    // packets, an eighth of the first flight; "bdp" gives the paths the scheduler sends on
    // the whole first flight (32), and 8 paths 4 each as before.
    NetworkConfig net;
    net.lineRateBps = 0; // the NIC does not limit the first flight: the windows do

    struct Case
    {
        const char* policy;
        uint32_t paths;
        const char* scheduler;
        uint64_t flight;
    };

    for (const Case& c : {Case{"per-connection", 1, "spray", 4},
                          Case{"bdp", 1, "spray", 32},
                          Case{"bdp", 8, "single", 32},
                          Case{"per-connection", 8, "single", 4},
                          Case{"bdp", 8, "spray", 32},
                          Case{"bdp", 64, "spray", 32}})
    {
        ConnectionConfig cfg = Classic();
        cfg.numPaths = c.paths;
        cfg.pathScheduler = c.scheduler;
        cfg.initialWindow = c.policy;
        Build(cfg, 1 << 20, net);
        Write(1, 0, uint32_t(m_src.size()));
        m_net->RunUntil(MicroSeconds(3)); // before the first ACK (2 us links)
        EXPECT_EQ(CounterA(Counter::TX_DATA), c.flight)
            << c.policy << " " << c.paths << " " << c.scheduler;
        m_net->RunUntilIdle(MilliSeconds(50));
        ASSERT_EQ(m_net->Completions(m_a).size(), 1u) << c.policy;
        EXPECT_EQ(m_src, m_dst);
    }
}

TEST_F(RecoveryTest, OneHundredTwentyEightPathsCarryATransferUnderLoss)
{
    ConnectionConfig cfg = InRoundTrips();
    cfg.numPaths = ConnectionConfig::MAX_PATHS;
    Build(cfg, 8 << 20);
    for (int path = -1; path < int(ConnectionConfig::MAX_PATHS); ++path)
    {
        m_net->Link(m_a, m_b, path).loss = 0.01;
        m_net->Link(m_b, m_a, path).loss = 0.01;
    }
    Write(1, 0, uint32_t(m_src.size()));
    m_net->RunUntilIdle(MilliSeconds(100));
    ASSERT_EQ(m_net->Completions(m_a).size(), 1u);
    EXPECT_EQ(m_net->Completions(m_a)[0].status, WcStatus::SUCCESS);
    EXPECT_EQ(m_src, m_dst);
    std::set<uint16_t> ports;
    for (uint32_t i = 0; i < cfg.numPaths; ++i)
    {
        ports.insert(PathOf(i).sourcePort);
    }
    EXPECT_EQ(ports.size(), size_t(cfg.numPaths));
    cfg.numPaths = ConnectionConfig::MAX_PATHS + 1;
    std::string why;
    EXPECT_FALSE(cfg.Validate(why));
}

} // namespace
} // namespace test
} // namespace metaroce
