/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

// The policy-name registry and the factories agree, and validation uses the registry.

#include "metaroce-congestion-control.h"
#include "metaroce-endpoint.h"
#include "metaroce-loss-detection.h"
#include "metaroce-path-scheduler.h"
#include "metaroce-policy-names.h"

#include <gtest/gtest.h>

namespace metaroce
{
namespace test
{
namespace
{

TEST(PolicyNamesTest, EveryRegisteredNameBuildsAndNoOtherDoes)
{
    for (const std::string& name : PolicyNames(PolicyKind::CONGESTION_CONTROL))
    {
        EXPECT_NE(CreateCongestionControl(name), nullptr) << name;
    }
    for (const std::string& name : PolicyNames(PolicyKind::PATH_SCHEDULER))
    {
        EXPECT_NE(CreatePathScheduler(name), nullptr) << name;
    }
    for (const std::string& name : PolicyNames(PolicyKind::LOSS_DETECTION))
    {
        EXPECT_NE(CreateLossDetection(name), nullptr) << name;
    }
    EXPECT_EQ(CreateCongestionControl("cubic"), nullptr);
    EXPECT_EQ(CreatePathScheduler("round-robin"), nullptr);
    EXPECT_EQ(CreateLossDetection("fack"), nullptr);
    for (const std::string& transport : PolicyNames(PolicyKind::TRANSPORT))
    {
        for (const std::string& recovery : PolicyNames(PolicyKind::ROCE_RECOVERY))
        {
            Endpoint ep(EndpointConfig{});
            ConnectionConfig cfg;
            cfg.transport = transport;
            cfg.rocev2.recovery = recovery;
            uint32_t qpn = 0;
            EXPECT_EQ(ep.CreateConnection(cfg, qpn), PostStatus::OK) << transport << recovery;
        }
    }
}

TEST(PolicyNamesTest, ValidationNamesTheFieldAndTheChoices)
{
    EXPECT_EQ(PolicyChoices(PolicyKind::CONGESTION_CONTROL), "aimd, dctcp or fixed");
    EXPECT_EQ(PolicyChoices(PolicyKind::ROCE_RECOVERY), "gbn or irn");
    ConnectionConfig cfg;
    cfg.congestionControl = "cubic";
    std::string why;
    EXPECT_FALSE(cfg.Validate(why));
    EXPECT_EQ(why, "congestionControl \"cubic\": expected aimd, dctcp or fixed");
    cfg = ConnectionConfig();
    cfg.transport = "tcp";
    EXPECT_FALSE(cfg.Validate(why));
    EXPECT_EQ(why, "transport \"tcp\": expected metaroce or rocev2");
    cfg = ConnectionConfig();
    cfg.lossDetection = "fack";
    Endpoint ep(EndpointConfig{});
    uint32_t qpn = 0;
    EXPECT_EQ(ep.CreateConnection(cfg, qpn, &why), PostStatus::INVALID_ARGUMENT);
    EXPECT_EQ(why, "lossDetection \"fack\": expected " + PolicyChoices(PolicyKind::LOSS_DETECTION));
}

TEST(PolicyNamesTest, RecoveryPoliciesAreCheckedByName)
{
    // The recovery policies of issue 16 are flags of the requester, not objects: every
    // registered name makes a connection, any other name is refused with the field's name.
    const std::pair<PolicyKind, std::string ConnectionConfig::*> kinds[] = {
        {PolicyKind::TAIL_PROBE, &ConnectionConfig::tailProbe},
        {PolicyKind::FAILURE_DETECTION, &ConnectionConfig::failureDetection},
        {PolicyKind::RTO_POLICY, &ConnectionConfig::rtoPolicy},
        {PolicyKind::INITIAL_WINDOW, &ConnectionConfig::initialWindow},
        {PolicyKind::ACK_POLICY, &ConnectionConfig::ackPolicy},
        {PolicyKind::RETURN_WINDOW, &ConnectionConfig::returnWindow},
        {PolicyKind::CONFIRM_HOLD, &ConnectionConfig::confirmHold},
    };
    for (const auto& [kind, field] : kinds)
    {
        for (const std::string& name : PolicyNames(kind))
        {
            Endpoint ep(EndpointConfig{});
            ConnectionConfig cfg;
            cfg.*field = name;
            uint32_t qpn = 0;
            EXPECT_EQ(ep.CreateConnection(cfg, qpn), PostStatus::OK) << name;
        }
        ConnectionConfig cfg;
        cfg.*field = "bogus";
        std::string why;
        EXPECT_FALSE(cfg.Validate(why));
        EXPECT_EQ(why,
                  std::string(PolicyField(kind)) + " \"bogus\": expected " + PolicyChoices(kind));
    }
}

} // namespace
} // namespace test
} // namespace metaroce
