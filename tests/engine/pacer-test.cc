/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

// The pacer's slack (metaroce-pacer.h): none in the simulator, so that a paced connection keeps
// its exact spacing; the timer granularity of a real host in the HIL, so that a host that wakes
// tens of microseconds late still sends at the paced rate, in bursts.

#include "metaroce-multipath-connection.h"
#include "metaroce-pacer.h"
#include "pair-fixture.h"

#include <algorithm>
#include <gtest/gtest.h>
#include <random>

namespace metaroce
{
namespace test
{
namespace
{

constexpr double RATE_BPS = 10e9;
constexpr uint64_t WIRE_BYTES = 1250; // 1 us at 10 Gb/s

/// The pacer as it was before the slack: the reference for a slack of 0.
struct UnslackedPacer
{
    Time next{0};

    bool MayTransmit(Time now) const
    {
        return now >= next;
    }

    void OnTransmit(Time now, uint64_t wireBytes, double rateBps)
    {
        next = std::max(now, next) + TransmissionTime(wireBytes, rateBps);
    }
};

/// \return packets a host that asks at \p now sends back to back through \p pacer.
uint32_t
Burst(Pacer& pacer, Time now)
{
    uint32_t n = 0;
    while (pacer.MayTransmit(now) && n < 100000)
    {
        pacer.OnTransmit(now, WIRE_BYTES, RATE_BPS);
        ++n;
    }
    return n;
}

TEST(PacerTest, WithoutSlackEveryDecisionIsThePreviousPacers)
{
    std::mt19937_64 rng(7);
    Pacer pacer;
    UnslackedPacer reference;
    Time now = 0;
    for (int i = 0; i < 20000; ++i)
    {
        now += Time(rng() % 3000000); // 0-3 us: sometimes early, sometimes late
        ASSERT_EQ(pacer.MayTransmit(now), reference.MayTransmit(now)) << "step " << i;
        if (pacer.MayTransmit(now) || rng() % 4 == 0) // (OnTransmit is also called when paced)
        {
            const double rate = (rng() % 2) ? RATE_BPS : 25e9;
            pacer.OnTransmit(now, WIRE_BYTES, rate);
            reference.OnTransmit(now, WIRE_BYTES, rate);
        }
        ASSERT_EQ(pacer.NextRelease(), reference.next) << "step " << i;
    }
}

TEST(PacerTest, WithoutSlackOnePacketPerTransmissionTime)
{
    Pacer pacer;
    EXPECT_EQ(Burst(pacer, MicroSeconds(5)), 1u);
    EXPECT_EQ(pacer.NextRelease(), MicroSeconds(6));
    EXPECT_FALSE(pacer.MayTransmit(MicroSeconds(6) - 1));
    EXPECT_EQ(Burst(pacer, MicroSeconds(6)), 1u);
}

TEST(PacerTest, AfterAPauseTheBurstIsTwoSlacksWorth)
{
    Pacer pacer;
    pacer.SetSlack(MicroSeconds(10));
    // The first packet, then one per microsecond of the 2 x 10 us the slack allows.
    EXPECT_EQ(Burst(pacer, MicroSeconds(100)), 21u);
    EXPECT_EQ(pacer.NextRelease(), MicroSeconds(111));
    // Woken when the next packet is due: a slack's worth.
    EXPECT_EQ(Burst(pacer, pacer.NextRelease()), 11u);
}

TEST(PacerTest, NegativeSlackIsNone)
{
    Pacer pacer;
    pacer.SetSlack(-MicroSeconds(3));
    EXPECT_EQ(Burst(pacer, MicroSeconds(5)), 1u);
}

TEST(PacerTest, ALateHostKeepsTheRateAndNeverExceedsIt)
{
    // A host that wakes at the next release plus a random lateness up to the slack and sends
    // what the pacer allows: over 10 ms it sends the rate's worth within a slack's, and at no
    // time more than the rate's worth plus two slacks'.
    const Time slack = MicroSeconds(20);
    const Time txTime = TransmissionTime(WIRE_BYTES, RATE_BPS);
    std::mt19937_64 rng(11);
    Pacer pacer;
    pacer.SetSlack(slack);
    const Time start = MicroSeconds(1000);
    Time now = start;
    uint64_t sent = 0;
    while (now < start + MilliSeconds(10))
    {
        sent += Burst(pacer, now);
        const Time elapsed = now - start;
        ASSERT_LE(Time(sent) * txTime, elapsed + 2 * slack + txTime) << "at " << elapsed;
        now = std::max(now + 1, pacer.NextRelease()) + Time(rng() % uint64_t(slack));
    }
    const Time elapsed = now - start;
    EXPECT_GE(Time(sent) * txTime, elapsed - 2 * slack);
}

TEST(PacerTest, WithoutSlackALateHostLosesTheRate)
{
    // The same host without the slack: one packet per wake-up, so the lateness is lost.
    const Time txTime = TransmissionTime(WIRE_BYTES, RATE_BPS);
    std::mt19937_64 rng(11);
    Pacer pacer;
    Time now = MicroSeconds(1000);
    const Time start = now;
    uint64_t sent = 0;
    while (now < start + MilliSeconds(10))
    {
        sent += Burst(pacer, now);
        now = std::max(now + 1, pacer.NextRelease()) + Time(rng() % uint64_t(MicroSeconds(20)));
    }
    EXPECT_LT(Time(sent) * txTime, (now - start) / 5);
}

/// \return datagrams \p ep sends at one instant, the way a host's pump asks after its timer.
uint32_t
DataAtOneInstant(Endpoint& ep, Time now)
{
    if (ep.NextTimeout() <= now)
    {
        ep.HandleTimeout(now);
    }
    std::vector<uint8_t> buffer(Endpoint::MaxDatagramSize(4096));
    uint32_t n = 0;
    for (int i = 0; i < 1000; ++i)
    {
        TxDatagram tx;
        tx.buffer = buffer.data();
        tx.capacity = buffer.size();
        if (!ep.PollTransmit(now, tx))
        {
            break;
        }
        ++n;
    }
    return n;
}

class PacingSlackTest : public PairTest,
                        public ::testing::WithParamInterface<std::tuple<std::string, int64_t>>
{
};

TEST_P(PacingSlackTest, APacedConnectionSendsTheSlacksWorthAtOnce)
{
    const auto& [transport, slackUs] = GetParam();
    ConnectionConfig cfg = transport == "rocev2" ? RoceConfig() : ConnectionConfig();
    cfg.lineRateBps = RATE_BPS; // paced from the first packet (4 KiB: about 3.4 us each)
    EndpointConfig sender;
    sender.pacingSlack = MicroSeconds(slackUs);
    Build(cfg, 1 << 20, NetworkConfig(), sender);
    ASSERT_EQ(Write(1, 0, 1 << 20), PostStatus::OK);
    const uint32_t n = DataAtOneInstant(A(), MicroSeconds(100));
    const Time txTime = TransmissionTime(4096 + 100, RATE_BPS);
    if (slackUs == 0)
    {
        EXPECT_EQ(n, 1u);
    }
    else
    {
        // 2 x slack / 3.4 us, within the headers' share of a packet time
        EXPECT_GE(n, uint32_t(2 * MicroSeconds(slackUs) / txTime));
        EXPECT_LE(n, uint32_t(2 * MicroSeconds(slackUs) / TransmissionTime(4096, RATE_BPS)) + 1);
    }
}

INSTANTIATE_TEST_SUITE_P(Transports,
                         PacingSlackTest,
                         ::testing::Combine(::testing::Values("metaroce", "rocev2"),
                                            ::testing::Values(0, 20)));

} // namespace
} // namespace test
} // namespace metaroce
