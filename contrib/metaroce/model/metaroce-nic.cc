/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#include "metaroce-nic.h"

#include "metaroce-encap.h"
#include "metaroce-frame.h"
#include "metaroce-net-device.h"
#include "metaroce-ns3-compat.h"
#include "metaroce-simulator-impl.h"
#include "metaroce-wire.h"

#include "ns3/data-rate.h"
#include "ns3/log.h"
#include "ns3/mac48-address.h"
#include "ns3/make-event.h"
#include "ns3/node.h"
#include "ns3/simulator.h"

#include <algorithm>
#include <limits>

namespace ns3
{

NS_LOG_COMPONENT_DEFINE("MetaRoceNic");

namespace
{

/// splitmix64 finaliser: spreads connection numbers over ports.
uint64_t
Mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

} // namespace

/// Turns engine observer calls into the NIC's trace sources.
class MetaRoceNic::Observer : public metaroce::EngineObserver
{
  public:
    /// \param nic the NIC whose traces fire
    explicit Observer(MetaRoceNic* nic)
        : m_nic(nic)
    {
    }

    void OnPathEvent(metaroce::Time /*now*/,
                     uint32_t qpn,
                     metaroce::PathEvent event,
                     const metaroce::PathState& path) override
    {
        if (m_nic->m_pathEventTrace.IsEmpty())
        {
            return;
        }
        MetaRocePathEventInfo info;
        info.qpn = qpn;
        info.event = event;
        info.pathId = path.id;
        info.status = path.status;
        info.cwnd = path.cwnd;
        info.inflight = path.inflight;
        info.srtt = PicoSeconds(path.rtt.Smoothed());
        info.latestRtt = PicoSeconds(path.rtt.Latest());
        info.sourcePort = path.sourcePort;
        m_nic->m_pathEventTrace(info);
    }

    void OnRateChange(metaroce::Time /*now*/, uint32_t qpn, double bitsPerSecond) override
    {
        m_nic->m_rateChangeTrace(qpn, bitsPerSecond);
    }

  private:
    MetaRoceNic* m_nic; //!< owner
};

MetaRoceNic::MetaRoceNic()
    : MetaRocePortOwner(MetaRocePortOwner::PULL)
{
    NS_LOG_FUNCTION(this);
    m_seedStream = CreateObject<UniformRandomVariable>();
}

MetaRoceNic::~MetaRoceNic()
{
    NS_LOG_FUNCTION(this);
}

void
MetaRoceNic::DoDispose()
{
    NS_LOG_FUNCTION(this);
    if (m_timer)
    {
        m_timer->Cancel();
        m_timer = nullptr;
    }
    for (PortState& p : m_ports)
    {
        p.device->SetPullCallback(MakeNullCallback<Ptr<Packet>>());
        p.device->SetFrameReceiveCallback(MetaRoceNetDevice::FrameReceiveCallback());
    }
    m_ports.clear();
    if (m_endpoint)
    {
        m_endpoint->SetObserver(nullptr);
    }
    m_endpoint.reset();
    m_observer.reset();
    m_node = nullptr;
    m_seedStream = nullptr;
    m_completionCallback = CompletionCallback();
    Object::DoDispose();
}

metaroce::Time
MetaRoceNic::ToEngineTime(Time t)
{
    return t.GetPicoSeconds();
}

Time
MetaRoceNic::FromEngineTime(metaroce::Time t)
{
    // Round up, so a timer never fires before its deadline (the engine would do nothing and
    // ask for the same deadline again).
    const int64_t psPerStep = TimeStep(1).GetPicoSeconds();
    if (psPerStep <= 1)
    {
        return PicoSeconds(t);
    }
    return TimeStep((t + psPerStep - 1) / psPerStep);
}

void
MetaRoceNic::Setup(Ptr<Node> node, uint32_t address, std::vector<Ptr<MetaRoceNetDevice>> ports)
{
    NS_LOG_FUNCTION(this << node << address);
    NS_ABORT_MSG_IF(!m_ports.empty(), "MetaRoceNic::Setup called twice");
    NS_ABORT_MSG_IF(ports.empty(), "MetaRoceNic needs at least one port");
    m_node = node;
    m_address = address;
    for (uint32_t i = 0; i < ports.size(); ++i)
    {
        PortState p;
        p.device = ports[i];
        m_ports.push_back(p);
        ports[i]->SetPullCallback(MakeCallback(&MetaRoceNic::Pull, this).Bind(i));
        ports[i]->SetFrameReceiveCallback(MakeCallback(&MetaRoceNic::Receive, this));
        ports[i]->SetPortOwner(this, i);
    }
    if (node && !node->GetObject<MetaRoceNic>())
    {
        node->AggregateObject(this);
    }
}

uint32_t
MetaRoceNic::GetAddress() const
{
    return m_address;
}

Ptr<Node>
MetaRoceNic::GetNode() const
{
    return m_node;
}

uint32_t
MetaRoceNic::GetNPorts() const
{
    return static_cast<uint32_t>(m_ports.size());
}

Ptr<MetaRoceNetDevice>
MetaRoceNic::GetPort(uint32_t i) const
{
    NS_ABORT_MSG_IF(i >= m_ports.size(), "port " << i << " out of range");
    return m_ports[i].device;
}

double
MetaRoceNic::GetLineRateBps() const
{
    if (m_lineRateAttribute > 0)
    {
        return m_lineRateAttribute;
    }
    double sum = 0;
    for (const PortState& p : m_ports)
    {
        sum += static_cast<double>(p.device->GetDataRate().GetBitRate());
    }
    return sum;
}

std::vector<uint8_t>&
MetaRoceNic::Scratch(bool receive)
{
    thread_local std::vector<uint8_t> buffers[2];
    return buffers[receive ? 1 : 0];
}

void
MetaRoceNic::EnsureEndpoint()
{
    if (m_endpoint)
    {
        return;
    }
    NS_ABORT_MSG_IF(m_ports.empty(), "MetaRoceNic used before Setup()");
    metaroce::EndpointConfig cfg = m_endpointConfig;
    cfg.localIp = m_address;
    cfg.lineRateBps = GetLineRateBps();
    if (cfg.seed == 0)
    {
        cfg.seed =
            (uint64_t(m_seedStream->GetInteger(1, std::numeric_limits<uint32_t>::max())) << 32) ^
            m_seedStream->GetInteger(0, std::numeric_limits<uint32_t>::max());
    }
    m_endpoint = std::make_unique<metaroce::Endpoint>(cfg);
    m_observer = std::make_unique<Observer>(this);
    m_endpoint->SetObserver(m_observer.get());
    uint32_t largestMtu = m_connectionConfig.mtu;
    for (const PortState& p : m_ports)
    {
        largestMtu = std::max<uint32_t>(largestMtu, p.device->GetMtu());
    }
    const size_t cap =
        metaroce::FRAME_HEADERS_SIZE + metaroce::Endpoint::MaxDatagramSize(largestMtu);
    m_txBuffer.resize(std::max(m_txBuffer.size(), cap));
    m_rxBuffer.resize(std::max(m_rxBuffer.size(), cap + 64));
}

metaroce::Endpoint&
MetaRoceNic::GetEndpoint()
{
    EnsureEndpoint();
    return *m_endpoint;
}

metaroce::ConnectionConfig
MetaRoceNic::GetDefaultConnectionConfig() const
{
    return m_connectionConfig;
}

void
MetaRoceNic::SetDefaultConnectionConfig(const metaroce::ConnectionConfig& cfg)
{
    m_connectionConfig = cfg;
}

metaroce::MemoryRegion
MetaRoceNic::RegisterMemory(void* base, uint64_t length, uint32_t access)
{
    return GetEndpoint().RegisterMemory(base, length, access);
}

bool
MetaRoceNic::DeregisterMemory(uint32_t lkey)
{
    return GetEndpoint().DeregisterMemory(lkey);
}

metaroce::PostStatus
MetaRoceNic::CreateConnection(uint32_t& qpn)
{
    return CreateConnection(m_connectionConfig, qpn, nullptr);
}

metaroce::PostStatus
MetaRoceNic::CreateConnection(const metaroce::ConnectionConfig& cfg,
                              uint32_t& qpn,
                              std::string* why)
{
    NS_LOG_FUNCTION(this);
    metaroce::Endpoint& ep = GetEndpoint();
    const size_t needed =
        metaroce::FRAME_HEADERS_SIZE + metaroce::Endpoint::MaxDatagramSize(cfg.mtu);
    m_txBuffer.resize(std::max(m_txBuffer.size(), needed));
    m_rxBuffer.resize(std::max(m_rxBuffer.size(), needed + 64));
    return ep.CreateConnection(cfg, qpn, why);
}

metaroce::PostStatus
MetaRoceNic::Connect(uint32_t qpn, uint32_t remoteIp, uint32_t remoteQpn)
{
    NS_LOG_FUNCTION(this << qpn << remoteIp << remoteQpn);
    metaroce::PostStatus st = GetEndpoint().Connect(qpn, remoteIp, remoteQpn);
    Pump();
    return st;
}

metaroce::PostStatus
MetaRoceNic::PostSend(uint32_t qpn, const metaroce::SendWr& wr)
{
    NS_LOG_FUNCTION(this << qpn << wr.wrId);
    metaroce::PostStatus st = GetEndpoint().PostSend(ToEngineTime(Simulator::Now()), qpn, wr);
    if (st == metaroce::PostStatus::OK)
    {
        Pump();
    }
    return st;
}

metaroce::PostStatus
MetaRoceNic::PostRecv(uint32_t qpn, const metaroce::RecvWr& wr)
{
    NS_LOG_FUNCTION(this << qpn << wr.wrId);
    metaroce::PostStatus st = GetEndpoint().PostRecv(ToEngineTime(Simulator::Now()), qpn, wr);
    if (st == metaroce::PostStatus::OK)
    {
        Pump();
    }
    return st;
}

void
MetaRoceNic::SetCompletionCallback(CompletionCallback callback)
{
    m_completionCallback = callback;
}

const metaroce::CounterSet&
MetaRoceNic::GetEngineCounters()
{
    return GetEndpoint().Counters();
}

uint64_t
MetaRoceNic::GetParkedDrops() const
{
    return m_parkedDrops;
}

int64_t
MetaRoceNic::AssignStreams(int64_t stream)
{
    NS_LOG_FUNCTION(this << stream);
    if (m_endpoint)
    {
        NS_LOG_WARN("AssignStreams after the endpoint was created: the seed is already drawn");
    }
    m_seedStream->SetStream(stream);
    return 1;
}

void
MetaRoceNic::Pump()
{
    if (!m_endpoint)
    {
        return;
    }
    if (m_inPump || m_pullDepth > 0)
    {
        // Re-entered from a completion callback or a pull: the running pump loops again.
        m_pumpAgain = true;
        if (m_pullDepth > 0 && !m_inPump && !m_deferredScheduled)
        {
            m_deferredScheduled = true;
            Simulator::ScheduleNow(&MetaRoceNic::DeferredPump, this);
        }
        return;
    }
    m_inPump = true;
    do
    {
        m_pumpAgain = false;
        DrainCompletions();
        // Wake idle ports: each pulls (PollTransmit) until it is busy or the engine has
        // nothing for it.
        for (PortState& p : m_ports)
        {
            if (!p.device->IsTransmitting())
            {
                p.device->NotifyPullReady();
            }
        }
    } while (m_pumpAgain);
    m_inPump = false;
    RearmTimer();
}

void
MetaRoceNic::DeferredPump()
{
    m_deferredScheduled = false;
    Pump();
}

void
MetaRoceNic::DrainCompletions()
{
    metaroce::Completion c;
    Ptr<MetaRoceNic> self = this;
    while (!m_heldCompletions.empty() || (m_endpoint && m_endpoint->PollCompletion(c)))
    {
        if (!m_heldCompletions.empty())
        {
            c = m_heldCompletions.front();
            m_heldCompletions.pop_front();
        }
        NS_LOG_LOGIC("completion wr " << c.wrId << " qpn " << c.connectionId << " "
                                      << metaroce::WcStatusName(c.status));
        m_completionTrace(c);
        if (!m_completionCallback.IsNull())
        {
            m_completionCallback(self, c);
        }
    }
}

void
MetaRoceNic::RearmTimer()
{
    const metaroce::Time deadline = m_endpoint->NextTimeout();
    // m_timerAt is finite only while m_timer is scheduled and has not fired (Timeout clears
    // it; nothing else cancels the timer but this function and DoDispose).
    if (deadline == m_timerAt)
    {
        return;
    }
    if (m_timer)
    {
        m_timer->Cancel();
        m_timer = nullptr;
    }
    m_timerAt = deadline;
    if (deadline == metaroce::TIME_INFINITE)
    {
        return;
    }
    const uint64_t at = uint64_t(FromEngineTime(deadline).GetTimeStep());
    const uint64_t now = MetaRoceNowSteps();
    const uint64_t delay = at > now ? at - now : 0;
    // The NIC keeps the event, not an EventId, to cancel it (as MetaRoceNetDevice does with its
    // end of serialization): no EventId per timer, and the simulator's direct path when the
    // module's implementation is in use.
    m_timer = Ptr<EventImpl>(MakeEvent(&MetaRoceNic::Timeout, this), false);
    MetaRoceScheduleSteps(delay, GetPointer(m_timer));
}

void
MetaRoceNic::Timeout()
{
    m_timerAt = metaroce::TIME_INFINITE;
    m_endpoint->HandleTimeout(ToEngineTime(TimeStep(MetaRoceNowSteps())));
    Pump();
}

uint32_t
MetaRoceNic::PortOf(const metaroce::TxDatagram& tx) const
{
    const uint32_t n = static_cast<uint32_t>(m_ports.size());
    if (n == 1)
    {
        return 0;
    }
    if (tx.pathId >= 0)
    {
        return static_cast<uint32_t>(tx.pathId) % n;
    }
    return static_cast<uint32_t>(Mix(tx.connectionId) % n);
}

MetaRoceDatagramInfo
MetaRoceNic::Describe(const uint8_t* data,
                      size_t len,
                      uint32_t qpn,
                      int16_t pathId,
                      uint32_t port,
                      uint16_t srcPort)
{
    MetaRoceDatagramInfo info;
    info.qpn = qpn;
    info.pathId = pathId;
    info.length = static_cast<uint32_t>(len);
    info.port = port;
    info.srcPort = srcPort;
    if (len >= metaroce::Bth::SIZE)
    {
        const metaroce::Bth bth = metaroce::Bth::Read(data);
        info.psn = bth.psn;
        info.opcode = bth.opcode;
    }
    return info;
}

Ptr<Packet>
MetaRoceNic::Pull(uint32_t index)
{
    MetaRoceFrameInfo info;
    return PullForPort(index, info);
}

Ptr<Packet>
MetaRoceNic::PullForPort(uint32_t index, MetaRoceFrameInfo& info)
{
    if (!m_endpoint)
    {
        return nullptr;
    }
    PortState& me = m_ports[index];
    if (me.inPull)
    {
        return nullptr; // never re-enter a device from its own pull callback
    }
    me.inPull = true;
    ++m_pullDepth;
    Ptr<Packet> result;
    const metaroce::Time now = ToEngineTime(TimeStep(MetaRoceNowSteps()));
    const uint8_t dataPriority = me.device->GetPriorityForDscp(0);
    for (;;)
    {
        if (!me.parked.empty())
        {
            if (me.device->IsPaused(me.parkedPriority.front()))
            {
                break;
            }
            result = me.parked.front();
            me.parked.pop_front();
            me.parkedPriority.pop_front();
            break;
        }
        if (me.device->IsPaused(dataPriority))
        {
            break; // do not take datagrams out of the engine while the port is paused
        }
        metaroce::TxDatagram tx;
        tx.buffer = m_txBuffer.data() + metaroce::FRAME_HEADERS_SIZE;
        tx.capacity = m_txBuffer.size() - metaroce::FRAME_HEADERS_SIZE;
        tx.zeroPayloadUnread = true; // a zero payload becomes the packet's virtual zero area
        if (!m_endpoint->PollTransmit(now, tx))
        {
            break;
        }
        const uint32_t portIndex = PortOf(tx);
        PortState& target = m_ports[portIndex];
        if (!target.macsKnown) // a port's addresses are fixed once it carries frames
        {
            Mac48Address::ConvertFrom(target.device->GetAddress()).CopyTo(target.mac.bytes);
            target.device->GetPeerMac().CopyTo(target.peerMac.bytes);
            target.macsKnown = target.device->GetPeer() != nullptr;
        }
        const size_t frameLen = metaroce::EncapsulateFrame(m_txBuffer.data(),
                                                           m_txBuffer.size(),
                                                           target.mac,
                                                           target.peerMac,
                                                           tx.meta,
                                                           tx.buffer,
                                                           tx.length);
        NS_ABORT_MSG_IF(frameLen == 0, "datagram of " << tx.length << " bytes does not fit");
        if (!m_txTrace.IsEmpty())
        {
            m_txTrace(Describe(tx.buffer,
                               tx.length,
                               tx.connectionId,
                               tx.pathId,
                               portIndex,
                               tx.meta.srcPort));
        }
        // Payload bytes of a virtual memory region are zeros: carry them as the packet's
        // virtual zero area instead of copying them (same bytes, no 4 KiB buffer per frame).
        // The engine says where the payload is and whether it is zeros it did not write.
        Ptr<Packet> frame = MetaRoceCreateFrame(m_txBuffer.data(),
                                                static_cast<uint32_t>(frameLen),
                                                metaroce::FRAME_HEADERS_SIZE + tx.payloadOffset,
                                                tx.payloadLength,
                                                tx.payloadZero);
        const uint8_t priority = target.device->GetPriorityForDscp(tx.meta.dscp);
        if (portIndex == index && !me.device->IsPaused(priority))
        {
            result = frame;
            info.meta = tx.meta; // what EncapsulateFrame wrote, so the fabric reads no bytes
            info.ttl = m_txBuffer[metaroce::ETHERNET_HEADER_SIZE + metaroce::IPV4_TTL_OFFSET];
            info.ipHeaderLen = metaroce::IPV4_HEADER_SIZE;
            info.valid = true;
            break;
        }
        if (!target.device->IsLinkUp())
        {
            ++m_parkedDrops; // a dead port loses what is sent to it
            continue;
        }
        target.parked.push_back(frame);
        target.parkedPriority.push_back(priority);
        if (portIndex != index && !target.inPull && !target.device->IsTransmitting())
        {
            target.device->NotifyPullReady();
        }
    }
    --m_pullDepth;
    me.inPull = false;
    if (!m_inPump && m_pullDepth == 0)
    {
        // A pull outside the pump (the port finished a frame) changed the engine's timers and
        // may have produced completions.
        RearmTimer();
        metaroce::Completion c;
        while (m_endpoint->PollCompletion(c))
        {
            m_heldCompletions.push_back(c);
            m_pumpAgain = true;
        }
        if (m_pumpAgain && !m_deferredScheduled)
        {
            m_deferredScheduled = true;
            Simulator::ScheduleNow(&MetaRoceNic::DeferredPump, this);
        }
    }
    return result;
}

void
MetaRoceNic::Receive(Ptr<MetaRoceNetDevice> device, Ptr<Packet> frame)
{
    MetaRoceFrameInfo info;
    ReceiveFromPort(0, PeekPointer(device), frame, info);
}

void
MetaRoceNic::ReceiveFromPort(uint32_t /* port */,
                             MetaRoceNetDevice* device,
                             Ptr<Packet> frame,
                             MetaRoceFrameInfo& info)
{
    if (!m_endpoint)
    {
        return;
    }
    const uint32_t size = frame->GetSize();
    if (size > m_rxBuffer.size())
    {
        m_rxBuffer.resize(size);
    }
    frame->CopyData(m_rxBuffer.data(), size);
    if (info.valid)
    {
        MetaRoceApplyPending(m_rxBuffer.data(), info); // the switches' rewrites, in their order
    }
    metaroce::ParsedFrame parsed;
    const metaroce::FrameStatus fs = metaroce::ParseFrame(m_rxBuffer.data(), size, parsed);
    if (fs != metaroce::FrameStatus::OK)
    {
        NS_LOG_WARN("dropping a frame: " << metaroce::FrameStatusName(fs));
        return;
    }
    if (!m_rxTrace.IsEmpty())
    {
        uint32_t portIndex = 0;
        for (uint32_t i = 0; i < m_ports.size(); ++i)
        {
            if (PeekPointer(m_ports[i].device) == device)
            {
                portIndex = i;
            }
        }
        metaroce::ParsedPacket pkt;
        int16_t pathId = -1;
        uint32_t qpn = 0;
        if (metaroce::ParseDatagram(parsed.datagram, parsed.datagramLen, pkt) ==
            metaroce::ParseStatus::OK)
        {
            qpn = pkt.bth.destQp;
            pathId = (pkt.info->headers & metaroce::HDR_MDH)   ? int16_t(pkt.mdh.pathId)
                     : (pkt.info->headers & metaroce::HDR_MAH) ? int16_t(pkt.mah.pathId)
                     : (pkt.info->headers & metaroce::HDR_MNH) ? int16_t(pkt.mnh.pathId)
                                                               : int16_t(-1);
        }
        m_rxTrace(Describe(parsed.datagram,
                           parsed.datagramLen,
                           qpn,
                           pathId,
                           portIndex,
                           parsed.meta.srcPort));
    }
    const metaroce::RxStatus st =
        m_endpoint->HandleDatagram(ToEngineTime(TimeStep(MetaRoceNowSteps())),
                                   parsed.meta,
                                   parsed.datagram,
                                   parsed.datagramLen);
    if (st != metaroce::RxStatus::ACCEPTED)
    {
        NS_LOG_LOGIC("engine refused a datagram: " << metaroce::RxStatusName(st));
    }
    Pump();
}

} // namespace ns3
