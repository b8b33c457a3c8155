/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

// Wire headers: round trips, byte layouts, the opcode table's consistency and checked
// parsing of short or inconsistent datagrams.

#include "metaroce-endpoint.h"
#include "metaroce-random.h"
#include "metaroce-wire.h"

#include <cstring>
#include <gtest/gtest.h>
#include <vector>

namespace metaroce
{
namespace
{

TEST(WireTest, BthLayoutMatchesTheInfiniBandDiagram)
{
    Bth h;
    h.opcode = 0x0A;
    h.solicited = true;
    h.padCount = 2;
    h.pkey = 0xFFFF;
    h.becn = true;
    h.destQp = 0x123456;
    h.ackReq = true;
    h.psn = 0xABCDEF;
    uint8_t b[Bth::SIZE];
    h.Write(b);
    const uint8_t expected[Bth::SIZE] =
        {0x0A, 0xA0, 0xFF, 0xFF, 0x40, 0x12, 0x34, 0x56, 0x80, 0xAB, 0xCD, 0xEF};
    EXPECT_EQ(0, std::memcmp(b, expected, sizeof(b)));
    Bth r = Bth::Read(b);
    EXPECT_EQ(r.opcode, h.opcode);
    EXPECT_TRUE(r.solicited);
    EXPECT_FALSE(r.migReq);
    EXPECT_EQ(r.padCount, 2);
    EXPECT_EQ(r.tver, 0);
    EXPECT_TRUE(r.becn);
    EXPECT_FALSE(r.fecn);
    EXPECT_EQ(r.destQp, 0x123456u);
    EXPECT_TRUE(r.ackReq);
    EXPECT_EQ(r.psn, 0xABCDEFu);
}

TEST(WireTest, MetaRoceHeadersRoundTripWithRandomValues)
{
    Rng rng(5);
    for (int i = 0; i < 1000; ++i)
    {
        Mdh mdh;
        mdh.pathId = uint8_t(rng.Next());
        mdh.pathEpoch = uint8_t(rng.Next());
        mdh.streamId = uint16_t(rng.Next());
        mdh.messageSeq = uint32_t(rng.Next());
        mdh.offset = uint32_t(rng.Next());
        uint8_t b[64];
        mdh.Write(b);
        Mdh m = Mdh::Read(b);
        EXPECT_EQ(m.pathId, mdh.pathId);
        EXPECT_EQ(m.pathEpoch, mdh.pathEpoch);
        EXPECT_EQ(m.streamId, mdh.streamId);
        EXPECT_EQ(m.messageSeq, mdh.messageSeq);
        EXPECT_EQ(m.offset, mdh.offset);

        Mah mah;
        mah.pathId = uint8_t(rng.Next());
        mah.pathEpoch = uint8_t(rng.Next());
        mah.flags = uint8_t(rng.Next());
        mah.ceCount = uint8_t(rng.Next());
        mah.cumulativePsn = uint32_t(rng.Next()) & PSN_MASK;
        mah.triggerPsn = uint32_t(rng.Next()) & PSN_MASK;
        mah.rateHint = uint32_t(rng.Next());
        for (auto& w : mah.sack)
        {
            w = rng.Next();
        }
        mah.Write(b);
        Mah a = Mah::Read(b);
        EXPECT_EQ(a.pathId, mah.pathId);
        EXPECT_EQ(a.pathEpoch, mah.pathEpoch);
        EXPECT_EQ(a.flags, mah.flags);
        EXPECT_EQ(a.ceCount, mah.ceCount);
        EXPECT_EQ(a.cumulativePsn, mah.cumulativePsn);
        EXPECT_EQ(a.triggerPsn, mah.triggerPsn);
        EXPECT_EQ(a.rateHint, mah.rateHint);
        EXPECT_EQ(a.sack, mah.sack);

        Mnh mnh;
        mnh.streamId = uint16_t(rng.Next());
        mnh.syndrome = uint8_t(rng.Next());
        mnh.pathId = uint8_t(rng.Next());
        mnh.messageSeq = uint32_t(rng.Next());
        mnh.offset = uint32_t(rng.Next());
        mnh.pathEpoch = uint8_t(rng.Next());
        mnh.psn = uint32_t(rng.Next()) & PSN_MASK;
        mnh.Write(b);
        Mnh n = Mnh::Read(b);
        EXPECT_EQ(n.streamId, mnh.streamId);
        EXPECT_EQ(n.syndrome, mnh.syndrome);
        EXPECT_EQ(n.pathId, mnh.pathId);
        EXPECT_EQ(n.messageSeq, mnh.messageSeq);
        EXPECT_EQ(n.offset, mnh.offset);
        EXPECT_EQ(n.pathEpoch, mnh.pathEpoch);
        EXPECT_EQ(n.psn, mnh.psn);

        Reth reth{rng.Next(), uint32_t(rng.Next()), uint32_t(rng.Next())};
        reth.Write(b);
        Reth t = Reth::Read(b);
        EXPECT_EQ(t.va, reth.va);
        EXPECT_EQ(t.rkey, reth.rkey);
        EXPECT_EQ(t.dmaLength, reth.dmaLength);

        Rsh rsh{uint32_t(rng.Next()), uint32_t(rng.Next())};
        rsh.Write(b);
        Rsh q = Rsh::Read(b);
        EXPECT_EQ(q.recvSlot, rsh.recvSlot);
        EXPECT_EQ(q.messageLength, rsh.messageLength);
    }
}

TEST(WireTest, AckLayoutAndSackBitOrderOnTheWire)
{
    Mah mah;
    mah.pathId = 3;
    mah.pathEpoch = 9;
    mah.flags = Mah::FLAG_ECE;
    mah.ceCount = 2;
    mah.cumulativePsn = 0x000102;
    mah.triggerPsn = 0x000105;
    mah.rateHint = 25000; // 25 Gb/s
    mah.SetSackBit(0);    // PSN cum+1
    mah.SetSackBit(9);    // PSN cum+10
    mah.SetSackBit(255);  // PSN cum+256
    uint8_t b[Mah::SIZE];
    mah.Write(b);
    const uint8_t head[16] =
        {3, 9, 0x01, 2, 0, 0x00, 0x01, 0x02, 0, 0x00, 0x01, 0x05, 0x00, 0x00, 0x61, 0xA8};
    EXPECT_EQ(0, std::memcmp(b, head, sizeof(head)));
    EXPECT_EQ(b[Mah::SACK + 0], 0x80) << "bit 0 is the most significant bit of byte 0";
    EXPECT_EQ(b[Mah::SACK + 1], 0x40) << "bit 9 is bit 6 of byte 1";
    EXPECT_EQ(b[Mah::SACK + 31], 0x01) << "bit 255 is the least significant bit of byte 31";
    for (int i = 2; i < 31; ++i)
    {
        EXPECT_EQ(b[Mah::SACK + i], 0);
    }
}

TEST(WireTest, OpcodeTableIsConsistent)
{
    int known = 0;
    for (int op = 0; op < 256; ++op)
    {
        const OpcodeInfo& info = LookupOpcode(uint8_t(op));
        if (info.name == nullptr)
        {
            continue;
        }
        ++known;
        SCOPED_TRACE(info.name);
        if (info.transport == Transport::METAROCE)
        {
            EXPECT_EQ(op & 0xC0, 0xC0) << "MetaRoCE opcodes live in the manufacturer range";
            if (info.kind == PacketKind::DATA || info.kind == PacketKind::PROBE)
            {
                EXPECT_TRUE(info.headers & HDR_MDH) << "self-describing: every one has MDH";
            }
        }
        bool irn = (info.headers & (HDR_IRH | HDR_ISH)) != 0;
        if (info.transport == Transport::ROCEV2 && !irn)
        {
            EXPECT_LT(op, 0x20) << "RC opcodes are 000xxxxx";
        }
        if (irn)
        {
            // IRN_x = 0xE0 | RC_x: the RC row's semantics plus the headers for placement.
            EXPECT_EQ(info.transport, Transport::ROCEV2);
            EXPECT_EQ(op & 0xE0, int(IRN_OPCODE_BASE)) << "IRN opcodes: manufacturer range";
            const OpcodeInfo& rc = LookupOpcode(uint8_t(op & 0x1F));
            ASSERT_NE(rc.name, nullptr);
            EXPECT_EQ(info.kind, rc.kind);
            EXPECT_EQ(info.position, rc.position);
            EXPECT_EQ(info.write, rc.write);
            EXPECT_EQ(info.consumesRecv, rc.consumesRecv);
            EXPECT_EQ(bool(info.headers & HDR_IRH), info.kind == PacketKind::DATA);
            EXPECT_EQ(bool(info.headers & HDR_ISH), info.kind == PacketKind::ACK);
            EXPECT_EQ(bool(info.headers & HDR_RETH), info.write) << "IRN: RETH on every WRITE";
            EXPECT_EQ(info.headers & ~uint32_t(HDR_IRH | HDR_ISH | HDR_RETH),
                      rc.headers & ~uint32_t(HDR_RETH));
        }
        EXPECT_EQ(bool(info.headers & HDR_IMMDT), info.immediate);
        if (info.write && info.transport == Transport::METAROCE)
        {
            EXPECT_TRUE(info.headers & HDR_RETH) << "a MetaRoCE WRITE carries its destination";
        }
        if (info.consumesRecv && info.transport == Transport::METAROCE)
        {
            EXPECT_TRUE(info.headers & HDR_RSH) << "a receive-consuming packet names its slot";
        }
        if (info.kind == PacketKind::ACK)
        {
            // Only the coalesced ACK has a payload: its path records.
            EXPECT_EQ(info.payload, bool(info.headers & HDR_MCH));
        }
        if (info.position == MessagePosition::FIRST || info.position == MessagePosition::ONLY)
        {
            bool readRequest = info.read && info.kind == PacketKind::DATA;
            EXPECT_EQ(bool(info.headers & HDR_RETH), info.write || readRequest)
                << "RoCEv2 RETH on first/only of a WRITE, and on a READ request";
        }
        if (info.position == MessagePosition::MIDDLE && !irn)
        {
            EXPECT_EQ(info.headers & (HDR_RETH | HDR_IMMDT), 0u);
        }
        EXPECT_EQ(DatagramLength(info, 0),
                  Bth::SIZE + ExtensionHeadersLength(info.headers) + ICRC_SIZE);
    }
    EXPECT_GE(known, 20);
    EXPECT_EQ(LookupOpcode(0xFF).name, nullptr);
}

TEST(WireTest, DatagramsRoundTripForEveryOpcodeAndPayloadLength)
{
    std::vector<uint8_t> payload(300);
    for (size_t i = 0; i < payload.size(); ++i)
    {
        payload[i] = uint8_t(i * 7 + 1);
    }
    std::vector<uint8_t> buf(1024);
    for (int op = 0; op < 256; ++op)
    {
        const OpcodeInfo& info = LookupOpcode(uint8_t(op));
        if (info.name == nullptr)
        {
            continue;
        }
        for (uint32_t len : {0u, 1u, 2u, 3u, 4u, 5u, 299u, 300u})
        {
            if (!info.payload && len > 0)
            {
                continue;
            }
            ParsedPacket pkt;
            pkt.info = &info;
            pkt.bth.opcode = uint8_t(op);
            pkt.bth.psn = 77;
            pkt.mdh.offset = 4096;
            pkt.immDt = 0xDEADBEEF;
            size_t n = WriteDatagram(buf.data(), buf.size(), pkt, payload.data(), len);
            ASSERT_EQ(n, DatagramLength(info, len));
            EXPECT_EQ(n % 4, 0u) << "padded to 4 bytes";
            ParsedPacket back;
            ASSERT_EQ(ParseDatagram(buf.data(), n, back), ParseStatus::OK) << info.name;
            EXPECT_EQ(back.info, &info);
            EXPECT_EQ(back.payloadLength, len);
            EXPECT_EQ(0, std::memcmp(back.payload, payload.data(), len));
            EXPECT_EQ(back.bth.psn, 77u);
            if (info.headers & HDR_IMMDT)
            {
                EXPECT_EQ(back.immDt, 0xDEADBEEFu);
            }
            if (info.headers & HDR_MDH)
            {
                EXPECT_EQ(back.mdh.offset, 4096u);
            }
            // A shorter prefix is rejected or, having no length field of its own (UDP
            // delimits it, the ICRC protects it), parses as a shorter payload that stays
            // inside the prefix: never an over-read.
            for (size_t cut = 0; cut < n; ++cut)
            {
                ParsedPacket junk;
                if (ParseDatagram(buf.data(), cut, junk) == ParseStatus::OK)
                {
                    EXPECT_LT(junk.payloadLength, len) << info.name << " cut at " << cut;
                    EXPECT_LE(junk.payload + junk.payloadLength + ICRC_SIZE, buf.data() + cut);
                }
            }
        }
    }
}

TEST(WireTest, InconsistentDatagramsAreRejectedWithTheirReason)
{
    std::vector<uint8_t> buf(256);
    ParsedPacket pkt;
    pkt.info = &LookupOpcode(MR_ACK);
    pkt.bth.opcode = MR_ACK;
    size_t n = WriteDatagram(buf.data(), buf.size(), pkt, nullptr, 0);
    ParsedPacket out;
    buf[0] = 0xFE;
    EXPECT_EQ(ParseDatagram(buf.data(), n, out), ParseStatus::UNKNOWN_OPCODE);
    buf[0] = MR_ACK;
    buf[1] |= 0x01; // TVer 1
    EXPECT_EQ(ParseDatagram(buf.data(), n, out), ParseStatus::BAD_VERSION);
    buf[1] &= 0xF0;
    EXPECT_EQ(ParseDatagram(buf.data(), n + 4, out), ParseStatus::UNEXPECTED_PAYLOAD);
    pkt.info = &LookupOpcode(MR_SEND);
    pkt.bth.opcode = MR_SEND;
    n = WriteDatagram(buf.data(), buf.size(), pkt, nullptr, 8);
    buf[1] |= 0x30; // PadCnt 3 on an aligned payload is fine ...
    EXPECT_EQ(ParseDatagram(buf.data(), n, out), ParseStatus::OK);
    EXPECT_EQ(out.payloadLength, 5u);
    EXPECT_EQ(ParseDatagram(buf.data(), n - 2, out), ParseStatus::BAD_PAD)
        << "... unaligned is not";
    n = WriteDatagram(buf.data(), buf.size(), pkt, nullptr, 0);
    buf[1] |= 0x10;
    EXPECT_EQ(ParseDatagram(buf.data(), n, out), ParseStatus::BAD_PAD) << "pad without payload";
    EXPECT_EQ(WriteDatagram(buf.data(), 10, pkt, nullptr, 0), 0u) << "buffer too small";
}

TEST(WireTest, PsnArithmeticWraps)
{
    EXPECT_EQ(PsnAdd(PSN_MASK, 1), 0u);
    EXPECT_EQ(PsnDiff(0, PSN_MASK), 1);
    EXPECT_EQ(PsnDiff(PSN_MASK, 0), -1);
    EXPECT_EQ(PsnDiff(5, 5), 0);
    EXPECT_EQ(PsnDiff(0x800000, 0), -0x800000);
}

// Issue 20: a datagram says where its payload is; a virtual region's zeros are written only
// for a caller that reads them, or when the ICRC covers them.
TEST(TxDatagramTest, ReportsThePayloadAndSkipsUnreadZeros)
{
    for (bool icrc : {false, true})
    {
        for (bool unread : {false, true})
        {
            EndpointConfig ecfg;
            ecfg.localIp = 0x0a000001;
            ecfg.icrc = icrc;
            Endpoint ep(ecfg);
            uint32_t qpn = 0;
            ASSERT_EQ(ep.CreateConnection(ConnectionConfig(), qpn), PostStatus::OK);
            ASSERT_EQ(ep.Connect(qpn, 0x0a000002, FIRST_QPN), PostStatus::OK);
            MemoryRegion src = ep.RegisterMemory(nullptr, 64 * 1024, 0);
            SendWr wr;
            wr.sge = {src.addr, 64 * 1024, src.lkey};
            wr.remoteAddr = 0x1000;
            wr.rkey = 1;
            ASSERT_EQ(ep.PostSend(0, qpn, wr), PostStatus::OK);
            std::vector<uint8_t> buffer(8192, 0xab);
            TxDatagram tx;
            tx.buffer = buffer.data();
            tx.capacity = buffer.size();
            tx.zeroPayloadUnread = unread;
            ASSERT_TRUE(ep.PollTransmit(0, tx));
            ParsedPacket pkt;
            ASSERT_EQ(ParseDatagram(buffer.data(), tx.length, pkt), ParseStatus::OK);
            ASSERT_GT(pkt.payloadLength, 0u);
            EXPECT_TRUE(tx.payloadZero);
            EXPECT_EQ(tx.payloadOffset, uint32_t(pkt.payload - buffer.data()));
            EXPECT_EQ(tx.payloadLength, pkt.payloadLength);
            const bool written = !unread || icrc;
            EXPECT_EQ(pkt.payload[0], written ? 0 : 0xab) << icrc << unread;
            EXPECT_EQ(pkt.payload[pkt.payloadLength - 1], written ? 0 : 0xab) << icrc << unread;
        }
    }
}

} // namespace
} // namespace metaroce
