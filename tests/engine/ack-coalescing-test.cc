/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

// Issue 16, mechanism 6: ACKs that fit spraying. ackPolicy "coalesced" (one ACK per connection
// carrying a record per path) against "per-path" (one ACK per path and packet).

#include "metaroce-icrc.h"
#include "pair-fixture.h"

#include <gtest/gtest.h>

namespace metaroce
{
namespace test
{
namespace
{

ConnectionConfig
WithAcks(const std::string& policy)
{
    ConnectionConfig cfg;
    cfg.ackPolicy = policy;
    return cfg;
}

TEST(AckRecordTest, RoundTripsWithAndWithoutTheBitmap)
{
    for (bool sack : {false, true})
    {
        Mah m;
        m.pathId = 77;
        m.pathEpoch = 3;
        m.flags = Mah::FLAG_ECE | Mah::FLAG_DUPLICATE;
        m.ceCount = 9;
        m.cumulativePsn = 0xABCDEF;
        m.triggerPsn = 0x123456;
        if (sack)
        {
            m.SetSackBit(0);
            m.SetSackBit(200);
        }
        uint8_t buf[AckRecord::SIZE + Mah::SACK_BYTES + 8];
        size_t n = AckRecord::Write(buf, m, 0x1234);
        EXPECT_EQ(n, AckRecord::Length(m));
        EXPECT_EQ(n, sack ? 48u : 16u);
        AckRecord r;
        EXPECT_EQ(AckRecord::Read(buf, n, r), n);
        EXPECT_EQ(r.mah.pathId, 77);
        EXPECT_EQ(r.mah.pathEpoch, 3);
        EXPECT_EQ(r.mah.flags, m.flags) << "FLAG_SACK is the record's, not the path's";
        EXPECT_EQ(r.mah.ceCount, 9);
        EXPECT_EQ(r.mah.cumulativePsn, 0xABCDEFu);
        EXPECT_EQ(r.mah.triggerPsn, 0x123456u);
        EXPECT_EQ(r.mah.sack, m.sack);
        EXPECT_EQ(r.delay, 0x1234);
        EXPECT_EQ(AckRecord::Read(buf, n - 1, r), 0u) << "a truncated record is refused";
    }
}

TEST_F(PairTest, CoalescedAcksCarrySeveralPathsAndCutTheAckFrames)
{
    // A loss-free 1 MiB WRITE sprayed over 8 paths: per-path ACKs answer every data packet;
    // coalesced ACKs answer about every ackCoalescePackets packets, and the transfer is no
    // slower.
    Time done[2];
    uint64_t acks[2];
    const char* policies[] = {"per-path", "coalesced"};
    for (int k = 0; k < 2; ++k)
    {
        Build(WithAcks(policies[k]));
        m_net->EnableTxLog(true);
        Write(1, 0, uint32_t(m_src.size()));
        m_net->RunUntilIdle(MilliSeconds(10));
        ASSERT_EQ(m_net->Completions(m_a).size(), 1u);
        EXPECT_EQ(m_src, m_dst);
        done[k] = m_lastCompletion;
        acks[k] = 0;
        uint32_t records = 0;
        for (const TxRecord& r : m_net->TxLog())
        {
            if (r.src == m_b)
            {
                EXPECT_EQ(r.opcode, k == 0 ? MR_ACK : MR_ACK_COALESCED);
                ++acks[k];
            }
        }
        records = uint32_t(CounterA(Counter::RX_ACK));
        EXPECT_EQ(records, acks[k]);
        EXPECT_EQ(CounterA(Counter::TX_RETRANSMIT), 0u);
        EXPECT_EQ(CounterA(Counter::RTO), 0u);
    }
    const uint64_t packets = m_src.size() / 4096;
    EXPECT_EQ(acks[0], packets);
    EXPECT_LE(acks[1], packets / 4 + 16) << "about one ACK per 4 packets";
    EXPECT_GE(acks[1], packets / 4);
    EXPECT_LE(double(done[1]), double(done[0]) * 1.01);
}

TEST_F(PairTest, CoalescedAckDoesNotHoldTheLastPacketOfAMessage)
{
    // A message of 1..6 packets: the responder acknowledges its completion at once, so the
    // WRITE completes in the same time as with an ACK per packet (no ackDelay wait).
    for (uint32_t packets = 1; packets <= 6; ++packets)
    {
        Time t[2];
        int k = 0;
        for (const char* policy : {"per-path", "coalesced"})
        {
            Build(WithAcks(policy), 6 * 4096);
            Write(1, 0, packets * 4096);
            m_net->RunUntilIdle(MilliSeconds(1));
            ASSERT_EQ(m_net->Completions(m_a).size(), 1u);
            t[k++] = m_lastCompletion;
        }
        // (the coalesced ACK is a few bytes longer on the wire)
        EXPECT_LT(t[1], t[0] + NanoSeconds(20)) << packets << " packets";
    }
}

TEST_F(PairTest, HeldAckReportsHowLongItWasHeld)
{
    // A 2-packet WRITE whose second (AckReq) packet is lost: the first packet's ACK waits for
    // ackDelay (2 us), and its record says so in AckDelay (8 ns units); the RTT sample then
    // leaves the holding time out.
    ConnectionConfig cfg = WithAcks("coalesced");
    Build(cfg, 2 * 4096);
    int dataSeen = 0;
    for (int path = -1; path < 8; ++path)
    {
        m_net->Link(m_a, m_b, path).dropIf = [&dataSeen](const WireInfo& w) {
            return w.opcode == MR_WRITE && dataSeen++ == 1;
        };
    }
    std::vector<AckRecord> first;
    for (int path = -1; path < 8; ++path)
    {
        m_net->Link(m_b, m_a, path).dropIf = [&first](const WireInfo& w) {
            if (w.opcode == MR_ACK_COALESCED && first.empty())
            {
                size_t at = 0;
                for (uint8_t k = 0; k < w.pkt->mch.recordCount; ++k)
                {
                    AckRecord r;
                    at += AckRecord::Read(w.pkt->payload + at, w.pkt->payloadLength - at, r);
                    first.push_back(r);
                }
            }
            return false;
        };
    }
    Write(1, 0, 2 * 4096);
    m_net->RunUntilIdle(MilliSeconds(10));
    ASSERT_EQ(m_net->Completions(m_a).size(), 1u);
    EXPECT_EQ(m_src, m_dst);
    ASSERT_EQ(first.size(), 1u);
    EXPECT_EQ(first[0].mah.pathId, 0);
    EXPECT_EQ(first[0].delay, MicroSeconds(2) / NanoSeconds(AckRecord::DELAY_UNIT_NS));
    // The path's RTT sample is the unloaded round trip, not the round trip plus the 2 us.
    const PathState& p0 = PathOf(0);
    ASSERT_TRUE(p0.rtt.HasSample());
    EXPECT_LT(p0.rtt.Min(), MicroSeconds(5));
}

TEST_F(PairTest, CoalescedAcksRecoverExactlyUnderLossReorderingAndDuplication)
{
    ConnectionConfig cfg = WithAcks("coalesced");
    Build(cfg, 4 << 20);
    for (int path = -1; path < 8; ++path)
    {
        LinkConfig& l = m_net->Link(m_a, m_b, path);
        l.loss = 0.02;
        l.reorder = 0.05;
        l.duplicate = 0.01;
        m_net->Link(m_b, m_a, path).loss = 0.02; // coalesced ACKs are lost too
    }
    for (uint32_t i = 0; i < 4; ++i)
    {
        ASSERT_EQ(Write(i, i << 20, 1 << 20, uint16_t(i)), PostStatus::OK);
    }
    m_net->RunUntilIdle(MilliSeconds(50));
    ASSERT_EQ(m_net->Completions(m_a).size(), 4u);
    for (const Completion& c : m_net->Completions(m_a))
    {
        EXPECT_EQ(c.status, WcStatus::SUCCESS);
    }
    EXPECT_EQ(m_src, m_dst);
    EXPECT_GT(CounterA(Counter::TX_RETRANSMIT), 0u);
}

TEST_F(PairTest, MalformedCoalescedAcksAreCountedAndChangeNothing)
{
    Build(WithAcks("coalesced"), 64 * 4096);
    Write(1, 0, uint32_t(m_src.size()));
    m_net->RunUntilIdle(MilliSeconds(1));
    ASSERT_EQ(m_net->Completions(m_a).size(), 1u);
    const uint64_t invalid = CounterA(Counter::RX_INVALID);
    const uint64_t acks = CounterA(Counter::RX_ACK);
    // Records claiming PSNs never sent, in ACKs whose record count or length is wrong.
    Mah m;
    m.pathId = 2;
    m.cumulativePsn = PathOf(2).nextPsn;
    m.triggerPsn = PathOf(2).nextPsn - 1;
    std::vector<uint8_t> records(2 * AckRecord::SIZE);
    AckRecord::Write(records.data(), m, 0);
    m.pathId = 200; // no such path
    AckRecord::Write(records.data() + AckRecord::SIZE, m, 0);
    DatagramMeta meta;
    meta.srcIp = EngineNetwork::AddressOf(m_b);
    meta.dstIp = EngineNetwork::AddressOf(m_a);
    meta.srcPort = 50000;

    struct Case
    {
        uint8_t count;
        uint32_t bytes;
    } cases[] = {{2, 2 * AckRecord::SIZE}, // second record names no path
                 {3, 2 * AckRecord::SIZE}, // count says more than there is
                 {1, 2 * AckRecord::SIZE}, // bytes left over
                 {0, 0}};                  // empty

    uint64_t expected = invalid;
    for (const Case& c : cases)
    {
        ParsedPacket pkt;
        pkt.info = &LookupOpcode(MR_ACK_COALESCED);
        pkt.bth.opcode = MR_ACK_COALESCED;
        pkt.bth.destQp = m_qa;
        pkt.mch.recordCount = c.count;
        std::vector<uint8_t> buf(256);
        size_t len =
            WriteDatagram(buf.data(), buf.size(), pkt, c.bytes ? records.data() : nullptr, c.bytes);
        ASSERT_GT(len, 0u);
        StoreIcrc(buf.data() + len - ICRC_SIZE,
                  ComputeDatagramIcrc(meta, buf.data(), len - ICRC_SIZE));
        A().HandleDatagram(m_net->Now(), meta, buf.data(), len);
        EXPECT_EQ(CounterA(Counter::RX_INVALID), ++expected) << int(c.count);
    }
    EXPECT_EQ(CounterA(Counter::RX_ACK), acks) << "a malformed ACK is not taken in part";
    EXPECT_EQ(m_net->Completions(m_a).size(), 1u);
}

} // namespace
} // namespace test
} // namespace metaroce
