/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

// IRN selective repeat in the RoCEv2 baseline (rocev2.recovery = "irn"): its configuration
// and wire headers, SACK-driven resends, NACK loss, reordering, its two timers and what a
// timeout resends, in-order completion, READs (the seeded data-integrity property is in
// rocev2-property-test.cc).

#include "engine-network.h"
#include "metaroce-encap.h"
#include "metaroce-rocev2-connection.h"
#include "metaroce-wire.h"
#include "rocev2-pair-fixture.h"

#include <algorithm>
#include <cstdint>
#include <gtest/gtest.h>
#include <iostream>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace metaroce
{
namespace test
{
namespace
{

TEST(RoceV2IrnWire, ConfigIsValidated)
{
    std::string why;
    ConnectionConfig cfg = IrnConfig();
    EXPECT_TRUE(cfg.Validate(why)) << why;
    cfg.rocev2.recovery = "sack";
    EXPECT_FALSE(cfg.Validate(why));
    EXPECT_NE(why.find("recovery"), std::string::npos);
    cfg = IrnConfig();
    cfg.rocev2.irnWindow = 1000;
    EXPECT_FALSE(cfg.Validate(why)) << "not a power of two";
    cfg.rocev2.irnWindow = 1u << 17;
    EXPECT_FALSE(cfg.Validate(why)) << "larger than the bitmap limit";
    cfg = IrnConfig();
    cfg.rocev2.irnRtoHigh = cfg.rocev2.irnRtoLow - 1;
    EXPECT_FALSE(cfg.Validate(why));
    cfg = IrnConfig();
    cfg.rocev2.irnRtoLow = 0;
    EXPECT_FALSE(cfg.Validate(why));
}

TEST(RoceV2IrnWire, NackAndRequestHeadersLayout)
{
    // IRN NACK: BTH (PSN = expected PSN), AETH (NAK, PSN sequence error), ISH (SACK PSN).
    ParsedPacket nack;
    nack.info = &LookupOpcode(IRN_NACK);
    nack.bth.opcode = IRN_NACK;
    nack.bth.destQp = 0x000102;
    nack.bth.psn = 0x123456;
    nack.aeth.syndrome = Aeth::TYPE_NAK | Aeth::NAK_PSN_SEQUENCE_ERROR;
    nack.aeth.msn = 7;
    nack.ish.sackPsn = 0xABCDEF;
    uint8_t buf[128];
    size_t len = WriteDatagram(buf, sizeof(buf), nack, nullptr, 0);
    ASSERT_EQ(len, Bth::SIZE + Aeth::SIZE + Ish::SIZE + ICRC_SIZE);
    EXPECT_EQ(buf[0], 0xF1);
    const uint8_t tail[] = {0x60, 0x00, 0x00, 0x07, 0x00, 0xAB, 0xCD, 0xEF};
    EXPECT_TRUE(std::equal(tail, tail + sizeof(tail), buf + Bth::SIZE));
    ParsedPacket back;
    ASSERT_EQ(ParseDatagram(buf, len, back), ParseStatus::OK);
    EXPECT_EQ(back.bth.psn, 0x123456u);
    EXPECT_EQ(back.ish.sackPsn, 0xABCDEFu);
    EXPECT_EQ(back.info->kind, PacketKind::ACK);
    // IRN WRITE Middle: BTH, RETH, IRH (offset, receive WQE number), payload.
    ParsedPacket mid;
    mid.info = &LookupOpcode(IRN_WRITE_MIDDLE);
    mid.bth.opcode = IRN_WRITE_MIDDLE;
    mid.reth.va = 0x1122334455667788ull;
    mid.reth.rkey = 0x99;
    mid.reth.dmaLength = 8192;
    mid.irh.offset = 4096;
    mid.irh.recvWqeSn = 0x01020304;
    uint8_t payload[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    len = WriteDatagram(buf, sizeof(buf), mid, payload, sizeof(payload));
    ASSERT_EQ(len, Bth::SIZE + Reth::SIZE + Irh::SIZE + sizeof(payload) + ICRC_SIZE);
    const uint8_t irh[] = {0x00, 0x00, 0x10, 0x00, 0x01, 0x02, 0x03, 0x04};
    EXPECT_TRUE(std::equal(irh, irh + sizeof(irh), buf + Bth::SIZE + Reth::SIZE));
    ASSERT_EQ(ParseDatagram(buf, len, back), ParseStatus::OK);
    EXPECT_EQ(back.reth.va, 0x1122334455667788ull);
    EXPECT_EQ(back.irh.offset, 4096u);
    EXPECT_EQ(back.irh.recvWqeSn, 0x01020304u);
    EXPECT_EQ(back.payloadLength, sizeof(payload));
}

TEST_F(RoceV2Pair, IrnOneLostPacketCostsExactlyOneRetransmission)
{
    Build(IrnConfig(), 1 << 20);
    m_net->EnableTxLog(true);
    constexpr uint32_t LOST = 50;
    int dropsLeft = 1;
    m_net->Link(m_a, m_b).dropIf = [&](const WireInfo& w) {
        if (LookupOpcode(w.opcode).kind == PacketKind::DATA && w.psn == LOST && dropsLeft > 0)
        {
            --dropsLeft;
            return true;
        }
        return false;
    };
    ASSERT_TRUE(WriteAllAndComplete());
    EXPECT_EQ(CounterA(Counter::TX_RETRANSMIT), 1u) << "only the hole";
    EXPECT_EQ(SendsOf(*m_net, m_a, LOST), 2u);
    EXPECT_EQ(CounterA(Counter::GO_BACK_N), 0u);
    EXPECT_EQ(CounterA(Counter::RTO), 0u);
    EXPECT_EQ(CounterA(Counter::LOSS_DETECTED), 1u);
    // Every packet that overtook the hole was placed and NACKed with its PSN as the SACK.
    uint64_t ahead = CounterB(Counter::RX_OUT_OF_SEQUENCE);
    EXPECT_GT(ahead, 1u);
    EXPECT_EQ(CounterB(Counter::TX_NAK), ahead);
    EXPECT_EQ(CounterA(Counter::RX_NAK), ahead);
    EXPECT_EQ(CounterB(Counter::RX_DUPLICATE), 0u);
    EXPECT_EQ(CounterB(Counter::BYTES_PLACED), m_src.size()) << "placed exactly once";
    // IRN opcodes on the wire: self-describing data, SACK-carrying NACKs, standard ACKs.
    size_t irnData = 0;
    size_t nacks = 0;
    for (const TxRecord& r : m_net->TxLog())
    {
        irnData += (r.opcode & 0xE0) == IRN_OPCODE_BASE && r.opcode != IRN_NACK;
        nacks += r.opcode == IRN_NACK;
        EXPECT_TRUE(r.opcode == RC_ACKNOWLEDGE || (r.opcode & 0xE0) == IRN_OPCODE_BASE)
            << int(r.opcode);
    }
    EXPECT_EQ(irnData, m_src.size() / m_cfg.mtu + 1);
    EXPECT_EQ(nacks, ahead);
    std::cout << "[ figures  ] one loss at 100 Gb/s, 2 us links: IRN resent 1 packet, " << ahead
              << " packets placed out of order meanwhile\n";
}

TEST_F(RoceV2Pair, IrnALostNackMakesThePacketItSackedLookLost)
{
    // IRN's NACK carries the cumulative ACK and one SACKed PSN, and every unSACKed PSN below
    // the highest SACKed one is lost (the IRN paper's rule). So when the NACK that SACKed a
    // packet is lost, a later NACK makes that packet look lost and it is resent although it
    // arrived: one needless resend per lost NACK of a hole. This is why IRN resends about
    // twice the data drops when ACKs are lost as often as data (the HIL forwarder benchmark,
    // docs/benchmarks.md).
    Build(IrnConfig(), 1 << 20);
    m_net->EnableTxLog(true);
    constexpr uint32_t LOST = 50;
    bool dataDropped = false;
    m_net->Link(m_a, m_b).dropIf = [&](const WireInfo& w) {
        bool drop =
            LookupOpcode(w.opcode).kind == PacketKind::DATA && w.psn == LOST && !dataDropped;
        dataDropped = dataDropped || drop;
        return drop;
    };
    uint32_t nackedLost = 0; // the PSN whose NACK was dropped
    m_net->Link(m_b, m_a).dropIf = [&](const WireInfo& w) {
        if (w.opcode == IRN_NACK && w.pkt->ish.sackPsn == LOST + 3 && nackedLost == 0)
        {
            nackedLost = w.pkt->ish.sackPsn;
            return true;
        }
        return false;
    };
    ASSERT_TRUE(WriteAllAndComplete());
    ASSERT_EQ(nackedLost, LOST + 3);
    EXPECT_EQ(SendsOf(*m_net, m_a, LOST), 2u) << "the hole";
    EXPECT_EQ(SendsOf(*m_net, m_a, LOST + 3), 2u) << "arrived, but its SACK was lost";
    EXPECT_EQ(CounterA(Counter::TX_RETRANSMIT), 2u);
    EXPECT_EQ(CounterB(Counter::RX_DUPLICATE), 1u);
    EXPECT_EQ(CounterA(Counter::RTO), 0u);
}

TEST_F(RoceV2Pair, IrnRandomLossKeepsDataByteExactAndBeatsGoBackN)
{
    for (double loss : {0.01, 0.05, 0.10})
    {
        double gbps[2] = {0, 0};
        for (int irn = 0; irn < 2; ++irn)
        {
            NetworkConfig net;
            net.seed = 11;
            Build(irn ? IrnConfig() : RoceConfig(), 8 << 20, net);
            m_net->Link(m_a, m_b).loss = loss;
            m_net->Link(m_b, m_a).loss = loss;
            Write(1, 0, uint32_t(m_src.size()));
            m_net->RunUntilIdle(MilliSeconds(2000));
            ASSERT_EQ(m_net->Completions(m_a).size(), 1u) << "loss " << loss << " irn " << irn;
            EXPECT_EQ(m_net->Completions(m_a)[0].status, WcStatus::SUCCESS);
            EXPECT_EQ(m_src, m_dst) << "loss " << loss << " irn " << irn;
            EXPECT_EQ(CounterB(Counter::BYTES_PLACED), m_src.size());
            gbps[irn] = Goodput(m_src.size());
            if (irn)
            {
                EXPECT_EQ(CounterA(Counter::GO_BACK_N), 0u);
                std::cout << "[ figures  ] 8 MiB WRITE, loss " << loss * 100 << "% both ways: IRN "
                          << gbps[1] << " Gb/s (" << CounterA(Counter::TX_RETRANSMIT)
                          << " resent for " << CounterA(Counter::TX_DATA) << ", "
                          << CounterA(Counter::RTO) << " timeouts) vs go-back-N " << gbps[0]
                          << " Gb/s\n";
            }
        }
        EXPECT_GT(gbps[1], gbps[0]) << "loss " << loss;
    }
}

TEST_F(RoceV2Pair, IrnToleratesReorderingWithoutGoBackOrTimeouts)
{
    for (int irn = 0; irn < 2; ++irn)
    {
        NetworkConfig net;
        net.seed = 5;
        Build(irn ? IrnConfig() : RoceConfig(), 4 << 20, net);
        m_net->EnableTxLog(true);
        m_net->Link(m_a, m_b).reorder = 0.02; // 3 us extra: overtaken by ~9 packets
        Write(1, 0, uint32_t(m_src.size()));
        m_net->RunUntilIdle(MilliSeconds(100));
        ASSERT_EQ(m_net->Completions(m_a).size(), 1u);
        EXPECT_EQ(m_net->Completions(m_a)[0].status, WcStatus::SUCCESS);
        EXPECT_EQ(m_src, m_dst);
        EXPECT_EQ(CounterB(Counter::BYTES_PLACED), m_src.size());
        if (!irn)
        {
            EXPECT_GT(CounterA(Counter::GO_BACK_N), 0u) << "go-back-N treats it as loss";
            std::cout << "[ figures  ] 2% reordering, 4 MiB: go-back-N resent "
                      << CounterA(Counter::TX_RETRANSMIT) << " packets\n";
            continue;
        }
        // IRN has no reordering threshold: an overtaken packet is resent once when a later
        // PSN is SACKed (the model), and nothing else happens.
        EXPECT_EQ(CounterA(Counter::GO_BACK_N), 0u);
        EXPECT_EQ(CounterA(Counter::RTO), 0u);
        uint64_t resent = CounterA(Counter::TX_RETRANSMIT);
        EXPECT_GT(resent, 0u);
        EXPECT_EQ(CounterB(Counter::RX_DUPLICATE), resent) << "every resend was spurious";
        EXPECT_LE(resent, CounterB(Counter::RX_OUT_OF_SEQUENCE));
        for (uint32_t psn = 0; psn < m_src.size() / m_cfg.mtu; ++psn)
        {
            ASSERT_LE(SendsOf(*m_net, m_a, psn), 2u) << "psn " << psn;
        }
        std::cout << "[ figures  ] 2% reordering, 4 MiB: IRN resent " << resent << " packets\n";
    }
}

TEST_F(RoceV2Pair, IrnLostTailAndItsRetransmissionAreRecoveredByRtoLow)
{
    Build(IrnConfig(), 64 * 1024);
    m_net->EnableTxLog(true);
    int drops = 2;
    m_net->Link(m_a, m_b).dropIf = [&](const WireInfo& w) {
        return w.opcode == IRN_WRITE_LAST && drops-- > 0;
    };
    Write(1, 0, uint32_t(m_src.size()));
    m_net->RunUntilIdle(MilliSeconds(50));
    ASSERT_EQ(m_net->Completions(m_a).size(), 1u);
    EXPECT_EQ(m_net->Completions(m_a)[0].status, WcStatus::SUCCESS);
    EXPECT_EQ(CounterA(Counter::RTO), 2u);
    EXPECT_EQ(CounterA(Counter::TX_RETRANSMIT), 2u) << "only the tail, twice";
    EXPECT_EQ(m_src, m_dst);
    // One packet outstanding (<= irnLowThreshold): both timeouts are RTO_low.
    EXPECT_NEAR(double(m_lastCompletion),
                double(2 * m_cfg.rocev2.irnRtoLow),
                double(MicroSeconds(20)));
}

TEST_F(RoceV2Pair, IrnLostRetransmissionWaitsForRtoHighAndResendsOnlyTheHole)
{
    Build(IrnConfig(), 1 << 20);
    m_net->EnableTxLog(true);
    constexpr uint32_t LOST = 50;
    int drops = 2; // the packet and its first retransmission
    m_net->Link(m_a, m_b).dropIf = [&](const WireInfo& w) {
        return LookupOpcode(w.opcode).kind == PacketKind::DATA && w.psn == LOST && drops-- > 0;
    };
    ASSERT_TRUE(WriteAllAndComplete());
    EXPECT_EQ(CounterA(Counter::RTO), 1u);
    EXPECT_EQ(CounterA(Counter::TX_RETRANSMIT), 2u)
        << "the hole on SACK evidence, then once more on the timeout; SACKed PSNs never";
    EXPECT_EQ(SendsOf(*m_net, m_a, LOST), 3u);
    // Many packets were outstanding when the timer was last restarted: RTO_high.
    EXPECT_GT(m_lastCompletion, m_cfg.rocev2.irnRtoHigh);
    EXPECT_LT(m_lastCompletion, m_cfg.rocev2.irnRtoHigh + MicroSeconds(100));
}

// The first packet out arms the timer while it alone is outstanding, so with RTO_low; the rest
// of the window follows at once. RTO_low is for at most N packets in flight: with a round trip
// between RTO_low and RTO_high (150 us here, 100 and 320 us), the timer must wait for
// RTO_high, not resend a loss-free window (before the fix: 1 timeout, 256 resends).
TEST_F(RoceV2Pair, IrnRtoLowArmedByTheFirstPacketGivesWayToRtoHighWhenTheWindowFollows)
{
    Build(IrnConfig(), 1 << 20);
    m_net->Link(m_a, m_b).delay = MicroSeconds(75);
    m_net->Link(m_b, m_a).delay = MicroSeconds(75);
    ASSERT_LT(m_cfg.rocev2.irnRtoLow, MicroSeconds(150));
    ASSERT_GT(m_cfg.rocev2.irnRtoHigh, MicroSeconds(200));
    ASSERT_TRUE(WriteAllAndComplete());
    EXPECT_EQ(CounterA(Counter::RTO), 0u);
    EXPECT_EQ(CounterA(Counter::TX_RETRANSMIT), 0u);
}

// A round trip above RTO_high (500 us against 320 us) and no loss: every timeout is
// spurious. It resends the oldest PSN only; the next cumulative ACK acknowledges PSNs that
// were not resent, so the originals are arriving and nothing more is resent. (Before, each
// timeout resent every unSACKed PSN up to the highest sent: 256 resends for this 1 MiB.)
TEST_F(RoceV2Pair, IrnSpuriousTimeoutResendsOnlyTheOldestPacket)
{
    ConnectionConfig cfg = IrnConfig();
    cfg.rocev2.irnRtoBackoff = true; // (the paper's fixed timer would run out of retries)
    Build(cfg, 1 << 20);
    m_net->EnableTxLog(true);
    m_net->Link(m_a, m_b).delay = MicroSeconds(250);
    m_net->Link(m_b, m_a).delay = MicroSeconds(250);
    ASSERT_TRUE(WriteAllAndComplete());
    const uint64_t timeouts = CounterA(Counter::RTO);
    EXPECT_GE(timeouts, 1u);
    EXPECT_EQ(CounterA(Counter::TX_RETRANSMIT), timeouts) << "one PSN per timeout";
    EXPECT_EQ(SendsOf(*m_net, m_a, 0), 1u + timeouts);
    EXPECT_EQ(SendsOf(*m_net, m_a, 1), 1u);
}

// The last 8 of 16 packets are lost once each and nothing after them reveals it: one timeout
// resends the oldest; each cumulative ACK that then stops at the next missing PSN presumes
// twice as many lost (1, 2, 4, then the last one), so all 8 are resent once, without another
// timeout and without resending what arrived.
TEST_F(RoceV2Pair, IrnTimeoutOnALostTailBurstResendsItInDoublingSteps)
{
    Build(IrnConfig(), 64 * 1024);
    m_net->EnableTxLog(true);
    std::set<uint32_t> dropped;
    m_net->Link(m_a, m_b).dropIf = [&](const WireInfo& w) {
        return LookupOpcode(w.opcode).kind == PacketKind::DATA && w.psn >= 8 &&
               dropped.insert(w.psn).second;
    };
    ASSERT_TRUE(WriteAllAndComplete());
    EXPECT_EQ(CounterA(Counter::RTO), 1u);
    EXPECT_EQ(CounterA(Counter::TX_RETRANSMIT), 8u);
    for (uint32_t psn = 0; psn < 16; ++psn)
    {
        EXPECT_EQ(SendsOf(*m_net, m_a, psn), psn >= 8 ? 2u : 1u) << "psn " << psn;
    }
}

// (Review of 4152083, the IRN timeout presumption.) A SACK leaves m_lossBound on the highest
// SACKed PSN itself, so after a timeout the cumulative ACK that stops exactly at the first
// PSN neither resent nor SACKed (lossBound + 1) is taken as "beyond the resent range" and
// ends the presumption: a lost tail above the highest SACKed PSN waits for a second timeout.
TEST_F(RoceV2Pair, IrnReviewTimeoutAfterSackedPsnsStillPresumesTheLostTail)
{
    Build(IrnConfig(), 256 * 1024);
    m_net->EnableTxLog(true);
    const uint32_t packets = uint32_t(m_src.size() / m_cfg.mtu);
    ASSERT_EQ(packets, 64u);
    constexpr uint32_t HOLE = 10;
    constexpr uint32_t TAIL = 40; // PSNs 40..63 lost once each
    std::map<uint32_t, int> seen;
    m_net->Link(m_a, m_b).dropIf = [&](const WireInfo& w) {
        if (LookupOpcode(w.opcode).kind != PacketKind::DATA)
        {
            return false;
        }
        int limit = w.psn == HOLE ? 2 : (w.psn >= TAIL ? 1 : 0); // the hole and its SACK resend
        return seen[w.psn]++ < limit;
    };
    ASSERT_TRUE(WriteAllAndComplete());
    EXPECT_EQ(CounterA(Counter::RTO), 1u) << "one timeout, then the tail in doubling steps";
    EXPECT_EQ(CounterA(Counter::TX_RETRANSMIT), 2u + (packets - TAIL));
}

// READ responses acknowledge one PSN each, so after a spurious timeout during a READ every
// response lands exactly on the next boundary of the presumed range, and the doubling went past
// the READ's end into the WRITE PSNs sent before the timeout (delivered, their ACK behind the
// responses): 2 of them resent (64 before the timeout change). A resent READ request now
// counts its whole span as resent. One boundary ACK can still come from an original (the
// ambiguity of per-packet ACKs, docs/engine-rocev2.md, "Timeout"): at most one WRITE PSN.
TEST_F(RoceV2Pair, IrnReviewSpuriousTimeoutDuringAReadDoesNotResendTheWriteAfterIt)
{
    ConnectionConfig cfg = IrnConfig();
    cfg.rocev2.irnRtoBackoff = true;
    Build(cfg, 1 << 20);
    std::vector<uint8_t> remote(512 * 1024, 7);
    MemoryRegion remoteMr =
        B().RegisterMemory(remote.data(), remote.size(), ACCESS_REMOTE_READ | ACCESS_LOCAL_WRITE);
    std::vector<uint8_t> local(512 * 1024, 0);
    MemoryRegion localMr = A().RegisterMemory(local.data(), local.size(), ACCESS_LOCAL_WRITE);
    m_net->EnableTxLog(true);
    m_net->Link(m_a, m_b).delay = MicroSeconds(250);
    m_net->Link(m_b, m_a).delay = MicroSeconds(250);
    const uint32_t readBytes = 64 * m_cfg.mtu;
    SendWr rd;
    rd.wrId = 1;
    rd.opcode = WrOpcode::RDMA_READ;
    rd.sge = {localMr.addr, readBytes, localMr.lkey};
    rd.remoteAddr = remoteMr.addr;
    rd.rkey = remoteMr.rkey;
    ASSERT_EQ(A().PostSend(m_net->Now(), m_qa, rd), PostStatus::OK);
    ASSERT_EQ(Write(2, 0, 64 * m_cfg.mtu), PostStatus::OK);
    m_net->RunUntilIdle(MilliSeconds(50));
    ASSERT_EQ(m_net->Completions(m_a).size(), 2u);
    EXPECT_EQ(m_net->Completions(m_a)[0].status, WcStatus::SUCCESS);
    EXPECT_EQ(m_net->Completions(m_a)[1].status, WcStatus::SUCCESS);
    EXPECT_GE(CounterA(Counter::RTO), 1u);
    uint32_t writeResends = 0;
    for (uint32_t psn = 64; psn < 128; ++psn)
    {
        writeResends += SendsOf(*m_net, m_a, psn) - 1;
    }
    EXPECT_LE(writeResends, 1u) << "RTO " << CounterA(Counter::RTO) << ", resent "
                                << CounterA(Counter::TX_RETRANSMIT);
}

// Endpoint::SetHostDelay: "timers already armed keep their deadlines". The expiry
// re-evaluation of 4152083 recomputes the deadline with the host delay of the moment (for
// every recovery mode, go-back-N included): a host delay raised while the timer runs
// postpones an armed timer, and each raise before each expiry postpones it again.
TEST_F(RoceV2Pair, IrnReviewARaisedHostDelayDoesNotPostponeAnArmedTimer)
{
    for (bool irn : {false, true})
    {
        SCOPED_TRACE(irn ? "irn" : "gbn");
        Build(irn ? IrnConfig() : RoceConfig(), 4096);
        int drops = 1;
        m_net->Link(m_a, m_b).dropIf = [&](const WireInfo& w) {
            return LookupOpcode(w.opcode).kind == PacketKind::DATA && drops-- > 0;
        };
        Write(1, 0, 4096);
        // One packet outstanding: RTO_low (100 us) in IRN, the local ACK timeout (524 us) in
        // go-back-N, armed at about 0 with no host delay.
        const Time rto =
            irn ? m_cfg.rocev2.irnRtoLow : RoceLocalAckTimeout(m_cfg.rocev2.localAckTimeout);
        m_net->RunUntil(rto / 2);
        A().SetHostDelay(MilliSeconds(20));
        m_net->RunUntil(rto + MicroSeconds(50));
        EXPECT_EQ(CounterA(Counter::RTO), 1u) << "the timer armed before the raise fires on time";
        m_net->RunUntilIdle(MilliSeconds(100));
        EXPECT_EQ(m_net->Completions(m_a).size(), 1u);
    }
}

TEST_F(RoceV2Pair, IrnCompletesReceivesInOrderAfterTheHoleFills)
{
    ConnectionConfig cfg = IrnConfig();
    cfg.mtu = 1024;
    Build(cfg, 64 * 1024);
    m_net->EnableTxLog(true);
    std::vector<std::pair<Time, Completion>> recvs;
    m_net->onCompletion = [&](uint32_t ep, const Completion& c) {
        m_lastCompletion = m_net->Now();
        if (ep == m_b)
        {
            recvs.emplace_back(m_net->Now(), c);
        }
    };
    // Four messages of 3000 bytes (3 packets each): SEND with imm, WRITE with imm, SEND,
    // WRITE with imm. The first packet of the first one is lost.
    const WrOpcode ops[] = {WrOpcode::SEND_WITH_IMM,
                            WrOpcode::RDMA_WRITE_WITH_IMM,
                            WrOpcode::SEND,
                            WrOpcode::RDMA_WRITE_WITH_IMM};
    for (uint32_t i = 0; i < 4; ++i)
    {
        RecvWr rw;
        rw.wrId = 100 + i;
        rw.sge = {m_dstMr.addr + 32768 + i * 4096, 4096, m_dstMr.lkey};
        ASSERT_EQ(B().PostRecv(0, m_qb, rw), PostStatus::OK);
    }
    int drops = 1;
    m_net->Link(m_a, m_b).dropIf = [&](const WireInfo& w) {
        return w.psn == 0 && LookupOpcode(w.opcode).kind == PacketKind::DATA && drops-- > 0;
    };
    for (uint32_t i = 0; i < 4; ++i)
    {
        SendWr wr;
        wr.wrId = i;
        wr.opcode = ops[i];
        wr.sge = {m_srcMr.addr + i * 4096, 3000, m_srcMr.lkey};
        wr.remoteAddr = m_dstMr.addr + i * 4096;
        wr.rkey = m_dstMr.rkey;
        wr.immData = 0x1000 + i;
        ASSERT_EQ(A().PostSend(0, m_qa, wr), PostStatus::OK);
    }
    m_net->Kick(m_a);
    m_net->RunUntilIdle(MilliSeconds(5));
    ASSERT_EQ(m_net->Completions(m_a).size(), 4u);
    ASSERT_EQ(recvs.size(), 4u);
    Time resent = TIME_INFINITE;
    int sends = 0;
    for (const TxRecord& r : m_net->TxLog())
    {
        if (r.src == m_a && r.psn == 0 && ++sends == 2)
        {
            resent = r.time;
        }
    }
    ASSERT_NE(resent, TIME_INFINITE);
    EXPECT_EQ(CounterA(Counter::TX_RETRANSMIT), 1u);
    EXPECT_GT(CounterB(Counter::RX_OUT_OF_SEQUENCE), 0u) << "later messages arrived first";
    for (uint32_t i = 0; i < 4; ++i)
    {
        const Completion& c = recvs[i].second;
        EXPECT_EQ(m_net->Completions(m_a)[i].wrId, i);
        EXPECT_EQ(m_net->Completions(m_a)[i].status, WcStatus::SUCCESS);
        EXPECT_EQ(c.wrId, 100u + i) << "receives complete in order";
        EXPECT_EQ(c.status, WcStatus::SUCCESS);
        EXPECT_EQ(c.byteLen, 3000u);
        EXPECT_EQ(c.hasImm, ops[i] != WrOpcode::SEND);
        if (c.hasImm)
        {
            EXPECT_EQ(c.immData, 0x1000u + i);
        }
        EXPECT_GT(recvs[i].first, resent) << "nothing completes before the hole fills";
        bool send = ops[i] != WrOpcode::RDMA_WRITE_WITH_IMM;
        size_t at = send ? 32768 + i * 4096 : i * 4096;
        EXPECT_TRUE(std::equal(m_src.begin() + i * 4096,
                               m_src.begin() + i * 4096 + 3000,
                               m_dst.begin() + at))
            << i;
    }
    EXPECT_EQ(ConnB().Msn(), 4u);
}

TEST(RoceV2IrnWire, IrnAndGoBackNEndsDisagreeingIsAnInvalidRequest)
{
    // Either way round, the responder rejects the other mode's packets when they are due.
    for (int irnRequester = 0; irnRequester < 2; ++irnRequester)
    {
        EngineNetwork n;
        uint32_t a = n.AddEndpoint();
        uint32_t b = n.AddEndpoint();
        uint32_t qa = 0;
        uint32_t qb = 0;
        ASSERT_EQ(n.At(a).CreateConnection(irnRequester ? IrnConfig() : RoceConfig(), qa),
                  PostStatus::OK);
        ASSERT_EQ(n.At(b).CreateConnection(irnRequester ? RoceConfig() : IrnConfig(), qb),
                  PostStatus::OK);
        n.At(a).Connect(qa, EngineNetwork::AddressOf(b), qb);
        n.At(b).Connect(qb, EngineNetwork::AddressOf(a), qa);
        MemoryRegion src = n.At(a).RegisterMemory(nullptr, 8192, 0, 0x1000);
        MemoryRegion dst = n.At(b).RegisterMemory(nullptr, 8192, ACCESS_REMOTE_WRITE, 0x1000);
        SendWr wr;
        wr.sge = {src.addr, 8192, src.lkey};
        wr.remoteAddr = dst.addr;
        wr.rkey = dst.rkey;
        ASSERT_EQ(n.At(a).PostSend(0, qa, wr), PostStatus::OK);
        n.Kick(a);
        n.RunUntilIdle(MilliSeconds(5));
        ASSERT_EQ(n.Completions(a).size(), 1u) << irnRequester;
        EXPECT_EQ(n.Completions(a)[0].status, WcStatus::REM_INV_REQ_ERR) << irnRequester;
        EXPECT_EQ(n.At(b).Counters().Get(Counter::BYTES_PLACED), 0u);
    }
}

} // namespace
} // namespace test
} // namespace metaroce
