/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#include "metaroce-encap.h"

#include "metaroce-byte-order.h"

#include <cstring>

namespace metaroce
{

namespace
{

/// IP version carried in the high nibble of the first IPv4 byte.
constexpr uint8_t IPV4_VERSION = 4;
/// IHL of a header without options, in 32-bit words.
constexpr uint8_t IPV4_MIN_IHL = 5;

/// \return the one's complement sum of \p a and \p b, folded to 16 bits.
uint16_t
OnesComplementAdd(uint16_t a, uint16_t b)
{
    uint32_t sum = uint32_t(a) + uint32_t(b);
    return static_cast<uint16_t>((sum & 0xffff) + (sum >> 16));
}

} // namespace

bool
operator==(const MacAddress& a, const MacAddress& b)
{
    return std::memcmp(a.bytes, b.bytes, MAC_ADDRESS_SIZE) == 0;
}

bool
operator!=(const MacAddress& a, const MacAddress& b)
{
    return !(a == b);
}

const char*
FrameStatusName(FrameStatus status)
{
    switch (status)
    {
    case FrameStatus::OK:
        return "OK";
    case FrameStatus::TRUNCATED:
        return "TRUNCATED";
    case FrameStatus::NOT_IPV4:
        return "NOT_IPV4";
    case FrameStatus::BAD_IPV4_HEADER:
        return "BAD_IPV4_HEADER";
    case FrameStatus::BAD_IPV4_CHECKSUM:
        return "BAD_IPV4_CHECKSUM";
    case FrameStatus::FRAGMENTED:
        return "FRAGMENTED";
    case FrameStatus::NOT_UDP:
        return "NOT_UDP";
    case FrameStatus::BAD_UDP_LENGTH:
        return "BAD_UDP_LENGTH";
    }
    return "UNKNOWN";
}

uint16_t
InternetChecksum(const uint8_t* data, size_t len)
{
    // A 64-bit accumulator cannot overflow for any buffer a frame can hold.
    uint64_t sum = 0;
    size_t i = 0;
    for (; i + 1 < len; i += 2)
    {
        sum += ReadU16(data + i);
    }
    if (i < len)
    {
        sum += uint64_t(data[i]) << 8;
    }
    while (sum >> 16)
    {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    return static_cast<uint16_t>(~sum);
}

bool
WriteIpv4UdpHeaders(uint8_t* out28, const DatagramMeta& meta, size_t datagramLen)
{
    if (datagramLen > MAX_DATAGRAM_SIZE)
    {
        return false;
    }
    uint8_t* ip = out28;
    const uint8_t tos = static_cast<uint8_t>(((meta.dscp & IPV4_DSCP_MAX) << 2) |
                                             (static_cast<uint8_t>(meta.ecn) & IPV4_ECN_MASK));
    WriteU8(ip + IPV4_VERSION_IHL_OFFSET, (IPV4_VERSION << 4) | IPV4_MIN_IHL);
    WriteU8(ip + IPV4_TOS_OFFSET, tos);
    WriteU16(ip + IPV4_TOTAL_LENGTH_OFFSET,
             static_cast<uint16_t>(IPV4_UDP_HEADERS_SIZE + datagramLen));
    WriteU16(ip + IPV4_IDENTIFICATION_OFFSET, 0);
    WriteU16(ip + IPV4_FLAGS_FRAGMENT_OFFSET, IPV4_FLAG_DF);
    WriteU8(ip + IPV4_TTL_OFFSET, IPV4_CANONICAL_TTL);
    WriteU8(ip + IPV4_PROTOCOL_OFFSET, IP_PROTOCOL_UDP);
    WriteU16(ip + IPV4_CHECKSUM_OFFSET, 0);
    WriteU32(ip + IPV4_SRC_OFFSET, meta.srcIp);
    WriteU32(ip + IPV4_DST_OFFSET, meta.dstIp);
    WriteU16(ip + IPV4_CHECKSUM_OFFSET, InternetChecksum(ip, IPV4_HEADER_SIZE));

    uint8_t* udp = out28 + IPV4_HEADER_SIZE;
    WriteU16(udp + UDP_SRC_PORT_OFFSET, meta.srcPort);
    WriteU16(udp + UDP_DST_PORT_OFFSET, meta.dstPort);
    WriteU16(udp + UDP_LENGTH_OFFSET, static_cast<uint16_t>(UDP_HEADER_SIZE + datagramLen));
    WriteU16(udp + UDP_CHECKSUM_OFFSET, 0);
    return true;
}

size_t
EncapsulateFrame(uint8_t* out,
                 size_t cap,
                 const MacAddress& src,
                 const MacAddress& dst,
                 const DatagramMeta& meta,
                 const uint8_t* datagram,
                 size_t len)
{
    if (len > MAX_DATAGRAM_SIZE || cap < FRAME_HEADERS_SIZE || cap - FRAME_HEADERS_SIZE < len)
    {
        return 0;
    }
    // Move the datagram first: it may overlap the header area when built in place. Where it
    // was written at its final place (a transmit ring's slot) nothing moves.
    if (len > 0 && datagram != out + FRAME_HEADERS_SIZE)
    {
        std::memmove(out + FRAME_HEADERS_SIZE, datagram, len);
    }
    std::memcpy(out + ETHERNET_DST_OFFSET, dst.bytes, MAC_ADDRESS_SIZE);
    std::memcpy(out + ETHERNET_SRC_OFFSET, src.bytes, MAC_ADDRESS_SIZE);
    WriteU16(out + ETHERNET_TYPE_OFFSET, ETHERTYPE_IPV4);
    WriteIpv4UdpHeaders(out + ETHERNET_HEADER_SIZE, meta, len);
    return FRAME_HEADERS_SIZE + len;
}

FrameStatus
ParseIpv4Udp(const uint8_t* ip, size_t len, ParsedFrame& out)
{
    if (len < IPV4_HEADER_SIZE)
    {
        return FrameStatus::TRUNCATED;
    }
    const uint8_t versionIhl = ReadU8(ip + IPV4_VERSION_IHL_OFFSET);
    if ((versionIhl >> 4) != IPV4_VERSION)
    {
        return FrameStatus::NOT_IPV4;
    }
    const size_t ihl = versionIhl & 0x0f;
    if (ihl < IPV4_MIN_IHL)
    {
        return FrameStatus::BAD_IPV4_HEADER;
    }
    const size_t headerLen = ihl * 4;
    if (headerLen > len)
    {
        return FrameStatus::TRUNCATED;
    }
    const size_t totalLen = ReadU16(ip + IPV4_TOTAL_LENGTH_OFFSET);
    if (totalLen < headerLen)
    {
        return FrameStatus::BAD_IPV4_HEADER;
    }
    if (totalLen > len)
    {
        return FrameStatus::TRUNCATED;
    }
    if (InternetChecksum(ip, headerLen) != 0)
    {
        return FrameStatus::BAD_IPV4_CHECKSUM;
    }
    const uint16_t flagsFragment = ReadU16(ip + IPV4_FLAGS_FRAGMENT_OFFSET);
    if ((flagsFragment & (IPV4_FLAG_MF | IPV4_FRAGMENT_OFFSET_MASK)) != 0)
    {
        return FrameStatus::FRAGMENTED;
    }
    if (ReadU8(ip + IPV4_PROTOCOL_OFFSET) != IP_PROTOCOL_UDP)
    {
        return FrameStatus::NOT_UDP;
    }
    const size_t ipPayloadLen = totalLen - headerLen;
    if (ipPayloadLen < UDP_HEADER_SIZE)
    {
        return FrameStatus::TRUNCATED;
    }
    const uint8_t* udp = ip + headerLen;
    const size_t udpLen = ReadU16(udp + UDP_LENGTH_OFFSET);
    if (udpLen < UDP_HEADER_SIZE || udpLen > ipPayloadLen)
    {
        return FrameStatus::BAD_UDP_LENGTH;
    }

    const uint8_t tos = ReadU8(ip + IPV4_TOS_OFFSET);
    out.dst = MacAddress{};
    out.src = MacAddress{};
    out.meta.srcIp = ReadU32(ip + IPV4_SRC_OFFSET);
    out.meta.dstIp = ReadU32(ip + IPV4_DST_OFFSET);
    out.meta.srcPort = ReadU16(udp + UDP_SRC_PORT_OFFSET);
    out.meta.dstPort = ReadU16(udp + UDP_DST_PORT_OFFSET);
    out.meta.ecn = static_cast<Ecn>(tos & IPV4_ECN_MASK);
    out.meta.dscp = static_cast<uint8_t>(tos >> 2);
    out.ipHeader = ip;
    out.ipHeaderLen = headerLen;
    out.datagram = udp + UDP_HEADER_SIZE;
    out.datagramLen = udpLen - UDP_HEADER_SIZE;
    return FrameStatus::OK;
}

FrameStatus
ParseFrame(const uint8_t* frame, size_t len, ParsedFrame& out)
{
    if (len < ETHERNET_HEADER_SIZE)
    {
        return FrameStatus::TRUNCATED;
    }
    if (ReadU16(frame + ETHERNET_TYPE_OFFSET) != ETHERTYPE_IPV4)
    {
        return FrameStatus::NOT_IPV4;
    }
    const FrameStatus status =
        ParseIpv4Udp(frame + ETHERNET_HEADER_SIZE, len - ETHERNET_HEADER_SIZE, out);
    if (status != FrameStatus::OK)
    {
        return status;
    }
    std::memcpy(out.dst.bytes, frame + ETHERNET_DST_OFFSET, MAC_ADDRESS_SIZE);
    std::memcpy(out.src.bytes, frame + ETHERNET_SRC_OFFSET, MAC_ADDRESS_SIZE);
    return FrameStatus::OK;
}

void
SetIpv4Ecn(uint8_t* ipHeader, Ecn ecn)
{
    // RFC 1624 eqn. 3: HC' = ~(~HC + ~m + m'), m being the 16-bit word holding the TOS byte.
    const uint16_t oldWord = ReadU16(ipHeader + IPV4_VERSION_IHL_OFFSET);
    const uint8_t oldTos = ReadU8(ipHeader + IPV4_TOS_OFFSET);
    const uint8_t newTos = static_cast<uint8_t>((oldTos & ~IPV4_ECN_MASK) |
                                                (static_cast<uint8_t>(ecn) & IPV4_ECN_MASK));
    if (newTos == oldTos)
    {
        return;
    }
    WriteU8(ipHeader + IPV4_TOS_OFFSET, newTos);
    const uint16_t newWord = ReadU16(ipHeader + IPV4_VERSION_IHL_OFFSET);
    const uint16_t oldChecksum = ReadU16(ipHeader + IPV4_CHECKSUM_OFFSET);
    uint16_t sum =
        OnesComplementAdd(static_cast<uint16_t>(~oldChecksum), static_cast<uint16_t>(~oldWord));
    sum = OnesComplementAdd(sum, newWord);
    WriteU16(ipHeader + IPV4_CHECKSUM_OFFSET, static_cast<uint16_t>(~sum));
}

} // namespace metaroce
