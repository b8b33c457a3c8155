/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#include "metaroce-icrc.h"

#include "metaroce-encap.h"

#include <array>
#include <cstring>

namespace metaroce
{

namespace
{

/// Reflected form of the IEEE 802.3 CRC-32 polynomial 0x04C11DB7.
constexpr uint32_t CRC32_POLYNOMIAL_REFLECTED = 0xedb88320;
/// Initial register value and final XOR of CRC-32.
constexpr uint32_t CRC32_ALL_ONES = 0xffffffff;
/// Bytes consumed per step of the slicing-by-8 loop.
constexpr size_t SLICE_WIDTH = 8;

/// Size of the masked pseudo-LRH that starts the ICRC input.
constexpr size_t ICRC_MASKED_LRH_SIZE = 8;
/// Size of the BTH.
constexpr size_t ICRC_BTH_SIZE = 12;
/// Offset of the BTH byte holding FECN, BECN and Resv6a, which the ICRC masks.
constexpr size_t ICRC_BTH_MASKED_OFFSET = 4;

/// Slicing-by-8 tables: row 0 is the byte-wise table; row k advances a byte k more zero bytes.
using CrcTables = std::array<std::array<uint32_t, 256>, SLICE_WIDTH>;

/// \return the slicing-by-8 tables, computed at compile time.
constexpr CrcTables
MakeCrcTables()
{
    CrcTables tables{};
    for (uint32_t i = 0; i < 256; ++i)
    {
        uint32_t crc = i;
        for (int bit = 0; bit < 8; ++bit)
        {
            crc = (crc & 1) ? (crc >> 1) ^ CRC32_POLYNOMIAL_REFLECTED : crc >> 1;
        }
        tables[0][i] = crc;
    }
    for (size_t k = 1; k < SLICE_WIDTH; ++k)
    {
        for (size_t i = 0; i < 256; ++i)
        {
            const uint32_t prev = tables[k - 1][i];
            tables[k][i] = (prev >> 8) ^ tables[0][prev & 0xff];
        }
    }
    return tables;
}

/// The tables: immutable, built by the compiler.
constexpr CrcTables CRC_TABLES = MakeCrcTables();

} // namespace

void
Crc32::Update(const uint8_t* data, size_t len)
{
    const auto& t = CRC_TABLES;
    uint32_t crc = m_state;
    // Bytes are assembled explicitly so the result does not depend on host byte order or
    // alignment; compilers turn this into a single load on little-endian targets.
    while (len >= SLICE_WIDTH)
    {
        const uint32_t low = crc ^ (uint32_t(data[0]) | (uint32_t(data[1]) << 8) |
                                    (uint32_t(data[2]) << 16) | (uint32_t(data[3]) << 24));
        crc = t[7][low & 0xff] ^ t[6][(low >> 8) & 0xff] ^ t[5][(low >> 16) & 0xff] ^
              t[4][low >> 24] ^ t[3][data[4]] ^ t[2][data[5]] ^ t[1][data[6]] ^ t[0][data[7]];
        data += SLICE_WIDTH;
        len -= SLICE_WIDTH;
    }
    for (size_t i = 0; i < len; ++i)
    {
        crc = (crc >> 8) ^ t[0][(crc ^ data[i]) & 0xff];
    }
    m_state = crc;
}

uint32_t
Crc32::Value() const
{
    return m_state ^ CRC32_ALL_ONES;
}

void
Crc32::Reset()
{
    m_state = INITIAL_STATE;
}

uint32_t
Crc32::Compute(const uint8_t* data, size_t len)
{
    Crc32 crc;
    crc.Update(data, len);
    return crc.Value();
}

uint32_t
ComputeIcrcIpv4(const uint8_t* ipv4Header20,
                const uint8_t* udpHeader8,
                const uint8_t* bth,
                size_t bthToPayloadEndLen)
{
    // Masked copy of everything up to the end of the BTH, fed in one call.
    uint8_t masked[ICRC_MASKED_LRH_SIZE + IPV4_UDP_HEADERS_SIZE + ICRC_BTH_SIZE];
    uint8_t* ip = masked + ICRC_MASKED_LRH_SIZE;
    uint8_t* udp = ip + IPV4_HEADER_SIZE;
    uint8_t* maskedBth = udp + UDP_HEADER_SIZE;
    const size_t bthLen = bthToPayloadEndLen < ICRC_BTH_SIZE ? bthToPayloadEndLen : ICRC_BTH_SIZE;

    std::memset(masked, 0xff, ICRC_MASKED_LRH_SIZE);
    std::memcpy(ip, ipv4Header20, IPV4_HEADER_SIZE);
    ip[IPV4_TOS_OFFSET] = 0xff;
    ip[IPV4_TTL_OFFSET] = 0xff;
    ip[IPV4_CHECKSUM_OFFSET] = 0xff;
    ip[IPV4_CHECKSUM_OFFSET + 1] = 0xff;
    std::memcpy(udp, udpHeader8, UDP_HEADER_SIZE);
    udp[UDP_CHECKSUM_OFFSET] = 0xff;
    udp[UDP_CHECKSUM_OFFSET + 1] = 0xff;
    if (bthLen > 0)
    {
        std::memcpy(maskedBth, bth, bthLen);
    }
    if (bthLen > ICRC_BTH_MASKED_OFFSET)
    {
        maskedBth[ICRC_BTH_MASKED_OFFSET] = 0xff;
    }

    Crc32 crc;
    crc.Update(masked, ICRC_MASKED_LRH_SIZE + IPV4_UDP_HEADERS_SIZE + bthLen);
    crc.Update(bth + bthLen, bthToPayloadEndLen - bthLen);
    return crc.Value();
}

uint32_t
ComputeDatagramIcrc(const DatagramMeta& meta, const uint8_t* datagram, size_t lenWithoutIcrc)
{
    uint8_t headers[IPV4_UDP_HEADERS_SIZE];
    if (lenWithoutIcrc > MAX_DATAGRAM_SIZE - ICRC_SIZE ||
        !WriteIpv4UdpHeaders(headers, meta, lenWithoutIcrc + ICRC_SIZE))
    {
        return 0;
    }
    return ComputeIcrcIpv4(headers, headers + IPV4_HEADER_SIZE, datagram, lenWithoutIcrc);
}

bool
CheckIcrcIpv4(const uint8_t* ipv4Header20,
              const uint8_t* udpHeader8,
              const uint8_t* datagram,
              size_t datagramLen)
{
    if (datagramLen < ICRC_SIZE)
    {
        return false;
    }
    const size_t len = datagramLen - ICRC_SIZE;
    return ComputeIcrcIpv4(ipv4Header20, udpHeader8, datagram, len) == LoadIcrc(datagram + len);
}

bool
CheckDatagramIcrc(const DatagramMeta& meta, const uint8_t* datagram, size_t datagramLen)
{
    uint8_t headers[IPV4_UDP_HEADERS_SIZE];
    if (datagramLen < ICRC_SIZE || !WriteIpv4UdpHeaders(headers, meta, datagramLen))
    {
        return false;
    }
    return CheckIcrcIpv4(headers, headers + IPV4_HEADER_SIZE, datagram, datagramLen);
}

void
StoreIcrc(uint8_t* dst4, uint32_t icrc)
{
    dst4[0] = uint8_t(icrc);
    dst4[1] = uint8_t(icrc >> 8);
    dst4[2] = uint8_t(icrc >> 16);
    dst4[3] = uint8_t(icrc >> 24);
}

uint32_t
LoadIcrc(const uint8_t* src4)
{
    return uint32_t(src4[0]) | (uint32_t(src4[1]) << 8) | (uint32_t(src4[2]) << 16) |
           (uint32_t(src4[3]) << 24);
}

} // namespace metaroce
