/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

// The RoCEv2 baseline engine's seeded data-integrity property, in both recovery modes
// (go-back-N and IRN): every byte delivered exactly once into the right place, completions
// in order, under random schedules and the fault families of property-families.h. The READ
// and atomic property (exact bytes, atomics exactly once) runs here on both engines.

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
#include <iostream>
#include <map>
#include <memory>
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

/// Counters summed over the schedules of a property run.
struct ScheduleStats
{
    uint64_t outOfSequence{0}; //!< responder: packets ahead of the expected PSN
    uint64_t retransmits{0};   //!< requester: packets resent
    uint64_t goBackN{0};       //!< requester: go-back-N rounds
};

/// \return a testbed seeded from schedule \p seed with endpoints \p a and \p b.
std::unique_ptr<EngineNetwork>
SeededPair(uint64_t seed, uint32_t& a, uint32_t& b)
{
    NetworkConfig net;
    net.seed = seed + 1;
    auto n = std::make_unique<EngineNetwork>(net);
    a = n->AddEndpoint();
    b = n->AddEndpoint();
    return n;
}

/// \return the connection settings of a schedule drawn from \p r.
ConnectionConfig
DrawScheduleConfig(Rng& r, const std::string& recovery)
{
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
    return cfg;
}

/**
 * Draw the faults of a schedule from \p r onto both directions between \p a and \p b: loss,
 * bursts, reordering, duplication and CE marks. \return the schedule's description.
 */
std::string
DrawScheduleFaults(Rng& r,
                   EngineNetwork& n,
                   uint32_t a,
                   uint32_t b,
                   uint64_t seed,
                   const ConnectionConfig& cfg)
{
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
    d << cfg.rocev2.recovery << " seed " << seed << ": window " << cfg.rocev2.irnWindow << " mtu "
      << cfg.mtu << " ackEvery " << cfg.rocev2.ackEveryPackets << " cap "
      << cfg.rocev2.maxInflightPackets << " loss " << fwd.loss << "/" << rev.loss << " burst "
      << fwd.burstStart << " reorder " << fwd.reorder << " dup " << fwd.duplicate << " ce "
      << fwd.ceMark;
    return d.str();
}

/// Run schedule \p seed; \return an empty string on success, else what went wrong.
std::string
RunSchedule(uint64_t seed, const std::string& recovery, ScheduleStats& stats)
{
    Rng r(seed * 104729 + 3);
    ConnectionConfig cfg = DrawScheduleConfig(r, recovery);
    uint32_t a = 0;
    uint32_t b = 0;
    std::unique_ptr<EngineNetwork> bed = SeededPair(seed, a, b);
    EngineNetwork& n = *bed;
    auto [qa, qb] = n.Connect(a, b, cfg);
    std::string description = DrawScheduleFaults(r, n, a, b, seed, cfg);

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

// ---------------------------------------------------------------------------------------------
// Property: READs return the exact bytes, atomics run exactly once (issue 17).
// ---------------------------------------------------------------------------------------------

/// Counters summed over the READ/atomic schedules of a property run.
struct ReadAtomicStats
{
    uint64_t duplicateRequests{0}; //!< responder: READ/atomic requests seen again
    uint64_t resentResponses{0};   //!< responder: READ responses or atomic ACKs sent again
    uint64_t responseGaps{0};      //!< requester: missing responses asked for again
    uint64_t failedRuns{0};        //!< schedules that ended in RETRY_EXC_ERR (allowed ones)
};

/**
 * Run a random mix of RDMA READs from a region at \p b, fetch-and-adds of 1 on one counter,
 * compare-and-swaps that each expect the previous one's value, and WRITEs, from \p a over its
 * connection \p qa in \p n, whose faults are set; check every completion, the bytes
 * and the atomic words.
 * \param mayFail the faults may spend the retry budget: then a prefix of the work succeeds,
 *        the next request fails with RETRY_EXC_ERR and the rest is flushed, and the atomic
 *        words must still show every successful atomic exactly once
 * \return an empty string on success, else \p description and what went wrong
 */
std::string
RunReadAtomicWorkload(Rng& r,
                      EngineNetwork& n,
                      uint32_t a,
                      uint32_t b,
                      uint32_t qa,
                      const ConnectionConfig& cfg,
                      const std::string& description,
                      bool mayFail,
                      ReadAtomicStats& stats)
{
    const std::string& recovery = cfg.rocev2.recovery;

    // b: a region to read (never-zero bytes), the two atomic words, a WRITE destination.
    // a: where READs land (with 64-byte gaps that must stay zero), the originals, WRITE data.
    enum Kind : uint8_t
    {
        READ,
        FETCH_ADD,
        CMP_SWAP,
        WRITE
    };

    struct Op
    {
        Kind kind;
        uint32_t length; // READ, WRITE
        size_t from;     // READ: offset in the read region; WRITE: in the WRITE source
        size_t to;       // READ: offset in the READ landing area; WRITE: in its destination
        uint32_t nth;    // atomics: how many of its kind came before it
    };

    std::vector<uint8_t> remote(64 * 1024);
    for (auto& byte : remote)
    {
        byte = uint8_t(r.Next() | 1);
    }
    uint64_t words[2] = {0, 0}; // FETCH_ADD counter, CMP_SWAP word (at b)
    std::vector<Op> ops;
    size_t landing = 0;
    size_t written = 0;
    uint32_t adds = 0;
    uint32_t swaps = 0;
    // IRN takes a READ only if all its responses fit the BDP cap (else PostSend: TOO_LONG).
    uint32_t longest = 20000;
    if (recovery == "irn")
    {
        uint32_t cap = cfg.rocev2.maxInflightPackets;
        cap = (cap == 0 || cap > cfg.rocev2.irnWindow) ? cfg.rocev2.irnWindow : cap;
        longest = std::min(longest, cap * cfg.mtu);
    }
    const uint32_t count = 1 + uint32_t(r.Below(40));
    for (uint32_t i = 0; i < count; ++i)
    {
        Op op{Kind(r.Below(4)), 0, 0, 0, 0};
        if (op.kind == READ || op.kind == WRITE)
        {
            op.length = r.Below(8) == 0 ? 0 : uint32_t(1 + r.Below(longest));
            op.from = r.Below(remote.size() - op.length + 1);
            op.to = op.kind == READ ? landing : written;
            (op.kind == READ ? landing : written) += op.length + 64;
        }
        op.nth = op.kind == FETCH_ADD ? adds++ : op.kind == CMP_SWAP ? swaps++ : 0;
        ops.push_back(op);
    }
    std::vector<uint8_t> readDst(landing + 1, 0);
    std::vector<uint8_t> writeDst(written + 1, 0);
    std::vector<uint64_t> originals(count, ~uint64_t(0));
    MemoryRegion rmr = n.At(b).RegisterMemory(remote.data(), remote.size(), ACCESS_REMOTE_READ);
    MemoryRegion amr = n.At(b).RegisterMemory(words, sizeof(words), ACCESS_REMOTE_ATOMIC);
    MemoryRegion wmr = n.At(b).RegisterMemory(writeDst.data(),
                                              writeDst.size(),
                                              ACCESS_LOCAL_WRITE | ACCESS_REMOTE_WRITE);
    MemoryRegion dmr = n.At(a).RegisterMemory(readDst.data(), readDst.size(), ACCESS_LOCAL_WRITE);
    MemoryRegion omr = n.At(a).RegisterMemory(originals.data(), count * 8, ACCESS_LOCAL_WRITE);
    // The WRITE source is the read region's twin at a: the same bytes, so one check serves.
    std::vector<uint8_t> local = remote;
    MemoryRegion smr = n.At(a).RegisterMemory(local.data(), local.size(), 0);
    for (uint32_t i = 0; i < count; ++i)
    {
        const Op& op = ops[i];
        SendWr wr;
        wr.wrId = i;
        switch (op.kind)
        {
        case READ:
            wr.opcode = WrOpcode::RDMA_READ;
            wr.sge = {dmr.addr + op.to, op.length, dmr.lkey};
            wr.remoteAddr = rmr.addr + op.from;
            wr.rkey = rmr.rkey;
            break;
        case WRITE:
            wr.opcode = WrOpcode::RDMA_WRITE;
            wr.sge = {smr.addr + op.from, op.length, smr.lkey};
            wr.remoteAddr = wmr.addr + op.to;
            wr.rkey = wmr.rkey;
            break;
        default:
            bool add = op.kind == FETCH_ADD;
            wr.opcode = add ? WrOpcode::ATOMIC_FETCH_AND_ADD : WrOpcode::ATOMIC_CMP_AND_SWP;
            wr.sge = {omr.addr + 8 * i, 8, omr.lkey};
            wr.remoteAddr = amr.addr + (add ? 0 : 8);
            wr.rkey = amr.rkey;
            wr.compareAdd = add ? 1 : op.nth; // CMP_SWAP n expects n and stores n + 1
            wr.swap = op.nth + 1;
            break;
        }
        PostStatus st = n.At(a).PostSend(0, qa, wr);
        if (st != PostStatus::OK)
        {
            return description + ": PostSend failed: " + PostStatusName(st);
        }
    }
    n.Kick(a);
    // Liveness: every work request completes (or the connection fails) with no stretch
    // without a completion longer than twice MetaRoCE's connection timeout or 100 ms (about
    // 200 of the longest RoCEv2 timeouts drawn here), whichever is longer. Go-back-N
    // on links black-holed 40 % of the time makes progress over hundreds of timeouts (the
    // Flapping family, seed 10718: 424 timeouts in 224 ms), so a fixed horizon is no test.
    const Time quiet = std::max(MilliSeconds(100), 2 * cfg.connectionTimeout);
    Time lastCompletion = n.Now();
    size_t completed = 0;
    while (n.Completions(a).size() < count)
    {
        if (n.RunUntil(n.Now() + MicroSeconds(500)) && n.Completions(a).size() < count)
        {
            return description + ": no events left before completion (stall)";
        }
        if (n.Completions(a).size() != completed)
        {
            completed = n.Completions(a).size();
            lastCompletion = n.Now();
        }
        if (n.Now() - lastCompletion > quiet || n.Now() > MilliSeconds(5000))
        {
            return description + ": " + std::to_string(completed) + "/" + std::to_string(count) +
                   " completions at " + std::to_string(n.Now() / MicroSeconds(1)) +
                   " us, the last at " + std::to_string(lastCompletion / MicroSeconds(1)) + " us";
        }
    }
    n.RunUntil(n.Now() + MilliSeconds(2)); // stray duplicates must change nothing
    if (n.Completions(a).size() != count || !n.Completions(b).empty())
    {
        return description + ": " + std::to_string(n.Completions(a).size()) + "/" +
               std::to_string(count) + " completions at a, " +
               std::to_string(n.Completions(b).size()) + " at b";
    }
    // The successful prefix; after it (only if mayFail) one RETRY_EXC_ERR, then flushes.
    uint32_t done = 0;
    while (done < count && n.Completions(a)[done].status == WcStatus::SUCCESS)
    {
        ++done;
    }
    const bool metaroce = cfg.transport == "metaroce";
    for (uint32_t i = done; i < count; ++i)
    {
        WcStatus want = i == done ? WcStatus::RETRY_EXC_ERR : WcStatus::WR_FLUSH_ERR;
        // MetaRoCE completes later work that finished at both ends with SUCCESS (its
        // FlushStream rule): a WRITE in place, a READ whose bytes all arrived, an atomic
        // whose original value arrived. Its result is checked below like the prefix's.
        bool finished = metaroce && i > done && n.Completions(a)[i].status == WcStatus::SUCCESS;
        if (!mayFail || (n.Completions(a)[i].status != want && !finished) ||
            n.Completions(a)[i].wrId != i)
        {
            return description + ": completion " + std::to_string(i) + " is wr " +
                   std::to_string(n.Completions(a)[i].wrId) + " " +
                   WcStatusName(n.Completions(a)[i].status);
        }
    }
    const WcOpcode expected[] = {WcOpcode::RDMA_READ,
                                 WcOpcode::FETCH_ADD,
                                 WcOpcode::COMP_SWAP,
                                 WcOpcode::RDMA_WRITE};
    // Atomics of a connection run one at a time in Verbs order, so a successful atomic saw
    // every earlier successful one of its kind (at least their count) and at most every
    // earlier one (its nth); a failed one may have run. In the successful prefix that is
    // exactly nth. A compare-and-swap that found its nth swapped.
    uint32_t doneAdds = 0;
    uint32_t doneSwaps = 0;
    uint32_t swapped = 0;
    uint64_t lastAdd = 0;
    for (uint32_t i = 0; i < count; ++i)
    {
        const Completion& c = n.Completions(a)[i];
        const Op& op = ops[i];
        if (c.status != WcStatus::SUCCESS)
        {
            continue;
        }
        if (c.wrId != i || c.opcode != expected[op.kind])
        {
            return description + ": completion " + std::to_string(i) + " is wr " +
                   std::to_string(c.wrId);
        }
        bool atomic = op.kind == FETCH_ADD || op.kind == CMP_SWAP;
        uint32_t& before = op.kind == FETCH_ADD ? doneAdds : doneSwaps;
        if (atomic && (originals[i] < before || originals[i] > op.nth ||
                       (i < done && originals[i] != op.nth) ||
                       (op.kind == FETCH_ADD && before > 0 && originals[i] <= lastAdd)))
        {
            return description + ": atomic " + std::to_string(i) + " found " +
                   std::to_string(originals[i]) + ", not " + std::to_string(op.nth);
        }
        if (atomic)
        {
            ++before;
            swapped += op.kind == CMP_SWAP && originals[i] == op.nth;
            lastAdd = op.kind == FETCH_ADD ? originals[i] : lastAdd;
        }
        std::vector<uint8_t>& into = op.kind == READ ? readDst : writeDst;
        if (!atomic && (!std::equal(remote.begin() + op.from,
                                    remote.begin() + op.from + op.length,
                                    into.begin() + op.to) ||
                        !std::all_of(into.begin() + op.to + op.length,
                                     into.begin() + op.to + op.length + 64,
                                     [](uint8_t byte) { return byte == 0; })))
        {
            return description + (op.kind == READ ? ": READ " : ": WRITE ") + std::to_string(i) +
                   " bytes wrong";
        }
    }
    // Every atomic that completed ran exactly once; one that failed may have run (its answer
    // was lost), but at most once, and the chain of compare-and-swaps stops at the first that
    // did not run.
    if (words[0] < doneAdds || words[0] > adds || words[1] < swapped || words[1] > swaps ||
        (done == count && (words[0] != adds || words[1] != swaps)))
    {
        return description + ": counter " + std::to_string(words[0]) + " after " +
               std::to_string(doneAdds) + "/" + std::to_string(adds) +
               " fetch-and-adds, swap word " + std::to_string(words[1]) + " after " +
               std::to_string(swapped) + "/" + std::to_string(swaps) + " compare-and-swaps";
    }
    stats.duplicateRequests += n.At(b).Counters().Get(Counter::RX_DUPLICATE);
    stats.resentResponses += n.At(b).Counters().Get(Counter::TX_RETRANSMIT);
    stats.responseGaps += n.At(a).Counters().Get(Counter::LOSS_DETECTED);
    stats.failedRuns += done < count;
    if (done < count)
    {
        return "";
    }
    size_t readBytes = 0;
    for (const Op& op : ops)
    {
        readBytes += op.kind == READ ? op.length : 0;
    }
    if (n.At(a).Counters().Get(Counter::BYTES_PLACED) != readBytes)
    {
        return description + ": READ bytes placed " +
               std::to_string(n.At(a).Counters().Get(Counter::BYTES_PLACED)) +
               " != " + std::to_string(readBytes);
    }
    return "";
}

/**
 * Run READ/atomic schedule \p seed: the faults of RunSchedule (and, in one schedule of three,
 * heavy loss of the responses) under RunReadAtomicWorkload.
 * \return an empty string on success, else what went wrong.
 */
std::string
RunReadAtomicSchedule(uint64_t seed, const std::string& recovery, ReadAtomicStats& stats)
{
    Rng r(seed * 7919 + 11);
    ConnectionConfig cfg = DrawScheduleConfig(r, recovery);
    cfg.rocev2.maxRdAtomic = uint8_t(1 + r.Below(16));
    uint32_t a = 0;
    uint32_t b = 0;
    std::unique_ptr<EngineNetwork> bed = SeededPair(seed, a, b);
    EngineNetwork& n = *bed;
    uint32_t qa = n.Connect(a, b, cfg).first;
    std::string description = DrawScheduleFaults(r, n, a, b, seed, cfg);
    if (r.Below(3) == 0)
    {
        n.Link(b, a).loss = 0.02 + r.Uniform() * 0.08; // the responses' direction
    }
    description += " rdAtomic " + std::to_string(cfg.rocev2.maxRdAtomic) + " rev loss " +
                   std::to_string(n.Link(b, a).loss);
    return RunReadAtomicWorkload(r, n, a, b, qa, cfg, description, false, stats);
}

/**
 * READ/atomic schedule \p seed of family \p f (property-families.h): a round trip above the
 * retransmission timeout, a round-trip step, heavy loss of the responses (ACK_LOSS) or
 * flapping links, with the family's settings. \return an empty string on success, else what
 * went wrong.
 */
std::string
RunReadAtomicFamily(Family f, uint64_t seed, const std::string& recovery, ReadAtomicStats& stats)
{
    Rng r(seed * 6151 + 89 * (uint64_t(f) + 1));
    const bool metaroce = recovery == "metaroce";
    ConnectionConfig cfg = DrawFamilyConfig(r, metaroce ? "" : recovery);
    cfg.rocev2.maxRdAtomic = uint8_t(1 + r.Below(16));
    cfg.maxRdAtomic = cfg.rocev2.maxRdAtomic;
    const uint32_t paths = metaroce ? cfg.numPaths : 1;
    uint32_t a = 0;
    uint32_t b = 0;
    std::unique_ptr<EngineNetwork> bed = SeededPair(seed, a, b);
    EngineNetwork& n = *bed;
    std::ostringstream d;
    d << FamilyName(f) << " " << recovery << " seed " << seed << ": mtu " << cfg.mtu << " rdAtomic "
      << int(cfg.rocev2.maxRdAtomic) << " timeout " << int(cfg.rocev2.localAckTimeout);
    bool mayFail = false;
    auto stop = std::make_shared<bool>(false);
    switch (f)
    {
    case Family::RTT_ABOVE_RTO: {
        Time delay = MicroSeconds(120 + int64_t(r.Below(181)));
        if (recovery == "irn")
        {
            // As the family does: the RTO below the round trip, the retry budget above it.
            cfg.rocev2.irnRtoLow = Time(double(2 * delay) * (0.25 + 0.6 * r.Uniform()));
            cfg.rocev2.irnRtoHigh = cfg.rocev2.irnRtoLow + MicroSeconds(int64_t(r.Below(300)));
        }
        double loss = r.Below(2) ? r.Uniform() * 0.01 : 0;
        for (LinkConfig* l : {&n.Link(a, b), &n.Link(b, a)})
        {
            l->delay = delay;
            l->loss = loss;
        }
        d << " delay " << delay / MicroSeconds(1) << " us loss " << loss;
        break;
    }
    case Family::RTT_STEP: {
        Time step = MicroSeconds(int64_t(r.Below(60)));
        if (recovery == "irn")
        {
            cfg.rocev2.irnRtoLow = std::max(cfg.rocev2.irnRtoLow, MicroSeconds(50));
            cfg.rocev2.irnRtoHigh = std::max(cfg.rocev2.irnRtoHigh, cfg.rocev2.irnRtoLow);
        }
        double loss = r.Below(2) ? r.Uniform() * 0.01 : 0;
        n.Link(a, b).loss = loss;
        n.Link(b, a).loss = loss;
        n.At(step, [&n, a, b]() {
            n.Link(a, b).delay = MicroSeconds(100);
            n.Link(b, a).delay = MicroSeconds(100);
        });
        d << " step at " << step / MicroSeconds(1) << " us loss " << loss;
        break;
    }
    case Family::ACK_LOSS: {
        LinkConfig& rev = n.Link(b, a); // READ responses and atomic acknowledges
        rev.loss = r.Uniform() * 0.1;
        if (r.Below(3) == 0)
        {
            rev.burstStart = 0.01;
            rev.burstEnd = 0.3;
            rev.burstLoss = 0.8;
            mayFail = !metaroce; // a burst can outlast retryCount timeouts (as the family says)
        }
        rev.duplicate = r.Below(4) == 0 ? r.Uniform() * 0.05 : 0;
        d << " response loss " << rev.loss << " burst " << rev.burstStart;
        break;
    }
    default: { // FLAPPING
        const int64_t periods[] = {10, 20, 25, 50, 100};
        Time period = MicroSeconds(periods[r.Below(5)]);
        Time down = Time(double(period) * (0.1 + 0.4 * r.Uniform()));
        for (uint32_t p = 0; p < paths; ++p)
        {
            // MetaRoCE: each path flaps with its own phase, as in the multipath family.
            Time phase = metaroce ? Time(r.Uniform() * double(period)) : 0;
            Flap(n, a, b, int(p), period, down, phase, stop);
        }
        // The fixed timer can stay in phase with the outages (and MetaRoCE's path probes
        // resonate with short periods, as the multipath family says).
        mayFail = true;
        d << " period " << period / MicroSeconds(1) << " us down " << down << " ps";
        break;
    }
    }
    uint32_t qa = n.Connect(a, b, cfg).first;
    std::string why = RunReadAtomicWorkload(r, n, a, b, qa, cfg, d.str(), mayFail, stats);
    *stop = true;
    return why;
}

/**
 * Run MetaRoCE READ/atomic schedule \p seed: 1-12 paths, paths of different lengths, and
 * the faults of the MetaRoCE property (loss up to 10 % each way, bursts, reordering,
 * duplication, CE marks) under RunReadAtomicWorkload.
 * \return an empty string on success, else what went wrong.
 */
std::string
RunMetaReadAtomicSchedule(uint64_t seed, ReadAtomicStats& stats)
{
    Rng r(seed * 104729 + 3);
    ConnectionConfig cfg; // transport "metaroce"
    cfg.numPaths = 1 + uint32_t(r.Below(12));
    const uint32_t mtus[] = {256, 1024, 4096};
    cfg.mtu = mtus[r.Below(3)];
    cfg.maxRdAtomic = 1 + uint32_t(r.Below(16));
    cfg.initialPathWindow = double(1 + r.Below(16));
    uint32_t a = 0;
    uint32_t b = 0;
    std::unique_ptr<EngineNetwork> bed = SeededPair(seed, a, b);
    EngineNetwork& n = *bed;
    uint32_t qa = n.Connect(a, b, cfg).first;
    for (uint32_t p = 0; p < cfg.numPaths; ++p)
    {
        for (LinkConfig* l : {&n.Link(a, b, int(p)), &n.Link(b, a, int(p))})
        {
            l->delay = MicroSeconds(1 + int64_t(r.Below(8)));
        }
    }
    const double fwdLoss = r.Uniform() * 0.1;
    const double revLoss = r.Uniform() * 0.1;
    const bool burst = r.Below(4) == 0;
    const double reorder = r.Below(2) ? r.Uniform() * 0.2 : 0;
    const double dup = r.Below(3) == 0 ? r.Uniform() * 0.1 : 0;
    const double ce = r.Below(3) == 0 ? r.Uniform() * 0.05 : 0;
    for (int p = -1; p < int(cfg.numPaths); ++p)
    {
        for (bool forward : {true, false})
        {
            LinkConfig& l = forward ? n.Link(a, b, p) : n.Link(b, a, p);
            l.loss = forward ? fwdLoss : revLoss;
            if (burst)
            {
                l.burstStart = 0.005;
                l.burstEnd = 0.3;
                l.burstLoss = 0.8;
            }
            l.reorder = reorder;
            l.duplicate = dup;
            l.ceMark = ce;
        }
    }
    std::ostringstream d;
    d << "metaroce seed " << seed << ": paths " << cfg.numPaths << " mtu " << cfg.mtu
      << " rdAtomic " << cfg.maxRdAtomic << " loss " << fwdLoss << "/" << revLoss << " burst "
      << burst << " reorder " << reorder << " dup " << dup << " ce " << ce;
    return RunReadAtomicWorkload(r, n, a, b, qa, cfg, d.str(), false, stats);
}

/// READs return the exact bytes and N fetch-and-adds leave exactly N on the MetaRoCE engine,
/// whatever was lost, duplicated or reordered (issue 17).
TEST(MetaRoceReadAtomicProperty, ReadsExactAtomicsExactlyOnce)
{
    ReadAtomicStats stats;
    RunPropertySeeds("MetaRoceReadAtomicProperty", 1, 2000, [&](uint64_t seed) {
        return RunMetaReadAtomicSchedule(seed, stats);
    });
    std::cout << "[property] MetaRoceReadAtomicProperty: " << stats.duplicateRequests
              << " duplicates at the responder, " << stats.resentResponses
              << " packets resent by it" << std::endl;
    EXPECT_GT(stats.duplicateRequests, 0u) << "requests and data do come twice";
    EXPECT_GT(stats.resentResponses, 0u) << "answers are lost and resent";
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

// READs return the exact bytes, N fetch-and-adds leave exactly N, whatever was lost or
// duplicated (issue 17).
TEST_P(RoceV2Property, ReadsExactAtomicsExactlyOnce)
{
    ReadAtomicStats stats;
    const std::string recovery = GetParam();
    RunPropertySeeds("RoceV2ReadAtomicProperty/" + recovery, 1, 300, [&](uint64_t seed) {
        return RunReadAtomicSchedule(seed, recovery, stats);
    });
    // The schedules do lose responses, and duplicate requests reach the responder: READs
    // served again and atomics answered from the replay cache.
    EXPECT_GT(stats.duplicateRequests, 0u);
    EXPECT_GT(stats.resentResponses, 0u);
    EXPECT_GT(stats.responseGaps, 0u);
}

INSTANTIATE_TEST_SUITE_P(Recovery,
                         RoceV2Property,
                         ::testing::Values("gbn", "irn"),
                         [](const ::testing::TestParamInfo<const char*>& info) {
                             return std::string(info.param);
                         });

/// READ/atomic schedules per family and recovery mode in the CI run.
constexpr uint64_t READ_ATOMIC_FAMILY_SEEDS = 50;

/// READs and atomics under the families that stress their recovery: RoCEv2 per recovery mode,
/// and MetaRoCE.
class ReadAtomicFamily : public ::testing::TestWithParam<std::tuple<const char*, Family>>
{
};

TEST_P(ReadAtomicFamily, ReadsExactAtomicsExactlyOnce)
{
    const std::string recovery = std::get<0>(GetParam());
    const Family f = std::get<1>(GetParam());
    ReadAtomicStats stats;
    uint64_t runs = 0;
    RunPropertySeeds("ReadAtomicFamily/" + recovery + "/" + FamilyName(f),
                     1,
                     READ_ATOMIC_FAMILY_SEEDS,
                     [&](uint64_t seed) {
                         ++runs;
                         return RunReadAtomicFamily(f, seed, recovery, stats);
                     });
    std::cout << "[property] ReadAtomicFamily/" << recovery << "/" << FamilyName(f) << ": "
              << stats.failedRuns << " of " << runs
              << " schedules ended in RETRY_EXC_ERR (allowed), " << stats.duplicateRequests
              << " duplicate requests, " << stats.resentResponses << " responses resent"
              << std::endl;
    EXPECT_GT(stats.duplicateRequests, 0u) << "the family makes the requester resend";
    EXPECT_LT(2 * stats.failedRuns, runs) << "most schedules complete (" << stats.failedRuns
                                          << " of " << runs << " ended in RETRY_EXC_ERR)";
}

INSTANTIATE_TEST_SUITE_P(Families,
                         ReadAtomicFamily,
                         ::testing::Combine(::testing::Values("gbn", "irn", "metaroce"),
                                            ::testing::Values(Family::RTT_ABOVE_RTO,
                                                              Family::RTT_STEP,
                                                              Family::ACK_LOSS,
                                                              Family::FLAPPING)),
                         [](const ::testing::TestParamInfo<std::tuple<const char*, Family>>& info) {
                             return std::string(std::get<0>(info.param)) + "_" +
                                    FamilyName(std::get<1>(info.param));
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
