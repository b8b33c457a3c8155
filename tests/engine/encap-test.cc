/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

// Ethernet/IPv4/UDP encapsulation: round trips, canonical header values, checksums, in-place
// ECN marking and the checked parser on malformed input.

#include "metaroce-byte-order.h"
#include "metaroce-encap.h"

#include <algorithm>
#include <cstring>
#include <gtest/gtest.h>
#include <memory>
#include <random>
#include <string>
#include <vector>

namespace
{

using namespace metaroce;

const MacAddress SRC_MAC{{0x02, 0x11, 0x22, 0x33, 0x44, 0x55}};
const MacAddress DST_MAC{{0x02, 0x66, 0x77, 0x88, 0x99, 0xaa}};

DatagramMeta
MakeMeta(Ecn ecn = Ecn::ECT0, uint8_t dscp = 26)
{
    DatagramMeta meta;
    meta.srcIp = 0x0a000001;
    meta.dstIp = 0xc0a80102;
    meta.srcPort = 0xc123;
    meta.dstPort = ROCE_UDP_PORT;
    meta.ecn = ecn;
    meta.dscp = dscp;
    return meta;
}

std::vector<uint8_t>
MakeDatagram(size_t len, uint32_t seed = 7)
{
    std::mt19937 rng(seed);
    std::vector<uint8_t> bytes(len);
    for (auto& b : bytes)
    {
        b = static_cast<uint8_t>(rng());
    }
    return bytes;
}

std::vector<uint8_t>
MakeFrame(const DatagramMeta& meta, const std::vector<uint8_t>& datagram)
{
    std::vector<uint8_t> frame(FRAME_HEADERS_SIZE + datagram.size());
    const size_t len = EncapsulateFrame(frame.data(),
                                        frame.size(),
                                        SRC_MAC,
                                        DST_MAC,
                                        meta,
                                        datagram.data(),
                                        datagram.size());
    EXPECT_EQ(len, frame.size());
    return frame;
}

/// Recompute the IPv4 header checksum after a test edited the header.
void
FixChecksum(uint8_t* ip)
{
    const size_t headerLen = (ip[IPV4_VERSION_IHL_OFFSET] & 0x0f) * 4;
    WriteU16(ip + IPV4_CHECKSUM_OFFSET, 0);
    WriteU16(ip + IPV4_CHECKSUM_OFFSET, InternetChecksum(ip, headerLen));
}

/// Parse a copy of exactly \p len bytes on the heap, so that overreads hit the redzone.
FrameStatus
ParseExact(const uint8_t* frame, size_t len, ParsedFrame& out)
{
    auto copy = std::make_unique<uint8_t[]>(len);
    if (len > 0)
    {
        std::memcpy(copy.get(), frame, len);
    }
    const FrameStatus status = ParseFrame(copy.get(), len, out);
    out.ipHeader = nullptr; // the copy dies here
    out.datagram = nullptr;
    return status;
}

void
ExpectSameMeta(const DatagramMeta& a, const DatagramMeta& b)
{
    EXPECT_EQ(a.srcIp, b.srcIp);
    EXPECT_EQ(a.dstIp, b.dstIp);
    EXPECT_EQ(a.srcPort, b.srcPort);
    EXPECT_EQ(a.dstPort, b.dstPort);
    EXPECT_EQ(a.ecn, b.ecn);
    EXPECT_EQ(a.dscp, b.dscp);
}

TEST(Encap, InternetChecksumKnownHeader)
{
    // The classic example header (e.g. Wikipedia, "Internet checksum"): checksum 0xb861.
    uint8_t header[IPV4_HEADER_SIZE] = {0x45, 0x00, 0x00, 0x73, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11,
                                        0xb8, 0x61, 0xc0, 0xa8, 0x00, 0x01, 0xc0, 0xa8, 0x00, 0xc7};
    EXPECT_EQ(InternetChecksum(header, sizeof(header)), 0);
    header[10] = 0;
    header[11] = 0;
    EXPECT_EQ(InternetChecksum(header, sizeof(header)), 0xb861);
    const uint8_t odd[3] = {0x01, 0x02, 0x03}; // 0x0102 + 0x0300
    EXPECT_EQ(InternetChecksum(odd, sizeof(odd)), static_cast<uint16_t>(~0x0402));
}

TEST(Encap, CanonicalHeaderValues)
{
    const auto datagram = MakeDatagram(100);
    const auto frame = MakeFrame(MakeMeta(Ecn::CE, 46), datagram);
    EXPECT_EQ(std::memcmp(frame.data() + ETHERNET_DST_OFFSET, DST_MAC.bytes, 6), 0);
    EXPECT_EQ(std::memcmp(frame.data() + ETHERNET_SRC_OFFSET, SRC_MAC.bytes, 6), 0);
    EXPECT_EQ(ReadU16(frame.data() + ETHERNET_TYPE_OFFSET), ETHERTYPE_IPV4);

    const uint8_t* ip = frame.data() + ETHERNET_HEADER_SIZE;
    EXPECT_EQ(ip[IPV4_VERSION_IHL_OFFSET], 0x45);
    EXPECT_EQ(ip[IPV4_TOS_OFFSET], (46 << 2) | 3);
    EXPECT_EQ(ReadU16(ip + IPV4_TOTAL_LENGTH_OFFSET), 20 + 8 + 100);
    EXPECT_EQ(ReadU16(ip + IPV4_IDENTIFICATION_OFFSET), 0);
    EXPECT_EQ(ReadU16(ip + IPV4_FLAGS_FRAGMENT_OFFSET), 0x4000);
    EXPECT_EQ(ip[IPV4_TTL_OFFSET], 64);
    EXPECT_EQ(ip[IPV4_PROTOCOL_OFFSET], 17);
    EXPECT_EQ(ReadU32(ip + IPV4_SRC_OFFSET), 0x0a000001u);
    EXPECT_EQ(ReadU32(ip + IPV4_DST_OFFSET), 0xc0a80102u);
    EXPECT_EQ(InternetChecksum(ip, IPV4_HEADER_SIZE), 0);

    const uint8_t* udp = ip + IPV4_HEADER_SIZE;
    EXPECT_EQ(ReadU16(udp + UDP_SRC_PORT_OFFSET), 0xc123);
    EXPECT_EQ(ReadU16(udp + UDP_DST_PORT_OFFSET), 4791);
    EXPECT_EQ(ReadU16(udp + UDP_LENGTH_OFFSET), 8 + 100);
    EXPECT_EQ(ReadU16(udp + UDP_CHECKSUM_OFFSET), 0);
    EXPECT_EQ(std::memcmp(udp + UDP_HEADER_SIZE, datagram.data(), datagram.size()), 0);
}

TEST(Encap, DscpIsMaskedToSixBits)
{
    uint8_t headers[IPV4_UDP_HEADERS_SIZE];
    ASSERT_TRUE(WriteIpv4UdpHeaders(headers, MakeMeta(Ecn::NOT_ECT, 0xff), 0));
    EXPECT_EQ(headers[IPV4_TOS_OFFSET], 0xfc);
    EXPECT_EQ(InternetChecksum(headers, IPV4_HEADER_SIZE), 0);
}

TEST(Encap, RoundTrip)
{
    const Ecn ecns[] = {Ecn::NOT_ECT, Ecn::ECT1, Ecn::ECT0, Ecn::CE};
    const size_t lengths[] = {0, 1, 7, 8, 64, 1500, 4096 + 28, MAX_DATAGRAM_SIZE};
    uint8_t dscp = 0;
    for (Ecn ecn : ecns)
    {
        for (size_t len : lengths)
        {
            DatagramMeta meta = MakeMeta(ecn, dscp);
            meta.srcIp += static_cast<uint32_t>(len);
            meta.srcPort = static_cast<uint16_t>(0xc000 + len);
            dscp = static_cast<uint8_t>((dscp + 13) & IPV4_DSCP_MAX);
            const auto datagram = MakeDatagram(len, static_cast<uint32_t>(len));
            const auto frame = MakeFrame(meta, datagram);

            ParsedFrame parsed;
            ASSERT_EQ(ParseFrame(frame.data(), frame.size(), parsed), FrameStatus::OK);
            ExpectSameMeta(parsed.meta, meta);
            EXPECT_EQ(parsed.src, SRC_MAC);
            EXPECT_EQ(parsed.dst, DST_MAC);
            EXPECT_EQ(parsed.ipHeader, frame.data() + ETHERNET_HEADER_SIZE);
            EXPECT_EQ(parsed.ipHeaderLen, IPV4_HEADER_SIZE);
            EXPECT_EQ(parsed.datagram, frame.data() + FRAME_HEADERS_SIZE);
            ASSERT_EQ(parsed.datagramLen, len);
            EXPECT_TRUE(std::equal(datagram.begin(), datagram.end(), parsed.datagram));

            // The same packet without its Ethernet header, as a TUN device delivers it.
            ParsedFrame raw;
            raw.src = SRC_MAC;
            ASSERT_EQ(ParseIpv4Udp(frame.data() + ETHERNET_HEADER_SIZE,
                                   frame.size() - ETHERNET_HEADER_SIZE,
                                   raw),
                      FrameStatus::OK);
            ExpectSameMeta(raw.meta, meta);
            EXPECT_EQ(raw.src, MacAddress{});
            EXPECT_EQ(raw.datagram, parsed.datagram);
            EXPECT_EQ(raw.datagramLen, len);
        }
    }
}

TEST(Encap, CapacityAndLengthLimits)
{
    const auto datagram = MakeDatagram(50);
    std::vector<uint8_t> out(FRAME_HEADERS_SIZE + datagram.size());
    const DatagramMeta meta = MakeMeta();
    EXPECT_EQ(EncapsulateFrame(out.data(),
                               out.size() - 1,
                               SRC_MAC,
                               DST_MAC,
                               meta,
                               datagram.data(),
                               datagram.size()),
              0u);
    EXPECT_EQ(EncapsulateFrame(out.data(), 0, SRC_MAC, DST_MAC, meta, datagram.data(), 0), 0u);
    EXPECT_EQ(EncapsulateFrame(out.data(), FRAME_HEADERS_SIZE, SRC_MAC, DST_MAC, meta, nullptr, 0),
              FRAME_HEADERS_SIZE);
    EXPECT_EQ(EncapsulateFrame(out.data(),
                               out.size(),
                               SRC_MAC,
                               DST_MAC,
                               meta,
                               datagram.data(),
                               datagram.size()),
              out.size());

    std::vector<uint8_t> huge(MAX_DATAGRAM_SIZE + 1);
    std::vector<uint8_t> big(FRAME_HEADERS_SIZE + huge.size());
    EXPECT_EQ(
        EncapsulateFrame(big.data(), big.size(), SRC_MAC, DST_MAC, meta, huge.data(), huge.size()),
        0u);
    uint8_t headers[IPV4_UDP_HEADERS_SIZE] = {};
    EXPECT_FALSE(WriteIpv4UdpHeaders(headers, meta, MAX_DATAGRAM_SIZE + 1));
    EXPECT_TRUE(WriteIpv4UdpHeaders(headers, meta, MAX_DATAGRAM_SIZE));
    EXPECT_EQ(ReadU16(headers + IPV4_TOTAL_LENGTH_OFFSET), 0xffff);
}

TEST(Encap, DatagramBuiltInPlace)
{
    const auto datagram = MakeDatagram(80);
    std::vector<uint8_t> out(FRAME_HEADERS_SIZE + datagram.size());
    std::memcpy(out.data() + FRAME_HEADERS_SIZE, datagram.data(), datagram.size());
    ASSERT_EQ(EncapsulateFrame(out.data(),
                               out.size(),
                               SRC_MAC,
                               DST_MAC,
                               MakeMeta(),
                               out.data() + FRAME_HEADERS_SIZE,
                               datagram.size()),
              out.size());
    EXPECT_EQ(out, MakeFrame(MakeMeta(), datagram));

    // Overlapping the header area (datagram staged at the buffer start) also works.
    std::vector<uint8_t> staged(FRAME_HEADERS_SIZE + datagram.size());
    std::memcpy(staged.data(), datagram.data(), datagram.size());
    ASSERT_EQ(EncapsulateFrame(staged.data(),
                               staged.size(),
                               SRC_MAC,
                               DST_MAC,
                               MakeMeta(),
                               staged.data(),
                               datagram.size()),
              staged.size());
    EXPECT_EQ(staged, out);
}

TEST(Encap, EcnRewriteKeepsChecksumValid)
{
    const Ecn ecns[] = {Ecn::NOT_ECT, Ecn::ECT1, Ecn::ECT0, Ecn::CE};
    const auto datagram = MakeDatagram(32);
    const uint8_t dscps[] = {0, 1, 26, 46, 63};
    for (uint8_t dscp : dscps)
    {
        for (Ecn from : ecns)
        {
            for (Ecn to : ecns)
            {
                DatagramMeta meta = MakeMeta(from, dscp);
                meta.dstIp = 0xffffffff; // a header whose sum wraps
                auto frame = MakeFrame(meta, datagram);
                uint8_t* ip = frame.data() + ETHERNET_HEADER_SIZE;
                SetIpv4Ecn(ip, to);
                EXPECT_EQ(InternetChecksum(ip, IPV4_HEADER_SIZE), 0);
                meta.ecn = to;
                EXPECT_EQ(frame, MakeFrame(meta, datagram)) << "dscp " << int(dscp);
                ParsedFrame parsed;
                ASSERT_EQ(ParseFrame(frame.data(), frame.size(), parsed), FrameStatus::OK);
                EXPECT_EQ(parsed.meta.ecn, to);
                EXPECT_EQ(parsed.meta.dscp, dscp);
            }
        }
    }
}

TEST(Encap, EcnRewriteOnForeignHeaderWithOptions)
{
    std::mt19937 rng(11);
    for (int trial = 0; trial < 1000; ++trial)
    {
        uint8_t ip[24];
        for (auto& b : ip)
        {
            b = static_cast<uint8_t>(rng());
        }
        ip[IPV4_VERSION_IHL_OFFSET] = 0x46;
        FixChecksum(ip);
        const uint8_t oldTos = ip[IPV4_TOS_OFFSET];
        const Ecn to = static_cast<Ecn>(rng() & 3);
        SetIpv4Ecn(ip, to);
        ASSERT_EQ(InternetChecksum(ip, sizeof(ip)), 0) << "trial " << trial;
        ASSERT_EQ(ip[IPV4_TOS_OFFSET], (oldTos & 0xfc) | static_cast<uint8_t>(to));
    }
}

TEST(Encap, EveryTruncationIsRejected)
{
    const auto frame = MakeFrame(MakeMeta(), MakeDatagram(60));
    for (size_t len = 0; len < frame.size(); ++len)
    {
        ParsedFrame parsed;
        EXPECT_EQ(ParseExact(frame.data(), len, parsed), FrameStatus::TRUNCATED) << "len " << len;
    }
    ParsedFrame parsed;
    EXPECT_EQ(ParseExact(frame.data(), frame.size(), parsed), FrameStatus::OK);
}

TEST(Encap, EthernetPaddingIsIgnored)
{
    const auto datagram = MakeDatagram(4);
    auto frame = MakeFrame(MakeMeta(), datagram);
    frame.resize(60, 0xee); // minimum Ethernet frame without FCS
    ParsedFrame parsed;
    ASSERT_EQ(ParseFrame(frame.data(), frame.size(), parsed), FrameStatus::OK);
    EXPECT_EQ(parsed.datagramLen, datagram.size());
}

TEST(Encap, OptionsAreSkipped)
{
    const auto datagram = MakeDatagram(20);
    const auto plain = MakeFrame(MakeMeta(), datagram);
    // Insert 8 bytes of options (NOP, NOP, NOP, end, padding) and fix lengths and checksum.
    std::vector<uint8_t> frame(plain.begin(), plain.begin() + FRAME_HEADERS_SIZE - 8);
    const uint8_t options[8] = {0x01, 0x01, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00};
    frame.insert(frame.end(), options, options + sizeof(options));
    frame.insert(frame.end(), plain.begin() + FRAME_HEADERS_SIZE - 8, plain.end());
    uint8_t* ip = frame.data() + ETHERNET_HEADER_SIZE;
    ip[IPV4_VERSION_IHL_OFFSET] = 0x47;
    WriteU16(ip + IPV4_TOTAL_LENGTH_OFFSET, static_cast<uint16_t>(28 + 8 + datagram.size()));
    FixChecksum(ip);

    ParsedFrame parsed;
    ASSERT_EQ(ParseExact(frame.data(), frame.size(), parsed), FrameStatus::OK);
    ASSERT_EQ(ParseFrame(frame.data(), frame.size(), parsed), FrameStatus::OK);
    EXPECT_EQ(parsed.ipHeaderLen, 28u);
    ExpectSameMeta(parsed.meta, MakeMeta());
    ASSERT_EQ(parsed.datagramLen, datagram.size());
    EXPECT_EQ(std::memcmp(parsed.datagram, datagram.data(), datagram.size()), 0);

    // Options announced but cut off.
    ip[IPV4_VERSION_IHL_OFFSET] = 0x4f;
    FixChecksum(ip);
    EXPECT_EQ(ParseExact(frame.data(), ETHERNET_HEADER_SIZE + 59, parsed), FrameStatus::TRUNCATED);
}

/// One header edit and the status it must produce.
struct Mutation
{
    const char* name;           //!< what the edit does
    void (*apply)(uint8_t* ip); //!< the edit, on the IPv4 header of a 60-byte datagram
    bool fixChecksum;           //!< recompute the header checksum afterwards
    FrameStatus expected;       //!< what ParseFrame() must return
};

const Mutation MUTATIONS[] = {
    {"version 6", [](uint8_t* ip) { ip[0] = 0x65; }, true, FrameStatus::NOT_IPV4},
    {"version 0", [](uint8_t* ip) { ip[0] = 0x05; }, true, FrameStatus::NOT_IPV4},
    {"version 15", [](uint8_t* ip) { ip[0] = 0xf5; }, true, FrameStatus::NOT_IPV4},
    {"IHL 0", [](uint8_t* ip) { ip[0] = 0x40; }, false, FrameStatus::BAD_IPV4_HEADER},
    {"IHL 4", [](uint8_t* ip) { ip[0] = 0x44; }, false, FrameStatus::BAD_IPV4_HEADER},
    {"total length < header",
     [](uint8_t* ip) { WriteU16(ip + IPV4_TOTAL_LENGTH_OFFSET, 19); },
     true,
     FrameStatus::BAD_IPV4_HEADER},
    {"total length > frame",
     [](uint8_t* ip) { WriteU16(ip + IPV4_TOTAL_LENGTH_OFFSET, 20 + 8 + 61); },
     true,
     FrameStatus::TRUNCATED},
    {"total length 0xffff",
     [](uint8_t* ip) { WriteU16(ip + IPV4_TOTAL_LENGTH_OFFSET, 0xffff); },
     true,
     FrameStatus::TRUNCATED},
    {"bad checksum",
     [](uint8_t* ip) { ip[IPV4_CHECKSUM_OFFSET] ^= 1; },
     false,
     FrameStatus::BAD_IPV4_CHECKSUM},
    {"bad checksum (address)",
     [](uint8_t* ip) { ip[IPV4_SRC_OFFSET] ^= 0x80; },
     false,
     FrameStatus::BAD_IPV4_CHECKSUM},
    {"more fragments",
     [](uint8_t* ip) { WriteU16(ip + IPV4_FLAGS_FRAGMENT_OFFSET, IPV4_FLAG_MF); },
     true,
     FrameStatus::FRAGMENTED},
    {"last fragment",
     [](uint8_t* ip) { WriteU16(ip + IPV4_FLAGS_FRAGMENT_OFFSET, 185); },
     true,
     FrameStatus::FRAGMENTED},
    {"DF with offset",
     [](uint8_t* ip) { WriteU16(ip + IPV4_FLAGS_FRAGMENT_OFFSET, IPV4_FLAG_DF | 1); },
     true,
     FrameStatus::FRAGMENTED},
    {"TCP", [](uint8_t* ip) { ip[IPV4_PROTOCOL_OFFSET] = 6; }, true, FrameStatus::NOT_UDP},
    {"ICMP", [](uint8_t* ip) { ip[IPV4_PROTOCOL_OFFSET] = 1; }, true, FrameStatus::NOT_UDP},
    {"no room for UDP header",
     [](uint8_t* ip) { WriteU16(ip + IPV4_TOTAL_LENGTH_OFFSET, 20 + 7); },
     true,
     FrameStatus::TRUNCATED},
    {"UDP length 7",
     [](uint8_t* ip) { WriteU16(ip + 20 + UDP_LENGTH_OFFSET, 7); },
     false,
     FrameStatus::BAD_UDP_LENGTH},
    {"UDP length 0",
     [](uint8_t* ip) { WriteU16(ip + 20 + UDP_LENGTH_OFFSET, 0); },
     false,
     FrameStatus::BAD_UDP_LENGTH},
    {"UDP length beyond IPv4 payload",
     [](uint8_t* ip) { WriteU16(ip + 20 + UDP_LENGTH_OFFSET, 8 + 61); },
     false,
     FrameStatus::BAD_UDP_LENGTH},
    {"DF cleared is fine",
     [](uint8_t* ip) { WriteU16(ip + IPV4_FLAGS_FRAGMENT_OFFSET, 0); },
     true,
     FrameStatus::OK},
    {"nonzero UDP checksum is not checked",
     [](uint8_t* ip) { WriteU16(ip + 20 + UDP_CHECKSUM_OFFSET, 0x1234); },
     false,
     FrameStatus::OK},
};

TEST(Encap, MalformedHeadersAreRejected)
{
    const auto frame = MakeFrame(MakeMeta(), MakeDatagram(60));
    for (const Mutation& m : MUTATIONS)
    {
        auto bad = frame;
        uint8_t* ip = bad.data() + ETHERNET_HEADER_SIZE;
        m.apply(ip);
        if (m.fixChecksum)
        {
            FixChecksum(ip);
        }
        ParsedFrame parsed;
        EXPECT_EQ(ParseExact(bad.data(), bad.size(), parsed), m.expected)
            << m.name << ": got " << FrameStatusName(ParseExact(bad.data(), bad.size(), parsed));
        EXPECT_EQ(ParseIpv4Udp(ip, bad.size() - ETHERNET_HEADER_SIZE, parsed), m.expected)
            << m.name;
    }
}

TEST(Encap, ShortUdpLengthLimitsTheDatagram)
{
    auto frame = MakeFrame(MakeMeta(), MakeDatagram(60));
    WriteU16(frame.data() + ETHERNET_HEADER_SIZE + IPV4_HEADER_SIZE + UDP_LENGTH_OFFSET, 8 + 40);
    ParsedFrame parsed;
    ASSERT_EQ(ParseFrame(frame.data(), frame.size(), parsed), FrameStatus::OK);
    EXPECT_EQ(parsed.datagramLen, 40u);
}

TEST(Encap, NonIpv4EtherTypes)
{
    auto frame = MakeFrame(MakeMeta(), MakeDatagram(60));
    const uint16_t etherTypes[] = {0x86dd, 0x8100, 0x88a8, 0x0806, 0x8915};
    for (uint16_t etherType : etherTypes)
    {
        WriteU16(frame.data() + ETHERNET_TYPE_OFFSET, etherType);
        ParsedFrame parsed;
        EXPECT_EQ(ParseExact(frame.data(), frame.size(), parsed), FrameStatus::NOT_IPV4)
            << std::hex << etherType;
    }
}

TEST(Encap, RandomCorruptionNeverReadsOutOfBounds)
{
    const auto frame = MakeFrame(MakeMeta(), MakeDatagram(48));
    std::mt19937 rng(5);
    size_t accepted = 0;
    for (int trial = 0; trial < 20000; ++trial)
    {
        auto bad = frame;
        const int edits = 1 + static_cast<int>(rng() % 4);
        for (int e = 0; e < edits; ++e)
        {
            // Bias the edits towards the headers, where the parser looks.
            bad[rng() % (FRAME_HEADERS_SIZE + 4)] = static_cast<uint8_t>(rng());
        }
        if (rng() % 2)
        {
            FixChecksum(bad.data() + ETHERNET_HEADER_SIZE);
        }
        const size_t len = rng() % (bad.size() + 1);
        auto copy = std::make_unique<uint8_t[]>(len);
        std::memcpy(copy.get(), bad.data(), len);
        ParsedFrame parsed;
        if (ParseFrame(copy.get(), len, parsed) == FrameStatus::OK)
        {
            ++accepted;
            ASSERT_GE(parsed.datagram, copy.get());
            ASSERT_LE(parsed.datagram + parsed.datagramLen, copy.get() + len);
        }
    }
    EXPECT_GT(accepted, 0u);
}

TEST(Encap, StatusNames)
{
    EXPECT_STREQ(FrameStatusName(FrameStatus::OK), "OK");
    EXPECT_STREQ(FrameStatusName(FrameStatus::TRUNCATED), "TRUNCATED");
    EXPECT_STREQ(FrameStatusName(FrameStatus::NOT_IPV4), "NOT_IPV4");
    EXPECT_STREQ(FrameStatusName(FrameStatus::BAD_IPV4_HEADER), "BAD_IPV4_HEADER");
    EXPECT_STREQ(FrameStatusName(FrameStatus::BAD_IPV4_CHECKSUM), "BAD_IPV4_CHECKSUM");
    EXPECT_STREQ(FrameStatusName(FrameStatus::FRAGMENTED), "FRAGMENTED");
    EXPECT_STREQ(FrameStatusName(FrameStatus::NOT_UDP), "NOT_UDP");
    EXPECT_STREQ(FrameStatusName(FrameStatus::BAD_UDP_LENGTH), "BAD_UDP_LENGTH");
}

} // namespace
