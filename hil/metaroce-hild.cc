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

#include "metaroce-hil-perf.h"

int
main(int argc, char** argv)
{
    return metaroce::hil::PerfMain(argc, argv, true);
}
