/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#ifndef METAROCE_DATAGRAM_H
#define METAROCE_DATAGRAM_H

#include <cstddef>
#include <cstdint>

/**
 * \file
 * The engine's unit of I/O: a transport datagram (the bytes after the UDP header) plus the
 * metadata the fabric needs to carry it.
 */

namespace metaroce
{

/// UDP destination port of RoCEv2, reused by our MetaRoCE wire model.
constexpr uint16_t ROCE_UDP_PORT = 4791;

/**
 * Bytes a datagram costs on an Ethernet wire beyond its own length: UDP (8), IPv4 (20),
 * Ethernet header and FCS (18), preamble and inter-frame gap (20). Pacing uses it.
 */
constexpr uint32_t WIRE_OVERHEAD_BYTES = 66;

/// The two ECN bits of the IPv4 TOS byte (RFC 3168).
enum class Ecn : uint8_t
{
    NOT_ECT = 0, //!< Not ECN-capable transport
    ECT1 = 1,    //!< ECN-capable transport (1)
    ECT0 = 2,    //!< ECN-capable transport (0)
    CE = 3,      //!< Congestion experienced
};

/**
 * What the fabric needs to deliver a transport datagram: the IPv4/UDP 5-tuple (the protocol
 * is always UDP) and the ECN codepoint. IPv4 addresses are host-order integers
 * (10.0.0.1 == 0x0a000001).
 */
struct DatagramMeta
{
    uint32_t srcIp{0};               //!< IPv4 source address
    uint32_t dstIp{0};               //!< IPv4 destination address
    uint16_t srcPort{0};             //!< UDP source port: the path's ECMP entropy
    uint16_t dstPort{ROCE_UDP_PORT}; //!< UDP destination port
    Ecn ecn{Ecn::NOT_ECT};           //!< ECN codepoint of the IPv4 header
    uint8_t dscp{0};                 //!< DSCP (traffic class for switch priority queues)
};

} // namespace metaroce

#endif // METAROCE_DATAGRAM_H
