/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#include "metaroce-endpoint.h"

#include "metaroce-icrc.h"
#include "metaroce-multipath-connection.h"
#include "metaroce-rocev2-connection.h"

#include <algorithm>
#include <cstdint>

namespace metaroce
{

const char*
RxStatusName(RxStatus status)
{
    switch (status)
    {
    case RxStatus::ACCEPTED:
        return "ACCEPTED";
    case RxStatus::MALFORMED:
        return "MALFORMED";
    case RxStatus::BAD_ICRC:
        return "BAD_ICRC";
    case RxStatus::UNKNOWN_CONNECTION:
        return "UNKNOWN_CONNECTION";
    case RxStatus::WRONG_SOURCE:
        return "WRONG_SOURCE";
    case RxStatus::WRONG_TRANSPORT:
        return "WRONG_TRANSPORT";
    case RxStatus::NOT_CONNECTED:
        return "NOT_CONNECTED";
    }
    return "UNKNOWN";
}

Endpoint::Endpoint(const EndpointConfig& cfg)
    : m_shared(cfg),
      m_qpnStride(std::max<uint32_t>(cfg.qpnStride, 1)),
      m_qpnOffset(cfg.qpnOffset % std::max<uint32_t>(cfg.qpnStride, 1))
{
}

uint64_t
Endpoint::QpnOf(size_t index) const
{
    return uint64_t(FIRST_QPN) + m_qpnOffset + uint64_t(index) * m_qpnStride;
}

size_t
Endpoint::IndexOf(uint32_t qpn) const
{
    if (qpn < FIRST_QPN + m_qpnOffset)
    {
        return SIZE_MAX;
    }
    uint32_t rel = qpn - FIRST_QPN - m_qpnOffset;
    if (m_qpnStride == 1)
    {
        return rel; // the simulator's case: no division per datagram
    }
    return rel % m_qpnStride == 0 ? rel / m_qpnStride : SIZE_MAX;
}

Endpoint::~Endpoint() = default;

const EndpointConfig&
Endpoint::Config() const
{
    return m_shared.Config();
}

MemoryRegion
Endpoint::RegisterMemory(void* base, uint64_t length, uint32_t access)
{
    return RegisterMemory(base, length, access, uint64_t(reinterpret_cast<uintptr_t>(base)));
}

MemoryRegion
Endpoint::RegisterMemory(void* base, uint64_t length, uint32_t access, uint64_t iova)
{
    return m_shared.memory.Register(static_cast<uint8_t*>(base), length, access, iova);
}

bool
Endpoint::DeregisterMemory(uint32_t lkey)
{
    return m_shared.memory.Deregister(lkey);
}

size_t
Endpoint::MaxDatagramSize(uint32_t mtu)
{
    // BTH + the longest header set (MDH + RETH + RSH + ImmDt) + padded payload + ICRC.
    return Bth::SIZE + Mdh::SIZE + Reth::SIZE + Rsh::SIZE + ImmDt::SIZE + mtu + 3 + ICRC_SIZE;
}

PostStatus
Endpoint::CreateConnection(const ConnectionConfig& cfg, uint32_t& qpn, std::string* why)
{
    std::string reason;
    if (!cfg.Validate(reason))
    {
        if (why)
        {
            *why = reason;
        }
        return PostStatus::INVALID_ARGUMENT;
    }
    // Live connections count against the limit, destroyed ones do not. A new QPN is taken
    // while the table may grow; then the one destroyed longest ago is reused.
    bool tableFull = m_conns.size() >= m_shared.Config().maxConnections ||
                     QpnOf(m_conns.size()) > uint64_t(PSN_MASK);
    if (m_live >= m_shared.Config().maxConnections || (tableFull && m_freeQpns.empty()))
    {
        if (why)
        {
            *why = "too many connections";
        }
        return PostStatus::QUEUE_FULL;
    }
    qpn = tableFull ? m_freeQpns.front() : uint32_t(QpnOf(m_conns.size()));
    std::unique_ptr<TransportConnection> conn;
    if (cfg.transport == "metaroce")
    {
        conn = std::make_unique<MultipathConnection>(m_shared, qpn, cfg); // names validated
    }
    else if (cfg.transport == "rocev2")
    {
        conn = std::make_unique<RoceV2Connection>(m_shared, qpn, cfg);
    }
    else
    {
        if (why)
        {
            *why = "unknown transport '" + cfg.transport + "'";
        }
        return PostStatus::INVALID_ARGUMENT;
    }
    if (tableFull)
    {
        m_freeQpns.pop_front();
        m_conns[IndexOf(qpn)] = std::move(conn);
    }
    else
    {
        m_conns.push_back(std::move(conn));
    }
    ++m_live;
    return PostStatus::OK;
}

TransportConnection*
Endpoint::Find(uint32_t qpn) const
{
    size_t index = IndexOf(qpn);
    return index < m_conns.size() ? m_conns[index].get() : nullptr;
}

PostStatus
Endpoint::Connect(uint32_t qpn, uint32_t remoteIp, uint32_t remoteQpn)
{
    TransportConnection* c = Find(qpn);
    if (c == nullptr)
    {
        return PostStatus::INVALID_CONNECTION;
    }
    if (remoteQpn < FIRST_QPN || remoteQpn > PSN_MASK)
    {
        return PostStatus::INVALID_ARGUMENT;
    }
    c->Connect(remoteIp, remoteQpn);
    return PostStatus::OK;
}

bool
Endpoint::DestroyConnection(uint32_t qpn)
{
    TransportConnection* c = Find(qpn);
    if (c == nullptr)
    {
        return false;
    }
    m_shared.fairShare.Forget(*c);
    m_conns[IndexOf(qpn)].reset(); // ready-list and timer entries are skipped once it is gone
    m_freeQpns.push_back(qpn);
    --m_live;
    return true;
}

bool
Endpoint::FlushConnection(Time now, uint32_t qpn)
{
    TransportConnection* c = Find(qpn);
    if (c == nullptr)
    {
        return false;
    }
    c->Flush(now);
    Refresh(now, *c);
    return true;
}

PostStatus
Endpoint::PostSend(Time now, uint32_t qpn, const SendWr& wr)
{
    TransportConnection* c = Find(qpn);
    if (c == nullptr)
    {
        return PostStatus::INVALID_CONNECTION;
    }
    if (!c->Connected())
    {
        return PostStatus::NOT_CONNECTED;
    }
    if (c->InError())
    {
        return PostStatus::CONNECTION_ERROR;
    }
    uint8_t* ptr = nullptr;
    if (wr.sge.length > 0)
    {
        PostStatus st = m_shared.memory.Check(wr.sge.lkey, wr.sge.addr, wr.sge.length, 0, &ptr);
        if (st != PostStatus::OK)
        {
            return st;
        }
    }
    PostStatus st = c->PostSend(now, wr, ptr);
    if (st == PostStatus::OK)
    {
        Refresh(now, *c);
    }
    return st;
}

PostStatus
Endpoint::PostRecv(Time now, uint32_t qpn, const RecvWr& wr)
{
    TransportConnection* c = Find(qpn);
    if (c == nullptr)
    {
        return PostStatus::INVALID_CONNECTION;
    }
    if (c->InError())
    {
        return PostStatus::CONNECTION_ERROR;
    }
    uint8_t* ptr = nullptr;
    if (wr.sge.length > 0)
    {
        PostStatus st = m_shared.memory.Check(wr.sge.lkey,
                                              wr.sge.addr,
                                              wr.sge.length,
                                              ACCESS_LOCAL_WRITE,
                                              &ptr);
        if (st != PostStatus::OK)
        {
            return st;
        }
    }
    PostStatus st = c->PostRecv(now, wr, ptr);
    if (st == PostStatus::OK)
    {
        Refresh(now, *c);
    }
    return st;
}

RxStatus
Endpoint::HandleDatagram(Time now, const DatagramMeta& meta, const uint8_t* data, size_t len)
{
    ParsedPacket pkt;
    ParseStatus ps = ParseDatagram(data, len, pkt);
    if (ps != ParseStatus::OK)
    {
        m_shared.counters.Add(Counter::RX_MALFORMED);
        return RxStatus::MALFORMED;
    }
    if (m_shared.Config().icrc && !CheckDatagramIcrc(meta, data, len))
    {
        m_shared.counters.Add(Counter::RX_BAD_ICRC);
        return RxStatus::BAD_ICRC;
    }
    TransportConnection* c = Find(pkt.bth.destQp);
    if (c == nullptr)
    {
        m_shared.counters.Add(Counter::RX_UNKNOWN_CONNECTION);
        return RxStatus::UNKNOWN_CONNECTION;
    }
    if (!c->Connected())
    {
        m_shared.counters.Add(Counter::RX_UNKNOWN_CONNECTION);
        return RxStatus::NOT_CONNECTED;
    }
    if (meta.srcIp != c->RemoteIp())
    {
        m_shared.counters.Add(Counter::RX_WRONG_SOURCE);
        return RxStatus::WRONG_SOURCE;
    }
    Transport t = pkt.info->transport == Transport::CNP ? Transport::ROCEV2 : pkt.info->transport;
    if (t != c->Kind())
    {
        m_shared.counters.Add(Counter::RX_WRONG_TRANSPORT);
        return RxStatus::WRONG_TRANSPORT;
    }
    c->HandlePacket(now, meta, pkt);
    Refresh(now, *c);
    return RxStatus::ACCEPTED;
}

void
Endpoint::Refresh(Time now, TransportConnection& conn)
{
    if (!conn.inReadyList && conn.WantsToSend(now))
    {
        conn.inReadyList = true;
        m_ready.push_back(conn.Qpn());
    }
    ArmTimer(conn);
}

void
Endpoint::ArmTimer(TransportConnection& conn)
{
    // Lazy timers: a deadline that moved later (an RTO re-armed by an ACK, the common case)
    // keeps its earlier heap entry; when that fires, the connection finds nothing due and the
    // real deadline is pushed then. Only an earlier deadline costs a heap push.
    Time deadline = conn.NextDeadline();
    if (deadline < conn.scheduledDeadline)
    {
        conn.scheduledDeadline = deadline;
        ++conn.timerGeneration;
        m_timers.push(TimerEntry{deadline, conn.Qpn(), conn.timerGeneration});
    }
}

bool
Endpoint::PollTransmit(Time now, TxDatagram& out)
{
    size_t budget = m_ready.size();
    while (budget-- > 0)
    {
        uint32_t qpn = m_ready.front();
        m_ready.pop_front();
        TransportConnection* c = Find(qpn);
        if (c == nullptr)
        {
            continue;
        }
        c->inReadyList = false;
        if (c->PollTransmit(now, out))
        {
            Refresh(now, *c); // back at the tail if it has more: round robin
            return true;
        }
        // It could not send (e.g. the scheduler's path is full): leave it out of the ready
        // list until its next event, so the pump cannot spin; only its timer is re-armed.
        ArmTimer(*c);
    }
    return false;
}

Time
Endpoint::NextTimeout()
{
    while (!m_timers.empty())
    {
        const TimerEntry& top = m_timers.top();
        TransportConnection* c = Find(top.qpn);
        if (c != nullptr && c->timerGeneration == top.generation)
        {
            return top.deadline;
        }
        m_timers.pop();
    }
    return TIME_INFINITE;
}

void
Endpoint::HandleTimeout(Time now)
{
    while (!m_timers.empty() && m_timers.top().deadline <= now)
    {
        TimerEntry top = m_timers.top();
        m_timers.pop();
        TransportConnection* c = Find(top.qpn);
        if (c == nullptr || c->timerGeneration != top.generation)
        {
            continue;
        }
        c->scheduledDeadline = TIME_INFINITE;
        c->HandleTimeout(now);
        Refresh(now, *c);
    }
}

bool
Endpoint::PollCompletion(Completion& out)
{
    return m_shared.PopCompletion(out);
}

const CounterSet&
Endpoint::Counters() const
{
    return m_shared.counters;
}

const TransportConnection*
Endpoint::GetConnection(uint32_t qpn) const
{
    return Find(qpn);
}

size_t
Endpoint::ConnectionCount() const
{
    return m_live;
}

size_t
Endpoint::RegionCount() const
{
    return m_shared.memory.Size();
}

uint64_t
Endpoint::RegisteredBytes() const
{
    return m_shared.memory.Bytes();
}

std::string
Endpoint::CheckInvariants() const
{
    if (!m_shared.invariantFailure.empty())
    {
        return m_shared.invariantFailure;
    }
    for (const auto& conn : m_conns)
    {
        if (conn)
        {
            std::string why = conn->CheckInvariants();
            if (!why.empty())
            {
                return "QP " + std::to_string(conn->Qpn()) + ": " + why;
            }
        }
    }
    return {};
}

void
Endpoint::SetHostDelay(Time delay)
{
    m_shared.hostDelay = std::min(std::max<Time>(delay, 0), MAX_HOST_DELAY);
}

bool
Endpoint::SetPeerHostDelay(uint32_t qpn, Time delay)
{
    TransportConnection* c = Find(qpn);
    if (c == nullptr)
    {
        return false;
    }
    c->SetPeerHostDelay(std::min(std::max<Time>(delay, 0), MAX_HOST_DELAY));
    return true;
}

Time
Endpoint::HostDelay() const
{
    return m_shared.hostDelay;
}

void
Endpoint::SetObserver(EngineObserver* observer)
{
    m_shared.observer = observer;
}

} // namespace metaroce
