/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#include "metaroce-switch.h"

#include "metaroce-byte-order.h"
#include "metaroce-net-device.h"
#include "metaroce-ns3-compat.h"

#include "ns3/abort.h"
#include "ns3/boolean.h"
#include "ns3/double.h"
#include "ns3/enum.h"
#include "ns3/log.h"
#include "ns3/node.h"
#include "ns3/packet.h"
#include "ns3/simulator.h"
#include "ns3/trace-source-accessor.h"
#include "ns3/uinteger.h"

#include <algorithm>
#include <cstring>

namespace ns3
{

NS_LOG_COMPONENT_DEFINE("MetaRoceSwitch");

NS_OBJECT_ENSURE_REGISTERED(MetaRoceSwitch);

namespace
{

/// Largest number of members an ECMP group may have (bounds the stack array of live members).
constexpr size_t MAX_ECMP_MEMBERS = 256;

/// \return a 64-bit mix of \p x (the MurmurHash3 finalizer).
uint64_t
Mix64(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ULL;
    x ^= x >> 33;
    return x;
}

} // namespace

uint64_t
MetaRoceSwitch::Counters::TotalDrops() const
{
    uint64_t total = 0;
    for (uint64_t d : drops)
    {
        total += d;
    }
    return total;
}

uint64_t
MetaRoceSwitch::Counters::Drops(MetaRoceDropReason reason) const
{
    return drops[static_cast<uint32_t>(reason)];
}

TypeId
MetaRoceSwitch::GetTypeId()
{
    static TypeId tid =
        TypeId("ns3::MetaRoceSwitch")
            .SetParent<Object>()
            .SetGroupName("MetaRoce")
            .AddConstructor<MetaRoceSwitch>()
            .AddAttribute("BufferSize",
                          "Shared buffer size in bytes; 0 takes BufferPreset times the number "
                          "of ports.",
                          UintegerValue(0),
                          MakeUintegerAccessor(&MetaRoceSwitch::m_bufferSize),
                          MakeUintegerChecker<uint64_t>())
            .AddAttribute(
                "BufferPreset",
                "Buffer size per port when BufferSize is 0: Shallow = 512 KiB per "
                "port (16 MiB for 32 ports, Tomahawk/Trident class), Deep = 64 MiB "
                "per port (2 GiB for 32 ports, Jericho/HBM class).",
                EnumValue(MetaRoceSwitch::SHALLOW),
                MetaRoceMakeEnumAccessor<BufferPreset>(&MetaRoceSwitch::m_bufferPreset),
                MakeEnumChecker(MetaRoceSwitch::SHALLOW, "Shallow", MetaRoceSwitch::DEEP, "Deep"))
            .AddAttribute("DtAlpha",
                          "Dynamic threshold: an egress queue may hold at most DtAlpha times "
                          "the free shared buffer (lossy priorities only).",
                          DoubleValue(1.0),
                          MakeDoubleAccessor(&MetaRoceSwitch::m_dtAlpha),
                          MakeDoubleChecker<double>(0.0))
            .AddAttribute("EcnEnabled",
                          "Whether ECN-capable frames are marked CE on egress queue depth.",
                          BooleanValue(true),
                          MakeBooleanAccessor(&MetaRoceSwitch::m_ecnEnabled),
                          MakeBooleanChecker())
            .AddAttribute("EcnKmin",
                          "Egress queue bytes at or below which no frame is marked.",
                          UintegerValue(100000),
                          MakeUintegerAccessor(&MetaRoceSwitch::m_ecnKmin),
                          MakeUintegerChecker<uint64_t>())
            .AddAttribute("EcnKmax",
                          "Egress queue bytes above which every ECN-capable frame is marked; "
                          "equal to EcnKmin for a DCTCP-style step.",
                          UintegerValue(400000),
                          MakeUintegerAccessor(&MetaRoceSwitch::m_ecnKmax),
                          MakeUintegerChecker<uint64_t>())
            .AddAttribute("EcnPmax",
                          "Marking probability reached just below EcnKmax (RED slope).",
                          DoubleValue(0.2),
                          MakeDoubleAccessor(&MetaRoceSwitch::m_ecnPmax),
                          MakeDoubleChecker<double>(0.0, 1.0))
            .AddAttribute("PfcEnabled",
                          "Whether the switch sends PFC XOFF/XON upstream (RoCEv2 baseline).",
                          BooleanValue(false),
                          MakeBooleanAccessor(&MetaRoceSwitch::m_pfcEnabled),
                          MakeBooleanChecker())
            .AddAttribute("PfcPriorities",
                          "Bit mask of the lossless priorities PFC protects (bit i = "
                          "priority i); default priority 3.",
                          UintegerValue(0x08),
                          MakeUintegerAccessor(&MetaRoceSwitch::m_pfcPriorities),
                          MakeUintegerChecker<uint8_t>())
            .AddAttribute("PfcXoffThreshold",
                          "Bytes buffered from one ingress port at one priority above which "
                          "XOFF is sent out of that port.",
                          UintegerValue(96 * 1024),
                          MakeUintegerAccessor(&MetaRoceSwitch::m_pfcXoff),
                          MakeUintegerChecker<uint64_t>())
            .AddAttribute("PfcXonThreshold",
                          "Bytes at or below which XON is sent after an XOFF.",
                          UintegerValue(64 * 1024),
                          MakeUintegerAccessor(&MetaRoceSwitch::m_pfcXon),
                          MakeUintegerChecker<uint64_t>())
            .AddAttribute("PfcPauseQuanta",
                          "Pause time of an XOFF, in quanta of 512 bit times; refreshed every "
                          "half pause time while over XOFF.",
                          UintegerValue(0xffff),
                          MakeUintegerAccessor(&MetaRoceSwitch::m_pfcPauseQuanta),
                          MakeUintegerChecker<uint16_t>(1))
            .AddAttribute("EcmpSalt",
                          "Salt of the ECMP hash, mixed with the node id so that switches "
                          "hash differently (no polarization).",
                          UintegerValue(0),
                          MakeUintegerAccessor(&MetaRoceSwitch::m_ecmpSalt),
                          MakeUintegerChecker<uint32_t>())
            .AddTraceSource("Drop",
                            "A frame was dropped: (frame, ingress port, cause).",
                            MakeTraceSourceAccessor(&MetaRoceSwitch::m_dropTrace),
                            "ns3::MetaRoceSwitch::DropTracedCallback")
            .AddTraceSource("Forward",
                            "A frame was admitted to an egress queue (after rewriting): "
                            "(frame, ingress port, egress port, priority).",
                            MakeTraceSourceAccessor(&MetaRoceSwitch::m_forwardTrace),
                            "ns3::MetaRoceSwitch::ForwardTracedCallback")
            .AddTraceSource("EcnMark",
                            "A frame was marked CE: (frame, egress port, queue bytes before "
                            "it).",
                            MakeTraceSourceAccessor(&MetaRoceSwitch::m_ecnMarkTrace),
                            "ns3::MetaRoceSwitch::EcnMarkTracedCallback")
            .AddTraceSource("PfcPauseSent",
                            "The switch sent a PFC frame: (port, priority, quanta; 0 = XON).",
                            MakeTraceSourceAccessor(&MetaRoceSwitch::m_pfcSentTrace),
                            "ns3::MetaRoceSwitch::PfcTracedCallback")
            .AddTraceSource("PfcPauseReceived",
                            "A port received a PFC frame: (port, priority, quanta).",
                            MakeTraceSourceAccessor(&MetaRoceSwitch::m_pfcReceivedTrace),
                            "ns3::MetaRoceSwitch::PfcTracedCallback")
            .AddTraceSource("BufferBytes",
                            "Bytes held in the shared buffer.",
                            MakeTraceSourceAccessor(&MetaRoceSwitch::m_bufferUsed),
                            "ns3::TracedValueCallback::Uint64");
    return tid;
}

MetaRoceSwitch::MetaRoceSwitch()
    : MetaRocePortOwner(MetaRocePortOwner::PUSH),
      m_uniform(CreateObject<UniformRandomVariable>())
{
    NS_LOG_FUNCTION(this);
}

MetaRoceSwitch::~MetaRoceSwitch()
{
    NS_LOG_FUNCTION(this);
}

void
MetaRoceSwitch::DoDispose()
{
    for (PortState& port : m_ports)
    {
        for (EventId& event : port.pauseRefresh)
        {
            event.Cancel();
        }
        port.device->SetPortOwner(nullptr, 0);
        port.device = nullptr;
    }
    m_ports.clear();
    m_portUp.clear();
    m_uniform = nullptr;
    Object::DoDispose();
}

uint32_t
MetaRoceSwitch::AddPort(Ptr<MetaRoceNetDevice> port)
{
    NS_LOG_FUNCTION(this << port);
    NS_ABORT_MSG_IF(port->GetNumPriorities() > 8, "at most 8 priorities");
    const uint32_t index = static_cast<uint32_t>(m_ports.size());
    m_ports.emplace_back();
    m_ports.back().device = port;
    m_portUp.push_back(port->IsLinkUp() ? 1 : 0);
    UpdateSaltKey();
    port->SetFrameReceiveCallback(MakeCallback(&MetaRoceSwitch::ReceiveOnPort, this).Bind(index));
    port->SetDequeueCallback(MakeCallback(&MetaRoceSwitch::FrameDequeued, this));
    port->SetPortOwner(this, index); // same targets as the two callbacks, without them
    port->TraceConnectWithoutContext(
        "PfcPauseReceived",
        MakeCallback(&MetaRoceSwitch::PauseReceived, this).Bind(index));
    port->AddLinkChangeCallback(MakeCallback(&MetaRoceSwitch::PortLinkChanged, this).Bind(index));
    return index;
}

void
MetaRoceSwitch::PortLinkChanged(uint32_t port)
{
    if (port < m_portUp.size())
    {
        m_portUp[port] = m_ports[port].device->IsLinkUp() ? 1 : 0;
    }
}

void
MetaRoceSwitch::UpdateSaltKey()
{
    const Ptr<Node> node = m_ports.empty() ? nullptr : m_ports[0].device->GetNode();
    m_saltKey = Mix64((uint64_t(node ? node->GetId() : 0) << 32) | 0x5a17U);
}

uint32_t
MetaRoceSwitch::GetNPorts() const
{
    return static_cast<uint32_t>(m_ports.size());
}

Ptr<MetaRoceNetDevice>
MetaRoceSwitch::GetPort(uint32_t index) const
{
    return index < m_ports.size() ? m_ports[index].device : nullptr;
}

uint32_t
MetaRoceSwitch::GetPortIndex(Ptr<const MetaRoceNetDevice> port) const
{
    for (uint32_t i = 0; i < m_ports.size(); ++i)
    {
        if (m_ports[i].device == port)
        {
            return i;
        }
    }
    return NO_PORT;
}

uint32_t
MetaRoceSwitch::AddEcmpGroup(const std::vector<uint32_t>& ports)
{
    NS_ABORT_MSG_IF(ports.empty(), "an ECMP group needs at least one port");
    NS_ABORT_MSG_IF(ports.size() > MAX_ECMP_MEMBERS,
                    "an ECMP group has at most " << MAX_ECMP_MEMBERS << " members");
    for (uint32_t p : ports)
    {
        NS_ABORT_MSG_IF(p >= m_ports.size(),
                        "ECMP group names port " << p << " of " << m_ports.size());
    }
    auto found = m_groupIndex.find(ports);
    if (found != m_groupIndex.end())
    {
        return found->second;
    }
    const uint32_t index = static_cast<uint32_t>(m_groups.size());
    m_groups.push_back(ports);
    m_groupIndex.emplace(ports, index);
    m_groupSpans.push_back((uint64_t(m_groupPorts.size()) << 32) | ports.size());
    m_groupPorts.insert(m_groupPorts.end(), ports.begin(), ports.end());
    return index;
}

void
MetaRoceSwitch::AddRoute(uint32_t dst, uint8_t prefixLength, uint32_t group)
{
    NS_ABORT_MSG_IF(prefixLength > 32, "prefix length " << +prefixLength);
    NS_ABORT_MSG_IF(group >= m_groups.size(), "unknown ECMP group " << group);
    if (prefixLength == 32)
    {
        InsertHostRoute(dst, group);
        return;
    }
    const uint32_t mask = prefixLength == 0 ? 0 : ~uint32_t(0) << (32 - prefixLength);
    for (PrefixRoute& route : m_prefixRoutes)
    {
        if (route.length == prefixLength && route.prefix == (dst & mask))
        {
            route.group = group;
            return;
        }
    }
    m_prefixRoutes.push_back({dst & mask, mask, prefixLength, group});
    std::stable_sort(
        m_prefixRoutes.begin(),
        m_prefixRoutes.end(),
        [](const PrefixRoute& a, const PrefixRoute& b) { return a.length > b.length; });
}

void
MetaRoceSwitch::AddRoute(uint32_t dst, uint8_t prefixLength, const std::vector<uint32_t>& ports)
{
    AddRoute(dst, prefixLength, AddEcmpGroup(ports));
}

uint32_t
MetaRoceSwitch::HostRouteHome(uint32_t address) const
{
    return static_cast<uint32_t>(Mix64(address) & (m_hostRoutes.size() - 1));
}

void
MetaRoceSwitch::InsertHostRoute(uint32_t address, uint32_t group)
{
    if (2 * (m_hostRouteCount + 1) > m_hostRoutes.size())
    {
        std::vector<HostRouteSlot> old;
        old.swap(m_hostRoutes);
        m_hostRoutes.assign(std::max<size_t>(16, 2 * old.size()), {0, EMPTY_SLOT});
        m_hostRouteCount = 0;
        for (const HostRouteSlot& slot : old)
        {
            if (slot.group != EMPTY_SLOT)
            {
                InsertHostRoute(slot.address, slot.group);
            }
        }
    }
    const uint32_t mask = static_cast<uint32_t>(m_hostRoutes.size() - 1);
    for (uint32_t i = HostRouteHome(address);; i = (i + 1) & mask)
    {
        HostRouteSlot& slot = m_hostRoutes[i];
        if (slot.group == EMPTY_SLOT)
        {
            slot = {address, group};
            ++m_hostRouteCount;
            return;
        }
        if (slot.address == address)
        {
            slot.group = group;
            return;
        }
    }
}

void
MetaRoceSwitch::ClearRoutes()
{
    m_hostRoutes.clear();
    m_hostRouteCount = 0;
    m_prefixRoutes.clear();
    m_groups.clear();
    m_groupIndex.clear();
    m_groupSpans.clear();
    m_groupPorts.clear();
}

const std::vector<uint32_t>*
MetaRoceSwitch::LookupRoute(uint32_t dst) const
{
    const uint32_t group = LookupGroup(dst);
    return group == EMPTY_SLOT ? nullptr : &m_groups[group];
}

uint32_t
MetaRoceSwitch::LookupGroup(uint32_t dst) const
{
    if (!m_hostRoutes.empty())
    {
        const uint32_t mask = static_cast<uint32_t>(m_hostRoutes.size() - 1);
        for (uint32_t i = HostRouteHome(dst);; i = (i + 1) & mask)
        {
            const HostRouteSlot& slot = m_hostRoutes[i];
            if (slot.group == EMPTY_SLOT)
            {
                break;
            }
            if (slot.address == dst)
            {
                return slot.group;
            }
        }
    }
    for (const PrefixRoute& route : m_prefixRoutes)
    {
        if ((dst & route.mask) == route.prefix)
        {
            return route.group;
        }
    }
    return EMPTY_SLOT;
}

uint64_t
MetaRoceSwitch::HashFiveTuple(const metaroce::DatagramMeta& meta) const
{
    uint64_t h = Mix64(m_saltKey ^ (uint64_t(m_ecmpSalt) << 1));
    h = Mix64(h ^ ((uint64_t(meta.srcIp) << 32) | meta.dstIp));
    h = Mix64(h ^ ((uint64_t(metaroce::IP_PROTOCOL_UDP) << 32) | (uint64_t(meta.srcPort) << 16) |
                   meta.dstPort));
    return h;
}

uint32_t
MetaRoceSwitch::SelectEgressPort(const metaroce::DatagramMeta& meta,
                                 MetaRoceDropReason& reason) const
{
    const uint32_t group = LookupGroup(meta.dstIp);
    if (group == EMPTY_SLOT)
    {
        reason = MetaRoceDropReason::NO_ROUTE;
        return NO_PORT;
    }
    const uint64_t span = m_groupSpans[group];
    const uint32_t* members = m_groupPorts.data() + (span >> 32);
    const uint32_t n = static_cast<uint32_t>(span);
    if (n == 1)
    {
        if (m_portUp[members[0]])
        {
            return members[0];
        }
        reason = MetaRoceDropReason::LINK_DOWN;
        return NO_PORT;
    }
    const uint64_t hash = HashFiveTuple(meta);
    const uint32_t chosen = members[hash % n];
    if (m_portUp[chosen])
    {
        return chosen;
    }
    // Resilient hashing: only flows of the dead member move, over the live members.
    uint32_t live[MAX_ECMP_MEMBERS];
    size_t nLive = 0;
    for (uint32_t i = 0; i < n; ++i)
    {
        if (m_portUp[members[i]])
        {
            live[nLive++] = members[i];
        }
    }
    if (nLive == 0)
    {
        reason = MetaRoceDropReason::LINK_DOWN;
        return NO_PORT;
    }
    return live[Mix64(hash) % nLive];
}

uint64_t
MetaRoceSwitch::GetBufferSize() const
{
    if (m_bufferSize != 0)
    {
        return m_bufferSize;
    }
    const uint64_t perPort =
        m_bufferPreset == DEEP ? DEEP_BUFFER_PER_PORT : SHALLOW_BUFFER_PER_PORT;
    return perPort * std::max<uint64_t>(1, m_ports.size());
}

uint64_t
MetaRoceSwitch::GetBufferUsed() const
{
    return m_bufferUsed.Get();
}

uint64_t
MetaRoceSwitch::GetIngressBytes(uint32_t port, uint8_t priority) const
{
    return port < m_ports.size() && priority < 8 ? m_ports[port].ingressBytes[priority] : 0;
}

const MetaRoceSwitch::Counters&
MetaRoceSwitch::GetCounters() const
{
    return m_counters;
}

const MetaRoceSwitch::Counters&
MetaRoceSwitch::GetPortCounters(uint32_t port) const
{
    NS_ABORT_MSG_IF(port >= m_ports.size(), "no port " << port);
    return m_ports[port].counters;
}

int64_t
MetaRoceSwitch::AssignStreams(int64_t stream)
{
    m_uniform->SetStream(stream);
    return 1;
}

bool
MetaRoceSwitch::IsLossless(uint8_t priority) const
{
    return m_pfcEnabled && (m_pfcPriorities & (1U << priority)) != 0;
}

void
MetaRoceSwitch::ReceiveFrame(Ptr<MetaRoceNetDevice> port, Ptr<Packet> frame)
{
    const uint32_t inPort = GetPortIndex(port);
    NS_ABORT_MSG_IF(inPort == NO_PORT, "the device is not a port of this switch");
    ReceiveOnPort(inPort, port, frame);
}

void
MetaRoceSwitch::ReceiveOnPort(uint32_t inPort, Ptr<MetaRoceNetDevice> port, Ptr<Packet> frame)
{
    MetaRoceFrameInfo info;
    ReceiveFromPort(inPort, PeekPointer(port), frame, info);
}

void
MetaRoceSwitch::ReceiveFromPort(uint32_t inPort,
                                MetaRoceNetDevice* /* port */,
                                Ptr<Packet> frame,
                                MetaRoceFrameInfo& info)
{
    PortState& in = m_ports[inPort];
    const uint32_t size = frame->GetSize();
    ++m_counters.rxFrames;
    m_counters.rxBytes += size;
    ++in.counters.rxFrames;
    in.counters.rxBytes += size;

    // 1. Parse once: a frame with a record needs no bytes read; one without is parsed here.
    if (!info.valid)
    {
        uint8_t headers[METAROCE_HEADER_PEEK_SIZE];
        metaroce::ParsedFrame parsed;
        if (MetaRocePeekFrame(frame, headers, parsed) != metaroce::FrameStatus::OK)
        {
            Drop(frame, inPort, MetaRoceDropReason::MALFORMED);
            return;
        }
        info = MetaRoceFrameInfo();
        info.meta = parsed.meta;
        info.ttl = headers[metaroce::ETHERNET_HEADER_SIZE + metaroce::IPV4_TTL_OFFSET];
        info.ipHeaderLen = static_cast<uint8_t>(parsed.ipHeaderLen);
        info.valid = true;
    }

    // 2. TTL.
    if (info.ttl <= 1)
    {
        Drop(frame, info, inPort, MetaRoceDropReason::TTL_EXPIRED);
        return;
    }

    // 3. Route and ECMP.
    MetaRoceDropReason reason = MetaRoceDropReason::NO_ROUTE;
    const uint32_t outPort = SelectEgressPort(info.meta, reason);
    if (outPort == NO_PORT)
    {
        Drop(frame, info, inPort, reason);
        return;
    }
    PortState& out = m_ports[outPort];

    // 4. Priority.
    const uint8_t priority = out.device->GetPriorityForDscp(info.meta.dscp);

    // 5. Shared-buffer admission.
    const uint64_t bufferSize = GetBufferSize();
    const uint64_t used = m_bufferUsed.Get();
    if (used + size > bufferSize)
    {
        Drop(frame, info, inPort, MetaRoceDropReason::BUFFER_FULL);
        return;
    }
    const uint64_t queueBytes = out.device->GetQueueBytes(priority);
    if (!IsLossless(priority) && double(queueBytes + size) > m_dtAlpha * double(bufferSize - used))
    {
        Drop(frame, info, inPort, MetaRoceDropReason::QUEUE_THRESHOLD);
        return;
    }

    // 6. ECN on egress queue depth.
    bool mark = false;
    if (m_ecnEnabled && info.meta.ecn != metaroce::Ecn::NOT_ECT &&
        info.meta.ecn != metaroce::Ecn::CE && queueBytes > m_ecnKmin)
    {
        if (queueBytes > m_ecnKmax)
        {
            mark = true;
        }
        else
        {
            // Here m_ecnKmin < queueBytes <= m_ecnKmax, so the slope is well defined.
            const double p =
                m_ecnPmax * double(queueBytes - m_ecnKmin) / double(m_ecnKmax - m_ecnKmin);
            mark = m_uniform->GetValue() < p;
        }
    }

    // 7. Rewrite the headers: TTL, ECN and the Ethernet addresses, in the record; they reach
    // the bytes when something reads them (MetaRoceWritePending), in the same order.
    --info.ttl;
    ++info.pendingHops;
    if (mark)
    {
        info.meta.ecn = metaroce::Ecn::CE;
        info.ceAtHop = info.pendingHops;
    }
    if (!out.macsKnown)
    {
        Mac48Address::ConvertFrom(out.device->GetAddress()).CopyTo(out.mac);
        out.device->GetPeerMac().CopyTo(out.peerMac);
        out.macsKnown = true;
    }
    std::memcpy(info.src, out.mac, metaroce::MAC_ADDRESS_SIZE);
    std::memcpy(info.dst, out.peerMac, metaroce::MAC_ADDRESS_SIZE);
    info.pendingMacs = true;

    // 8. Charge the buffer and queue the frame.
    m_bufferUsed += size;
    in.ingressBytes[priority] += size;
    if (mark)
    {
        ++m_counters.ecnMarked;
        ++out.counters.ecnMarked;
        if (!m_ecnMarkTrace.IsEmpty())
        {
            MetaRoceWritePending(*frame, info);
            m_ecnMarkTrace(frame, outPort, queueBytes);
        }
    }
    ++m_counters.enqueuedFrames;
    m_counters.enqueuedBytes += size;
    ++out.counters.enqueuedFrames;
    out.counters.enqueuedBytes += size;
    if (!m_forwardTrace.IsEmpty())
    {
        MetaRoceWritePending(*frame, info);
        m_forwardTrace(frame, inPort, outPort, priority);
    }
    if (IsLossless(priority) && !in.pauseActive[priority] && in.ingressBytes[priority] > m_pfcXoff)
    {
        in.pauseActive[priority] = true;
        SendPfc(inPort, priority, m_pfcPauseQuanta);
    }
    if (!out.device->Enqueue(frame, priority, inPort, info))
    {
        // The device refused (its link went down): undo the charge; the device counted it.
        m_bufferUsed -= size;
        in.ingressBytes[priority] -= size;
        --m_counters.enqueuedFrames;
        m_counters.enqueuedBytes -= size;
        --out.counters.enqueuedFrames;
        out.counters.enqueuedBytes -= size;
        Drop(frame, info, inPort, MetaRoceDropReason::LINK_DOWN);
    }
}

void
MetaRoceSwitch::FrameDequeued(Ptr<MetaRoceNetDevice> egress,
                              Ptr<const Packet> frame,
                              uint8_t priority,
                              uint32_t inPort)
{
    DequeuedFromPort(PeekPointer(egress), frame, priority, inPort);
}

void
MetaRoceSwitch::DequeuedFromPort(MetaRoceNetDevice* /* egress */,
                                 Ptr<const Packet> frame,
                                 uint8_t priority,
                                 uint32_t inPort)
{
    const uint32_t size = frame->GetSize();
    m_bufferUsed -= size;
    if (inPort >= m_ports.size())
    {
        return;
    }
    PortState& in = m_ports[inPort];
    in.ingressBytes[priority] -= size;
    if (in.pauseActive[priority] && in.ingressBytes[priority] <= m_pfcXon)
    {
        in.pauseActive[priority] = false;
        in.pauseRefresh[priority].Cancel();
        SendPfc(inPort, priority, 0);
    }
}

void
MetaRoceSwitch::SendPfc(uint32_t port, uint8_t priority, uint16_t quanta)
{
    PortState& state = m_ports[port];
    state.device->SendPause(priority, quanta);
    if (quanta > 0)
    {
        ++m_counters.pfcPauseSent;
        ++state.counters.pfcPauseSent;
        // Refresh before the upstream pause expires, as long as the queue stays over XON.
        const Time pauseTime =
            state.device->GetDataRate().CalculateBytesTxTime(uint32_t(quanta) * 64);
        state.pauseRefresh[priority].Cancel();
        state.pauseRefresh[priority] =
            Simulator::Schedule(pauseTime / 2, &MetaRoceSwitch::RefreshPause, this, port, priority);
    }
    else
    {
        ++m_counters.pfcResumeSent;
        ++state.counters.pfcResumeSent;
    }
    m_pfcSentTrace(port, priority, quanta);
}

void
MetaRoceSwitch::RefreshPause(uint32_t port, uint8_t priority)
{
    if (m_ports[port].pauseActive[priority])
    {
        SendPfc(port, priority, m_pfcPauseQuanta);
    }
}

void
MetaRoceSwitch::PauseReceived(uint32_t port, uint8_t priority, uint16_t quanta)
{
    ++m_counters.pfcPauseReceived;
    ++m_ports[port].counters.pfcPauseReceived;
    m_pfcReceivedTrace(port, priority, quanta);
}

void
MetaRoceSwitch::Drop(Ptr<Packet> frame,
                     MetaRoceFrameInfo& info,
                     uint32_t inPort,
                     MetaRoceDropReason reason)
{
    MetaRoceWritePending(*frame, info);
    Drop(frame, inPort, reason);
}

void
MetaRoceSwitch::Drop(Ptr<const Packet> frame, uint32_t inPort, MetaRoceDropReason reason)
{
    NS_LOG_FUNCTION(this << frame << inPort << MetaRoceDropReasonName(reason));
    ++m_counters.drops[static_cast<uint32_t>(reason)];
    ++m_ports[inPort].counters.drops[static_cast<uint32_t>(reason)];
    m_dropTrace(frame, inPort, reason);
}

} // namespace ns3
