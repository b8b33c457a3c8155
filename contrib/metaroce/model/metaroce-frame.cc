/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#include "metaroce-frame.h"

#include "metaroce-byte-order.h"

#include "ns3/abort.h"

#include <algorithm>
#include <cstring>
#include <iomanip>

namespace ns3
{

NS_OBJECT_ENSURE_REGISTERED(MetaRoceRawHeader);
NS_OBJECT_ENSURE_REGISTERED(MetaRoceSpanHeader);
NS_OBJECT_ENSURE_REGISTERED(MetaRoceSpanTrailer);

namespace
{

/// \return true if the \p n bytes at \p p are all zero (stops at the first non-zero block).
bool
AllZero(const uint8_t* p, uint32_t n)
{
    static const uint8_t zeros[1024] = {};
    while (n > 0)
    {
        const uint32_t chunk = std::min<uint32_t>(n, sizeof(zeros));
        if (std::memcmp(p, zeros, chunk) != 0)
        {
            return false;
        }
        p += chunk;
        n -= chunk;
    }
    return true;
}

} // namespace

Ptr<Packet>
MetaRoceCreateFrame(const uint8_t* bytes,
                    uint32_t size,
                    uint32_t zeroOffset,
                    uint32_t zeroLength,
                    bool knownZero)
{
    if (zeroLength == 0 || zeroOffset > size || zeroLength > size - zeroOffset ||
        (!knownZero && !AllZero(bytes + zeroOffset, zeroLength)))
    {
        return Create<Packet>(bytes, size);
    }
    Ptr<Packet> frame = Create<Packet>(zeroLength); // virtual zero area: no buffer, no copy
    if (zeroOffset > 0)
    {
        frame->AddHeader(MetaRoceSpanHeader(bytes, zeroOffset));
    }
    const uint32_t tail = size - zeroOffset - zeroLength;
    if (tail > 0)
    {
        frame->AddTrailer(MetaRoceSpanTrailer(bytes + zeroOffset + zeroLength, tail));
    }
    return frame;
}

void
MetaRoceDecrementIpv4Ttl(uint8_t* ip)
{
    const uint16_t oldWord = metaroce::ReadU16(ip + metaroce::IPV4_TTL_OFFSET);
    ip[metaroce::IPV4_TTL_OFFSET] = static_cast<uint8_t>(ip[metaroce::IPV4_TTL_OFFSET] - 1);
    const uint16_t newWord = metaroce::ReadU16(ip + metaroce::IPV4_TTL_OFFSET);
    const uint16_t oldChecksum = metaroce::ReadU16(ip + metaroce::IPV4_CHECKSUM_OFFSET);
    uint32_t sum = uint32_t(static_cast<uint16_t>(~oldChecksum)) +
                   uint32_t(static_cast<uint16_t>(~oldWord)) + newWord;
    while (sum >> 16)
    {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    metaroce::WriteU16(ip + metaroce::IPV4_CHECKSUM_OFFSET, static_cast<uint16_t>(~sum));
}

void
MetaRoceApplyPending(uint8_t* bytes, const MetaRoceFrameInfo& info)
{
    uint8_t* ip = bytes + metaroce::ETHERNET_HEADER_SIZE;
    for (uint32_t hop = 1; hop <= info.pendingHops; ++hop)
    {
        MetaRoceDecrementIpv4Ttl(ip);
        if (hop == info.ceAtHop)
        {
            metaroce::SetIpv4Ecn(ip, metaroce::Ecn::CE);
        }
    }
    if (info.pendingMacs)
    {
        std::memcpy(bytes + metaroce::ETHERNET_SRC_OFFSET, info.src, metaroce::MAC_ADDRESS_SIZE);
        std::memcpy(bytes + metaroce::ETHERNET_DST_OFFSET, info.dst, metaroce::MAC_ADDRESS_SIZE);
    }
}

void
MetaRoceWritePending(Packet& frame, MetaRoceFrameInfo& info)
{
    if (!info.valid || !info.HasPending())
    {
        return;
    }
    uint8_t headers[METAROCE_HEADER_PEEK_SIZE];
    const uint32_t length = metaroce::ETHERNET_HEADER_SIZE + info.ipHeaderLen;
    frame.CopyData(headers, length);
    MetaRoceApplyPending(headers, info);
    frame.RemoveAtStart(length);
    frame.AddHeader(MetaRoceRawHeader(headers, length));
    info.pendingHops = 0;
    info.ceAtHop = 0;
    info.pendingMacs = false;
}

TypeId
MetaRoceSpanHeader::GetTypeId()
{
    static TypeId tid = TypeId("ns3::MetaRoceSpanHeader")
                            .SetParent<Header>()
                            .SetGroupName("MetaRoce")
                            .AddConstructor<MetaRoceSpanHeader>();
    return tid;
}

MetaRoceSpanHeader::MetaRoceSpanHeader()
    : m_bytes(nullptr),
      m_size(0)
{
}

MetaRoceSpanHeader::MetaRoceSpanHeader(const uint8_t* bytes, uint32_t size)
    : m_bytes(bytes),
      m_size(size)
{
}

TypeId
MetaRoceSpanHeader::GetInstanceTypeId() const
{
    return GetTypeId();
}

uint32_t
MetaRoceSpanHeader::GetSerializedSize() const
{
    return m_size;
}

void
MetaRoceSpanHeader::Serialize(Buffer::Iterator start) const
{
    start.Write(m_bytes, m_size);
}

uint32_t
MetaRoceSpanHeader::Deserialize(Buffer::Iterator /* start */)
{
    return 0; // a span has no storage to read into
}

void
MetaRoceSpanHeader::Print(std::ostream& os) const
{
    os << "span " << m_size << " bytes";
}

TypeId
MetaRoceSpanTrailer::GetTypeId()
{
    static TypeId tid = TypeId("ns3::MetaRoceSpanTrailer")
                            .SetParent<Trailer>()
                            .SetGroupName("MetaRoce")
                            .AddConstructor<MetaRoceSpanTrailer>();
    return tid;
}

MetaRoceSpanTrailer::MetaRoceSpanTrailer()
    : m_bytes(nullptr),
      m_size(0)
{
}

MetaRoceSpanTrailer::MetaRoceSpanTrailer(const uint8_t* bytes, uint32_t size)
    : m_bytes(bytes),
      m_size(size)
{
}

TypeId
MetaRoceSpanTrailer::GetInstanceTypeId() const
{
    return GetTypeId();
}

uint32_t
MetaRoceSpanTrailer::GetSerializedSize() const
{
    return m_size;
}

void
MetaRoceSpanTrailer::Serialize(Buffer::Iterator end) const
{
    end.Prev(m_size);
    end.Write(m_bytes, m_size);
}

uint32_t
MetaRoceSpanTrailer::Deserialize(Buffer::Iterator /* end */)
{
    return 0; // a span has no storage to read into
}

void
MetaRoceSpanTrailer::Print(std::ostream& os) const
{
    os << "span trailer " << m_size << " bytes";
}

const char*
MetaRoceDropReasonName(MetaRoceDropReason reason)
{
    switch (reason)
    {
    case MetaRoceDropReason::LINK_DOWN:
        return "LINK_DOWN";
    case MetaRoceDropReason::MTU_EXCEEDED:
        return "MTU_EXCEEDED";
    case MetaRoceDropReason::ADMISSION:
        return "ADMISSION";
    case MetaRoceDropReason::CHANNEL_LOSS:
        return "CHANNEL_LOSS";
    case MetaRoceDropReason::MALFORMED:
        return "MALFORMED";
    case MetaRoceDropReason::NO_ROUTE:
        return "NO_ROUTE";
    case MetaRoceDropReason::TTL_EXPIRED:
        return "TTL_EXPIRED";
    case MetaRoceDropReason::BUFFER_FULL:
        return "BUFFER_FULL";
    case MetaRoceDropReason::QUEUE_THRESHOLD:
        return "QUEUE_THRESHOLD";
    case MetaRoceDropReason::UNCLAIMED:
        return "UNCLAIMED";
    case MetaRoceDropReason::COUNT:
        break;
    }
    return "UNKNOWN";
}

metaroce::FrameStatus
MetaRocePeekFrame(Ptr<const Packet> frame,
                  uint8_t (&buffer)[METAROCE_HEADER_PEEK_SIZE],
                  metaroce::ParsedFrame& out)
{
    const uint32_t size = frame->GetSize();
    const uint32_t copied = frame->CopyData(buffer, std::min(size, METAROCE_HEADER_PEEK_SIZE));
    if (copied < size && copied < METAROCE_HEADER_PEEK_SIZE)
    {
        return metaroce::FrameStatus::TRUNCATED;
    }
    // ParseFrame reads at most ETHERNET_HEADER_SIZE + 60 + UDP_HEADER_SIZE bytes (the buffer
    // holds them when the frame does) and validates the declared lengths against `size`.
    static_assert(metaroce::ETHERNET_HEADER_SIZE + 60 + metaroce::UDP_HEADER_SIZE <=
                      METAROCE_HEADER_PEEK_SIZE,
                  "the peek buffer must hold the largest header stack");
    return metaroce::ParseFrame(buffer, size, out);
}

TypeId
MetaRoceRawHeader::GetTypeId()
{
    static TypeId tid = TypeId("ns3::MetaRoceRawHeader")
                            .SetParent<Header>()
                            .SetGroupName("MetaRoce")
                            .AddConstructor<MetaRoceRawHeader>();
    return tid;
}

MetaRoceRawHeader::MetaRoceRawHeader()
    : m_size(0)
{
}

MetaRoceRawHeader::MetaRoceRawHeader(const uint8_t* bytes, uint32_t size)
    : m_size(size)
{
    NS_ABORT_MSG_IF(size > METAROCE_HEADER_PEEK_SIZE,
                    "MetaRoceRawHeader holds at most " << METAROCE_HEADER_PEEK_SIZE << " bytes");
    std::memcpy(m_bytes, bytes, size);
}

const uint8_t*
MetaRoceRawHeader::GetBytes() const
{
    return m_bytes;
}

TypeId
MetaRoceRawHeader::GetInstanceTypeId() const
{
    return GetTypeId();
}

uint32_t
MetaRoceRawHeader::GetSerializedSize() const
{
    return m_size;
}

void
MetaRoceRawHeader::Serialize(Buffer::Iterator start) const
{
    start.Write(m_bytes, m_size);
}

uint32_t
MetaRoceRawHeader::Deserialize(Buffer::Iterator start)
{
    start.Read(m_bytes, m_size);
    return m_size;
}

uint32_t
MetaRoceRawHeader::Deserialize(Buffer::Iterator start, Buffer::Iterator end)
{
    m_size = std::min(end.GetDistanceFrom(start), METAROCE_HEADER_PEEK_SIZE);
    start.Read(m_bytes, m_size);
    return m_size;
}

void
MetaRoceRawHeader::Print(std::ostream& os) const
{
    os << "raw " << m_size << " bytes";
}

} // namespace ns3
