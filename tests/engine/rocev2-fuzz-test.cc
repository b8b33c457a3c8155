/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

// Fuzz-style robustness test of the RoCEv2 engine (built into the ASan + UBSan binary):
// seeded random and mutated RoCEv2 datagrams fed to connected endpoints must never crash,
// must be counted, and must leave the engines producing well-formed datagrams.

#include "metaroce-endpoint.h"
#include "metaroce-icrc.h"
#include "metaroce-rocev2-connection.h"

#include <gtest/gtest.h>
#include <memory>
#include <string>
#include <vector>

namespace metaroce
{
namespace
{

constexpr uint32_t IP_A = 0x0a000001;
constexpr uint32_t IP_B = 0x0a000002;

/// A captured datagram and the endpoint it was addressed to.
struct Sample
{
    bool toB;                  //!< addressed to B (else A)
    DatagramMeta meta;         //!< addresses
    std::vector<uint8_t> data; //!< BTH to ICRC
};

/// A requester A and a responder B with one RoCEv2 connection, memory and receives.
struct Pair
{
    Pair(uint64_t seed, const std::string& recovery)
        : src(64 * 1024),
          dst(64 * 1024)
    {
        EndpointConfig ca;
        ca.localIp = IP_A;
        ca.seed = seed;
        EndpointConfig cb;
        cb.localIp = IP_B;
        cb.seed = seed + 1;
        a = std::make_unique<Endpoint>(ca);
        b = std::make_unique<Endpoint>(cb);
        ConnectionConfig cfg;
        cfg.transport = "rocev2";
        cfg.mtu = 256;
        cfg.maxPostedRecvs = 64;
        cfg.rocev2.localAckTimeout = 3;
        cfg.rocev2.rnrRetry = 7;
        cfg.rocev2.recovery = recovery;
        cfg.rocev2.irnWindow = 64; // small: the bitmaps wrap often
        a->CreateConnection(cfg, qa);
        b->CreateConnection(cfg, qb);
        a->Connect(qa, IP_B, qb);
        b->Connect(qb, IP_A, qa);
        for (size_t i = 0; i < src.size(); ++i)
        {
            src[i] = uint8_t(i * 13 + 5);
        }
        smr = a->RegisterMemory(src.data(), src.size(), 0, 0x100000);
        dmr = b->RegisterMemory(dst.data(),
                                dst.size(),
                                ACCESS_LOCAL_WRITE | ACCESS_REMOTE_WRITE,
                                0x200000);
        for (uint32_t i = 0; i < 32; ++i)
        {
            RecvWr r;
            r.wrId = i;
            r.sge = {dmr.addr + 32768, 4000, dmr.lkey};
            b->PostRecv(0, qb, r);
        }
        uint32_t offset = 0;
        for (uint32_t i = 0; i < 24; ++i)
        {
            SendWr w;
            w.wrId = i;
            w.opcode = WrOpcode(i % 4);
            uint32_t len = (i * 977) % 3000;
            w.sge = {smr.addr + offset, len, smr.lkey};
            w.remoteAddr = dmr.addr + offset;
            w.rkey = dmr.rkey;
            w.immData = i;
            a->PostSend(0, qa, w);
            offset += len;
        }
    }

    bool InError() const
    {
        return a->GetConnection(qa)->InError() || b->GetConnection(qb)->InError();
    }

    std::vector<uint8_t> src;
    std::vector<uint8_t> dst;
    std::unique_ptr<Endpoint> a;
    std::unique_ptr<Endpoint> b;
    uint32_t qa{0};
    uint32_t qb{0};
    MemoryRegion smr;
    MemoryRegion dmr;
};

/// Drain every datagram \p ep wants to send now, checking each is well-formed.
size_t
Drain(Endpoint& ep, Time now, std::vector<Sample>* out, bool toB)
{
    std::vector<uint8_t> buffer(Endpoint::MaxDatagramSize(4096));
    size_t n = 0;
    TxDatagram tx;
    tx.buffer = buffer.data();
    tx.capacity = buffer.size();
    while (n < 10000 && ep.PollTransmit(now, tx))
    {
        ++n;
        ParsedPacket pkt;
        EXPECT_EQ(ParseDatagram(tx.buffer, tx.length, pkt), ParseStatus::OK);
        EXPECT_TRUE(CheckDatagramIcrc(tx.meta, tx.buffer, tx.length));
        if (out != nullptr)
        {
            out->push_back(
                Sample{toB, tx.meta, std::vector<uint8_t>(tx.buffer, tx.buffer + tx.length)});
        }
        tx.buffer = buffer.data();
        tx.capacity = buffer.size();
    }
    Completion c;
    while (ep.PollCompletion(c))
    {
    }
    return n;
}

/// Run a lossy transfer and record every datagram on the wire as the corpus.
std::vector<Sample>
Corpus(const std::string& recovery)
{
    Pair p(7, recovery);
    Rng rng(99);
    std::vector<Sample> wire;
    Time now = 0;
    for (int round = 0; round < 4000 && !p.InError(); ++round)
    {
        size_t before = wire.size();
        Drain(*p.a, now, &wire, true);
        for (size_t i = before; i < wire.size(); ++i)
        {
            DatagramMeta m = wire[i].meta;
            if (rng.Below(10) == 0)
            {
                m.ecn = Ecn::CE; // so the responder sends CNPs
            }
            if (rng.Below(20) != 0) // 5% loss: NAKs and timeouts
            {
                p.b->HandleDatagram(now, m, wire[i].data.data(), wire[i].data.size());
            }
        }
        before = wire.size();
        Drain(*p.b, now, &wire, false);
        for (size_t i = before; i < wire.size(); ++i)
        {
            wire[i].toB = false;
            p.a->HandleDatagram(now, wire[i].meta, wire[i].data.data(), wire[i].data.size());
        }
        now += MicroSeconds(1);
        Time t = std::min(p.a->NextTimeout(), p.b->NextTimeout());
        if (before == wire.size() && t != TIME_INFINITE && t > now)
        {
            now = t;
        }
        p.a->HandleTimeout(now);
        p.b->HandleTimeout(now);
    }
    return wire;
}

/// The fuzz test runs once per recovery mode ("gbn", "irn": IRN opcodes and NACKs).
class RoceV2Fuzz : public ::testing::TestWithParam<const char*>
{
};

TEST_P(RoceV2Fuzz, RandomAndMutatedDatagramsNeverCrashAndAreCounted)
{
    const std::string recovery = GetParam();
    const bool irn = recovery == "irn";
    // Opcodes of this mode's data packets: RC_x, or IRN_x = 0xE0 | RC_x.
    const uint8_t family = irn ? uint8_t(IRN_OPCODE_BASE) : uint8_t(0);
    std::vector<Sample> corpus = Corpus(recovery);
    ASSERT_GT(corpus.size(), 100u);
    size_t kinds[256] = {};
    for (const Sample& s : corpus)
    {
        ++kinds[s.data[0]];
    }
    EXPECT_GT(kinds[RC_ACKNOWLEDGE], 0u);
    EXPECT_GT(kinds[ROCE_CNP], 0u);
    EXPECT_GT(kinds[family | RC_SEND_FIRST] + kinds[family | RC_WRITE_FIRST], 0u);
    if (irn)
    {
        EXPECT_GT(kinds[IRN_NACK], 0u) << "5% loss: out-of-order arrivals are NACKed";
    }

    Rng rng(2026);
    auto pair = std::make_unique<Pair>(1, recovery);
    constexpr uint64_t ITERATIONS = 120000;
    uint64_t fed = 0;
    uint64_t accepted = 0;
    uint64_t rebuilt = 0;
    uint64_t statusCount[8] = {};
    Time now = 0;
    std::vector<uint8_t> bytes;
    for (uint64_t i = 0; i < ITERATIONS; ++i)
    {
        const Sample& base = corpus[rng.Below(corpus.size())];
        DatagramMeta meta = base.meta;
        bool toB = base.toB;
        uint64_t how = rng.Below(10);
        if (how == 0)
        {
            // Random bytes with a valid-looking BTH start.
            bytes.assign(rng.Below(300), 0);
            for (auto& byte : bytes)
            {
                byte = uint8_t(rng.Next());
            }
            if (!bytes.empty() && rng.Below(2))
            {
                bytes[0] = uint8_t(family | rng.Below(0x12)); // an RC / IRN opcode
            }
            toB = rng.Below(2);
        }
        else
        {
            bytes = base.data;
            uint64_t flips = 1 + rng.Below(4);
            for (uint64_t f = 0; f < flips && !bytes.empty(); ++f)
            {
                switch (rng.Below(7))
                {
                case 0: // bit flip anywhere
                    bytes[rng.Below(bytes.size())] ^= uint8_t(1u << rng.Below(8));
                    break;
                case 1: // opcode swap
                    bytes[0] = uint8_t(rng.Below(2) ? (rng.Below(4) ? family : 0) | rng.Below(0x12)
                                                    : rng.Next());
                    break;
                case 2: // PSN near the current sequence
                    bytes[Bth::PSN + 2] = uint8_t(bytes[Bth::PSN + 2] + rng.Below(5) - 2);
                    break;
                case 3: // truncate or extend
                    bytes.resize(rng.Below(bytes.size() + 40), uint8_t(rng.Next()));
                    break;
                case 4: // pad count, TVer, flags
                    bytes[Bth::FLAGS] = uint8_t(rng.Next());
                    break;
                case 5: // a header field (RETH / AETH / payload) set to an extreme
                    if (bytes.size() > Bth::SIZE)
                    {
                        size_t at = Bth::SIZE + rng.Below(bytes.size() - Bth::SIZE);
                        bytes[at] = rng.Below(2) ? 0xff : 0x00;
                    }
                    break;
                default: // destination QP
                    bytes[Bth::DEST_QP + 2] = uint8_t(rng.Below(3));
                    break;
                }
            }
        }
        // Mostly give the mutation a correct ICRC so it reaches the transport.
        if (bytes.size() >= ICRC_SIZE && rng.Below(8) != 0)
        {
            StoreIcrc(bytes.data() + bytes.size() - ICRC_SIZE,
                      ComputeDatagramIcrc(meta, bytes.data(), bytes.size() - ICRC_SIZE));
        }
        if (rng.Below(16) == 0)
        {
            meta.ecn = Ecn::CE;
        }
        Endpoint& target = toB ? *pair->b : *pair->a;
        RxStatus st =
            target.HandleDatagram(now, meta, bytes.empty() ? nullptr : bytes.data(), bytes.size());
        ++fed;
        ++statusCount[size_t(st)];
        accepted += st == RxStatus::ACCEPTED;
        // Keep both engines running: their own traffic, timers and completions.
        now += NanoSeconds(int64_t(rng.Below(5000)));
        Drain(*pair->a, now, nullptr, true);
        Drain(*pair->b, now, nullptr, false);
        if (rng.Below(64) == 0)
        {
            Time t = std::min(pair->a->NextTimeout(), pair->b->NextTimeout());
            if (t != TIME_INFINITE)
            {
                now = std::max(now, t);
                pair->a->HandleTimeout(now);
                pair->b->HandleTimeout(now);
            }
        }
        if (pair->InError() && rng.Below(32) == 0)
        {
            pair = std::make_unique<Pair>(i, recovery);
            ++rebuilt;
        }
    }
    // Every datagram is accounted for by its status, and the rejected ones by counters.
    uint64_t sum = 0;
    for (uint64_t c : statusCount)
    {
        sum += c;
    }
    EXPECT_EQ(sum, fed);
    EXPECT_GE(fed, 100000u);
    EXPECT_GT(statusCount[size_t(RxStatus::MALFORMED)], 0u);
    EXPECT_GT(statusCount[size_t(RxStatus::BAD_ICRC)], 0u);
    EXPECT_GT(statusCount[size_t(RxStatus::UNKNOWN_CONNECTION)], 0u);
    EXPECT_GT(statusCount[size_t(RxStatus::WRONG_TRANSPORT)], 0u);
    EXPECT_GT(accepted, fed / 10) << "mutations must reach the transport, not only the parser";
    EXPECT_GT(rebuilt, 0u) << "some mutations must drive a queue pair into the error state";
    std::cout << "[ figures  ] fuzz (" << recovery << "): " << fed << " datagrams, " << accepted
              << " accepted, " << statusCount[size_t(RxStatus::MALFORMED)] << " malformed, "
              << statusCount[size_t(RxStatus::BAD_ICRC)] << " bad ICRC, "
              << statusCount[size_t(RxStatus::UNKNOWN_CONNECTION)] << " unknown QP, "
              << statusCount[size_t(RxStatus::WRONG_TRANSPORT)] << " wrong transport; " << rebuilt
              << " queue pairs rebuilt after errors\n";
}

INSTANTIATE_TEST_SUITE_P(Recovery,
                         RoceV2Fuzz,
                         ::testing::Values("gbn", "irn"),
                         [](const ::testing::TestParamInfo<const char*>& info) {
                             return std::string(info.param);
                         });

} // namespace
} // namespace metaroce
