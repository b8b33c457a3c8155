/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

// The RoCEv2 baseline engine's seeded data-integrity property, in both recovery modes
// (go-back-N and IRN): every byte delivered exactly once into the right place, completions
// in order, under random schedules and the fault families of property-families.h.

#include "engine-network.h"
#include "metaroce-rocev2-connection.h"
#include "pair-fixture.h"
#include "property-families.h"
#include "property-harness.h"
#include "random-workload.h"
#include "seeded-run.h"

#include <algorithm>
#include <cstring>
#include <gtest/gtest.h>
#include <map>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

namespace metaroce
{
namespace test
{
namespace
{

// ---------------------------------------------------------------------------------------------
// Property: every byte delivered exactly once into the right place, completions in order.
// ---------------------------------------------------------------------------------------------

/// One message of a schedule.
using Message = RandomMessage;

/// Run schedule \p seed; \return an empty string on success, else what went wrong.
/// Counters summed over the schedules of a property run.
struct ScheduleStats
{
    uint64_t outOfSequence{0}; //!< responder: packets ahead of the expected PSN
    uint64_t retransmits{0};   //!< requester: packets resent
    uint64_t goBackN{0};       //!< requester: go-back-N rounds
};

std::string
RunSchedule(uint64_t seed, const std::string& recovery, ScheduleStats& stats)
{
    Rng r(seed * 104729 + 3);
    ConnectionConfig cfg = RoceConfig();
    cfg.rocev2.recovery = recovery;
    const uint32_t mtus[] = {256, 1024, 4096};
    cfg.mtu = mtus[r.Below(3)];
    cfg.rocev2.ackEveryPackets = 1 + uint32_t(r.Below(8));
    cfg.rocev2.ackDelay = MicroSeconds(int64_t(r.Below(4)));
    cfg.rocev2.localAckTimeout = uint8_t(5 + r.Below(3)); // 131 us .. 524 us
    cfg.rocev2.maxInflightPackets = r.Below(3) == 0 ? uint32_t(4 + r.Below(60)) : 0;
    if (recovery == "irn")
    {
        // Small windows exercise the bitmap wrap and the BDP cap; short RTOs the timer path.
        cfg.rocev2.irnWindow = 16u << (2 * r.Below(4)); // 16 .. 1024
        cfg.rocev2.irnRtoLow = MicroSeconds(int64_t(20 + r.Below(80)));
        cfg.rocev2.irnRtoHigh = cfg.rocev2.irnRtoLow + MicroSeconds(int64_t(r.Below(300)));
        cfg.rocev2.irnLowThreshold = uint32_t(r.Below(8));
    }
    NetworkConfig net;
    net.seed = seed + 1;
    EngineNetwork n(net);
    uint32_t a = n.AddEndpoint();
    uint32_t b = n.AddEndpoint();
    auto [qa, qb] = n.Connect(a, b, cfg);
    LinkConfig& fwd = n.Link(a, b);
    LinkConfig& rev = n.Link(b, a);
    fwd.delay = MicroSeconds(1 + int64_t(r.Below(5)));
    rev.delay = fwd.delay;
    fwd.loss = r.Uniform() * 0.02;
    rev.loss = r.Uniform() * 0.02;
    if (r.Below(4) == 0)
    {
        fwd.burstStart = 0.002;
        fwd.burstEnd = 0.5;
        fwd.burstLoss = 0.5;
    }
    fwd.reorder = r.Below(4) == 0 ? r.Uniform() * 0.02 : 0;
    fwd.duplicate = r.Below(4) == 0 ? r.Uniform() * 0.02 : 0;
    rev.duplicate = fwd.duplicate;
    fwd.ceMark = r.Below(3) == 0 ? r.Uniform() * 0.05 : 0;
    std::ostringstream d;
    d << recovery << " seed " << seed << ": window " << cfg.rocev2.irnWindow << " mtu " << cfg.mtu
      << " ackEvery " << cfg.rocev2.ackEveryPackets << " cap " << cfg.rocev2.maxInflightPackets
      << " loss " << fwd.loss << "/" << rev.loss << " burst " << fwd.burstStart << " reorder "
      << fwd.reorder << " dup " << fwd.duplicate << " ce " << fwd.ceMark;
    std::string description = d.str();

    RandomWorkload w = DrawRandomWorkload(r, 0);
    const std::vector<RandomMessage>& msgs = w.msgs;
    const uint32_t count = uint32_t(msgs.size());
    const size_t srcSize = w.srcBytes;
    std::vector<uint8_t>& src = w.src;
    std::vector<uint8_t>& dst = w.dst;
    MemoryRegion smr = n.At(a).RegisterMemory(src.data(), src.size(), 0);
    MemoryRegion dmr =
        n.At(b).RegisterMemory(dst.data(), dst.size(), ACCESS_LOCAL_WRITE | ACCESS_REMOTE_WRITE);
    size_t expectedRecvs = 0;
    for (uint32_t i = 0; i < count; ++i)
    {
        const Message& m = msgs[i];
        if (m.op == WrOpcode::RDMA_WRITE)
        {
            continue;
        }
        RecvWr rw;
        rw.wrId = 1000 + i;
        if (m.op == WrOpcode::SEND || m.op == WrOpcode::SEND_WITH_IMM)
        {
            rw.sge = {dmr.addr + m.dstOffset, m.length, dmr.lkey};
        }
        if (n.At(b).PostRecv(0, qb, rw) != PostStatus::OK)
        {
            return description + ": PostRecv failed";
        }
        ++expectedRecvs;
    }
    for (uint32_t i = 0; i < count; ++i)
    {
        const Message& m = msgs[i];
        SendWr wr;
        wr.wrId = i;
        wr.opcode = m.op;
        wr.sge = {smr.addr + m.srcOffset, m.length, smr.lkey};
        wr.remoteAddr = dmr.addr + m.dstOffset;
        wr.rkey = dmr.rkey;
        wr.immData = m.imm;
        if (n.At(a).PostSend(0, qa, wr) != PostStatus::OK)
        {
            return description + ": PostSend failed";
        }
    }
    n.Kick(a);
    while (n.Now() < MilliSeconds(200) &&
           (n.Completions(a).size() < count || n.Completions(b).size() < expectedRecvs))
    {
        if (n.RunUntil(n.Now() + MicroSeconds(500)) && n.Completions(a).size() < count)
        {
            return description + ": no events left before completion (stall)";
        }
    }
    n.RunUntil(n.Now() + MilliSeconds(2)); // stray duplicates must change nothing
    if (n.Completions(a).size() != count || n.Completions(b).size() != expectedRecvs)
    {
        std::ostringstream os;
        os << description << ": " << n.Completions(a).size() << "/" << count << " send and "
           << n.Completions(b).size() << "/" << expectedRecvs << " receive completions";
        return os.str();
    }
    for (uint32_t i = 0; i < count; ++i)
    {
        const Completion& c = n.Completions(a)[i];
        if (c.wrId != i || c.status != WcStatus::SUCCESS)
        {
            return description + ": send completion " + std::to_string(i) + " is wr " +
                   std::to_string(c.wrId) + " " + WcStatusName(c.status);
        }
    }
    size_t k = 0;
    for (uint32_t i = 0; i < count; ++i)
    {
        const Message& m = msgs[i];
        if (m.op == WrOpcode::RDMA_WRITE)
        {
            continue;
        }
        const Completion& c = n.Completions(b)[k++];
        bool imm = m.op != WrOpcode::SEND;
        if (c.wrId != 1000 + i || c.status != WcStatus::SUCCESS || c.byteLen != m.length ||
            c.hasImm != imm || (imm && c.immData != m.imm))
        {
            return description + ": receive completion for message " + std::to_string(i) +
                   " wrong (wr " + std::to_string(c.wrId) + ")";
        }
    }
    for (const Message& m : msgs)
    {
        if (!std::equal(src.begin() + m.srcOffset,
                        src.begin() + m.srcOffset + m.length,
                        dst.begin() + m.dstOffset) ||
            !std::all_of(dst.begin() + m.dstOffset + m.length,
                         dst.begin() + m.dstOffset + m.length + 64,
                         [](uint8_t byte) { return byte == 0; }))
        {
            return description + ": payload misplaced";
        }
    }
    stats.outOfSequence += n.At(b).Counters().Get(Counter::RX_OUT_OF_SEQUENCE);
    stats.retransmits += n.At(a).Counters().Get(Counter::TX_RETRANSMIT);
    stats.goBackN += n.At(a).Counters().Get(Counter::GO_BACK_N);
    if (n.At(b).Counters().Get(Counter::BYTES_PLACED) != srcSize)
    {
        return description + ": bytes placed " +
               std::to_string(n.At(b).Counters().Get(Counter::BYTES_PLACED)) +
               " != " + std::to_string(srcSize);
    }
    return "";
}

/// Property: every byte exactly once, completions in order, for one recovery mode.
class RoceV2Property : public ::testing::TestWithParam<const char*>
{
};

TEST_P(RoceV2Property, EveryByteExactlyOnceInPlaceCompletionsInOrder)
{
    ScheduleStats stats;
    const std::string recovery = GetParam();
    RunPropertySeeds("RoceV2Property/" + recovery, 1, 300, [&](uint64_t seed) {
        return RunSchedule(seed, recovery, stats);
    });
    // The schedules do exercise recovery: losses, resends and, for IRN, out-of-order
    // placement instead of go-back-N rounds.
    EXPECT_GT(stats.retransmits, 0u);
    EXPECT_GT(stats.outOfSequence, 0u);
    if (std::string(GetParam()) == "irn")
    {
        EXPECT_EQ(stats.goBackN, 0u);
    }
    else
    {
        EXPECT_GT(stats.goBackN, 0u);
    }
}

INSTANTIATE_TEST_SUITE_P(Recovery,
                         RoceV2Property,
                         ::testing::Values("gbn", "irn"),
                         [](const ::testing::TestParamInfo<const char*>& info) {
                             return std::string(info.param);
                         });

/// Schedules per family and recovery mode in the CI run.
constexpr uint64_t ROCEV2_FAMILY_SEEDS = 50;

/// The schedule families of property-families.h on RoCEv2, per recovery mode.
class RoceV2PropertyFamily : public ::testing::TestWithParam<std::tuple<const char*, Family>>
{
};

TEST_P(RoceV2PropertyFamily, EndsWithEveryByteOnceInOrderCompletions)
{
    const std::string recovery = std::get<0>(GetParam());
    const Family f = std::get<1>(GetParam());
    RunPropertySeeds("RoceV2PropertyFamily/" + recovery + "/" + FamilyName(f),
                     1,
                     ROCEV2_FAMILY_SEEDS,
                     [&](uint64_t seed) { return RunFamilySchedule(f, seed, recovery); });
}

INSTANTIATE_TEST_SUITE_P(Families,
                         RoceV2PropertyFamily,
                         ::testing::Combine(::testing::Values("gbn", "irn"),
                                            ::testing::ValuesIn(ALL_FAMILIES)),
                         [](const ::testing::TestParamInfo<std::tuple<const char*, Family>>& info) {
                             return std::string(std::get<0>(info.param)) + "_" +
                                    FamilyName(std::get<1>(info.param));
                         });

} // namespace
} // namespace test
} // namespace metaroce
