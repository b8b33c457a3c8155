/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#include "metaroce-run-outputs.h"

#include "ns3/metaroce-channel.h"

#include <algorithm>
#include <cmath>
#include <sstream>

namespace metaroce_run
{

using namespace ns3;
namespace pb = metaroce::results;

NodeNames::NodeNames(Ptr<MetaRoceFabric> fabric)
{
    for (uint32_t i = 0; i < fabric->GetHostCount(); ++i)
    {
        Add(fabric->GetHost(i), "h" + std::to_string(i));
    }
    for (uint32_t j = 0; j < fabric->GetSwitchCount(); ++j)
    {
        Add(fabric->GetSwitchNode(j), "s" + std::to_string(j));
    }
}

std::string
NodeNames::Name(Ptr<Node> node) const
{
    auto it = m_names.find(node->GetId());
    return it == m_names.end() ? "?" : it->second;
}

Ptr<Node>
NodeNames::Find(const std::string& name) const
{
    auto it = m_nodes.find(name);
    return it == m_nodes.end() ? nullptr : it->second;
}

void
NodeNames::Add(Ptr<Node> node, const std::string& name)
{
    m_names[node->GetId()] = name;
    m_nodes[name] = node;
}

double
Quantile(std::vector<double>& values, double q)
{
    if (values.empty())
    {
        return 0;
    }
    std::sort(values.begin(), values.end());
    const size_t rank = static_cast<size_t>(std::ceil(q * values.size()));
    return values[std::min(values.size() - 1, rank == 0 ? 0 : rank - 1)];
}

std::vector<uint32_t>
SwitchTiers(Ptr<MetaRoceFabric> fabric)
{
    std::map<uint32_t, uint32_t> switchOfNode;
    for (uint32_t j = 0; j < fabric->GetSwitchCount(); ++j)
    {
        switchOfNode[fabric->GetSwitchNode(j)->GetId()] = j;
    }
    std::vector<uint32_t> tier(fabric->GetSwitchCount(), 0);
    std::vector<std::vector<uint32_t>> adjacent(fabric->GetSwitchCount());
    std::vector<uint32_t> frontier;
    for (const MetaRoceLink& link : fabric->GetLinks())
    {
        auto a = switchOfNode.find(link.nodeA->GetId());
        auto b = switchOfNode.find(link.nodeB->GetId());
        if (a != switchOfNode.end() && b != switchOfNode.end())
        {
            adjacent[a->second].push_back(b->second);
            adjacent[b->second].push_back(a->second);
        }
        else if (a != switchOfNode.end() || b != switchOfNode.end())
        {
            const uint32_t s = a != switchOfNode.end() ? a->second : b->second;
            if (tier[s] == 0)
            {
                tier[s] = 1;
                frontier.push_back(s);
            }
        }
    }
    while (!frontier.empty())
    {
        std::vector<uint32_t> next;
        for (uint32_t s : frontier)
        {
            for (uint32_t n : adjacent[s])
            {
                if (tier[n] == 0)
                {
                    tier[n] = tier[s] + 1;
                    next.push_back(n);
                }
            }
        }
        frontier = std::move(next);
    }
    return tier;
}

void
FillPortCounters(pb::PortCounters& row,
                 const MetaRoceSwitch::Counters& sw,
                 const MetaRoceNetDevice::Counters& dev)
{
    auto drop = [&](MetaRoceDropReason r) { return sw.Drops(r); };
    auto devDrop = [&](MetaRoceDropReason r) { return dev.drops[static_cast<uint32_t>(r)]; };
    row.set_rx_frames(sw.rxFrames);
    row.set_enqueued_frames(sw.enqueuedFrames);
    row.set_enqueued_bytes(sw.enqueuedBytes);
    row.set_ecn_marked(sw.ecnMarked);
    row.set_pfc_pause_sent(sw.pfcPauseSent);
    row.set_pfc_resume_sent(sw.pfcResumeSent);
    row.set_pfc_pause_received(sw.pfcPauseReceived);
    row.set_drops_buffer_full(drop(MetaRoceDropReason::BUFFER_FULL));
    row.set_drops_queue_threshold(drop(MetaRoceDropReason::QUEUE_THRESHOLD));
    row.set_drops_link_down(drop(MetaRoceDropReason::LINK_DOWN) +
                            devDrop(MetaRoceDropReason::LINK_DOWN));
    row.set_drops_no_route(drop(MetaRoceDropReason::NO_ROUTE));
    row.set_drops_channel_loss(devDrop(MetaRoceDropReason::CHANNEL_LOSS));
    uint64_t other = 0;
    for (MetaRoceDropReason r : {MetaRoceDropReason::MTU_EXCEEDED,
                                 MetaRoceDropReason::ADMISSION,
                                 MetaRoceDropReason::MALFORMED,
                                 MetaRoceDropReason::TTL_EXPIRED,
                                 MetaRoceDropReason::UNCLAIMED})
    {
        other += drop(r) + devDrop(r);
    }
    row.set_drops_other(other);
    row.set_drops_total(row.drops_buffer_full() + row.drops_queue_threshold() +
                        row.drops_link_down() + row.drops_no_route() + row.drops_channel_loss() +
                        row.drops_other());
}

std::string
PortLine(const pb::PortCounters& r)
{
    std::ostringstream os;
    os << r.switch_id() << "," << r.port() << "," << r.plane() << "," << r.tier() << "," << r.peer()
       << "," << r.rx_frames() << "," << r.enqueued_frames() << "," << r.enqueued_bytes() << ","
       << r.ecn_marked() << "," << r.pfc_pause_sent() << "," << r.pfc_resume_sent() << ","
       << r.pfc_pause_received() << "," << r.drops_total() << "," << r.drops_buffer_full() << ","
       << r.drops_queue_threshold() << "," << r.drops_link_down() << "," << r.drops_no_route()
       << "," << r.drops_channel_loss() << "," << r.drops_other();
    return os.str();
}

} // namespace metaroce_run
