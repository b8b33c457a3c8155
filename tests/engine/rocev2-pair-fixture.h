/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#ifndef METAROCE_TEST_ROCEV2_PAIR_FIXTURE_H
#define METAROCE_TEST_ROCEV2_PAIR_FIXTURE_H

#include "engine-network.h"
#include "metaroce-rocev2-connection.h"
#include "pair-fixture.h"

#include <cstdint>
#include <gtest/gtest.h>

/**
 * \file
 * The RoCEv2 pair fixture of the engine tests (rocev2-test.cc, rocev2-irn-test.cc): a
 * PairTest whose connection is RoCEv2, with one-WRITE helpers, and the IRN configuration.
 */

namespace metaroce
{
namespace test
{

/// PairTest with a RoCEv2 connection, and its configuration kept for the assertions.
class RoceV2Pair : public PairTest
{
  protected:
    void Build(const ConnectionConfig& cfg, size_t bytes, NetworkConfig net = NetworkConfig())
    {
        m_cfg = cfg;
        PairTest::Build(cfg, bytes, net);
        ASSERT_NE(m_qa, 0u);
    }

    /// Write the whole source buffer as one WRITE (wr 1) and run until idle (at most 50 ms).
    /// \return success if it completed with SUCCESS and every byte arrived
    ::testing::AssertionResult WriteAllAndComplete()
    {
        Write(1, 0, uint32_t(m_src.size()));
        m_net->RunUntilIdle(MilliSeconds(50));
        if (m_net->Completions(m_a).size() != 1)
        {
            return ::testing::AssertionFailure()
                   << m_net->Completions(m_a).size() << " completions, not 1";
        }
        if (m_net->Completions(m_a)[0].status != WcStatus::SUCCESS)
        {
            return ::testing::AssertionFailure()
                   << "status " << WcStatusName(m_net->Completions(m_a)[0].status);
        }
        if (m_src != m_dst)
        {
            return ::testing::AssertionFailure() << "the bytes differ";
        }
        return ::testing::AssertionSuccess();
    }

    const RoceV2Connection& ConnA()
    {
        return *static_cast<const RoceV2Connection*>(A().GetConnection(m_qa));
    }

    const RoceV2Connection& ConnB()
    {
        return *static_cast<const RoceV2Connection*>(B().GetConnection(m_qb));
    }

    PostStatus Write(uint64_t wrId, size_t offset, uint32_t len, WrOpcode op = WrOpcode::RDMA_WRITE)
    {
        SendWr wr;
        wr.wrId = wrId;
        wr.opcode = op;
        wr.sge = {m_srcMr.addr + offset, len, m_srcMr.lkey};
        wr.remoteAddr = m_dstMr.addr + offset;
        wr.rkey = m_dstMr.rkey;
        wr.immData = uint32_t(wrId * 3);
        PostStatus st = A().PostSend(m_net->Now(), m_qa, wr);
        m_net->Kick(m_a);
        return st;
    }

    /// \return goodput of the transfer so far, Gb/s.
    double Goodput(size_t bytes) const
    {
        return double(bytes) * 8.0 / (double(m_lastCompletion) / 1e12) / 1e9;
    }

    ConnectionConfig m_cfg;
};

/// The RoCEv2 test configuration in IRN mode.
inline ConnectionConfig
IrnConfig()
{
    ConnectionConfig cfg = RoceConfig();
    cfg.rocev2.recovery = "irn";
    return cfg;
}

/// \return how often endpoint \p src sent data PSN \p psn, per the transmission log.
inline uint32_t
SendsOf(const EngineNetwork& n, uint32_t src, uint32_t psn)
{
    uint32_t sends = 0;
    for (const TxRecord& r : n.TxLog())
    {
        sends += r.src == src && r.psn == psn && LookupOpcode(r.opcode).kind == PacketKind::DATA;
    }
    return sends;
}

} // namespace test
} // namespace metaroce

#endif // METAROCE_TEST_ROCEV2_PAIR_FIXTURE_H
