/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#ifndef METAROCE_TEST_PAIR_FIXTURE_H
#define METAROCE_TEST_PAIR_FIXTURE_H

#include "engine-network.h"

#include <gtest/gtest.h>
#include <memory>
#include <tuple>
#include <vector>

/**
 * \file
 * The two-endpoint fixture of the engine tests: one connection of any transport between
 * endpoints a and b of the fake-clock testbed, with a random source buffer at a and a zeroed
 * destination buffer at b, both registered.
 */

namespace metaroce
{
namespace test
{

/// \return a RoCEv2 connection configuration with a short retransmission timer.
inline ConnectionConfig
RoceConfig()
{
    ConnectionConfig cfg;
    cfg.transport = "rocev2";
    cfg.rocev2.localAckTimeout = 7; // 524 us: keeps tail-loss recovery short in the harness
    return cfg;
}

/// Two endpoints, one connection, registered source and destination buffers.
class PairTest : public ::testing::Test
{
  protected:
    /// Every test's engines keep their derived state consistent (EngineNetwork checks it).
    void TearDown() override
    {
        if (m_net)
        {
            EXPECT_EQ(m_net->InvariantFailure(), "");
        }
    }

    void Build(const ConnectionConfig& cfg,
               size_t bytes = 1 << 20,
               NetworkConfig net = NetworkConfig(),
               EndpointConfig epa = EndpointConfig(),
               EndpointConfig epb = EndpointConfig())
    {
        net.checkInvariants = true;
        m_net = std::make_unique<EngineNetwork>(net);
        m_a = m_net->AddEndpoint(epa);
        m_b = m_net->AddEndpoint(epb);
        std::tie(m_qa, m_qb) = m_net->Connect(m_a, m_b, cfg);
        m_net->onCompletion = [this](uint32_t, const Completion&) {
            m_lastCompletion = m_net->Now();
        };
        m_src.resize(bytes);
        Rng rng(42);
        for (auto& byte : m_src)
        {
            byte = uint8_t(rng.Next());
        }
        m_dst.assign(bytes, 0);
        m_srcMr = A().RegisterMemory(m_src.data(), m_src.size(), ACCESS_LOCAL_WRITE);
        m_dstMr = B().RegisterMemory(m_dst.data(),
                                     m_dst.size(),
                                     ACCESS_LOCAL_WRITE | ACCESS_REMOTE_WRITE);
        ASSERT_NE(m_srcMr.lkey, 0u);
        ASSERT_NE(m_dstMr.lkey, 0u);
    }

    Endpoint& A()
    {
        return m_net->At(m_a);
    }

    Endpoint& B()
    {
        return m_net->At(m_b);
    }

    /// Post a WRITE of [offset, offset+len) to the same offset at B.
    PostStatus Write(uint64_t wrId, size_t offset, uint32_t len, uint16_t stream = 0)
    {
        SendWr wr;
        wr.wrId = wrId;
        wr.opcode = WrOpcode::RDMA_WRITE;
        wr.sge = {m_srcMr.addr + offset, len, m_srcMr.lkey};
        wr.remoteAddr = m_dstMr.addr + offset;
        wr.rkey = m_dstMr.rkey;
        wr.streamId = stream;
        PostStatus st = A().PostSend(m_net->Now(), m_qa, wr);
        m_net->Kick(m_a);
        return st;
    }

    const PathState& PathOf(uint32_t i)
    {
        return *A().GetConnection(m_qa)->Path(i);
    }

    uint64_t CounterA(Counter c)
    {
        return A().GetConnection(m_qa)->Counters().Get(c);
    }

    uint64_t CounterB(Counter c)
    {
        return B().GetConnection(m_qb)->Counters().Get(c);
    }

    std::unique_ptr<EngineNetwork> m_net;
    uint32_t m_a{0};
    uint32_t m_b{0};
    uint32_t m_qa{0};
    uint32_t m_qb{0};
    std::vector<uint8_t> m_src;
    std::vector<uint8_t> m_dst;
    MemoryRegion m_srcMr;
    MemoryRegion m_dstMr;
    Time m_lastCompletion{0};
};

} // namespace test
} // namespace metaroce

#endif // METAROCE_TEST_PAIR_FIXTURE_H
