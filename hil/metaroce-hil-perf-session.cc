/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

/**
 * \file
 * metaroce-perf / metaroce-hild: the session (handshake, connections, posting, verification,
 * finish).
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

Session::Session(PerfApp& app,
                 EngineHost& host,
                 std::shared_ptr<ControlChannel> channel,
                 bool client)
    : m_app(app),
      m_opts(app.Options()),
      m_host(host),
      m_channel(std::move(channel)),
      m_client(client),
      m_name(m_channel->PeerName()),
      m_finishTimer(app.Io()),
      m_portAtStart(host.Port().Counters()),
      m_rxAtStart(host.GetRxCounts())
{
    m_ccfg = app.Connection();
    // Timers for software endpoints (metaroce-hil-timers.h); CreateConnections() adds the
    // round trip measured on the control connection.
    ApplyLinkTimers(m_ccfg, TimerInputs(0));
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
}

void
Session::Teardown()
{
    if (m_torn)
    {
        return;
    }
    m_torn = true;
    m_finishTimer.cancel();
    if (m_exchangingDelays)
    {
        // (Only a session that exchanged delays touches the host here: one torn down before
        // it was accepted may outlive the host, as it has no connections in it.)
        m_channel->SetHostDelayExchange(nullptr, nullptr);
        m_host.ForgetPeerHostDelay(this);
    }
    Endpoint& ep = m_host.GetEndpoint();
    for (uint32_t qpn : m_qpns)
    {
        m_host.ClearCompletionHandler(qpn);
        m_host.DestroyConnection(qpn);
    }
    if (m_mr.lkey != 0)
    {
        ep.DeregisterMemory(m_mr.lkey);
        m_mr = MemoryRegion();
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

bool
Session::CreateConnections(const std::string& transport, uint16_t portBase, std::string& why)
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
    for (uint32_t i = 0; i < m_workload.connections(); ++i)
    {
        ConnectionConfig cfg = m_ccfg;
        cfg.sourcePortBase = uint16_t(portBase + i * PORTS_PER_CONNECTION);
        uint32_t qpn = 0;
        PostStatus st = m_host.CreateConnection(cfg, qpn, &why);
        if (st != PostStatus::OK)
        {
            why = "cannot create connection " + std::to_string(i) + ": " + PostStatusName(st) +
                  (why.empty() ? "" : " (" + why + ")");
            return false;
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

bool
Session::AllocateBuffer(uint32_t access, std::string& why)
{
    uint64_t bytes = uint64_t(m_streams.size()) * m_depth * m_size;
    if (bytes > MAX_REGION_BYTES)
    {
        why = "buffer of " + std::to_string(bytes) + " bytes exceeds the " +
              std::to_string(MAX_REGION_BYTES) + "-byte limit; lower --size, --depth or --streams";
        return false;
    }
    m_buffer.assign(bytes, 0);
    m_mr = m_host.GetEndpoint().RegisterMemory(m_buffer.data(), bytes, access);
    if (m_mr.lkey == 0)
    {
        why = "cannot register a " + std::to_string(bytes) + "-byte memory region";
        return false;
    }
    return true;
}

uint8_t*
Session::Slot(size_t streamIndex, uint64_t slot)
{
    return m_buffer.data() + (streamIndex * m_depth + slot) * m_size;
}

void
Session::StartClient()
{
    m_workload.set_op(m_opts.op);
    m_workload.set_message_size(m_opts.size);
    m_workload.set_connections(m_opts.qps);
    m_workload.set_streams(m_opts.streams);
    m_workload.set_depth(m_opts.depth);
    m_workload.set_pattern_seed(m_opts.seed);
    m_size = m_opts.size;
    m_depth = m_opts.depth;
    m_write = m_opts.op == "write";
    m_pattern = std::make_unique<DataPattern>(m_opts.seed, m_size);
    std::string why;
    uint16_t base = m_opts.sourcePortBase ? uint16_t(m_opts.sourcePortBase) : uint16_t(50000);
    if (!CreateConnections(m_opts.transport, base, why) || !AllocateBuffer(ACCESS_LOCAL_WRITE, why))
    {
        Abort(why, 1);
        return;
    }
    StartChannel();
    StartHostDelayExchange(); // the server takes it only once it accepted us
    proto::ControlMessage msg;
    proto::Hello* hello = msg.mutable_hello();
    hello->set_protocol_version(proto::VERSION_CURRENT);
    hello->set_software(SOFTWARE);
    *hello->mutable_settings() = SettingsOf(m_ccfg, m_opts.icrc);
    *hello->mutable_workload() = m_workload;
    *hello->mutable_address() = OurDataAddress();
    AddQueuePairs(m_qpns, base, *hello->mutable_queue_pairs());
    m_channel->Send(msg);
    spdlog::info("connected to {}; sent Hello ({} {} x {} bytes, {} connection(s), {} "
                 "stream(s), {} path(s))",
                 m_name,
                 m_opts.transport,
                 m_opts.op,
                 m_size,
                 m_opts.qps,
                 m_opts.streams,
                 m_opts.transport == "rocev2" ? 1 : m_opts.paths);
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
    const void* peer = this;
    m_channel->SetHostDelayExchange(
        [host]() { return host->OwnHostDelay(); },
        [host, peer](Time delay) { host->SetPeerHostDelay(peer, delay); });
}

void
Session::StartServer()
{
    StartChannel();
}

void
Session::OnMessage(const proto::ControlMessage& msg)
{
    using M = proto::ControlMessage;
    switch (msg.body_case())
    {
    case M::kHello:
        if (!m_client && m_state == State::HANDSHAKE)
        {
            OnHello(msg.hello());
            return;
        }
        break;
    case M::kAccept:
        if (m_client && m_state == State::HANDSHAKE)
        {
            OnAccept(msg.accept());
            return;
        }
        break;
    case M::kReject:
        Abort("peer " + m_name + " rejected the session: " + msg.reject().reason(), 1);
        return;
    case M::kFinish:
        if (!m_client && m_state == State::RUNNING)
        {
            OnFinish(msg.finish());
            return;
        }
        break;
    case M::kVerdict:
        if (m_client && m_state == State::FINISHING)
        {
            OnVerdict(msg.verdict());
            return;
        }
        break;
    default:
        break;
    }
    spdlog::warn("ignored an unexpected control message ({}) from {}",
                 int(msg.body_case()),
                 m_name);
}

void
Session::Reject(const std::string& reason)
{
    spdlog::error("rejected client {}: {}", m_name, reason);
    ++m_errors;
    m_firstError = reason;
    proto::ControlMessage msg;
    msg.mutable_reject()->set_reason(reason);
    m_channel->Send(msg);
    Finish(1);
}

void
Session::OnHello(const proto::Hello& hello)
{
    // The settings must be ours: both ends of a perf test are configured alike.
    const proto::ConnectionSettings ours = SettingsOf(m_ccfg, m_opts.icrc);
    auto sameAsOurs = [&ours](const proto::ConnectionSettings& client, ConnectionConfig&) {
        const std::string diff = CompareSettings(ours, client, "server", "client");
        return diff.empty() ? diff : "connection settings differ: " + diff;
    };
    std::string why = CheckHello(hello, sameAsOurs, m_ccfg);
    if (why.empty())
    {
        why = SharedDataPort(hello.address());
    }
    if (!why.empty())
    {
        Reject(why);
        return;
    }
    const proto::Workload& w = hello.workload();
    m_workload = w;
    m_size = w.message_size();
    m_depth = w.depth();
    m_write = w.op() == "write";
    m_pattern = std::make_unique<DataPattern>(w.pattern_seed(), m_size);
    uint16_t base = m_opts.sourcePortBase ? uint16_t(m_opts.sourcePortBase) : uint16_t(56000);
    uint32_t access = ACCESS_LOCAL_WRITE | (m_write ? uint32_t(ACCESS_REMOTE_WRITE) : 0u);
    if (!CreateConnections(m_ccfg.transport, base, why) || !AllocateBuffer(access, why))
    {
        Reject("server cannot set up the session: " + why);
        return;
    }
    Endpoint& ep = m_host.GetEndpoint();
    uint32_t peerIp = hello.address().ipv4();
    for (size_t i = 0; i < m_qpns.size(); ++i)
    {
        PostStatus st = ep.Connect(m_qpns[i], peerIp, hello.queue_pairs(int(i)).qpn());
        if (st != PostStatus::OK)
        {
            Reject(std::string("cannot connect: ") + PostStatusName(st));
            return;
        }
    }
    MacAddress mac;
    if (hello.address().mac().size() == MAC_ADDRESS_SIZE)
    {
        std::memcpy(mac.bytes, hello.address().mac().data(), MAC_ADDRESS_SIZE);
    }
    m_host.Port().LearnPeer(peerIp, mac, uint16_t(hello.address().data_port()));
    for (size_t s = 0; s < m_streams.size(); ++s)
    {
        for (uint64_t slot = 0; slot < m_depth; ++slot)
        {
            PostRecv(s, slot);
        }
    }
    m_channel->Send(
        AcceptMessage(SOFTWARE, OurDataAddress(), m_qpns, base, m_write ? &m_mr : nullptr));
    m_state = State::RUNNING;
    m_start = m_lastReport = m_app.Clock().Now();
    StartHostDelayExchange(); // only an accepted client's reports count
    spdlog::info("accepted client {} ({}): {} {} x {} bytes, {} connection(s), {} stream(s), "
                 "depth {}",
                 m_name,
                 hello.software(),
                 m_ccfg.transport,
                 w.op(),
                 m_size,
                 w.connections(),
                 w.streams(),
                 m_depth);
    m_host.Pump();
}

void
Session::OnAccept(const proto::Accept& accept)
{
    if (accept.protocol_version() != proto::VERSION_CURRENT)
    {
        Abort("protocol version mismatch: client speaks " + std::to_string(proto::VERSION_CURRENT) +
                  ", server speaks " + std::to_string(accept.protocol_version()),
              1);
        return;
    }
    if (accept.queue_pairs_size() != int(m_qpns.size()))
    {
        Abort("server answered with " + std::to_string(accept.queue_pairs_size()) +
                  " connections, expected " + std::to_string(m_qpns.size()),
              1);
        return;
    }
    uint64_t needed = uint64_t(m_streams.size()) * m_depth * m_size;
    if (m_write && (!accept.has_region() || accept.region().length() < needed))
    {
        Abort("server's memory region is too small: " + std::to_string(accept.region().length()) +
                  " bytes, need " + std::to_string(needed),
              1);
        return;
    }
    if (const std::string why = SharedDataPort(accept.address()); !why.empty())
    {
        Abort(why, 1);
        return;
    }
    m_remote = accept.region();
    uint32_t peerIp = accept.address().ipv4();
    Endpoint& ep = m_host.GetEndpoint();
    for (size_t i = 0; i < m_qpns.size(); ++i)
    {
        PostStatus st = ep.Connect(m_qpns[i], peerIp, accept.queue_pairs(int(i)).qpn());
        if (st != PostStatus::OK)
        {
            Abort(std::string("cannot connect: ") + PostStatusName(st), 1);
            return;
        }
    }
    MacAddress mac;
    if (accept.address().mac().size() == MAC_ADDRESS_SIZE)
    {
        std::memcpy(mac.bytes, accept.address().mac().data(), MAC_ADDRESS_SIZE);
    }
    m_host.Port().LearnPeer(peerIp, mac, uint16_t(accept.address().data_port()));
    spdlog::info("server {} ({}) accepted; data to {}:{}",
                 m_name,
                 accept.software(),
                 Ipv4ToString(peerIp),
                 accept.address().data_port());
    m_state = State::RUNNING;
    m_start = m_lastReport = m_app.Clock().Now();
    PostMore();
    m_host.Pump();
}

bool
Session::MayPost(Time now) const
{
    if (m_state != State::RUNNING || m_interrupted)
    {
        return false;
    }
    if (m_opts.duration > 0)
    {
        return now - m_start < Time(m_opts.duration * 1e12);
    }
    return true;
}

void
Session::PostMore()
{
    Time now = m_app.Clock().Now();
    if (!MayPost(now))
    {
        return;
    }
    Endpoint& ep = m_host.GetEndpoint();
    bool itersMode = m_opts.duration <= 0;
    for (size_t s = 0; s < m_streams.size(); ++s)
    {
        Stream& st = m_streams[s];
        while (st.posted - st.completed < m_depth && (!itersMode || st.posted < m_opts.iters))
        {
            uint64_t seq = st.posted;
            uint64_t slot = seq % m_depth;
            uint8_t* local = Slot(s, slot);
            std::memcpy(local, m_pattern->Message(st.conn, st.id, seq), m_size);
            SendWr wr;
            wr.wrId = uint64_t(s) << WR_SEQ_BITS | (seq & WR_SEQ_MASK);
            wr.opcode = m_write ? WrOpcode::RDMA_WRITE_WITH_IMM : WrOpcode::SEND;
            wr.sge.addr = reinterpret_cast<uint64_t>(local);
            wr.sge.length = uint32_t(m_size);
            wr.sge.lkey = m_mr.lkey;
            wr.remoteAddr = m_remote.addr() + (s * m_depth + slot) * m_size;
            wr.rkey = m_remote.rkey();
            wr.immData = uint32_t(seq);
            wr.streamId = st.id;
            PostStatus ps = ep.PostSend(now, m_qpns[st.conn], wr);
            if (ps == PostStatus::QUEUE_FULL)
            {
                break;
            }
            if (ps != PostStatus::OK)
            {
                Abort(std::string("PostSend failed: ") + PostStatusName(ps), 1);
                return;
            }
            ++st.posted;
        }
    }
}

void
Session::PostRecv(size_t streamIndex, uint64_t slot)
{
    const Stream& st = m_streams[streamIndex];
    RecvWr wr;
    wr.wrId = uint64_t(streamIndex) << WR_SEQ_BITS | slot;
    wr.sge.addr = reinterpret_cast<uint64_t>(Slot(streamIndex, slot));
    wr.sge.length = uint32_t(m_size);
    wr.sge.lkey = m_mr.lkey;
    wr.streamId = st.id;
    PostStatus ps = m_host.GetEndpoint().PostRecv(m_app.Clock().Now(), m_qpns[st.conn], wr);
    if (ps != PostStatus::OK)
    {
        VerifyFailed(std::string("PostRecv failed: ") + PostStatusName(ps));
    }
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
    if (m_client)
    {
        OnClientCompletion(c);
    }
    else
    {
        OnServerCompletion(c);
    }
}

void
Session::OnClientCompletion(const Completion& c)
{
    size_t s = size_t(c.wrId >> WR_SEQ_BITS);
    uint64_t seq = c.wrId & WR_SEQ_MASK;
    if (s >= m_streams.size())
    {
        return;
    }
    Stream& st = m_streams[s];
    if (seq != (st.completed & WR_SEQ_MASK))
    {
        VerifyFailed("stream " + std::to_string(s) + ": send completion of message " +
                     std::to_string(seq) + " out of order (expected " +
                     std::to_string(st.completed) + ")");
    }
    ++st.completed;
    m_bytes += m_size;
    ++m_messages;
    PostMore();
    CheckClientDone(m_app.Clock().Now());
}

void
Session::OnServerCompletion(const Completion& c)
{
    auto idx = m_connIndex.find(c.connectionId);
    if (idx == m_connIndex.end() || c.streamId >= m_workload.streams())
    {
        VerifyFailed("completion for an unknown connection/stream");
        return;
    }
    size_t s = size_t(idx->second) * m_workload.streams() + c.streamId;
    Stream& st = m_streams[s];
    uint64_t seq = st.completed;
    uint64_t slot = seq % m_depth;
    ReceivedMessage m;
    m.write = m_write;
    m.size = m_size;
    m.seq = seq;
    m.slot = slot;
    m.got = Slot(s, slot);
    m.want = m_pattern->Message(st.conn, st.id, seq);
    std::string problem = CheckReceived(c, m);
    if (!problem.empty())
    {
        VerifyFailed("connection " + std::to_string(st.conn) + " stream " + std::to_string(st.id) +
                     " message " + std::to_string(seq) + ": " + problem);
    }
    ++st.completed;
    m_bytes += m_size;
    ++m_messages;
    PostRecv(s, slot);
    CheckServerDone();
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
Session::CheckClientDone(Time now)
{
    if (!m_client || m_state != State::RUNNING)
    {
        return;
    }
    bool itersMode = m_opts.duration <= 0;
    for (const Stream& st : m_streams)
    {
        if (st.completed != st.posted || (itersMode && !m_interrupted && st.posted < m_opts.iters))
        {
            return;
        }
    }
    if (!itersMode && MayPost(now))
    {
        return;
    }
    m_end = now;
    m_state = State::FINISHING;
    proto::ControlMessage msg;
    proto::Finish* finish = msg.mutable_finish();
    for (const Stream& st : m_streams)
    {
        finish->add_messages_per_stream(st.completed);
    }
    finish->set_bytes(m_bytes);
    m_channel->Send(msg);
}

void
Session::OnFinish(const proto::Finish& finish)
{
    m_expected.assign(finish.messages_per_stream().begin(), finish.messages_per_stream().end());
    m_finishReceived = true;
    if (m_expected.size() != m_streams.size())
    {
        VerifyFailed("Finish lists " + std::to_string(m_expected.size()) + " streams, expected " +
                     std::to_string(m_streams.size()));
        SendVerdict();
        return;
    }
    CheckServerDone();
    if (m_state == State::RUNNING)
    {
        // Stragglers are in flight or lost for good: give them the timeout.
        std::weak_ptr<Session> weak = shared_from_this();
        m_finishTimer.expires_after(std::chrono::milliseconds(int64_t(m_opts.timeout * 1000)));
        m_finishTimer.async_wait([weak](const boost::system::error_code& error) {
            auto self = weak.lock();
            if (!error && self && self->m_state == State::RUNNING)
            {
                self->VerifyFailed("messages missing at the receiver after the timeout");
                self->SendVerdict();
            }
        });
    }
}

void
Session::CheckServerDone()
{
    if (m_client || !m_finishReceived || m_state != State::RUNNING)
    {
        return;
    }
    for (size_t s = 0; s < m_streams.size(); ++s)
    {
        if (m_streams[s].completed < m_expected[s])
        {
            return;
        }
    }
    SendVerdict();
}

void
Session::SendVerdict()
{
    m_end = m_app.Clock().Now();
    for (size_t s = 0; s < m_streams.size() && s < m_expected.size(); ++s)
    {
        if (m_streams[s].completed != m_expected[s])
        {
            VerifyFailed("stream " + std::to_string(s) + ": received " +
                         std::to_string(m_streams[s].completed) + " messages, sender completed " +
                         std::to_string(m_expected[s]));
        }
    }
    proto::ControlMessage msg;
    proto::Verdict* v = msg.mutable_verdict();
    v->set_messages_verified(m_errors == 0 ? m_messages : 0);
    v->set_bytes_verified(m_errors == 0 ? m_bytes : 0);
    v->set_errors(m_errors);
    v->set_first_error(m_firstError);
    m_channel->Send(msg);
    Finish(m_errors == 0 ? 0 : 1);
}

void
Session::OnVerdict(const proto::Verdict& verdict)
{
    m_verdict = verdict;
    m_verdictReceived = true;
    if (verdict.errors() > 0)
    {
        VerifyFailed("receiver: " + verdict.first_error());
    }
    else if (verdict.messages_verified() != m_messages)
    {
        VerifyFailed("receiver verified " + std::to_string(verdict.messages_verified()) +
                     " messages, sender completed " + std::to_string(m_messages));
    }
    Finish(m_errors == 0 ? 0 : 1);
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
Session::DropUnauthenticated(const std::string& reason)
{
    if (!AwaitingHello())
    {
        return;
    }
    m_state = State::DONE;
    m_channel->Close(); // the descriptor is what the caller wants back, now
    m_app.NoteUnauthenticatedEnd(m_name, reason);
    m_app.SessionDone(this, -1);
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
        std::printf("RESULT role=%s status=FAIL transport=%s error=\"%s\"\n",
                    m_client ? "client" : "server",
                    m_ccfg.transport.c_str(),
                    m_firstError.c_str());
        std::fflush(stdout);
    }
    Teardown();
    m_app.SessionDone(this, code);
}

} // namespace perf
} // namespace hil
} // namespace metaroce
