/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

/**
 * \file
 * The scenario runner's distributed-run merging (examples/runner/metaroce-run-distributed.h)
 * in one process: the row frames, the sums of goodput samples, and the collectives' completion
 * (the gathers return this process's own part when not distributed).
 */

#include "metaroce-run-distributed.h"

#include "ns3/metaroce-topology-helper.h"
#include "ns3/nstime.h"
#include "ns3/simulator.h"

#include <gtest/gtest.h>

namespace
{

namespace pb = metaroce::results;

/**
 * \param time sample time
 * \param host host
 * \param bytes bytes
 * \return a goodput sample
 */
pb::GoodputSample
Sample(double time, int32_t host, uint64_t bytes)
{
    pb::GoodputSample g;
    g.set_time_us(time);
    g.set_host(host);
    g.set_bytes(bytes);
    g.set_goodput_gbps(double(bytes));
    return g;
}

TEST(RunDistributedTest, RowFramesRoundTripAndStopAtATruncation)
{
    std::vector<pb::FlowRecord> rows(3);
    for (uint32_t i = 0; i < 3; ++i)
    {
        rows[i].set_flow_id(10 + i);
    }
    const std::string part = metaroce_run::PackRows(rows, {true, false, true});
    const auto back = metaroce_run::UnpackRows<pb::FlowRecord>({part, part});
    ASSERT_EQ(back.size(), 4U); // two parts of two rows each
    EXPECT_EQ(back[0].first, 0U);
    EXPECT_EQ(back[1].first, 2U);
    EXPECT_EQ(back[1].second.flow_id(), 12U);
    EXPECT_EQ(back[3].second.flow_id(), 12U);
    // A truncated part keeps its whole frames only.
    const auto cut = metaroce_run::UnpackRows<pb::FlowRecord>({part.substr(0, part.size() - 1)});
    ASSERT_EQ(cut.size(), 1U);
    EXPECT_EQ(cut[0].second.flow_id(), 10U);
    // Rows past the selection are not sent.
    EXPECT_TRUE(metaroce_run::PackRows(rows, {}).empty());
}

TEST(RunDistributedTest, GoodputSamplesOfEqualKeyAddUp)
{
    std::vector<pb::GoodputSample> rows = {Sample(10, -1, 5),
                                           Sample(10, 3, 2),
                                           Sample(20, -1, 1),
                                           Sample(10, -1, 7),
                                           Sample(10, 3, 1)};
    metaroce_run::SumSamples(rows);
    ASSERT_EQ(rows.size(), 3U);
    EXPECT_EQ(rows[0].bytes(), 12U);
    EXPECT_DOUBLE_EQ(rows[0].goodput_gbps(), 12);
    EXPECT_EQ(rows[1].host(), 3);
    EXPECT_EQ(rows[1].bytes(), 3U);
    EXPECT_EQ(rows[2].time_us(), 20);

    std::vector<pb::FlowGoodputSample> flows(2);
    flows[0].set_flow_id(4);
    flows[0].set_bytes(100);
    flows[1].set_flow_id(4);
    flows[1].set_tx_packets(3);
    metaroce_run::SumSamples(flows);
    ASSERT_EQ(flows.size(), 1U);
    EXPECT_EQ(flows[0].bytes(), 100U);
    EXPECT_EQ(flows[0].tx_packets(), 3U);
}

TEST(RunDistributedTest, OneProcessGathersItsOwnRows)
{
    std::vector<pb::PathCounters> paths(2);
    paths[1].set_host(5);
    EXPECT_TRUE(metaroce_run::GatherAppend(paths));
    ASSERT_EQ(paths.size(), 2U);
    EXPECT_EQ(paths[1].host(), 5U);
    std::vector<pb::HostPortCounters> ports(2);
    ports[0].set_host(1);
    ports[1].set_host(2);
    EXPECT_TRUE(metaroce_run::GatherRows(ports, {false, true}));
    EXPECT_EQ(ports[0].host(), 1U);
    EXPECT_EQ(ports[1].host(), 2U);
}

TEST(RunDistributedTest, ACollectiveIsDoneWhenEveryPairFinished)
{
    ns3::MetaRoceCollective c;
    c.ranks = {0, 1, 2, 3};
    c.channels = 2;
    c.bytesPerRank = 1000000;
    c.ranksDone = 8;
    c.lastRankDone = ns3::MicroSeconds(110);
    ns3::MetaRoceCollective partial = c;
    partial.ranksDone = 7;
    ns3::MetaRoceCollective failed = c;
    failed.failed = true;
    std::vector<pb::CollectiveRecord> records(3);
    for (pb::CollectiveRecord& r : records)
    {
        r.set_start_us(10);
    }
    metaroce_run::MergeCollectives(records, {c, partial, failed});
    EXPECT_TRUE(records[0].completed());
    EXPECT_DOUBLE_EQ(records[0].finish_us(), 110);
    EXPECT_DOUBLE_EQ(records[0].duration_us(), 100);
    EXPECT_DOUBLE_EQ(records[0].algbw_gbps(), 80); // 1 MB in 100 us
    EXPECT_DOUBLE_EQ(records[0].busbw_gbps(), 80 * 2 * 3 / 4.0);
    EXPECT_FALSE(records[1].completed());
    EXPECT_FALSE(records[2].completed());
}

TEST(RunDistributedTest, OneProcessOwnsEveryNodeAndNoCrossRankLink)
{
    ns3::MetaRoceTopologyHelper topo;
    ns3::Ptr<ns3::MetaRoceFabric> fabric = topo.BuildFatTree(4, 3);
    const metaroce_run::RankStats mine = metaroce_run::LocalRankStats(fabric, 42, 1.5, 1.25);
    EXPECT_EQ(mine.rank, 0U);
    EXPECT_EQ(mine.hosts, 16U);
    EXPECT_EQ(mine.switches, 20U);
    EXPECT_EQ(mine.crossLinks, 0U);
    EXPECT_EQ(mine.lookaheadUs, 0);
    EXPECT_EQ(mine.framesSent, 0U);
    EXPECT_EQ(mine.events, 42U);
    const std::vector<metaroce_run::RankStats> all = metaroce_run::GatherRankStats(mine);
    ASSERT_EQ(all.size(), 1U);
    EXPECT_EQ(all[0].hosts, 16U);
    EXPECT_DOUBLE_EQ(all[0].runCpuS, 1.25);
    ns3::Simulator::Destroy();
}

} // namespace
