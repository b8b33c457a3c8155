/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

// CRC-32 and RoCEv2 ICRC: standard check values, known-answer vectors computed outside this
// code base, masking rules and the wire byte order.

#include "metaroce-encap.h"
#include "metaroce-icrc.h"

#include <cstring>
#include <gtest/gtest.h>
#include <memory>
#include <random>
#include <vector>

namespace
{

using namespace metaroce;

/// Bit-at-a-time CRC-32, written straight from the definition, as an oracle for the tables.
uint32_t
ReferenceCrc32(const uint8_t* data, size_t len)
{
    uint32_t crc = 0xffffffff;
    for (size_t i = 0; i < len; ++i)
    {
        crc ^= data[i];
        for (int bit = 0; bit < 8; ++bit)
        {
            crc = (crc >> 1) ^ (0xedb88320 & (0u - (crc & 1)));
        }
    }
    return ~crc;
}

std::vector<uint8_t>
RandomBytes(size_t len, uint32_t seed)
{
    std::mt19937 rng(seed);
    std::vector<uint8_t> bytes(len);
    for (auto& b : bytes)
    {
        b = static_cast<uint8_t>(rng());
    }
    return bytes;
}

/*
 * RoCE CNP frame captured on a ConnectX-4 Lx NIC, from Scapy's test suite
 * (secdev/scapy, test/contrib/roce.uts, "RoCE CNP captured on ConnectX-4 Lx"). 74 bytes:
 * Ethernet, IPv4 (TOS 0xc2, ID 0x718c, DF, TTL 64), UDP 0 -> 4791 (checksum 0), BTH opcode
 * 0x81 with BECN set in byte 4, 16 reserved bytes, and the hardware's ICRC 82 fd 00 2a.
 * The CRC-32 of the masked bytes is 0x2a00fd82 (checked with Python's zlib.crc32), so the
 * NIC stores it least significant byte first.
 */
const uint8_t CX4_CNP_FRAME[] = {
    0xe4, 0x1d, 0x2d, 0xab, 0x2b, 0xc2, 0x7c, 0xfe, 0x90, 0x64, 0x3b, 0x32, 0x08, 0x00, 0x45,
    0xc2, 0x00, 0x3c, 0x71, 0x8c, 0x40, 0x00, 0x40, 0x11, 0x91, 0x61, 0x0a, 0x00, 0x11, 0x01,
    0x0a, 0x00, 0x12, 0x01, 0x00, 0x00, 0x12, 0xb7, 0x00, 0x28, 0x00, 0x00, 0x81, 0x00, 0xff,
    0xff, 0x40, 0x00, 0x01, 0x18, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x82, 0xfd, 0x00, 0x2a,
};
constexpr uint32_t CX4_CNP_ICRC = 0x2a00fd82;

/*
 * A frame built by hand in Python 3 (no code shared with the engine), in our canonical
 * encapsulation: 02:00:00:00:00:01 -> 02:00:00:00:00:02, 10.0.0.1 -> 10.0.1.2, UDP
 * 0xc123 -> 4791, DSCP 26, ECT(0); BTH RC RDMA WRITE ONLY (M=1, pad 3, FECN set, QP 0x123,
 * AckReq, PSN 0x456), RETH (VA 0x7f0012345000, rkey 0x11223344, length 37), 37 payload bytes
 * 0x30.. and 3 pad bytes. Expected ICRC 0x5f2aa1d8, computed by:
 *
 *   dg = bth + reth + bytes(range(0x30, 0x30 + 37)) + b'\0' * 3
 *   ip = struct.pack('!BBHHHBBH4s4s', 0x45, 26 << 2 | 2, 20 + 8 + len(dg) + 4, 0, 0x4000,
 *                    64, 17, csum, bytes([10, 0, 0, 1]), bytes([10, 0, 1, 2]))
 *   udp = struct.pack('!HHHH', 0xc123, 4791, 8 + len(dg) + 4, 0)
 *   # mask: ip[1], ip[8], ip[10:12], udp[6:8], dg[4] = 0xff
 *   icrc = zlib.crc32(b'\xff' * 8 + ip_masked + udp_masked + dg_masked)
 *   frame = eth + ip + udp + dg + struct.pack('<I', icrc)
 *
 * (csum is the RFC 1071 checksum computed in the same script.)
 */
const uint8_t PYTHON_FRAME[] = {
    0x02, 0x00, 0x00, 0x00, 0x00, 0x02, 0x02, 0x00, 0x00, 0x00, 0x00, 0x01, 0x08, 0x00, 0x45,
    0x6a, 0x00, 0x64, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11, 0x25, 0x1d, 0x0a, 0x00, 0x00, 0x01,
    0x0a, 0x00, 0x01, 0x02, 0xc1, 0x23, 0x12, 0xb7, 0x00, 0x50, 0x00, 0x00, 0x0a, 0x70, 0xff,
    0xff, 0x80, 0x00, 0x01, 0x23, 0x80, 0x00, 0x04, 0x56, 0x00, 0x00, 0x7f, 0x00, 0x12, 0x34,
    0x50, 0x00, 0x11, 0x22, 0x33, 0x44, 0x00, 0x00, 0x00, 0x25, 0x30, 0x31, 0x32, 0x33, 0x34,
    0x35, 0x36, 0x37, 0x38, 0x39, 0x3a, 0x3b, 0x3c, 0x3d, 0x3e, 0x3f, 0x40, 0x41, 0x42, 0x43,
    0x44, 0x45, 0x46, 0x47, 0x48, 0x49, 0x4a, 0x4b, 0x4c, 0x4d, 0x4e, 0x4f, 0x50, 0x51, 0x52,
    0x53, 0x54, 0x00, 0x00, 0x00, 0xd8, 0xa1, 0x2a, 0x5f,
};
constexpr uint32_t PYTHON_ICRC = 0x5f2aa1d8;
constexpr size_t PYTHON_DATAGRAM_LEN = sizeof(PYTHON_FRAME) - FRAME_HEADERS_SIZE;

DatagramMeta
PythonFrameMeta()
{
    DatagramMeta meta;
    meta.srcIp = 0x0a000001;
    meta.dstIp = 0x0a000102;
    meta.srcPort = 0xc123;
    meta.dstPort = ROCE_UDP_PORT;
    meta.dscp = 26;
    meta.ecn = Ecn::ECT0;
    return meta;
}

TEST(Crc32, StandardCheckValue)
{
    const char* check = "123456789";
    EXPECT_EQ(Crc32::Compute(reinterpret_cast<const uint8_t*>(check), 9), 0xcbf43926u);
    EXPECT_EQ(Crc32::Compute(nullptr, 0), 0u);
}

TEST(Crc32, RxeSeedIsEightBytesOfOnes)
{
    // rxe starts crc32_le() from 0xdebb20e3: the raw register after the masked pseudo-LRH.
    const uint8_t ones[8] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
    EXPECT_EQ(Crc32::Compute(ones, sizeof(ones)) ^ 0xffffffffu, 0xdebb20e3u);
}

TEST(Crc32, MatchesBitwiseReferenceAtEveryLengthAndAlignment)
{
    const auto bytes = RandomBytes(300, 1);
    for (size_t offset = 0; offset < 8; ++offset)
    {
        for (size_t len = 0; len + offset <= bytes.size(); len += (len < 40 ? 1 : 13))
        {
            ASSERT_EQ(Crc32::Compute(bytes.data() + offset, len),
                      ReferenceCrc32(bytes.data() + offset, len))
                << "offset " << offset << " len " << len;
        }
    }
}

TEST(Crc32, LongInputsMatchTheBitwiseReferenceWhateverTheRegister)
{
    // From 128 bytes on, x86 CPUs with PCLMULQDQ fold 64 bytes at a time (metaroce-icrc.cc):
    // every length up to 1,100 and a jumbo frame, at several alignments, from several
    // registers (a first piece of each length before it).
    const auto bytes = RandomBytes(9100, 3);
    for (size_t offset : {size_t(0), size_t(1), size_t(7)})
    {
        for (size_t len = 0; len + offset <= 1100; ++len)
        {
            ASSERT_EQ(Crc32::Compute(bytes.data() + offset, len),
                      ReferenceCrc32(bytes.data() + offset, len))
                << "offset " << offset << " len " << len;
        }
        ASSERT_EQ(Crc32::Compute(bytes.data() + offset, 9000),
                  ReferenceCrc32(bytes.data() + offset, 9000));
    }
    for (size_t first : {size_t(1), size_t(4), size_t(33), size_t(200)})
    {
        for (size_t len = 100; len < 700; len += 7)
        {
            Crc32 crc;
            crc.Update(bytes.data(), first);
            crc.Update(bytes.data() + first, len);
            ASSERT_EQ(crc.Value(), ReferenceCrc32(bytes.data(), first + len))
                << "first " << first << " len " << len;
        }
    }
}

TEST(Crc32, IncrementalEqualsOneShot)
{
    const auto bytes = RandomBytes(200, 2);
    const uint32_t expected = Crc32::Compute(bytes.data(), bytes.size());
    for (size_t split = 0; split <= bytes.size(); ++split)
    {
        Crc32 crc;
        crc.Update(bytes.data(), split);
        crc.Update(bytes.data() + split, bytes.size() - split);
        ASSERT_EQ(crc.Value(), expected) << "split " << split;
    }
    Crc32 crc;
    crc.Update(bytes.data(), 17);
    crc.Reset();
    crc.Update(bytes.data(), bytes.size());
    EXPECT_EQ(crc.Value(), expected);
}

TEST(Icrc, WireOrderIsLeastSignificantByteFirst)
{
    uint8_t wire[ICRC_SIZE];
    StoreIcrc(wire, CX4_CNP_ICRC);
    const uint8_t expected[ICRC_SIZE] = {0x82, 0xfd, 0x00, 0x2a};
    EXPECT_EQ(std::memcmp(wire, expected, ICRC_SIZE), 0);
    EXPECT_EQ(LoadIcrc(wire), CX4_CNP_ICRC);
}

TEST(Icrc, ConnectX4CapturedCnp)
{
    ParsedFrame parsed;
    ASSERT_EQ(ParseFrame(CX4_CNP_FRAME, sizeof(CX4_CNP_FRAME), parsed), FrameStatus::OK);
    ASSERT_EQ(parsed.datagramLen, 32u);
    const uint8_t* udp = parsed.datagram - UDP_HEADER_SIZE;
    EXPECT_EQ(ComputeIcrcIpv4(parsed.ipHeader, udp, parsed.datagram, parsed.datagramLen - 4),
              CX4_CNP_ICRC);
    EXPECT_EQ(LoadIcrc(parsed.datagram + parsed.datagramLen - 4), CX4_CNP_ICRC);
    EXPECT_TRUE(CheckIcrcIpv4(parsed.ipHeader, udp, parsed.datagram, parsed.datagramLen));
    // The NIC used IP identification 0x718c, not our canonical 0: the ICRC covers it, so the
    // canonical check must reject this frame.
    EXPECT_FALSE(CheckDatagramIcrc(parsed.meta, parsed.datagram, parsed.datagramLen));
}

TEST(Icrc, PythonVectorFromHeaders)
{
    const uint8_t* ip = PYTHON_FRAME + ETHERNET_HEADER_SIZE;
    const uint8_t* udp = ip + IPV4_HEADER_SIZE;
    const uint8_t* datagram = udp + UDP_HEADER_SIZE;
    EXPECT_EQ(ComputeIcrcIpv4(ip, udp, datagram, PYTHON_DATAGRAM_LEN - ICRC_SIZE), PYTHON_ICRC);
    EXPECT_TRUE(CheckIcrcIpv4(ip, udp, datagram, PYTHON_DATAGRAM_LEN));
}

TEST(Icrc, PythonVectorFromMetaOnly)
{
    const uint8_t* datagram = PYTHON_FRAME + FRAME_HEADERS_SIZE;
    const DatagramMeta meta = PythonFrameMeta();
    EXPECT_EQ(ComputeDatagramIcrc(meta, datagram, PYTHON_DATAGRAM_LEN - ICRC_SIZE), PYTHON_ICRC);
    EXPECT_TRUE(CheckDatagramIcrc(meta, datagram, PYTHON_DATAGRAM_LEN));
    // ECN and DSCP are masked: a CE mark on the way must not break the check.
    DatagramMeta marked = meta;
    marked.ecn = Ecn::CE;
    marked.dscp = 0;
    EXPECT_TRUE(CheckDatagramIcrc(marked, datagram, PYTHON_DATAGRAM_LEN));
    DatagramMeta otherPort = meta;
    otherPort.srcPort ^= 1;
    EXPECT_FALSE(CheckDatagramIcrc(otherPort, datagram, PYTHON_DATAGRAM_LEN));
}

TEST(Icrc, EncapsulationEmitsTheCanonicalHeadersTheIcrcAssumes)
{
    // Sealing the datagram with ComputeDatagramIcrc() and encapsulating it must reproduce the
    // independently built frame byte for byte.
    std::vector<uint8_t> datagram(PYTHON_FRAME + FRAME_HEADERS_SIZE,
                                  PYTHON_FRAME + sizeof(PYTHON_FRAME));
    const size_t bodyLen = datagram.size() - ICRC_SIZE;
    std::memset(datagram.data() + bodyLen, 0, ICRC_SIZE);
    const DatagramMeta meta = PythonFrameMeta();
    StoreIcrc(datagram.data() + bodyLen, ComputeDatagramIcrc(meta, datagram.data(), bodyLen));

    MacAddress src{{0x02, 0x00, 0x00, 0x00, 0x00, 0x01}};
    MacAddress dst{{0x02, 0x00, 0x00, 0x00, 0x00, 0x02}};
    uint8_t frame[sizeof(PYTHON_FRAME)];
    ASSERT_EQ(
        EncapsulateFrame(frame, sizeof(frame), src, dst, meta, datagram.data(), datagram.size()),
        sizeof(PYTHON_FRAME));
    EXPECT_EQ(std::memcmp(frame, PYTHON_FRAME, sizeof(PYTHON_FRAME)), 0);
}

TEST(Icrc, MaskedFieldsDoNotCountOthersDo)
{
    uint8_t frame[sizeof(PYTHON_FRAME)];
    std::memcpy(frame, PYTHON_FRAME, sizeof(frame));
    uint8_t* ip = frame + ETHERNET_HEADER_SIZE;
    uint8_t* udp = ip + IPV4_HEADER_SIZE;
    uint8_t* bth = udp + UDP_HEADER_SIZE;
    const size_t len = PYTHON_DATAGRAM_LEN - ICRC_SIZE;

    const size_t maskedIp[] = {IPV4_TOS_OFFSET,
                               IPV4_TTL_OFFSET,
                               IPV4_CHECKSUM_OFFSET,
                               IPV4_CHECKSUM_OFFSET + 1};
    for (size_t offset : maskedIp)
    {
        ip[offset] ^= 0x5a;
    }
    udp[UDP_CHECKSUM_OFFSET] ^= 0x5a;
    udp[UDP_CHECKSUM_OFFSET + 1] ^= 0xa5;
    bth[4] ^= 0xc0; // FECN and BECN
    EXPECT_EQ(ComputeIcrcIpv4(ip, udp, bth, len), PYTHON_ICRC);

    // Every other byte from the IPv4 header to the end of the pad is covered.
    for (size_t i = 0; i < IPV4_UDP_HEADERS_SIZE + len; ++i)
    {
        uint8_t* byte = ip + i;
        const bool masked =
            i == IPV4_TOS_OFFSET || i == IPV4_TTL_OFFSET || i == IPV4_CHECKSUM_OFFSET ||
            i == IPV4_CHECKSUM_OFFSET + 1 || i == IPV4_HEADER_SIZE + UDP_CHECKSUM_OFFSET ||
            i == IPV4_HEADER_SIZE + UDP_CHECKSUM_OFFSET + 1 || i == IPV4_UDP_HEADERS_SIZE + 4;
        *byte ^= 0x01;
        EXPECT_EQ(ComputeIcrcIpv4(ip, udp, bth, len) == PYTHON_ICRC, masked) << "byte " << i;
        *byte ^= 0x01;
    }
}

TEST(Icrc, MatchesMaskedReferenceAtEveryLength)
{
    // Exact-size heap buffers let AddressSanitizer catch any read past the end, including
    // datagrams shorter than a BTH.
    const auto headers = RandomBytes(IPV4_UDP_HEADERS_SIZE, 3);
    const auto body = RandomBytes(100, 4);
    for (size_t len = 0; len <= body.size(); ++len)
    {
        auto bth = std::make_unique<uint8_t[]>(len);
        std::memcpy(bth.get(), body.data(), len);

        // Pseudo-LRH, then TOS, TTL, IPv4 checksum, UDP checksum and BTH byte 4 as all ones.
        std::vector<uint8_t> masked(8, 0xff);
        masked.insert(masked.end(), headers.begin(), headers.end());
        masked.insert(masked.end(), body.data(), body.data() + len);
        const size_t maskedOffsets[] = {8 + 1, 8 + 8, 8 + 10, 8 + 11, 8 + 26, 8 + 27, 8 + 28 + 4};
        for (size_t i : maskedOffsets)
        {
            if (i < masked.size())
            {
                masked[i] = 0xff;
            }
        }
        ASSERT_EQ(
            ComputeIcrcIpv4(headers.data(), headers.data() + IPV4_HEADER_SIZE, bth.get(), len),
            ReferenceCrc32(masked.data(), masked.size()))
            << "len " << len;
    }
    EXPECT_FALSE(CheckIcrcIpv4(headers.data(), headers.data() + IPV4_HEADER_SIZE, body.data(), 3));
    EXPECT_FALSE(CheckDatagramIcrc(PythonFrameMeta(), body.data(), 3));
}

TEST(Icrc, OversizeDatagramIsRejected)
{
    const uint8_t byte = 0;
    EXPECT_EQ(ComputeDatagramIcrc(PythonFrameMeta(), &byte, MAX_DATAGRAM_SIZE), 0u);
    EXPECT_FALSE(CheckDatagramIcrc(PythonFrameMeta(), &byte, MAX_DATAGRAM_SIZE + 1));
}

} // namespace
