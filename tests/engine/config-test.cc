/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

// ConnectionConfig equality (connections with equal settings share one copy at the endpoint).

#include "metaroce-config.h"
#include "metaroce-endpoint.h"

#include <gtest/gtest.h>

namespace metaroce
{
namespace test
{
namespace
{

TEST(ConnectionConfigTest, EveryFieldTakesPartInEquality)
{
    // One line per field: a field left out of operator== would let two connections with
    // different settings share one configuration.
    const ConnectionConfig base;
    EXPECT_EQ(ConnectionConfig(), base);
    {
        ConnectionConfig c;
        c.transport += "x";
        EXPECT_NE(c, base) << "transport";
    }
    {
        ConnectionConfig c;
        c.mtu += 1;
        EXPECT_NE(c, base) << "mtu";
    }
    {
        ConnectionConfig c;
        c.maxMessageSize += 1;
        EXPECT_NE(c, base) << "maxMessageSize";
    }
    {
        ConnectionConfig c;
        c.maxStreams = uint16_t(c.maxStreams + 1);
        EXPECT_NE(c, base) << "maxStreams";
    }
    {
        ConnectionConfig c;
        c.maxOutstandingWrs += 1;
        EXPECT_NE(c, base) << "maxOutstandingWrs";
    }
    {
        ConnectionConfig c;
        c.maxPostedRecvs += 1;
        EXPECT_NE(c, base) << "maxPostedRecvs";
    }
    {
        ConnectionConfig c;
        c.numPaths += 1;
        EXPECT_NE(c, base) << "numPaths";
    }
    {
        ConnectionConfig c;
        c.sackWindow += 1;
        EXPECT_NE(c, base) << "sackWindow";
    }
    {
        ConnectionConfig c;
        c.sourcePortBase = uint16_t(c.sourcePortBase + 1);
        EXPECT_NE(c, base) << "sourcePortBase";
    }
    {
        ConnectionConfig c;
        c.pathScheduler += "x";
        EXPECT_NE(c, base) << "pathScheduler";
    }
    {
        ConnectionConfig c;
        c.congestionControl += "x";
        EXPECT_NE(c, base) << "congestionControl";
    }
    {
        ConnectionConfig c;
        c.initialPathWindow += 1;
        EXPECT_NE(c, base) << "initialPathWindow";
    }
    {
        ConnectionConfig c;
        c.initialWindow += "x";
        EXPECT_NE(c, base) << "initialWindow";
    }
    {
        ConnectionConfig c;
        c.initialConnectionWindow += 1;
        EXPECT_NE(c, base) << "initialConnectionWindow";
    }
    {
        ConnectionConfig c;
        c.minPathWindow += 1;
        EXPECT_NE(c, base) << "minPathWindow";
    }
    {
        ConnectionConfig c;
        c.maxPathWindow += 1;
        EXPECT_NE(c, base) << "maxPathWindow";
    }
    {
        ConnectionConfig c;
        c.connectionWindow += 1;
        EXPECT_NE(c, base) << "connectionWindow";
    }
    {
        ConnectionConfig c;
        c.aimdIncrease += 1;
        EXPECT_NE(c, base) << "aimdIncrease";
    }
    {
        ConnectionConfig c;
        c.aimdDecrease += 1;
        EXPECT_NE(c, base) << "aimdDecrease";
    }
    {
        ConnectionConfig c;
        c.dctcpGain += 1;
        EXPECT_NE(c, base) << "dctcpGain";
    }
    {
        ConnectionConfig c;
        c.lossWindowFactor += 1;
        EXPECT_NE(c, base) << "lossWindowFactor";
    }
    {
        ConnectionConfig c;
        c.slowStartMinRtt += 1;
        EXPECT_NE(c, base) << "slowStartMinRtt";
    }
    {
        ConnectionConfig c;
        c.longPathPacingGain += 1;
        EXPECT_NE(c, base) << "longPathPacingGain";
    }
    {
        ConnectionConfig c;
        c.lineRateBps += 1;
        EXPECT_NE(c, base) << "lineRateBps";
    }
    {
        ConnectionConfig c;
        c.lossDetection += "x";
        EXPECT_NE(c, base) << "lossDetection";
    }
    {
        ConnectionConfig c;
        c.reorderThreshold += 1;
        EXPECT_NE(c, base) << "reorderThreshold";
    }
    {
        ConnectionConfig c;
        c.rackReorderFraction += 1;
        EXPECT_NE(c, base) << "rackReorderFraction";
    }
    {
        ConnectionConfig c;
        c.rackReorderMin += 1;
        EXPECT_NE(c, base) << "rackReorderMin";
    }
    {
        ConnectionConfig c;
        c.tailProbe += "x";
        EXPECT_NE(c, base) << "tailProbe";
    }
    {
        ConnectionConfig c;
        c.tailProbeRtts += 1;
        EXPECT_NE(c, base) << "tailProbeRtts";
    }
    {
        ConnectionConfig c;
        c.failureDetection += "x";
        EXPECT_NE(c, base) << "failureDetection";
    }
    {
        ConnectionConfig c;
        c.suspectLosses += 1;
        EXPECT_NE(c, base) << "suspectLosses";
    }
    {
        ConnectionConfig c;
        c.rtoPolicy += "x";
        EXPECT_NE(c, base) << "rtoPolicy";
    }
    {
        ConnectionConfig c;
        c.rtoFloor += 1;
        EXPECT_NE(c, base) << "rtoFloor";
    }
    {
        ConnectionConfig c;
        c.rtoMinRttFactor += 1;
        EXPECT_NE(c, base) << "rtoMinRttFactor";
    }
    {
        ConnectionConfig c;
        c.rtoInitial += 1;
        EXPECT_NE(c, base) << "rtoInitial";
    }
    {
        ConnectionConfig c;
        c.rtoMin += 1;
        EXPECT_NE(c, base) << "rtoMin";
    }
    {
        ConnectionConfig c;
        c.rtoMax += 1;
        EXPECT_NE(c, base) << "rtoMax";
    }
    {
        ConnectionConfig c;
        c.failureThreshold += 1;
        EXPECT_NE(c, base) << "failureThreshold";
    }
    {
        ConnectionConfig c;
        c.probeInterval += 1;
        EXPECT_NE(c, base) << "probeInterval";
    }
    {
        ConnectionConfig c;
        c.connectionTimeout += 1;
        EXPECT_NE(c, base) << "connectionTimeout";
    }
    {
        ConnectionConfig c;
        c.retryLimit += 1;
        EXPECT_NE(c, base) << "retryLimit";
    }
    {
        ConnectionConfig c;
        c.rnrRetryDelay += 1;
        EXPECT_NE(c, base) << "rnrRetryDelay";
    }
    {
        ConnectionConfig c;
        c.rnrRetryLimit += 1;
        EXPECT_NE(c, base) << "rnrRetryLimit";
    }
    {
        ConnectionConfig c;
        c.ackPolicy += "x";
        EXPECT_NE(c, base) << "ackPolicy";
    }
    {
        ConnectionConfig c;
        c.ackCoalescePackets += 1;
        EXPECT_NE(c, base) << "ackCoalescePackets";
    }
    {
        ConnectionConfig c;
        c.ackEveryPackets += 1;
        EXPECT_NE(c, base) << "ackEveryPackets";
    }
    {
        ConnectionConfig c;
        c.ackDelay += 1;
        EXPECT_NE(c, base) << "ackDelay";
    }
    {
        ConnectionConfig c;
        c.ackRepeat += 1;
        EXPECT_NE(c, base) << "ackRepeat";
    }
    {
        ConnectionConfig c;
        c.ackRepeatGap += 1;
        EXPECT_NE(c, base) << "ackRepeatGap";
    }
    {
        ConnectionConfig c;
        c.maxRdAtomic += 1;
        EXPECT_NE(c, base) << "maxRdAtomic";
    }
    {
        ConnectionConfig c;
        c.rocev2.localAckTimeout = uint8_t(c.rocev2.localAckTimeout + 1);
        EXPECT_NE(c, base) << "rocev2.localAckTimeout";
    }
    {
        ConnectionConfig c;
        c.rocev2.retryCount = uint8_t(c.rocev2.retryCount + 1);
        EXPECT_NE(c, base) << "rocev2.retryCount";
    }
    {
        ConnectionConfig c;
        c.rocev2.rnrRetry = uint8_t(c.rocev2.rnrRetry + 1);
        EXPECT_NE(c, base) << "rocev2.rnrRetry";
    }
    {
        ConnectionConfig c;
        c.rocev2.minRnrTimer = uint8_t(c.rocev2.minRnrTimer + 1);
        EXPECT_NE(c, base) << "rocev2.minRnrTimer";
    }
    {
        ConnectionConfig c;
        c.rocev2.ackEveryPackets += 1;
        EXPECT_NE(c, base) << "rocev2.ackEveryPackets";
    }
    {
        ConnectionConfig c;
        c.rocev2.ackDelay += 1;
        EXPECT_NE(c, base) << "rocev2.ackDelay";
    }
    {
        ConnectionConfig c;
        c.rocev2.maxInflightPackets += 1;
        EXPECT_NE(c, base) << "rocev2.maxInflightPackets";
    }
    {
        ConnectionConfig c;
        c.rocev2.recovery += "x";
        EXPECT_NE(c, base) << "rocev2.recovery";
    }
    {
        ConnectionConfig c;
        c.rocev2.irnRtoLow += 1;
        EXPECT_NE(c, base) << "rocev2.irnRtoLow";
    }
    {
        ConnectionConfig c;
        c.rocev2.irnRtoHigh += 1;
        EXPECT_NE(c, base) << "rocev2.irnRtoHigh";
    }
    {
        ConnectionConfig c;
        c.rocev2.irnLowThreshold += 1;
        EXPECT_NE(c, base) << "rocev2.irnLowThreshold";
    }
    {
        ConnectionConfig c;
        c.rocev2.irnRtoBackoff = !c.rocev2.irnRtoBackoff;
        EXPECT_NE(c, base) << "rocev2.irnRtoBackoff";
    }
    {
        ConnectionConfig c;
        c.rocev2.irnWindow += 1;
        EXPECT_NE(c, base) << "rocev2.irnWindow";
    }
    {
        ConnectionConfig c;
        c.rocev2.dscp = uint8_t(c.rocev2.dscp + 1);
        EXPECT_NE(c, base) << "rocev2.dscp";
    }
    {
        ConnectionConfig c;
        c.rocev2.cnpDscp = uint8_t(c.rocev2.cnpDscp + 1);
        EXPECT_NE(c, base) << "rocev2.cnpDscp";
    }
    {
        ConnectionConfig c;
        c.rocev2.maxRdAtomic = uint8_t(c.rocev2.maxRdAtomic + 1);
        EXPECT_NE(c, base) << "rocev2.maxRdAtomic";
    }
    {
        ConnectionConfig c;
        c.rocev2.dcqcn = !c.rocev2.dcqcn;
        EXPECT_NE(c, base) << "rocev2.dcqcn";
    }
    {
        ConnectionConfig c;
        c.rocev2.dcqcnG += 1;
        EXPECT_NE(c, base) << "rocev2.dcqcnG";
    }
    {
        ConnectionConfig c;
        c.rocev2.dcqcnInitialAlpha += 1;
        EXPECT_NE(c, base) << "rocev2.dcqcnInitialAlpha";
    }
    {
        ConnectionConfig c;
        c.rocev2.dcqcnAlphaPeriod += 1;
        EXPECT_NE(c, base) << "rocev2.dcqcnAlphaPeriod";
    }
    {
        ConnectionConfig c;
        c.rocev2.dcqcnRateIncreasePeriod += 1;
        EXPECT_NE(c, base) << "rocev2.dcqcnRateIncreasePeriod";
    }
    {
        ConnectionConfig c;
        c.rocev2.dcqcnByteCounter += 1;
        EXPECT_NE(c, base) << "rocev2.dcqcnByteCounter";
    }
    {
        ConnectionConfig c;
        c.rocev2.dcqcnFastRecoverySteps += 1;
        EXPECT_NE(c, base) << "rocev2.dcqcnFastRecoverySteps";
    }
    {
        ConnectionConfig c;
        c.rocev2.dcqcnRaiBps += 1;
        EXPECT_NE(c, base) << "rocev2.dcqcnRaiBps";
    }
    {
        ConnectionConfig c;
        c.rocev2.dcqcnRhaiBps += 1;
        EXPECT_NE(c, base) << "rocev2.dcqcnRhaiBps";
    }
    {
        ConnectionConfig c;
        c.rocev2.dcqcnMinRateBps += 1;
        EXPECT_NE(c, base) << "rocev2.dcqcnMinRateBps";
    }
    {
        ConnectionConfig c;
        c.rocev2.cnpInterval += 1;
        EXPECT_NE(c, base) << "rocev2.cnpInterval";
    }
}

TEST(ConnectionConfigTest, ConnectionsShareEqualSettingsAndKeepTheirOwn)
{
    Endpoint ep(EndpointConfig{});
    ConnectionConfig a;
    ConnectionConfig b;
    b.numPaths = 4;
    uint32_t qa1 = 0;
    uint32_t qa2 = 0;
    uint32_t qb = 0;
    ASSERT_EQ(ep.CreateConnection(a, qa1), PostStatus::OK);
    ASSERT_EQ(ep.CreateConnection(b, qb), PostStatus::OK);
    ASSERT_EQ(ep.CreateConnection(a, qa2), PostStatus::OK);
    EXPECT_EQ(&ep.GetConnection(qa1)->Config(), &ep.GetConnection(qa2)->Config());
    EXPECT_NE(&ep.GetConnection(qa1)->Config(), &ep.GetConnection(qb)->Config());
    EXPECT_EQ(ep.GetConnection(qb)->Config().numPaths, 4u);
    EXPECT_EQ(ep.GetConnection(qa2)->Config().numPaths, 8u);
    // More distinct settings than the endpoint keeps: each connection keeps its own.
    std::vector<uint32_t> qpns;
    for (uint32_t paths = 1; paths <= 12; ++paths)
    {
        ConnectionConfig c;
        c.numPaths = paths;
        uint32_t q = 0;
        ASSERT_EQ(ep.CreateConnection(c, q), PostStatus::OK);
        qpns.push_back(q);
    }
    for (uint32_t i = 0; i < qpns.size(); ++i)
    {
        EXPECT_EQ(ep.GetConnection(qpns[i])->Config().numPaths, i + 1);
    }
    EXPECT_EQ(ep.GetConnection(qb)->Config().numPaths, 4u);
}

} // namespace
} // namespace test
} // namespace metaroce
