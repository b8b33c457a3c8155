/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

/**
 * \file
 * Engine memory per idle connection: heap bytes per CreateConnection, measured with glibc's
 * mallinfo2() over N connections, for each transport.
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
    std::printf("%-9s %6s %14s %18s\n", "transport", "paths", "heap B/conn", "StateBytes/conn");
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
        std::printf("%-9s %6u %14.0f %18zu\n",
                    transport,
                    cfg.transport == "metaroce" ? cfg.numPaths : 1u,
                    double(after - before) / n,
                    ep.GetConnection(qpn)->StateBytes());
    }
    return 0;
}
