/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#include "metaroce-icrc.h"

#include "metaroce-encap.h"

#include <array>
#include <cstring>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define METAROCE_CRC_CLMUL 1
#include <immintrin.h>
#endif

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

/// \return \p crc (the register) after \p len bytes at \p data, slicing by 8.
uint32_t
UpdateBySlicing(uint32_t crc, const uint8_t* data, size_t len)
{
    const auto& t = CRC_TABLES;
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
    return crc;
}

#ifdef METAROCE_CRC_CLMUL

/*
 * Folding with carry-less multiplication (x86 PCLMULQDQ), for long inputs. The input is read
 * 16 bytes at a time as 128-bit blocks. In a block, bit i (bit i % 8 of byte i / 8) is the
 * i-th bit the reflected CRC consumes, the coefficient of x^(127 - i) of the block read as a
 * polynomial B(x), whose low quadword Q0 holds x^127..x^64 and high quadword Q1 x^63..x^0.
 * A block A that starts D bits before a block B contributes A(x) x^D to B's place; modulo P,
 * that is Q0(x) x^(D + 64) + Q1(x) x^D, and each power can be replaced by its remainder
 * modulo P (degree < 32). Multiplying two reflected quadwords carry-lessly yields the reflected
 * product one bit short (bit k is the coefficient of x^(126 - k) instead of x^(127 - k)), so
 * the constants are the remainders of x^(D + 63) and x^(D - 1), each placed as a reflected
 * quadword (coefficient of x^d at bit 63 - d). The folded result is congruent modulo P to
 * the input with the register added to its first 32 bits, so the register's CRC of those
 * last 16 bytes, from a zero register, is the CRC of the whole input.
 */

/// \return x^n modulo the CRC-32 polynomial, as a 32-bit polynomial (not reflected).
constexpr uint32_t
XPowModP(uint32_t n)
{
    uint64_t r = 1;
    for (uint32_t i = 0; i < n; ++i)
    {
        r <<= 1;
        if (r & (uint64_t(1) << 32))
        {
            r ^= 0x104c11db7;
        }
    }
    return uint32_t(r);
}

/// \return the fold constant for x^n: x^n mod P as a reflected quadword.
constexpr uint64_t
FoldConstant(uint32_t n)
{
    const uint32_t p = XPowModP(n);
    uint64_t k = 0;
    for (int d = 0; d < 32; ++d)
    {
        if ((p >> d) & 1)
        {
            k |= uint64_t(1) << (63 - d);
        }
    }
    return k;
}

/// Fold constants over 512 bits (four blocks in parallel) and 128 bits (one block).
constexpr uint64_t FOLD512_Q0 = FoldConstant(512 + 63);
constexpr uint64_t FOLD512_Q1 = FoldConstant(512 - 1);
constexpr uint64_t FOLD128_Q0 = FoldConstant(128 + 63);
constexpr uint64_t FOLD128_Q1 = FoldConstant(128 - 1);

/// Inputs shorter than this take the tables (the folding's set-up does not pay).
constexpr size_t CLMUL_MIN_BYTES = 128;

/// \return \p x (a block D bits before the next) moved D bits on, with \p k D's constants.
__attribute__((target("pclmul,sse2"))) inline __m128i
Fold(__m128i x, __m128i k)
{
    return _mm_xor_si128(_mm_clmulepi64_si128(x, k, 0x00), _mm_clmulepi64_si128(x, k, 0x11));
}

/**
 * Fold \p len (>= 64) bytes at \p data, with the register \p crc added to the first 32 bits,
 * into one block. \return the bytes consumed (a multiple of 16); \p out gets the block.
 */
__attribute__((target("pclmul,sse2"))) size_t
FoldBlocks(uint32_t crc, const uint8_t* data, size_t len, uint8_t out[16])
{
    const uint8_t* p = data;
    const auto load = [](const uint8_t* at) {
        return _mm_loadu_si128(reinterpret_cast<const __m128i*>(at));
    };
    __m128i x0 = _mm_xor_si128(load(p), _mm_cvtsi32_si128(int(crc)));
    __m128i x1 = load(p + 16);
    __m128i x2 = load(p + 32);
    __m128i x3 = load(p + 48);
    p += 64;
    len -= 64;
    const __m128i k512 = _mm_set_epi64x(int64_t(FOLD512_Q1), int64_t(FOLD512_Q0));
    while (len >= 64)
    {
        x0 = _mm_xor_si128(Fold(x0, k512), load(p));
        x1 = _mm_xor_si128(Fold(x1, k512), load(p + 16));
        x2 = _mm_xor_si128(Fold(x2, k512), load(p + 32));
        x3 = _mm_xor_si128(Fold(x3, k512), load(p + 48));
        p += 64;
        len -= 64;
    }
    const __m128i k128 = _mm_set_epi64x(int64_t(FOLD128_Q1), int64_t(FOLD128_Q0));
    __m128i x = _mm_xor_si128(Fold(x0, k128), x1);
    x = _mm_xor_si128(Fold(x, k128), x2);
    x = _mm_xor_si128(Fold(x, k128), x3);
    while (len >= 16)
    {
        x = _mm_xor_si128(Fold(x, k128), load(p));
        p += 16;
        len -= 16;
    }
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out), x);
    return size_t(p - data);
}

/// \return true if this CPU has PCLMULQDQ (asked once).
bool
HaveClmul()
{
    static const bool have = []() {
        __builtin_cpu_init();
        return __builtin_cpu_supports("pclmul") != 0;
    }();
    return have;
}

#endif // METAROCE_CRC_CLMUL

} // namespace

void
Crc32::Update(const uint8_t* data, size_t len)
{
#ifdef METAROCE_CRC_CLMUL
    if (len >= CLMUL_MIN_BYTES && HaveClmul())
    {
        uint8_t folded[16];
        const size_t used = FoldBlocks(m_state, data, len, folded);
        m_state =
            UpdateBySlicing(UpdateBySlicing(0, folded, sizeof(folded)), data + used, len - used);
        return;
    }
#endif
    m_state = UpdateBySlicing(m_state, data, len);
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
