/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

/**
 * \file
 * The scenario runner's output helpers (examples/runner/metaroce-run-outputs.h) without running
 * a simulation: quantiles, port rows as CSV lines, node names and switch tiers of a built
 * fabric.
 */

#include "metaroce-run-outputs.h"

#include "ns3/metaroce-topology-helper.h"
#include "ns3/simulator.h"

#include <algorithm>
#include <gtest/gtest.h>

namespace
{

TEST(RunOutputsTest, QuantileIsNearestRank)
{
    std::vector<double> none;
    EXPECT_EQ(metaroce_run::Quantile(none, 0.5), 0);
    std::vector<double> v{5, 1, 4, 2, 3};
    EXPECT_EQ(metaroce_run::Quantile(v, 0), 1);
    EXPECT_EQ(metaroce_run::Quantile(v, 0.5), 3);
    EXPECT_EQ(metaroce_run::Quantile(v, 0.99), 5);
    EXPECT_EQ(v, (std::vector<double>{1, 2, 3, 4, 5})); // sorted in place
}

TEST(RunOutputsTest, PortLineHasAColumnPerHeaderField)
{
    metaroce::results::PortCounters r;
    r.set_switch_id(3);
    r.set_port(1);
    r.set_peer("h7");
    r.set_drops_other(9);
    const std::string line = metaroce_run::PortLine(r);
    const std::string header = metaroce_run::SWITCHES_HEADER;
    EXPECT_EQ(std::count(line.begin(), line.end(), ','),
              std::count(header.begin(), header.end(), ','));
    EXPECT_EQ(line.rfind("3,1,0,0,h7,", 0), 0U) << line;
    EXPECT_EQ(line.substr(line.size() - 2), ",9");
}

TEST(RunOutputsTest, NamesAndTiersOfALeafSpine)
{
    ns3::MetaRoceTopologyHelper topo;
    ns3::Ptr<ns3::MetaRoceFabric> fabric = topo.BuildLeafSpine(2, 2);
    const metaroce_run::NodeNames names(fabric);
    EXPECT_EQ(names.Name(fabric->GetHost(3)), "h3");
    EXPECT_EQ(names.Find("s1"), fabric->GetSwitchNode(1));
    EXPECT_EQ(names.Find("x0"), nullptr);
    const std::vector<uint32_t> tiers = metaroce_run::SwitchTiers(fabric);
    ASSERT_EQ(tiers.size(), fabric->GetSwitchCount());
    uint32_t leaves = 0;
    uint32_t spines = 0;
    for (uint32_t t : tiers)
    {
        leaves += t == 1;
        spines += t == 2;
    }
    EXPECT_EQ(leaves, 2U);
    EXPECT_GE(spines, 1U);
    EXPECT_EQ(leaves + spines, fabric->GetSwitchCount());
    ns3::Simulator::Destroy();
}

} // namespace
