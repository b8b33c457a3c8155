/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

/**
 * \file
 * Standalone build only: runs this module's ns-3 TestSuites as ns-3's test-runner does in an
 * ns-3 tree (same options: --suite=NAME, --list, --verbose, ...). CTest runs one suite per
 * test (label ns3).
 */

#include "ns3/test.h"

int
main(int argc, char** argv)
{
    return ns3::TestRunner::Run(argc, argv);
}
