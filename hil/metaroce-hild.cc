/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

/**
 * \file
 * metaroce-hild: the HIL daemon. It is metaroce-perf's server kept running: it runs engine
 * connections over a frame port for every client that connects on the control plane, until
 * SIGINT or SIGTERM stops it with a final report. See docs/hil.md.
 */

#include "metaroce-hil-log.h"
#include "metaroce-hil-perf.h"

#include <cstdio>
#include <string>
#include <vector>

int
main(int argc, char** argv)
{
    using namespace metaroce::hil;
    std::vector<std::string> args(argv + 1, argv + argc);
    PerfOptions opts;
    std::string error;
    if (!ParsePerfOptions(args, true, opts, error))
    {
        if (error == "help")
        {
            std::printf("%s", PerfUsage(true).c_str());
            return 0;
        }
        std::fprintf(stderr, "metaroce-hild: %s\n", error.c_str());
        return 64;
    }
    SetupLogging(opts.logLevel);
    return RunPerf(opts);
}
