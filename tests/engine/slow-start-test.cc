/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

// Slow start on long paths (ConnectionConfig::slowStartMinRtt, issue 19): the window rules one
// ACK at a time, then a transfer over a 10 ms round trip on the pair harness.

#include "metaroce-congestion-control.h"
#include "pair-fixture.h"

#include <algorithm>
#include <gtest/gtest.h>
#include <limits>
#include <map>
#include <vector>

namespace metaroce
{
namespace test
{
namespace
{

const Time LONG_RTT = MilliSeconds(10);       //!< 5 ms each way
const Time DATACENTER_RTT = MicroSeconds(20); //!< a few switch hops with some queueing

/// One path's controller and window, fed ACKs by hand.
class WindowRules : public ::testing::TestWithParam<const char*>
{
  protected:
    void SetUp() override
    {
        m_cc = CreateCongestionControl(GetParam());
        ASSERT_NE(m_cc, nullptr);
        m_path.cwnd = 4;
        // (A smoothed RTT for the once-per-RTT decrease; the slow-start rule reads the
        // connection's minimum RTT from the AckEvent.)
        m_path.rtt.AddSample(LONG_RTT, MicroSeconds(100), MilliSeconds(100));
    }

    /// An ACK of \p acked packets at a connection minimum RTT of \p minRtt.
    bool Ack(uint32_t acked,
             Time minRtt,
             bool ece = false,
             bool connectionLimited = false,
             bool windowLimited = true)
    {
        AckEvent ev;
        ev.windowLimited = windowLimited;
        ev.now = m_now;
        ev.newlyAcked = acked;
        ev.ceCount = ece ? acked : 0;
        ev.ece = ece;
        ev.minRtt = minRtt;
        ev.connectionLimited = connectionLimited;
        return m_cc->OnAck(m_path, ev, m_cfg);
    }

    /// A round trip of \p minRtt: one ACK for every packet of the window.
    void RoundTrip(Time minRtt, bool connectionLimited = false)
    {
        m_now += minRtt;
        uint32_t window = uint32_t(m_path.cwnd);
        for (uint32_t i = 0; i < window; ++i)
        {
            Ack(1, minRtt, false, connectionLimited);
        }
    }

    ConnectionConfig m_cfg;
    PathState m_path;
    std::unique_ptr<CongestionControl> m_cc;
    Time m_now{MilliSeconds(1)};
};

TEST_P(WindowRules, ALongPathDoublesItsWindowPerRoundTrip)
{
    for (double expected : {8.0, 16.0, 32.0, 64.0, 128.0})
    {
        RoundTrip(LONG_RTT);
        EXPECT_DOUBLE_EQ(m_path.cwnd, expected);
    }
    RoundTrip(LONG_RTT);
    RoundTrip(LONG_RTT);
    EXPECT_DOUBLE_EQ(m_path.cwnd, m_cfg.maxPathWindow) << "up to maxPathWindow, not beyond";
}

TEST_P(WindowRules, ADatacenterPathOrSlowStartOffGrowsByOnePacketPerRoundTrip)
{
    RoundTrip(DATACENTER_RTT);
    EXPECT_NEAR(m_path.cwnd, 5.0, 0.1);
    RoundTrip(m_cfg.slowStartMinRtt - 1);
    EXPECT_LT(m_path.cwnd, 6.01) << "just below the threshold";
    m_cfg.slowStartMinRtt = 0; // off
    m_path.cwnd = 4;
    RoundTrip(LONG_RTT);
    EXPECT_NEAR(m_path.cwnd, 5.0, 0.1);
    RoundTrip(0); // no RTT sample yet
    EXPECT_LT(m_path.cwnd, 6.01);
}

TEST_P(WindowRules, AnEcnEchoEndsSlowStart)
{
    RoundTrip(LONG_RTT);
    RoundTrip(LONG_RTT);
    ASSERT_DOUBLE_EQ(m_path.cwnd, 16.0);
    m_now += LONG_RTT;
    for (int i = 0; i < 16; ++i)
    {
        Ack(1, LONG_RTT, true); // every packet of a round trip marked
    }
    const double after = m_path.cwnd;
    EXPECT_LT(after, 16.0) << "the marks cut the window";
    RoundTrip(LONG_RTT);
    EXPECT_LE(m_path.cwnd, after + 1.01) << "additive increase after the marks";
}

TEST_P(WindowRules, TheConnectionsCapEndsSlowStart)
{
    RoundTrip(LONG_RTT);
    ASSERT_DOUBLE_EQ(m_path.cwnd, 8.0);
    RoundTrip(LONG_RTT, true); // the connection had connectionWindow packets in flight
    EXPECT_LE(m_path.cwnd, 9.01);
    RoundTrip(LONG_RTT);
    EXPECT_LE(m_path.cwnd, 10.01) << "slow start does not come back when the cap is left";
}

TEST_P(WindowRules, AnApplicationLimitedPathDoesNotSlowStart)
{
    RoundTrip(LONG_RTT);
    ASSERT_DOUBLE_EQ(m_path.cwnd, 8.0);
    m_now += LONG_RTT;
    for (int i = 0; i < 100; ++i)
    {
        Ack(1, LONG_RTT, false, false, false); // less than half the window was in flight
    }
    EXPECT_DOUBLE_EQ(m_path.cwnd, 8.0) << "the application, not the window, limited the path";
    RoundTrip(LONG_RTT);
    EXPECT_DOUBLE_EQ(m_path.cwnd, 16.0) << "still in slow start when the window limits again";
    // Additive increase (a datacenter path) is as before: it does not read the flag.
    m_path.cwnd = 4;
    m_now += DATACENTER_RTT;
    for (int i = 0; i < 4; ++i)
    {
        Ack(1, DATACENTER_RTT, false, false, false);
    }
    EXPECT_NEAR(m_path.cwnd, 5.0, 0.1);
}

TEST_P(WindowRules, ATimeoutSlowStartsBackToAPartOfTheWindow)
{
    m_path.cwnd = 64;
    m_cc->OnTimeout(m_path, m_cfg);
    EXPECT_DOUBLE_EQ(m_path.cwnd, m_cfg.minPathWindow);
    for (int i = 0; i < 5; ++i)
    {
        RoundTrip(LONG_RTT);
    }
    // 1, 2, 4, 8, 16, then up to aimdDecrease x 64
    EXPECT_DOUBLE_EQ(m_path.cwnd, 32.0);
    RoundTrip(LONG_RTT);
    EXPECT_LT(m_path.cwnd, 33.01) << "additive increase above it";
    // At a datacenter's round trip the timeout leaves the additive increase alone.
    m_path.cwnd = 64;
    m_cc->OnTimeout(m_path, m_cfg);
    RoundTrip(DATACENTER_RTT);
    EXPECT_DOUBLE_EQ(m_path.cwnd, 2.0);
}

TEST_P(WindowRules, ATimeoutBeforeTheFirstRttSampleLeavesSlowStartAlone)
{
    // A datacenter's initial RTO fires before a 10 ms path has answered at all: the RTO was
    // too short, the path is not congested, so slow start must still run to its end.
    PathState fresh;
    fresh.cwnd = 4;
    m_path = fresh; // no RTT sample
    m_cc->OnTimeout(m_path, m_cfg);
    m_cc->OnTimeout(m_path, m_cfg);
    EXPECT_DOUBLE_EQ(m_path.cwnd, m_cfg.minPathWindow);
    m_path.rtt.AddSample(LONG_RTT, MicroSeconds(100), MilliSeconds(100));
    for (int i = 0; i < 6; ++i)
    {
        RoundTrip(LONG_RTT);
    }
    EXPECT_DOUBLE_EQ(m_path.cwnd, 64.0) << "1, 2, 4, 8, 16, 32, 64: no end from those timeouts";
}

TEST_P(WindowRules, AStaleEcnEchoAfterATimeoutDoesNotEndSlowStart)
{
    // A deep marked queue delays the first flight past the RTO; the original packets' ACKs,
    // CE-echoing, come just after the timeout. They are for the window the timeout already
    // collapsed: slow start must still run back to aimdDecrease x 64.
    m_path.cwnd = 64;
    m_cc->OnTimeout(m_path, m_cfg);
    Ack(1, LONG_RTT, true);
    Ack(1, LONG_RTT, true);
    for (int i = 0; i < 5; ++i)
    {
        RoundTrip(LONG_RTT);
    }
    EXPECT_DOUBLE_EQ(m_path.cwnd, 32.0) << "1, 2, 4, 8, 16, 32: the stale echoes ended nothing";
    // An echo one round trip later is news: it ends slow start (and decreases).
    m_path.cwnd = 8;
    Ack(1, LONG_RTT, true);
    RoundTrip(LONG_RTT);
    EXPECT_LT(m_path.cwnd, 9.01) << "additive increase after a fresh echo";
}

TEST_P(WindowRules, MarksEndingSlowStartHalveTheWindow)
{
    // Slow start overshoots; the first fully marked round trip must take back about half,
    // for "dctcp" too (whose estimate would otherwise start near 0 and cut almost nothing).
    for (int i = 0; i < 5; ++i)
    {
        RoundTrip(LONG_RTT); // 4 -> 128
    }
    ASSERT_DOUBLE_EQ(m_path.cwnd, 128.0);
    m_now += LONG_RTT;
    for (uint32_t i = 0; i < 128; ++i)
    {
        Ack(1, LONG_RTT, true);
    }
    EXPECT_LE(m_path.cwnd, 70.0) << "about half (dctcp: its estimate over the last window)";
    EXPECT_GE(m_path.cwnd, 60.0);
}

INSTANTIATE_TEST_SUITE_P(SlowStart, WindowRules, ::testing::Values("aimd", "dctcp"));

TEST(SlowStartTest, FixedWindowsStayFixed)
{
    ConnectionConfig cfg;
    PathState path;
    path.cwnd = 4;
    auto cc = CreateCongestionControl("fixed");
    AckEvent ev;
    ev.newlyAcked = 4;
    ev.minRtt = LONG_RTT;
    cc->OnAck(path, ev, cfg);
    EXPECT_DOUBLE_EQ(path.cwnd, 4.0);
}

TEST(SlowStartTest, ANegativeThresholdIsRejected)
{
    ConnectionConfig cfg;
    std::string why;
    EXPECT_TRUE(cfg.Validate(why)) << why;
    cfg.slowStartMinRtt = -1;
    EXPECT_FALSE(cfg.Validate(why));
    EXPECT_NE(why.find("slowStartMinRtt"), std::string::npos) << why;
    cfg.slowStartMinRtt = 0;
    EXPECT_TRUE(cfg.Validate(why)) << why;
    // The pacing gain: 0 (off) or 1 to 100; nothing that would overflow the pacer's gap.
    for (double bad : {-1.0,
                       1e-9,
                       0.5,
                       101.0,
                       std::numeric_limits<double>::infinity(),
                       std::numeric_limits<double>::quiet_NaN()})
    {
        cfg.longPathPacingGain = bad;
        EXPECT_FALSE(cfg.Validate(why)) << bad;
        EXPECT_NE(why.find("longPathPacingGain"), std::string::npos) << why;
    }
    for (double good : {0.0, 1.0, 2.0, 100.0})
    {
        cfg.longPathPacingGain = good;
        EXPECT_TRUE(cfg.Validate(why)) << good << ": " << why;
    }
}

/// A transfer over a 10 ms round trip (5 ms each way, every path), loss-free.
class LongPathTest : public PairTest
{
  protected:
    /// Build a pair with \p bytes of buffer, \p cfg and 5 ms each way, logging what a sends.
    void BuildLongPath(ConnectionConfig cfg, size_t bytes)
    {
        // As the HIL's link timers do for a long path: the first flight must not time out
        // before its ACKs can return.
        cfg.rtoInitial = MilliSeconds(30);
        cfg.rtoMax = MilliSeconds(120);
        Build(cfg, bytes);
        m_net->EnableTxLog(true);
        m_net->Link(m_a, m_b).delay = MilliSeconds(5);
        m_net->Link(m_b, m_a).delay = MilliSeconds(5);
    }

    /// Send 8 MiB with \p cfg; \return when it completed.
    Time Transfer(const ConnectionConfig& cfg)
    {
        BuildLongPath(cfg, 8 << 20);
        EXPECT_EQ(Write(1, 0, uint32_t(m_src.size())), PostStatus::OK);
        m_net->RunUntilIdle(MilliSeconds(2000));
        EXPECT_EQ(m_net->Completions(m_a).size(), 1u);
        EXPECT_EQ(m_src, m_dst);
        EXPECT_EQ(CounterA(Counter::TX_RETRANSMIT), 0u);
        EXPECT_EQ(CounterA(Counter::RTO), 0u);
        return m_lastCompletion;
    }

    /// \return the most data packets a sent in any \p span.
    size_t LargestBurst(Time span)
    {
        std::vector<Time> sent;
        for (const TxRecord& r : m_net->TxLog())
        {
            if (r.src == m_a && r.opcode == MR_WRITE)
            {
                sent.push_back(r.time);
            }
        }
        size_t most = 0;
        size_t first = 0;
        for (size_t i = 0; i < sent.size(); ++i)
        {
            while (sent[i] - sent[first] >= span)
            {
                ++first;
            }
            most = std::max(most, i - first + 1);
        }
        return most;
    }

    /// \return the sum of the path windows.
    double WindowSum()
    {
        ConnectionConfig cfg;
        double sum = 0;
        for (uint32_t p = 0; p < cfg.numPaths; ++p)
        {
            sum += PathOf(p).cwnd;
        }
        return sum;
    }
};

TEST_F(LongPathTest, ReachesTheConnectionWindowInAFewRoundTrips)
{
    // 2,048 packets: 32, 64, 128, 256, 512 in the first five round trips, then 512 per round
    // trip (connectionWindow) - about 8 round trips. By +1 packet per path per round trip
    // from 32 it takes about 19.
    ConnectionConfig cfg;
    Time done = Transfer(cfg);
    EXPECT_LT(done, MilliSeconds(100)) << "completed at " << done / 1000000 << " us";
    EXPECT_GE(WindowSum(), 0.9 * cfg.connectionWindow) << "the windows reached the cap";
    EXPECT_LE(WindowSum(), 1.25 * cfg.connectionWindow) << "and slow start stopped there";
}

TEST_F(LongPathTest, WithSlowStartOffTheWindowCreepsUp)
{
    ConnectionConfig cfg;
    cfg.slowStartMinRtt = 0;
    Time done = Transfer(cfg);
    EXPECT_GT(done, MilliSeconds(150)) << "completed at " << done / 1000000 << " us";
    EXPECT_LT(WindowSum(), cfg.connectionWindow);
}

TEST_F(LongPathTest, PacesTheWindowOverTheRoundTrip)
{
    // 2 x the windows per smoothed RTT: at the 512-packet cap about 100 packets per ms; an
    // unpaced window leaves as its ACKs come back, in a burst at line rate.
    ConnectionConfig cfg;
    Time done = Transfer(cfg);
    EXPECT_LT(done, MilliSeconds(100)) << "completed at " << done / 1000000 << " us";
    EXPECT_LE(LargestBurst(MilliSeconds(1)), 150u);
}

TEST_F(LongPathTest, WithoutPacingAWindowLeavesInOneBurst)
{
    ConnectionConfig cfg;
    cfg.longPathPacingGain = 0;
    Transfer(cfg);
    EXPECT_GE(LargestBurst(MilliSeconds(1)), 400u);
}

TEST_F(LongPathTest, AnApplicationThatSendsLittleDoesNotGrowTheWindows)
{
    // 64 KiB (16 packets, 2 per path) per round trip for 30 round trips: the windows (32
    // packets at the start) are never filled, so slow start must not grow them; before the
    // check they grew by every packet acknowledged, to about 16 x 30 packets, and a larger
    // message would have left at once at the pacing rate of that window.
    const uint32_t chunk = 64 << 10;
    const uint32_t rounds = 30;
    BuildLongPath(ConnectionConfig(), size_t(chunk) * rounds);
    for (uint32_t i = 0; i < rounds; ++i)
    {
        m_net->At(LONG_RTT * i + 1, [this, i, chunk]() {
            EXPECT_EQ(Write(i + 1, size_t(chunk) * i, chunk), PostStatus::OK);
        });
    }
    m_net->RunUntilIdle(LONG_RTT * (rounds + 20));
    EXPECT_EQ(m_net->Completions(m_a).size(), rounds);
    EXPECT_EQ(m_src, m_dst);
    EXPECT_LE(WindowSum(), 64.0) << "application-limited paths kept their windows";
}

TEST_F(LongPathTest, PacedResendsOfASackGapAtTheTailDoNotWaitForAnAck)
{
    // One path, so that one ACK reveals a gap of three PSNs at the connection's tail, after
    // the last new packet left: the first resend leaves at once, the other two wait for the
    // pacer. Nothing else is to be sent, and the only ACK still to come is the last packet's,
    // so before the fix they waited a round trip (the first resend's ACK) or an RTO.
    ConnectionConfig cfg;
    cfg.numPaths = 1;
    const uint32_t packets = 64;
    BuildLongPath(cfg, size_t(packets) * cfg.mtu);
    std::map<uint32_t, int> seen;
    m_net->Link(m_a, m_b).dropIf = [&seen, packets](const WireInfo& w) {
        if (w.opcode != MR_WRITE)
        {
            return false;
        }
        // PSNs count from the path's initial PSN: drop the first copy of the 3 before the
        // last packet (found by order of first transmission).
        int& n = seen[w.psn];
        ++n;
        return n == 1 && seen.size() >= packets - 3 && seen.size() <= packets - 1;
    };
    ASSERT_EQ(Write(1, 0, uint32_t(m_src.size())), PostStatus::OK);
    m_net->RunUntilIdle(MilliSeconds(2000));
    ASSERT_EQ(m_net->Completions(m_a).size(), 1u);
    EXPECT_EQ(m_src, m_dst);
    EXPECT_EQ(CounterA(Counter::TX_RETRANSMIT), 3u);
    EXPECT_EQ(CounterA(Counter::RTO), 0u);
    // Resends of the three: within a millisecond of each other.
    std::vector<Time> resent;
    std::map<uint32_t, int> copies;
    for (const TxRecord& r : m_net->TxLog())
    {
        if (r.src == m_a && r.opcode == MR_WRITE && ++copies[r.psn] == 2)
        {
            resent.push_back(r.time);
        }
    }
    ASSERT_EQ(resent.size(), 3u);
    EXPECT_LT(resent.back() - resent.front(), MilliSeconds(1))
        << "resends at " << resent.front() / 1000000 << " and " << resent.back() / 1000000 << " us";
}

} // namespace
} // namespace test
} // namespace metaroce
