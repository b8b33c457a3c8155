/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#ifndef METAROCE_ICRC_H
#define METAROCE_ICRC_H

#include "metaroce-datagram.h"
#include "metaroce-wire.h" // ICRC_SIZE

#include <cstddef>
#include <cstdint>

/**
 * \file
 * CRC-32 and the RoCEv2 Invariant CRC (ICRC) for IPv4.
 *
 * Definition (InfiniBand Architecture Specification, Annex A17 "RoCEv2"; Linux soft-RoCE
 * drivers/infiniband/sw/rxe/rxe_icrc.c): the ICRC is the standard CRC-32 (IEEE 802.3 / zlib:
 * reflected polynomial 0xEDB88320, initial value 0xFFFFFFFF, final XOR 0xFFFFFFFF) over
 *
 * \verbatim
   8 bytes 0xFF                     the masked pseudo-LRH
   IPv4 header, 20 bytes            TOS (DSCP+ECN), TTL and header checksum set to all ones
   UDP header, 8 bytes              checksum set to all ones
   BTH, 12 bytes                    byte 4 (FECN, BECN, Resv6a) set to all ones
   extension headers, payload, pad  as sent
   \endverbatim
 *
 * and is carried in the last 4 bytes of the UDP payload, least significant byte first:
 *
 * \verbatim
    0                   1                   2                   3
    0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
   +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
   | CRC bits 7..0 |  bits 15..8   |  bits 23..16  |  bits 31..24  |
   +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
   \endverbatim
 *
 * How the byte order was established (sources read 2026):
 * - rxe_icrc.c seeds crc32_le() with 0xdebb20e3, the raw register after 8 bytes of 0xFF from
 *   0xFFFFFFFF, masks ip4h->tos, ip4h->ttl, ip4h->check and udph->check to all ones and
 *   `bth->qpn |= cpu_to_be32(~BTH_QPN_MASK)` (byte 4), runs crc32_le() (reflected, no
 *   inversions) over headers, payload and pad, then stores `*icrcp = ~icrc`: the complemented
 *   register written in CPU order, i.e. least significant byte first on the little-endian
 *   hosts rxe runs on. Older rxe_recv.c compared `be32_to_cpu(*icrcp)` with
 *   `cpu_to_be32(~calc_icrc)`, which holds exactly when memory has ~crc LSB first.
 * - Scapy scapy/contrib/roce.py computes zlib.crc32() over the same masked bytes and packs it
 *   with `struct.pack("!I", icrc)[::-1]`, i.e. little-endian; its test/contrib/roce.uts holds a
 *   CNP frame captured from a ConnectX-4 Lx NIC whose trailer 82 fd 00 2a is zlib CRC
 *   0x2a00fd82 stored LSB first (re-checked in tests/engine/icrc-test.cc).
 * - Wireshark epan/dissectors/packet-infiniband.c does not verify the ICRC; it shows the four
 *   bytes as a big-endian uint32 (ENC_BIG_ENDIAN), so it displays the byte-swapped value
 *   (0x82fd002a for that frame).
 *
 * IPv4 options are not covered: rxe copies only the 20-byte fixed header, and neither our
 * encapsulation nor RoCE NICs emit options.
 */

namespace metaroce
{

/**
 * Incremental CRC-32 (IEEE 802.3, zlib, PNG): reflected polynomial 0xEDB88320, initial value
 * 0xFFFFFFFF, final XOR 0xFFFFFFFF. Slicing-by-8 over compile-time tables, and on x86 CPUs
 * with PCLMULQDQ carry-less folding of 64 bytes per step for inputs of 128 bytes or more
 * (about 6x the tables' speed on a 4 KiB payload); no allocation.
 */
class Crc32
{
  public:
    /// Start a new computation.
    Crc32() = default;

    /**
     * Feed more bytes.
     * \param data the bytes (may be null if \p len is 0)
     * \param len their number
     */
    void Update(const uint8_t* data, size_t len);

    /// \return the CRC of all bytes fed since construction or the last Reset().
    uint32_t Value() const;

    /// Forget all bytes fed so far.
    void Reset();

    /**
     * One-shot CRC.
     * \param data the bytes
     * \param len their number
     * \return the CRC-32 of \p data
     */
    static uint32_t Compute(const uint8_t* data, size_t len);

  private:
    static constexpr uint32_t INITIAL_STATE = 0xffffffff; //!< register value before any byte

    uint32_t m_state{INITIAL_STATE}; //!< CRC register before the final XOR
};

/**
 * Compute the RoCEv2 ICRC of an IPv4 packet from its actual headers.
 *
 * \param ipv4Header20 the first 20 bytes of the IPv4 header as on the wire (options ignored)
 * \param udpHeader8 the UDP header as on the wire
 * \param bth start of the BTH (the UDP payload)
 * \param bthToPayloadEndLen bytes from the BTH to the end of the pad, the ICRC excluded
 * \return the ICRC value; put it on the wire with StoreIcrc()
 */
uint32_t ComputeIcrcIpv4(const uint8_t* ipv4Header20,
                         const uint8_t* udpHeader8,
                         const uint8_t* bth,
                         size_t bthToPayloadEndLen);

/**
 * Compute the ICRC of a datagram as it will be sent by EncapsulateFrame(): the canonical IPv4
 * and UDP headers are rebuilt from \p meta (metaroce-encap.h) for a UDP payload of
 * lenWithoutIcrc + ICRC_SIZE bytes.
 *
 * \param meta the datagram's addresses, ports and traffic class
 * \param datagram start of the BTH
 * \param lenWithoutIcrc bytes from the BTH to the end of the pad
 * \return the ICRC value, or 0 if the datagram is longer than any IPv4 packet can carry
 */
uint32_t ComputeDatagramIcrc(const DatagramMeta& meta,
                             const uint8_t* datagram,
                             size_t lenWithoutIcrc);

/**
 * Check the ICRC trailer of a received datagram against its actual headers.
 *
 * \param ipv4Header20 the first 20 bytes of the IPv4 header as received
 * \param udpHeader8 the UDP header as received
 * \param datagram the UDP payload, ICRC included
 * \param datagramLen its length
 * \return true if the last ICRC_SIZE bytes hold the ICRC of the rest
 */
bool CheckIcrcIpv4(const uint8_t* ipv4Header20,
                   const uint8_t* udpHeader8,
                   const uint8_t* datagram,
                   size_t datagramLen);

/**
 * Check the ICRC trailer of a datagram against the canonical headers rebuilt from \p meta.
 * Valid for datagrams that travelled in our encapsulation (the fields switches change are
 * masked); use CheckIcrcIpv4() for frames from other senders.
 *
 * \param meta the datagram's addresses and ports
 * \param datagram the UDP payload, ICRC included
 * \param datagramLen its length
 * \return true if the last ICRC_SIZE bytes hold the ICRC of the rest
 */
bool CheckDatagramIcrc(const DatagramMeta& meta, const uint8_t* datagram, size_t datagramLen);

/**
 * Write an ICRC in wire order (least significant byte first).
 * \param dst4 destination of the ICRC_SIZE bytes
 * \param icrc the value from ComputeIcrcIpv4() or ComputeDatagramIcrc()
 */
void StoreIcrc(uint8_t* dst4, uint32_t icrc);

/**
 * Read an ICRC in wire order (least significant byte first).
 * \param src4 the ICRC_SIZE trailer bytes
 * \return the ICRC value
 */
uint32_t LoadIcrc(const uint8_t* src4);

} // namespace metaroce

#endif // METAROCE_ICRC_H
