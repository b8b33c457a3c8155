/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#include "metaroce-hil-sim-host.h"

#include "metaroce-hil-clock.h"
#include "metaroce-hil-control.h"
#include "metaroce-hil-log.h"
#include "metaroce-hil-tap.h"
#include "metaroce-hil-timers.h"
#include "metaroce-hil-verify.h"
#include "metaroce-hil.pb.h"

#include "ns3/event-impl.h"
#include "ns3/metaroce-net-device.h"
#include "ns3/metaroce-nic.h"
#include "ns3/node.h"
#include "ns3/simulator.h"

#include <algorithm>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <cstdio>
#include <functional>
#include <map>
#include <memory>
#include <thread>
#include <vector>

namespace metaroce
{
namespace hil
{
namespace
{

using boost::asio::ip::tcp;

/// First UDP source port of the simulated host's connections (metaroce-perf's server default).
constexpr uint16_t SIM_SOURCE_PORT_BASE = 56000;
/// IPv4 + UDP + BTH + extension headers + ICRC around a payload of the engine MTU, at most.
constexpr uint32_t DATAGRAM_OVERHEAD = 87;

/// An ns-3 event that runs a std::function (ns-3.37's MakeEvent takes no lambdas).
class FunctionEvent : public ns3::EventImpl
{
  public:
    explicit FunctionEvent(std::function<void()> f)
        : m_f(std::move(f))
    {
    }

  protected:
    void Notify() override
    {
        m_f();
    }

  private:
    std::function<void()> m_f; //!< the work
};

/// \return "host a.b.c.d" for log lines.
std::string
HostName(uint32_t ip)
{
    return "sim host " + Ipv4ToString(ip);
}

} // namespace

/// Both halves of a SimHostServer.
class SimHostServer::Impl : private ServerEngine
{
  public:
    Impl(ns3::Ptr<ns3::MetaRoceNic> nic, uint16_t dataPort, double timeoutSeconds);

    bool Listen(const std::string& netns, uint16_t controlPort, std::string& error);
    void Start();
    void Stop();
    Stats GetStats() const;

  private:
    /// What the simulator thread reports when a session is set up.
    struct SetupResult
    {
        std::string why;            //!< "" on success
        std::vector<uint32_t> qpns; //!< connections
        uint64_t addr{0};           //!< region (write)
        uint64_t length{0};         //!< ...
        uint32_t rkey{0};           //!< ...
    };

    // ---- Asio thread ----
    void DoAccept();
    void OnAccept(const boost::system::error_code& error, tcp::socket socket);
    void OnMessage(uint64_t session, const proto::ControlMessage& msg);
    void OnChannelError(uint64_t session, const std::string& reason);
    void OnHello(uint64_t session, const proto::Hello& hello);
    /// The host adopts the client's connection settings, within its port's limits: the
    /// SettingsRule of CheckHello(). \return "" or why not
    std::string Adopt(const proto::ConnectionSettings& s, ConnectionConfig& cfg) const;
    void OnSetupDone(uint64_t session, const SetupResult& result);
    void OnVerdict(uint64_t session, const proto::Verdict& verdict);
    void RejectAndClose(std::shared_ptr<ControlChannel> channel, const std::string& reason);
    /// Run \p f in the simulator thread, in the host node's context.
    void InSimulation(std::function<void()> f);

    // ---- simulator thread ----
    /// \param buffer the zeroed receive region, made on the Asio thread (touching its pages
    ///        in the simulator thread would stall the real-time simulation for milliseconds)
    void SimSetup(uint64_t session,
                  const proto::Hello& hello,
                  const ConnectionConfig& cfg,
                  std::vector<uint8_t> buffer);
    void SimCompletion(ns3::Ptr<ns3::MetaRoceNic> nic, const Completion& c);
    void SimFinish(uint64_t session, const std::vector<uint64_t>& expected);
    void SimFinishTimeout(uint64_t session);
    void SimAbort(uint64_t session, const std::string& reason);
    void SimCheckDone();
    void SimVerdict();
    // The servers' engine access (ServerEngine): the NIC.
    PostStatus CreateConnection(const ConnectionConfig& cfg,
                                uint32_t& qpn,
                                std::string* why) override;
    PostStatus Connect(uint32_t qpn, uint32_t peerIp, uint32_t peerQpn) override;
    MemoryRegion RegisterMemory(uint8_t* base, uint64_t length, uint32_t access) override;
    PostStatus PostRecv(uint32_t qpn, const RecvWr& wr) override;
    void SimError(const std::string& what);
    void SimTeardown();

    // Set at construction, read by both threads.
    ns3::Ptr<ns3::MetaRoceNic> m_nic; //!< the engine (simulator thread only)
    uint32_t m_nodeId;                //!< context of the simulator events
    uint32_t m_ip;                    //!< host address
    uint16_t m_dataPort;              //!< UDP data port
    double m_timeoutSeconds;          //!< control timeout
    ConnectionConfig m_baseConfig;    //!< NIC defaults with the HIL timers
    uint32_t m_portMtu;               //!< IP MTU of the host port

    // Asio thread.
    boost::asio::io_context m_io;              //!< context
    HostClock m_clock;                         //!< control-plane time
    tcp::acceptor m_acceptor;                  //!< listener
    std::thread m_thread;                      //!< runs m_io
    std::shared_ptr<ControlChannel> m_channel; //!< the client's channel
    uint64_t m_session{0};                     //!< current session number
    bool m_helloSeen{false};                   //!< the session's Hello arrived
    bool m_running{false};                     //!< Accept sent, no verdict yet
    uint64_t m_rejected{0};                    //!< rejected clients

    // Simulator thread.
    struct SimSession
    {
        uint64_t id{0};                              //!< session number (0: none)
        std::vector<uint8_t> buffer;                 //!< registered receive buffer
        MemoryRegion mr;                             //!< its registration
        std::vector<uint32_t> qpns;                  //!< connections
        std::unique_ptr<VerifyingReceiver> receiver; //!< the receiving half, once set up
        uint64_t setupErrors{0};                     //!< problems before the receiver
        std::string firstSetupError;                 //!< the first of them
        ns3::EventId finishTimer;                    //!< wait for stragglers
    };

    SimSession m_sim; //!< the session in the simulation
    Stats m_stats;    //!< totals (simulator thread)
};

SimHostServer::Impl::Impl(ns3::Ptr<ns3::MetaRoceNic> nic, uint16_t dataPort, double timeoutSeconds)
    : m_nic(nic),
      m_nodeId(nic->GetNode()->GetId()),
      m_ip(nic->GetAddress()),
      m_dataPort(dataPort),
      m_timeoutSeconds(timeoutSeconds),
      m_baseConfig(nic->GetDefaultConnectionConfig()),
      m_portMtu(nic->GetPort(0)->GetMtu()),
      m_acceptor(m_io)
{
    // The peer is a software endpoint with millisecond scheduling jitter: metaroce-perf's
    // default timers (the control plane bypasses the fabric, so its round trip says nothing).
    ApplyLinkTimers(m_baseConfig, LinkTimerInputs());
    m_nic->SetCompletionCallback(ns3::MakeCallback(&Impl::SimCompletion, this));
}

bool
SimHostServer::Impl::Listen(const std::string& netns, uint16_t controlPort, std::string& error)
{
    NetnsScope scope(netns);
    if (!scope.Ok())
    {
        error = scope.Why();
        return false;
    }
    boost::system::error_code ec;
    tcp::endpoint at(boost::asio::ip::address_v4(m_ip), controlPort);
    m_acceptor.open(at.protocol(), ec);
    if (!ec)
    {
        m_acceptor.set_option(tcp::acceptor::reuse_address(true), ec);
    }
    if (!ec)
    {
        m_acceptor.bind(at, ec);
    }
    if (!ec)
    {
        m_acceptor.listen(8, ec);
    }
    if (ec)
    {
        error = "control listener on " + Ipv4ToString(m_ip) + ":" + std::to_string(controlPort) +
                (netns.empty() ? "" : " in namespace " + netns) + ": " + ec.message();
        return false;
    }
    return true;
}

void
SimHostServer::Impl::Start()
{
    DoAccept();
    m_thread = std::thread([this] {
        auto work = boost::asio::make_work_guard(m_io);
        m_io.run();
    });
}

void
SimHostServer::Impl::Stop()
{
    if (m_thread.joinable())
    {
        m_io.stop();
        m_thread.join();
    }
    m_stats.rejected = m_rejected;
}

SimHostServer::Stats
SimHostServer::Impl::GetStats() const
{
    return m_stats;
}

void
SimHostServer::Impl::InSimulation(std::function<void()> f)
{
    ns3::Simulator::ScheduleWithContext(m_nodeId, ns3::Time(0), new FunctionEvent(std::move(f)));
}

// ---- Asio thread ----------------------------------------------------------------------------

void
SimHostServer::Impl::DoAccept()
{
    m_acceptor.async_accept([this](const boost::system::error_code& error, tcp::socket socket) {
        OnAccept(error, std::move(socket));
    });
}

void
SimHostServer::Impl::OnAccept(const boost::system::error_code& error, tcp::socket socket)
{
    if (error)
    {
        if (error != boost::asio::error::operation_aborted)
        {
            std::printf("%s: accept: %s\n", HostName(m_ip).c_str(), error.message().c_str());
            DoAccept();
        }
        return;
    }
    auto channel =
        std::make_shared<ControlChannel>(std::move(socket), m_clock, Time(m_timeoutSeconds * 1e12));
    if (m_channel)
    {
        RejectAndClose(channel, "the simulated host is serving another client");
        DoAccept();
        return;
    }
    m_channel = channel;
    const uint64_t session = ++m_session;
    m_helloSeen = false;
    m_running = false;
    channel->Start([this, session](const proto::ControlMessage& msg) { OnMessage(session, msg); },
                   [this, session](const std::string& reason) { OnChannelError(session, reason); });
    DoAccept();
}

void
SimHostServer::Impl::RejectAndClose(std::shared_ptr<ControlChannel> channel,
                                    const std::string& reason)
{
    ++m_rejected;
    std::printf("%s: rejected client %s: %s\n",
                HostName(m_ip).c_str(),
                channel->PeerName().c_str(),
                reason.c_str());
    std::fflush(stdout);
    proto::ControlMessage msg;
    msg.mutable_reject()->set_reason(reason);
    channel->Start([](const proto::ControlMessage&) {}, [](const std::string&) {});
    channel->Send(msg);
    channel->CloseAfterFlush();
}

void
SimHostServer::Impl::OnMessage(uint64_t session, const proto::ControlMessage& msg)
{
    if (session != m_session || !m_channel)
    {
        return;
    }
    using M = proto::ControlMessage;
    if (msg.body_case() == M::kHello && !m_helloSeen)
    {
        m_helloSeen = true;
        OnHello(session, msg.hello());
    }
    else if (msg.body_case() == M::kFinish && m_running)
    {
        std::vector<uint64_t> expected(msg.finish().messages_per_stream().begin(),
                                       msg.finish().messages_per_stream().end());
        InSimulation([this, session, expected] { SimFinish(session, expected); });
    }
    else if (msg.body_case() == M::kReject)
    {
        OnChannelError(session, "client rejected the session: " + msg.reject().reason());
    }
    else
    {
        std::printf("%s: ignored an unexpected control message (%d) from %s\n",
                    HostName(m_ip).c_str(),
                    int(msg.body_case()),
                    m_channel->PeerName().c_str());
    }
}

void
SimHostServer::Impl::OnChannelError(uint64_t session, const std::string& reason)
{
    if (session != m_session || !m_channel)
    {
        return;
    }
    std::printf("%s: control connection from %s ended: %s\n",
                HostName(m_ip).c_str(),
                m_channel->PeerName().c_str(),
                reason.c_str());
    std::fflush(stdout);
    m_channel->Close();
    m_channel.reset();
    m_running = false;
    ++m_session; // late results of this session are dropped
    InSimulation([this, session, reason] { SimAbort(session, reason); });
}

void
SimHostServer::Impl::OnHello(uint64_t session, const proto::Hello& hello)
{
    std::shared_ptr<ControlChannel> channel = m_channel;
    auto reject = [&](const std::string& reason) {
        m_channel.reset();
        ++m_session;
        RejectAndClose(channel, reason);
    };
    ConnectionConfig cfg = m_baseConfig;
    const std::string why = CheckHello(
        hello,
        [this](const proto::ConnectionSettings& s, ConnectionConfig& c) { return Adopt(s, c); },
        cfg);
    if (!why.empty())
    {
        reject(why);
        return;
    }
    auto buffer = std::make_shared<std::vector<uint8_t>>(RegionBytes(hello.workload()), 0);
    InSimulation(
        [this, session, hello, cfg, buffer] { SimSetup(session, hello, cfg, std::move(*buffer)); });
}

std::string
SimHostServer::Impl::Adopt(const proto::ConnectionSettings& s, ConnectionConfig& cfg) const
{
    ConnectionConfig adopted = cfg;
    const std::string why = ApplySettings(s, adopted);
    if (!why.empty())
    {
        return why;
    }
    if (!s.icrc())
    {
        return "the simulated host computes and checks the ICRC; run the client without "
               "--no-icrc";
    }
    if (s.mtu() == 0 || uint64_t(s.mtu()) + DATAGRAM_OVERHEAD > m_portMtu)
    {
        return "mtu " + std::to_string(s.mtu()) + " does not fit the simulated host port (IP MTU " +
               std::to_string(m_portMtu) + ")";
    }
    cfg = adopted;
    return "";
}

void
SimHostServer::Impl::OnSetupDone(uint64_t session, const SetupResult& result)
{
    if (session != m_session || !m_channel)
    {
        return; // the client left meanwhile; the simulation tore the session down
    }
    if (!result.why.empty())
    {
        std::shared_ptr<ControlChannel> channel = m_channel;
        m_channel.reset();
        ++m_session;
        RejectAndClose(channel, "simulated host cannot set up the session: " + result.why);
        return;
    }
    proto::DataAddress address;
    address.set_ipv4(m_ip);
    address.set_data_port(m_dataPort);
    address.set_port_mode("sim");
    MemoryRegion region;
    region.addr = result.addr;
    region.length = result.length;
    region.rkey = result.rkey;
    const proto::ControlMessage msg =
        AcceptMessage(std::string(PERF_SOFTWARE) + " (metaroce-hil-fabric simulated host)",
                      address,
                      result.qpns,
                      SIM_SOURCE_PORT_BASE,
                      result.length != 0 ? &region : nullptr);
    m_channel->Send(msg);
    m_running = true;
    std::printf("%s: accepted client %s\n", HostName(m_ip).c_str(), m_channel->PeerName().c_str());
    std::fflush(stdout);
}

void
SimHostServer::Impl::OnVerdict(uint64_t session, const proto::Verdict& verdict)
{
    if (session != m_session || !m_channel)
    {
        return;
    }
    proto::ControlMessage msg;
    *msg.mutable_verdict() = verdict;
    m_channel->Send(msg);
    m_channel->CloseAfterFlush();
    std::printf("%s: verdict for %s: %llu messages %llu bytes verified, %llu errors%s%s\n",
                HostName(m_ip).c_str(),
                m_channel->PeerName().c_str(),
                (unsigned long long)verdict.messages_verified(),
                (unsigned long long)verdict.bytes_verified(),
                (unsigned long long)verdict.errors(),
                verdict.errors() ? ": " : "",
                verdict.first_error().c_str());
    std::fflush(stdout);
    m_channel.reset();
    m_running = false;
    ++m_session;
}

// ---- simulator thread -----------------------------------------------------------------------

void
SimHostServer::Impl::SimSetup(uint64_t session,
                              const proto::Hello& hello,
                              const ConnectionConfig& cfg,
                              std::vector<uint8_t> buffer)
{
    SimTeardown();
    m_sim = SimSession();
    m_sim.id = session;
    m_sim.buffer = std::move(buffer);
    SetupResult result;
    ServerSide side;
    result.why = SetUpServerSide(
        *this,
        hello,
        cfg,
        SIM_SOURCE_PORT_BASE,
        m_sim.buffer,
        [this](const std::string& what) { SimError(what); },
        side);
    m_sim.qpns = side.qpns;
    m_sim.mr = side.mr;
    m_sim.receiver = std::move(side.receiver);
    if (!result.why.empty())
    {
        SimTeardown();
        m_sim = SimSession();
    }
    else
    {
        ++m_stats.sessions;
        result.qpns = m_sim.qpns;
        if (hello.workload().op() == "write")
        {
            result.addr = m_sim.mr.addr;
            result.length = m_sim.mr.length;
            result.rkey = m_sim.mr.rkey;
        }
    }
    boost::asio::post(m_io, [this, session, result] { OnSetupDone(session, result); });
}

PostStatus
SimHostServer::Impl::CreateConnection(const ConnectionConfig& cfg, uint32_t& qpn, std::string* why)
{
    return m_nic->CreateConnection(cfg, qpn, why);
}

PostStatus
SimHostServer::Impl::Connect(uint32_t qpn, uint32_t peerIp, uint32_t peerQpn)
{
    return m_nic->Connect(qpn, peerIp, peerQpn);
}

MemoryRegion
SimHostServer::Impl::RegisterMemory(uint8_t* base, uint64_t length, uint32_t access)
{
    return m_nic->RegisterMemory(base, length, access);
}

PostStatus
SimHostServer::Impl::PostRecv(uint32_t qpn, const RecvWr& wr)
{
    return m_nic->PostRecv(qpn, wr);
}

void
SimHostServer::Impl::SimError(const std::string& what)
{
    // (The receiver counts its own problems; this logs the session's first.)
    const uint64_t errors = m_sim.receiver ? m_sim.receiver->Errors() : ++m_sim.setupErrors;
    if (errors == 1)
    {
        std::printf("%s: verification failed: %s\n", HostName(m_ip).c_str(), what.c_str());
        std::fflush(stdout);
    }
}

void
SimHostServer::Impl::SimCompletion(ns3::Ptr<ns3::MetaRoceNic>, const Completion& c)
{
    if (m_sim.id == 0 || !m_sim.receiver)
    {
        return; // a connection of an ended session
    }
    if (c.status != WcStatus::SUCCESS)
    {
        const auto conn = std::find(m_sim.qpns.begin(), m_sim.qpns.end(), c.connectionId);
        if (conn != m_sim.qpns.end() && c.status != WcStatus::WR_FLUSH_ERR)
        {
            m_sim.receiver->Error("connection " + std::to_string(conn - m_sim.qpns.begin()) +
                                  " failed: " + WcStatusName(c.status));
        }
        return;
    }
    if (m_sim.receiver->OnCompletion(c)) // (false: a connection of an ended session)
    {
        SimCheckDone();
    }
}

void
SimHostServer::Impl::SimFinish(uint64_t session, const std::vector<uint64_t>& expected)
{
    if (session != m_sim.id || !m_sim.receiver || m_sim.receiver->FinishReceived())
    {
        return;
    }
    m_sim.receiver->OnFinish(expected);
    SimCheckDone();
    if (m_sim.id == session)
    {
        // Stragglers are in flight or lost for good: give them the timeout.
        m_sim.finishTimer = ns3::Simulator::Schedule(ns3::Seconds(m_timeoutSeconds),
                                                     &Impl::SimFinishTimeout,
                                                     this,
                                                     session);
    }
}

void
SimHostServer::Impl::SimFinishTimeout(uint64_t session)
{
    if (session == m_sim.id && m_sim.receiver)
    {
        m_sim.receiver->StragglersTimedOut();
        SimVerdict();
    }
}

void
SimHostServer::Impl::SimCheckDone()
{
    if (m_sim.receiver && m_sim.receiver->Complete())
    {
        SimVerdict();
    }
}

void
SimHostServer::Impl::SimVerdict()
{
    const proto::Verdict v = m_sim.receiver->MakeVerdict();
    const bool pass = v.errors() == 0;
    ++(pass ? m_stats.passed : m_stats.failed);
    m_stats.messagesVerified += v.messages_verified();
    m_stats.bytesVerified += v.bytes_verified();
    m_stats.errors += v.errors();
    if (m_stats.firstError.empty())
    {
        m_stats.firstError = v.first_error();
    }
    const uint64_t session = m_sim.id;
    SimTeardown();
    m_sim = SimSession();
    boost::asio::post(m_io, [this, session, v] { OnVerdict(session, v); });
}

void
SimHostServer::Impl::SimAbort(uint64_t session, const std::string& reason)
{
    if (session != m_sim.id)
    {
        return; // never set up, or already judged
    }
    uint64_t errors = 1;
    std::string first = "session aborted: " + reason;
    if (m_sim.receiver)
    {
        m_sim.receiver->Error(first);
        errors = m_sim.receiver->Errors();
        first = m_sim.receiver->FirstError();
    }
    else
    {
        SimError(first);
    }
    ++m_stats.failed;
    m_stats.errors += errors;
    if (m_stats.firstError.empty())
    {
        m_stats.firstError = first;
    }
    SimTeardown();
    m_sim = SimSession();
}

void
SimHostServer::Impl::SimTeardown()
{
    m_sim.finishTimer.Cancel();
    for (uint32_t qpn : m_sim.qpns)
    {
        m_nic->GetEndpoint().DestroyConnection(qpn);
    }
    if (m_sim.mr.lkey != 0)
    {
        m_nic->DeregisterMemory(m_sim.mr.lkey);
    }
    m_sim.qpns.clear();
    m_sim.receiver.reset();
    m_sim.mr = MemoryRegion();
    if (!m_sim.buffer.empty())
    {
        // Freed on the Asio thread, as it was made there: giving back a large region's pages
        // would stall the real-time simulation.
        boost::asio::post(m_io, [freed = std::move(m_sim.buffer)]() {});
        m_sim.buffer.clear();
    }
}

// ---- SimHostServer --------------------------------------------------------------------------

SimHostServer::SimHostServer(ns3::Ptr<ns3::MetaRoceNic> nic,
                             uint16_t dataPort,
                             double timeoutSeconds)
    : m_impl(std::make_unique<Impl>(nic, dataPort, timeoutSeconds))
{
}

SimHostServer::~SimHostServer()
{
    m_impl->Stop();
}

bool
SimHostServer::Listen(const std::string& netns, uint16_t controlPort, std::string& error)
{
    return m_impl->Listen(netns, controlPort, error);
}

void
SimHostServer::Start()
{
    m_impl->Start();
}

void
SimHostServer::Stop()
{
    m_impl->Stop();
}

SimHostServer::Stats
SimHostServer::GetStats() const
{
    return m_impl->GetStats();
}

} // namespace hil
} // namespace metaroce
