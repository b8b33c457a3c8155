/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

/**
 * \file
 * The fabric's loss setters stop the program on bad input: death tests, which ns-3's TestCase
 * cannot express, so they stay GoogleTest. The rest of the fabric's tests are the ns-3
 * TestSuite metaroce-fabric (contrib/metaroce/test/metaroce-fabric-test-suite.cc).
 */

#include "ns3/error-model.h"
#include "ns3/metaroce-channel.h"
#include "ns3/metaroce-fabric.h"
#include "ns3/metaroce-topology-helper.h"
#include "ns3/pointer.h"
#include "ns3/rng-seed-manager.h"
#include "ns3/simulator.h"

#include <cmath>
#include <gtest/gtest.h>

using namespace ns3;

namespace
{

class MetaRoceFabricTest : public ::testing::Test
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

// Bad loss arguments stop the program with a message (NS_ABORT_MSG, as the rest of the module
// does) instead of building a model that misbehaves or dereferencing a null link.
TEST_F(MetaRoceFabricTest, LossSettersRejectBadProbabilitiesAndMissingLinks)
{
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    MetaRoceTopologyHelper topo;
    Ptr<MetaRoceFabric> fabric = topo.BuildSingleSwitch(2);
    Ptr<MetaRoceChannel> link = fabric->GetChannel(fabric->GetHost(0), fabric->GetSwitchNode(0));
    EXPECT_DEATH(fabric->SetBernoulliLoss(link, -0.01), "must be in \\[0, 1\\], not -0.01");
    EXPECT_DEATH(fabric->SetBernoulliLoss(link, 2.0), "must be in \\[0, 1\\], not 2");
    EXPECT_DEATH(fabric->SetBernoulliLoss(link, std::nan("")), "must be in \\[0, 1\\]");
    EXPECT_DEATH(fabric->SetBernoulliLoss(nullptr, 0.01), "no such link");
    EXPECT_DEATH(fabric->SetGilbertElliottLoss(link, 0.01, 1.5, 0, 1), "not 1.5");
    EXPECT_DEATH(fabric->SetGilbertElliottLoss(link, 0.01, 0.2, -1, 1), "not -1");
    EXPECT_DEATH(fabric->SetGilbertElliottLoss(nullptr, 0.01, 0.2, 0, 1), "no such link");
    // The ends of the range are valid.
    fabric->SetBernoulliLoss(link, 0.0);
    fabric->SetBernoulliLoss(link, 1.0);
    fabric->SetGilbertElliottLoss(link, 0.0, 1.0, 0.0, 1.0);
    EXPECT_NE(link->GetErrorModel(0), nullptr);
    EXPECT_NE(link->GetErrorModel(1), nullptr);
}

// A loss model added after AssignStreams would draw from an unpinned stream, so its losses
// would change with unrelated code: the channel refuses it instead of missing it silently.
TEST_F(MetaRoceFabricTest, LossModelAddedAfterAssignStreamsIsRefused)
{
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    MetaRoceTopologyHelper topo;
    Ptr<MetaRoceFabric> fabric = topo.BuildSingleSwitch(3);
    Ptr<MetaRoceChannel> first = fabric->GetChannel(fabric->GetHost(0), fabric->GetSwitchNode(0));
    Ptr<MetaRoceChannel> second = fabric->GetChannel(fabric->GetHost(1), fabric->GetSwitchNode(0));
    fabric->SetBernoulliLoss(first, 0.01);
    EXPECT_GE(fabric->AssignStreams(10), 2); // the switch's, and one per direction of first
    EXPECT_DEATH(fabric->SetBernoulliLoss(second, 0.01), "after AssignStreams");
    EXPECT_DEATH(fabric->SetGilbertElliottLoss(first, 0.01, 0.2, 0, 1), "after AssignStreams");
    EXPECT_DEATH(second->SetErrorModel(0, CreateObject<RateErrorModel>()), "after AssignStreams");
    EXPECT_DEATH(second->SetAttribute("ErrorModel1", PointerValue(CreateObject<RateErrorModel>())),
                 "after AssignStreams");
    // Removing a model needs no stream.
    first->SetErrorModel(0, nullptr);
    EXPECT_EQ(first->GetErrorModel(0), nullptr);
}

} // namespace
