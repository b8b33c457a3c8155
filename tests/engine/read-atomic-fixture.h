/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#ifndef METAROCE_TEST_READ_ATOMIC_FIXTURE_H
#define METAROCE_TEST_READ_ATOMIC_FIXTURE_H

// The pair both engines' READ and atomic tests use: A reads from, and runs atomics on, a
// region of B with chosen access rights.

#include "pair-fixture.h"

#include <cstring>
#include <functional>
#include <gtest/gtest.h>
#include <string>

namespace metaroce
{
namespace test
{

/// A pair whose responder B exposes a remote region with chosen rights.
class ReadAtomicPair : public PairTest, public ::testing::WithParamInterface<const char*>
{
  protected:
    /// \return true if the parameter is "metaroce" (else it is a RoCEv2 recovery mode).
    bool MetaRoce() const
    {
        return std::string(GetParam()) == "metaroce";
    }

    /// \return the parameter's configuration: MetaRoCE's defaults, or RoCEv2 with recovery
    /// GetParam().
    ConnectionConfig ParamConfig() const
    {
        ConnectionConfig cfg = MetaRoce() ? ConnectionConfig() : RoceConfig();
        if (!MetaRoce())
        {
            cfg.rocev2.recovery = GetParam();
        }
        return cfg;
    }

    /// Setup with ParamConfig().
    void Setup(uint32_t remoteAccess, size_t remoteBytes = 256 * 1024)
    {
        Setup(remoteAccess, remoteBytes, ParamConfig());
    }

    /// Build with \p cfg (a RoCEv2 one gets recovery GetParam()), and a remote region at B of
    /// \p remoteBytes random bytes with \p remoteAccess.
    void Setup(uint32_t remoteAccess, size_t remoteBytes, ConnectionConfig cfg)
    {
        if (cfg.transport == "rocev2")
        {
            cfg.rocev2.recovery = GetParam();
        }
        PairTest::Build(cfg, 256 * 1024);
        ASSERT_NE(m_qa, 0u);
        m_remote.resize(remoteBytes);
        Rng rng(7);
        for (auto& byte : m_remote)
        {
            byte = uint8_t(rng.Next());
        }
        m_remoteMr = B().RegisterMemory(m_remote.data(), m_remote.size(), remoteAccess);
        ASSERT_NE(m_remoteMr.lkey, 0u);
        std::memset(m_local, 0, sizeof(m_local));
        m_localMr = A().RegisterMemory(m_local, sizeof(m_local), ACCESS_LOCAL_WRITE);
        m_net->EnableTxLog(true);
    }

    /// Post a READ of \p len bytes at \p offset of B's region into A's source buffer.
    PostStatus Read(uint64_t wrId, size_t offset, uint32_t len)
    {
        SendWr wr;
        wr.wrId = wrId;
        wr.opcode = WrOpcode::RDMA_READ;
        wr.sge = {m_srcMr.addr + offset, len, m_srcMr.lkey};
        wr.remoteAddr = m_remoteMr.addr + offset;
        wr.rkey = m_remoteMr.rkey;
        PostStatus st = A().PostSend(m_net->Now(), m_qa, wr);
        m_net->Kick(m_a);
        return st;
    }

    /// Post an atomic on the word at \p offset of B's region; the original lands in slot \p k.
    PostStatus Atomic(uint64_t wrId,
                      WrOpcode op,
                      size_t offset,
                      uint64_t compareAdd,
                      uint64_t swap,
                      size_t k = 0,
                      uint32_t len = 8)
    {
        SendWr wr;
        wr.wrId = wrId;
        wr.opcode = op;
        wr.sge = {m_localMr.addr + 8 * k, len, m_localMr.lkey};
        wr.remoteAddr = m_remoteMr.addr + offset;
        wr.rkey = m_remoteMr.rkey;
        wr.compareAdd = compareAdd;
        wr.swap = swap;
        PostStatus st = A().PostSend(m_net->Now(), m_qa, wr);
        m_net->Kick(m_a);
        return st;
    }

    uint64_t RemoteWord(size_t offset) const
    {
        uint64_t v = 0;
        std::memcpy(&v, m_remote.data() + offset, 8);
        return v;
    }

    void SetRemoteWord(size_t offset, uint64_t v)
    {
        std::memcpy(m_remote.data() + offset, &v, 8);
    }

    /// \return transmissions by \p src with opcode \p op.
    size_t Sent(uint32_t src, uint8_t op) const
    {
        return SentIf(src, [op](const OpcodeInfo&, uint8_t o) { return o == op; });
    }

    /// \return transmissions by \p src whose opcode (its table row, itself) passes \p pred.
    size_t SentIf(uint32_t src, const std::function<bool(const OpcodeInfo&, uint8_t)>& pred) const
    {
        size_t n = 0;
        for (const TxRecord& r : m_net->TxLog())
        {
            n += r.src == src && pred(LookupOpcode(r.opcode), r.opcode);
        }
        return n;
    }

    /// \return READ response packets (any transport) sent by \p src.
    size_t ReadResponsesSent(uint32_t src) const
    {
        return SentIf(src, [](const OpcodeInfo& i, uint8_t) {
            return i.read && i.kind == PacketKind::RESPONSE;
        });
    }

    /// Run the network for \p span from now.
    void RunFor(Time span = MilliSeconds(10))
    {
        m_net->RunUntilIdle(m_net->Now() + span);
    }

    std::vector<uint8_t> m_remote;
    MemoryRegion m_remoteMr;
    uint64_t m_local[64]{};
    MemoryRegion m_localMr;
};

} // namespace test
} // namespace metaroce

#endif // METAROCE_TEST_READ_ATOMIC_FIXTURE_H
