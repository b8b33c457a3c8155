/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

// RDMA READ and atomics on the MetaRoCE engine (issue 17): the wire formats, ibv_wc
// statuses, READ answers sprayed over the responder's paths and placed out of order, exactly
// the lost answer packets resent, and atomics executed exactly once whatever is lost.

#include "read-atomic-fixture.h"

#include <set>

namespace metaroce
{
namespace test
{
namespace
{

TEST(MetaRoceReadAtomicWire, OpcodesAndHeaders)
{
    struct Expect
    {
        uint8_t op;
        uint32_t headers;
        bool payload;
        PacketKind kind;
        bool read;
    };

    const Expect rows[] = {
        {MR_READ_REQUEST, HDR_MDH | HDR_RETH, false, PacketKind::DATA, true},
        {MR_READ_RESPONSE, HDR_MDH, true, PacketKind::RESPONSE, true},
        {MR_CMP_SWAP, HDR_MDH | HDR_ATOMIC_ETH, false, PacketKind::DATA, false},
        {MR_FETCH_ADD, HDR_MDH | HDR_ATOMIC_ETH, false, PacketKind::DATA, false},
        {MR_ATOMIC_RESPONSE, HDR_MDH | HDR_ATOMIC_ACK_ETH, false, PacketKind::RESPONSE, false},
    };
    for (const Expect& e : rows)
    {
        const OpcodeInfo& info = LookupOpcode(e.op);
        ASSERT_NE(info.name, nullptr) << int(e.op);
        SCOPED_TRACE(info.name);
        EXPECT_EQ(info.transport, Transport::METAROCE);
        EXPECT_EQ(info.headers, e.headers);
        EXPECT_EQ(info.payload, e.payload);
        EXPECT_EQ(info.kind, e.kind);
        EXPECT_EQ(info.read, e.read);
        EXPECT_EQ(info.atomic, !e.read);
        EXPECT_FALSE(info.consumesRecv);
    }
    EXPECT_EQ(MR_READ_REQUEST, 0xC9);
    EXPECT_EQ(MR_ATOMIC_RESPONSE, 0xCD);
}

TEST(MetaRoceReadAtomicWire, AtomicRequestAndAnswerRoundTrip)
{
    ParsedPacket cas;
    cas.info = &LookupOpcode(MR_CMP_SWAP);
    cas.bth.opcode = MR_CMP_SWAP;
    cas.mdh.pathId = 3;
    cas.mdh.streamId = 7;
    cas.mdh.messageSeq = 0x01020304;
    cas.atomicEth.va = 0x1122334455667788ull;
    cas.atomicEth.rkey = 0xA1B2C3D4;
    cas.atomicEth.swapAdd = 0x0102030405060708ull;
    cas.atomicEth.compare = 0xF1F2F3F4F5F6F7F8ull;
    uint8_t buf[128];
    size_t len = WriteDatagram(buf, sizeof(buf), cas, nullptr, 0);
    ASSERT_EQ(len, Bth::SIZE + Mdh::SIZE + AtomicEth::SIZE + ICRC_SIZE);
    // The AtomicETH follows the MDH, laid out as IB's: VA, R_Key, Swap, Compare.
    const uint8_t eth[] = {0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, 0xA1, 0xB2};
    EXPECT_EQ(0, std::memcmp(buf + Bth::SIZE + Mdh::SIZE, eth, sizeof(eth)));
    ParsedPacket back;
    ASSERT_EQ(ParseDatagram(buf, len, back), ParseStatus::OK);
    EXPECT_EQ(back.mdh.streamId, 7u);
    EXPECT_EQ(back.mdh.messageSeq, 0x01020304u);
    EXPECT_EQ(back.atomicEth.va, cas.atomicEth.va);
    EXPECT_EQ(back.atomicEth.swapAdd, cas.atomicEth.swapAdd);
    EXPECT_EQ(back.atomicEth.compare, cas.atomicEth.compare);

    ParsedPacket ans;
    ans.info = &LookupOpcode(MR_ATOMIC_RESPONSE);
    ans.bth.opcode = MR_ATOMIC_RESPONSE;
    ans.mdh.streamId = 7;
    ans.atomicAckEth.original = 0x0A0B0C0D0E0F1011ull;
    len = WriteDatagram(buf, sizeof(buf), ans, nullptr, 0);
    ASSERT_EQ(len, Bth::SIZE + Mdh::SIZE + AtomicAckEth::SIZE + ICRC_SIZE);
    ASSERT_EQ(ParseDatagram(buf, len, back), ParseStatus::OK);
    EXPECT_EQ(back.atomicAckEth.original, 0x0A0B0C0D0E0F1011ull);
}

/// The READ and atomic pair on the MetaRoCE engine (8 paths). (Runs end at a time limit,
/// not when idle: the connection timer's lazy entry stays queued.)
class MetaRoceReadAtomic : public ReadAtomicPair
{
  protected:
    static ConnectionConfig MetaConfig()
    {
        ConnectionConfig cfg; // transport "metaroce"
        cfg.mtu = 1024;       // more answer packets per READ
        return cfg;
    }

    void SetupMeta(uint32_t remoteAccess,
                   size_t remoteBytes = 256 * 1024,
                   ConnectionConfig cfg = MetaConfig())
    {
        Setup(remoteAccess, remoteBytes, cfg);
    }

    /// \return the distinct UDP source ports \p src sent opcode \p op from.
    std::set<uint16_t> Ports(uint32_t src, uint8_t op) const
    {
        std::set<uint16_t> ports;
        for (const TxRecord& r : m_net->TxLog())
        {
            if (r.src == src && r.opcode == op)
            {
                ports.insert(r.srcPort);
            }
        }
        return ports;
    }
};

TEST_P(MetaRoceReadAtomic, ReadReturnsTheExactBytesSprayedOverTheResponderPaths)
{
    SetupMeta(ACCESS_REMOTE_READ);
    const uint32_t len = 40 * 1024 + 123; // 41 answer packets at MTU 1024
    ASSERT_EQ(Read(1, 100, len), PostStatus::OK);
    ASSERT_EQ(Write(2, 200000, 1000), PostStatus::OK);
    m_net->RunUntilIdle(m_net->Now() + MilliSeconds(10));
    const auto& c = m_net->Completions(m_a);
    ASSERT_EQ(c.size(), 2u);
    EXPECT_EQ(c[0].wrId, 1u);
    EXPECT_EQ(c[0].status, WcStatus::SUCCESS);
    EXPECT_EQ(c[0].opcode, WcOpcode::RDMA_READ);
    EXPECT_EQ(c[0].byteLen, len);
    EXPECT_EQ(c[1].opcode, WcOpcode::RDMA_WRITE);
    EXPECT_EQ(0, std::memcmp(m_src.data() + 100, m_remote.data() + 100, len));
    EXPECT_NE(m_src[99], m_remote[99]) << "not one byte before";
    EXPECT_NE(m_src[100 + len], m_remote[100 + len]) << "nor one after";
    EXPECT_TRUE(m_net->Completions(m_b).empty()) << "a READ completes nothing at the responder";
    EXPECT_EQ(Sent(m_a, MR_READ_REQUEST), 1u);
    EXPECT_EQ(Sent(m_b, MR_READ_RESPONSE), 41u) << "each answer packet once, nothing lost";
    EXPECT_GT(Ports(m_b, MR_READ_RESPONSE).size(), 1u) << "answers are sprayed over paths";
    EXPECT_EQ(CounterA(Counter::BYTES_PLACED), len);
    EXPECT_EQ(CounterB(Counter::TX_RETRANSMIT), 0u);
}

TEST_P(MetaRoceReadAtomic, SourceDeregisteredWhileAnswering)
{
    // The responder reads the source as each answer packet leaves: a region deregistered
    // meanwhile is not read; the requester gets REM_ACCESS_ERR and the connection at B lives.
    SetupMeta(ACCESS_REMOTE_READ);
    ASSERT_EQ(Read(1, 0, 200 * 1024), PostStatus::OK);
    bool deregistered = false;
    m_net->onTransmit = [&](Time, uint32_t src, const TxDatagram&, bool) {
        if (src == m_b && !deregistered && Sent(m_b, MR_READ_RESPONSE) >= 3)
        {
            deregistered = true;
            B().DeregisterMemory(m_remoteMr.lkey);
        }
    };
    m_net->RunUntilIdle(m_net->Now() + MilliSeconds(20));
    ASSERT_TRUE(deregistered);
    ASSERT_EQ(m_net->Completions(m_a).size(), 1u);
    EXPECT_EQ(m_net->Completions(m_a)[0].status, WcStatus::REM_ACCESS_ERR);
    EXPECT_LT(Sent(m_b, MR_READ_RESPONSE), 200u);
    EXPECT_FALSE(B().GetConnection(m_qb)->InError());
}

TEST_P(MetaRoceReadAtomic, ExactlyTheLostAnswerPacketsAreResent)
{
    SetupMeta(ACCESS_REMOTE_READ);
    // Drop the answer packets at offsets 5 KiB and 17 KiB once each.
    std::set<uint32_t> toDrop = {5 * 1024, 17 * 1024};
    m_net->Link(m_b, m_a).dropIf = [&](const WireInfo& w) {
        return w.opcode == MR_READ_RESPONSE && toDrop.erase(w.pkt->mdh.offset) > 0;
    };
    const uint32_t len = 64 * 1024;
    ASSERT_EQ(Read(1, 0, len), PostStatus::OK);
    m_net->RunUntilIdle(m_net->Now() + MilliSeconds(50));
    ASSERT_EQ(m_net->Completions(m_a).size(), 1u);
    EXPECT_EQ(m_net->Completions(m_a)[0].status, WcStatus::SUCCESS);
    EXPECT_EQ(0, std::memcmp(m_src.data(), m_remote.data(), len));
    EXPECT_TRUE(toDrop.empty());
    EXPECT_EQ(Sent(m_b, MR_READ_RESPONSE), 64u + 2u) << "the two lost packets, once more each";
    EXPECT_EQ(Sent(m_a, MR_READ_REQUEST), 1u) << "the request is not asked again";
    EXPECT_EQ(CounterA(Counter::BYTES_PLACED), len) << "every byte placed once";
}

TEST_P(MetaRoceReadAtomic, AtomicsRunExactlyOnceWhateverIsLost)
{
    SetupMeta(ACCESS_REMOTE_ATOMIC);
    SetRemoteWord(0, 40);
    // B executes the requests, but for 1 ms nothing it sends reaches A (answers, ACKs): A
    // resends the requests after its RTO, and B must answer them without running them again.
    m_net->Link(m_b, m_a).dropIf = [&](const WireInfo&) { return m_net->Now() < MilliSeconds(1); };
    for (uint64_t i = 0; i < 3; ++i)
    {
        ASSERT_EQ(Atomic(i, WrOpcode::ATOMIC_FETCH_AND_ADD, 0, 1, 0, i), PostStatus::OK);
    }
    m_net->RunUntilIdle(m_net->Now() + MilliSeconds(50));
    ASSERT_EQ(m_net->Completions(m_a).size(), 3u);
    for (const Completion& c : m_net->Completions(m_a))
    {
        EXPECT_EQ(c.status, WcStatus::SUCCESS);
    }
    EXPECT_EQ(RemoteWord(0), 43u) << "each add executed exactly once";
    std::set<uint64_t> originals(m_local, m_local + 3);
    EXPECT_EQ(originals, (std::set<uint64_t>{40, 41, 42})) << "each saw a distinct value";
    EXPECT_GE(Sent(m_b, MR_ATOMIC_RESPONSE), 5u);
    EXPECT_GT(Sent(m_a, MR_FETCH_ADD), 3u) << "requests were resent after they had run";
    EXPECT_GE(CounterB(Counter::RX_DUPLICATE), 1u) << "and recognised as duplicates";
}

TEST_P(MetaRoceReadAtomic, AReadAndAnAtomicFinishedBehindAFailedReadKeepSuccess)
{
    // A READ whose first answer packet never arrives fails with RETRY_EXC_ERR when the
    // connection times out. The READ and the fetch-and-add posted after it finished at both
    // ends (their bytes are placed, the add ran once and its original arrived), so they keep
    // SUCCESS, as a finished WRITE does (engine.md), and their results are exact. (The
    // Flapping property family reaches this on seeds 10039, 10202 and 10381; its harness
    // now checks such results.)
    ConnectionConfig cfg = MetaConfig();
    cfg.connectionTimeout = MilliSeconds(2);
    cfg.retryLimit = 255; // the connection's timeout ends it
    SetupMeta(ACCESS_REMOTE_READ | ACCESS_REMOTE_ATOMIC, 256 * 1024, cfg);
    SetRemoteWord(128 * 1024, 40);
    bool first = true;
    uint32_t lostMessage = 0;
    m_net->Link(m_b, m_a).dropIf = [&](const WireInfo& w) {
        if (w.opcode != MR_READ_RESPONSE)
        {
            return false;
        }
        if (first)
        {
            first = false;
            lostMessage = w.pkt->mdh.messageSeq;
        }
        return w.pkt->mdh.messageSeq == lostMessage && w.pkt->mdh.offset == 0;
    };
    ASSERT_EQ(Read(1, 0, 8000), PostStatus::OK);
    ASSERT_EQ(Read(2, 100000, 5000), PostStatus::OK);
    ASSERT_EQ(Atomic(3, WrOpcode::ATOMIC_FETCH_AND_ADD, 128 * 1024, 1, 0), PostStatus::OK);
    m_net->RunUntil(m_net->Now() + MilliSeconds(20));
    const auto& c = m_net->Completions(m_a);
    ASSERT_EQ(c.size(), 3u);
    EXPECT_EQ(c[0].wrId, 1u);
    EXPECT_EQ(c[0].status, WcStatus::RETRY_EXC_ERR);
    EXPECT_EQ(c[1].wrId, 2u);
    EXPECT_EQ(c[1].status, WcStatus::SUCCESS);
    EXPECT_EQ(c[1].opcode, WcOpcode::RDMA_READ);
    EXPECT_EQ(0, std::memcmp(m_src.data() + 100000, m_remote.data() + 100000, 5000));
    EXPECT_EQ(c[2].wrId, 3u);
    EXPECT_EQ(c[2].status, WcStatus::SUCCESS);
    EXPECT_EQ(c[2].opcode, WcOpcode::FETCH_ADD);
    EXPECT_EQ(m_local[0], 40u) << "the add's original";
    EXPECT_EQ(RemoteWord(128 * 1024), 41u) << "run exactly once";
}

TEST_P(MetaRoceReadAtomic, MaxRdAtomicBoundsOutstandingReads)
{
    ConnectionConfig cfg = MetaConfig();
    cfg.maxRdAtomic = 2;
    SetupMeta(ACCESS_REMOTE_READ, 256 * 1024, cfg);
    // READs in flight: requests sent minus READs completed, at every event.
    int inflight = 0;
    int peak = 0;
    m_net->onTransmit = [&](Time, uint32_t src, const TxDatagram& tx, bool) {
        ParsedPacket p;
        if (src == m_a && ParseDatagram(tx.buffer, tx.length, p) == ParseStatus::OK &&
            p.bth.opcode == MR_READ_REQUEST)
        {
            peak = std::max(peak, ++inflight);
        }
    };
    m_net->onCompletion = [&](uint32_t ep, const Completion&) { inflight -= ep == m_a; };
    for (uint64_t i = 0; i < 20; ++i)
    {
        ASSERT_EQ(Read(i, 5000 * i, 5000), PostStatus::OK);
    }
    m_net->RunUntilIdle(m_net->Now() + MilliSeconds(10));
    EXPECT_EQ(peak, 2);
    const auto& c = m_net->Completions(m_a);
    ASSERT_EQ(c.size(), 20u);
    for (size_t i = 0; i < c.size(); ++i)
    {
        EXPECT_EQ(c[i].status, WcStatus::SUCCESS);
        EXPECT_EQ(c[i].wrId, i) << "completions in post order";
    }
    EXPECT_EQ(0, std::memcmp(m_src.data(), m_remote.data(), 100000));
}

TEST_P(MetaRoceReadAtomic, AtomicsAndReadsKeepVerbsOrderOverSprayedPaths)
{
    // IB RC order: each request sees what the ones before it did. A chain of compare-and-
    // swaps posted at once, each expecting the value the previous one stores, all succeed;
    // a READ behind a WRITE to the same bytes reads what the WRITE wrote.
    SetupMeta(ACCESS_REMOTE_ATOMIC | ACCESS_REMOTE_READ | ACCESS_REMOTE_WRITE);
    for (int p = 0; p < 8; ++p)
    {
        // Paths of very different lengths: what is sent later often arrives first.
        m_net->Link(m_a, m_b, p).delay = MicroSeconds(2 + 3 * ((p * 5) % 8));
    }
    SetRemoteWord(0, 0);
    for (uint64_t i = 0; i < 12; ++i)
    {
        ASSERT_EQ(Atomic(i, WrOpcode::ATOMIC_CMP_AND_SWP, 0, i, i + 1, i), PostStatus::OK);
    }
    SendWr w;
    w.wrId = 50;
    w.opcode = WrOpcode::RDMA_WRITE;
    w.sge = {m_srcMr.addr, 30000, m_srcMr.lkey};
    w.remoteAddr = m_remoteMr.addr + 1024;
    w.rkey = m_remoteMr.rkey;
    ASSERT_EQ(A().PostSend(m_net->Now(), m_qa, w), PostStatus::OK);
    SendWr r;
    r.wrId = 51;
    r.opcode = WrOpcode::RDMA_READ;
    r.sge = {m_srcMr.addr + 100000, 30000, m_srcMr.lkey};
    r.remoteAddr = m_remoteMr.addr + 1024;
    r.rkey = m_remoteMr.rkey;
    ASSERT_EQ(A().PostSend(m_net->Now(), m_qa, r), PostStatus::OK);
    m_net->Kick(m_a);
    m_net->RunUntilIdle(m_net->Now() + MilliSeconds(10));
    ASSERT_EQ(m_net->Completions(m_a).size(), 14u);
    for (uint64_t i = 0; i < 12; ++i)
    {
        EXPECT_EQ(m_local[i], i) << "compare-and-swap " << i << " found its predecessor's value";
    }
    EXPECT_EQ(RemoteWord(0), 12u);
    EXPECT_EQ(0, std::memcmp(m_src.data() + 100000, m_src.data(), 30000))
        << "the READ saw the WRITE before it";
}

INSTANTIATE_TEST_SUITE_P(Spray, MetaRoceReadAtomic, ::testing::Values("metaroce"));

} // namespace
} // namespace test
} // namespace metaroce
