/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#ifndef METAROCE_ENCAP_H
#define METAROCE_ENCAP_H

#include "metaroce-datagram.h"

#include <cstddef>
#include <cstdint>

/**
 * \file
 * The one shared Ethernet/IPv4/UDP encapsulation of transport datagrams.
 *
 * Every adapter (ns-3 devices, TAP, AF_PACKET, pcap writers) builds and parses frames here, so
 * a packet is byte-identical everywhere. Emitted headers carry canonical values (below); the
 * RoCEv2 ICRC covers the IPv4 identification, flags and lengths, so an engine that only knows
 * a DatagramMeta can compute a valid ICRC only if the wire headers are exactly these.
 *
 * Ethernet II header (no VLAN tag, no FCS):
 * \verbatim
    0                   1                   2                   3
    0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
   +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
   |                  Destination MAC (bytes 0-3)                  |
   +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
   |  Destination MAC (bytes 4-5)  |    Source MAC (bytes 0-1)     |
   +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
   |                   Source MAC (bytes 2-5)                      |
   +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
   |       EtherType (0x0800)      |
   +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
   \endverbatim
 *
 * IPv4 header (RFC 791), canonical values emitted in brackets:
 * \verbatim
    0                   1                   2                   3
    0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
   +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
   |Version|  IHL  |   DSCP    |ECN|          Total Length         |
   |  [4]  |  [5]  |  [meta]   |   |    [20 + 8 + datagram len]    |
   +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
   |       Identification          |Flags|     Fragment Offset     |
   |             [0]               |[DF] |           [0]           |
   +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
   |   TTL [64]    | Protocol [17] |        Header Checksum        |
   +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
   |                  Source Address [meta.srcIp]                  |
   +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
   |               Destination Address [meta.dstIp]                |
   +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
   \endverbatim
 *
 * UDP header (RFC 768):
 * \verbatim
    0                   1                   2                   3
    0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
   +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
   |          Source Port          |       Destination Port        |
   |         [meta.srcPort]        |        [meta.dstPort]         |
   +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
   |            Length             |           Checksum            |
   |      [8 + datagram len]       |              [0]              |
   +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
   \endverbatim
 */

namespace metaroce
{

/// Size of an Ethernet II header without VLAN tag.
constexpr size_t ETHERNET_HEADER_SIZE = 14;
/// Offset of the destination MAC address in the Ethernet header.
constexpr size_t ETHERNET_DST_OFFSET = 0;
/// Offset of the source MAC address in the Ethernet header.
constexpr size_t ETHERNET_SRC_OFFSET = 6;
/// Offset of the EtherType in the Ethernet header.
constexpr size_t ETHERNET_TYPE_OFFSET = 12;
/// Size of a MAC address.
constexpr size_t MAC_ADDRESS_SIZE = 6;
/// EtherType of IPv4.
constexpr uint16_t ETHERTYPE_IPV4 = 0x0800;

/// Size of an IPv4 header without options (IHL 5).
constexpr size_t IPV4_HEADER_SIZE = 20;
/// Offset of the version (high nibble) and IHL (low nibble) byte.
constexpr size_t IPV4_VERSION_IHL_OFFSET = 0;
/// Offset of the TOS byte: DSCP (high 6 bits) and ECN (low 2 bits).
constexpr size_t IPV4_TOS_OFFSET = 1;
/// Offset of the 16-bit total length.
constexpr size_t IPV4_TOTAL_LENGTH_OFFSET = 2;
/// Offset of the 16-bit identification.
constexpr size_t IPV4_IDENTIFICATION_OFFSET = 4;
/// Offset of the 16-bit flags (3 bits) and fragment offset (13 bits).
constexpr size_t IPV4_FLAGS_FRAGMENT_OFFSET = 6;
/// Offset of the TTL byte.
constexpr size_t IPV4_TTL_OFFSET = 8;
/// Offset of the protocol byte.
constexpr size_t IPV4_PROTOCOL_OFFSET = 9;
/// Offset of the 16-bit header checksum.
constexpr size_t IPV4_CHECKSUM_OFFSET = 10;
/// Offset of the source address.
constexpr size_t IPV4_SRC_OFFSET = 12;
/// Offset of the destination address.
constexpr size_t IPV4_DST_OFFSET = 16;
/// Don't Fragment flag within the flags/fragment-offset word.
constexpr uint16_t IPV4_FLAG_DF = 0x4000;
/// More Fragments flag within the flags/fragment-offset word.
constexpr uint16_t IPV4_FLAG_MF = 0x2000;
/// Fragment offset bits within the flags/fragment-offset word.
constexpr uint16_t IPV4_FRAGMENT_OFFSET_MASK = 0x1fff;
/// TTL written by the encapsulation.
constexpr uint8_t IPV4_CANONICAL_TTL = 64;
/// IP protocol number of UDP.
constexpr uint8_t IP_PROTOCOL_UDP = 17;
/// Mask of the ECN bits in the TOS byte.
constexpr uint8_t IPV4_ECN_MASK = 0x03;
/// Largest DSCP value (6 bits).
constexpr uint8_t IPV4_DSCP_MAX = 0x3f;

/// Size of the UDP header.
constexpr size_t UDP_HEADER_SIZE = 8;
/// Offset of the UDP source port.
constexpr size_t UDP_SRC_PORT_OFFSET = 0;
/// Offset of the UDP destination port.
constexpr size_t UDP_DST_PORT_OFFSET = 2;
/// Offset of the UDP length (header plus payload).
constexpr size_t UDP_LENGTH_OFFSET = 4;
/// Offset of the UDP checksum.
constexpr size_t UDP_CHECKSUM_OFFSET = 6;

/// Size of the canonical IPv4 and UDP headers together.
constexpr size_t IPV4_UDP_HEADERS_SIZE = IPV4_HEADER_SIZE + UDP_HEADER_SIZE;
/// Size of all headers EncapsulateFrame() puts before the datagram.
constexpr size_t FRAME_HEADERS_SIZE = ETHERNET_HEADER_SIZE + IPV4_UDP_HEADERS_SIZE;
/// Largest datagram (UDP payload) that fits the 16-bit IPv4 total length.
constexpr size_t MAX_DATAGRAM_SIZE = 0xffff - IPV4_UDP_HEADERS_SIZE;

/// An Ethernet MAC address in wire order.
struct MacAddress
{
    uint8_t bytes[MAC_ADDRESS_SIZE]{}; //!< the six address bytes, first byte first on the wire
};

/// \return true if \p a and \p b are the same address.
bool operator==(const MacAddress& a, const MacAddress& b);

/// \return true if \p a and \p b differ.
bool operator!=(const MacAddress& a, const MacAddress& b);

/// Outcome of parsing a frame or an IPv4 packet. Everything except OK means "drop".
enum class FrameStatus : uint8_t
{
    OK,                //!< valid IPv4/UDP packet; the parsed fields are set
    TRUNCATED,         //!< the buffer ends before a length the headers require or declare
    NOT_IPV4,          //!< EtherType is not IPv4 (VLAN tags included), or IP version is not 4
    BAD_IPV4_HEADER,   //!< IHL below 5, or total length shorter than the header
    BAD_IPV4_CHECKSUM, //!< IPv4 header checksum does not verify
    FRAGMENTED,        //!< a fragment (MF set or nonzero offset): never part of RoCE traffic
    NOT_UDP,           //!< IPv4 protocol is not UDP
    BAD_UDP_LENGTH,    //!< UDP length below 8 or beyond the IPv4 payload
};

/// \return the enum value name of \p status, e.g. "BAD_IPV4_CHECKSUM".
const char* FrameStatusName(FrameStatus status);

/**
 * A parsed IPv4/UDP packet: plain fields plus views into the caller's buffer. The pointers stay
 * valid as long as that buffer does.
 */
struct ParsedFrame
{
    MacAddress dst;                   //!< Ethernet destination (zero for ParseIpv4Udp())
    MacAddress src;                   //!< Ethernet source (zero for ParseIpv4Udp())
    DatagramMeta meta;                //!< addresses, ports, DSCP and ECN from the headers
    const uint8_t* ipHeader{nullptr}; //!< start of the IPv4 header
    size_t ipHeaderLen{0};            //!< IPv4 header length in bytes (IHL * 4, options included)
    const uint8_t* datagram{nullptr}; //!< the UDP payload: the transport datagram
    size_t datagramLen{0};            //!< UDP length minus the UDP header
};

/**
 * Compute the RFC 1071 Internet checksum of \p len bytes (an odd last byte is padded with
 * zero).
 *
 * \param data the bytes
 * \param len their number
 * \return the one's complement of the one's complement sum; 0 when \p data holds a header
 *         whose checksum field is correct
 */
uint16_t InternetChecksum(const uint8_t* data, size_t len);

/**
 * Write the canonical IPv4 header (version 4, IHL 5, TOS from \p meta, identification 0, DF,
 * TTL 64, protocol UDP, valid checksum) and UDP header (ports from \p meta, checksum 0, which
 * IPv4 allows and RoCEv2 uses) for a datagram of \p datagramLen bytes.
 *
 * \param out28 destination of the IPV4_UDP_HEADERS_SIZE (28) header bytes
 * \param meta addresses, ports, DSCP (masked to 6 bits) and ECN
 * \param datagramLen length of the UDP payload, ICRC included
 * \return false, writing nothing, if \p datagramLen exceeds MAX_DATAGRAM_SIZE
 */
bool WriteIpv4UdpHeaders(uint8_t* out28, const DatagramMeta& meta, size_t datagramLen);

/**
 * Build an Ethernet II frame (EtherType IPv4, no VLAN tag, no FCS, no padding to 60 bytes)
 * carrying \p datagram with the canonical headers of WriteIpv4UdpHeaders().
 *
 * The datagram may already sit at out + FRAME_HEADERS_SIZE (built in place) or overlap
 * \p out in any way: it is moved, not copied.
 *
 * \param out destination buffer
 * \param cap capacity of \p out in bytes
 * \param src source MAC address
 * \param dst destination MAC address
 * \param meta addresses, ports, DSCP and ECN
 * \param datagram the transport datagram (UDP payload, ICRC included)
 * \param len its length
 * \return the frame length (FRAME_HEADERS_SIZE + len), or 0 if \p cap is too small or
 *         \p len exceeds MAX_DATAGRAM_SIZE
 */
size_t EncapsulateFrame(uint8_t* out,
                        size_t cap,
                        const MacAddress& src,
                        const MacAddress& dst,
                        const DatagramMeta& meta,
                        const uint8_t* datagram,
                        size_t len);

/**
 * Parse and check an IPv4 packet carrying UDP, without an Ethernet header (TUN devices, raw
 * IP sockets). Accepts IPv4 options; rejects fragments; verifies the header checksum; uses the
 * IPv4 total length, so trailing bytes (Ethernet padding) are ignored. The UDP checksum is not
 * verified (RoCEv2 sends 0 and relies on the ICRC). Never reads outside [ip, ip + len).
 *
 * \param ip start of the IPv4 header
 * \param len bytes available at \p ip
 * \param out filled on OK (MAC addresses zeroed); unspecified otherwise
 * \return OK or the first problem found
 */
FrameStatus ParseIpv4Udp(const uint8_t* ip, size_t len, ParsedFrame& out);

/**
 * Parse and check an Ethernet II frame carrying IPv4/UDP: the Ethernet header, then as
 * ParseIpv4Udp(). Never reads outside [frame, frame + len).
 *
 * \param frame start of the Ethernet header (no FCS expected)
 * \param len frame length
 * \param out filled on OK; unspecified otherwise
 * \return OK or the first problem found
 */
FrameStatus ParseFrame(const uint8_t* frame, size_t len, ParsedFrame& out);

/**
 * Rewrite the ECN bits of an IPv4 header in place and update its checksum incrementally
 * (RFC 1624), as a switch marking CE does. The DSCP bits are kept.
 *
 * \param ipHeader start of a valid IPv4 header (at least 12 bytes are touched)
 * \param ecn the new codepoint
 */
void SetIpv4Ecn(uint8_t* ipHeader, Ecn ecn);

} // namespace metaroce

#endif // METAROCE_ENCAP_H
