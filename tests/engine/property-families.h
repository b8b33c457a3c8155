/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#ifndef METAROCE_TEST_PROPERTY_FAMILIES_H
#define METAROCE_TEST_PROPERTY_FAMILIES_H

#include "engine-network.h"
#include "metaroce-rocev2-connection.h"
#include "property-harness.h"
#include "random-workload.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <ostream>
#include <sstream>
#include <string>
#include <vector>

/**
 * \file
 * Schedule families of the property tests of both transports (issue 15), each aimed at a
 * class of defect that random loss and reordering do not reach: round trips above the RTO,
 * a round trip that steps up mid-transfer, loss of ACKs only, every path flapping, late
 * receives, a packet that can never be delivered, and connection churn. Every schedule must
 * end (complete, or fail as the family prescribes) within SCHEDULE_TIME_BOUND and
 * SCHEDULE_EVENT_BOUND, with the invariants of Traffic::Check.
 */

namespace metaroce
{
namespace test
{

/// A schedule family.
enum class Family : uint8_t
{
    RTT_ABOVE_RTO, //!< one-way delay 120-300 us: the round trip exceeds rtoInitial (200 us)
    RTT_STEP,      //!< every link goes from 2 us to 100 us one-way partway through
    ACK_LOSS,      //!< loss (random and bursty) on the ACK direction only
    FLAPPING,      //!< every path black-holed periodically, periods that divide 100 us
    LATE_RECEIVES, //!< receives posted up to 3 ms after the SENDs (RNR NAKs)
    UNDELIVERABLE, //!< every copy of one data packet dropped: RETRY_EXC_ERR, then flushes
    CHURN,         //!< connections created, used and destroyed under a small maxConnections
};

/// Every family, for INSTANTIATE_TEST_SUITE_P.
constexpr Family ALL_FAMILIES[] = {Family::RTT_ABOVE_RTO,
                                   Family::RTT_STEP,
                                   Family::ACK_LOSS,
                                   Family::FLAPPING,
                                   Family::LATE_RECEIVES,
                                   Family::UNDELIVERABLE,
                                   Family::CHURN};

/// \return the family's name (a valid gtest parameter name).
inline const char*
FamilyName(Family f)
{
    switch (f)
    {
    case Family::RTT_ABOVE_RTO:
        return "RttAboveRto";
    case Family::RTT_STEP:
        return "RttStep";
    case Family::ACK_LOSS:
        return "AckLoss";
    case Family::FLAPPING:
        return "Flapping";
    case Family::LATE_RECEIVES:
        return "LateReceives";
    case Family::UNDELIVERABLE:
        return "Undeliverable";
    case Family::CHURN:
        return "Churn";
    }
    return "?";
}

/// Print \p f by name in gtest's messages.
inline void
PrintTo(Family f, std::ostream* os)
{
    *os << FamilyName(f);
}

/**
 * Draw the connection settings of a family schedule, as the transport's base property test
 * does (the timers stay at their defaults: the families are about them).
 * \param recovery "gbn" or "irn" for RoCEv2; empty for MetaRoCE
 */
inline ConnectionConfig
DrawFamilyConfig(Rng& r, const std::string& recovery)
{
    ConnectionConfig cfg;
    const uint32_t mtus[] = {256, 1024, 4096};
    cfg.mtu = mtus[r.Below(3)];
    if (recovery.empty())
    {
        cfg.numPaths = 1 + uint32_t(r.Below(8));
        cfg.reorderThreshold = 1 + uint32_t(r.Below(3));
        cfg.ackEveryPackets = 1 + uint32_t(r.Below(4));
        cfg.initialPathWindow = double(1 + r.Below(16));
        cfg.maxPathWindow = std::max(cfg.initialPathWindow, 64.0);
        return cfg;
    }
    cfg.transport = "rocev2";
    cfg.rocev2.recovery = recovery;
    cfg.rocev2.ackEveryPackets = 1 + uint32_t(r.Below(8));
    cfg.rocev2.ackDelay = MicroSeconds(int64_t(r.Below(4)));
    cfg.rocev2.localAckTimeout = uint8_t(5 + r.Below(3)); // 131 us .. 524 us
    cfg.rocev2.maxInflightPackets = r.Below(3) == 0 ? uint32_t(4 + r.Below(60)) : 0;
    if (recovery == "irn")
    {
        cfg.rocev2.irnWindow = 16u << (2 * r.Below(4)); // 16 .. 1024
        cfg.rocev2.irnRtoLow = MicroSeconds(int64_t(20 + r.Below(80)));
        cfg.rocev2.irnRtoHigh = cfg.rocev2.irnRtoLow + MicroSeconds(int64_t(r.Below(300)));
        cfg.rocev2.irnLowThreshold = uint32_t(r.Below(8));
    }
    return cfg;
}

/**
 * Create and connect a connection pair with \p cfg.
 * \return an empty string, or why not
 */
inline std::string
ConnectPair(EngineNetwork& n,
            uint32_t a,
            uint32_t b,
            const ConnectionConfig& cfg,
            uint32_t& qa,
            uint32_t& qb)
{
    std::string why;
    if (n.At(a).CreateConnection(cfg, qa, &why) != PostStatus::OK ||
        n.At(b).CreateConnection(cfg, qb, &why) != PostStatus::OK)
    {
        return "CreateConnection failed with " + std::to_string(n.At(a).ConnectionCount()) +
               " and " + std::to_string(n.At(b).ConnectionCount()) + " live connections " + why;
    }
    if (n.At(a).Connect(qa, EngineNetwork::AddressOf(b), qb) != PostStatus::OK ||
        n.At(b).Connect(qb, EngineNetwork::AddressOf(a), qa) != PostStatus::OK)
    {
        return "Connect failed";
    }
    return "";
}

/**
 * Black-hole path \p path (both directions) for \p down of every \p period from \p start on,
 * until \p stop is set; path 0 also carries the default link (RoCEv2's only link).
 */
inline void
Flap(EngineNetwork& n,
     uint32_t a,
     uint32_t b,
     int path,
     Time period,
     Time down,
     Time start,
     std::shared_ptr<bool> stop)
{
    auto set = [&n, a, b, path](bool hole) {
        for (int p : {path, path == 0 ? -1 : path})
        {
            n.Link(a, b, p).blackHole = hole;
            n.Link(b, a, p).blackHole = hole;
        }
    };
    n.At(start, [&n, a, b, path, period, down, start, stop, set]() {
        if (*stop)
        {
            return;
        }
        set(true);
        n.At(start + down, [set]() { set(false); });
        Flap(n, a, b, path, period, down, start + period, stop);
    });
}

/// \return the nonzero counters of \p ep, "NAME=value ...", for failure messages.
inline std::string
CounterSummary(const Endpoint& ep)
{
    std::ostringstream os;
    for (size_t c = 0; c < size_t(Counter::COUNT); ++c)
    {
        if (uint64_t v = ep.Counters().Get(Counter(c)))
        {
            os << " " << CounterName(Counter(c)) << "=" << v;
        }
    }
    return os.str();
}

/// \return the packets of a \p length-byte message at \p mtu (a zero-length one sends one).
inline uint32_t
PacketsOf(uint32_t length, uint32_t mtu)
{
    return std::max<uint32_t>(1, (length + mtu - 1) / mtu);
}

/**
 * Connection churn: rounds of creating up to maxConnections pairs, running a workload on
 * each (to completion, or destroying them mid-transfer), destroying them and deregistering
 * their memory. Every create must succeed, completed rounds pass Traffic::Check, and no
 * byte of an earlier round's memory changes after it ended.
 */
inline std::string
RunChurn(Rng& r, uint64_t seed, const ConnectionConfig& cfg, std::string description)
{
    EndpointConfig ecfg;
    ecfg.maxConnections = 1 + uint32_t(r.Below(4));
    description += " maxConnections " + std::to_string(ecfg.maxConnections);
    NetworkConfig net;
    net.seed = seed + 1;
    net.checkInvariants = true;
    EngineNetwork n(net);
    uint32_t a = n.AddEndpoint(ecfg);
    uint32_t b = n.AddEndpoint(ecfg);
    LinkConfig& fwd = n.Link(a, b);
    fwd.loss = r.Uniform() * 0.02;
    n.Link(b, a).loss = r.Uniform() * 0.02;
    const uint32_t streams = cfg.transport == "rocev2" ? 0 : 4;
    const uint32_t rounds = 2 * ecfg.maxConnections + 2 + uint32_t(r.Below(3));
    std::vector<std::unique_ptr<Traffic>> ended;  // kept alive: late writes must not land
    std::vector<std::vector<uint8_t>> endedBytes; // their destination bytes when they ended
    uint64_t wrBase = 0;
    for (uint32_t round = 0; round < rounds; ++round)
    {
        const std::string at = description + " round " + std::to_string(round) + ": ";
        const uint32_t pairs = 1 + uint32_t(r.Below(ecfg.maxConnections));
        const bool midFlight = r.Below(4) == 0;
        std::vector<std::unique_ptr<Traffic>> live;
        uint64_t placed = n.At(b).Counters().Get(Counter::BYTES_PLACED);
        uint64_t bytes = 0;
        for (uint32_t k = 0; k < pairs; ++k)
        {
            auto t = std::make_unique<Traffic>();
            t->a = a;
            t->b = b;
            t->wrBase = wrBase;
            wrBase += 2 * RECV_WR_OFFSET;
            std::string why = ConnectPair(n, a, b, cfg, t->qa, t->qb);
            if (!why.empty())
            {
                return at + why;
            }
            t->w = DrawRandomWorkload(r, streams);
            bytes += t->w.srcBytes;
            why = t->Post(n);
            if (!why.empty())
            {
                return at + why;
            }
            live.push_back(std::move(t));
        }
        if (midFlight)
        {
            // Destroy with work outstanding; nothing may land afterwards, and the QPNs (and
            // their table slots) must be free for the next round.
            n.RunUntil(n.Now() + NanoSeconds(int64_t(r.Below(30000))));
        }
        else
        {
            std::string why = RunUntilDone(n, [&n, &live]() {
                return std::all_of(live.begin(), live.end(), [&n](const auto& t) {
                    return t->Done(n);
                });
            });
            if (!why.empty())
            {
                return at + why;
            }
            n.RunUntil(n.Now() + MilliSeconds(1));
            for (const auto& t : live)
            {
                why = t->Check(n);
                if (why.empty())
                {
                    why = n.InvariantFailure();
                }
                if (!why.empty())
                {
                    return at + why;
                }
            }
            uint64_t now = n.At(b).Counters().Get(Counter::BYTES_PLACED);
            if (now - placed != bytes)
            {
                return at + "placed " + std::to_string(now - placed) + " bytes, expected " +
                       std::to_string(bytes) + " (exactly once)";
            }
        }
        for (const auto& t : live)
        {
            if (!n.At(a).DestroyConnection(t->qa) || !n.At(b).DestroyConnection(t->qb))
            {
                return at + "DestroyConnection failed";
            }
        }
        // Let packets still in the fabric arrive at the destroyed connections.
        n.RunUntil(n.Now() + MilliSeconds(1));
        for (auto& t : live)
        {
            if (midFlight)
            {
                // Work dropped by DestroyConnection: a message may be partly there, but
                // nothing may land outside the messages.
                t->failAt = 0;
                std::string why = t->CheckMemory();
                if (!why.empty())
                {
                    return at + "destroyed mid-transfer: " + why;
                }
            }
            if (!n.At(a).DeregisterMemory(t->smr.lkey) || !n.At(b).DeregisterMemory(t->dmr.lkey))
            {
                return at + "DeregisterMemory failed";
            }
            endedBytes.push_back(t->w.dst);
            ended.push_back(std::move(t));
        }
        if (n.At(a).ConnectionCount() != 0 || n.At(b).ConnectionCount() != 0)
        {
            return at + "connections left after destroying them all";
        }
    }
    n.RunUntil(n.Now() + MilliSeconds(2));
    for (size_t i = 0; i < ended.size(); ++i)
    {
        if (ended[i]->w.dst != endedBytes[i])
        {
            return description + ": memory of an ended round changed later";
        }
    }
    // Every completion belongs to one traffic (no stray wrIds from dropped work).
    for (uint32_t e : {a, b})
    {
        for (const Completion& c : n.Completions(e))
        {
            if (std::none_of(ended.begin(), ended.end(), [&c](const auto& t) {
                    return t->IsSend(c) || t->IsRecv(c);
                }))
            {
                return description + ": completion of unknown wr " + std::to_string(c.wrId);
            }
        }
    }
    return "";
}

/**
 * Run one schedule of family \p f.
 * \param seed the schedule
 * \param recovery "gbn" or "irn" for RoCEv2; empty for MetaRoCE
 * \return an empty string on success, else the schedule and what went wrong
 */
inline std::string
RunFamilySchedule(Family f, uint64_t seed, const std::string& recovery)
{
    Rng r(seed * 6151 + 97 * (uint64_t(f) + 1));
    const bool roce = !recovery.empty();
    ConnectionConfig cfg = DrawFamilyConfig(r, recovery);
    const uint32_t paths = roce ? 0 : cfg.numPaths;
    std::ostringstream d;
    d << FamilyName(f) << " " << (roce ? recovery : std::string("metaroce")) << " seed " << seed
      << ": mtu " << cfg.mtu;
    if (roce)
    {
        d << " ackEvery " << cfg.rocev2.ackEveryPackets << " cap " << cfg.rocev2.maxInflightPackets
          << " timeout " << int(cfg.rocev2.localAckTimeout);
        if (recovery == "irn")
        {
            d << " window " << cfg.rocev2.irnWindow << " rtoLow "
              << cfg.rocev2.irnRtoLow / MicroSeconds(1) << " rtoHigh "
              << cfg.rocev2.irnRtoHigh / MicroSeconds(1);
        }
    }
    else
    {
        d << " paths " << cfg.numPaths << " reorderThr " << cfg.reorderThreshold << " ackEvery "
          << cfg.ackEveryPackets << " window " << cfg.initialPathWindow;
    }
    if (f == Family::CHURN)
    {
        return RunChurn(r, seed, cfg, d.str());
    }

    Traffic t;
    t.w = DrawRandomWorkload(r, roce || f == Family::UNDELIVERABLE ? 0 : 4);
    const std::vector<RandomMessage>& msgs = t.w.msgs;
    std::vector<Time> recvAt;
    auto stop = std::make_shared<bool>(false);
    NetworkConfig net;
    net.seed = seed + 1;
    net.checkInvariants = true;
    EngineNetwork n(net);
    uint32_t a = n.AddEndpoint();
    uint32_t b = n.AddEndpoint();
    t.a = a;
    t.b = b;

    // Faults. Links are set before the connection sends, so every path starts from them.
    switch (f)
    {
    case Family::RTT_ABOVE_RTO: {
        Time delay = MicroSeconds(120 + int64_t(r.Below(181)));
        double loss = r.Below(2) ? r.Uniform() * 0.01 : 0;
        if (recovery == "irn")
        {
            // IRN's timer does not back off and IB gives up after retryCount timeouts: keep
            // the RTO below the round trip but the retry budget above it.
            cfg.rocev2.irnRtoLow = Time(double(2 * delay) * (0.25 + 0.6 * r.Uniform()));
            cfg.rocev2.irnRtoHigh = cfg.rocev2.irnRtoLow + MicroSeconds(int64_t(r.Below(300)));
            d << " rtoLow " << cfg.rocev2.irnRtoLow / MicroSeconds(1);
        }
        ForEachLink(n, a, b, paths, [delay, loss](LinkConfig& l) {
            l.delay = delay;
            l.loss = loss;
        });
        d << " delay " << delay / MicroSeconds(1) << " us loss " << loss;
        break;
    }
    case Family::RTT_STEP: {
        // Partway through: the step lands before the last byte would leave at line rate.
        Time transfer = TransmissionTime(t.w.srcBytes, 100e9) + MicroSeconds(5);
        Time step = Time(r.Uniform() * double(transfer));
        double loss = r.Below(2) ? r.Uniform() * 0.01 : 0;
        if (recovery == "irn")
        {
            // As above: IRN's retry budget must span the 200 us round trip after the step.
            cfg.rocev2.irnRtoLow = std::max(cfg.rocev2.irnRtoLow, MicroSeconds(50));
            cfg.rocev2.irnRtoHigh = std::max(cfg.rocev2.irnRtoHigh, cfg.rocev2.irnRtoLow);
        }
        ForEachLink(n, a, b, paths, [loss](LinkConfig& l) { l.loss = loss; });
        n.At(step, [&n, a, b, paths]() {
            ForEachLink(n, a, b, paths, [](LinkConfig& l) { l.delay = MicroSeconds(100); });
        });
        d << " step at " << step << " ps loss " << loss;
        break;
    }
    case Family::ACK_LOSS: {
        LinkConfig& rev = n.Link(b, a);
        rev.loss = r.Uniform() * (roce ? 0.1 : 0.3);
        if (r.Below(3) == 0)
        {
            rev.burstStart = 0.01;
            rev.burstEnd = 0.3;
            rev.burstLoss = 0.8;
            // The burst state moves per packet: when only a lone retransmission's ACK is left,
            // a burst can outlast RoCEv2's retryCount timeouts, and IB then gives up.
            t.mayExhaustRetries = roce;
        }
        rev.duplicate = r.Below(4) == 0 ? r.Uniform() * 0.05 : 0;
        d << " ack loss " << rev.loss << " burst " << rev.burstStart;
        break;
    }
    case Family::FLAPPING: {
        const int64_t periods[] = {10, 20, 25, 50, 100};
        Time period = MicroSeconds(periods[r.Below(5)]);
        Time down = Time(double(period) * (0.1 + 0.4 * r.Uniform()));
        bool inPhase = r.Below(2) == 0;
        // RoCEv2's fixed timer can stay in phase with the outages and spend IB's retry
        // budget (retryCount timeouts without progress): an error then, but never a hang.
        // MetaRoCE too, when the period resonates with its round trip: a path that answered
        // a probe in an up phase resumes data one round trip later, in a down phase, so on a
        // 10 us period with half of it down hardly any data gets through and a packet can
        // go through retryLimit timeouts with nothing acknowledged (IB's rule, per packet).
        t.mayExhaustRetries = true;
        Time start = 0;
        if (!roce && r.Below(3) == 0)
        {
            // An outage long enough to fail every path first, so that recovery rests on the
            // probes of failed paths while they flap.
            start = MicroSeconds(300 + int64_t(r.Below(1700)));
            ForEachLink(n, a, b, paths, [](LinkConfig& l) { l.blackHole = true; });
            n.At(start, [&n, a, b, paths]() {
                ForEachLink(n, a, b, paths, [](LinkConfig& l) { l.blackHole = false; });
            });
        }
        for (int p = 0; p < int(std::max<uint32_t>(paths, 1)); ++p)
        {
            Time phase = inPhase ? 0 : Time(r.Uniform() * double(period));
            Flap(n, a, b, p, period, down, start + phase, stop);
        }
        d << " period " << period / MicroSeconds(1) << " us down " << down << " ps "
          << (inPhase ? "in phase" : "random phases") << " outage " << start << " ps";
        break;
    }
    case Family::LATE_RECEIVES: {
        // Up to 3 ms late (log-uniform from 10 us); a stream's receives stay in its order.
        Time late = Time(double(MicroSeconds(10)) * std::pow(300.0, r.Uniform()));
        std::map<uint16_t, Time> streamAt;
        for (const RandomMessage& m : msgs)
        {
            Time at = r.Below(4) == 0 ? 0 : Time(r.Uniform() * double(late));
            at = std::max(at, streamAt[m.stream]);
            streamAt[m.stream] = at;
            recvAt.push_back(at);
        }
        // A finite RNR retry limit whose retries span twice the lateness, so that every
        // message still succeeds when retries are counted per message (as IB counts them).
        if (r.Below(2))
        {
            if (roce)
            {
                cfg.rocev2.rnrRetry = uint8_t(3 + r.Below(4));
                uint8_t code = 1;
                while (code < 31 &&
                       RoceV2Connection::RnrTimerValue(code) * cfg.rocev2.rnrRetry < 2 * late)
                {
                    ++code;
                }
                cfg.rocev2.minRnrTimer = code;
            }
            else
            {
                cfg.rnrRetryLimit = 3 + uint32_t(r.Below(4));
                cfg.rnrRetryDelay = std::max(MicroSeconds(20), Time(2 * late / cfg.rnrRetryLimit));
            }
        }
        d << " receives up to " << late / MicroSeconds(1) << " us late, rnr limit "
          << (roce ? uint32_t(cfg.rocev2.rnrRetry) : cfg.rnrRetryLimit) << " timer "
          << int(cfg.rocev2.minRnrTimer) << " delay " << cfg.rnrRetryDelay / MicroSeconds(1)
          << " us";
        break;
    }
    case Family::UNDELIVERABLE: {
        // Every copy of packet j of message k is dropped (single stream, so IB's in-order
        // completion rules give the exact expected outcome).
        const uint32_t k = uint32_t(r.Below(msgs.size()));
        const uint32_t j = uint32_t(r.Below(PacketsOf(msgs[k].length, cfg.mtu)));
        t.failAt = k;
        if (roce)
        {
            uint32_t offset = j;
            for (uint32_t i = 0; i < k; ++i)
            {
                offset += PacketsOf(msgs[i].length, cfg.mtu);
            }
            // The first data packet sent carries the initial PSN; the filter must see it, so
            // it also draws the random loss (the link's own loss acts before the filter).
            auto first = std::make_shared<int64_t>(-1);
            auto rng = std::make_shared<Rng>(seed * 31 + 7);
            double loss = r.Below(2) ? r.Uniform() * 0.01 : 0;
            n.Link(a, b).dropIf = [first, offset, rng, loss](const WireInfo& info) {
                if (info.pkt->info->kind == PacketKind::DATA && *first < 0)
                {
                    *first = info.psn;
                }
                if (info.pkt->info->kind == PacketKind::DATA &&
                    info.psn == ((uint32_t(*first) + offset) & 0xffffff))
                {
                    return true;
                }
                return rng->Uniform() < loss;
            };
            d << " undeliverable message " << k << " packet " << j << " loss " << loss;
            break;
        }
        else
        {
            const uint32_t byteOffset = j * cfg.mtu;
            ForEachLink(n, a, b, paths, [k, byteOffset](LinkConfig& l) {
                l.dropIf = [k, byteOffset](const WireInfo& info) {
                    return (info.pkt->info->headers & HDR_MDH) &&
                           info.pkt->info->kind == PacketKind::DATA &&
                           info.pkt->mdh.messageSeq == k && info.pkt->mdh.offset == byteOffset;
                };
            });
            // Only a->b carries data; the b->a copies never match.
        }
        double loss = r.Below(2) ? r.Uniform() * 0.01 : 0;
        n.Link(a, b).loss = loss;
        for (int p = 0; p < int(paths); ++p)
        {
            n.Link(a, b, p).loss = loss;
        }
        d << " undeliverable message " << k << " packet " << j << " loss " << loss;
        break;
    }
    case Family::CHURN:
        break;
    }
    std::string description = d.str();

    std::string why = ConnectPair(n, a, b, cfg, t.qa, t.qb);
    if (why.empty())
    {
        why = t.Post(n, recvAt);
    }
    if (why.empty())
    {
        why = RunUntilDone(n, [&n, &t]() { return t.Done(n); });
    }
    *stop = true;
    if (!why.empty())
    {
        std::ostringstream os;
        os << description << ": " << why << " (" << t.Progress(n) << "; " << n.Events()
           << " events; sender" << CounterSummary(n.At(a)) << ")";
        return os.str();
    }
    // Stray duplicates and retransmissions drain, and must change nothing.
    n.RunUntil(n.Now() + MilliSeconds(2));
    why = t.Check(n);
    if (why.empty())
    {
        why = n.InvariantFailure();
    }
    if (why.empty())
    {
        uint64_t placed = n.At(b).Counters().Get(Counter::BYTES_PLACED);
        bool failed =
            t.failAt >= 0 ||
            std::any_of(n.Completions(a).begin(), n.Completions(a).end(), [](const Completion& c) {
                return c.status != WcStatus::SUCCESS;
            });
        if (failed ? placed > t.w.srcBytes : placed != t.w.srcBytes)
        {
            why = "placed " + std::to_string(placed) + " bytes of " + std::to_string(t.w.srcBytes) +
                  " (exactly once)";
        }
    }
    if (why.empty())
    {
        return "";
    }
    std::ostringstream os;
    os << description << ": " << why << " (at " << n.Now() / MicroSeconds(1) << " us; sender"
       << CounterSummary(n.At(a)) << ")";
    return os.str();
}

} // namespace test
} // namespace metaroce

#endif // METAROCE_TEST_PROPERTY_FAMILIES_H
