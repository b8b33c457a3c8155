/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#include "metaroce-topology-helper.h"

#include "metaroce-channel.h"
#include "metaroce-net-device.h"
#include "metaroce-partition.h"

#include "ns3/abort.h"
#include "ns3/boolean.h"
#include "ns3/double.h"
#include "ns3/enum.h"
#include "ns3/log.h"
#include "ns3/node.h"
#include "ns3/uinteger.h"

#include <cmath>

namespace ns3
{

NS_LOG_COMPONENT_DEFINE("MetaRoceTopologyHelper");

namespace
{

/// Largest number of hosts under one leaf (the last address byte runs from 1 to 254).
constexpr uint32_t MAX_HOSTS_PER_LEAF = 254;

/**
 * \param leaf leaf (edge switch) index within a plane
 * \param host host index under that leaf
 * \return 10.(leaf / 256).(leaf % 256).(host + 1), host order
 */
uint32_t
HostAddress(uint32_t leaf, uint32_t host)
{
    NS_ABORT_MSG_IF(host >= MAX_HOSTS_PER_LEAF, "at most 254 hosts per leaf");
    NS_ABORT_MSG_IF(leaf >= 65536, "at most 65536 leaves");
    return (10U << 24) | (leaf << 8) | (host + 1);
}

} // namespace

MetaRoceTopologyHelper::MetaRoceTopologyHelper()
    : m_hostRate("100Gbps"),
      m_fabricRate("100Gbps"),
      m_delay(MicroSeconds(1))
{
    m_deviceFactory.SetTypeId("ns3::MetaRoceNetDevice");
    m_channelFactory.SetTypeId("ns3::MetaRoceChannel");
    m_switchFactory.SetTypeId("ns3::MetaRoceSwitch");
    m_fabricFactory.SetTypeId("ns3::MetaRoceFabric");
}

MetaRoceTopologyHelper::~MetaRoceTopologyHelper() = default;

void
MetaRoceTopologyHelper::SetHostLinkRate(DataRate rate)
{
    m_hostRate = rate;
}

void
MetaRoceTopologyHelper::SetFabricLinkRate(DataRate rate)
{
    m_fabricRate = rate;
}

void
MetaRoceTopologyHelper::SetLinkDelay(Time delay)
{
    m_delay = delay;
}

void
MetaRoceTopologyHelper::SetPlaneCount(uint32_t planes)
{
    NS_ABORT_MSG_IF(planes == 0, "at least one plane");
    m_planes = planes;
}

void
MetaRoceTopologyHelper::SetRankCount(uint32_t ranks)
{
    NS_ABORT_MSG_IF(ranks == 0, "at least one rank");
    NS_ABORT_MSG_IF(ranks > 1 && !MetaRoceMpiAvailable(),
                    "partitioning over ranks needs the module built with MPI "
                    "(docs/distributed.md)");
    m_ranks = ranks;
}

uint32_t
MetaRoceTopologyHelper::GetRankCount() const
{
    return m_ranks;
}

void
MetaRoceTopologyHelper::SetDeviceAttribute(std::string name, const AttributeValue& value)
{
    m_deviceFactory.Set(name, value);
}

void
MetaRoceTopologyHelper::SetChannelAttribute(std::string name, const AttributeValue& value)
{
    m_channelFactory.Set(name, value);
}

void
MetaRoceTopologyHelper::SetSwitchAttribute(std::string name, const AttributeValue& value)
{
    m_switchFactory.Set(name, value);
}

void
MetaRoceTopologyHelper::SetFabricAttribute(std::string name, const AttributeValue& value)
{
    m_fabricFactory.Set(name, value);
}

void
MetaRoceTopologyHelper::SetBuffer(MetaRoceSwitch::BufferPreset preset, uint64_t bytes)
{
    m_switchFactory.Set("BufferPreset", EnumValue(preset));
    m_switchFactory.Set("BufferSize", UintegerValue(bytes));
}

void
MetaRoceTopologyHelper::SetEcn(bool enabled, uint64_t kmin, uint64_t kmax, double pmax)
{
    NS_ABORT_MSG_IF(kmin > kmax, "EcnKmin must not exceed EcnKmax");
    m_switchFactory.Set("EcnEnabled", BooleanValue(enabled));
    m_switchFactory.Set("EcnKmin", UintegerValue(kmin));
    m_switchFactory.Set("EcnKmax", UintegerValue(kmax));
    m_switchFactory.Set("EcnPmax", DoubleValue(pmax));
}

void
MetaRoceTopologyHelper::SetPfc(bool enabled)
{
    m_switchFactory.Set("PfcEnabled", BooleanValue(enabled));
}

void
MetaRoceTopologyHelper::Begin()
{
    m_fabric = m_fabricFactory.Create<MetaRoceFabric>();
    m_nextMac = 1;
}

Ptr<Node>
MetaRoceTopologyHelper::NewHost(uint32_t address, uint32_t group)
{
    Ptr<Node> node = CreateObject<Node>(group % m_ranks);
    m_fabric->AddHost(node, address);
    return node;
}

Ptr<Node>
MetaRoceTopologyHelper::NewSwitch(uint32_t plane, uint32_t group)
{
    Ptr<Node> node = CreateObject<Node>(group % m_ranks);
    node->AggregateObject(m_switchFactory.Create<MetaRoceSwitch>());
    m_fabric->AddSwitch(node, plane);
    return node;
}

void
MetaRoceTopologyHelper::Connect(Ptr<Node> a, Ptr<Node> b, DataRate rate, uint32_t plane)
{
    const bool remote = a->GetSystemId() != b->GetSystemId();
    Ptr<MetaRoceChannel> channel;
    if (remote)
    {
        ObjectFactory factory = m_channelFactory;
        factory.SetTypeId("ns3::MetaRoceRemoteChannel");
        channel = factory.Create<MetaRoceChannel>();
    }
    else
    {
        channel = m_channelFactory.Create<MetaRoceChannel>();
    }
    channel->SetAttribute("Delay", TimeValue(m_delay));
    for (const Ptr<Node>& node : {a, b})
    {
        Ptr<MetaRoceNetDevice> device = m_deviceFactory.Create<MetaRoceNetDevice>();
        device->SetDataRate(rate);
        // Locally administered unicast addresses 02:00:xx:xx:xx:xx in creation order.
        uint8_t mac[6] = {0x02, 0, 0, 0, 0, 0};
        for (int i = 5; i >= 2; --i)
        {
            mac[i] = static_cast<uint8_t>(m_nextMac >> (8 * (5 - i)));
        }
        ++m_nextMac;
        Mac48Address address;
        address.CopyFrom(mac);
        device->SetAddress(address);
        node->AddDevice(device);
        device->Attach(channel);
        if (Ptr<MetaRoceSwitch> sw = node->GetObject<MetaRoceSwitch>())
        {
            sw->AddPort(device);
        }
    }
    if (remote)
    {
        MetaRoceConnectRemote(channel);
    }
    m_fabric->AddLink(channel, plane);
}

void
MetaRoceTopologyHelper::Finish()
{
    m_fabric->ComputeRoutes();
}

Ptr<MetaRoceFabric>
MetaRoceTopologyHelper::BuildFatTree(uint32_t k, uint32_t tiers)
{
    NS_ABORT_MSG_IF(k < 2 || k % 2 != 0, "a fat tree needs an even radix k >= 2");
    NS_ABORT_MSG_IF(tiers != 2 && tiers != 3, "a fat tree has 2 or 3 tiers");
    Begin();
    const uint32_t half = k / 2;
    // Leaves (edge switches) and their hosts, in leaf order.
    const uint32_t leaves = tiers == 3 ? k * half : k;
    std::vector<Ptr<Node>> hosts;
    hosts.reserve(leaves * half);
    for (uint32_t leaf = 0; leaf < leaves; ++leaf)
    {
        // Partition group: the pod in three tiers, the leaf in two.
        const uint32_t group = tiers == 3 ? leaf / half : leaf;
        for (uint32_t h = 0; h < half; ++h)
        {
            hosts.push_back(NewHost(HostAddress(leaf, h), group));
        }
    }
    for (uint32_t plane = 0; plane < m_planes; ++plane)
    {
        std::vector<Ptr<Node>> edge(leaves);
        for (uint32_t leaf = 0; leaf < leaves; ++leaf)
        {
            edge[leaf] = NewSwitch(plane, tiers == 3 ? leaf / half : leaf);
            for (uint32_t h = 0; h < half; ++h)
            {
                Connect(hosts[leaf * half + h], edge[leaf], m_hostRate, plane);
            }
        }
        if (tiers == 2)
        {
            for (uint32_t s = 0; s < half; ++s)
            {
                Ptr<Node> spine = NewSwitch(plane, s);
                for (uint32_t leaf = 0; leaf < leaves; ++leaf)
                {
                    Connect(edge[leaf], spine, m_fabricRate, plane);
                }
            }
            continue;
        }
        // Three tiers: pod p has edges p*half .. p*half+half-1 and aggregation switches.
        std::vector<Ptr<Node>> aggregation(k * half);
        for (uint32_t pod = 0; pod < k; ++pod)
        {
            for (uint32_t a = 0; a < half; ++a)
            {
                aggregation[pod * half + a] = NewSwitch(plane, pod);
                for (uint32_t e = 0; e < half; ++e)
                {
                    Connect(edge[pod * half + e], aggregation[pod * half + a], m_fabricRate, plane);
                }
            }
        }
        // Core switch a*half + c connects to aggregation switch a of every pod.
        for (uint32_t a = 0; a < half; ++a)
        {
            for (uint32_t c = 0; c < half; ++c)
            {
                Ptr<Node> core = NewSwitch(plane, a * half + c);
                for (uint32_t pod = 0; pod < k; ++pod)
                {
                    Connect(aggregation[pod * half + a], core, m_fabricRate, plane);
                }
            }
        }
    }
    Finish();
    return m_fabric;
}

Ptr<MetaRoceFabric>
MetaRoceTopologyHelper::BuildLeafSpine(uint32_t leaves,
                                       uint32_t hostsPerLeaf,
                                       double oversubscription)
{
    NS_ABORT_MSG_IF(leaves == 0 || hostsPerLeaf == 0, "empty leaf-spine");
    NS_ABORT_MSG_IF(oversubscription <= 0, "oversubscription must be positive");
    Begin();
    const double downlink = double(hostsPerLeaf) * double(m_hostRate.GetBitRate());
    const uint32_t spines = std::max<uint32_t>(
        1,
        static_cast<uint32_t>(
            std::ceil(downlink / (oversubscription * double(m_fabricRate.GetBitRate())) - 1e-9)));
    std::vector<Ptr<Node>> hosts;
    for (uint32_t leaf = 0; leaf < leaves; ++leaf)
    {
        for (uint32_t h = 0; h < hostsPerLeaf; ++h)
        {
            hosts.push_back(NewHost(HostAddress(leaf, h), leaf));
        }
    }
    for (uint32_t plane = 0; plane < m_planes; ++plane)
    {
        std::vector<Ptr<Node>> leafNodes(leaves);
        for (uint32_t leaf = 0; leaf < leaves; ++leaf)
        {
            leafNodes[leaf] = NewSwitch(plane, leaf);
            for (uint32_t h = 0; h < hostsPerLeaf; ++h)
            {
                Connect(hosts[leaf * hostsPerLeaf + h], leafNodes[leaf], m_hostRate, plane);
            }
        }
        for (uint32_t s = 0; s < spines; ++s)
        {
            Ptr<Node> spine = NewSwitch(plane, s);
            for (uint32_t leaf = 0; leaf < leaves; ++leaf)
            {
                Connect(leafNodes[leaf], spine, m_fabricRate, plane);
            }
        }
    }
    Finish();
    return m_fabric;
}

Ptr<MetaRoceFabric>
MetaRoceTopologyHelper::BuildSingleSwitch(uint32_t hosts)
{
    NS_ABORT_MSG_IF(hosts == 0, "no hosts");
    Begin();
    std::vector<Ptr<Node>> hostNodes;
    for (uint32_t h = 0; h < hosts; ++h)
    {
        hostNodes.push_back(NewHost(HostAddress(0, h)));
    }
    for (uint32_t plane = 0; plane < m_planes; ++plane)
    {
        Ptr<Node> sw = NewSwitch(plane);
        for (uint32_t h = 0; h < hosts; ++h)
        {
            Connect(hostNodes[h], sw, m_hostRate, plane);
        }
    }
    Finish();
    return m_fabric;
}

Ptr<MetaRoceFabric>
MetaRoceTopologyHelper::GetFabric() const
{
    return m_fabric;
}

uint32_t
MetaRoceTopologyHelper::GetHostCount() const
{
    return m_fabric ? m_fabric->GetHostCount() : 0;
}

Ptr<Node>
MetaRoceTopologyHelper::GetHost(uint32_t i) const
{
    NS_ABORT_MSG_IF(!m_fabric, "no fabric built");
    return m_fabric->GetHost(i);
}

uint32_t
MetaRoceTopologyHelper::GetHostAddress(uint32_t i) const
{
    NS_ABORT_MSG_IF(!m_fabric, "no fabric built");
    return m_fabric->GetHostAddress(i);
}

std::vector<Ptr<MetaRoceNetDevice>>
MetaRoceTopologyHelper::GetHostPorts(uint32_t i) const
{
    NS_ABORT_MSG_IF(!m_fabric, "no fabric built");
    return m_fabric->GetHostPorts(i);
}

NodeContainer
MetaRoceTopologyHelper::GetSwitches() const
{
    return m_fabric ? m_fabric->GetSwitches() : NodeContainer();
}

const std::vector<MetaRoceLink>&
MetaRoceTopologyHelper::GetLinks() const
{
    NS_ABORT_MSG_IF(!m_fabric, "no fabric built");
    return m_fabric->GetLinks();
}

Ptr<MetaRoceChannel>
MetaRoceTopologyHelper::GetChannel(Ptr<Node> a, Ptr<Node> b) const
{
    NS_ABORT_MSG_IF(!m_fabric, "no fabric built");
    return m_fabric->GetChannel(a, b);
}

void
MetaRoceTopologyHelper::FailLink(Ptr<Node> a, Ptr<Node> b, Time start, Time stop)
{
    NS_ABORT_MSG_IF(!m_fabric, "no fabric built");
    m_fabric->FailLink(a, b, start, stop);
}

void
MetaRoceTopologyHelper::FailPlane(uint32_t plane, Time start, Time stop)
{
    NS_ABORT_MSG_IF(!m_fabric, "no fabric built");
    m_fabric->FailPlane(plane, start, stop);
}

void
MetaRoceTopologyHelper::DegradeLink(Ptr<Node> a,
                                    Ptr<Node> b,
                                    double fraction,
                                    Time start,
                                    Time stop)
{
    NS_ABORT_MSG_IF(!m_fabric, "no fabric built");
    m_fabric->DegradeLink(m_fabric->GetChannel(a, b), fraction, start, stop);
}

void
MetaRoceTopologyHelper::EnablePcapHosts(std::string prefix)
{
    NS_ABORT_MSG_IF(!m_fabric, "no fabric built");
    for (uint32_t i = 0; i < m_fabric->GetHostCount(); ++i)
    {
        for (const Ptr<MetaRoceNetDevice>& port : m_fabric->GetHostPorts(i))
        {
            EnablePcap(prefix, port);
        }
    }
}

} // namespace ns3
