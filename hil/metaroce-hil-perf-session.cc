/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

/**
 * \file
 * metaroce-perf / metaroce-hild: what a session's two roles share (connections, buffer,
 * control channel, the end). The roles: metaroce-hil-perf-client.cc, metaroce-hil-perf-server.cc.
 */

#include "metaroce-hil-perf-session.h"

namespace metaroce
{
namespace hil
{
namespace perf
{

// ---------------------------------------------------------------------------------------------
// Session
// ---------------------------------------------------------------------------------------------

Session::Session(PerfApp& app, Shard& shard, std::shared_ptr<ControlChannel> channel, bool client)
    : m_app(app),
      m_opts(app.Options()),
      m_shard(shard),
      m_host(*shard.host),
      m_channel(std::move(channel)),
      m_client(client),
      m_name(m_channel->PeerName()),
      m_portAtStart(m_host.Port().Counters()),
      m_rxAtStart(m_host.GetRxCounts())
{
    m_ccfg = app.Connection();
    // Timers for software endpoints (metaroce-hil-timers.h); CreateConnections() adds the
    // round trip measured on the control connection.
    ApplyLinkTimers(m_ccfg, TimerInputs(0));
    m_app.CountSessionObject(1);
}

uint32_t
Session::ShardSourcePortBase(uint32_t base) const
{
    const uint64_t span = uint64_t(m_workload.connections()) * PORTS_PER_CONNECTION;
    const uint64_t first = base + uint64_t(m_shard.index) * span;
    return first + span <= 65536 ? uint32_t(first) : 0;
}

LinkTimerInputs
Session::TimerInputs(Time pathRtt) const
{
    LinkTimerInputs in;
    in.rtoFloor = Time(m_opts.rtoMinUs * 1e6);
    in.pathRtt = pathRtt;
    in.schedulingDelay = m_app.SchedulingDelay();
    in.connectionTimeout = Time(m_opts.connectionTimeoutMs * 1e9);
    in.rtoInitialMin = Time(m_opts.rtoInitialMs * 1e9);
    return in;
}

Session::~Session()
{
    Teardown();
    m_app.CountSessionObject(-1);
}

void
Session::Teardown()
{
    if (m_torn)
    {
        return;
    }
    m_torn = true;
    StopRoleTimers();
    if (m_exchangingDelays)
    {
        // (Only a session that exchanged delays touches the host here: one torn down before
        // it was accepted may outlive the host, as it has no connections in it.)
        m_channel->SetHostDelayExchange(nullptr, nullptr);
        m_host.ForgetPeerHostDelay(this);
    }
    if (!m_qpns.empty() || m_mr.lkey != 0 || m_patternMr.lkey != 0)
    {
        // What the engine gives back, as it counts it (the daemon reports it at the end).
        Endpoint& ep = m_host.GetEndpoint();
        const size_t connections = ep.ConnectionCount();
        const uint64_t bytes = ep.RegisteredBytes();
        for (uint32_t qpn : m_qpns)
        {
            m_host.ClearCompletionHandler(qpn);
            m_host.DestroyConnection(qpn);
        }
        for (MemoryRegion* mr : {&m_mr, &m_patternMr})
        {
            if (mr->lkey != 0)
            {
                ep.DeregisterMemory(mr->lkey);
                *mr = MemoryRegion();
            }
        }
        m_reclaimedConnections = connections - ep.ConnectionCount();
        m_reclaimedBytes = bytes - ep.RegisteredBytes();
    }
    if (m_channel)
    {
        m_channel->CloseAfterFlush();
    }
}

proto::DataAddress
Session::OurDataAddress() const
{
    proto::DataAddress addr;
    addr.set_ipv4(m_app.LocalIp());
    addr.set_data_port(m_opts.dataPort);
    addr.set_port_mode(m_opts.portMode);
    const MacAddress mac = m_host.Port().LocalMac();
    if (mac != MacAddress())
    {
        addr.set_mac(mac.bytes, MAC_ADDRESS_SIZE);
    }
    return addr;
}

std::string
Session::SharedDataPort(const proto::DataAddress& peer) const
{
    // Two programs on one host both bound to one UDP address take each other's datagrams
    // (SO_REUSEADDR), and the test fails without saying why.
    if (m_opts.portMode != "udp" || peer.ipv4() != m_app.LocalIp() ||
        peer.data_port() != m_opts.dataPort)
    {
        return "";
    }
    return "the peer's data address is this program's own (udp " + Ipv4ToString(peer.ipv4()) + ":" +
           std::to_string(peer.data_port()) +
           "): on one host give the two sides different --data-port and --sport-base "
           "(docs/hil.md, Run a test)";
}

std::string
Session::ConnectTo(const proto::DataAddress& peer,
                   const google::protobuf::RepeatedPtrField<proto::QueuePair>& qpns)
{
    const uint32_t peerIp = peer.ipv4();
    Endpoint& ep = m_host.GetEndpoint();
    for (size_t i = 0; i < m_qpns.size(); ++i)
    {
        PostStatus st = ep.Connect(m_qpns[i], peerIp, qpns.Get(int(i)).qpn());
        if (st != PostStatus::OK)
        {
            return std::string("cannot connect: ") + PostStatusName(st);
        }
    }
    LearnPeerAddress(peer);
    return "";
}

void
Session::LearnPeerAddress(const proto::DataAddress& peer)
{
    const uint32_t peerIp = peer.ipv4();
    MacAddress mac;
    if (peer.mac().size() == MAC_ADDRESS_SIZE)
    {
        std::memcpy(mac.bytes, peer.mac().data(), MAC_ADDRESS_SIZE);
    }
    // A raw peer may sit at the far end of a veth, which hands it a GSO train unsegmented.
    const bool takesTrains = peer.port_mode() != "raw";
    m_host.Port().LearnPeer(peerIp, mac, uint16_t(peer.data_port()), takesTrains);
}

void
Session::PrepareConnections(const std::string& transport)
{
    m_ccfg.transport = transport;
    m_host.Port().SetBacklogEcn(m_opts.backlogEcn < 0
                                    ? AutoBacklogEcn(transport, m_host.Port().DeliversInBlocks())
                                    : uint32_t(m_opts.backlogEcn));
    // The control connection runs over the same path as the data (except through a simulated
    // fabric, whose control traffic bypasses it): its round trip sizes the first RTO.
    Time rtt = m_channel->SmoothedRtt();
    ApplyLinkTimers(m_ccfg, TimerInputs(rtt));
    spdlog::info("{}: control round trip {:.3f} ms; timers: {}",
                 m_name,
                 double(rtt) / 1e9,
                 DescribeLinkTimers(m_ccfg));
}

PostStatus
Session::AddConnection(const ConnectionConfig& cfg, uint32_t& qpn, std::string* why)
{
    const PostStatus st = m_host.CreateConnection(cfg, qpn, why);
    if (st != PostStatus::OK)
    {
        return st;
    }
    m_connIndex[qpn] = uint32_t(m_qpns.size());
    m_qpns.push_back(qpn);
    std::weak_ptr<Session> weak = shared_from_this();
    m_host.SetCompletionHandler(qpn, [weak](const Completion& c) {
        if (auto self = weak.lock())
        {
            self->OnCompletion(c);
        }
    });
    return st;
}

bool
Session::CreateConnections(const std::string& transport, uint16_t portBase, std::string& why)
{
    PrepareConnections(transport);
    for (uint32_t i = 0; i < m_workload.connections(); ++i)
    {
        ConnectionConfig cfg = m_ccfg;
        cfg.sourcePortBase = uint16_t(portBase + i * PORTS_PER_CONNECTION);
        uint32_t qpn = 0;
        PostStatus st = AddConnection(cfg, qpn, &why);
        if (st != PostStatus::OK)
        {
            why = "cannot create connection " + std::to_string(i) + ": " + PostStatusName(st) +
                  (why.empty() ? "" : " (" + why + ")");
            return false;
        }
    }
    m_streams.clear();
    for (uint32_t c = 0; c < m_workload.connections(); ++c)
    {
        for (uint32_t s = 0; s < m_workload.streams(); ++s)
        {
            Stream st;
            st.conn = c;
            st.id = uint16_t(s);
            m_streams.push_back(st);
        }
    }
    return true;
}

void
Session::StartChannel()
{
    std::weak_ptr<Session> weak = shared_from_this();
    m_channel->Start(
        [weak](const proto::ControlMessage& msg) {
            if (auto self = weak.lock())
            {
                self->OnMessage(msg);
            }
        },
        [weak](const std::string& reason) {
            if (auto self = weak.lock())
            {
                self->OnChannelError(reason);
            }
        });
}

void
Session::StartHostDelayExchange()
{
    if (!m_host.HostDelay())
    {
        return; // --host-delay off
    }
    // Report this host's delay to the peer and take the peer's, for this session's peer only.
    m_exchangingDelays = true;
    EngineHost* host = &m_host; // outlives the session, which stops the exchange in Teardown()
    Session* self = this;       // (the same)
    m_channel->SetHostDelayExchange([host]() { return host->OwnHostDelay(); },
                                    [self](Time delay) { self->OnPeerHostDelay(delay); });
}

void
Session::OnPeerHostDelay(Time delay)
{
    // The peer's report lengthens the timers of this session's connections only.
    m_host.RecordPeerHostDelay(this, delay);
    for (uint32_t qpn : m_qpns)
    {
        m_host.GetEndpoint().SetPeerHostDelay(qpn, delay);
    }
}

void
Session::OnMessage(const proto::ControlMessage& msg)
{
    if (msg.body_case() == proto::ControlMessage::kReject)
    {
        Abort("peer " + m_name + " rejected the session: " + msg.reject().reason(), 1);
        return;
    }
    if (OnRoleMessage(msg))
    {
        return;
    }
    spdlog::warn("ignored an unexpected control message ({}) from {}",
                 int(msg.body_case()),
                 m_name);
}

void
Session::OnCompletion(const Completion& c)
{
    if (m_state == State::DONE)
    {
        return;
    }
    if (c.status != WcStatus::SUCCESS)
    {
        std::string hint;
        if (c.status == WcStatus::RETRY_EXC_ERR)
        {
            hint = ": no acknowledgement within the retry budget (peer vanished or every path "
                   "is down)";
        }
        else if (c.status == WcStatus::WR_FLUSH_ERR)
        {
            return; // the error before it was reported
        }
        Abort("connection " + std::to_string(c.connectionId) +
                  " failed: " + WcStatusName(c.status) + hint,
              1);
        return;
    }
    OnRoleCompletion(c);
}

void
Session::VerifyFailed(const std::string& what)
{
    if (m_errors++ == 0)
    {
        m_firstError = what;
        spdlog::error("verification failed: {}", what);
    }
}

void
Session::OnChannelError(const std::string& reason)
{
    if (m_state == State::DONE)
    {
        return;
    }
    if (AwaitingHello())
    {
        // Not a metaroce-hil client (or it left before saying hello): nothing was set up.
        m_app.NoteUnauthenticatedEnd(m_name, reason);
        m_state = State::DONE;
        m_app.SessionDone(this, -1);
        return;
    }
    Abort(reason, 1);
}

void
Session::Abort(const std::string& reason, int code)
{
    if (m_state == State::DONE)
    {
        return;
    }
    if (code == 2 || code == 0)
    {
        spdlog::warn("{}: {}", m_name, reason);
        m_interrupted = true;
    }
    else
    {
        spdlog::error("{}", reason);
        if (m_firstError.empty())
        {
            m_firstError = reason;
        }
        ++m_errors;
    }
    if (m_end == 0)
    {
        m_end = m_app.Clock().Now();
    }
    Finish(code);
}

void
Session::Finish(int code)
{
    if (m_state == State::DONE)
    {
        return;
    }
    bool ran = m_start != 0;
    m_state = State::DONE;
    if (ran)
    {
        PrintFinal(m_end ? m_end : m_app.Clock().Now());
    }
    else if (m_client || m_errors > 0)
    {
        // The session never started (rejected, unreachable): still one parseable line.
        std::lock_guard<std::recursive_mutex> lock(m_app.OutputMutex());
        std::printf("RESULT role=%s status=FAIL transport=%s error=\"%s\"\n",
                    m_client ? "client" : "server",
                    m_ccfg.transport.c_str(),
                    m_firstError.c_str());
        std::fflush(stdout);
    }
    if (m_client && !ran)
    {
        m_app.AddTotals(SessionTotals()); // not passed
    }
    Teardown();
    m_app.SessionDone(this, code);
}

} // namespace perf
} // namespace hil
} // namespace metaroce
