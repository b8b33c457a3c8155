/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#ifndef METAROCE_TEST_SEEDED_RUN_H
#define METAROCE_TEST_SEEDED_RUN_H

#include "engine-network.h"

#include <cstdint>
#include <functional>
#include <gtest/gtest.h>
#include <vector>

/**
 * \file
 * The determinism check of both transports: one 1 MiB RDMA WRITE through a seeded, faulty
 * testbed link, summarised by every sender counter and the finish time.
 */

namespace metaroce
{
namespace test
{

/**
 * Run one 1 MiB WRITE from endpoint a to endpoint b.
 * \param seed the testbed seed
 * \param cfg the connection settings
 * \param faults sets up the a -> b link (loss, reordering, CE marks, ...)
 * \param limit how long to run
 * \return the sender's counters, in Counter order, then the time the network went idle
 */
inline std::vector<uint64_t>
SeededWriteRun(uint64_t seed,
               const ConnectionConfig& cfg,
               const std::function<void(LinkConfig&)>& faults,
               Time limit)
{
    NetworkConfig net;
    net.seed = seed;
    net.checkInvariants = true;
    EngineNetwork n(net);
    uint32_t a = n.AddEndpoint();
    uint32_t b = n.AddEndpoint();
    auto qps = n.Connect(a, b, cfg);
    faults(n.Link(a, b));
    MemoryRegion src = n.At(a).RegisterMemory(nullptr, 1 << 20, 0, 0x1000);
    MemoryRegion dst = n.At(b).RegisterMemory(nullptr, 1 << 20, ACCESS_REMOTE_WRITE, 0x1000);
    SendWr wr;
    wr.sge = {src.addr, 1 << 20, src.lkey};
    wr.remoteAddr = dst.addr;
    wr.rkey = dst.rkey;
    n.At(a).PostSend(0, qps.first, wr);
    n.Kick(a);
    n.RunUntilIdle(limit);
    if (!n.InvariantFailure().empty())
    {
        ADD_FAILURE() << n.InvariantFailure();
    }
    std::vector<uint64_t> v;
    for (size_t c = 0; c < size_t(Counter::COUNT); ++c)
    {
        v.push_back(n.At(a).Counters().Get(Counter(c)));
    }
    v.push_back(uint64_t(n.Now()));
    return v;
}

} // namespace test
} // namespace metaroce

#endif // METAROCE_TEST_SEEDED_RUN_H
