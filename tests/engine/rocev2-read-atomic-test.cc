/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

// RDMA READ and atomics on the RoCEv2 engine (issue 17): the IB wire formats, ibv_wc
// statuses, PSN accounting, recovery of lost responses and exactly-once atomics, under both
// recovery modes. The MetaRoCE engine's are in metaroce-read-atomic-test.cc.

#include "engine-network.h"
#include "metaroce-rocev2-connection.h"
#include "read-atomic-fixture.h"

#include <cstring>
#include <gtest/gtest.h>

namespace metaroce
{
namespace test
{
namespace
{

TEST(RoceV2ReadAtomicWire, OpcodesAndHeadersAreTheInfiniBandOnes)
{
    // The IB RC opcode table: opcode, headers after the BTH, payload.
    struct Expect
    {
        uint8_t op;
        uint32_t headers;
        bool payload;
        PacketKind kind;
    };

    const Expect rows[] = {
        {0x0C, HDR_RETH, false, PacketKind::DATA},
        {0x0D, HDR_AETH, true, PacketKind::RESPONSE},
        {0x0E, 0, true, PacketKind::RESPONSE},
        {0x0F, HDR_AETH, true, PacketKind::RESPONSE},
        {0x10, HDR_AETH, true, PacketKind::RESPONSE},
        {0x12, HDR_AETH | HDR_ATOMIC_ACK_ETH, false, PacketKind::RESPONSE},
        {0x13, HDR_ATOMIC_ETH, false, PacketKind::DATA},
        {0x14, HDR_ATOMIC_ETH, false, PacketKind::DATA},
    };
    for (const Expect& e : rows)
    {
        const OpcodeInfo& info = LookupOpcode(e.op);
        ASSERT_NE(info.name, nullptr) << int(e.op);
        SCOPED_TRACE(info.name);
        EXPECT_EQ(info.transport, Transport::ROCEV2);
        EXPECT_EQ(info.headers, e.headers);
        EXPECT_EQ(info.payload, e.payload);
        EXPECT_EQ(info.kind, e.kind);
        EXPECT_EQ(info.read, e.op <= 0x10);
        EXPECT_EQ(info.atomic, e.op >= 0x12);
    }
    EXPECT_EQ(AtomicEth::SIZE, 28u);
    EXPECT_EQ(AtomicAckEth::SIZE, 8u);
}

TEST(RoceV2ReadAtomicWire, AtomicHeadersLayout)
{
    ParsedPacket cas;
    cas.info = &LookupOpcode(RC_CMP_SWAP);
    cas.bth.opcode = RC_CMP_SWAP;
    cas.bth.psn = 0x010203;
    cas.atomicEth.va = 0x1122334455667788ull;
    cas.atomicEth.rkey = 0xA1B2C3D4;
    cas.atomicEth.swapAdd = 0x0102030405060708ull;
    cas.atomicEth.compare = 0xF1F2F3F4F5F6F7F8ull;
    uint8_t buf[128];
    size_t len = WriteDatagram(buf, sizeof(buf), cas, nullptr, 0);
    ASSERT_EQ(len, Bth::SIZE + 28 + ICRC_SIZE);
    // VA, R_Key, Swap Data, Compare Data: all big-endian, as IB defines the AtomicETH.
    const uint8_t eth[] = {0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, 0xA1, 0xB2,
                           0xC3, 0xD4, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08,
                           0xF1, 0xF2, 0xF3, 0xF4, 0xF5, 0xF6, 0xF7, 0xF8};
    EXPECT_EQ(0, std::memcmp(buf + Bth::SIZE, eth, sizeof(eth)));
    ParsedPacket back;
    ASSERT_EQ(ParseDatagram(buf, len, back), ParseStatus::OK);
    EXPECT_EQ(back.atomicEth.va, cas.atomicEth.va);
    EXPECT_EQ(back.atomicEth.rkey, cas.atomicEth.rkey);
    EXPECT_EQ(back.atomicEth.swapAdd, cas.atomicEth.swapAdd);
    EXPECT_EQ(back.atomicEth.compare, cas.atomicEth.compare);

    ParsedPacket ack;
    ack.info = &LookupOpcode(RC_ATOMIC_ACKNOWLEDGE);
    ack.bth.opcode = RC_ATOMIC_ACKNOWLEDGE;
    ack.aeth.syndrome = Aeth::TYPE_ACK | Aeth::CREDITS_INVALID;
    ack.aeth.msn = 5;
    ack.atomicAckEth.original = 0x0A0B0C0D0E0F1011ull;
    len = WriteDatagram(buf, sizeof(buf), ack, nullptr, 0);
    ASSERT_EQ(len, Bth::SIZE + Aeth::SIZE + 8 + ICRC_SIZE);
    const uint8_t tail[] = {0x1F, 0x00, 0x00, 0x05, 0x0A, 0x0B, 0x0C, 0x0D, 0x0E, 0x0F, 0x10, 0x11};
    EXPECT_EQ(0, std::memcmp(buf + Bth::SIZE, tail, sizeof(tail)));
    ASSERT_EQ(ParseDatagram(buf, len, back), ParseStatus::OK);
    EXPECT_EQ(back.atomicAckEth.original, 0x0A0B0C0D0E0F1011ull);
    EXPECT_EQ(back.aeth.msn, 5u);
}

/// The RoCEv2-only READ and atomic tests (IB PSN rules, go-back-N and IRN recovery); the
/// ones both engines share are in read-atomic-test.cc.
class RoceReadAtomic : public ReadAtomicPair
{
};

TEST_P(RoceReadAtomic, ReadReturnsTheExactBytesAndTakesOnePsnPerResponse)
{
    Setup(ACCESS_REMOTE_READ);
    const uint32_t len = 10 * 4096 + 123; // 11 response packets at PMTU 4096
    ASSERT_EQ(Read(1, 100, len), PostStatus::OK);
    ASSERT_EQ(Write(2, 200000, 1000), PostStatus::OK); // a WRITE after it: PSN 11
    ASSERT_TRUE(m_net->RunUntilIdle(MilliSeconds(10)));
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
    // PSNs: the request takes 0..10, one per response packet; the WRITE gets 11.
    uint8_t respOps[11] = {};
    for (const TxRecord& r : m_net->TxLog())
    {
        if (r.src == m_a && r.opcode == RC_READ_REQUEST)
        {
            EXPECT_EQ(r.psn, 0u);
        }
        if (r.src == m_a && LookupOpcode(r.opcode).write)
        {
            EXPECT_EQ(r.psn, 11u);
        }
        if (r.src == m_b && LookupOpcode(r.opcode).kind == PacketKind::RESPONSE)
        {
            ASSERT_LT(r.psn, 11u);
            respOps[r.psn] = r.opcode;
        }
    }
    EXPECT_EQ(respOps[0], RC_READ_RESPONSE_FIRST);
    for (int i = 1; i < 10; ++i)
    {
        EXPECT_EQ(respOps[i], RC_READ_RESPONSE_MIDDLE) << i;
    }
    EXPECT_EQ(respOps[10], RC_READ_RESPONSE_LAST);
    EXPECT_EQ(Sent(m_a, RC_READ_REQUEST), 1u);
    const auto& conn = *static_cast<const RoceV2Connection*>(B().GetConnection(m_qb));
    EXPECT_EQ(conn.ExpectedPsn(), 12u);
    EXPECT_EQ(conn.Msn(), 2u) << "the READ is one message";
}

TEST_P(RoceReadAtomic, LostReadResponsesAreAskedForAgainFromTheMissingPsn)
{
    Setup(ACCESS_REMOTE_READ);
    constexpr uint32_t LOST = 4;
    // The response with PSN 4 (a Middle), and again when it is served again (a First): the
    // first loss is seen from the responses after it, the second waits for the timer.
    int drops = 2;
    m_net->Link(m_b, m_a).dropIf = [&](const WireInfo& w) {
        return LookupOpcode(w.opcode).read && w.psn == LOST && drops-- > 0;
    };
    const uint32_t len = 16 * 4096;
    ASSERT_EQ(Read(1, 0, len), PostStatus::OK);
    ASSERT_TRUE(m_net->RunUntilIdle(MilliSeconds(50)));
    ASSERT_EQ(m_net->Completions(m_a).size(), 1u);
    EXPECT_EQ(m_net->Completions(m_a)[0].status, WcStatus::SUCCESS);
    EXPECT_EQ(0, std::memcmp(m_src.data(), m_remote.data(), len));
    // Every resent request starts at the missing PSN and asks for the rest of the message.
    size_t requests = 0;
    for (const TxRecord& r : m_net->TxLog())
    {
        if (r.src == m_a && r.opcode == RC_READ_REQUEST)
        {
            EXPECT_EQ(r.psn, requests == 0 ? 0u : LOST);
            ++requests;
        }
    }
    EXPECT_EQ(requests, 3u);
    EXPECT_EQ(CounterA(Counter::RTO), 1u);
    EXPECT_GE(CounterB(Counter::RX_DUPLICATE), 2u) << "duplicate READs are served again";
    EXPECT_EQ(CounterA(Counter::BYTES_PLACED), len) << "every byte placed once";
}

TEST_P(RoceReadAtomic, LostAtomicAcknowledgeIsAnsweredFromTheReplayCache)
{
    Setup(ACCESS_REMOTE_ATOMIC);
    SetRemoteWord(0, 40);
    int drops = 3;
    m_net->Link(m_b, m_a).dropIf = [&](const WireInfo& w) {
        return w.opcode == RC_ATOMIC_ACKNOWLEDGE && w.psn == 1 && drops-- > 0;
    };
    for (uint64_t i = 0; i < 3; ++i)
    {
        ASSERT_EQ(Atomic(i, WrOpcode::ATOMIC_FETCH_AND_ADD, 0, 1, 0, i), PostStatus::OK);
    }
    ASSERT_TRUE(m_net->RunUntilIdle(MilliSeconds(50)));
    ASSERT_EQ(m_net->Completions(m_a).size(), 3u);
    for (const Completion& c : m_net->Completions(m_a))
    {
        EXPECT_EQ(c.status, WcStatus::SUCCESS);
    }
    EXPECT_EQ(RemoteWord(0), 43u) << "each add executed exactly once";
    EXPECT_EQ(m_local[0], 40u);
    EXPECT_EQ(m_local[1], 41u) << "the replayed answer is the saved original";
    EXPECT_EQ(m_local[2], 42u);
    EXPECT_GE(Sent(m_a, RC_FETCH_ADD), 6u) << "the atomic at PSN 1 was sent 4 times";
    EXPECT_GE(CounterB(Counter::RX_DUPLICATE), 3u);
}

TEST_P(RoceReadAtomic, MaxRdAtomicBoundsOutstandingRequests)
{
    ConnectionConfig cfg = RoceConfig();
    cfg.rocev2.maxRdAtomic = 2;
    Setup(ACCESS_REMOTE_ATOMIC | ACCESS_REMOTE_READ, 256 * 1024, cfg);
    SetRemoteWord(0, 0);
    // Count the requests in flight on the wire: sent minus answered, at every transmission.
    int inflight = 0;
    int peak = 0;
    m_net->onTransmit = [&](Time, uint32_t src, const TxDatagram& tx, bool) {
        ParsedPacket p;
        if (ParseDatagram(tx.buffer, tx.length, p) != ParseStatus::OK)
        {
            return;
        }
        if (src == m_a && p.info->atomic)
        {
            peak = std::max(peak, ++inflight);
        }
        if (src == m_b && p.info->atomic)
        {
            --inflight;
        }
    };
    for (uint64_t i = 0; i < 20; ++i)
    {
        ASSERT_EQ(Atomic(i, WrOpcode::ATOMIC_FETCH_AND_ADD, 0, 1, 0, i), PostStatus::OK);
    }
    ASSERT_TRUE(m_net->RunUntilIdle(MilliSeconds(10)));
    EXPECT_EQ(RemoteWord(0), 20u);
    EXPECT_EQ(peak, 2);
}

INSTANTIATE_TEST_SUITE_P(Recovery, RoceReadAtomic, ::testing::Values("gbn", "irn"));

} // namespace
} // namespace test
} // namespace metaroce
