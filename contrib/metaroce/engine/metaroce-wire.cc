/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#include "metaroce-wire.h"

#include "metaroce-byte-order.h"

#include <cstring>

namespace metaroce
{

namespace
{

/// \return \p w with the bit order of each of its bytes reversed (the bytes stay in place).
inline uint64_t
ReverseBitsInBytes(uint64_t w)
{
    w = (w & 0xF0F0F0F0F0F0F0F0ULL) >> 4 | (w & 0x0F0F0F0F0F0F0F0FULL) << 4;
    w = (w & 0xCCCCCCCCCCCCCCCCULL) >> 2 | (w & 0x3333333333333333ULL) << 2;
    w = (w & 0xAAAAAAAAAAAAAAAAULL) >> 1 | (w & 0x5555555555555555ULL) << 1;
    return w;
}

/// \return the SACK bitmap word of the 8 wire bytes at \p p: byte i holds bits 8i..8i+7 of
/// the word, most significant first (a little-endian word with each byte's bits reversed)
inline uint64_t
ReadSackWord(const uint8_t* p)
{
    return ReverseBitsInBytes(__builtin_bswap64(ReadU64(p)));
}

/// Write the SACK bitmap word \p w as its 8 wire bytes at \p p (ReadSackWord's inverse).
inline void
WriteSackWord(uint8_t* p, uint64_t w)
{
    WriteU64(p, __builtin_bswap64(ReverseBitsInBytes(w)));
}

} // namespace

Bth
Bth::Read(const uint8_t* p)
{
    Bth h;
    h.opcode = p[OPCODE];
    h.solicited = (p[FLAGS] & 0x80) != 0;
    h.migReq = (p[FLAGS] & 0x40) != 0;
    h.padCount = (p[FLAGS] >> 4) & 0x3;
    h.tver = p[FLAGS] & 0xF;
    h.pkey = ReadU16(p + PKEY);
    h.fecn = (p[ECN_FLAGS] & 0x80) != 0;
    h.becn = (p[ECN_FLAGS] & 0x40) != 0;
    h.destQp = ReadU24(p + DEST_QP);
    h.ackReq = (p[ACK_REQ] & 0x80) != 0;
    h.psn = ReadU24(p + PSN);
    return h;
}

void
Bth::Write(uint8_t* p) const
{
    p[OPCODE] = opcode;
    p[FLAGS] = uint8_t((solicited ? 0x80 : 0) | (migReq ? 0x40 : 0) | ((padCount & 0x3) << 4) |
                       (tver & 0xF));
    WriteU16(p + PKEY, pkey);
    p[ECN_FLAGS] = uint8_t((fecn ? 0x80 : 0) | (becn ? 0x40 : 0));
    WriteU24(p + DEST_QP, destQp);
    p[ACK_REQ] = ackReq ? 0x80 : 0;
    WriteU24(p + PSN, psn);
}

Reth
Reth::Read(const uint8_t* p)
{
    Reth h;
    h.va = ReadU64(p + VA);
    h.rkey = ReadU32(p + RKEY);
    h.dmaLength = ReadU32(p + DMA_LENGTH);
    return h;
}

void
Reth::Write(uint8_t* p) const
{
    WriteU64(p + VA, va);
    WriteU32(p + RKEY, rkey);
    WriteU32(p + DMA_LENGTH, dmaLength);
}

Aeth
Aeth::Read(const uint8_t* p)
{
    Aeth h;
    h.syndrome = p[SYNDROME];
    h.msn = ReadU24(p + MSN);
    return h;
}

void
Aeth::Write(uint8_t* p) const
{
    p[SYNDROME] = syndrome;
    WriteU24(p + MSN, msn);
}

AtomicEth
AtomicEth::Read(const uint8_t* p)
{
    AtomicEth h;
    h.va = ReadU64(p + VA);
    h.rkey = ReadU32(p + RKEY);
    h.swapAdd = ReadU64(p + SWAP_ADD);
    h.compare = ReadU64(p + COMPARE);
    return h;
}

void
AtomicEth::Write(uint8_t* p) const
{
    WriteU64(p + VA, va);
    WriteU32(p + RKEY, rkey);
    WriteU64(p + SWAP_ADD, swapAdd);
    WriteU64(p + COMPARE, compare);
}

AtomicAckEth
AtomicAckEth::Read(const uint8_t* p)
{
    AtomicAckEth h;
    h.original = ReadU64(p + ORIGINAL);
    return h;
}

void
AtomicAckEth::Write(uint8_t* p) const
{
    WriteU64(p + ORIGINAL, original);
}

Mdh
Mdh::Read(const uint8_t* p)
{
    Mdh h;
    h.pathId = p[PATH_ID];
    h.pathEpoch = p[PATH_EPOCH];
    h.streamId = ReadU16(p + STREAM_ID);
    h.messageSeq = ReadU32(p + MESSAGE_SEQ);
    h.offset = ReadU32(p + OFFSET);
    return h;
}

void
Mdh::Write(uint8_t* p) const
{
    p[PATH_ID] = pathId;
    p[PATH_EPOCH] = pathEpoch;
    WriteU16(p + STREAM_ID, streamId);
    WriteU32(p + MESSAGE_SEQ, messageSeq);
    WriteU32(p + OFFSET, offset);
}

Rsh
Rsh::Read(const uint8_t* p)
{
    Rsh h;
    h.recvSlot = ReadU32(p + RECV_SLOT);
    h.messageLength = ReadU32(p + MESSAGE_LENGTH);
    return h;
}

void
Rsh::Write(uint8_t* p) const
{
    WriteU32(p + RECV_SLOT, recvSlot);
    WriteU32(p + MESSAGE_LENGTH, messageLength);
}

Mah
Mah::Read(const uint8_t* p)
{
    Mah h;
    h.pathId = p[PATH_ID];
    h.pathEpoch = p[PATH_EPOCH];
    h.flags = p[FLAGS];
    h.ceCount = p[CE_COUNT];
    h.cumulativePsn = ReadU24(p + CUMULATIVE_PSN);
    h.triggerPsn = ReadU24(p + TRIGGER_PSN);
    h.rateHint = ReadU32(p + RATE_HINT);
    for (uint32_t word = 0; word < SACK_BYTES / 8; ++word)
    {
        h.sack[word] = ReadSackWord(p + SACK + 8 * word);
    }
    return h;
}

void
Mah::Write(uint8_t* p) const
{
    p[PATH_ID] = pathId;
    p[PATH_EPOCH] = pathEpoch;
    p[FLAGS] = flags;
    p[CE_COUNT] = ceCount;
    p[CUMULATIVE_PSN - 1] = 0;
    WriteU24(p + CUMULATIVE_PSN, cumulativePsn);
    p[TRIGGER_PSN - 1] = 0;
    WriteU24(p + TRIGGER_PSN, triggerPsn);
    WriteU32(p + RATE_HINT, rateHint);
    for (uint32_t word = 0; word < SACK_BYTES / 8; ++word)
    {
        WriteSackWord(p + SACK + 8 * word, sack[word]);
    }
}

Mch
Mch::Read(const uint8_t* p)
{
    Mch h;
    h.rateHint = ReadU32(p + RATE_HINT);
    h.recordCount = p[RECORD_COUNT];
    return h;
}

void
Mch::Write(uint8_t* p) const
{
    WriteU32(p + RATE_HINT, rateHint);
    p[RECORD_COUNT] = recordCount;
    std::memset(p + RECORD_COUNT + 1, 0, SIZE - RECORD_COUNT - 1);
}

size_t
AckRecord::Length(const Mah& mah)
{
    bool sack = (mah.sack[0] | mah.sack[1] | mah.sack[2] | mah.sack[3]) != 0;
    return SIZE + (sack ? Mah::SACK_BYTES : 0);
}

size_t
AckRecord::Write(uint8_t* p, const Mah& mah, uint16_t delay)
{
    // The record is the MAH's first 12 bytes (same layout), then AckDelay, then the bitmap.
    uint8_t head[Mah::SIZE];
    Mah m = mah;
    bool sack = Length(mah) > SIZE;
    m.flags = uint8_t((m.flags & ~FLAG_SACK) | (sack ? FLAG_SACK : 0));
    m.Write(head);
    std::memcpy(p, head, Mah::RATE_HINT);
    WriteU16(p + ACK_DELAY, delay);
    WriteU16(p + ACK_DELAY + 2, 0);
    if (sack)
    {
        std::memcpy(p + SIZE, head + Mah::SACK, Mah::SACK_BYTES);
    }
    return SIZE + (sack ? Mah::SACK_BYTES : 0);
}

size_t
AckRecord::Read(const uint8_t* p, size_t len, AckRecord& out)
{
    if (len < SIZE)
    {
        return 0;
    }
    bool sack = (p[Mah::FLAGS] & FLAG_SACK) != 0;
    size_t total = SIZE + (sack ? Mah::SACK_BYTES : 0);
    if (len < total)
    {
        return 0;
    }
    uint8_t head[Mah::SIZE] = {};
    std::memcpy(head, p, Mah::RATE_HINT);
    if (sack)
    {
        std::memcpy(head + Mah::SACK, p + SIZE, Mah::SACK_BYTES);
    }
    out.mah = Mah::Read(head);
    out.mah.flags &= uint8_t(~FLAG_SACK);
    out.delay = ReadU16(p + ACK_DELAY);
    return total;
}

Mnh
Mnh::Read(const uint8_t* p)
{
    Mnh h;
    h.streamId = ReadU16(p + STREAM_ID);
    h.syndrome = p[SYNDROME];
    h.pathId = p[PATH_ID];
    h.messageSeq = ReadU32(p + MESSAGE_SEQ);
    h.offset = ReadU32(p + OFFSET);
    h.pathEpoch = p[PATH_EPOCH];
    h.psn = ReadU24(p + PSN);
    return h;
}

void
Mnh::Write(uint8_t* p) const
{
    WriteU16(p + STREAM_ID, streamId);
    p[SYNDROME] = syndrome;
    p[PATH_ID] = pathId;
    WriteU32(p + MESSAGE_SEQ, messageSeq);
    WriteU32(p + OFFSET, offset);
    p[PATH_EPOCH] = pathEpoch;
    WriteU24(p + PSN, psn);
}

Irh
Irh::Read(const uint8_t* p)
{
    Irh h;
    h.offset = ReadU32(p + OFFSET);
    h.recvWqeSn = ReadU32(p + RECV_WQE_SN);
    return h;
}

void
Irh::Write(uint8_t* p) const
{
    WriteU32(p + OFFSET, offset);
    WriteU32(p + RECV_WQE_SN, recvWqeSn);
}

Ish
Ish::Read(const uint8_t* p)
{
    Ish h;
    h.sackPsn = ReadU24(p + SACK_PSN);
    return h;
}

void
Ish::Write(uint8_t* p) const
{
    p[0] = 0; // reserved
    WriteU24(p + SACK_PSN, sackPsn);
}

namespace
{

/// Builds the 256-row opcode table once; unknown rows keep name == nullptr.
struct OpcodeTable
{
    OpcodeInfo rows[256];

    void Row(uint8_t op,
             const char* name,
             Transport t,
             PacketKind k,
             MessagePosition pos,
             uint32_t headers,
             bool payload,
             bool write,
             bool consumesRecv,
             bool immediate)
    {
        rows[op] = OpcodeInfo{name,
                              t,
                              k,
                              pos,
                              headers,
                              payload,
                              write,
                              consumesRecv,
                              immediate,
                              false,
                              false};
    }

    /// Add the READ response row \p op at \p pos with \p headers.
    void Response(uint8_t op, const char* name, MessagePosition pos, uint32_t headers)
    {
        Row(op,
            name,
            Transport::ROCEV2,
            PacketKind::RESPONSE,
            pos,
            headers,
            true,
            false,
            false,
            false);
        rows[op].read = true;
    }

    /// Add the IRN row of RC data opcode \p rc (defined earlier): same semantics, plus IRH,
    /// and RETH on every WRITE packet.
    void Irn(uint8_t rc, const char* name)
    {
        OpcodeInfo info = rows[rc];
        info.name = name;
        info.headers |= HDR_IRH | (info.write ? uint32_t(HDR_RETH) : 0u);
        rows[IRN_OPCODE_BASE | rc] = info;
    }

    OpcodeTable()
    {
        using T = Transport;
        using K = PacketKind;
        using P = MessagePosition;
        // MetaRoCE: every data packet is self-describing (MDH), so one opcode per operation.
        Row(MR_WRITE,
            "MR_WRITE",
            T::METAROCE,
            K::DATA,
            P::NONE,
            HDR_MDH | HDR_RETH,
            true,
            true,
            false,
            false);
        Row(MR_WRITE_IMM,
            "MR_WRITE_IMM",
            T::METAROCE,
            K::DATA,
            P::NONE,
            HDR_MDH | HDR_RETH | HDR_RSH | HDR_IMMDT,
            true,
            true,
            true,
            true);
        Row(MR_SEND,
            "MR_SEND",
            T::METAROCE,
            K::DATA,
            P::NONE,
            HDR_MDH | HDR_RSH,
            true,
            false,
            true,
            false);
        Row(MR_SEND_IMM,
            "MR_SEND_IMM",
            T::METAROCE,
            K::DATA,
            P::NONE,
            HDR_MDH | HDR_RSH | HDR_IMMDT,
            true,
            false,
            true,
            true);
        Row(MR_ACK, "MR_ACK", T::METAROCE, K::ACK, P::NONE, HDR_MAH, false, false, false, false);
        Row(MR_ACK_COALESCED,
            "MR_ACK_COALESCED",
            T::METAROCE,
            K::ACK,
            P::NONE,
            HDR_MCH,
            true,
            false,
            false,
            false);
        Row(MR_NAK, "MR_NAK", T::METAROCE, K::ACK, P::NONE, HDR_MNH, false, false, false, false);
        Row(MR_PROBE,
            "MR_PROBE",
            T::METAROCE,
            K::PROBE,
            P::NONE,
            HDR_MDH,
            false,
            false,
            false,
            false);
        Row(MR_NOP, "MR_NOP", T::METAROCE, K::DATA, P::NONE, HDR_MDH, false, false, false, false);
        // READ and atomics: the request is a one-packet message to the responder (DATA); the
        // answer travels back on the responder's own paths, each packet naming the request's
        // stream, message and offset in its MDH (RESPONSE).
        Row(MR_READ_REQUEST,
            "MR_READ_REQUEST",
            T::METAROCE,
            K::DATA,
            P::NONE,
            HDR_MDH | HDR_RETH,
            false,
            false,
            false,
            false);
        rows[MR_READ_REQUEST].read = true;
        Row(MR_READ_RESPONSE,
            "MR_READ_RESPONSE",
            T::METAROCE,
            K::RESPONSE,
            P::NONE,
            HDR_MDH,
            true,
            false,
            false,
            false);
        rows[MR_READ_RESPONSE].read = true;
        for (uint8_t op : {uint8_t(MR_CMP_SWAP), uint8_t(MR_FETCH_ADD)})
        {
            Row(op,
                op == MR_CMP_SWAP ? "MR_CMP_SWAP" : "MR_FETCH_ADD",
                T::METAROCE,
                K::DATA,
                P::NONE,
                HDR_MDH | HDR_ATOMIC_ETH,
                false,
                false,
                false,
                false);
            rows[op].atomic = true;
        }
        Row(MR_ATOMIC_RESPONSE,
            "MR_ATOMIC_RESPONSE",
            T::METAROCE,
            K::RESPONSE,
            P::NONE,
            HDR_MDH | HDR_ATOMIC_ACK_ETH,
            false,
            false,
            false,
            false);
        rows[MR_ATOMIC_RESPONSE].atomic = true;
        // InfiniBand RC, as carried by RoCEv2.
        Row(RC_SEND_FIRST,
            "RC_SEND_FIRST",
            T::ROCEV2,
            K::DATA,
            P::FIRST,
            0,
            true,
            false,
            true,
            false);
        Row(RC_SEND_MIDDLE,
            "RC_SEND_MIDDLE",
            T::ROCEV2,
            K::DATA,
            P::MIDDLE,
            0,
            true,
            false,
            true,
            false);
        Row(RC_SEND_LAST, "RC_SEND_LAST", T::ROCEV2, K::DATA, P::LAST, 0, true, false, true, false);
        Row(RC_SEND_LAST_IMM,
            "RC_SEND_LAST_IMM",
            T::ROCEV2,
            K::DATA,
            P::LAST,
            HDR_IMMDT,
            true,
            false,
            true,
            true);
        Row(RC_SEND_ONLY, "RC_SEND_ONLY", T::ROCEV2, K::DATA, P::ONLY, 0, true, false, true, false);
        Row(RC_SEND_ONLY_IMM,
            "RC_SEND_ONLY_IMM",
            T::ROCEV2,
            K::DATA,
            P::ONLY,
            HDR_IMMDT,
            true,
            false,
            true,
            true);
        Row(RC_WRITE_FIRST,
            "RC_WRITE_FIRST",
            T::ROCEV2,
            K::DATA,
            P::FIRST,
            HDR_RETH,
            true,
            true,
            false,
            false);
        Row(RC_WRITE_MIDDLE,
            "RC_WRITE_MIDDLE",
            T::ROCEV2,
            K::DATA,
            P::MIDDLE,
            0,
            true,
            true,
            false,
            false);
        Row(RC_WRITE_LAST,
            "RC_WRITE_LAST",
            T::ROCEV2,
            K::DATA,
            P::LAST,
            0,
            true,
            true,
            false,
            false);
        Row(RC_WRITE_LAST_IMM,
            "RC_WRITE_LAST_IMM",
            T::ROCEV2,
            K::DATA,
            P::LAST,
            HDR_IMMDT,
            true,
            true,
            true,
            true);
        Row(RC_WRITE_ONLY,
            "RC_WRITE_ONLY",
            T::ROCEV2,
            K::DATA,
            P::ONLY,
            HDR_RETH,
            true,
            true,
            false,
            false);
        Row(RC_WRITE_ONLY_IMM,
            "RC_WRITE_ONLY_IMM",
            T::ROCEV2,
            K::DATA,
            P::ONLY,
            HDR_RETH | HDR_IMMDT,
            true,
            true,
            true,
            true);
        Row(RC_ACKNOWLEDGE,
            "RC_ACKNOWLEDGE",
            T::ROCEV2,
            K::ACK,
            P::NONE,
            HDR_AETH,
            false,
            false,
            false,
            false);
        // RDMA READ and atomics (the IB RC opcode table): requests go to the responder (DATA),
        // their answers back to the requester (RESPONSE). AETH on READ Response First, Last and
        // Only, not Middle.
        Row(RC_READ_REQUEST,
            "RC_READ_REQUEST",
            T::ROCEV2,
            K::DATA,
            P::ONLY,
            HDR_RETH,
            false,
            false,
            false,
            false);
        Response(RC_READ_RESPONSE_FIRST, "RC_READ_RESPONSE_FIRST", P::FIRST, HDR_AETH);
        Response(RC_READ_RESPONSE_MIDDLE, "RC_READ_RESPONSE_MIDDLE", P::MIDDLE, 0);
        Response(RC_READ_RESPONSE_LAST, "RC_READ_RESPONSE_LAST", P::LAST, HDR_AETH);
        Response(RC_READ_RESPONSE_ONLY, "RC_READ_RESPONSE_ONLY", P::ONLY, HDR_AETH);
        rows[RC_READ_REQUEST].read = true;
        Row(RC_CMP_SWAP,
            "RC_CMP_SWAP",
            T::ROCEV2,
            K::DATA,
            P::ONLY,
            HDR_ATOMIC_ETH,
            false,
            false,
            false,
            false);
        rows[RC_CMP_SWAP].atomic = true;
        Row(RC_FETCH_ADD,
            "RC_FETCH_ADD",
            T::ROCEV2,
            K::DATA,
            P::ONLY,
            HDR_ATOMIC_ETH,
            false,
            false,
            false,
            false);
        rows[RC_FETCH_ADD].atomic = true;
        Row(RC_ATOMIC_ACKNOWLEDGE,
            "RC_ATOMIC_ACKNOWLEDGE",
            T::ROCEV2,
            K::RESPONSE,
            P::ONLY,
            HDR_AETH | HDR_ATOMIC_ACK_ETH,
            false,
            false,
            false,
            false);
        rows[RC_ATOMIC_ACKNOWLEDGE].atomic = true;
        // IRN mode of the RoCEv2 baseline: each RC data opcode again in the manufacturer range,
        // self-describing (IRH; WRITE: RETH on every packet), and the SACK-carrying NACK.
        Irn(RC_SEND_FIRST, "IRN_SEND_FIRST");
        Irn(RC_SEND_MIDDLE, "IRN_SEND_MIDDLE");
        Irn(RC_SEND_LAST, "IRN_SEND_LAST");
        Irn(RC_SEND_LAST_IMM, "IRN_SEND_LAST_IMM");
        Irn(RC_SEND_ONLY, "IRN_SEND_ONLY");
        Irn(RC_SEND_ONLY_IMM, "IRN_SEND_ONLY_IMM");
        Irn(RC_WRITE_FIRST, "IRN_WRITE_FIRST");
        Irn(RC_WRITE_MIDDLE, "IRN_WRITE_MIDDLE");
        Irn(RC_WRITE_LAST, "IRN_WRITE_LAST");
        Irn(RC_WRITE_LAST_IMM, "IRN_WRITE_LAST_IMM");
        Irn(RC_WRITE_ONLY, "IRN_WRITE_ONLY");
        Irn(RC_WRITE_ONLY_IMM, "IRN_WRITE_ONLY_IMM");
        Row(IRN_NACK,
            "IRN_NACK",
            T::ROCEV2,
            K::ACK,
            P::NONE,
            HDR_AETH | HDR_ISH,
            false,
            false,
            false,
            false);
        // Annex A17: BTH (BECN set by convention), 16 reserved bytes, ICRC; no payload.
        Row(ROCE_CNP, "ROCE_CNP", T::CNP, K::CNP, P::NONE, HDR_CNP_PAD, false, false, false, false);
    }
};

const OpcodeTable&
Table()
{
    static const OpcodeTable table;
    return table;
}

/// Header sizes, in wire order.
constexpr struct
{
    uint32_t bit;
    size_t size;
} HEADER_ORDER[] = {
    {HDR_MDH, Mdh::SIZE},
    {HDR_RETH, Reth::SIZE},
    {HDR_ATOMIC_ETH, AtomicEth::SIZE},
    {HDR_IRH, Irh::SIZE},
    {HDR_RSH, Rsh::SIZE},
    {HDR_IMMDT, ImmDt::SIZE},
    {HDR_AETH, Aeth::SIZE},
    {HDR_ISH, Ish::SIZE},
    {HDR_ATOMIC_ACK_ETH, AtomicAckEth::SIZE},
    {HDR_MAH, Mah::SIZE},
    {HDR_MCH, Mch::SIZE},
    {HDR_MNH, Mnh::SIZE},
    {HDR_CNP_PAD, CnpPad::SIZE},
};

} // namespace

const OpcodeInfo&
LookupOpcode(uint8_t opcode)
{
    return Table().rows[opcode];
}

size_t
ExtensionHeadersLength(uint32_t headers)
{
    size_t len = 0;
    for (const auto& h : HEADER_ORDER)
    {
        if (headers & h.bit)
        {
            len += h.size;
        }
    }
    return len;
}

const char*
ParseStatusName(ParseStatus status)
{
    switch (status)
    {
    case ParseStatus::OK:
        return "OK";
    case ParseStatus::TRUNCATED:
        return "TRUNCATED";
    case ParseStatus::UNKNOWN_OPCODE:
        return "UNKNOWN_OPCODE";
    case ParseStatus::BAD_VERSION:
        return "BAD_VERSION";
    case ParseStatus::BAD_PAD:
        return "BAD_PAD";
    case ParseStatus::UNEXPECTED_PAYLOAD:
        return "UNEXPECTED_PAYLOAD";
    case ParseStatus::BAD_ICRC:
        return "BAD_ICRC";
    }
    return "UNKNOWN";
}

ParseStatus
ParseDatagram(const uint8_t* data, size_t len, ParsedPacket& out)
{
    if (len < Bth::SIZE + ICRC_SIZE)
    {
        return ParseStatus::TRUNCATED;
    }
    out.bth = Bth::Read(data);
    const OpcodeInfo& info = LookupOpcode(out.bth.opcode);
    if (info.name == nullptr)
    {
        return ParseStatus::UNKNOWN_OPCODE;
    }
    if (out.bth.tver != 0)
    {
        return ParseStatus::BAD_VERSION;
    }
    out.info = &info;
    size_t headersEnd = Bth::SIZE + ExtensionHeadersLength(info.headers);
    if (len < headersEnd + ICRC_SIZE)
    {
        return ParseStatus::TRUNCATED;
    }
    const uint8_t* p = data + Bth::SIZE;
    if (info.headers & HDR_MDH)
    {
        out.mdh = Mdh::Read(p);
        p += Mdh::SIZE;
    }
    if (info.headers & HDR_RETH)
    {
        out.reth = Reth::Read(p);
        p += Reth::SIZE;
    }
    if (info.headers & HDR_ATOMIC_ETH)
    {
        out.atomicEth = AtomicEth::Read(p);
        p += AtomicEth::SIZE;
    }
    if (info.headers & HDR_IRH)
    {
        out.irh = Irh::Read(p);
        p += Irh::SIZE;
    }
    if (info.headers & HDR_RSH)
    {
        out.rsh = Rsh::Read(p);
        p += Rsh::SIZE;
    }
    if (info.headers & HDR_IMMDT)
    {
        out.immDt = ReadU32(p);
        p += ImmDt::SIZE;
    }
    if (info.headers & HDR_AETH)
    {
        out.aeth = Aeth::Read(p);
        p += Aeth::SIZE;
    }
    if (info.headers & HDR_ISH)
    {
        out.ish = Ish::Read(p);
        p += Ish::SIZE;
    }
    if (info.headers & HDR_ATOMIC_ACK_ETH)
    {
        out.atomicAckEth = AtomicAckEth::Read(p);
        p += AtomicAckEth::SIZE;
    }
    if (info.headers & HDR_MAH)
    {
        out.mah = Mah::Read(p);
        p += Mah::SIZE;
    }
    if (info.headers & HDR_MCH)
    {
        out.mch = Mch::Read(p);
        p += Mch::SIZE;
    }
    if (info.headers & HDR_MNH)
    {
        out.mnh = Mnh::Read(p);
        p += Mnh::SIZE;
    }
    if (info.headers & HDR_CNP_PAD)
    {
        p += CnpPad::SIZE; // reserved: ignored on receipt
    }
    size_t paddedPayload = len - headersEnd - ICRC_SIZE;
    if (!info.payload && paddedPayload != 0)
    {
        return ParseStatus::UNEXPECTED_PAYLOAD;
    }
    if (out.bth.padCount > paddedPayload || (paddedPayload % 4) != 0)
    {
        return ParseStatus::BAD_PAD;
    }
    out.payload = data + headersEnd;
    out.payloadLength = uint32_t(paddedPayload - out.bth.padCount);
    return ParseStatus::OK;
}

size_t
DatagramLength(const OpcodeInfo& info, uint32_t payloadLength)
{
    size_t padded = (size_t(payloadLength) + 3) & ~size_t(3);
    return Bth::SIZE + ExtensionHeadersLength(info.headers) + padded + ICRC_SIZE;
}

size_t
WriteDatagram(uint8_t* out,
              size_t cap,
              ParsedPacket& pkt,
              const uint8_t* payload,
              uint32_t payloadLength,
              bool writeZeros)
{
    const OpcodeInfo& info = *pkt.info;
    size_t total = DatagramLength(info, payloadLength);
    if (total > cap || (!info.payload && payloadLength != 0))
    {
        return 0;
    }
    pkt.bth.padCount = uint8_t((4 - (payloadLength & 3)) & 3);
    pkt.bth.Write(out);
    uint8_t* p = out + Bth::SIZE;
    if (info.headers & HDR_MDH)
    {
        pkt.mdh.Write(p);
        p += Mdh::SIZE;
    }
    if (info.headers & HDR_RETH)
    {
        pkt.reth.Write(p);
        p += Reth::SIZE;
    }
    if (info.headers & HDR_ATOMIC_ETH)
    {
        pkt.atomicEth.Write(p);
        p += AtomicEth::SIZE;
    }
    if (info.headers & HDR_IRH)
    {
        pkt.irh.Write(p);
        p += Irh::SIZE;
    }
    if (info.headers & HDR_RSH)
    {
        pkt.rsh.Write(p);
        p += Rsh::SIZE;
    }
    if (info.headers & HDR_IMMDT)
    {
        WriteU32(p, pkt.immDt);
        p += ImmDt::SIZE;
    }
    if (info.headers & HDR_AETH)
    {
        pkt.aeth.Write(p);
        p += Aeth::SIZE;
    }
    if (info.headers & HDR_ISH)
    {
        pkt.ish.Write(p);
        p += Ish::SIZE;
    }
    if (info.headers & HDR_ATOMIC_ACK_ETH)
    {
        pkt.atomicAckEth.Write(p);
        p += AtomicAckEth::SIZE;
    }
    if (info.headers & HDR_MAH)
    {
        pkt.mah.Write(p);
        p += Mah::SIZE;
    }
    if (info.headers & HDR_MCH)
    {
        pkt.mch.Write(p);
        p += Mch::SIZE;
    }
    if (info.headers & HDR_MNH)
    {
        pkt.mnh.Write(p);
        p += Mnh::SIZE;
    }
    if (info.headers & HDR_CNP_PAD)
    {
        std::memset(p, 0, CnpPad::SIZE);
        p += CnpPad::SIZE;
    }
    if (payloadLength > 0)
    {
        if (payload != nullptr)
        {
            std::memcpy(p, payload, payloadLength);
        }
        else if (writeZeros)
        {
            std::memset(p, 0, payloadLength);
        }
    }
    p += payloadLength;
    std::memset(p, 0, pkt.bth.padCount + ICRC_SIZE);
    pkt.payload = out + (p - out) - payloadLength;
    pkt.payloadLength = payloadLength;
    return total;
}

} // namespace metaroce
