/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#include "metaroce-path.h"

#include "metaroce-observer.h"

namespace metaroce
{

const char*
PathStatusName(PathStatus s)
{
    switch (s)
    {
    case PathStatus::ACTIVE:
        return "ACTIVE";
    case PathStatus::SUSPECT:
        return "SUSPECT";
    case PathStatus::FAILED:
        return "FAILED";
    }
    return "UNKNOWN";
}

const char*
PathEventName(PathEvent e)
{
    switch (e)
    {
    case PathEvent::WINDOW:
        return "WINDOW";
    case PathEvent::RTT:
        return "RTT";
    case PathEvent::LOSS:
        return "LOSS";
    case PathEvent::TIMEOUT:
        return "TIMEOUT";
    case PathEvent::FAILED:
        return "FAILED";
    case PathEvent::RECOVERED:
        return "RECOVERED";
    case PathEvent::SUSPECT:
        return "SUSPECT";
    }
    return "UNKNOWN";
}

} // namespace metaroce
