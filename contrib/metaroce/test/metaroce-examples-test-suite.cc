/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

/**
 * \file
 * The module's examples as tests, the ns-3 way: each runs through `./ns3 run` and its output
 * must match the reference log in this directory (<suite name>.reflog). In an ns-3 tree only
 * (ExampleAsTestSuite runs programs through the ns3 script); the standalone build reads the
 * suites below from this file and runs each program with the same arguments as the CTest
 * example-reflog.<suite>, against the same log (contrib/metaroce/CMakeLists.txt). To update a
 * reference log after an intended change of output: ./test.py -s metaroce-example-incast
 * --update-data in a tree, or save the program's output to the log.
 */

#include "ns3/example-as-test.h"

using namespace ns3;

/// metaroce-incast, small: 4 senders of 64 KiB, MetaRoCE.
static ExampleAsTestSuite g_metaRoceExampleIncast("metaroce-example-incast",
                                                  "metaroce-incast",
                                                  NS_TEST_SOURCEDIR,
                                                  "--senders=4 --bytes=65536");

/// metaroce-incast, small, lossless RoCEv2 with PFC.
static ExampleAsTestSuite g_metaRoceExampleIncastRocev2("metaroce-example-incast-rocev2",
                                                        "metaroce-incast",
                                                        NS_TEST_SOURCEDIR,
                                                        "--senders=4 --bytes=65536 "
                                                        "--transport=rocev2 --pfc=true");
