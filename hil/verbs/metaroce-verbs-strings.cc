/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

// The pure helpers of libibverbs: names of enum values and static-rate conversions. They
// need no device.

#include <infiniband/verbs.h>

namespace
{

/// One static rate: its enum, its multiple of 2.5 Gb/s (0: none) and its Mb/s.
struct RateRow
{
    ibv_rate rate; //!< enum value
    int mult;      //!< multiple of 2.5 Gb/s, 0 if not a multiple
    int mbps;      //!< Mb/s
};

// In the order of enum ibv_rate's values.
const RateRow RATES[] = {
    {IBV_RATE_2_5_GBPS, 1, 2500},     {IBV_RATE_5_GBPS, 2, 5000},
    {IBV_RATE_10_GBPS, 4, 10000},     {IBV_RATE_20_GBPS, 8, 20000},
    {IBV_RATE_30_GBPS, 12, 30000},    {IBV_RATE_40_GBPS, 16, 40000},
    {IBV_RATE_60_GBPS, 24, 60000},    {IBV_RATE_80_GBPS, 32, 80000},
    {IBV_RATE_120_GBPS, 48, 120000},  {IBV_RATE_14_GBPS, 0, 14062},
    {IBV_RATE_56_GBPS, 0, 56250},     {IBV_RATE_112_GBPS, 0, 112500},
    {IBV_RATE_168_GBPS, 0, 168750},   {IBV_RATE_25_GBPS, 10, 25781},
    {IBV_RATE_100_GBPS, 40, 103125},  {IBV_RATE_200_GBPS, 80, 206250},
    {IBV_RATE_300_GBPS, 120, 309375}, {IBV_RATE_28_GBPS, 0, 28125},
    {IBV_RATE_50_GBPS, 20, 53125},    {IBV_RATE_400_GBPS, 160, 425000},
    {IBV_RATE_600_GBPS, 240, 637500},
};

} // namespace

extern "C"
{
    const char* ibv_wc_status_str(enum ibv_wc_status status)
    {
        static const char* const names[] = {
            "success",
            "local length error",
            "local QP operation error",
            "local EE context operation error",
            "local protection error",
            "Work Request Flushed Error",
            "memory management operation error",
            "bad response error",
            "local access error",
            "remote invalid request error",
            "remote access error",
            "remote operation error",
            "transport retry counter exceeded",
            "RNR retry counter exceeded",
            "local RDD violation error",
            "remote invalid RD request",
            "aborted error",
            "invalid EE context number",
            "invalid EE context state",
            "fatal error",
            "response timeout error",
            "general error",
            "TM error",
            "TM Rendezvous error",
        };
        unsigned i = unsigned(status);
        return i < sizeof(names) / sizeof(names[0]) ? names[i] : "unknown";
    }

    const char* ibv_node_type_str(enum ibv_node_type type)
    {
        switch (type)
        {
        case IBV_NODE_CA:
            return "InfiniBand channel adapter";
        case IBV_NODE_SWITCH:
            return "InfiniBand switch";
        case IBV_NODE_ROUTER:
            return "InfiniBand router";
        case IBV_NODE_RNIC:
            return "iWARP NIC";
        case IBV_NODE_USNIC:
            return "usNIC";
        case IBV_NODE_USNIC_UDP:
            return "usNIC UDP";
        case IBV_NODE_UNSPECIFIED:
            return "unspecified";
        default:
            return "unknown";
        }
    }

    const char* ibv_port_state_str(enum ibv_port_state state)
    {
        switch (state)
        {
        case IBV_PORT_NOP:
            return "no state change (NOP)";
        case IBV_PORT_DOWN:
            return "down";
        case IBV_PORT_INIT:
            return "init";
        case IBV_PORT_ARMED:
            return "armed";
        case IBV_PORT_ACTIVE:
            return "active";
        case IBV_PORT_ACTIVE_DEFER:
            return "active defer";
        default:
            return "unknown";
        }
    }

    const char* ibv_event_type_str(enum ibv_event_type event)
    {
        static const char* const names[] = {
            "CQ error",
            "local work queue catastrophic error",
            "invalid request local work queue error",
            "local access violation work queue error",
            "communication established",
            "send queue drained",
            "path migrated",
            "path migration request error",
            "local catastrophic error",
            "port active",
            "port error",
            "LID change",
            "P_Key change",
            "SM change",
            "SRQ catastrophic error",
            "SRQ limit reached",
            "last WQE reached",
            "client reregistration",
            "GID table change",
            "WQ fatal",
        };
        unsigned i = unsigned(event);
        if (event == IBV_EVENT_DEVICE_FATAL)
        {
            return "local catastrophic error";
        }
        return i < sizeof(names) / sizeof(names[0]) ? names[i] : "unknown";
    }

    int ibv_rate_to_mult(enum ibv_rate rate)
    {
        for (const RateRow& r : RATES)
        {
            if (r.rate == rate)
            {
                return r.mult;
            }
        }
        return 0;
    }

    enum ibv_rate mult_to_ibv_rate(int mult)
    {
        for (const RateRow& r : RATES)
        {
            if (r.mult == mult && mult != 0)
            {
                return r.rate;
            }
        }
        return IBV_RATE_MAX;
    }

    int ibv_rate_to_mbps(enum ibv_rate rate)
    {
        for (const RateRow& r : RATES)
        {
            if (r.rate == rate)
            {
                return r.mbps;
            }
        }
        return 0;
    }

    enum ibv_rate mbps_to_ibv_rate(int mbps)
    {
        for (const RateRow& r : RATES)
        {
            if (r.mbps == mbps)
            {
                return r.rate;
            }
        }
        return IBV_RATE_MAX;
    }

} // extern "C"
