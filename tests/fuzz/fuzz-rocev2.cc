/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

// libFuzzer target: datagrams from the peer into one connected RoCEv2 (RoceV2Connection) endpoint
// (input format and invariants in fuzz-harness.h).

#include "fuzz-harness.h"

extern "C" int
LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    metaroce::fuzz::RunInput(metaroce::fuzz::Kind::ROCEV2, data, size);
    return 0;
}
