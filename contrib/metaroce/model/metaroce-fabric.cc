/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#include "metaroce-fabric.h"

#include "metaroce-channel.h"
#include "metaroce-gilbert-elliott-error-model.h"
#include "metaroce-net-device.h"
#include "metaroce-switch.h"

#include "ns3/abort.h"
#include "ns3/double.h"
#include "ns3/enum.h"
#include "ns3/log.h"
#include "ns3/node.h"
#include "ns3/simulator.h"
#include "ns3/trace-source-accessor.h"

#include <algorithm>
#include <limits>
#include <map>

namespace ns3
{

NS_LOG_COMPONENT_DEFINE("MetaRoceFabric");

NS_OBJECT_ENSURE_REGISTERED(MetaRoceFabric);

TypeId
MetaRoceFabric::GetTypeId()
{
    static TypeId tid =
        TypeId("ns3::MetaRoceFabric")
            .SetParent<Object>()
            .SetGroupName("MetaRoce")
            .AddConstructor<MetaRoceFabric>()
            .AddAttribute("ReconvergenceDelay",
                          "Time from a link state change to the recomputation of every route "
                          "(routing protocol convergence); Time::Max() never recomputes (only "
                          "the switches' local ECMP repair acts).",
                          TimeValue(MicroSeconds(100)),
                          MakeTimeAccessor(&MetaRoceFabric::m_reconvergenceDelay),
                          MakeTimeChecker())
            .AddTraceSource("RoutesComputed",
                            "Routes were (re)computed and installed.",
                            MakeTraceSourceAccessor(&MetaRoceFabric::m_routesComputedTrace),
                            "ns3::TracedCallback::Void");
    return tid;
}

MetaRoceFabric::MetaRoceFabric()
{
    NS_LOG_FUNCTION(this);
}

MetaRoceFabric::~MetaRoceFabric()
{
    NS_LOG_FUNCTION(this);
    DisconnectLinks();
}

void
MetaRoceFabric::DisconnectLinks()
{
    // The channels may outlive the fabric (nodes own them): leave no callback behind.
    for (const MetaRoceLink& link : m_links)
    {
        link.channel->TraceDisconnectWithoutContext(
            "LinkState",
            MakeCallback(&MetaRoceFabric::LinkStateChanged, this));
    }
    m_links.clear();
}

void
MetaRoceFabric::DoDispose()
{
    DisconnectLinks();
    m_hosts.clear();
    m_hostPorts.clear();
    m_switchNodes.clear();
    m_switches.clear();
    Object::DoDispose();
}

uint32_t
MetaRoceFabric::AddHost(Ptr<Node> node, uint32_t address)
{
    const uint32_t index = static_cast<uint32_t>(m_hosts.size());
    if (m_roles.size() <= node->GetId())
    {
        m_roles.resize(node->GetId() + 1);
    }
    NS_ABORT_MSG_IF(m_roles[node->GetId()].registered, "node registered twice");
    m_roles[node->GetId()] = {true, index, true};
    m_hosts.push_back(node);
    m_hostAddresses.push_back(address);
    m_hostPorts.emplace_back();
    m_hostPortPlanes.emplace_back();
    return index;
}

uint32_t
MetaRoceFabric::AddSwitch(Ptr<Node> node, uint32_t plane)
{
    Ptr<MetaRoceSwitch> sw = node->GetObject<MetaRoceSwitch>();
    NS_ABORT_MSG_IF(!sw, "a switch node needs an aggregated MetaRoceSwitch");
    const uint32_t index = static_cast<uint32_t>(m_switches.size());
    if (m_roles.size() <= node->GetId())
    {
        m_roles.resize(node->GetId() + 1);
    }
    NS_ABORT_MSG_IF(m_roles[node->GetId()].registered, "node registered twice");
    m_roles[node->GetId()] = {false, index, true};
    m_switchNodes.push_back(node);
    m_switches.push_back(sw);
    m_switchPlanes.push_back(plane);
    m_planeCount = std::max(m_planeCount, plane + 1);
    return index;
}

const MetaRoceFabric::Role&
MetaRoceFabric::GetRole(Ptr<Node> node) const
{
    NS_ABORT_MSG_IF(node->GetId() >= m_roles.size() || !m_roles[node->GetId()].registered,
                    "node " << node->GetId() << " is not part of this fabric");
    return m_roles[node->GetId()];
}

uint32_t
MetaRoceFabric::AddLink(Ptr<MetaRoceChannel> channel, uint32_t plane)
{
    NS_ABORT_MSG_IF(channel->GetNDevices() != 2, "a link needs two attached devices");
    MetaRoceLink link;
    link.channel = channel;
    link.deviceA = channel->GetMetaRoceDevice(0);
    link.deviceB = channel->GetMetaRoceDevice(1);
    link.nodeA = link.deviceA->GetNode();
    link.nodeB = link.deviceB->GetNode();
    link.plane = plane;
    auto endpoint = [this, plane](Ptr<Node> node, Ptr<MetaRoceNetDevice> device) {
        const Role& role = GetRole(node);
        if (role.isHost)
        {
            auto& ports = m_hostPorts[role.index];
            auto& planes = m_hostPortPlanes[role.index];
            // Keep the host's ports in plane order.
            const auto at = std::upper_bound(planes.begin(), planes.end(), plane);
            ports.insert(ports.begin() + (at - planes.begin()), device);
            planes.insert(at, plane);
            return MetaRoceSwitch::NO_PORT;
        }
        const uint32_t port = m_switches[role.index]->GetPortIndex(device);
        NS_ABORT_MSG_IF(port == MetaRoceSwitch::NO_PORT, "the device is not a switch port");
        return port;
    };
    link.portA = endpoint(link.nodeA, link.deviceA);
    link.portB = endpoint(link.nodeB, link.deviceB);
    m_planeCount = std::max(m_planeCount, plane + 1);
    channel->TraceConnectWithoutContext("LinkState",
                                        MakeCallback(&MetaRoceFabric::LinkStateChanged, this));
    m_links.push_back(link);
    return static_cast<uint32_t>(m_links.size() - 1);
}

void
MetaRoceFabric::ComputeRoutes()
{
    NS_LOG_FUNCTION(this);
    ++m_routeComputations;
    const uint32_t nSwitches = static_cast<uint32_t>(m_switches.size());
    constexpr uint32_t UNREACHED = std::numeric_limits<uint32_t>::max();

    // Switch graph over live links: (port, neighbor switch), and host attachments.
    struct Edge
    {
        uint32_t port;
        uint32_t neighbor;
    };

    std::vector<std::vector<Edge>> adjacency(nSwitches);
    // Per host: (switch, port) pairs through which it is attached.
    std::vector<std::vector<std::pair<uint32_t, uint32_t>>> attachments(m_hosts.size());
    for (const MetaRoceLink& link : m_links)
    {
        if (!link.channel->IsLinkUp())
        {
            continue;
        }
        const Role& a = GetRole(link.nodeA);
        const Role& b = GetRole(link.nodeB);
        if (!a.isHost && !b.isHost)
        {
            adjacency[a.index].push_back({link.portA, b.index});
            adjacency[b.index].push_back({link.portB, a.index});
        }
        else if (a.isHost && !b.isHost)
        {
            attachments[a.index].push_back({b.index, link.portB});
        }
        else if (!a.isHost && b.isHost)
        {
            attachments[b.index].push_back({a.index, link.portA});
        }
    }

    // Hosts attached to the same set of switches share one search.
    std::map<std::vector<uint32_t>, std::vector<uint32_t>> groups;
    for (uint32_t h = 0; h < m_hosts.size(); ++h)
    {
        if (attachments[h].empty())
        {
            continue;
        }
        std::vector<uint32_t> key;
        for (const auto& [sw, port] : attachments[h])
        {
            key.push_back(sw);
        }
        std::sort(key.begin(), key.end());
        key.erase(std::unique(key.begin(), key.end()), key.end());
        groups[key].push_back(h);
    }

    for (uint32_t s = 0; s < nSwitches; ++s)
    {
        m_switches[s]->ClearRoutes();
    }

    std::vector<uint32_t> distance(nSwitches);
    std::vector<uint32_t> queue;
    queue.reserve(nSwitches);
    std::vector<uint32_t> ports;
    for (const auto& [sources, hosts] : groups)
    {
        std::fill(distance.begin(), distance.end(), UNREACHED);
        queue.clear();
        for (uint32_t s : sources)
        {
            distance[s] = 0;
            queue.push_back(s);
        }
        for (size_t head = 0; head < queue.size(); ++head)
        {
            const uint32_t s = queue[head];
            for (const Edge& e : adjacency[s])
            {
                if (distance[e.neighbor] == UNREACHED)
                {
                    distance[e.neighbor] = distance[s] + 1;
                    queue.push_back(e.neighbor);
                }
            }
        }
        // Attached switches: direct ports to each host.
        for (uint32_t h : hosts)
        {
            for (const auto& [sw, port] : attachments[h])
            {
                ports.clear();
                for (const auto& [sw2, port2] : attachments[h])
                {
                    if (sw2 == sw)
                    {
                        ports.push_back(port2);
                    }
                }
                m_switches[sw]->AddRoute(m_hostAddresses[h], 32, ports);
            }
        }
        // Every other reached switch: all next hops one step closer.
        for (uint32_t s : queue)
        {
            if (distance[s] == 0)
            {
                continue;
            }
            ports.clear();
            for (const Edge& e : adjacency[s])
            {
                if (distance[e.neighbor] + 1 == distance[s])
                {
                    ports.push_back(e.port);
                }
            }
            std::sort(ports.begin(), ports.end());
            const uint32_t group = m_switches[s]->AddEcmpGroup(ports);
            for (uint32_t h : hosts)
            {
                m_switches[s]->AddRoute(m_hostAddresses[h], 32, group);
            }
        }
    }
    m_routesComputedTrace();
}

void
MetaRoceFabric::LinkStateChanged(bool /* up */)
{
    if (m_reconvergenceDelay == Time::Max())
    {
        return;
    }
    const Time at = Simulator::Now() + m_reconvergenceDelay;
    if (at == m_pendingRecomputeAt)
    {
        return; // simultaneous changes (a plane failure) share one recomputation
    }
    m_pendingRecomputeAt = at;
    // The event holds a reference, so the fabric lives until it has run.
    Simulator::Schedule(m_reconvergenceDelay,
                        &MetaRoceFabric::ComputeRoutes,
                        Ptr<MetaRoceFabric>(this));
}

uint32_t
MetaRoceFabric::GetHostCount() const
{
    return static_cast<uint32_t>(m_hosts.size());
}

Ptr<Node>
MetaRoceFabric::GetHost(uint32_t i) const
{
    NS_ABORT_MSG_IF(i >= m_hosts.size(), "no host " << i);
    return m_hosts[i];
}

uint32_t
MetaRoceFabric::GetHostAddress(uint32_t i) const
{
    NS_ABORT_MSG_IF(i >= m_hosts.size(), "no host " << i);
    return m_hostAddresses[i];
}

std::vector<Ptr<MetaRoceNetDevice>>
MetaRoceFabric::GetHostPorts(uint32_t i) const
{
    NS_ABORT_MSG_IF(i >= m_hosts.size(), "no host " << i);
    return m_hostPorts[i];
}

int64_t
MetaRoceFabric::FindHost(uint32_t address) const
{
    for (uint32_t i = 0; i < m_hostAddresses.size(); ++i)
    {
        if (m_hostAddresses[i] == address)
        {
            return i;
        }
    }
    return -1;
}

uint32_t
MetaRoceFabric::GetSwitchCount() const
{
    return static_cast<uint32_t>(m_switches.size());
}

Ptr<Node>
MetaRoceFabric::GetSwitchNode(uint32_t i) const
{
    NS_ABORT_MSG_IF(i >= m_switchNodes.size(), "no switch " << i);
    return m_switchNodes[i];
}

Ptr<MetaRoceSwitch>
MetaRoceFabric::GetSwitch(uint32_t i) const
{
    NS_ABORT_MSG_IF(i >= m_switches.size(), "no switch " << i);
    return m_switches[i];
}

uint32_t
MetaRoceFabric::GetSwitchPlane(uint32_t i) const
{
    NS_ABORT_MSG_IF(i >= m_switchPlanes.size(), "no switch " << i);
    return m_switchPlanes[i];
}

NodeContainer
MetaRoceFabric::GetSwitches() const
{
    NodeContainer nodes;
    for (const Ptr<Node>& node : m_switchNodes)
    {
        nodes.Add(node);
    }
    return nodes;
}

NodeContainer
MetaRoceFabric::GetHosts() const
{
    NodeContainer nodes;
    for (const Ptr<Node>& node : m_hosts)
    {
        nodes.Add(node);
    }
    return nodes;
}

uint32_t
MetaRoceFabric::GetPlaneCount() const
{
    return m_planeCount;
}

const std::vector<MetaRoceLink>&
MetaRoceFabric::GetLinks() const
{
    return m_links;
}

Ptr<MetaRoceChannel>
MetaRoceFabric::GetChannel(Ptr<Node> a, Ptr<Node> b) const
{
    for (const MetaRoceLink& link : m_links)
    {
        if ((link.nodeA == a && link.nodeB == b) || (link.nodeA == b && link.nodeB == a))
        {
            return link.channel;
        }
    }
    return nullptr;
}

void
MetaRoceFabric::FailLink(Ptr<MetaRoceChannel> channel, Time start, Time stop)
{
    NS_ABORT_MSG_IF(!channel, "no such link");
    channel->ScheduleFailure(start, stop);
}

void
MetaRoceFabric::FailLink(Ptr<Node> a, Ptr<Node> b, Time start, Time stop)
{
    FailLink(GetChannel(a, b), start, stop);
}

void
MetaRoceFabric::FailPlane(uint32_t plane, Time start, Time stop)
{
    NS_ABORT_MSG_IF(plane >= m_planeCount, "no plane " << plane);
    for (const MetaRoceLink& link : m_links)
    {
        if (link.plane == plane)
        {
            link.channel->ScheduleFailure(start, stop);
        }
    }
}

void
MetaRoceFabric::DegradeLink(Ptr<MetaRoceChannel> channel, double fraction, Time start, Time stop)
{
    NS_ABORT_MSG_IF(!channel, "no such link");
    channel->ScheduleDegrade(fraction, start, stop);
}

void
MetaRoceFabric::SetBernoulliLoss(Ptr<MetaRoceChannel> channel, double rate)
{
    NS_ABORT_MSG_IF(!channel, "SetBernoulliLoss: no such link (null channel)");
    // Written so that NaN fails too.
    NS_ABORT_MSG_IF(!(rate >= 0 && rate <= 1),
                    "SetBernoulliLoss: the loss probability must be in [0, 1], not " << rate);
    for (uint32_t direction = 0; direction < 2; ++direction)
    {
        Ptr<RateErrorModel> model = CreateObject<RateErrorModel>();
        model->SetUnit(RateErrorModel::ERROR_UNIT_PACKET);
        model->SetRate(rate);
        channel->SetErrorModel(direction, model);
    }
}

void
MetaRoceFabric::SetGilbertElliottLoss(Ptr<MetaRoceChannel> channel,
                                      double goodToBad,
                                      double badToGood,
                                      double goodLossRate,
                                      double badLossRate)
{
    NS_ABORT_MSG_IF(!channel, "SetGilbertElliottLoss: no such link (null channel)");
    for (double probability : {goodToBad, badToGood, goodLossRate, badLossRate})
    {
        NS_ABORT_MSG_IF(!(probability >= 0 && probability <= 1),
                        "SetGilbertElliottLoss: every probability must be in [0, 1], not "
                            << probability);
    }
    for (uint32_t direction = 0; direction < 2; ++direction)
    {
        Ptr<MetaRoceGilbertElliottErrorModel> model =
            CreateObject<MetaRoceGilbertElliottErrorModel>();
        model->SetAttribute("GoodToBad", DoubleValue(goodToBad));
        model->SetAttribute("BadToGood", DoubleValue(badToGood));
        model->SetAttribute("GoodLossRate", DoubleValue(goodLossRate));
        model->SetAttribute("BadLossRate", DoubleValue(badLossRate));
        channel->SetErrorModel(direction, model);
    }
}

int64_t
MetaRoceFabric::AssignStreams(int64_t stream)
{
    int64_t used = 0;
    for (const Ptr<MetaRoceSwitch>& sw : m_switches)
    {
        used += sw->AssignStreams(stream + used);
    }
    for (const MetaRoceLink& link : m_links)
    {
        used += link.channel->AssignStreams(stream + used);
    }
    return used;
}

uint64_t
MetaRoceFabric::GetRouteComputations() const
{
    return m_routeComputations;
}

} // namespace ns3
