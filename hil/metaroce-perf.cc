/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

/**
 * \file
 * metaroce-perf: perftest-style bandwidth test over the MetaRoCE / RoCEv2 engine on real
 * frames. Without an address it is the server; with one it is the client. See docs/hil.md.
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
    if (!ParsePerfOptions(args, false, opts, error))
    {
        if (error == "help")
        {
            std::printf("%s", PerfUsage(false).c_str());
            return 0;
        }
        std::fprintf(stderr, "metaroce-perf: %s\n", error.c_str());
        return 64;
    }
    SetupLogging(opts.logLevel);
    return RunPerf(opts);
}
