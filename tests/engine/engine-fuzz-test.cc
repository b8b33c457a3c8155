/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

// Malformed input: seeded random, truncated, oversized, wrong-opcode, wrong-key and mutated
// datagrams are counted and dropped; they never crash the engine (this file runs in the
// AddressSanitizer + UndefinedBehaviorSanitizer binary) and never corrupt a connection.
//
// Two modes. "Malformed" (ICRC checked): every hostile datagram is malformed, corrupted or
// carries a key that grants nothing; afterwards a transfer must deliver intact data.
// "Forged" (ICRC off): well-formed datagrams with hostile values (epochs, PSNs, NOPs, ACKs)
// that a peer could legitimately send; a forger inside the trust domain can disturb a
// connection as on any RDMA transport, so the check there is no crash, no undefined
// behaviour, and that the connection keeps working.

#include "engine-network.h"
#include "metaroce-icrc.h"

#include <gtest/gtest.h>

namespace metaroce
{
namespace test
{
namespace
{

/// A connected MetaRoCE pair plus a stream of hostile datagrams aimed at endpoint b.
class EngineFuzz : public ::testing::TestWithParam<bool>
{
  protected:
    void SetUp() override
    {
        EndpointConfig ecfg;
        ecfg.icrc = GetParam();
        m_a = m_net.AddEndpoint(ecfg);
        m_b = m_net.AddEndpoint(ecfg);
        ConnectionConfig cfg;
        cfg.mtu = 1024;
        std::tie(m_qa, m_qb) = m_net.Connect(m_a, m_b, cfg);
        m_src.resize(256 * 1024);
        Rng rng(3);
        for (auto& byte : m_src)
        {
            byte = uint8_t(rng.Next());
        }
        m_dst.assign(m_src.size(), 0);
        m_smr = m_net.At(m_a).RegisterMemory(m_src.data(), m_src.size(), 0);
        m_dmr = m_net.At(m_b).RegisterMemory(m_dst.data(),
                                             m_dst.size(),
                                             ACCESS_LOCAL_WRITE | ACCESS_REMOTE_WRITE);
        m_other.assign(4096, 0x5A);
        m_net.At(m_b).RegisterMemory(m_other.data(), m_other.size(), ACCESS_LOCAL_WRITE);
    }

    /// Transfer the whole source buffer a -> b and check it arrived.
    void TransferAndCheck(uint64_t wrId, bool checkData = true)
    {
        SendWr wr;
        wr.wrId = wrId;
        wr.sge = {m_smr.addr, uint32_t(m_src.size()), m_smr.lkey};
        wr.remoteAddr = m_dmr.addr;
        wr.rkey = m_dmr.rkey;
        ASSERT_EQ(m_net.At(m_a).PostSend(m_net.Now(), m_qa, wr), PostStatus::OK);
        m_net.Kick(m_a);
        size_t before = m_net.Completions(m_a).size();
        m_net.RunUntil(m_net.Now() + MilliSeconds(checkData ? 5 : 100));
        ASSERT_EQ(m_net.Completions(m_a).size(), before + 1);
        EXPECT_EQ(m_net.Completions(m_a).back().status, WcStatus::SUCCESS);
        if (checkData)
        {
            EXPECT_EQ(m_src, m_dst);
        }
    }

    /// \return the testbed, with the engines' derived state checked throughout.
    static NetworkConfig Checked()
    {
        NetworkConfig net;
        net.checkInvariants = true;
        return net;
    }

    void TearDown() override
    {
        EXPECT_EQ(m_net.InvariantFailure(), "") << "hostile input left derived state stale";
    }

    EngineNetwork m_net{Checked()};
    uint32_t m_a{0};
    uint32_t m_b{0};
    uint32_t m_qa{0};
    uint32_t m_qb{0};
    std::vector<uint8_t> m_src;
    std::vector<uint8_t> m_dst;
    std::vector<uint8_t> m_other;
    MemoryRegion m_smr;
    MemoryRegion m_dmr;
};

TEST_P(EngineFuzz, HostileDatagramsAreCountedAndDroppedAndTheConnectionSurvives)
{
    TransferAndCheck(1);
    const bool malformedOnly = GetParam();
    Endpoint& b = m_net.At(m_b);
    Rng r(GetParam() ? 11 : 12);
    std::vector<uint8_t> buf(Endpoint::MaxDatagramSize(4096) + 64);
    DatagramMeta meta;
    meta.srcIp = EngineNetwork::AddressOf(m_a);
    meta.dstIp = EngineNetwork::AddressOf(m_b);
    meta.srcPort = 50000;
    const uint8_t opcodes[] = {MR_WRITE,
                               MR_WRITE_IMM,
                               MR_SEND,
                               MR_SEND_IMM,
                               MR_ACK,
                               MR_ACK_COALESCED,
                               MR_NAK,
                               MR_PROBE,
                               MR_NOP,
                               MR_READ_REQUEST,
                               MR_READ_RESPONSE,
                               MR_CMP_SWAP,
                               MR_FETCH_ADD,
                               MR_ATOMIC_RESPONSE,
                               RC_SEND_ONLY,
                               RC_ACKNOWLEDGE,
                               ROCE_CNP,
                               0xFE};
    uint64_t accepted = 0;
    const int total = 100000;
    for (int i = 0; i < total; ++i)
    {
        size_t len = 0;
        switch (r.Below(4))
        {
        case 0: // random bytes, random length (including empty and oversized)
            len = size_t(r.Below(buf.size()));
            for (size_t k = 0; k < len; ++k)
            {
                buf[k] = uint8_t(r.Next());
            }
            break;
        case 1:   // well-formed header, hostile field values
        case 2: { // same, then mutated: bit flips, truncation or extension
            ParsedPacket pkt;
            pkt.bth.opcode = malformedOnly ? uint8_t(r.Below(2) ? MR_WRITE : MR_WRITE_IMM)
                                           : opcodes[r.Below(sizeof(opcodes))];
            pkt.info = &LookupOpcode(pkt.bth.opcode);
            if (pkt.info->name == nullptr)
            {
                len = 12;
                for (size_t k = 0; k < len; ++k)
                {
                    buf[k] = uint8_t(r.Next());
                }
                buf[0] = pkt.bth.opcode;
                break;
            }
            pkt.bth.destQp = r.Below(4) ? m_qb : uint32_t(r.Below(1 << 24));
            pkt.bth.psn = uint32_t(r.Below(1 << 24));
            if (r.Below(3) == 0)
            {
                pkt.bth.psn = uint32_t(r.Below(300)); // near the live window
            }
            pkt.mdh.pathId = uint8_t(r.Below(12));
            pkt.mdh.pathEpoch = uint8_t(r.Below(3));
            pkt.mdh.streamId = uint16_t(r.Below(2000));
            pkt.mdh.messageSeq = uint32_t(r.Below(8));
            pkt.mdh.offset = r.Below(2) ? uint32_t(r.Below(8) * 1024) : uint32_t(r.Next());
            // A key that is not the destination's (wrong-key WRITEs) or a key of a region
            // without remote write permission; never m_dmr's key.
            pkt.reth.rkey = r.Below(2) ? uint32_t(r.Next()) : m_dmr.rkey + 0x100;
            pkt.reth.va = r.Below(2) ? m_dmr.addr + r.Below(m_dst.size()) : r.Next();
            pkt.reth.dmaLength = uint32_t(r.Below(10000));
            pkt.rsh.recvSlot = uint32_t(r.Below(4));
            pkt.rsh.messageLength = uint32_t(r.Below(10000));
            pkt.mah.pathId = uint8_t(r.Below(12));
            pkt.mah.pathEpoch = uint8_t(r.Below(3));
            pkt.mah.cumulativePsn = uint32_t(r.Below(1 << 24));
            pkt.mah.triggerPsn = uint32_t(r.Below(1 << 24));
            pkt.mah.rateHint = uint32_t(r.Next());
            for (auto& w : pkt.mah.sack)
            {
                w = r.Next();
            }
            pkt.mah.flags = uint8_t(r.Next());
            pkt.mnh.streamId = uint16_t(r.Below(8));
            pkt.mnh.syndrome = uint8_t(r.Below(6));
            pkt.mnh.pathId = uint8_t(r.Below(12));
            pkt.mnh.psn = uint32_t(r.Below(300));
            uint32_t payload = pkt.info->payload ? uint32_t(r.Below(4200)) : 0;
            std::vector<uint8_t> records;
            if (pkt.bth.opcode == MR_ACK_COALESCED)
            {
                // Path records from the same hostile values, their count right or wrong.
                uint32_t n = uint32_t(r.Below(6));
                for (uint32_t k = 0; k < n; ++k)
                {
                    Mah m = pkt.mah;
                    m.pathId = uint8_t(r.Below(12));
                    m.sack[0] = r.Below(2) ? r.Next() : 0;
                    records.resize(records.size() + AckRecord::Length(m));
                    AckRecord::Write(records.data() + records.size() - AckRecord::Length(m),
                                     m,
                                     uint16_t(r.Next()));
                }
                pkt.mch.rateHint = uint32_t(r.Next());
                pkt.mch.recordCount = uint8_t(r.Below(2) ? n : r.Below(256));
                payload = uint32_t(records.size());
            }
            len = WriteDatagram(buf.data(),
                                buf.size(),
                                pkt,
                                records.empty() ? nullptr : records.data(),
                                payload);
            if (len == 0)
            {
                continue;
            }
            bool validIcrc = r.Below(2) != 0;
            if (m_net.At(m_b).Config().icrc && validIcrc)
            {
                // A valid ICRC so hostile fields reach the connection logic.
                StoreIcrc(buf.data() + len - ICRC_SIZE,
                          ComputeDatagramIcrc(meta, buf.data(), len - ICRC_SIZE));
            }
            // In malformed mode a datagram with a valid ICRC keeps its wrong key intact; the
            // others are corrupted (and fail the ICRC).
            if (malformedOnly ? !validIcrc : r.Below(2) != 0)
            {
                for (int flips = 1 + int(r.Below(4)); flips > 0; --flips)
                {
                    size_t at = size_t(r.Below(len));
                    buf[at] ^= uint8_t(1u << r.Below(8));
                }
            }
            if (r.Below(4) == 0 && !(malformedOnly && validIcrc))
            {
                len = size_t(r.Below(len + 1));
            }
            break;
        }
        default: // truncated or oversized versions of a live packet shape
            len = size_t(r.Below(80));
            for (size_t k = 0; k < len; ++k)
            {
                buf[k] = uint8_t(r.Next());
            }
            if (len > 0)
            {
                buf[0] = opcodes[r.Below(sizeof(opcodes))];
            }
            break;
        }
        DatagramMeta m = meta;
        if (r.Below(50) == 0)
        {
            m.srcIp ^= 0x100; // wrong peer
        }
        m.ecn = Ecn(r.Below(4));
        if (b.HandleDatagram(m_net.Now(), m, buf.data(), len) == RxStatus::ACCEPTED)
        {
            ++accepted;
        }
        // Let the endpoint answer (ACKs/NAKs to a), without running the clock far.
        if (i % 64 == 0)
        {
            m_net.Kick(m_b);
            m_net.RunUntil(m_net.Now() + MicroSeconds(1));
        }
    }
    const CounterSet& c = b.Counters();
    uint64_t rejected = c.Get(Counter::RX_MALFORMED) + c.Get(Counter::RX_BAD_ICRC) +
                        c.Get(Counter::RX_UNKNOWN_CONNECTION) + c.Get(Counter::RX_WRONG_SOURCE) +
                        c.Get(Counter::RX_WRONG_TRANSPORT);
    EXPECT_GT(rejected, uint64_t(total) / 4);
    EXPECT_GT(accepted, 0u);
    if (malformedOnly)
    {
        // Accepted ones were well-formed wrong-key WRITEs: all rejected by the connection.
        EXPECT_EQ(c.Get(Counter::RX_DATA), m_src.size() / 1024);
        EXPECT_EQ(c.Get(Counter::RX_ACCESS_ERROR) + c.Get(Counter::RX_INVALID) +
                      c.Get(Counter::RX_OUT_OF_WINDOW) + c.Get(Counter::RX_DUPLICATE) +
                      c.Get(Counter::RX_STALE_EPOCH),
                  accepted);
    }
    // The region without remote access was never written.
    EXPECT_TRUE(std::all_of(m_other.begin(), m_other.end(), [](uint8_t v) { return v == 0x5A; }));
    // Hostile packets must not have broken the connection: a fresh transfer still works
    // (the hostile WRITEs used keys that cannot reach m_dst, so it is still intact as well).
    std::fill(m_dst.begin(), m_dst.end(), 0);
    m_net.RunUntil(m_net.Now() + MilliSeconds(2));
    TransferAndCheck(2, malformedOnly);
}

TEST_P(EngineFuzz, ForgedAcknowledgementsAtABusySenderKeepItsStateConsistent)
{
    // ACKs, coalesced ACKs, probe replies and RNR NAKs with hostile values near the live ones,
    // aimed at the sender while it sprays a transfer: whatever they make it believe (RoCE
    // has no authentication), its path index and totals must stay true to its paths
    // (checked at every read and pump), and nothing may crash.
    const bool withIcrc = GetParam();
    Endpoint& a = m_net.At(m_a);
    Rng r(withIcrc ? 21 : 22);
    DatagramMeta meta;
    meta.srcIp = EngineNetwork::AddressOf(m_b);
    meta.dstIp = EngineNetwork::AddressOf(m_a);
    meta.srcPort = 50000;
    std::vector<uint8_t> buf(4096);
    for (int round = 0; round < 20; ++round)
    {
        SendWr wr;
        wr.wrId = 100 + round;
        wr.sge = {m_smr.addr, uint32_t(m_src.size()), m_smr.lkey};
        wr.remoteAddr = m_dmr.addr;
        wr.rkey = m_dmr.rkey;
        ASSERT_EQ(a.PostSend(m_net.Now(), m_qa, wr), PostStatus::OK);
        m_net.Kick(m_a);
        for (int i = 0; i < 400; ++i)
        {
            const uint8_t kinds[] = {MR_ACK, MR_ACK, MR_ACK_COALESCED, MR_NAK};
            ParsedPacket pkt;
            pkt.bth.opcode = kinds[r.Below(4)];
            pkt.info = &LookupOpcode(pkt.bth.opcode);
            pkt.bth.destQp = m_qa;
            const PathState* live = a.GetConnection(m_qa)->Path(r.Below(8));
            Mah& m = pkt.mah;
            m.pathId = uint8_t(live->id);
            m.pathEpoch = r.Below(4) ? live->epoch : uint8_t(r.Below(4));
            m.cumulativePsn = PsnAdd(live->ackedPsn, uint32_t(r.Below(6)) - 2);
            m.triggerPsn = PsnAdd(live->ackedPsn, uint32_t(r.Below(8)));
            for (auto& w : m.sack)
            {
                w = r.Below(2) ? r.Next() : 0;
            }
            m.flags = uint8_t(r.Below(2) ? Mah::FLAG_PROBE_REPLY : r.Next());
            m.ceCount = uint8_t(r.Below(3));
            pkt.mnh.streamId = 0;
            pkt.mnh.syndrome = Mnh::RNR; // (another syndrome ends the connection, as in IB)
            pkt.mnh.pathId = m.pathId;
            pkt.mnh.pathEpoch = m.pathEpoch;
            pkt.mnh.psn = m.triggerPsn;
            pkt.mnh.messageSeq = uint32_t(r.Below(4));
            std::vector<uint8_t> records;
            if (pkt.bth.opcode == MR_ACK_COALESCED)
            {
                uint8_t record[AckRecord::SIZE + Mah::SACK_BYTES];
                size_t n = AckRecord::Write(record, m, uint16_t(r.Below(100)));
                records.assign(record, record + n);
                pkt.mch.recordCount = 1;
            }
            size_t len = WriteDatagram(buf.data(),
                                       buf.size(),
                                       pkt,
                                       records.empty() ? nullptr : records.data(),
                                       uint32_t(records.size()));
            ASSERT_GT(len, 0u);
            if (withIcrc)
            {
                StoreIcrc(buf.data() + len - ICRC_SIZE,
                          ComputeDatagramIcrc(meta, buf.data(), len - ICRC_SIZE));
            }
            a.HandleDatagram(m_net.Now(), meta, buf.data(), len);
            if (i % 8 == 0)
            {
                m_net.Kick(m_a);
                m_net.RunUntil(m_net.Now() + MicroSeconds(1));
            }
        }
        m_net.RunUntil(m_net.Now() + MilliSeconds(1));
        ASSERT_EQ(m_net.InvariantFailure(), "") << "round " << round;
    }
    EXPECT_GT(a.GetConnection(m_qa)->Counters().Get(Counter::RX_ACK), 0u);
}

INSTANTIATE_TEST_SUITE_P(MalformedAndForged,
                         EngineFuzz,
                         ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& info) {
                             return info.param ? "Malformed" : "Forged";
                         });

} // namespace
} // namespace test
} // namespace metaroce
