/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#include "metaroce-hil-frame-port.h"

#include <cstdio>

namespace metaroce
{
namespace hil
{

void
AddCounters(PortCounters& a, const PortCounters& b)
{
    a.txFrames += b.txFrames;
    a.txBytes += b.txBytes;
    a.txFailed += b.txFailed;
    a.rxFrames += b.rxFrames;
    a.rxBytes += b.rxBytes;
    a.rxMalformed += b.rxMalformed;
    a.rxIgnored += b.rxIgnored;
    a.faultDropped += b.faultDropped;
    a.faultDuplicated += b.faultDuplicated;
    a.faultReordered += b.faultReordered;
    a.rxKernelDrops += b.rxKernelDrops;
    a.rxBacklogMarked += b.rxBacklogMarked;
    a.rxHandedOff += b.rxHandedOff;
    a.rxHandoffDrops += b.rxHandoffDrops;
}

MacAddress
SyntheticMac(uint32_t ip)
{
    MacAddress mac;
    mac.bytes[0] = 0x02;
    mac.bytes[1] = 0x00;
    mac.bytes[2] = uint8_t(ip >> 24);
    mac.bytes[3] = uint8_t(ip >> 16);
    mac.bytes[4] = uint8_t(ip >> 8);
    mac.bytes[5] = uint8_t(ip);
    return mac;
}

std::string
MacToString(const MacAddress& mac)
{
    char text[18];
    std::snprintf(text,
                  sizeof(text),
                  "%02x:%02x:%02x:%02x:%02x:%02x",
                  mac.bytes[0],
                  mac.bytes[1],
                  mac.bytes[2],
                  mac.bytes[3],
                  mac.bytes[4],
                  mac.bytes[5]);
    return text;
}

bool
ParseMac(const std::string& text, MacAddress& mac)
{
    unsigned b[6];
    char extra;
    if (std::sscanf(text.c_str(),
                    "%x:%x:%x:%x:%x:%x%c",
                    &b[0],
                    &b[1],
                    &b[2],
                    &b[3],
                    &b[4],
                    &b[5],
                    &extra) != 6)
    {
        return false;
    }
    for (int i = 0; i < 6; ++i)
    {
        if (b[i] > 0xff)
        {
            return false;
        }
        mac.bytes[i] = uint8_t(b[i]);
    }
    return true;
}

} // namespace hil
} // namespace metaroce
