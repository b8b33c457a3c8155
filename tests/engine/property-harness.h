/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#ifndef METAROCE_TEST_PROPERTY_HARNESS_H
#define METAROCE_TEST_PROPERTY_HARNESS_H

#include "engine-network.h"
#include "random-workload.h"

#include <cstdint>
#include <cstdlib>
#include <functional>
#include <gtest/gtest.h>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

/**
 * \file
 * What the property tests of both transports share: the seed-range knobs, the loop over
 * seeds, and one random workload on one connection (posted, run to an end within a bound,
 * and checked: every byte exactly once in the right place, nothing written outside the
 * messages, completions exactly once and in per-stream order).
 *
 * Environment knobs (read by every property test):
 * - METAROCE_PROPERTY_SEEDS=first:count runs seeds first .. first+count-1 instead of the
 *   test's CI range (`./metaroce soak` runs chunks of seeds this way);
 * - METAROCE_PROPERTY_MAX_FAILURES=n stops a test after n failing schedules (default 5;
 *   0 = run every seed);
 * - METAROCE_TEST_PACING_SLACK_US=us gives every endpoint of the testbed that pacer slack
 *   (EndpointConfig::pacingSlack; 0 in CI, 50 on HIL hosts), so that paced senders send in
 *   bursts (tests/support/engine-network.cc).
 */

namespace metaroce
{
namespace test
{

/// The seeds one property test runs.
struct SeedRange
{
    uint64_t first{0}; //!< first seed
    uint64_t count{0}; //!< number of seeds
};

/**
 * \param test the test's name, for the line printed when the range is overridden
 * \param first the CI range's first seed
 * \param count the CI range's size
 * \return the range, from METAROCE_PROPERTY_SEEDS=first:count if set
 */
inline SeedRange
PropertySeedRange(const std::string& test, uint64_t first, uint64_t count)
{
    SeedRange range{first, count};
    const char* env = std::getenv("METAROCE_PROPERTY_SEEDS");
    if (env == nullptr || *env == '\0')
    {
        return range;
    }
    std::istringstream in(env);
    char colon = 0;
    uint64_t f = 0;
    uint64_t c = 0;
    if (!(in >> f >> colon >> c) || colon != ':' || in.get() != EOF)
    {
        ADD_FAILURE() << "METAROCE_PROPERTY_SEEDS=" << env << " is not first:count";
        return range;
    }
    range = {f, c};
    std::cout << "[property] " << test << ": seeds " << f << " .. " << (f + c - 1)
              << " (METAROCE_PROPERTY_SEEDS; CI runs " << first << " .. " << (first + count - 1)
              << ")" << std::endl;
    return range;
}

/**
 * Run \p run for every seed of the test's range, report failures (the first few in full)
 * and print a summary line that `./metaroce soak` adds up:
 * "[property] <test>: <n> schedules, <f> failed".
 * \param test the test's name
 * \param first the CI range's first seed
 * \param count the CI range's size
 * \param run runs one seed; returns an empty string on success, else what went wrong
 */
inline void
RunPropertySeeds(const std::string& test,
                 uint64_t first,
                 uint64_t count,
                 const std::function<std::string(uint64_t)>& run)
{
    SeedRange range = PropertySeedRange(test, first, count);
    uint64_t maxFailures = 5;
    if (const char* env = std::getenv("METAROCE_PROPERTY_MAX_FAILURES"))
    {
        maxFailures = std::strtoull(env, nullptr, 10);
    }
    uint64_t ran = 0;
    uint64_t failures = 0;
    for (uint64_t seed = range.first; seed < range.first + range.count; ++seed)
    {
        ++ran;
        std::string why = run(seed);
        if (!why.empty())
        {
            ADD_FAILURE() << test << ": " << why;
            if (++failures == maxFailures)
            {
                break;
            }
        }
    }
    std::cout << "[property] " << test << ": " << ran << " schedules, " << failures << " failed"
              << (ran < range.count ? " (stopped early)" : "") << std::endl;
}

/// Simulated-time bound of a schedule: one that neither completes nor fails by then hangs.
constexpr Time SCHEDULE_TIME_BOUND = MilliSeconds(2000);
/// Event bound of a schedule (a livelock can spin without advancing much simulated time).
constexpr uint64_t SCHEDULE_EVENT_BOUND = 4000000;

/**
 * Run \p n until \p done() holds, checking every 100 us of simulated time.
 * \return an empty string, or why the schedule hung (idle, time bound or event bound)
 */
inline std::string
RunUntilDone(EngineNetwork& n, const std::function<bool()>& done)
{
    const uint64_t events = n.Events();
    while (!done())
    {
        if (n.Now() >= SCHEDULE_TIME_BOUND)
        {
            return "hang: neither completed nor failed within " +
                   std::to_string(SCHEDULE_TIME_BOUND / MilliSeconds(1)) + " ms";
        }
        if (n.Events() - events > SCHEDULE_EVENT_BOUND)
        {
            return "hang: neither completed nor failed within " +
                   std::to_string(SCHEDULE_EVENT_BOUND) + " events (at " +
                   std::to_string(n.Now() / MicroSeconds(1)) + " us)";
        }
        if (n.RunUntil(n.Now() + MicroSeconds(100)) && !done())
        {
            return "stall: no events left at " + std::to_string(n.Now() / MicroSeconds(1)) + " us";
        }
    }
    return "";
}

/**
 * Apply \p change to every link between \p a and \p b, both directions: the default link and
 * the links of paths 0 .. paths-1 (a path's link copies the default when first used, so a
 * change after that must reach it too).
 */
inline void
ForEachLink(EngineNetwork& n,
            uint32_t a,
            uint32_t b,
            uint32_t paths,
            const std::function<void(LinkConfig&)>& change)
{
    for (int p = -1; p < int(paths); ++p)
    {
        change(n.Link(a, b, p));
        change(n.Link(b, a, p));
    }
}

/// Receive work requests of a Traffic are numbered from its wrBase plus this.
constexpr uint64_t RECV_WR_OFFSET = 100000;

/**
 * One random workload from endpoint a to endpoint b over one connection: its buffers and
 * regions, its work requests (send i has wrId wrBase + i, its receive wrBase +
 * RECV_WR_OFFSET + i) and the checks of what arrived.
 */
struct Traffic
{
    uint32_t a{0};      //!< sending endpoint
    uint32_t b{1};      //!< receiving endpoint
    uint32_t qa{0};     //!< connection on a
    uint32_t qb{0};     //!< connection on b
    uint64_t wrBase{0}; //!< first wrId (unique per schedule)
    RandomWorkload w;   //!< messages and buffers
    MemoryRegion smr;   //!< source region on a
    MemoryRegion dmr;   //!< destination region on b
    /// The message whose packet can never be delivered (-1: none). It must fail with
    /// RETRY_EXC_ERR, the ones before it succeed and the later ones be flushed; this
    /// expectation assumes a single stream.
    int64_t failAt{-1};
    /// The transport may legitimately run out of retries (IB's retry budget against a fault
    /// that outlasts it): a RETRY_EXC_ERR is then accepted as the failAt of a single stream.
    bool mayExhaustRetries{false};

    /// After a RETRY_EXC_ERR (failAt), which messages count as delivered: those of failAt's
    /// stream before it, and any other the requester reported SUCCESS and may have. MetaRoCE
    /// places out of order, so a message acknowledged before the error is delivered unless a
    /// failed or flushed receive-consuming message of its stream holds an earlier receive
    /// slot; unfinished messages of other streams are flushed.
    mutable std::vector<bool> lateDelivered;

    /// \return whether message \p i must arrive whole.
    bool Delivered(size_t i) const
    {
        if (failAt < 0)
        {
            return true;
        }
        return i < lateDelivered.size() ? bool(lateDelivered[i]) : int64_t(i) < failAt;
    }

    /// Fill lateDelivered from the requester's completions in \p n.
    void FindLateDeliveries(const EngineNetwork& n) const
    {
        lateDelivered.clear();
        if (failAt < 0)
        {
            return;
        }
        std::vector<bool> success(w.msgs.size(), false);
        for (const Completion& c : n.Completions(a))
        {
            if (IsSend(c) && c.status == WcStatus::SUCCESS)
            {
                success[c.wrId - wrBase] = true;
            }
        }
        lateDelivered.assign(w.msgs.size(), false);
        const uint16_t failedStream = w.msgs[size_t(failAt)].stream;
        std::map<uint16_t, bool> blocked; // per stream: a receive slot is held before
        for (size_t i = 0; i < w.msgs.size(); ++i)
        {
            const RandomMessage& m = w.msgs[i];
            bool consumes = m.op != WrOpcode::RDMA_WRITE;
            bool ok = m.stream == failedStream && int64_t(i) < failAt
                          ? true
                          : int64_t(i) != failAt && success[i] && !(consumes && blocked[m.stream]);
            lateDelivered[i] = ok;
            if (!ok && consumes)
            {
                blocked[m.stream] = true;
            }
        }
    }

    /// \return the receive completions to wait for.
    size_t ExpectedRecvs() const
    {
        size_t k = 0;
        for (size_t i = 0; i < w.msgs.size(); ++i)
        {
            k += w.msgs[i].op != WrOpcode::RDMA_WRITE && Delivered(i);
        }
        return k;
    }

    /// \return whether \p c belongs to this traffic's sends.
    bool IsSend(const Completion& c) const
    {
        return c.wrId >= wrBase && c.wrId < wrBase + w.msgs.size();
    }

    /// \return whether \p c belongs to this traffic's receives.
    bool IsRecv(const Completion& c) const
    {
        return c.wrId >= wrBase + RECV_WR_OFFSET &&
               c.wrId < wrBase + RECV_WR_OFFSET + w.msgs.size();
    }

    /**
     * \return whether every send and every expected receive has completed, or every send has
     * and one failed unexpectedly (receives then never complete; Check says what failed)
     */
    bool Done(const EngineNetwork& n) const
    {
        size_t sends = 0;
        size_t recvs = 0;
        bool failed = false;
        for (const Completion& c : n.Completions(a))
        {
            sends += IsSend(c);
            failed |= IsSend(c) && c.status != WcStatus::SUCCESS && failAt < 0;
        }
        for (const Completion& c : n.Completions(b))
        {
            recvs += IsRecv(c);
        }
        return sends >= w.msgs.size() && (recvs >= ExpectedRecvs() || failed);
    }

    /// \return how far the traffic got: "<s>/<n> sends, <r>/<m> receives completed".
    std::string Progress(const EngineNetwork& n) const
    {
        size_t sends = 0;
        size_t recvs = 0;
        for (const Completion& c : n.Completions(a))
        {
            sends += IsSend(c);
        }
        for (const Completion& c : n.Completions(b))
        {
            recvs += IsRecv(c);
        }
        return std::to_string(sends) + "/" + std::to_string(w.msgs.size()) + " sends, " +
               std::to_string(recvs) + "/" + std::to_string(ExpectedRecvs()) +
               " receives completed";
    }

    /**
     * Register the buffers and post the work requests: receive i at \p recvAt[i] (now if
     * \p recvAt is empty), then every send now.
     * \return an empty string, or which call failed
     */
    std::string Post(EngineNetwork& n, const std::vector<Time>& recvAt = {})
    {
        smr = n.At(a).RegisterMemory(w.src.data(), w.src.size(), 0);
        dmr = n.At(b).RegisterMemory(w.dst.data(),
                                     w.dst.size(),
                                     ACCESS_LOCAL_WRITE | ACCESS_REMOTE_WRITE);
        if (smr.lkey == 0 || dmr.lkey == 0)
        {
            return "RegisterMemory failed";
        }
        for (size_t i = 0; i < w.msgs.size(); ++i)
        {
            const RandomMessage& m = w.msgs[i];
            if (m.op == WrOpcode::RDMA_WRITE)
            {
                continue;
            }
            RecvWr rw;
            rw.wrId = wrBase + RECV_WR_OFFSET + i;
            rw.streamId = m.stream;
            if (m.op != WrOpcode::RDMA_WRITE_WITH_IMM)
            {
                rw.sge = {dmr.addr + m.dstOffset, m.length, dmr.lkey};
            }
            if (recvAt.empty())
            {
                if (n.At(b).PostRecv(n.Now(), qb, rw) != PostStatus::OK)
                {
                    return "PostRecv failed";
                }
                continue;
            }
            // A late receive that cannot be posted shows up as a missing completion.
            n.At(recvAt[i], [&n, b = b, qb = qb, rw]() {
                n.At(b).PostRecv(n.Now(), qb, rw);
                n.Kick(b);
            });
        }
        for (size_t i = 0; i < w.msgs.size(); ++i)
        {
            const RandomMessage& m = w.msgs[i];
            SendWr wr;
            wr.wrId = wrBase + i;
            wr.opcode = m.op;
            wr.streamId = m.stream;
            wr.sge = {smr.addr + m.srcOffset, m.length, smr.lkey};
            wr.remoteAddr = dmr.addr + m.dstOffset;
            wr.rkey = dmr.rkey;
            wr.immData = m.imm;
            if (n.At(a).PostSend(n.Now(), qa, wr) != PostStatus::OK)
            {
                return "PostSend failed";
            }
        }
        n.Kick(a);
        return "";
    }

    /**
     * Check the destination memory: delivered messages hold exactly their bytes, the others
     * their bytes or zero (a partly delivered message), and every gap stays zero.
     * \return an empty string, or what is wrong
     */
    std::string CheckMemory() const
    {
        for (size_t i = 0; i < w.msgs.size(); ++i)
        {
            const RandomMessage& m = w.msgs[i];
            for (uint32_t k = 0; k < m.length; ++k)
            {
                uint8_t got = w.dst[m.dstOffset + k];
                uint8_t want = w.src[m.srcOffset + k];
                if (got != want && (Delivered(i) || got != 0))
                {
                    return "message " + std::to_string(i) + " byte " + std::to_string(k) + " wrong";
                }
            }
            for (size_t k = 0; k < 64; ++k)
            {
                if (w.dst[m.dstOffset + m.length + k] != 0)
                {
                    return "bytes after message " + std::to_string(i) + " were written";
                }
            }
        }
        if (w.dst.back() != 0)
        {
            return "the byte after the last message was written";
        }
        return "";
    }

    /**
     * Check completions and memory (after Done and a drain).
     * \return an empty string, or what is wrong
     */
    std::string Check(const EngineNetwork& n) const
    {
        FindLateDeliveries(n);
        if (mayExhaustRetries && failAt < 0)
        {
            for (const Completion& c : n.Completions(a))
            {
                if (IsSend(c) && c.status == WcStatus::RETRY_EXC_ERR)
                {
                    Traffic failed = *this;
                    failed.failAt = int64_t(c.wrId - wrBase);
                    return failed.Check(n);
                }
            }
        }
        const size_t count = w.msgs.size();
        // The first failure tells more than the flushes it caused.
        for (const Completion& c : n.Completions(a))
        {
            if (IsSend(c) && failAt < 0 && c.status != WcStatus::SUCCESS &&
                c.status != WcStatus::WR_FLUSH_ERR)
            {
                return "send " + std::to_string(c.wrId - wrBase) + " completed " +
                       WcStatusName(c.status);
            }
        }
        std::vector<int> seen(count, 0);
        std::map<uint16_t, size_t> last;
        size_t sends = 0;
        for (const Completion& c : n.Completions(a))
        {
            if (!IsSend(c))
            {
                continue;
            }
            size_t i = c.wrId - wrBase;
            const RandomMessage& m = w.msgs[i];
            if (seen[i]++)
            {
                return "send " + std::to_string(i) + " completed twice";
            }
            ++sends;
            if (c.connectionId != qa)
            {
                return "send " + std::to_string(i) + " completed on another connection";
            }
            WcStatus want = Delivered(i)           ? WcStatus::SUCCESS
                            : int64_t(i) == failAt ? WcStatus::RETRY_EXC_ERR
                                                   : WcStatus::WR_FLUSH_ERR;
            if (c.status != want)
            {
                return "send " + std::to_string(i) + " completed " + WcStatusName(c.status) +
                       ", expected " + WcStatusName(want);
            }
            if (last.count(m.stream) && i < last[m.stream])
            {
                return "send completions out of stream order";
            }
            last[m.stream] = i;
        }
        if (sends != count)
        {
            return std::to_string(sends) + "/" + std::to_string(count) + " send completions";
        }
        std::fill(seen.begin(), seen.end(), 0);
        last.clear();
        size_t recvs = 0;
        for (const Completion& c : n.Completions(b))
        {
            if (!IsRecv(c))
            {
                continue;
            }
            size_t i = c.wrId - wrBase - RECV_WR_OFFSET;
            const RandomMessage& m = w.msgs[i];
            // Under mayExhaustRetries the responder may have received a message whose ACKs
            // the requester never saw (it then must hold exactly its bytes).
            if (m.op == WrOpcode::RDMA_WRITE || seen[i]++ || (!Delivered(i) && !mayExhaustRetries))
            {
                return "receive " + std::to_string(i) + " completed twice or unexpectedly";
            }
            ++recvs;
            bool imm = m.op == WrOpcode::SEND_WITH_IMM || m.op == WrOpcode::RDMA_WRITE_WITH_IMM;
            if (c.status != WcStatus::SUCCESS || c.connectionId != qb || c.byteLen != m.length ||
                c.streamId != m.stream || c.hasImm != imm || (imm && c.immData != m.imm))
            {
                return "receive completion of message " + std::to_string(i) + " wrong (" +
                       WcStatusName(c.status) + ")";
            }
            if (last.count(m.stream) && i < last[m.stream])
            {
                return "receive completions out of stream order";
            }
            if (!std::equal(w.src.begin() + m.srcOffset,
                            w.src.begin() + m.srcOffset + m.length,
                            w.dst.begin() + m.dstOffset))
            {
                return "message " + std::to_string(i) + " completed without its bytes";
            }
            last[m.stream] = i;
        }
        if (mayExhaustRetries ? recvs < ExpectedRecvs() : recvs != ExpectedRecvs())
        {
            return std::to_string(recvs) + "/" + std::to_string(ExpectedRecvs()) +
                   " receive completions";
        }
        return CheckMemory();
    }
};

} // namespace test
} // namespace metaroce

#endif // METAROCE_TEST_PROPERTY_HARNESS_H
