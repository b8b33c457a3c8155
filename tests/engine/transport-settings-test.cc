/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

// The one mapping of transport fields onto a ConnectionConfig (scenario runner, HIL control
// plane, metaroce-perf): what it sets, and the message of each bad input.

#include "metaroce-policy-names.h"
#include "metaroce-transport-settings.h"

#include <gtest/gtest.h>
#include <limits>

namespace metaroce
{
namespace test
{
namespace
{

/// \return the message of applying \p s to a default configuration, or "" if it applies.
std::string
MessageOf(const TransportSettings& s)
{
    ConnectionConfig cfg;
    const std::optional<TransportError> error = ApplyTransportSettings(s, cfg);
    return error ? error->Message() : "";
}

TEST(TransportSettingsTest, SetsTheGivenFieldsAndKeepsTheRest)
{
    ConnectionConfig cfg;
    cfg.rtoMin = cfg.rtoMin * 3; // not a transport field: kept
    TransportSettings s;
    s.numPaths = 16;
    s.mtu = 1024;
    s.congestionControl = "dctcp";
    s.pathScheduler = "single";
    s.initialPathWindow = 2;
    s.maxPathWindow = 100;
    ASSERT_FALSE(ApplyTransportSettings(s, cfg));
    EXPECT_EQ(cfg.transport, "metaroce");
    EXPECT_EQ(cfg.numPaths, 16u);
    EXPECT_EQ(cfg.mtu, 1024u);
    EXPECT_EQ(cfg.congestionControl, "dctcp");
    EXPECT_EQ(cfg.pathScheduler, "single");
    EXPECT_EQ(cfg.initialPathWindow, 2);
    EXPECT_EQ(cfg.maxPathWindow, 100);
    EXPECT_EQ(cfg.rocev2.recovery, "gbn");
    EXPECT_EQ(cfg.rtoMin, ConnectionConfig().rtoMin * 3);

    // Nothing given: nothing changes.
    const ConnectionConfig before = cfg;
    ASSERT_FALSE(ApplyTransportSettings(TransportSettings{}, cfg));
    EXPECT_TRUE(cfg == before);
}

TEST(TransportSettingsTest, RoceV2HasOnePathAndDcqcnOrNothing)
{
    ConnectionConfig cfg;
    TransportSettings s;
    s.transport = "rocev2";
    s.numPaths = 8;
    s.congestionControl = "none";
    s.rocev2Recovery = "irn";
    ASSERT_FALSE(ApplyTransportSettings(s, cfg));
    EXPECT_EQ(cfg.transport, "rocev2");
    EXPECT_EQ(cfg.numPaths, 1u);
    EXPECT_FALSE(cfg.rocev2.dcqcn);
    EXPECT_EQ(cfg.congestionControl, ConnectionConfig().congestionControl);
    EXPECT_EQ(cfg.rocev2.recovery, "irn");
    s.congestionControl = "dcqcn";
    ASSERT_FALSE(ApplyTransportSettings(s, cfg));
    EXPECT_TRUE(cfg.rocev2.dcqcn);

    // A MetaRoCE congestion control is not RoCEv2's, nor the other way round.
    s.congestionControl = "aimd";
    EXPECT_EQ(MessageOf(s), "congestion control 'aimd': rocev2 takes dcqcn or none");
    TransportSettings m;
    m.congestionControl = "dcqcn";
    EXPECT_EQ(MessageOf(m), "congestion control 'dcqcn': expected aimd, dctcp or fixed");
}

TEST(TransportSettingsTest, TransportSettingsOfIsTheInverse)
{
    for (const std::string& transport : PolicyNames(PolicyKind::TRANSPORT))
    {
        ConnectionConfig sent;
        TransportSettings s;
        s.transport = transport;
        s.numPaths = 3;
        s.mtu = 2048;
        s.congestionControl = transport == "rocev2" ? "none" : "fixed";
        s.rocev2Recovery = "irn";
        s.pathScheduler = "single";
        s.initialPathWindow = 8;
        s.maxPathWindow = 64;
        ASSERT_FALSE(ApplyTransportSettings(s, sent)) << transport;
        ConnectionConfig got;
        ASSERT_FALSE(ApplyTransportSettings(TransportSettingsOf(sent), got)) << transport;
        EXPECT_TRUE(got == sent) << transport;
        EXPECT_EQ(*TransportSettingsOf(sent).congestionControl, *s.congestionControl);
    }
}

TEST(TransportSettingsTest, BadInputGetsAClearMessageAndChangesNothing)
{
    auto with = [](auto field, auto value) {
        TransportSettings s;
        s.*field = value;
        return s;
    };
    using S = TransportSettings;
    EXPECT_EQ(MessageOf(with(&S::transport, std::string("tcp"))),
              "transport 'tcp': expected metaroce or rocev2");
    EXPECT_EQ(MessageOf(with(&S::numPaths, 0u)), "paths 0: must be in [1, 128]");
    EXPECT_EQ(MessageOf(with(&S::numPaths, 129u)), "paths 129: must be in [1, 128]");
    EXPECT_EQ(MessageOf(with(&S::numPaths, 128u)), "");
    EXPECT_EQ(MessageOf(with(&S::mtu, 1022u)), "mtu 1022: must be a multiple of 4 in [64, 65536]");
    EXPECT_EQ(MessageOf(with(&S::mtu, 0u)), "mtu 0: must be a multiple of 4 in [64, 65536]");
    EXPECT_EQ(MessageOf(with(&S::mtu, 65540u)),
              "mtu 65540: must be a multiple of 4 in [64, 65536]");
    EXPECT_EQ(MessageOf(with(&S::mtu, 64u)), "");
    EXPECT_EQ(MessageOf(with(&S::congestionControl, std::string("cubic"))),
              "congestion control 'cubic': expected aimd, dctcp or fixed");
    EXPECT_EQ(MessageOf(with(&S::rocev2Recovery, std::string("sack"))),
              "rocev2 recovery 'sack': expected gbn or irn");
    EXPECT_EQ(MessageOf(with(&S::pathScheduler, std::string("rr"))),
              "path scheduler 'rr': expected spray or single");
    EXPECT_EQ(MessageOf(with(&S::initialPathWindow, -1.0)),
              "initial path window -1: must be positive");
    EXPECT_EQ(MessageOf(with(&S::maxPathWindow, 0.0)), "max path window 0: must be positive");
    EXPECT_EQ(MessageOf(with(&S::maxPathWindow, std::numeric_limits<double>::quiet_NaN())),
              "max path window nan: must be positive");

    // RoCEv2 ignores numPaths but a bad value is still an error.
    TransportSettings s = with(&S::numPaths, 0u);
    s.transport = "rocev2";
    EXPECT_EQ(MessageOf(s), "paths 0: must be in [1, 128]");

    // All or nothing: a bad field late in the list leaves the good ones before it unset.
    ConnectionConfig cfg;
    const ConnectionConfig before = cfg;
    s = TransportSettings{};
    s.transport = "rocev2";
    s.mtu = 1024;
    s.pathScheduler = "round-robin";
    const std::optional<TransportError> error = ApplyTransportSettings(s, cfg);
    ASSERT_TRUE(error);
    EXPECT_EQ(error->field, TransportField::PATH_SCHEDULER);
    EXPECT_EQ(error->problem, "'round-robin': expected spray or single");
    EXPECT_TRUE(cfg == before);
}

TEST(TransportSettingsTest, EveryAcceptedConfigurationValidates)
{
    // What the mapping accepts the engine accepts: the limits are the engine's.
    for (const std::string& transport : PolicyNames(PolicyKind::TRANSPORT))
    {
        for (uint32_t mtu : {ConnectionConfig::MIN_MTU, 1024u, ConnectionConfig::MAX_MTU})
        {
            for (uint32_t paths : {1u, ConnectionConfig::MAX_PATHS})
            {
                TransportSettings s;
                s.transport = transport;
                s.mtu = mtu;
                s.numPaths = paths;
                ConnectionConfig cfg;
                ASSERT_FALSE(ApplyTransportSettings(s, cfg));
                std::string why;
                EXPECT_TRUE(cfg.Validate(why)) << transport << " " << mtu << " " << paths << why;
            }
        }
    }
}

TEST(TransportSettingsTest, NumbersInMessagesHaveTheShortestForm)
{
    EXPECT_EQ(FormatShortest(4), "4");
    EXPECT_EQ(FormatShortest(0.5), "0.5");
    EXPECT_EQ(FormatShortest(-1), "-1");
    EXPECT_EQ(FormatShortest(1e9), "1e+09");
}

} // namespace
} // namespace test
} // namespace metaroce
