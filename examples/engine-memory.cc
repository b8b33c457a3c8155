/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

/**
 * \file
 * Engine memory per idle connection: heap bytes per CreateConnection, measured with glibc's
 * mallinfo2() over N connections, for each transport; then what each connection adds when it
 * is connected and one 4 KiB WRITE is posted on it (a sending connection: the requester's
 * per-path state is created at its first post), before any packet leaves.
 *
 *   build/bin/metaroce-engine-memory [connections=4000]
 */

#include "metaroce-endpoint.h"

#include <cstdio>
#include <cstdlib>
#include <malloc.h>

using namespace metaroce;

int
main(int argc, char** argv)
{
    int n = argc > 1 ? std::atoi(argv[1]) : 4000;
    if (n <= 0)
    {
        std::fprintf(stderr, "usage: %s [connections > 0]\n", argv[0]);
        return 2;
    }
    std::printf("%-9s %6s %14s %18s %20s %18s\n",
                "transport",
                "paths",
                "heap B/conn",
                "StateBytes/conn",
                "+1 WRITE: B/conn",
                "StateBytes/conn");
    static uint8_t source[4096];
    for (const char* transport : {"metaroce", "rocev2"})
    {
        Endpoint ep(EndpointConfig{});
        ConnectionConfig cfg;
        cfg.transport = transport;
        uint32_t qpn = 0;
        ep.CreateConnection(cfg, qpn); // first connection sizes endpoint-wide tables
        size_t before = mallinfo2().uordblks;
        for (int i = 0; i < n; ++i)
        {
            ep.CreateConnection(cfg, qpn);
        }
        size_t after = mallinfo2().uordblks;
        const size_t idleState = ep.GetConnection(qpn)->StateBytes();
        // The same connections, connected, each with one WRITE posted (nothing sent yet).
        MemoryRegion mr = ep.RegisterMemory(source, sizeof(source), ACCESS_LOCAL_WRITE);
        const uint32_t first = qpn - uint32_t(n) + 1;
        for (uint32_t q = first; q <= qpn; ++q)
        {
            ep.Connect(q, 0x0a000002, q);
        }
        size_t connected = mallinfo2().uordblks;
        int posted = 0;
        for (uint32_t q = first; q <= qpn; ++q)
        {
            SendWr wr;
            wr.sge = {mr.addr, uint32_t(sizeof(source)), mr.lkey};
            wr.remoteAddr = 0x1000;
            wr.rkey = 1;
            posted += ep.PostSend(0, q, wr) == PostStatus::OK;
        }
        size_t sending = mallinfo2().uordblks;
        if (posted != n)
        {
            std::fprintf(stderr, "%s: %d of %d WRITEs posted\n", transport, posted, n);
            return 1;
        }
        std::printf("%-9s %6u %14.0f %18zu %20.0f %18zu\n",
                    transport,
                    cfg.transport == "metaroce" ? cfg.numPaths : 1u,
                    double(after - before) / n,
                    idleState,
                    double(sending - connected) / n,
                    ep.GetConnection(qpn)->StateBytes());
    }
    return 0;
}
