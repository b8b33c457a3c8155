/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#include "metaroce-verbs-runtime.h"

#include "metaroce-hil-fault-port.h"
#include "metaroce-hil-log.h"
#include "metaroce-hil-raw-port.h"
#include "metaroce-hil-udp-port.h"

#include <boost/asio/post.hpp>
#include <cstdlib>
#include <spdlog/spdlog.h>

namespace metaroce
{
namespace verbs
{

namespace
{

std::mutex g_runtimeMutex;       //!< guards g_runtime and g_references
Runtime* g_runtime = nullptr;    //!< the one runtime
unsigned g_references = 0;       //!< open contexts
bool g_atExitRegistered = false; //!< StopAtExit() registered

/// A program that exits without ibv_close_device: stop the progress thread first.
void
StopAtExit()
{
    std::lock_guard<std::mutex> lock(g_runtimeMutex);
    delete g_runtime;
    g_runtime = nullptr;
    g_references = 0;
}

} // namespace

Runtime*
Runtime::Acquire(const VerbsConfig& cfg, const InterfaceInfo& iface, std::string& why)
{
    std::lock_guard<std::mutex> lock(g_runtimeMutex);
    if (g_runtime == nullptr)
    {
        auto* rt = new Runtime(cfg, iface);
        if (!rt->Start(why))
        {
            delete rt;
            return nullptr;
        }
        g_runtime = rt;
        if (!g_atExitRegistered)
        {
            g_atExitRegistered = true;
            std::atexit(StopAtExit);
        }
    }
    ++g_references;
    return g_runtime;
}

void
Runtime::Release()
{
    std::lock_guard<std::mutex> lock(g_runtimeMutex);
    if (g_references > 0 && --g_references == 0)
    {
        delete g_runtime;
        g_runtime = nullptr;
    }
}

Runtime::Runtime(const VerbsConfig& cfg, const InterfaceInfo& iface)
    : m_cfg(cfg),
      m_iface(iface),
      m_mtu(cfg.mtu != 0 ? cfg.mtu : ActiveMtuBytes(iface.mtu)),
      m_work(boost::asio::make_work_guard(m_io)),
      m_timer(m_io)
{
}

Runtime::~Runtime()
{
    Stop();
}

bool
Runtime::Start(std::string& why)
{
    EndpointConfig ecfg;
    ecfg.localIp = m_iface.ip;
    ecfg.seed = m_cfg.seed;
    ecfg.pacingSlack = MicroSeconds(m_cfg.pacingSlackUs);
    m_endpoint = std::make_unique<Endpoint>(ecfg);
    std::unique_ptr<hil::FramePort> port;
    if (m_cfg.portMode == "raw")
    {
        // Ethernet frames on an AF_PACKET socket of the interface (CAP_NET_RAW).
        hil::RawPortConfig rcfg;
        rcfg.device = m_iface.name;
        rcfg.localIp = m_iface.ip;
        rcfg.dataPort = m_cfg.udpPort;
        port = hil::RawFramePort::Open(m_io, m_clock, rcfg, why);
        if (!port)
        {
            why = "cannot open the raw port on " + m_iface.name + ": " + why;
            return false;
        }
    }
    else
    {
        hil::UdpPortConfig ucfg;
        ucfg.localIp = m_iface.ip;
        ucfg.dataPort = m_cfg.udpPort;
        port = hil::UdpFramePort::Open(m_io, m_clock, ucfg, why);
        if (!port)
        {
            why = "cannot open the UDP port " + hil::Ipv4ToString(m_iface.ip) + ":" +
                  std::to_string(m_cfg.udpPort) + ": " + why;
            return false;
        }
    }
    if (m_cfg.loss > 0)
    {
        hil::FaultConfig fault;
        fault.loss = m_cfg.loss;
        fault.seed = m_cfg.seed;
        port = std::make_unique<hil::FaultFramePort>(m_io, m_clock, std::move(port), fault);
    }
    m_port = std::move(port);
    m_pump = std::make_unique<hil::EnginePump>(*m_endpoint,
                                               static_cast<hil::PumpSink&>(*this),
                                               Endpoint::MaxDatagramSize(m_mtu));
    m_port->Start([this](const DatagramMeta& meta,
                         const uint8_t* data,
                         size_t len) { OnDatagram(meta, data, len); },
                  [this]() { OnBatch(); });
    if (m_cfg.hostDelay)
    {
        // On the progress thread, which the engine's timers wake (docs/hil.md, "The host
        // delay during a run"); set up before that thread runs.
        m_hostDelay = std::make_unique<hil::HostDelayProbe>(m_io, m_clock, [this](Time own) {
            std::lock_guard<std::mutex> lock(m_mutex);
            if (!m_closed)
            {
                m_endpoint->SetHostDelay(own);
            }
        });
        m_hostDelay->Start();
    }
    m_thread = std::thread([this]() { m_io.run(); });
    spdlog::info("metaroce0 on {} ({}), {} transport, {} paths, MTU {}, {}",
                 m_iface.name,
                 hil::Ipv4ToString(m_iface.ip),
                 m_cfg.transport,
                 m_cfg.numPaths,
                 m_mtu,
                 m_port->Describe());
    return true;
}

void
Runtime::Stop()
{
    {
        std::lock_guard<std::mutex> lock(m_mutex);
        if (m_closed)
        {
            return;
        }
        m_closed = true;
        m_sinks.clear();
        if (m_port)
        {
            hil::PortCounters pc = m_port->Counters();
            const CounterSet& ec = m_endpoint->Counters();
            spdlog::info("metaroce0 closed: {} datagrams sent, {} received, {} kernel drops, "
                         "{} fault drops; data {} new, {} retransmitted, {} RTOs, {} received",
                         pc.txFrames,
                         pc.rxFrames,
                         pc.rxKernelDrops,
                         pc.faultDropped,
                         ec.Get(Counter::TX_DATA),
                         ec.Get(Counter::TX_RETRANSMIT),
                         ec.Get(Counter::RTO),
                         ec.Get(Counter::RX_DATA));
            m_port->Close();
        }
        boost::system::error_code ignored;
        m_timer.cancel();
    }
    m_work.reset();
    m_io.stop();
    if (m_thread.joinable())
    {
        m_thread.join();
    }
    if (m_hostDelay)
    {
        // Read after the join: the progress thread wrote it.
        spdlog::info("metaroce0: largest host delay {:.3f} ms",
                     double(m_hostDelay->Estimator().Largest()) / 1e9);
    }
}

void
Runtime::Kick()
{
    if (m_closed)
    {
        return;
    }
    AfterRun(m_pump->Run(m_clock.Now()));
}

void
Runtime::LearnPeer(uint32_t ip)
{
    if (m_cfg.udpPort != ROCE_UDP_PORT && m_port)
    {
        // Both ends of a verbs run use the same METAROCE_VERBS_PORT, so a UDP peer takes trains.
        m_port->LearnPeer(ip, MacAddress(), m_cfg.udpPort, m_cfg.portMode == "udp");
    }
}

void
Runtime::SetSink(uint32_t qpn, CompletionSink* sink)
{
    if (sink)
    {
        m_sinks[qpn] = sink;
    }
    else
    {
        m_sinks.erase(qpn);
    }
}

hil::PortCounters
Runtime::PortCounters() const
{
    return m_port ? m_port->Counters() : hil::PortCounters();
}

bool
Runtime::Transmit(const TxDatagram& tx)
{
    return m_port->Send(tx) != hil::SendStatus::WOULD_BLOCK;
}

void
Runtime::Deliver(const Completion& c)
{
    auto it = m_sinks.find(c.connectionId);
    if (it != m_sinks.end())
    {
        it->second->OnCompletion(c);
    }
}

void
Runtime::ArmTimer(Time deadline)
{
    if (deadline == m_timerAt || m_closed)
    {
        return;
    }
    m_timerAt = deadline;
    uint64_t generation = ++m_timerGeneration;
    if (deadline == TIME_INFINITE)
    {
        m_timer.cancel();
        return;
    }
    m_timer.expires_at(m_clock.ToSteady(deadline));
    m_timer.async_wait(
        [this, generation](const boost::system::error_code& error) { OnTimer(error, generation); });
}

void
Runtime::OnDatagram(const DatagramMeta& meta, const uint8_t* data, size_t len)
{
    std::lock_guard<std::mutex> lock(m_mutex);
    if (!m_closed)
    {
        m_endpoint->HandleDatagram(m_clock.Now(), meta, data, len);
    }
}

void
Runtime::OnBatch()
{
    std::lock_guard<std::mutex> lock(m_mutex);
    Kick();
}

void
Runtime::OnTimer(const boost::system::error_code& error, uint64_t generation)
{
    if (error)
    {
        return;
    }
    {
        std::lock_guard<std::mutex> lock(m_mutex);
        if (m_closed || generation != m_timerGeneration)
        {
            return;
        }
    }
    // An acknowledgement that has arrived but was not read yet counts before the timeout.
    m_port->PollReceive();
    std::lock_guard<std::mutex> lock(m_mutex);
    if (m_closed || generation != m_timerGeneration)
    {
        return;
    }
    m_timerAt = TIME_INFINITE;
    AfterRun(m_pump->OnTimer(m_clock.Now()));
}

void
Runtime::AfterRun(hil::EnginePump::State state)
{
    bool blocked =
        m_port->Flush() == hil::SendStatus::WOULD_BLOCK || state == hil::EnginePump::State::BLOCKED;
    if (blocked)
    {
        if (!m_waitingWritable)
        {
            m_waitingWritable = true;
            // Only the progress thread waits on the port's sockets.
            boost::asio::post(m_io, [this]() {
                std::lock_guard<std::mutex> lock(m_mutex);
                if (m_closed)
                {
                    return;
                }
                m_port->AsyncWaitWritable(
                    [this](const boost::system::error_code& error) { OnWritable(error); });
            });
        }
        return;
    }
    if (state == hil::EnginePump::State::BURST_LIMIT && !m_kickPosted)
    {
        m_kickPosted = true;
        boost::asio::post(m_io, [this]() {
            std::lock_guard<std::mutex> lock(m_mutex);
            m_kickPosted = false;
            Kick();
        });
    }
}

void
Runtime::OnWritable(const boost::system::error_code& error)
{
    std::lock_guard<std::mutex> lock(m_mutex);
    m_waitingWritable = false;
    if (error || m_closed)
    {
        return;
    }
    Kick();
}

} // namespace verbs
} // namespace metaroce
