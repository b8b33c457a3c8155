/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#include "metaroce-hil-engine-host.h"

#include "metaroce-wire.h"

#include <algorithm>
#include <boost/asio/post.hpp>
#include <spdlog/spdlog.h>

namespace metaroce
{
namespace hil
{

EngineHost::EngineHost(boost::asio::io_context& io,
                       const HostClock& clock,
                       const EndpointConfig& cfg,
                       std::unique_ptr<FramePort> port,
                       uint32_t maxMtu)
    : m_io(io),
      m_clock(clock),
      m_endpoint(cfg),
      m_port(std::move(port)),
      m_pump(m_endpoint, *this, Endpoint::MaxDatagramSize(maxMtu)),
      m_timer(io)
{
}

EngineHost::~EngineHost()
{
    Close();
}

void
EngineHost::Start()
{
    m_port->Start([this](const DatagramMeta& meta,
                         const uint8_t* data,
                         size_t len) { OnDatagram(meta, data, len); },
                  [this]() { Pump(); });
}

void
EngineHost::Close()
{
    if (m_closed)
    {
        return;
    }
    m_closed = true;
    m_timer.cancel();
    if (m_hostDelay)
    {
        m_hostDelay->Stop();
    }
    m_port->Close();
}

void
EngineHost::OnDatagram(const DatagramMeta& meta, const uint8_t* data, size_t len)
{
    Time now = m_clock.Now();
    ++m_rxDatagrams;
    RxStatus st = m_endpoint.HandleDatagram(now, meta, data, len);
    const char* why = RxStatusName(st);
    // The engine parsed the BTH before it looked the connection up, so len >= Bth::SIZE.
    if (st == RxStatus::UNKNOWN_CONNECTION &&
        m_destroyed.count(uint32_t(data[Bth::DEST_QP]) << 16 |
                          uint32_t(data[Bth::DEST_QP + 1]) << 8 | data[Bth::DEST_QP + 2]))
    {
        ++m_rx.lateAfterTeardown;
        why = "LATE_AFTER_TEARDOWN (for a connection already destroyed)";
    }
    else
    {
        ++m_rx.byStatus[size_t(st)];
    }
    if (st != RxStatus::ACCEPTED)
    {
        if (spdlog::should_log(spdlog::level::trace))
        {
            spdlog::trace("rx drop {} {}:{} -> {}:{} tos {}/{} len {}",
                          why,
                          Ipv4ToString(meta.srcIp),
                          meta.srcPort,
                          Ipv4ToString(meta.dstIp),
                          meta.dstPort,
                          int(meta.dscp),
                          int(meta.ecn),
                          len);
        }
        uint64_t suppressed = 0;
        if (m_dropLog.Allow(now, suppressed))
        {
            spdlog::warn("dropped a {}-byte datagram from {}:{}: {} ({} more drops suppressed "
                         "in the last second)",
                         len,
                         Ipv4ToString(meta.srcIp),
                         meta.srcPort,
                         why,
                         suppressed);
        }
    }
}

void
EngineHost::Pump()
{
    if (m_closed)
    {
        return;
    }
    if (m_running)
    {
        m_again = true; // a completion handler posted work: run once more before returning
        return;
    }
    m_running = true;
    EnginePump::State state;
    do
    {
        m_again = false;
        state = m_pump.Run(m_clock.Now());
    } while (m_again && state == EnginePump::State::IDLE);
    m_running = false;
    AfterRun(FlushPort(state));
}

EnginePump::State
EngineHost::FlushPort(EnginePump::State state)
{
    // What the run queued in a batching port goes to the kernel now, in one call per socket.
    if (m_port->Flush() == SendStatus::WOULD_BLOCK)
    {
        return EnginePump::State::BLOCKED;
    }
    return state;
}

void
EngineHost::AfterRun(EnginePump::State state)
{
    if (state == EnginePump::State::BLOCKED)
    {
        DoWaitWritable();
    }
    else if (state == EnginePump::State::BURST_LIMIT && !m_pumpPosted)
    {
        // Let received datagrams and timers in before sending more.
        m_pumpPosted = true;
        boost::asio::post(m_io, [this]() {
            m_pumpPosted = false;
            Pump();
        });
    }
}

bool
EngineHost::Transmit(const TxDatagram& tx)
{
    if (spdlog::should_log(spdlog::level::trace)) // the address strings cost an allocation
    {
        spdlog::trace("tx {}:{} -> {}:{} tos {}/{} len {} path {}",
                      Ipv4ToString(tx.meta.srcIp),
                      tx.meta.srcPort,
                      Ipv4ToString(tx.meta.dstIp),
                      tx.meta.dstPort,
                      int(tx.meta.dscp),
                      int(tx.meta.ecn),
                      tx.length,
                      tx.pathId);
    }
    if (m_waitingWritable)
    {
        return false;
    }
    return m_port->Send(tx) != SendStatus::WOULD_BLOCK;
}

void
EngineHost::Deliver(const Completion& c)
{
    auto it = m_handlers.find(c.connectionId);
    if (it != m_handlers.end())
    {
        // Copy: the handler may clear itself.
        CompletionHandler handler = it->second;
        handler(c);
    }
}

void
EngineHost::ArmTimer(Time deadline)
{
    if (deadline == TIME_INFINITE || m_closed)
    {
        return; // a pending earlier wait fires harmlessly and re-arms from NextTimeout()
    }
    if (deadline - m_clock.Now() <= SPIN_HORIZON)
    {
        // Pacing gaps and ACK-coalescing delays are microseconds: a kernel timer would wake
        // us tens of microseconds late every time, so run again as soon as other input is
        // handled instead.
        if (!m_soonPosted)
        {
            m_soonPosted = true;
            boost::asio::post(m_io, [this]() {
                m_soonPosted = false;
                OnTimer(boost::system::error_code(), m_timerGeneration, true);
            });
        }
        return;
    }
    if (m_timerAt != TIME_INFINITE && m_timerAt <= deadline)
    {
        return; // the pending wait fires first and re-arms from NextTimeout()
    }
    DoWaitTimer(deadline);
}

void
EngineHost::DoWaitTimer(Time deadline)
{
    m_timerAt = deadline;
    m_timerDeadline = deadline;
    uint64_t generation = ++m_timerGeneration;
    m_timer.expires_at(m_clock.ToSteady(deadline));
    m_timer.async_wait([this, generation](const boost::system::error_code& error) {
        OnTimer(error, generation, false);
    });
}

void
EngineHost::OnTimer(const boost::system::error_code& error, uint64_t generation, bool soon)
{
    if (error || generation != m_timerGeneration || m_closed)
    {
        return; // cancelled or superseded by an earlier deadline
    }
    if (!soon)
    {
        m_timerAt = TIME_INFINITE;
    }
    if (m_running)
    {
        return;
    }
    if (!soon)
    {
        ++m_timerStats.expiries;
        Time late = m_clock.Now() - m_timerDeadline;
        if (late > 0)
        {
            m_timerStats.lateSum += late;
            m_timerStats.lateMax = std::max(m_timerStats.lateMax, late);
        }
        if (m_hostDelay)
        {
            m_hostDelay->AddSample(late);
        }
    }
    if (m_endpoint.NextTimeout() <= m_clock.Now())
    {
        // A deadline has passed, maybe because the process was not scheduled or was busy
        // sending: read the acknowledgements that arrived meanwhile first, so that the
        // engine's deadlines move before it handles the timeout (docs/hil.md, "Timers on real
        // links").
        uint64_t before = m_rxDatagrams;
        m_port->PollReceive();
        m_timerStats.drained += m_rxDatagrams - before;
        if (m_closed)
        {
            return;
        }
    }
    m_running = true;
    EnginePump::State state = m_pump.OnTimer(m_clock.Now());
    while (m_again && state == EnginePump::State::IDLE)
    {
        m_again = false;
        state = m_pump.Run(m_clock.Now());
    }
    m_again = false;
    m_running = false;
    AfterRun(FlushPort(state));
}

void
EngineHost::StartHostDelayProbe(Time period, Time window)
{
    if (m_hostDelay || m_closed)
    {
        return;
    }
    m_hostDelay = std::make_unique<HostDelayProbe>(
        m_io,
        m_clock,
        // This host's own delay, for every connection; each session gives its own
        // connections their peer's (Endpoint::SetPeerHostDelay).
        [this](Time own) { m_endpoint.SetHostDelay(own); },
        period,
        window);
    m_hostDelay->Start();
}

Time
EngineHost::OwnHostDelay() const
{
    return m_hostDelay ? m_hostDelay->Own() : 0;
}

void
EngineHost::RecordPeerHostDelay(const void* peer, Time delay)
{
    m_peerDelay.Set(peer, m_clock.Now(), delay);
}

void
EngineHost::ForgetPeerHostDelay(const void* peer)
{
    m_peerDelay.Forget(peer);
}

void
EngineHost::DoWaitWritable()
{
    if (m_waitingWritable)
    {
        return;
    }
    m_waitingWritable = true;
    m_port->AsyncWaitWritable(
        [this](const boost::system::error_code& error) { OnWritable(error); });
}

void
EngineHost::OnWritable(const boost::system::error_code& error)
{
    m_waitingWritable = false;
    if (error || m_closed)
    {
        return;
    }
    Pump();
}

void
EngineHost::SetCompletionHandler(uint32_t qpn, CompletionHandler handler)
{
    m_handlers[qpn] = std::move(handler);
}

void
EngineHost::ClearCompletionHandler(uint32_t qpn)
{
    m_handlers.erase(qpn);
}

PostStatus
EngineHost::CreateConnection(const ConnectionConfig& cfg, uint32_t& qpn, std::string* why)
{
    PostStatus st = m_endpoint.CreateConnection(cfg, qpn, why);
    if (st == PostStatus::OK)
    {
        m_destroyed.erase(qpn);
    }
    return st;
}

void
EngineHost::DestroyConnection(uint32_t qpn)
{
    if (m_endpoint.DestroyConnection(qpn))
    {
        m_destroyed.insert(qpn);
    }
}

uint64_t
EngineHost::RxDropped(const RxCounts& since) const
{
    uint64_t n = m_rx.lateAfterTeardown - since.lateAfterTeardown;
    for (size_t i = 0; i < m_rx.byStatus.size(); ++i)
    {
        if (i != size_t(RxStatus::ACCEPTED))
        {
            n += m_rx.byStatus[i] - since.byStatus[i];
        }
    }
    return n;
}

std::string
EngineHost::DropSummary(const RxCounts& since) const
{
    std::string s;
    for (size_t i = 0; i < m_rx.byStatus.size(); ++i)
    {
        if (i == size_t(RxStatus::ACCEPTED) || i > size_t(RxStatus::NOT_CONNECTED))
        {
            continue;
        }
        std::string name = RxStatusName(RxStatus(i));
        std::transform(name.begin(), name.end(), name.begin(), ::tolower);
        s += (s.empty() ? "" : ", ") + name + " " +
             std::to_string(m_rx.byStatus[i] - since.byStatus[i]);
        if (RxStatus(i) == RxStatus::UNKNOWN_CONNECTION)
        {
            s += ", late_after_teardown " +
                 std::to_string(m_rx.lateAfterTeardown - since.lateAfterTeardown);
        }
    }
    return s;
}

} // namespace hil
} // namespace metaroce
