/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

// Seed corpus of the HandleDatagram fuzz targets: real conversations instead of committed
// binaries. For each transport, a few connection modes and a loss-free, a lossy and a very
// lossy fabric, it runs the fuzz setup on both endpoints of the testbed
// (tests/support/engine-network.h), records every datagram the peer sends to the endpoint
// under test through the testbed's onTransmit tap, and writes prefixes of that conversation
// as fuzz inputs (fuzz-harness.h). It then replays every seed through the harness and fails
// if too few datagrams reach the connection: a setup that drifted from the harness's.
//
//   fuzz-make-seeds <metaroce|rocev2> <output folder>

#include "engine-network.h"
#include "fuzz-harness.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

namespace
{

using namespace metaroce;
using namespace metaroce::fuzz;

/// A datagram from the peer and when it reaches the endpoint under test.
struct Arrival
{
    Time time;                  //!< arrival time
    uint64_t order;             //!< transmission order (ties)
    std::vector<uint8_t> bytes; //!< BTH to ICRC
};

/// A fabric to record a conversation on.
struct Scenario
{
    const char* name; //!< file name part
    double loss;      //!< Bernoulli loss, both directions
    uint64_t seed;    //!< fault randomness
};

constexpr Scenario SCENARIOS[] = {{"clean", 0, 1}, {"lossy", 0.05, 2}, {"heavy", 0.25, 3}};
/// Conversation prefixes written as seeds, in records (and the whole conversation).
constexpr size_t PREFIXES[] = {4, 16, 64};
/// How long a conversation runs: past the harness's 2 ms connection timeout.
constexpr Time DURATION = MilliSeconds(3);
/// Largest seed: fuzz.sh's default -max_len (longer seeds would be cut at a random record).
constexpr size_t MAX_SEED_SIZE = 8192;

/// Run one conversation and return what the endpoint under test received, in arrival order.
std::vector<Arrival>
Record(Kind kind, uint8_t mode, const Scenario& scenario)
{
    test::NetworkConfig ncfg;
    ncfg.seed = scenario.seed;
    test::EngineNetwork net(ncfg);
    uint32_t peer = net.AddEndpoint(MakeEndpointConfig(kind, mode, PEER_IP));
    uint32_t local = net.AddEndpoint(MakeEndpointConfig(kind, mode, LOCAL_IP));
    Arena peerArena;
    Arena localArena;
    WorkLog peerLog;
    WorkLog localLog;
    if (SetUpSide(net.At(peer), kind, mode, LOCAL_IP, peerArena, peerLog) == 0 ||
        SetUpSide(net.At(local), kind, mode, PEER_IP, localArena, localLog) == 0)
    {
        std::exit(1);
    }
    test::LinkConfig link;
    link.loss = scenario.loss;
    net.Link(peer, local) = link;
    net.Link(local, peer) = link;
    std::vector<Arrival> arrivals;
    net.onTransmit = [&](Time t, uint32_t src, const TxDatagram& tx, bool dropped) {
        if (src == peer && !dropped)
        {
            arrivals.push_back(Arrival{t + link.delay,
                                       arrivals.size(),
                                       std::vector<uint8_t>(tx.buffer, tx.buffer + tx.length)});
        }
    };
    net.Kick(peer);
    net.Kick(local);
    net.RunUntil(DURATION);
    std::stable_sort(arrivals.begin(), arrivals.end(), [](const Arrival& x, const Arrival& y) {
        return x.time < y.time;
    });
    return arrivals;
}

/**
 * Encode the first \p count arrivals (fewer if they do not fit MAX_SEED_SIZE) as a fuzz input
 * of \p mode. \return the number encoded.
 */
size_t
Encode(uint8_t mode,
       const std::vector<Arrival>& arrivals,
       size_t count,
       std::vector<uint8_t>& input)
{
    input.assign(1, mode);
    Time now = 0;
    for (size_t i = 0; i < count; ++i)
    {
        std::vector<uint8_t> step;
        Time gap = (arrivals[i].time - now) / TICK;
        // Gaps beyond one record's delta become steps without a datagram.
        for (; gap > 0xFFFF; gap -= 0xFFFF)
        {
            AppendRecord(step, NO_DATAGRAM, 0xFFFF, nullptr, 0);
        }
        AppendRecord(step, 0, uint16_t(gap), arrivals[i].bytes.data(), arrivals[i].bytes.size());
        if (input.size() + step.size() > MAX_SEED_SIZE)
        {
            return i;
        }
        input.insert(input.end(), step.begin(), step.end());
        now += (arrivals[i].time - now) / TICK * TICK;
    }
    return count;
}

} // namespace

int
main(int argc, char** argv)
{
    if (argc != 3 || (std::string(argv[1]) != "metaroce" && std::string(argv[1]) != "rocev2"))
    {
        std::fprintf(stderr, "usage: %s <metaroce|rocev2> <output folder>\n", argv[0]);
        return 2;
    }
    const Kind kind = std::string(argv[1]) == "metaroce" ? Kind::METAROCE : Kind::ROCEV2;
    const std::string dir = argv[2];
    // A spread of configurations (MakeConnectionConfig): paths, schedulers and congestion
    // control for MetaRoCE; go-back-N and IRN, DCQCN, ACK coalescing and a window for RoCEv2.
    const std::vector<uint8_t> modes = kind == Kind::METAROCE
                                           ? std::vector<uint8_t>{0x03, 0x00, 0x05, 0x0A, 0x13}
                                           : std::vector<uint8_t>{0x00, 0x01, 0x06, 0x09, 0x0D};
    size_t files = 0;
    size_t bytes = 0;
    RunStats total;
    for (uint8_t mode : modes)
    {
        for (const Scenario& scenario : SCENARIOS)
        {
            std::vector<Arrival> arrivals = Record(kind, mode, scenario);
            std::vector<size_t> counts;
            for (size_t prefix : PREFIXES)
            {
                if (prefix < arrivals.size())
                {
                    counts.push_back(prefix);
                }
            }
            counts.push_back(arrivals.size());
            size_t previous = 0;
            for (size_t count : counts)
            {
                std::vector<uint8_t> input;
                count = Encode(mode, arrivals, count, input);
                if (count == previous)
                {
                    continue; // cut to the same length as the previous prefix
                }
                previous = count;
                char name[64];
                std::snprintf(name,
                              sizeof(name),
                              "m%02x-%s-%zu",
                              unsigned(mode),
                              scenario.name,
                              count);
                std::ofstream out(dir + "/" + name, std::ios::binary);
                out.write(reinterpret_cast<const char*>(input.data()),
                          std::streamsize(input.size()));
                if (!out)
                {
                    std::fprintf(stderr, "cannot write %s/%s\n", dir.c_str(), name);
                    return 1;
                }
                RunInput(kind, input.data(), input.size(), &total);
                ++files;
                bytes += input.size();
            }
        }
    }
    double accepted = total.datagrams ? double(total.accepted) / double(total.datagrams) : 0;
    std::printf("%s: %zu seeds (%zu bytes) in %s; replayed %llu datagrams, %.1f%% accepted, "
                "%llu transmitted, %llu completions\n",
                KindName(kind),
                files,
                bytes,
                dir.c_str(),
                (unsigned long long)total.datagrams,
                100 * accepted,
                (unsigned long long)total.transmitted,
                (unsigned long long)total.completions);
    // A conversation recorded from the same setup is accepted nearly whole; far less means
    // the generator and the harness no longer set up the same connection.
    if (accepted < 0.9)
    {
        std::fprintf(stderr, "fuzz-make-seeds: too few seed datagrams reach the connection\n");
        return 1;
    }
    return 0;
}
