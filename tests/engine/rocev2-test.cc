/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

// The RoCEv2 baseline engine: wire vectors built outside this code base, go-back-N,
// coalesced ACKs, timeouts, RNR, remote errors and DCQCN (IRN selective repeat is in
// rocev2-irn-test.cc; the seeded data-integrity property of both recovery modes is in
// rocev2-property-test.cc).

#include "engine-network.h"
#include "metaroce-dcqcn.h"
#include "metaroce-encap.h"
#include "metaroce-icrc.h"
#include "metaroce-rocev2-connection.h"
#include "pair-fixture.h"
#include "property-families.h"
#include "property-harness.h"
#include "random-workload.h"
#include "rocev2-pair-fixture.h"
#include "seeded-run.h"

#include <algorithm>
#include <cstring>
#include <gtest/gtest.h>
#include <iostream>
#include <utility>
#include <vector>

namespace metaroce
{
namespace test
{
namespace
{

/*
 * Frames built by a standalone Python 3 script (struct + zlib only, no code shared with the
 * engine), following the ICRC definition of IBA Annex A17: CRC-32 (zlib) over 8 bytes of
 * 0xFF, the IPv4 header with TOS, TTL and checksum set to 0xFF, the UDP header with its
 * checksum set to 0xFF, and the BTH with byte 4 set to 0xFF, followed by the rest of the
 * datagram; stored least significant byte first. The same script reproduces the ICRC
 * 0x2a00fd82 of the ConnectX-4 CNP capture in icrc-test.cc. Scenario: 10.0.0.1 (MAC
 * 02:..:01, UDP source port 0xc0de) writes 102 bytes (byte i = 7i + 1) with PMTU 64 to VA
 * 0x10000, R_Key 0x101 on QP 2 of 10.0.0.2 (MAC 02:..:02, port 0xc0df), DSCP 26:
 *
 *   def bth(op, flags, qp, ackreq, psn, byte4=0):
 *       return struct.pack('!BBHB', op, flags, 0xffff, byte4) + qp.to_bytes(3, 'big') + \
 *              bytes([0x80 if ackreq else 0]) + psn.to_bytes(3, 'big')
 *   reth = struct.pack('!QII', 0x10000, 0x101, 102)
 *   WRITE First: bth(0x06, 0x00, 2, False, 0) + reth + payload[:64]       TOS 26 << 2 | ECT(0)
 *   WRITE Last:  bth(0x08, 0x20, 2, True, 1) + payload[64:] + b'\0\0'     (PadCnt 2, AckReq)
 *   ACK:         bth(0x11, 0x00, 2, False, 1) + b'\x1f' + (1).to_bytes(3, 'big')   TOS 26 << 2
 *   CNP:         bth(0x81, 0x00, 2, False, 0, 0x40) + bytes(16)            TOS 48 << 2, BECN
 *   IPv4: ID 0, DF, TTL 64, RFC 1071 checksum; UDP checksum 0; ICRC struct.pack('<I', crc).
 */
const uint8_t WRITE_FIRST_FRAME[] = {
    0x02, 0x00, 0x00, 0x00, 0x00, 0x02, 0x02, 0x00, 0x00, 0x00, 0x00, 0x01, 0x08, 0x00, 0x45, 0x6a,
    0x00, 0x7c, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11, 0x26, 0x05, 0x0a, 0x00, 0x00, 0x01, 0x0a, 0x00,
    0x00, 0x02, 0xc0, 0xde, 0x12, 0xb7, 0x00, 0x68, 0x00, 0x00, 0x06, 0x00, 0xff, 0xff, 0x00, 0x00,
    0x00, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00,
    0x01, 0x01, 0x00, 0x00, 0x00, 0x66, 0x01, 0x08, 0x0f, 0x16, 0x1d, 0x24, 0x2b, 0x32, 0x39, 0x40,
    0x47, 0x4e, 0x55, 0x5c, 0x63, 0x6a, 0x71, 0x78, 0x7f, 0x86, 0x8d, 0x94, 0x9b, 0xa2, 0xa9, 0xb0,
    0xb7, 0xbe, 0xc5, 0xcc, 0xd3, 0xda, 0xe1, 0xe8, 0xef, 0xf6, 0xfd, 0x04, 0x0b, 0x12, 0x19, 0x20,
    0x27, 0x2e, 0x35, 0x3c, 0x43, 0x4a, 0x51, 0x58, 0x5f, 0x66, 0x6d, 0x74, 0x7b, 0x82, 0x89, 0x90,
    0x97, 0x9e, 0xa5, 0xac, 0xb3, 0xba, 0xb2, 0x19, 0x82, 0xa2,
};
constexpr uint32_t WRITE_FIRST_ICRC = 0xa28219b2;

const uint8_t WRITE_LAST_FRAME[] = {
    0x02, 0x00, 0x00, 0x00, 0x00, 0x02, 0x02, 0x00, 0x00, 0x00, 0x00, 0x01, 0x08, 0x00,
    0x45, 0x6a, 0x00, 0x54, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11, 0x26, 0x2d, 0x0a, 0x00,
    0x00, 0x01, 0x0a, 0x00, 0x00, 0x02, 0xc0, 0xde, 0x12, 0xb7, 0x00, 0x40, 0x00, 0x00,
    0x08, 0x20, 0xff, 0xff, 0x00, 0x00, 0x00, 0x02, 0x80, 0x00, 0x00, 0x01, 0xc1, 0xc8,
    0xcf, 0xd6, 0xdd, 0xe4, 0xeb, 0xf2, 0xf9, 0x00, 0x07, 0x0e, 0x15, 0x1c, 0x23, 0x2a,
    0x31, 0x38, 0x3f, 0x46, 0x4d, 0x54, 0x5b, 0x62, 0x69, 0x70, 0x77, 0x7e, 0x85, 0x8c,
    0x93, 0x9a, 0xa1, 0xa8, 0xaf, 0xb6, 0xbd, 0xc4, 0x00, 0x00, 0x29, 0x94, 0x12, 0x83,
};
constexpr uint32_t WRITE_LAST_ICRC = 0x83129429;

const uint8_t ACK_FRAME[] = {
    0x02, 0x00, 0x00, 0x00, 0x00, 0x01, 0x02, 0x00, 0x00, 0x00, 0x00, 0x02, 0x08, 0x00, 0x45, 0x68,
    0x00, 0x30, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11, 0x26, 0x53, 0x0a, 0x00, 0x00, 0x02, 0x0a, 0x00,
    0x00, 0x01, 0xc0, 0xdf, 0x12, 0xb7, 0x00, 0x1c, 0x00, 0x00, 0x11, 0x00, 0xff, 0xff, 0x00, 0x00,
    0x00, 0x02, 0x00, 0x00, 0x00, 0x01, 0x1f, 0x00, 0x00, 0x01, 0x38, 0xf0, 0xba, 0x71,
};
constexpr uint32_t ACK_ICRC = 0x71baf038;

const uint8_t CNP_FRAME[] = {
    0x02, 0x00, 0x00, 0x00, 0x00, 0x01, 0x02, 0x00, 0x00, 0x00, 0x00, 0x02, 0x08, 0x00, 0x45,
    0xc0, 0x00, 0x3c, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11, 0x25, 0xef, 0x0a, 0x00, 0x00, 0x02,
    0x0a, 0x00, 0x00, 0x01, 0xc0, 0xdf, 0x12, 0xb7, 0x00, 0x28, 0x00, 0x00, 0x81, 0x00, 0xff,
    0xff, 0x40, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x57, 0x42, 0x3a, 0xdf,
};
constexpr uint32_t CNP_ICRC = 0xdf3a4257;

/// The CNP datagram (BTH to ICRC) captured on a ConnectX-4 Lx (see icrc-test.cc).
const uint8_t CX4_CNP_DATAGRAM[] = {
    0x81, 0x00, 0xff, 0xff, 0x40, 0x00, 0x01, 0x18, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x82, 0xfd, 0x00, 0x2a,
};

/// Encapsulate \p tx as the frame the test vectors describe.
std::vector<uint8_t>
ToFrame(const TxDatagram& tx)
{
    MacAddress a{{0x02, 0x00, 0x00, 0x00, 0x00, 0x01}};
    MacAddress b{{0x02, 0x00, 0x00, 0x00, 0x00, 0x02}};
    bool fromA = tx.meta.srcIp == 0x0a000001;
    std::vector<uint8_t> frame(FRAME_HEADERS_SIZE + tx.length);
    size_t len = EncapsulateFrame(frame.data(),
                                  frame.size(),
                                  fromA ? a : b,
                                  fromA ? b : a,
                                  tx.meta,
                                  tx.buffer,
                                  tx.length);
    frame.resize(len);
    return frame;
}

/// \return the bytes of \p frame as a vector.
template <size_t N>
std::vector<uint8_t>
Bytes(const uint8_t (&frame)[N])
{
    return std::vector<uint8_t>(frame, frame + N);
}

TEST(RoceV2Wire, FramesMatchIndependentlyBuiltVectors)
{
    EndpointConfig ea;
    ea.localIp = 0x0a000001;
    EndpointConfig eb;
    eb.localIp = 0x0a000002;
    Endpoint a(ea);
    Endpoint b(eb);
    ConnectionConfig ca = RoceConfig();
    ca.mtu = 64;
    ca.sourcePortBase = 0xc0de;
    ConnectionConfig cb = ca;
    cb.sourcePortBase = 0xc0df;
    uint32_t qa = 0;
    uint32_t qb = 0;
    ASSERT_EQ(a.CreateConnection(ca, qa), PostStatus::OK);
    ASSERT_EQ(b.CreateConnection(cb, qb), PostStatus::OK);
    ASSERT_EQ(a.Connect(qa, eb.localIp, qb), PostStatus::OK);
    ASSERT_EQ(b.Connect(qb, ea.localIp, qa), PostStatus::OK);
    ASSERT_EQ(qb, 2u) << "connections are numbered from 2 (IB reserves QP 0 and 1)";
    std::vector<uint8_t> src(102);
    for (size_t i = 0; i < src.size(); ++i)
    {
        src[i] = uint8_t(i * 7 + 1);
    }
    std::vector<uint8_t> dst(256, 0);
    MemoryRegion smr = a.RegisterMemory(src.data(), src.size(), 0, 0x20000);
    MemoryRegion dmr = b.RegisterMemory(dst.data(), dst.size(), ACCESS_REMOTE_WRITE, 0x10000);
    ASSERT_EQ(dmr.rkey, 0x101u) << "the vector's R_Key";
    SendWr wr;
    wr.wrId = 1;
    wr.opcode = WrOpcode::RDMA_WRITE;
    wr.sge = {smr.addr, 102, smr.lkey};
    wr.remoteAddr = 0x10000;
    wr.rkey = dmr.rkey;
    ASSERT_EQ(a.PostSend(0, qa, wr), PostStatus::OK);

    std::vector<uint8_t> buffer(Endpoint::MaxDatagramSize(ca.mtu));
    TxDatagram tx;
    tx.buffer = buffer.data();
    tx.capacity = buffer.size();
    ASSERT_TRUE(a.PollTransmit(0, tx));
    EXPECT_EQ(tx.pathId, -1);
    EXPECT_EQ(ToFrame(tx), Bytes(WRITE_FIRST_FRAME));
    EXPECT_EQ(LoadIcrc(tx.buffer + tx.length - ICRC_SIZE), WRITE_FIRST_ICRC);
    // Deliver the First packet CE-marked: the notification point answers with a CNP.
    DatagramMeta marked = tx.meta;
    marked.ecn = Ecn::CE;
    ASSERT_EQ(b.HandleDatagram(0, marked, tx.buffer, tx.length), RxStatus::ACCEPTED);

    std::vector<uint8_t> buffer2(buffer.size());
    TxDatagram tx2;
    tx2.buffer = buffer2.data();
    tx2.capacity = buffer2.size();
    ASSERT_TRUE(a.PollTransmit(0, tx2));
    EXPECT_EQ(ToFrame(tx2), Bytes(WRITE_LAST_FRAME));
    EXPECT_EQ(LoadIcrc(tx2.buffer + tx2.length - ICRC_SIZE), WRITE_LAST_ICRC);
    EXPECT_FALSE(a.PollTransmit(0, tx2));

    TxDatagram reply;
    std::vector<uint8_t> buffer3(buffer.size());
    reply.buffer = buffer3.data();
    reply.capacity = buffer3.size();
    ASSERT_TRUE(b.PollTransmit(0, reply));
    EXPECT_EQ(ToFrame(reply), Bytes(CNP_FRAME));
    EXPECT_EQ(LoadIcrc(reply.buffer + reply.length - ICRC_SIZE), CNP_ICRC);
    EXPECT_FALSE(b.PollTransmit(0, reply)) << "one PMTU packet is not worth an ACK yet";

    ASSERT_EQ(b.HandleDatagram(0, tx2.meta, tx2.buffer, tx2.length), RxStatus::ACCEPTED);
    ASSERT_TRUE(b.PollTransmit(0, reply));
    EXPECT_EQ(ToFrame(reply), Bytes(ACK_FRAME)) << "AckReq on the Last packet: ACK PSN 1, MSN 1";
    EXPECT_EQ(LoadIcrc(reply.buffer + reply.length - ICRC_SIZE), ACK_ICRC);
    EXPECT_TRUE(std::equal(src.begin(), src.end(), dst.begin()));

    ASSERT_EQ(a.HandleDatagram(0, reply.meta, reply.buffer, reply.length), RxStatus::ACCEPTED);
    Completion c;
    ASSERT_TRUE(a.PollCompletion(c));
    EXPECT_EQ(c.status, WcStatus::SUCCESS);
    EXPECT_EQ(c.byteLen, 102u);
}

TEST(RoceV2Wire, CapturedConnectX4CnpParses)
{
    ParsedPacket pkt;
    ASSERT_EQ(ParseDatagram(CX4_CNP_DATAGRAM, sizeof(CX4_CNP_DATAGRAM), pkt), ParseStatus::OK);
    EXPECT_EQ(pkt.bth.opcode, ROCE_CNP);
    EXPECT_TRUE(pkt.bth.becn);
    EXPECT_EQ(pkt.bth.destQp, 0x0118u);
    EXPECT_EQ(pkt.info->kind, PacketKind::CNP);
    EXPECT_EQ(pkt.payloadLength, 0u);
    EXPECT_EQ(DatagramLength(*pkt.info, 0), sizeof(CX4_CNP_DATAGRAM));
    // Without the 16 reserved bytes it is truncated.
    EXPECT_EQ(ParseDatagram(CX4_CNP_DATAGRAM, 16, pkt), ParseStatus::TRUNCATED);
}

TEST(RoceV2Wire, AethAndTimerEncodings)
{
    uint8_t bytes[Aeth::SIZE];
    Aeth nak;
    nak.syndrome = Aeth::TYPE_NAK | Aeth::NAK_PSN_SEQUENCE_ERROR;
    nak.msn = 0xabcdef;
    nak.Write(bytes);
    const uint8_t expected[Aeth::SIZE] = {0x60, 0xab, 0xcd, 0xef};
    EXPECT_EQ(std::memcmp(bytes, expected, sizeof(bytes)), 0);
    EXPECT_EQ(Aeth::TYPE_RNR_NAK | 14, 0x2e);
    EXPECT_EQ(Aeth::TYPE_NAK | Aeth::NAK_REMOTE_ACCESS_ERROR, 0x62);
    // ibv_modify_qp(3): timeout 14 = 67.1 ms; min_rnr_timer 1 = 0.01 ms, 0 = 655.36 ms.
    EXPECT_EQ(RoceV2Connection::LocalAckTimeout(14), NanoSeconds(4096) * 16384);
    EXPECT_EQ(RoceV2Connection::LocalAckTimeout(0), TIME_INFINITE);
    EXPECT_EQ(RoceV2Connection::RnrTimerValue(1), MicroSeconds(10));
    EXPECT_EQ(RoceV2Connection::RnrTimerValue(14), MicroSeconds(1280));
    EXPECT_EQ(RoceV2Connection::RnrTimerValue(0), MicroSeconds(655360));
    EXPECT_EQ(RoceV2Connection::RnrTimerValue(31), MicroSeconds(491520));
}

/// Records the rates the engine reports.
class RateLog : public EngineObserver
{
  public:
    void OnRateChange(Time now, uint32_t /*qpn*/, double bps) override
    {
        samples.emplace_back(now, bps);
        minRate = std::min(minRate, bps);
    }

    std::vector<std::pair<Time, double>> samples;
    double minRate{1e300};
};

TEST_F(RoceV2Pair, LossFreeWriteUsesRcOpcodesOnePortAndLineRate)
{
    Build(RoceConfig(), 8 << 20);
    m_net->EnableTxLog(true);
    ASSERT_EQ(Write(7, 0, uint32_t(m_src.size())), PostStatus::OK);
    m_net->RunUntilIdle(MilliSeconds(50));
    ASSERT_EQ(m_net->Completions(m_a).size(), 1u);
    EXPECT_EQ(m_net->Completions(m_a)[0].status, WcStatus::SUCCESS);
    EXPECT_EQ(m_net->Completions(m_a)[0].wrId, 7u);
    EXPECT_EQ(m_src, m_dst);
    EXPECT_EQ(CounterA(Counter::TX_RETRANSMIT), 0u);
    EXPECT_EQ(CounterB(Counter::TX_NAK), 0u);
    EXPECT_EQ(CounterB(Counter::BYTES_PLACED), m_src.size());
    EXPECT_EQ(ConnB().Msn(), 1u);
    // First, Middle..., Last with consecutive PSNs, all on the default path (pathId -1).
    std::vector<const TxRecord*> data;
    size_t acks = 0;
    for (const TxRecord& r : m_net->TxLog())
    {
        EXPECT_EQ(r.pathId, -1);
        if (r.src == m_a)
        {
            data.push_back(&r);
        }
        else
        {
            acks += r.opcode == RC_ACKNOWLEDGE;
        }
    }
    ASSERT_EQ(data.size(), m_src.size() / m_cfg.mtu);
    for (size_t i = 0; i < data.size(); ++i)
    {
        uint8_t expected = i == 0                 ? RC_WRITE_FIRST
                           : i + 1 == data.size() ? RC_WRITE_LAST
                                                  : RC_WRITE_MIDDLE;
        ASSERT_EQ(data[i]->opcode, expected) << i;
        ASSERT_EQ(data[i]->psn, i);
    }
    // Coalesced: about one ACK per ackEveryPackets packets, not one per packet.
    EXPECT_LE(acks, data.size() / m_cfg.rocev2.ackEveryPackets + 2);
    EXPECT_GE(acks, data.size() / m_cfg.rocev2.ackEveryPackets / 2);
    double gbps = Goodput(m_src.size());
    EXPECT_GT(gbps, 95.0);
    std::cout << "[ figures  ] RoCEv2 loss-free 8 MiB WRITE goodput " << gbps << " Gb/s, " << acks
              << " ACKs for " << data.size() << " packets\n";
}

TEST_F(RoceV2Pair, OneLostPacketCostsExactlyOneGoBackNRound)
{
    Build(RoceConfig(), 1 << 20);
    m_net->EnableTxLog(true);
    constexpr uint32_t LOST = 50;
    int dropsLeft = 1;
    m_net->Link(m_a, m_b).dropIf = [&](const WireInfo& w) {
        if (w.opcode != RC_ACKNOWLEDGE && w.psn == LOST && dropsLeft > 0)
        {
            --dropsLeft;
            return true;
        }
        return false;
    };
    ASSERT_TRUE(WriteAllAndComplete());
    // What was in flight beyond the lost PSN when the go-back started: every PSN >= LOST
    // sent before LOST was sent again.
    uint32_t inFlight = 0;
    bool resent = false;
    int lostSends = 0;
    for (const TxRecord& r : m_net->TxLog())
    {
        if (r.src != m_a)
        {
            continue;
        }
        if (r.psn == LOST && ++lostSends == 2)
        {
            resent = true;
        }
        if (!resent && r.psn >= LOST)
        {
            ++inFlight;
        }
    }
    ASSERT_TRUE(resent);
    EXPECT_EQ(CounterB(Counter::TX_NAK), 1u) << "one NAK per sequence-error episode";
    EXPECT_EQ(CounterA(Counter::RX_NAK), 1u);
    EXPECT_EQ(CounterA(Counter::GO_BACK_N), 1u);
    EXPECT_EQ(CounterA(Counter::RTO), 0u);
    EXPECT_EQ(CounterA(Counter::TX_RETRANSMIT), inFlight)
        << "go-back-N resends exactly the PSNs from the lost one to the highest sent";
    EXPECT_GT(inFlight, 1u);
    EXPECT_EQ(CounterB(Counter::RX_OUT_OF_SEQUENCE), inFlight - 1);
    EXPECT_EQ(CounterB(Counter::BYTES_PLACED), m_src.size()) << "placed exactly once";
    std::cout << "[ figures  ] one loss at 100 Gb/s, 2 us links: go-back-N resent " << inFlight
              << " packets\n";
}

TEST_F(RoceV2Pair, RandomLossCompletesWithDataIntact)
{
    for (double loss : {0.0, 0.001, 0.01})
    {
        NetworkConfig net;
        net.seed = 11;
        Build(RoceConfig(), 8 << 20, net);
        m_net->Link(m_a, m_b).loss = loss;
        m_net->Link(m_b, m_a).loss = loss;
        Write(1, 0, uint32_t(m_src.size()));
        m_net->RunUntilIdle(MilliSeconds(500));
        ASSERT_EQ(m_net->Completions(m_a).size(), 1u) << "loss " << loss;
        EXPECT_EQ(m_net->Completions(m_a)[0].status, WcStatus::SUCCESS);
        EXPECT_EQ(m_src, m_dst) << "loss " << loss;
        EXPECT_EQ(CounterB(Counter::BYTES_PLACED), m_src.size());
        if (loss > 0)
        {
            EXPECT_GT(CounterA(Counter::TX_RETRANSMIT), 0u);
        }
        std::cout << "[ figures  ] 8 MiB WRITE, loss " << loss * 100 << "% both ways: goodput "
                  << Goodput(m_src.size()) << " Gb/s, " << CounterA(Counter::GO_BACK_N)
                  << " go-back-N rounds (" << CounterA(Counter::RTO) << " by timeout), "
                  << CounterA(Counter::TX_RETRANSMIT) << " packets resent for "
                  << CounterA(Counter::TX_DATA) << "\n";
    }
}

TEST_F(RoceV2Pair, DuplicatesAreAcknowledgedAgainAndPlacedOnce)
{
    Build(RoceConfig(), 512 * 1024);
    m_net->Link(m_a, m_b).duplicate = 0.3;
    Write(1, 0, uint32_t(m_src.size()));
    m_net->RunUntilIdle(MilliSeconds(50));
    ASSERT_EQ(m_net->Completions(m_a).size(), 1u);
    EXPECT_EQ(m_src, m_dst);
    EXPECT_GT(CounterB(Counter::RX_DUPLICATE), 0u);
    EXPECT_EQ(CounterB(Counter::BYTES_PLACED), m_src.size());
}

TEST_F(RoceV2Pair, BlackHoleExhaustsRetriesWithRetryExceeded)
{
    ConnectionConfig cfg = RoceConfig();
    cfg.rocev2.localAckTimeout = 5; // 131 us
    cfg.rocev2.retryCount = 3;
    Build(cfg, 64 * 1024);
    m_net->Link(m_a, m_b).blackHole = true;
    Write(1, 0, 20000);
    Write(2, 0, 20000);
    m_net->RunUntilIdle(MilliSeconds(50));
    ASSERT_EQ(m_net->Completions(m_a).size(), 2u);
    EXPECT_EQ(m_net->Completions(m_a)[0].status, WcStatus::RETRY_EXC_ERR);
    EXPECT_EQ(m_net->Completions(m_a)[1].status, WcStatus::WR_FLUSH_ERR);
    EXPECT_EQ(CounterA(Counter::RTO), 4u) << "retry_cnt 3: three retries, then the error";
    EXPECT_TRUE(ConnA().InError());
    EXPECT_EQ(ConnA().GetRequesterState(), RoceV2Connection::RequesterState::ERROR);
    Time expected = 4 * RoceV2Connection::LocalAckTimeout(5);
    EXPECT_NEAR(double(m_lastCompletion), double(expected), double(MicroSeconds(20)));
    EXPECT_EQ(Write(3, 0, 10), PostStatus::CONNECTION_ERROR);
}

TEST_F(RoceV2Pair, LostTailIsRecoveredByTheTimer)
{
    Build(RoceConfig(), 64 * 1024);
    int drops = 1;
    m_net->Link(m_a, m_b).dropIf = [&](const WireInfo& w) {
        return w.opcode == RC_WRITE_LAST && drops-- > 0;
    };
    Write(1, 0, uint32_t(m_src.size()));
    m_net->RunUntilIdle(MilliSeconds(50));
    ASSERT_EQ(m_net->Completions(m_a).size(), 1u);
    EXPECT_EQ(m_net->Completions(m_a)[0].status, WcStatus::SUCCESS);
    EXPECT_EQ(CounterA(Counter::RTO), 1u);
    EXPECT_EQ(CounterA(Counter::TX_RETRANSMIT), 1u) << "only the unacknowledged tail";
    EXPECT_EQ(m_src, m_dst);
}

TEST_F(RoceV2Pair, SendAndWriteWithImmediateCompleteOnBothSides)
{
    ConnectionConfig cfg = RoceConfig();
    cfg.mtu = 1024;
    Build(cfg, 64 * 1024);
    RecvWr r1;
    r1.wrId = 100;
    r1.sge = {m_dstMr.addr + 32768, 20000, m_dstMr.lkey};
    RecvWr r2;
    r2.wrId = 101;
    ASSERT_EQ(B().PostRecv(0, m_qb, r1), PostStatus::OK);
    ASSERT_EQ(B().PostRecv(0, m_qb, r2), PostStatus::OK);
    SendWr send;
    send.wrId = 5;
    send.opcode = WrOpcode::SEND_WITH_IMM;
    send.sge = {m_srcMr.addr, 10000, m_srcMr.lkey};
    send.immData = 0xC0FFEE;
    ASSERT_EQ(A().PostSend(0, m_qa, send), PostStatus::OK);
    ASSERT_EQ(Write(6, 0, 5000, WrOpcode::RDMA_WRITE_WITH_IMM), PostStatus::OK);
    m_net->RunUntilIdle(MilliSeconds(5));
    ASSERT_EQ(m_net->Completions(m_a).size(), 2u);
    EXPECT_EQ(m_net->Completions(m_a)[0].opcode, WcOpcode::SEND);
    EXPECT_EQ(m_net->Completions(m_a)[1].opcode, WcOpcode::RDMA_WRITE);
    ASSERT_EQ(m_net->Completions(m_b).size(), 2u);
    const Completion& c1 = m_net->Completions(m_b)[0];
    EXPECT_EQ(c1.wrId, 100u);
    EXPECT_EQ(c1.opcode, WcOpcode::RECV);
    EXPECT_EQ(c1.byteLen, 10000u);
    EXPECT_TRUE(c1.hasImm);
    EXPECT_EQ(c1.immData, 0xC0FFEEu);
    const Completion& c2 = m_net->Completions(m_b)[1];
    EXPECT_EQ(c2.wrId, 101u);
    EXPECT_EQ(c2.opcode, WcOpcode::RECV_RDMA_WITH_IMM);
    EXPECT_EQ(c2.byteLen, 5000u);
    EXPECT_EQ(c2.immData, 18u);
    EXPECT_TRUE(std::equal(m_src.begin(), m_src.begin() + 10000, m_dst.begin() + 32768));
    EXPECT_TRUE(std::equal(m_src.begin(), m_src.begin() + 5000, m_dst.begin()));
    EXPECT_EQ(ConnB().Msn(), 2u);
}

TEST_F(RoceV2Pair, RnrNakPausesUntilAReceiveIsPosted)
{
    Build(RoceConfig(), 64 * 1024);
    ASSERT_EQ(Write(5, 0, 20000, WrOpcode::SEND), PostStatus::OK);
    m_net->At(MicroSeconds(100), [&]() {
        RecvWr rwr;
        rwr.wrId = 1;
        rwr.sge = {m_dstMr.addr, uint32_t(m_dst.size()), m_dstMr.lkey};
        EXPECT_EQ(B().PostRecv(m_net->Now(), m_qb, rwr), PostStatus::OK);
    });
    m_net->RunUntilIdle(MilliSeconds(5));
    EXPECT_GT(CounterB(Counter::RX_RNR), 0u);
    EXPECT_EQ(CounterB(Counter::TX_NAK), CounterB(Counter::RX_RNR)) << "no sequence NAKs";
    ASSERT_EQ(m_net->Completions(m_a).size(), 1u);
    EXPECT_EQ(m_net->Completions(m_a)[0].status, WcStatus::SUCCESS);
    ASSERT_EQ(m_net->Completions(m_b).size(), 1u);
    EXPECT_EQ(m_net->Completions(m_b)[0].byteLen, 20000u);
    EXPECT_TRUE(std::equal(m_src.begin(), m_src.begin() + 20000, m_dst.begin()));
}

TEST_F(RoceV2Pair, RnrRetryExhaustionFails)
{
    ConnectionConfig cfg = RoceConfig();
    cfg.rocev2.rnrRetry = 2;
    Build(cfg, 64 * 1024);
    Write(5, 0, 100, WrOpcode::SEND);
    m_net->RunUntilIdle(MilliSeconds(5));
    ASSERT_EQ(m_net->Completions(m_a).size(), 1u);
    EXPECT_EQ(m_net->Completions(m_a)[0].status, WcStatus::RNR_RETRY_EXC_ERR);
    EXPECT_EQ(CounterB(Counter::RX_RNR), 3u);
}

TEST_F(RoceV2Pair, BadRkeyIsNakedAsRemoteAccessErrorWithoutTouchingMemory)
{
    Build(RoceConfig(), 64 * 1024);
    SendWr wr;
    wr.wrId = 3;
    wr.opcode = WrOpcode::RDMA_WRITE;
    wr.sge = {m_srcMr.addr, 20000, m_srcMr.lkey};
    wr.remoteAddr = m_dstMr.addr + m_dst.size() - 4096; // longer than the rest of the region
    wr.rkey = m_dstMr.rkey;
    ASSERT_EQ(A().PostSend(0, m_qa, wr), PostStatus::OK);
    ASSERT_EQ(Write(4, 0, 100), PostStatus::OK);
    m_net->RunUntilIdle(MilliSeconds(5));
    ASSERT_EQ(m_net->Completions(m_a).size(), 2u);
    EXPECT_EQ(m_net->Completions(m_a)[0].status, WcStatus::REM_ACCESS_ERR);
    EXPECT_EQ(m_net->Completions(m_a)[1].status, WcStatus::WR_FLUSH_ERR);
    EXPECT_EQ(CounterB(Counter::RX_ACCESS_ERROR), 1u);
    EXPECT_EQ(CounterB(Counter::TX_NAK), 1u);
    EXPECT_TRUE(ConnB().InError());
    EXPECT_TRUE(std::all_of(m_dst.begin(), m_dst.end(), [](uint8_t b) { return b == 0; }))
        << "bounds are checked on the First packet, before any byte is placed";
}

TEST_F(RoceV2Pair, SendLongerThanTheReceiveFailsOnBothSides)
{
    Build(RoceConfig(), 64 * 1024);
    RecvWr rwr;
    rwr.wrId = 1;
    rwr.sge = {m_dstMr.addr, 1000, m_dstMr.lkey};
    ASSERT_EQ(B().PostRecv(0, m_qb, rwr), PostStatus::OK);
    Write(2, 0, 5000, WrOpcode::SEND);
    m_net->RunUntilIdle(MilliSeconds(5));
    ASSERT_EQ(m_net->Completions(m_a).size(), 1u);
    EXPECT_EQ(m_net->Completions(m_a)[0].status, WcStatus::REM_INV_REQ_ERR);
    ASSERT_EQ(m_net->Completions(m_b).size(), 1u);
    EXPECT_EQ(m_net->Completions(m_b)[0].status, WcStatus::LOC_LEN_ERR);
}

TEST(RoceV2Dcqcn, ReactionPointFollowsThePaper)
{
    ConnectionConfig::RoceV2Options opt;
    const double line = 100e9;
    DcqcnReactionPoint rp(opt, line);
    rp.Advance(0);
    EXPECT_DOUBLE_EQ(rp.Rate(), line);
    EXPECT_DOUBLE_EQ(rp.Alpha(), 1.0);
    // CNP: Rt = Rc, Rc *= (1 - alpha / 2), alpha = (1 - g) alpha + g.
    rp.OnCnp(0);
    EXPECT_DOUBLE_EQ(rp.Rate(), line / 2);
    EXPECT_DOUBLE_EQ(rp.TargetRate(), line);
    EXPECT_DOUBLE_EQ(rp.Alpha(), 1.0);
    // Alpha decays by (1 - g) per 55 us without CNPs; the rate timer moves Rc half way to Rt
    // every 55 us (fast recovery).
    rp.Advance(MicroSeconds(55));
    EXPECT_DOUBLE_EQ(rp.Alpha(), 1.0 - 1.0 / 256);
    EXPECT_DOUBLE_EQ(rp.Rate(), line * 3 / 4);
    EXPECT_EQ(rp.LastStage(), DcqcnReactionPoint::Stage::FAST_RECOVERY);
    rp.Advance(MicroSeconds(110) - 1);
    EXPECT_DOUBLE_EQ(rp.Rate(), line * 3 / 4) << "nothing before the next grid point";
    // A second CNP cuts with the decayed alpha and restarts the stages.
    rp.OnCnp(MicroSeconds(110) - 1);
    double alpha = 1.0 - 1.0 / 256;
    EXPECT_DOUBLE_EQ(rp.Rate(), line * 3 / 4 * (1 - alpha / 2));
    EXPECT_DOUBLE_EQ(rp.TargetRate(), line * 3 / 4);
    EXPECT_DOUBLE_EQ(rp.Alpha(), (1 - 1.0 / 256) * alpha + 1.0 / 256);
    // The first F = 5 timer events are fast recovery; then additive increase raises the
    // target by R_AI per event.
    Time t = MicroSeconds(110) - 1;
    rp.Advance(t + 5 * MicroSeconds(55));
    double target = rp.TargetRate();
    EXPECT_DOUBLE_EQ(target, line * 3 / 4);
    rp.Advance(t + 6 * MicroSeconds(55));
    EXPECT_EQ(rp.LastStage(), DcqcnReactionPoint::Stage::ADDITIVE);
    EXPECT_DOUBLE_EQ(rp.TargetRate(), target + opt.dcqcnRaiBps);
    // Byte counter events too: with both counters past F, hyper increase adds R_HAI.
    for (int i = 0; i < 7; ++i)
    {
        rp.OnBytesSent(t + 6 * MicroSeconds(55), opt.dcqcnByteCounter);
    }
    EXPECT_EQ(rp.LastStage(), DcqcnReactionPoint::Stage::HYPER);
    // Never below the minimum rate.
    for (int i = 0; i < 200; ++i)
    {
        rp.OnCnp(t + 7 * MicroSeconds(55));
    }
    EXPECT_DOUBLE_EQ(rp.Rate(), opt.dcqcnMinRateBps);
}

TEST(RoceV2Dcqcn, NotificationPointPacesCnps)
{
    DcqcnNotificationPoint np(MicroSeconds(50));
    EXPECT_TRUE(np.OnCeMarked(MicroSeconds(10)));
    EXPECT_FALSE(np.OnCeMarked(MicroSeconds(20)));
    EXPECT_FALSE(np.OnCeMarked(MicroSeconds(60) - 1));
    EXPECT_TRUE(np.OnCeMarked(MicroSeconds(60)));
}

TEST_F(RoceV2Pair, DcqcnCutsTheRateOnCnpsAndRecoversToLineRate)
{
    ConnectionConfig cfg = RoceConfig();
    Build(cfg, 64 * 1024);
    RateLog log;
    A().SetObserver(&log);
    // Virtual regions: a long transfer without allocating it.
    const uint64_t total = 2048ull << 20;
    MemoryRegion src = A().RegisterMemory(nullptr, total, 0, 1ull << 40);
    MemoryRegion dst = B().RegisterMemory(nullptr, total, ACCESS_REMOTE_WRITE, 1ull << 40);
    // Every data packet is CE-marked for the first 300 us, then never again.
    m_net->Link(m_a, m_b).ceMark = 1.0;
    m_net->At(MicroSeconds(300), [&]() { m_net->Link(m_a, m_b).ceMark = 0; });
    const uint32_t chunk = 16 << 20;
    for (uint64_t off = 0; off < total; off += chunk)
    {
        SendWr wr;
        wr.wrId = off / chunk;
        wr.sge = {src.addr + off, chunk, src.lkey};
        wr.remoteAddr = dst.addr + off;
        wr.rkey = dst.rkey;
        ASSERT_EQ(A().PostSend(0, m_qa, wr), PostStatus::OK);
    }
    m_net->Kick(m_a);
    m_net->RunUntil(MicroSeconds(300));
    const RoceV2Connection& conn = ConnA();
    uint64_t cnps = CounterB(Counter::TX_CNP);
    // One CNP per 50 us while every packet is marked (CNPs are sent at 0, 50, ... 250 us).
    EXPECT_GE(cnps, 5u);
    EXPECT_LE(cnps, 7u);
    EXPECT_EQ(CounterA(Counter::RX_CNP), cnps);
    EXPECT_LT(log.minRate, 0.2 * 100e9) << "each CNP cuts the rate";
    EXPECT_LT(conn.PacingRate(), 0.2 * 100e9);
    // Marks stop: fast recovery, additive and hyper increase bring it back.
    Time recovered = -1;
    while (recovered < 0 && m_net->Now() < MilliSeconds(150) &&
           m_net->Completions(m_a).size() < total / chunk)
    {
        m_net->RunUntil(m_net->Now() + MicroSeconds(100));
        if (recovered < 0 && conn.Dcqcn().Rate() >= 100e9)
        {
            recovered = m_net->Now();
        }
    }
    ASSERT_GE(recovered, 0) << "rate " << conn.Dcqcn().Rate() / 1e9 << " Gb/s";
    EXPECT_EQ(CounterB(Counter::TX_CNP), cnps) << "no marks, no CNPs";
    EXPECT_GT(CounterA(Counter::WINDOW_DECREASE), 0u);
    std::cout << "[ figures  ] DCQCN (defaults): " << cnps << " CNPs in 300 us cut the rate to "
              << log.minRate / 1e9 << " Gb/s; back at 100 Gb/s "
              << double(recovered - MicroSeconds(300)) / 1e6 << " us after the marks stopped\n";
    A().SetObserver(nullptr);
}

TEST(RoceV2Dcqcn, IncastOnAMarkingDownlinkIsThrottled)
{
    // Two senders into one 100 Gb/s downlink that marks above 100 KB: with DCQCN the queue
    // stays far below the drop-tail queue of the same incast without it.
    auto run = [](bool dcqcn, uint64_t& peak, uint64_t& cnps, double& gbps) {
        NetworkConfig net;
        net.downlinkRateBps = 100e9;
        net.downlinkBufferBytes = 64 << 20;
        net.ecnThresholdBytes = 100 * 1024;
        EngineNetwork n(net);
        uint32_t r = n.AddEndpoint();
        uint32_t s1 = n.AddEndpoint();
        uint32_t s2 = n.AddEndpoint();
        ConnectionConfig cfg = RoceConfig();
        cfg.rocev2.dcqcn = dcqcn;
        const uint64_t bytes = 16 << 20;
        Time last = 0;
        n.onCompletion = [&](uint32_t, const Completion& c) {
            EXPECT_EQ(c.status, WcStatus::SUCCESS);
            last = n.Now();
        };
        MemoryRegion dst = n.At(r).RegisterMemory(nullptr, 2 * bytes, ACCESS_REMOTE_WRITE, 0);
        for (uint32_t s : {s1, s2})
        {
            auto [qs, qr] = n.Connect(s, r, cfg);
            (void)qr;
            MemoryRegion src = n.At(s).RegisterMemory(nullptr, bytes, 0, 0);
            SendWr wr;
            wr.sge = {src.addr, uint32_t(bytes), src.lkey};
            wr.remoteAddr = dst.addr + (s == s1 ? 0 : bytes);
            wr.rkey = dst.rkey;
            EXPECT_EQ(n.At(s).PostSend(0, qs, wr), PostStatus::OK);
            n.Kick(s);
        }
        n.RunUntilIdle(MilliSeconds(100));
        EXPECT_EQ(n.Completions(s1).size() + n.Completions(s2).size(), 2u);
        peak = n.PeakQueue(r);
        cnps = n.At(r).Counters().Get(Counter::TX_CNP);
        gbps = 2.0 * bytes * 8 / (double(last) / 1e12) / 1e9;
    };
    uint64_t peakOn = 0;
    uint64_t peakOff = 0;
    uint64_t cnpsOn = 0;
    uint64_t cnpsOff = 0;
    double gbpsOn = 0;
    double gbpsOff = 0;
    run(true, peakOn, cnpsOn, gbpsOn);
    run(false, peakOff, cnpsOff, gbpsOff);
    EXPECT_GT(cnpsOn, 0u);
    EXPECT_EQ(cnpsOff, 0u);
    EXPECT_LT(peakOn * 2, peakOff);
    EXPECT_GT(gbpsOn, 50.0);
    std::cout << "[ figures  ] 2:1 incast, 16 MiB each: peak queue " << peakOn / 1024
              << " KiB with DCQCN (" << cnpsOn << " CNPs, " << gbpsOn << " Gb/s aggregate) vs "
              << peakOff / 1024 << " KiB without (" << gbpsOff << " Gb/s)\n";
}

TEST(RoceV2Pair2, SameSeedSameRun)
{
    auto run = [](uint64_t seed) {
        return SeededWriteRun(
            seed,
            RoceConfig(),
            [](LinkConfig& l) {
                l.loss = 0.02;
                l.ceMark = 0.01;
            },
            MilliSeconds(100));
    };
    EXPECT_EQ(run(7), run(7));
    EXPECT_NE(run(7), run(8));
}

} // namespace
} // namespace test
} // namespace metaroce
