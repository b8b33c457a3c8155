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

#include "metaroce-hil-perf.h"

int
main(int argc, char** argv)
{
    return metaroce::hil::PerfMain(argc, argv, false);
}
