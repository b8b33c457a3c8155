/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

// QPN classes (EndpointConfig::qpnStride / qpnOffset): the HIL daemon's shards.

#include "engine-network.h"
#include "metaroce-endpoint.h"

#include <gtest/gtest.h>
#include <memory>
#include <set>
#include <vector>

namespace metaroce
{
namespace test
{
namespace
{

TEST(EndpointQpnClassTest, EndpointsOfOneHostHandOutDisjointQpnsAndRefuseTheOthers)
{
    // The HIL daemon's shards: three endpoints with qpnStride 3 and offsets 0, 1, 2. Each
    // hands out only its own class, reuses a destroyed QPN of its class, and does not know a
    // QPN of another class (a datagram steered to the wrong shard is an unknown connection).
    constexpr uint32_t SHARDS = 3;
    std::vector<std::unique_ptr<Endpoint>> eps;
    for (uint32_t s = 0; s < SHARDS; ++s)
    {
        EndpointConfig cfg;
        cfg.localIp = 0x0A000001;
        cfg.qpnStride = SHARDS;
        cfg.qpnOffset = s;
        eps.push_back(std::make_unique<Endpoint>(cfg));
    }
    std::set<uint32_t> seen;
    std::vector<std::vector<uint32_t>> qpns(SHARDS);
    for (int round = 0; round < 5; ++round)
    {
        for (uint32_t s = 0; s < SHARDS; ++s)
        {
            uint32_t qpn = 0;
            ASSERT_EQ(eps[s]->CreateConnection(ConnectionConfig(), qpn), PostStatus::OK);
            EXPECT_EQ((qpn - FIRST_QPN) % SHARDS, s) << "qpn " << qpn;
            EXPECT_TRUE(seen.insert(qpn).second) << "qpn " << qpn << " handed out twice";
            qpns[s].push_back(qpn);
        }
    }
    EXPECT_EQ(qpns[0].front(), FIRST_QPN);
    for (uint32_t s = 0; s < SHARDS; ++s)
    {
        for (uint32_t other = 0; other < SHARDS; ++other)
        {
            for (uint32_t qpn : qpns[other])
            {
                EXPECT_EQ(eps[s]->GetConnection(qpn) != nullptr, s == other) << "qpn " << qpn;
            }
        }
        EXPECT_EQ(eps[s]->GetConnection(0), nullptr);
        EXPECT_EQ(eps[s]->GetConnection(FIRST_QPN + s + 1000 * SHARDS), nullptr);
    }
    // A destroyed QPN goes back to its own endpoint's class.
    ASSERT_TRUE(eps[1]->DestroyConnection(qpns[1][2]));
    EXPECT_EQ(eps[1]->GetConnection(qpns[1][2]), nullptr);
    EXPECT_FALSE(eps[0]->DestroyConnection(qpns[1][3])) << "not endpoint 0's connection";
}

TEST(EndpointQpnClassTest, ShardedEndpointsCarryTraffic)
{
    // A connection between two endpoints of the second class still moves data: the class only
    // changes the numbers.
    NetworkConfig net;
    net.checkInvariants = true;
    EngineNetwork network(net);
    EndpointConfig cfg;
    cfg.qpnStride = 4;
    cfg.qpnOffset = 3;
    uint32_t a = network.AddEndpoint(cfg);
    uint32_t b = network.AddEndpoint(cfg);
    auto [qa, qb] = network.Connect(a, b, ConnectionConfig());
    EXPECT_EQ(qa, FIRST_QPN + 3);
    EXPECT_EQ(qb, FIRST_QPN + 3);
    std::vector<uint8_t> src(256 * 1024);
    for (size_t i = 0; i < src.size(); ++i)
    {
        src[i] = uint8_t(i * 7 + 1);
    }
    std::vector<uint8_t> dst(src.size(), 0);
    MemoryRegion smr = network.At(a).RegisterMemory(src.data(), src.size(), ACCESS_LOCAL_WRITE);
    MemoryRegion dmr = network.At(b).RegisterMemory(dst.data(),
                                                    dst.size(),
                                                    ACCESS_LOCAL_WRITE | ACCESS_REMOTE_WRITE);
    SendWr wr;
    wr.wrId = 1;
    wr.opcode = WrOpcode::RDMA_WRITE;
    wr.sge = {smr.addr, uint32_t(src.size()), smr.lkey};
    wr.remoteAddr = dmr.addr;
    wr.rkey = dmr.rkey;
    ASSERT_EQ(network.At(a).PostSend(network.Now(), qa, wr), PostStatus::OK);
    network.Kick(a);
    network.RunUntilIdle(MilliSeconds(10));
    ASSERT_EQ(network.Completions(a).size(), 1u);
    EXPECT_EQ(network.Completions(a)[0].status, WcStatus::SUCCESS);
    EXPECT_EQ(src, dst);
    EXPECT_EQ(network.InvariantFailure(), "");
}

} // namespace
} // namespace test
} // namespace metaroce
