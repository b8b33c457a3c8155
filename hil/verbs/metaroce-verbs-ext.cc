/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

// The MetaRoCE extension API (metaroce-verbs-ext.h): device settings, per-QP paths and
// counters. metaroce_verbs_create_qp() is in metaroce-verbs-qp.cc.

#include "metaroce-verbs-ext.h"

#include "metaroce-verbs-objects.h"

#include <arpa/inet.h>
#include <cerrno>
#include <cstring>

using namespace metaroce;
using namespace metaroce::verbs;

extern "C"
{
    int metaroce_verbs_query_device(ibv_context* context, metaroce_verbs_device_info* info)
    {
        if (context == nullptr || info == nullptr ||
            std::strcmp(context->device->name, "metaroce0") != 0)
        {
            return EINVAL;
        }
        Runtime& rt = *ToContext(context)->runtime;
        std::memset(info, 0, sizeof(*info));
        std::strncpy(info->ifname, rt.Interface().name.c_str(), sizeof(info->ifname) - 1);
        info->ipv4 = htonl(rt.Interface().ip);
        info->transport = rt.Config().transport == "rocev2" ? METAROCE_VERBS_TRANSPORT_ROCEV2
                                                            : METAROCE_VERBS_TRANSPORT_METAROCE;
        info->num_paths = rt.Config().numPaths;
        info->udp_port = rt.Config().udpPort;
        info->active_mtu = rt.Mtu();
        info->loss = rt.Config().loss;
        return 0;
    }

    int metaroce_verbs_query_paths(ibv_qp* qp, metaroce_verbs_path_info* paths, uint32_t max)
    {
        if (qp == nullptr || (paths == nullptr && max > 0))
        {
            errno = EINVAL;
            return -1;
        }
        Runtime& rt = *ToContext(qp->context)->runtime;
        std::lock_guard<std::mutex> lock(rt.Mutex());
        const TransportConnection* conn = rt.Engine().GetConnection(qp->qp_num);
        if (conn == nullptr)
        {
            errno = EINVAL;
            return -1;
        }
        size_t n = conn->PathCount();
        for (size_t i = 0; i < n && i < max; ++i)
        {
            const PathState* p = conn->Path(i);
            metaroce_verbs_path_info& out = paths[i];
            out.path_id = uint32_t(i);
            out.source_port = p ? p->sourcePort : 0;
            out.failed = p && !p->Usable();
            out.window = p ? p->cwnd : 0;
            Time srtt = p ? p->rtt.Smoothed() : -1;
            out.srtt_us = srtt > 0 ? double(srtt) / 1e6 : -1.0;
        }
        return int(n);
    }

    int metaroce_verbs_query_counters(ibv_qp* qp, metaroce_verbs_qp_counters* out)
    {
        if (qp == nullptr || out == nullptr)
        {
            return EINVAL;
        }
        Runtime& rt = *ToContext(qp->context)->runtime;
        std::lock_guard<std::mutex> lock(rt.Mutex());
        const TransportConnection* conn = rt.Engine().GetConnection(qp->qp_num);
        if (conn == nullptr)
        {
            return EINVAL;
        }
        const CounterSet& c = conn->Counters();
        out->retransmitted = c.Get(Counter::TX_RETRANSMIT);
        out->data_packets_sent = c.Get(Counter::TX_DATA) + out->retransmitted;
        out->data_packets_received = c.Get(Counter::RX_DATA);
        return 0;
    }

} // extern "C"
