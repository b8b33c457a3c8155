/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#include "metaroce-traffic-helper.h"

#include "metaroce-channel.h"
#include "metaroce-fabric.h"
#include "metaroce-net-device.h"

#include "ns3/abort.h"
#include "ns3/node.h"
#include "ns3/uinteger.h"

#include <algorithm>
#include <queue>

namespace ns3
{

namespace
{

/// Bytes of an ACK frame on the wire, for the ideal FCT.
constexpr uint64_t ACK_WIRE_BYTES = 64 + metaroce::WIRE_OVERHEAD_BYTES;

} // namespace

// ---- MetaRoceTrafficHelper

MetaRoceTrafficHelper::MetaRoceTrafficHelper(Ptr<MetaRoceFabric> fabric,
                                             const std::vector<Ptr<MetaRoceNic>>& nics)
    : m_fabric(fabric),
      m_nics(nics)
{
    NS_ABORT_MSG_IF(nics.empty(), "a traffic helper needs the NICs of the hosts");
}

void
MetaRoceTrafficHelper::SetConnectionConfig(const metaroce::ConnectionConfig& cfg)
{
    m_cfg = cfg;
    m_haveConfig = true;
}

bool
MetaRoceTrafficHelper::HasConnectionConfig() const
{
    return m_haveConfig;
}

metaroce::ConnectionConfig
MetaRoceTrafficHelper::GetConnectionConfig(uint32_t host) const
{
    return m_haveConfig ? m_cfg : GetNic(host)->GetDefaultConnectionConfig();
}

void
MetaRoceTrafficHelper::SetStopWhenDone(bool stop)
{
    m_stopWhenDone = stop;
}

uint32_t
MetaRoceTrafficHelper::GetHostCount() const
{
    return static_cast<uint32_t>(m_nics.size());
}

Ptr<MetaRoceNic>
MetaRoceTrafficHelper::GetNic(uint32_t host) const
{
    NS_ABORT_MSG_IF(host >= m_nics.size(),
                    "host " << host << " beyond the " << m_nics.size() << " hosts");
    return m_nics[host];
}

void
MetaRoceTrafficHelper::PrepareHost(uint32_t host)
{
    MetaRoceTrafficHost::Get(GetNic(host));
}

uint32_t
MetaRoceTrafficHelper::HopCount(uint32_t src, uint32_t dst)
{
    if (!m_fabric)
    {
        return 0;
    }
    if (m_adjacency.empty())
    {
        uint32_t maxId = 0;
        for (const MetaRoceLink& l : m_fabric->GetLinks())
        {
            maxId = std::max({maxId, l.nodeA->GetId(), l.nodeB->GetId()});
        }
        m_adjacency.assign(maxId + 1, {});
        for (const MetaRoceLink& l : m_fabric->GetLinks())
        {
            if (l.plane != 0)
            {
                continue;
            }
            m_adjacency[l.nodeA->GetId()].push_back(l.nodeB->GetId());
            m_adjacency[l.nodeB->GetId()].push_back(l.nodeA->GetId());
        }
        m_hopCache.assign(m_fabric->GetHostCount(), {});
        m_hostOfNode.assign(maxId + 1, -1);
        for (uint32_t h = 0; h < m_fabric->GetHostCount(); ++h)
        {
            const uint32_t id = m_fabric->GetHost(h)->GetId();
            if (id < m_hostOfNode.size())
            {
                m_hostOfNode[id] = h;
            }
        }
    }
    std::vector<uint16_t>& hops = m_hopCache[src];
    if (hops.empty())
    {
        // Breadth-first over the nodes (scratch), then keep the distances to hosts only.
        std::vector<int32_t>& dist = m_bfsScratch;
        dist.assign(m_adjacency.size(), -1);
        std::queue<uint32_t> q;
        const uint32_t from = m_fabric->GetHost(src)->GetId();
        dist[from] = 0;
        q.push(from);
        while (!q.empty())
        {
            const uint32_t u = q.front();
            q.pop();
            // Hosts do not forward: only the source expands.
            if (u != from && m_hostOfNode[u] >= 0)
            {
                continue;
            }
            for (uint32_t v : m_adjacency[u])
            {
                if (dist[v] < 0)
                {
                    dist[v] = dist[u] + 1;
                    q.push(v);
                }
            }
        }
        hops.assign(m_fabric->GetHostCount(), 0);
        for (uint32_t h = 0; h < hops.size(); ++h)
        {
            const uint32_t id = m_fabric->GetHost(h)->GetId();
            if (id < dist.size() && dist[id] > 0)
            {
                hops[h] = static_cast<uint16_t>(std::min<int32_t>(dist[id], UINT16_MAX));
            }
        }
    }
    return hops[dst];
}

Time
MetaRoceTrafficHelper::IdealFct(uint32_t src, uint32_t dst, uint64_t bytes, uint32_t mtu)
{
    const double rate = std::min(GetNic(src)->GetLineRateBps(), GetNic(dst)->GetLineRateBps());
    const double portRate =
        static_cast<double>(GetNic(src)->GetPort(0)->GetDataRate().GetBitRate());
    const uint32_t hops = HopCount(src, dst);
    Time delay(0);
    if (m_fabric && !m_fabric->GetLinks().empty())
    {
        delay = m_fabric->GetLinks()[0].channel->GetDelay();
    }
    const double dataWire =
        metaroce::Endpoint::MaxDatagramSize(mtu) + metaroce::WIRE_OVERHEAD_BYTES;
    const double perHop = (dataWire + ACK_WIRE_BYTES) * 8.0 / portRate;
    const double seconds = bytes * 8.0 / rate + hops * (2 * delay.GetSeconds() + perHop);
    return Seconds(seconds);
}

// ---- MetaRoceFlowHelper

MetaRoceFlowHelper::MetaRoceFlowHelper(Ptr<MetaRoceFabric> fabric,
                                       const std::vector<Ptr<MetaRoceNic>>& nics)
    : MetaRoceTrafficHelper(fabric, nics)
{
    m_factory.SetTypeId(MetaRoceFlowApplication::GetTypeId());
}

void
MetaRoceFlowHelper::SetAttribute(const std::string& name, const AttributeValue& value)
{
    m_factory.Set(name, value);
}

ApplicationContainer
MetaRoceFlowHelper::Install(uint32_t src, uint32_t dst, uint64_t bytes, int64_t id)
{
    NS_ABORT_MSG_IF(src >= GetHostCount() || dst >= GetHostCount(),
                    "flow " << src << "->" << dst << " beyond the " << GetHostCount() << " hosts");
    NS_ABORT_MSG_IF(src == dst, "flow from host " << src << " to itself");
    NS_ABORT_MSG_IF(bytes == 0, "empty flow");
    const metaroce::ConnectionConfig cfg = GetConnectionConfig(src);
    const uint64_t messages = (bytes + cfg.maxMessageSize - 1) / cfg.maxMessageSize;
    NS_ABORT_MSG_IF(messages > cfg.maxOutstandingWrs,
                    "flow of " << bytes << " bytes needs " << messages
                               << " messages: raise MaxMessageSize or MaxOutstandingWrs");
    const uint32_t flowId = id >= 0 ? static_cast<uint32_t>(id) : m_installed;
    ++m_installed;
    PrepareHost(src);
    PrepareHost(dst);
    Ptr<MetaRoceFlowApplication> app = m_factory.Create<MetaRoceFlowApplication>();
    app->SetAttribute("Bytes", UintegerValue(bytes));
    app->SetAttribute("FlowId", UintegerValue(flowId));
    app->SetConnectionConfig(cfg);
    app->SetLocalHost(src);
    app->SetRemote(GetNic(dst), dst);
    app->SetIdealFct(IdealFct(src, dst, bytes, cfg.mtu));
    app->SetStopWhenDone(m_stopWhenDone);
    GetNic(src)->GetNode()->AddApplication(app);
    return ApplicationContainer(app);
}

// ---- MetaRoceCollectiveHelper

MetaRoceCollectiveHelper::MetaRoceCollectiveHelper(Ptr<MetaRoceFabric> fabric,
                                                   const std::vector<Ptr<MetaRoceNic>>& nics)
    : MetaRoceTrafficHelper(fabric, nics)
{
}

ApplicationContainer
MetaRoceCollectiveHelper::Install(const std::vector<uint32_t>& ranks,
                                  uint64_t bytesPerRank,
                                  uint32_t channels)
{
    NS_ABORT_MSG_IF(ranks.size() < 2, "a ring needs two ranks");
    std::vector<Ptr<MetaRoceNic>> nics;
    for (uint32_t r : ranks)
    {
        NS_ABORT_MSG_IF(r >= GetHostCount(), "rank host " << r << " beyond the fabric");
        nics.push_back(GetNic(r));
        PrepareHost(r);
    }
    Ptr<MetaRoceCollectiveApplication> app = CreateObject<MetaRoceCollectiveApplication>();
    app->SetRing(nics, ranks, bytesPerRank, channels, GetConnectionConfig(ranks[0]));
    app->SetStopWhenDone(m_stopWhenDone);
    nics[0]->GetNode()->AddApplication(app);
    return ApplicationContainer(app);
}

} // namespace ns3
