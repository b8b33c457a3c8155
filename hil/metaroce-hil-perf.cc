/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#include "metaroce-hil-perf.h"

#include "metaroce-endpoint.h"
#include "metaroce-hil-clock.h"
#include "metaroce-hil-control.h"
#include "metaroce-hil-engine-host.h"
#include "metaroce-hil-log.h"
#include "metaroce-hil-pcap.h"
#include "metaroce-hil-raw-port.h"
#include "metaroce-hil-tap-port.h"
#include "metaroce-hil-tap.h"
#include "metaroce-hil-timers.h"
#include "metaroce-hil-udp-port.h"
#include "metaroce-hil-verify.h"
#include "metaroce-hil.pb.h"
#include "metaroce-policy-names.h"
#include "metaroce-random.h"
#include "metaroce-results.pb.h"

#include <algorithm>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <google/protobuf/util/delimited_message_util.h>
#include <google/protobuf/util/json_util.h>
#include <list>
#include <map>
#include <memory>
#include <sched.h>
#include <spdlog/spdlog.h>
#include <sys/prctl.h>
#include <sys/resource.h>

namespace metaroce
{
namespace hil
{
namespace
{

using boost::asio::ip::tcp;
/// The run-record schema shared with the ns-3 scenario runner (proto/metaroce-results.proto).
namespace rpb = ::metaroce::results;

/// goodput.csv header: the scenario runner's columns (docs/outputs.md).
constexpr const char* GOODPUT_HEADER = "time_us,interval_us,host,bytes,goodput_gbps";
/// Host index of the client (the sender) in results records; the server is host 1.
constexpr uint32_t CLIENT_HOST = 0;
/// Host index of the server in results records.
constexpr uint32_t SERVER_HOST = 1;
/// Control connections that may wait for their Hello at once (--max-pending 0).
constexpr uint32_t DEFAULT_MAX_PENDING = 16;
/// Descriptors always left free for sessions past their Hello (control sockets, the UDP
/// port's send sockets, result files) when the pending cap is derived from RLIMIT_NOFILE.
constexpr uint64_t MIN_RESERVED_DESCRIPTORS = 16;
/// While accept() fails (out of descriptors), try again this often unless a connection ends
/// first: the pending connection stays in the backlog, so retrying at once would spin.
constexpr std::chrono::milliseconds ACCEPT_RETRY(200);

/// \return \p value with \p decimals digits after the point (the runner's CSV format).
std::string
Fixed(double value, int decimals)
{
    char text[64];
    std::snprintf(text, sizeof(text), "%.*f", decimals, value);
    return text;
}

/// Software name sent in Hello / Accept.
constexpr const char* SOFTWARE = PERF_SOFTWARE;

/// \return the counts of \p now accumulated since \p then.
PortCounters
CountersSince(const PortCounters& now, const PortCounters& then)
{
    PortCounters d;
    d.txFrames = now.txFrames - then.txFrames;
    d.txBytes = now.txBytes - then.txBytes;
    d.txFailed = now.txFailed - then.txFailed;
    d.rxFrames = now.rxFrames - then.rxFrames;
    d.rxBytes = now.rxBytes - then.rxBytes;
    d.rxMalformed = now.rxMalformed - then.rxMalformed;
    d.rxIgnored = now.rxIgnored - then.rxIgnored;
    d.faultDropped = now.faultDropped - then.faultDropped;
    d.faultDuplicated = now.faultDuplicated - then.faultDuplicated;
    d.faultReordered = now.faultReordered - then.faultReordered;
    return d;
}

/// \return "12.34" for \p bps in Gb/s.
std::string
Gbps(double bps)
{
    char text[32];
    std::snprintf(text, sizeof(text), "%.3f", bps / 1e9);
    return text;
}

/// What a session owns of one connection.
struct Stream
{
    uint32_t conn{0};      //!< connection index
    uint16_t id{0};        //!< stream id
    uint64_t posted{0};    //!< messages posted (client)
    uint64_t completed{0}; //!< messages completed (client) / received (server)
};

class PerfApp;

/// One test between a client and a server (either side).
class Session : public std::enable_shared_from_this<Session>
{
  public:
    enum class State
    {
        HANDSHAKE,
        RUNNING,
        FINISHING,
        DONE,
    };

    Session(PerfApp& app, EngineHost& host, std::shared_ptr<ControlChannel> channel, bool client);
    ~Session();

    void StartClient();
    void StartServer();
    void OnReport(Time now, bool final);
    void Abort(const std::string& reason, int code);

    State GetState() const
    {
        return m_state;
    }

    /// \return true for a server connection that has not sent a valid Hello yet.
    bool AwaitingHello() const
    {
        return !m_client && m_state == State::HANDSHAKE;
    }

    /// Close a connection that is still waiting for its Hello (nothing was set up for it).
    void DropUnauthenticated(const std::string& reason);

    const std::string& Name() const
    {
        return m_name;
    }

  private:
    void OnMessage(const proto::ControlMessage& msg);
    void OnChannelError(const std::string& reason);
    void OnHello(const proto::Hello& hello);
    void OnAccept(const proto::Accept& accept);
    void OnFinish(const proto::Finish& finish);
    void OnVerdict(const proto::Verdict& verdict);
    void OnCompletion(const Completion& c);
    void OnClientCompletion(const Completion& c);
    void OnServerCompletion(const Completion& c);
    void Reject(const std::string& reason);
    bool CreateConnections(const std::string& transport, uint16_t portBase, std::string& why);
    /// \return the inputs of the connections' timers for a path of round trip \p pathRtt.
    LinkTimerInputs TimerInputs(Time pathRtt) const;
    /// Fill in our data address and queue pairs (QPN, source ports from \p portBase) for the
    /// peer: the same in the client's Hello and the server's Accept.
    void DescribeEndpoint(uint16_t portBase,
                          proto::DataAddress& addr,
                          google::protobuf::RepeatedPtrField<proto::QueuePair>& qps) const;
    bool AllocateBuffer(uint32_t access, std::string& why);
    void PostMore();
    bool MayPost(Time now) const;
    void CheckClientDone(Time now);
    void CheckServerDone();
    void SendVerdict();
    void PostRecv(size_t streamIndex, uint64_t slot);
    uint8_t* Slot(size_t streamIndex, uint64_t slot);
    void VerifyFailed(const std::string& what);
    void Finish(int code);
    void Teardown();
    uint64_t Retransmissions() const;
    void PrintFinal(Time now);
    std::string RunLabel() const;
    void WriteResultPaths();
    void WriteResultSummary(Time now, bool pass);
    proto::TelemetryRecord Telemetry(Time now,
                                     Time interval,
                                     uint64_t bytes,
                                     uint64_t messages,
                                     uint64_t retx,
                                     bool final) const;

    PerfApp& m_app;                            //!< the program
    const PerfOptions& m_opts;                 //!< its options
    EngineHost& m_host;                        //!< the engine
    std::shared_ptr<ControlChannel> m_channel; //!< control plane
    bool m_client;                             //!< role
    std::string m_name;                        //!< for logs
    State m_state{State::HANDSHAKE};           //!< progress
    ConnectionConfig m_ccfg;                   //!< connection settings
    proto::Workload m_workload;                //!< what runs
    std::vector<uint32_t> m_qpns;              //!< local connections
    std::map<uint32_t, uint32_t> m_connIndex;  //!< qpn -> connection index
    std::vector<Stream> m_streams;             //!< by conn * streams + stream
    std::vector<uint8_t> m_buffer;             //!< source (client) or destination (server)
    MemoryRegion m_mr;                         //!< m_buffer's registration
    proto::Region m_remote;                    //!< the server's region (client, write)
    std::unique_ptr<DataPattern> m_pattern;    //!< message contents
    uint64_t m_size{0};                        //!< message size
    uint32_t m_depth{0};                       //!< slots per stream
    bool m_write{true};                        //!< op is write
    Time m_start{0};                           //!< traffic start
    Time m_end{0};                             //!< traffic end
    Time m_lastReport{0};                      //!< previous report
    uint64_t m_bytes{0};                       //!< completed payload bytes
    uint64_t m_messages{0};                    //!< completed messages
    uint64_t m_reportBytes{0};                 //!< m_bytes at the previous report
    uint64_t m_reportMessages{0};              //!< m_messages at the previous report
    uint64_t m_reportRetx{0};                  //!< retransmissions at the previous report
    uint64_t m_errors{0};                      //!< verification errors
    std::string m_firstError;                  //!< first of them
    std::vector<uint64_t> m_expected;          //!< server: counts from Finish
    bool m_finishReceived{false};              //!< server: Finish arrived
    bool m_verdictReceived{false};             //!< client: Verdict arrived
    proto::Verdict m_verdict;                  //!< client: the receiver's verdict
    boost::asio::steady_timer m_finishTimer;   //!< server: waits for stragglers
    bool m_interrupted{false};                 //!< stopped by a signal
    bool m_torn{false};                        //!< Teardown() ran
    bool m_scenarioWritten{false};             //!< results: the Scenario record went out
    // The engine host outlives sessions (a daemon serves many): what it had counted before
    // this session, so that the summary reports this session's share.
    PortCounters m_portAtStart; //!< port counters then
    RxCounts m_rxAtStart;       //!< engine receive results then
};

/// The program: context, signals, the engine host, the control plane and the sessions.
class PerfApp
{
  public:
    explicit PerfApp(const PerfOptions& opts);
    int Run();

    const PerfOptions& Options() const
    {
        return m_opts;
    }

    boost::asio::io_context& Io()
    {
        return m_io;
    }

    const HostClock& Clock() const
    {
        return m_clock;
    }

    void SessionDone(Session* session, int code);
    /// A connection ended before a valid Hello: log it, at most once per second.
    void NoteUnauthenticatedEnd(const std::string& peer, const std::string& reason);
    void WriteTelemetry(const proto::TelemetryRecord& record);
    void WriteResult(const rpb::ResultRecord& record);
    void WriteGoodput(const rpb::GoodputSample& sample);

    bool WritesResults() const
    {
        return m_results.is_open();
    }

    std::string PortMode() const
    {
        return m_opts.portMode;
    }

    uint32_t LocalIp() const
    {
        return m_localIp;
    }

  private:
    void DoSignals();
    void OnSignal(const boost::system::error_code& error, int signal);
    void DoAccept();
    void OnAccept(const boost::system::error_code& error, tcp::socket socket);
    void PauseAccept();
    void ResumeAccept();
    uint32_t PendingCap() const;
    void LimitPending();
    void DoConnect();
    void OnConnect(const boost::system::error_code& error);
    void DoReport();
    void OnReport(const boost::system::error_code& error);
    EngineHost* EnsureHost(uint32_t controlIp, std::string& why);
    void Stop(int code);

    PerfOptions m_opts;                             //!< options
    boost::asio::io_context m_io;                   //!< the one context
    HostClock m_clock;                              //!< time
    boost::asio::signal_set m_signals;              //!< SIGINT, SIGTERM
    tcp::acceptor m_acceptor;                       //!< server: control listener
    boost::asio::steady_timer m_acceptRetry;        //!< server: accept paused until then
    bool m_acceptPaused{false};                     //!< server: accept failed, waiting
    uint32_t m_maxPending{DEFAULT_MAX_PENDING};     //!< server: connections without Hello
    RateLimiter m_acceptLog;                        //!< server: accept error lines
    RateLimiter m_pendingLog;                       //!< server: dropped pre-Hello connections
    tcp::socket m_connecting;                       //!< client: control socket being connected
    boost::asio::steady_timer m_retryTimer;         //!< client: connect retry
    boost::asio::steady_timer m_reportTimer;        //!< periodic report
    Time m_connectDeadline{0};                      //!< client: give up connecting
    std::unique_ptr<EngineHost> m_host;             //!< engine on a port (created on demand)
    uint32_t m_localIp{0};                          //!< engine address
    std::list<std::shared_ptr<Session>> m_sessions; //!< live sessions
    std::ofstream m_telemetry;                      //!< telemetry output
    std::ofstream m_results;                        //!< --results: results.pb
    std::ofstream m_goodputCsv;                     //!< --results: goodput.csv
    int m_exitCode{0};                              //!< result
    bool m_stopped{false};                          //!< Stop() ran
};

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
    m_ccfg.transport = m_opts.transport;
    m_ccfg.mtu = m_opts.mtu;
    m_ccfg.numPaths = m_opts.paths;
    m_ccfg.maxOutstandingWrs = m_opts.maxWrs;
    m_ccfg.lineRateBps = m_opts.rateGbps * 1e9;
    m_ccfg.rocev2.recovery = m_opts.roceRecovery;
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
    in.connectionTimeout = Time(m_opts.connectionTimeoutMs * 1e9);
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

void
Session::DescribeEndpoint(uint16_t portBase,
                          proto::DataAddress& addr,
                          google::protobuf::RepeatedPtrField<proto::QueuePair>& qps) const
{
    addr.set_ipv4(m_app.LocalIp());
    addr.set_data_port(m_opts.dataPort);
    addr.set_port_mode(m_opts.portMode);
    const MacAddress mac = m_host.Port().LocalMac();
    if (mac != MacAddress())
    {
        addr.set_mac(mac.bytes, MAC_ADDRESS_SIZE);
    }
    for (size_t i = 0; i < m_qpns.size(); ++i)
    {
        proto::QueuePair* qp = qps.Add();
        qp->set_qpn(m_qpns[i]);
        qp->set_source_port_base(portBase + i * PORTS_PER_CONNECTION);
    }
}

bool
Session::CreateConnections(const std::string& transport, uint16_t portBase, std::string& why)
{
    m_ccfg.transport = transport;
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
    proto::ControlMessage msg;
    proto::Hello* hello = msg.mutable_hello();
    hello->set_protocol_version(proto::VERSION_CURRENT);
    hello->set_software(SOFTWARE);
    *hello->mutable_settings() = SettingsOf(m_ccfg, m_opts.icrc);
    *hello->mutable_workload() = m_workload;
    DescribeEndpoint(base, *hello->mutable_address(), *hello->mutable_queue_pairs());
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
Session::StartServer()
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
    if (hello.protocol_version() != proto::VERSION_CURRENT)
    {
        Reject("protocol version mismatch: server speaks " +
               std::to_string(proto::VERSION_CURRENT) + ", client (" + hello.software() +
               ") speaks " + std::to_string(hello.protocol_version()));
        return;
    }
    std::string diff =
        CompareSettings(SettingsOf(m_ccfg, m_opts.icrc), hello.settings(), "server", "client");
    if (!diff.empty())
    {
        Reject("connection settings differ: " + diff);
        return;
    }
    const proto::Workload& w = hello.workload();
    std::string why = CheckWorkload(hello, m_ccfg);
    if (!why.empty())
    {
        Reject("workload not acceptable: " + why);
        return;
    }
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
    proto::ControlMessage msg;
    proto::Accept* accept = msg.mutable_accept();
    accept->set_protocol_version(proto::VERSION_CURRENT);
    accept->set_software(SOFTWARE);
    DescribeEndpoint(base, *accept->mutable_address(), *accept->mutable_queue_pairs());
    if (m_write)
    {
        accept->mutable_region()->set_addr(m_mr.addr);
        accept->mutable_region()->set_length(m_mr.length);
        accept->mutable_region()->set_rkey(m_mr.rkey);
    }
    m_channel->Send(msg);
    m_state = State::RUNNING;
    m_start = m_lastReport = m_app.Clock().Now();
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

uint64_t
Session::Retransmissions() const
{
    uint64_t n = 0;
    for (uint32_t qpn : m_qpns)
    {
        if (const TransportConnection* c = m_host.GetEndpoint().GetConnection(qpn))
        {
            n += c->Counters().Get(Counter::TX_RETRANSMIT);
        }
    }
    return n;
}

proto::TelemetryRecord
Session::Telemetry(Time now,
                   Time interval,
                   uint64_t bytes,
                   uint64_t messages,
                   uint64_t retx,
                   bool final) const
{
    proto::TelemetryRecord r;
    r.set_source("hil");
    r.set_run(m_opts.transport + "-" + m_opts.op + "-" + std::to_string(m_size));
    r.set_node(Ipv4ToString(m_app.LocalIp()));
    r.set_role(m_client ? "sender" : "receiver");
    r.set_transport(m_ccfg.transport);
    r.set_time_ps(now - m_start);
    r.set_interval_ps(interval);
    r.set_bytes(bytes);
    r.set_messages(messages);
    r.set_goodput_bps(interval > 0 ? double(bytes) * 8e12 / double(interval) : 0);
    r.set_retransmissions(retx);
    r.set_total_bytes(m_bytes);
    r.set_total_retransmissions(Retransmissions());
    r.set_final(final);
    CounterSet sum;
    for (uint32_t qpn : m_qpns)
    {
        const TransportConnection* c = m_host.GetEndpoint().GetConnection(qpn);
        if (!c)
        {
            continue;
        }
        for (size_t i = 0; i < size_t(Counter::COUNT); ++i)
        {
            sum.Add(Counter(i), c->Counters().Get(Counter(i)));
        }
        for (size_t p = 0; p < c->PathCount(); ++p)
        {
            const PathState* ps = c->Path(p);
            if (!ps)
            {
                continue;
            }
            proto::PathCounters* pc = r.add_paths();
            pc->set_path_id(ps->id + uint32_t(m_connIndex.at(qpn)) * PORTS_PER_CONNECTION);
            pc->set_source_port(ps->sourcePort);
            pc->set_status(PathStatusName(ps->status));
            pc->set_packets_sent(ps->packetsSent);
            pc->set_retransmissions(ps->retransmissions);
            pc->set_packets_acked(ps->packetsAcked);
            pc->set_cwnd_packets(ps->cwnd);
            pc->set_srtt_ps(ps->rtt.Smoothed());
        }
    }
    for (size_t i = 0; i < size_t(Counter::COUNT); ++i)
    {
        if (sum.Get(Counter(i)) != 0)
        {
            proto::NamedCounter* nc = r.add_counters();
            nc->set_name(CounterName(Counter(i)));
            nc->set_value(sum.Get(Counter(i)));
        }
    }
    return r;
}

void
Session::OnReport(Time now, bool final)
{
    if (m_state != State::RUNNING && m_state != State::FINISHING && !final)
    {
        return;
    }
    if (m_client)
    {
        CheckClientDone(now);
    }
    Time interval = now - m_lastReport;
    if (interval <= 0)
    {
        return;
    }
    uint64_t bytes = m_bytes - m_reportBytes;
    uint64_t messages = m_messages - m_reportMessages;
    uint64_t retxTotal = Retransmissions();
    uint64_t retx = retxTotal - m_reportRetx;
    if (!final)
    {
        double seconds = double(interval) / 1e12;
        std::printf("[%7.2f s] %s %s Gb/s  %.1f kmsg/s  retx %" PRIu64 " (total %" PRIu64 ")\n",
                    double(now - m_start) / 1e12,
                    m_client ? "sent" : "recv",
                    Gbps(double(bytes) * 8 / seconds).c_str(),
                    double(messages) / seconds / 1e3,
                    retx,
                    retxTotal);
        std::fflush(stdout);
    }
    m_app.WriteTelemetry(Telemetry(now, interval, bytes, messages, retx, final));
    if (m_app.WritesResults())
    {
        if (!m_scenarioWritten)
        {
            // The stream starts with the scenario as run, as the runner's does.
            rpb::ResultRecord r;
            rpb::Scenario* sc = r.mutable_scenario();
            sc->set_name(RunLabel());
            sc->mutable_transport()->set_name(m_ccfg.transport);
            sc->mutable_transport()->set_paths(m_ccfg.transport == "rocev2" ? 1 : m_ccfg.numPaths);
            sc->mutable_transport()->set_mtu(m_ccfg.mtu);
            sc->set_seed(m_opts.seed);
            sc->mutable_output()->set_goodput_interval_us(m_opts.report * 1e6);
            m_app.WriteResult(r);
            m_scenarioWritten = true;
        }
        rpb::GoodputSample g;
        const double intervalUs = double(interval) / 1e6;
        g.set_time_us(double(now - m_start) / 1e6);
        g.set_interval_us(intervalUs);
        g.set_host(-1); // the whole node, as the runner's fabric-wide rows
        g.set_bytes(bytes);
        g.set_goodput_gbps(intervalUs > 0 ? double(bytes) * 8 / (intervalUs * 1e3) : 0);
        m_app.WriteGoodput(g);
    }
    m_lastReport = now;
    m_reportBytes = m_bytes;
    m_reportMessages = m_messages;
    m_reportRetx = retxTotal;
}

std::string
Session::RunLabel() const
{
    return m_ccfg.transport + "-" + (m_write ? "write" : "send") + "-" + std::to_string(m_size);
}

void
Session::WriteResultPaths()
{
    // One row per path of every sending connection, as the runner's paths.csv.
    Endpoint& ep = m_host.GetEndpoint();
    for (uint32_t qpn : m_qpns)
    {
        const TransportConnection* c = ep.GetConnection(qpn);
        if (!c || c->Counters().Get(Counter::TX_DATA) == 0)
        {
            continue;
        }
        rpb::PathCounters base;
        base.set_host(m_client ? CLIENT_HOST : SERVER_HOST);
        base.set_qpn(qpn);
        base.set_peer(m_client ? SERVER_HOST : CLIENT_HOST);
        base.set_flow_id(int32_t(m_connIndex.at(qpn)));
        rpb::ResultRecord r;
        if (c->PathCount() == 0)
        {
            const CounterSet& k = c->Counters();
            rpb::PathCounters* p = r.mutable_path();
            *p = base;
            p->set_path(-1);
            p->set_packets_sent(k.Get(Counter::TX_DATA) + k.Get(Counter::TX_RETRANSMIT));
            p->set_retransmissions(k.Get(Counter::TX_RETRANSMIT));
            p->set_timeouts(k.Get(Counter::RTO));
            p->set_ecn_echoes(k.Get(Counter::RX_CNP));
            p->set_cwnd_packets(-1);
            p->set_srtt_us(-1);
            p->set_min_rtt_us(-1);
            m_app.WriteResult(r);
            continue;
        }
        for (size_t i = 0; i < c->PathCount(); ++i)
        {
            const PathState* ps = c->Path(i);
            if (!ps)
            {
                continue;
            }
            rpb::PathCounters* p = r.mutable_path();
            *p = base;
            p->set_path(ps->id);
            p->set_source_port(ps->sourcePort);
            std::string status = PathStatusName(ps->status);
            std::transform(status.begin(), status.end(), status.begin(), ::tolower);
            p->set_status(status);
            p->set_packets_sent(ps->packetsSent);
            p->set_retransmissions(ps->retransmissions);
            p->set_timeouts(ps->timeouts);
            p->set_ecn_echoes(ps->ecnEchoes);
            p->set_packets_acked(ps->packetsAcked);
            p->set_cwnd_packets(ps->cwnd);
            p->set_srtt_us(ps->rtt.HasSample() ? double(ps->rtt.Smoothed()) / 1e6 : -1);
            p->set_min_rtt_us(ps->rtt.HasSample() ? double(ps->rtt.Min()) / 1e6 : -1);
            m_app.WriteResult(r);
        }
    }
}

void
Session::WriteResultSummary(Time now, bool pass)
{
    CounterSet sum;
    for (uint32_t qpn : m_qpns)
    {
        if (const TransportConnection* c = m_host.GetEndpoint().GetConnection(qpn))
        {
            for (size_t i = 0; i < size_t(Counter::COUNT); ++i)
            {
                sum.Add(Counter(i), c->Counters().Get(Counter(i)));
            }
        }
    }
    const double seconds = std::max(1e-9, double(now - m_start) / 1e12);
    const uint32_t flows = m_workload.connections();
    rpb::ResultRecord r;
    rpb::RunSummary* s = r.mutable_summary();
    s->set_scenario(RunLabel());
    s->set_transport(m_ccfg.transport);
    s->set_pfc(false);
    s->set_seed(m_opts.seed);
    s->set_hosts(2);
    s->set_switches(0);
    s->set_links(1);
    s->set_flows(flows);
    s->set_flows_completed(pass ? flows : 0);
    s->set_flows_failed(m_errors > 0 ? flows : 0);
    s->set_bytes_total(m_bytes);
    s->set_goodput_mean_gbps(double(m_bytes) * 8 / seconds / 1e9);
    s->set_retransmissions(sum.Get(Counter::TX_RETRANSMIT));
    s->set_timeouts(sum.Get(Counter::RTO));
    s->set_channel_drops(CountersSince(m_host.Port().Counters(), m_portAtStart).faultDropped);
    s->set_sim_time_us(double(now - m_start) / 1e6);
    s->set_wall_time_s(seconds);
    s->set_all_completed(pass);
    s->set_command_line(m_opts.commandLine);
    m_app.WriteResult(r);
}

void
Session::PrintFinal(Time now)
{
    OnReport(now, true);
    Endpoint& ep = m_host.GetEndpoint();
    CounterSet sum;
    for (uint32_t qpn : m_qpns)
    {
        if (const TransportConnection* c = ep.GetConnection(qpn))
        {
            for (size_t i = 0; i < size_t(Counter::COUNT); ++i)
            {
                sum.Add(Counter(i), c->Counters().Get(Counter(i)));
            }
        }
    }
    double seconds = std::max(1e-9, double(now - m_start) / 1e12);
    double gbps = double(m_bytes) * 8 / seconds / 1e9;
    uint64_t retx = sum.Get(Counter::TX_RETRANSMIT);
    // This session's share: a daemon's port and engine outlive its sessions.
    const PortCounters lifetime = m_host.Port().Counters();
    const PortCounters pc = CountersSince(lifetime, m_portAtStart);
    bool pass;
    std::string verified;
    if (m_client)
    {
        pass = m_errors == 0 && m_verdictReceived && !m_interrupted;
        verified = m_verdictReceived ? std::to_string(m_verdict.messages_verified()) : "0";
    }
    else
    {
        pass = m_errors == 0 && m_finishReceived;
        verified = m_errors == 0 ? std::to_string(m_messages) : "0";
    }
    std::printf("---- metaroce-perf %s summary (%s) ----\n",
                m_client ? "client" : "server",
                m_name.c_str());
    std::printf("transport %s  op %s  size %" PRIu64 "  mtu %u  paths %u  streams %u  "
                "connections %u  depth %u  port %s\n",
                m_ccfg.transport.c_str(),
                m_write ? "write" : "send",
                m_size,
                m_ccfg.mtu,
                m_ccfg.transport == "rocev2" ? 1 : m_ccfg.numPaths,
                m_workload.streams(),
                m_workload.connections(),
                m_depth,
                m_host.Port().Describe().c_str());
    std::printf("messages %" PRIu64 "  bytes %" PRIu64 "  time %.3f s\n",
                m_messages,
                m_bytes,
                seconds);
    std::printf("goodput %.3f Gb/s  message rate %.1f kmsg/s\n",
                gbps,
                double(m_messages) / seconds / 1e3);
    std::printf("data packets %" PRIu64 "  retransmissions %" PRIu64 "  loss detected %" PRIu64
                "  rto %" PRIu64 "  go-back-n %" PRIu64 "  duplicates received %" PRIu64 "\n",
                sum.Get(Counter::TX_DATA),
                retx,
                sum.Get(Counter::LOSS_DETECTED),
                sum.Get(Counter::RTO),
                sum.Get(Counter::GO_BACK_N),
                sum.Get(Counter::RX_DUPLICATE));
    std::printf("port: tx %" PRIu64 " rx %" PRIu64 " tx failed %" PRIu64 " rx malformed %" PRIu64
                " rx ignored %" PRIu64 "  faults: dropped %" PRIu64 " duplicated %" PRIu64
                " reordered %" PRIu64 "\n",
                pc.txFrames,
                pc.rxFrames,
                pc.txFailed,
                pc.rxMalformed,
                pc.rxIgnored,
                pc.faultDropped,
                pc.faultDuplicated,
                pc.faultReordered);
    std::printf("engine rx drops: %s\n", m_host.DropSummary(m_rxAtStart).c_str());
    const TimerStats& ts = m_host.GetTimerStats();
    std::printf("timer: %" PRIu64 " kernel-timer expiries, late by %.1f us mean, %.1f us max; "
                "%" PRIu64 " datagrams read just before a timeout\n",
                ts.expiries,
                ts.expiries ? double(ts.lateSum) / double(ts.expiries) / 1e6 : 0.0,
                double(ts.lateMax) / 1e6,
                ts.drained);
    if (m_client)
    {
        std::printf("receiver verified %s messages, %" PRIu64 " bytes, %" PRIu64 " errors%s%s\n",
                    verified.c_str(),
                    m_verdictReceived ? m_verdict.bytes_verified() : 0,
                    m_verdictReceived ? m_verdict.errors() : 0,
                    m_firstError.empty() ? "" : ": ",
                    m_firstError.c_str());
    }
    else
    {
        std::printf("verified %s messages, %" PRIu64 " errors%s%s\n",
                    verified.c_str(),
                    m_errors,
                    m_firstError.empty() ? "" : ": ",
                    m_firstError.c_str());
    }
    std::printf("RESULT role=%s status=%s transport=%s op=%s size=%" PRIu64 " gbps=%.3f "
                "msgs=%" PRIu64 " bytes=%" PRIu64 " retx=%" PRIu64 " verified=%s errors=%" PRIu64
                " malformed=%" PRIu64 " malformed_lifetime=%" PRIu64 " data_packets=%" PRIu64
                " rto=%" PRIu64 " loss_detected=%" PRIu64 "\n",
                m_client ? "client" : "server",
                pass ? "PASS" : (m_interrupted && m_errors == 0 ? "INTERRUPTED" : "FAIL"),
                m_ccfg.transport.c_str(),
                m_write ? "write" : "send",
                m_size,
                gbps,
                m_messages,
                m_bytes,
                retx,
                verified.c_str(),
                m_errors,
                m_host.RxDropped(m_rxAtStart) + pc.rxMalformed,
                m_host.RxDropped() + lifetime.rxMalformed,
                sum.Get(Counter::TX_DATA),
                sum.Get(Counter::RTO),
                sum.Get(Counter::LOSS_DETECTED));
    std::fflush(stdout);
    if (m_app.WritesResults())
    {
        WriteResultPaths();
        WriteResultSummary(now, pass);
    }
}

// ---------------------------------------------------------------------------------------------
// PerfApp
// ---------------------------------------------------------------------------------------------

PerfApp::PerfApp(const PerfOptions& opts)
    : m_opts(opts),
      m_signals(m_io, SIGINT, SIGTERM),
      m_acceptor(m_io),
      m_acceptRetry(m_io),
      m_connecting(m_io),
      m_retryTimer(m_io),
      m_reportTimer(m_io)
{
}

int
PerfApp::Run()
{
    if (!m_opts.telemetry.empty())
    {
        m_telemetry.open(m_opts.telemetry);
        if (!m_telemetry)
        {
            spdlog::error("cannot create {}", m_opts.telemetry);
            return 1;
        }
    }
    if (!m_opts.results.empty())
    {
        std::error_code ec;
        std::filesystem::create_directories(m_opts.results, ec);
        std::filesystem::path dir(m_opts.results);
        m_results.open(dir / "results.pb", std::ios::binary | std::ios::trunc);
        m_goodputCsv.open(dir / "goodput.csv", std::ios::trunc);
        if (ec || !m_results || !m_goodputCsv)
        {
            spdlog::error("cannot write results.pb and goodput.csv in {}", m_opts.results);
            return 1;
        }
        m_goodputCsv << GOODPUT_HEADER << '\n';
        m_goodputCsv.flush();
    }
    if (m_opts.cpu >= 0)
    {
        cpu_set_t set;
        CPU_ZERO(&set);
        CPU_SET(m_opts.cpu, &set);
        if (sched_setaffinity(0, sizeof(set), &set) != 0)
        {
            spdlog::error("--cpu {}: sched_setaffinity: {}", m_opts.cpu, std::strerror(errno));
            return 1;
        }
    }
    if (m_opts.rtPriority > 0)
    {
        sched_param param{};
        param.sched_priority = m_opts.rtPriority;
        if (sched_setscheduler(0, SCHED_FIFO, &param) != 0)
        {
            int err = errno;
            spdlog::error("--rt-priority {}: sched_setscheduler: {}{}",
                          m_opts.rtPriority,
                          std::strerror(err),
                          err == EPERM ? " (needs CAP_SYS_NICE: run as root, or `sudo setcap "
                                         "cap_sys_nice+ep <program>`)"
                                       : "");
            return 1;
        }
        spdlog::info("running under SCHED_FIFO priority {}", m_opts.rtPriority);
    }
    DoSignals();
    if (m_opts.portMode == "tap")
    {
        // The TAP device is the engine's network: create it now, so that the kernel routes to
        // the engine before a peer connects and a missing privilege is reported at once.
        std::string why;
        if (!EnsureHost(0, why))
        {
            spdlog::error("{}", why);
            return 1;
        }
    }
    if (m_opts.server)
    {
        boost::system::error_code ec;
        uint32_t bindIp = 0;
        if (!m_opts.listenIp.empty())
        {
            ParseIpv4(m_opts.listenIp, bindIp);
        }
        else if (!m_opts.localIp.empty() && m_opts.portMode != "tap")
        {
            // In TAP mode --local-ip is the engine's address behind the TAP, not the kernel's.
            ParseIpv4(m_opts.localIp, bindIp);
        }
        tcp::endpoint ep(boost::asio::ip::address_v4(bindIp), m_opts.controlPort);
        m_acceptor.open(ep.protocol(), ec);
        if (!ec)
        {
            m_acceptor.set_option(tcp::acceptor::reuse_address(true), ec);
            m_acceptor.bind(ep, ec);
        }
        if (!ec)
        {
            m_acceptor.listen(16, ec);
        }
        if (ec)
        {
            spdlog::error("cannot listen on TCP port {}: {}", m_opts.controlPort, ec.message());
            return 1;
        }
        spdlog::info("{} listening on TCP {}:{} ({} mode, transport {})",
                     m_opts.daemon ? "metaroce-hild" : "metaroce-perf server",
                     ep.address().to_string(),
                     m_opts.controlPort,
                     m_opts.portMode,
                     m_opts.transport);
        m_maxPending = PendingCap();
        DoAccept();
    }
    else
    {
        m_connectDeadline = m_clock.Now() + Time(m_opts.timeout * 1e12);
        DoConnect();
    }
    DoReport();
    if (m_opts.busyPollUs > 0)
    {
        // Poll instead of sleeping in epoll: no wake-up latency, one core kept busy.
        while (!m_io.stopped())
        {
            m_io.poll();
        }
    }
    else
    {
        m_io.run();
    }
    return m_exitCode;
}

void
PerfApp::DoSignals()
{
    m_signals.async_wait(
        [this](const boost::system::error_code& error, int signal) { OnSignal(error, signal); });
}

void
PerfApp::OnSignal(const boost::system::error_code& error, int signal)
{
    if (error)
    {
        return;
    }
    const char* name = signal == SIGINT ? "SIGINT" : "SIGTERM";
    spdlog::info("{} received: stopping", name);
    int code = m_opts.server ? 0 : 2;
    auto sessions = m_sessions;
    for (auto& s : sessions)
    {
        if (s->AwaitingHello())
        {
            s->DropUnauthenticated(std::string("interrupted by ") + name);
            continue;
        }
        s->Abort(std::string("interrupted by ") + name, code == 0 ? 0 : 2);
    }
    Stop(m_exitCode != 0 ? m_exitCode : code);
}

void
PerfApp::Stop(int code)
{
    if (m_stopped)
    {
        return;
    }
    m_stopped = true;
    m_exitCode = code;
    if (m_host)
    {
        PortCounters pc = m_host->Port().Counters();
        spdlog::info("final: port {}: tx {} rx {} tx failed {} rx malformed {} rx ignored {}; "
                     "engine rx drops: {}",
                     m_host->Port().Describe(),
                     pc.txFrames,
                     pc.rxFrames,
                     pc.txFailed,
                     pc.rxMalformed,
                     pc.rxIgnored,
                     m_host->DropSummary());
        m_host->Close();
    }
    boost::system::error_code ignored;
    m_signals.cancel(ignored);
    m_acceptor.close(ignored);
    m_acceptRetry.cancel();
    m_connecting.close(ignored);
    m_retryTimer.cancel();
    m_reportTimer.cancel();
    m_io.stop();
}

EngineHost*
PerfApp::EnsureHost(uint32_t controlIp, std::string& why)
{
    if (m_host)
    {
        return m_host.get();
    }
    uint32_t localIp = controlIp;
    if (!m_opts.localIp.empty() && !ParseIpv4(m_opts.localIp, localIp))
    {
        why = "bad --local-ip " + m_opts.localIp;
        return nullptr;
    }
    std::unique_ptr<FramePort> port;
    if (m_opts.portMode == "raw")
    {
        RawPortConfig rc;
        rc.device = m_opts.device;
        rc.localIp = m_opts.localIp.empty() ? 0 : localIp;
        rc.dataPort = m_opts.dataPort;
        rc.txBatch = m_opts.txBatch;
        rc.busyPollUs = m_opts.busyPollUs;
        if (!m_opts.peerMac.empty())
        {
            rc.staticPeerMac = ParseMac(m_opts.peerMac, rc.peerMac);
        }
        auto raw = RawFramePort::Open(m_io, m_clock, rc, why);
        if (!raw)
        {
            return nullptr;
        }
        if (raw->LocalIp() != controlIp)
        {
            spdlog::warn("raw port address {} differs from the control connection's {}",
                         Ipv4ToString(raw->LocalIp()),
                         Ipv4ToString(controlIp));
        }
        localIp = raw->LocalIp();
        port = std::move(raw);
    }
    else if (m_opts.portMode == "tap")
    {
        TapPortConfig tc;
        tc.device = m_opts.device;
        tc.localIp = localIp;
        tc.dataPort = m_opts.dataPort;
        if (!m_opts.peerMac.empty())
        {
            tc.staticPeerMac = ParseMac(m_opts.peerMac, tc.peerMac);
        }
        if (!m_opts.tapAddress.empty())
        {
            ParseIpv4Prefix(m_opts.tapAddress, tc.kernelIp, tc.kernelPrefixLength);
        }
        tc.minMtu = uint32_t(Endpoint::MaxDatagramSize(m_opts.mtu) + IPV4_UDP_HEADERS_SIZE);
        auto tap = TapFramePort::Open(m_io, m_clock, tc, why);
        if (!tap)
        {
            return nullptr;
        }
        port = std::move(tap);
    }
    else
    {
        UdpPortConfig uc;
        uc.localIp = localIp;
        uc.dataPort = m_opts.dataPort;
        uc.icrc = m_opts.icrc;
        uc.txBatch = m_opts.txBatch;
        uc.busyPollUs = m_opts.busyPollUs;
        uc.gso = m_opts.udpGso;
        port = UdpFramePort::Open(m_io, m_clock, uc, why);
        if (!port)
        {
            return nullptr;
        }
    }
    if (!m_opts.pcap.empty())
    {
        auto writer = PcapWriter::Open(m_opts.pcap, why);
        if (!writer)
        {
            return nullptr;
        }
        port = std::make_unique<PcapFramePort>(m_clock, std::move(port), std::move(writer));
    }
    if (m_opts.faults.Enabled())
    {
        port = std::make_unique<FaultFramePort>(m_io, m_clock, std::move(port), m_opts.faults);
    }
    EndpointConfig ecfg;
    ecfg.localIp = localIp;
    ecfg.seed = m_opts.seed * 1000003 + (m_opts.server ? 1 : 2);
    ecfg.icrc = m_opts.icrc;
    m_localIp = localIp;
    spdlog::info("engine at {} on {}", Ipv4ToString(localIp), port->Describe());
    m_host = std::make_unique<EngineHost>(m_io, m_clock, ecfg, std::move(port), m_opts.mtu);
    m_host->Start();
    return m_host.get();
}

void
PerfApp::DoAccept()
{
    m_acceptor.async_accept([this](const boost::system::error_code& error, tcp::socket socket) {
        OnAccept(error, std::move(socket));
    });
}

void
PerfApp::OnAccept(const boost::system::error_code& error, tcp::socket socket)
{
    if (error)
    {
        if (error == boost::asio::error::operation_aborted || m_stopped)
        {
            return;
        }
        // Typically EMFILE: the connection stays in the backlog and the listener readable, so
        // an immediate retry fails again at once, forever. Wait for a descriptor instead.
        uint64_t suppressed = 0;
        if (m_acceptLog.Allow(m_clock.Now(), suppressed))
        {
            spdlog::error("accept: {} ({} more suppressed in the last second); retrying when a "
                          "connection ends or in {} ms",
                          error.message(),
                          suppressed,
                          ACCEPT_RETRY.count());
        }
        PauseAccept();
        return;
    }
    LimitPending();
    auto channel =
        std::make_shared<ControlChannel>(std::move(socket), m_clock, Time(m_opts.timeout * 1e12));
    std::string why;
    EngineHost* host = EnsureHost(channel->LocalIp(), why);
    if (!host)
    {
        spdlog::error("{}", why);
        Stop(1);
        return;
    }
    auto session = std::make_shared<Session>(*this, *host, channel, false);
    m_sessions.push_back(session);
    session->StartServer();
    DoAccept();
}

void
PerfApp::PauseAccept()
{
    m_acceptPaused = true;
    m_acceptRetry.expires_after(ACCEPT_RETRY);
    m_acceptRetry.async_wait([this](const boost::system::error_code& error) {
        if (!error)
        {
            ResumeAccept();
        }
    });
}

void
PerfApp::ResumeAccept()
{
    if (!m_acceptPaused || m_stopped)
    {
        return;
    }
    m_acceptPaused = false;
    m_acceptRetry.cancel();
    DoAccept();
}

uint32_t
PerfApp::PendingCap() const
{
    if (m_opts.maxPending > 0)
    {
        return m_opts.maxPending;
    }
    rlimit limit{};
    if (getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY)
    {
        return DEFAULT_MAX_PENDING;
    }
    std::error_code ec;
    uint64_t inUse = 0;
    for (auto it = std::filesystem::directory_iterator("/proc/self/fd", ec);
         !ec && it != std::filesystem::directory_iterator();
         it.increment(ec))
    {
        ++inUse;
    }
    if (ec || inUse == 0)
    {
        inUse = MIN_RESERVED_DESCRIPTORS; // no /proc: a guess
    }
    // Half of the free descriptors stay for clients past their Hello (at least the minimum),
    // so that silent connections alone can never exhaust the table.
    uint64_t free = limit.rlim_cur > inUse ? limit.rlim_cur - inUse : 0;
    uint64_t reserve = std::max<uint64_t>(MIN_RESERVED_DESCRIPTORS, free / 2);
    uint64_t cap = free > reserve ? free - reserve : 1;
    cap = std::min<uint64_t>(cap, DEFAULT_MAX_PENDING);
    if (cap < DEFAULT_MAX_PENDING)
    {
        spdlog::info("descriptor limit {} ({} in use): at most {} control connections may wait "
                     "for their Hello",
                     uint64_t(limit.rlim_cur),
                     inUse,
                     cap);
    }
    return uint32_t(cap);
}

void
PerfApp::LimitPending()
{
    // Called with a new connection in hand: make room for it by closing the oldest silent one.
    // The oldest has had the most time to say Hello, and a flood cannot lock real clients out
    // by holding every slot.
    uint32_t pending = 0;
    Session* oldest = nullptr;
    for (auto& s : m_sessions)
    {
        if (s->AwaitingHello())
        {
            ++pending;
            oldest = oldest ? oldest : s.get();
        }
    }
    if (pending >= m_maxPending && oldest)
    {
        oldest->DropUnauthenticated(std::to_string(pending) +
                                    " connections are waiting for their Hello (--max-pending " +
                                    std::to_string(m_maxPending) + "): closed the oldest");
    }
}

void
PerfApp::NoteUnauthenticatedEnd(const std::string& peer, const std::string& reason)
{
    uint64_t suppressed = 0;
    if (m_pendingLog.Allow(m_clock.Now(), suppressed))
    {
        spdlog::warn("control connection from {} ended before a valid Hello: {} ({} more in the "
                     "last second)",
                     peer,
                     reason,
                     suppressed);
    }
}

void
PerfApp::DoConnect()
{
    uint32_t ip = 0;
    ParseIpv4(m_opts.serverAddress, ip);
    tcp::endpoint ep(boost::asio::ip::address_v4(ip), m_opts.controlPort);
    m_connecting = tcp::socket(m_io);
    m_connecting.async_connect(ep, [this](const boost::system::error_code& error) {
        OnConnect(error);
    });
    // The connect itself can hang (a silent host): the retry timer bounds it.
    m_retryTimer.expires_after(std::chrono::milliseconds(500));
    m_retryTimer.async_wait([this](const boost::system::error_code& error) {
        if (!error)
        {
            boost::system::error_code ignored;
            m_connecting.cancel(ignored);
        }
    });
}

void
PerfApp::OnConnect(const boost::system::error_code& error)
{
    if (m_stopped)
    {
        return;
    }
    if (error)
    {
        m_retryTimer.cancel();
        if (m_clock.Now() >= m_connectDeadline)
        {
            spdlog::error("cannot reach the server {}:{} within {} s: {}",
                          m_opts.serverAddress,
                          m_opts.controlPort,
                          m_opts.timeout,
                          error.message());
            Stop(1);
            return;
        }
        // Not listening yet (or unreachable for now): try again shortly.
        m_retryTimer.expires_after(std::chrono::milliseconds(100));
        m_retryTimer.async_wait([this](const boost::system::error_code& e) {
            if (!e)
            {
                DoConnect();
            }
        });
        return;
    }
    m_retryTimer.cancel();
    auto channel = std::make_shared<ControlChannel>(std::move(m_connecting),
                                                    m_clock,
                                                    Time(m_opts.timeout * 1e12));
    std::string why;
    EngineHost* host = EnsureHost(channel->LocalIp(), why);
    if (!host)
    {
        spdlog::error("{}", why);
        channel->Close();
        Stop(1);
        return;
    }
    auto session = std::make_shared<Session>(*this, *host, channel, true);
    m_sessions.push_back(session);
    session->StartClient();
}

void
PerfApp::SessionDone(Session* session, int code)
{
    // Keep the session alive until this call stack unwinds.
    std::shared_ptr<Session> keep;
    for (auto it = m_sessions.begin(); it != m_sessions.end(); ++it)
    {
        if (it->get() == session)
        {
            keep = *it;
            m_sessions.erase(it);
            break;
        }
    }
    if (keep)
    {
        boost::asio::post(m_io, [keep]() {});
    }
    ResumeAccept(); // its control socket is closed (or closing): a descriptor to accept with
    if (code < 0)
    {
        return; // a connection that never became a session
    }
    if (m_opts.daemon)
    {
        spdlog::info("session with {} ended ({}); waiting for the next client",
                     session->Name(),
                     code == 0 ? "ok" : "error");
        return;
    }
    // A one-shot server or client: the first real session decides the exit code. Stop on the
    // next turn so that the last control messages are flushed.
    if (!m_stopped)
    {
        m_exitCode = code;
        auto linger = std::make_shared<boost::asio::steady_timer>(m_io);
        linger->expires_after(std::chrono::milliseconds(100));
        linger->async_wait([this, linger, code](const boost::system::error_code&) { Stop(code); });
    }
}

void
PerfApp::WriteTelemetry(const proto::TelemetryRecord& record)
{
    if (!m_telemetry.is_open())
    {
        return;
    }
    std::string json;
    google::protobuf::util::JsonPrintOptions options;
    options.preserve_proto_field_names = true;
    options.always_print_primitive_fields = true;
    if (google::protobuf::util::MessageToJsonString(record, &json, options).ok())
    {
        m_telemetry << json << '\n';
        m_telemetry.flush();
    }
}

void
PerfApp::WriteResult(const rpb::ResultRecord& record)
{
    if (!m_results.is_open())
    {
        return;
    }
    // The runner's framing: each record preceded by its length as a varint.
    if (!google::protobuf::util::SerializeDelimitedToOstream(record, &m_results))
    {
        spdlog::error("cannot write {}/results.pb", m_opts.results);
    }
    m_results.flush();
}

void
PerfApp::WriteGoodput(const rpb::GoodputSample& sample)
{
    if (!m_results.is_open())
    {
        return;
    }
    rpb::ResultRecord r;
    *r.mutable_goodput() = sample;
    WriteResult(r);
    m_goodputCsv << Fixed(sample.time_us(), 3) << ',' << Fixed(sample.interval_us(), 3) << ','
                 << sample.host() << ',' << sample.bytes() << ',' << Fixed(sample.goodput_gbps(), 3)
                 << '\n';
    m_goodputCsv.flush();
}

void
PerfApp::DoReport()
{
    m_reportTimer.expires_after(std::chrono::milliseconds(int64_t(m_opts.report * 1000)));
    m_reportTimer.async_wait([this](const boost::system::error_code& error) { OnReport(error); });
}

void
PerfApp::OnReport(const boost::system::error_code& error)
{
    if (error || m_stopped)
    {
        return;
    }
    Time now = m_clock.Now();
    auto sessions = m_sessions;
    for (auto& s : sessions)
    {
        s->OnReport(now, false);
    }
    DoReport();
}

/// Parse a number; \return false if \p text is not entirely one.
template <typename T>
bool
ParseNumber(const std::string& text, T& out)
{
    if (text.empty())
    {
        return false;
    }
    char* end = nullptr;
    errno = 0;
    if constexpr (std::is_floating_point<T>::value)
    {
        double v = std::strtod(text.c_str(), &end);
        out = T(v);
    }
    else
    {
        if (text[0] == '-')
        {
            return false;
        }
        unsigned long long v = std::strtoull(text.c_str(), &end, 0);
        if (v > std::numeric_limits<T>::max())
        {
            return false;
        }
        out = T(v);
    }
    return errno == 0 && end && *end == '\0';
}

/// Parse a size with an optional K/M/G suffix (powers of 1024).
bool
ParseSize(const std::string& text, uint64_t& out)
{
    if (text.empty())
    {
        return false;
    }
    uint64_t scale = 1;
    std::string digits = text;
    switch (text.back())
    {
    case 'K':
    case 'k':
        scale = 1024;
        break;
    case 'M':
    case 'm':
        scale = 1024 * 1024;
        break;
    case 'G':
    case 'g':
        scale = 1024 * 1024 * 1024;
        break;
    default:
        break;
    }
    if (scale != 1)
    {
        digits.pop_back();
    }
    if (!ParseNumber(digits, out))
    {
        return false;
    }
    out *= scale;
    return true;
}

} // namespace

std::string
PerfUsage(bool daemonProgram)
{
    std::string prog = daemonProgram ? "metaroce-hild" : "metaroce-perf";
    std::string usage =
        daemonProgram
            ? "usage: metaroce-hild [options]\n"
              "  Serves metaroce-perf clients (as `metaroce-perf` without an address) until\n"
              "  SIGINT/SIGTERM, one session per client.\n"
            : "usage: metaroce-perf [options]              server: wait for one client\n"
              "       metaroce-perf [options] SERVER_IP    client: run the test against "
              "SERVER_IP\n";
    usage += R"(
Test (client; the server adapts, within its limits):
  --op write|send        RDMA WRITE with immediate, or SEND (default write)
  --size BYTES           message size, K/M/G suffixes (default 64K)
  --iters N              messages per stream (default 5000)
  --duration SECONDS     run for this long instead of --iters
  --streams N            MetaRoCE streams per connection (default 1; rocev2: 1)
  --qps N                connections (queue pairs) (default 1)
  --depth N              messages in flight per stream (default 128)
Connection settings (must match on both sides):
  --transport metaroce|rocev2   (default metaroce)
  --roce-recovery gbn|irn  rocev2 loss recovery: go-back-N or IRN selective repeat (default gbn;
                         both ends must agree)
  --mtu BYTES            payload bytes per packet (default 1024; 4096 needs a link MTU >= 4200)
  --paths N              MetaRoCE paths = UDP source ports per connection (default 8)
  --max-wrs N            outstanding work requests per connection (default 1024)
  --no-icrc              do not compute or check the ICRC
Frames:
  --port-mode udp|raw|tap  UDP sockets (no privileges), AF_PACKET (CAP_NET_RAW) or a TAP
                         device (CAP_NET_ADMIN) (default udp)
  --dev IFACE            raw mode: the interface; tap mode: the TAP device (created if needed)
  --tap-addr A.B.C.D/N   tap mode: give the kernel side of the TAP this address (the gateway)
  --local-ip A.B.C.D     engine address (default: the control connection's / interface's);
                         in udp and raw mode the server's control listener binds it too
  --peer-mac MAC         raw mode: destination MAC (default: kernel neighbour table)
  --data-port N          UDP port datagrams are received on (default 4791)
  --sport-base N         UDP source port of path 0 (default client 50000, server 56000)
  --rate GBPS            pacing ceiling per connection (default: unpaced)
  --rto-min-us US        MetaRoCE RTO floor (default 1000; initial RTO is twice it)
  --rt-priority N        run under SCHED_FIFO priority N (1-99; needs CAP_SYS_NICE): avoids
                         spurious timeouts when the machine is busy (docs/hil.md)
  --tx-batch N           udp and raw mode: datagrams per sendmmsg() (default 64; 1: one
                         system call per datagram)
  --udp-gso on|off       udp mode: send equal-sized datagrams as one GSO train and receive
                         GRO trains (default on; off where the kernel refuses it)
  --busy-poll US         poll the sockets instead of sleeping (keeps one core busy) and set
                         SO_BUSY_POLL to US on the receive socket (default 0: off)
  --cpu N                pin the program (its one I/O thread) to CPU N
  --conn-timeout-ms MS   MetaRoCE: fail when nothing is acknowledged this long (default 2000)
Faults on egress (seeded by --seed):
  --loss P               drop probability
  --burst P_START[,P_END[,P_LOSS]]  Gilbert-Elliott burst drops (P_END 0.5, P_LOSS 1)
  --dup P                duplicate probability
  --reorder P[,DELAY_US] hold back a datagram by DELAY_US (default 100)
Output:
  --pcap FILE            write sent and received frames (nanosecond pcap, Ethernet)
  --results DIR          write DIR/results.pb (ResultRecord stream of
                         proto/metaroce-results.proto) and DIR/goodput.csv, as metaroce-run
  --telemetry FILE       write TelemetryRecord JSON lines every report interval (deprecated:
                         use --results)
  --report SECONDS       report interval (default 1)
  --port N               TCP control port (default 18515)
  --listen A.B.C.D       server: address of the control listener (default: --local-ip in udp
                         and raw mode, else all interfaces). Anyone who reaches it can start a
                         session: there is no authentication (docs/hil.md, "Trust model")
  --max-pending N        server: connections that may wait for their Hello at once; a new one
                         closes the oldest (default 16, fewer under a low descriptor limit)
  --timeout SECONDS      control-plane timeout: connect, silence, stragglers (default 5)
  --seed N               seed of engine, data pattern and faults (default 1)
  --log LEVEL            trace|debug|info|warn|error|off (default info)
  -h, --help             this text
Exit status: 0 pass, 1 error (mismatch, timeout, data error), 2 client interrupted.
)";
    return usage;
}

bool
ParsePerfOptions(const std::vector<std::string>& args,
                 bool daemonProgram,
                 PerfOptions& opts,
                 std::string& error)
{
    opts.daemon = daemonProgram;
    opts.server = true;
    opts.commandLine = daemonProgram ? "metaroce-hild" : "metaroce-perf";
    for (const std::string& a : args)
    {
        opts.commandLine += " " + a;
    }
    bool sizeGiven = false;
    for (size_t i = 0; i < args.size(); ++i)
    {
        std::string arg = args[i];
        std::string value;
        bool hasValue = false;
        size_t eq = arg.find('=');
        if (arg.rfind("--", 0) == 0 && eq != std::string::npos)
        {
            value = arg.substr(eq + 1);
            arg = arg.substr(0, eq);
            hasValue = true;
        }
        auto next = [&](std::string& out) {
            if (hasValue)
            {
                out = value;
                return true;
            }
            if (i + 1 >= args.size())
            {
                error = arg + " needs a value";
                return false;
            }
            out = args[++i];
            return true;
        };
        auto bad = [&](const std::string& v) {
            error = "bad value '" + v + "' for " + arg;
            return false;
        };
        std::string v;
        if (arg == "-h" || arg == "--help")
        {
            error = "help";
            return false;
        }
        else if (arg == "--no-icrc")
        {
            opts.icrc = false;
        }
        else if (arg.rfind("-", 0) != 0)
        {
            if (daemonProgram)
            {
                error = "metaroce-hild takes no address (it is always a server)";
                return false;
            }
            opts.serverAddress = arg;
            opts.server = false;
        }
        else if (!next(v))
        {
            return false;
        }
        else if (arg == "--op")
        {
            if (v != "write" && v != "send")
            {
                return bad(v);
            }
            opts.op = v;
        }
        else if (arg == "--transport")
        {
            if (v != "metaroce" && v != "rocev2")
            {
                return bad(v);
            }
            opts.transport = v;
        }
        else if (arg == "--size")
        {
            if (!ParseSize(v, opts.size) || opts.size == 0)
            {
                return bad(v);
            }
            sizeGiven = true;
        }
        else if (arg == "--iters")
        {
            if (!ParseNumber(v, opts.iters) || opts.iters == 0)
            {
                return bad(v);
            }
        }
        else if (arg == "--duration")
        {
            if (!ParseNumber(v, opts.duration) || opts.duration <= 0)
            {
                return bad(v);
            }
        }
        else if (arg == "--paths")
        {
            if (!ParseNumber(v, opts.paths) || opts.paths == 0 || opts.paths > 64)
            {
                return bad(v);
            }
        }
        else if (arg == "--streams")
        {
            if (!ParseNumber(v, opts.streams) || opts.streams == 0)
            {
                return bad(v);
            }
        }
        else if (arg == "--qps")
        {
            if (!ParseNumber(v, opts.qps) || opts.qps == 0 || opts.qps > 64)
            {
                return bad(v);
            }
        }
        else if (arg == "--depth")
        {
            if (!ParseNumber(v, opts.depth) || opts.depth == 0)
            {
                return bad(v);
            }
        }
        else if (arg == "--mtu")
        {
            if (!ParseNumber(v, opts.mtu) || opts.mtu < 256 || opts.mtu > 9000)
            {
                return bad(v);
            }
        }
        else if (arg == "--max-wrs")
        {
            if (!ParseNumber(v, opts.maxWrs) || opts.maxWrs == 0)
            {
                return bad(v);
            }
        }
        else if (arg == "--sport-base")
        {
            if (!ParseNumber(v, opts.sourcePortBase) || opts.sourcePortBase < 1024 ||
                opts.sourcePortBase > 65535 - 64 * 64)
            {
                return bad(v);
            }
        }
        else if (arg == "--rate")
        {
            if (!ParseNumber(v, opts.rateGbps) || opts.rateGbps < 0)
            {
                return bad(v);
            }
        }
        else if (arg == "--tx-batch")
        {
            if (!ParseNumber(v, opts.txBatch) || opts.txBatch < 1 || opts.txBatch > 1024)
            {
                return bad(v);
            }
        }
        else if (arg == "--udp-gso")
        {
            if (v != "on" && v != "off")
            {
                return bad(v);
            }
            opts.udpGso = v == "on";
        }
        else if (arg == "--busy-poll")
        {
            if (!ParseNumber(v, opts.busyPollUs) || opts.busyPollUs > 1000000)
            {
                return bad(v);
            }
        }
        else if (arg == "--cpu")
        {
            double cpu = 0;
            if (!ParseNumber(v, cpu) || cpu < 0 || cpu >= CPU_SETSIZE || cpu != double(int(cpu)))
            {
                return bad(v);
            }
            opts.cpu = int(cpu);
        }
        else if (arg == "--rt-priority")
        {
            double priority = 0;
            if (!ParseNumber(v, priority) || priority < 1 || priority > 99 ||
                priority != double(int(priority)))
            {
                return bad(v);
            }
            opts.rtPriority = int(priority);
        }
        else if (arg == "--roce-recovery")
        {
            if (!IsPolicyName(PolicyKind::ROCE_RECOVERY, v))
            {
                return bad(v);
            }
            opts.roceRecovery = v;
        }
        else if (arg == "--rto-min-us")
        {
            if (!ParseNumber(v, opts.rtoMinUs) || opts.rtoMinUs < 1)
            {
                return bad(v);
            }
        }
        else if (arg == "--conn-timeout-ms")
        {
            if (!ParseNumber(v, opts.connectionTimeoutMs) || opts.connectionTimeoutMs < 1)
            {
                return bad(v);
            }
        }
        else if (arg == "--port-mode")
        {
            if (v != "udp" && v != "raw" && v != "tap")
            {
                return bad(v);
            }
            opts.portMode = v;
        }
        else if (arg == "--dev")
        {
            opts.device = v;
        }
        else if (arg == "--tap-addr")
        {
            uint32_t ip;
            uint32_t prefix;
            if (!ParseIpv4Prefix(v, ip, prefix))
            {
                return bad(v);
            }
            opts.tapAddress = v;
        }
        else if (arg == "--local-ip")
        {
            uint32_t ip;
            if (!ParseIpv4(v, ip))
            {
                return bad(v);
            }
            opts.localIp = v;
        }
        else if (arg == "--listen")
        {
            uint32_t ip;
            if (!ParseIpv4(v, ip))
            {
                return bad(v);
            }
            opts.listenIp = v;
        }
        else if (arg == "--max-pending")
        {
            if (!ParseNumber(v, opts.maxPending) || opts.maxPending == 0)
            {
                return bad(v);
            }
        }
        else if (arg == "--peer-mac")
        {
            MacAddress mac;
            if (!ParseMac(v, mac))
            {
                return bad(v);
            }
            opts.peerMac = v;
        }
        else if (arg == "--data-port")
        {
            if (!ParseNumber(v, opts.dataPort) || opts.dataPort == 0)
            {
                return bad(v);
            }
        }
        else if (arg == "--loss")
        {
            if (!ParseNumber(v, opts.faults.loss))
            {
                return bad(v);
            }
        }
        else if (arg == "--burst")
        {
            double p[3] = {0, opts.faults.burstEnd, opts.faults.burstLoss};
            std::string rest = v;
            for (int k = 0; k < 3 && !rest.empty(); ++k)
            {
                size_t comma = rest.find(',');
                if (!ParseNumber(rest.substr(0, comma), p[k]))
                {
                    return bad(v);
                }
                rest = comma == std::string::npos ? "" : rest.substr(comma + 1);
            }
            opts.faults.burstStart = p[0];
            opts.faults.burstEnd = p[1];
            opts.faults.burstLoss = p[2];
        }
        else if (arg == "--dup")
        {
            if (!ParseNumber(v, opts.faults.duplicate))
            {
                return bad(v);
            }
        }
        else if (arg == "--reorder")
        {
            size_t comma = v.find(',');
            double delayUs = 100;
            if (!ParseNumber(v.substr(0, comma), opts.faults.reorder) ||
                (comma != std::string::npos && !ParseNumber(v.substr(comma + 1), delayUs)))
            {
                return bad(v);
            }
            opts.faults.reorderDelay = Time(delayUs * 1e6);
        }
        else if (arg == "--pcap")
        {
            opts.pcap = v;
        }
        else if (arg == "--telemetry")
        {
            opts.telemetry = v;
        }
        else if (arg == "--results")
        {
            opts.results = v;
        }
        else if (arg == "--report")
        {
            if (!ParseNumber(v, opts.report) || opts.report < 0.01)
            {
                return bad(v);
            }
        }
        else if (arg == "--port")
        {
            if (!ParseNumber(v, opts.controlPort) || opts.controlPort == 0)
            {
                return bad(v);
            }
        }
        else if (arg == "--timeout")
        {
            if (!ParseNumber(v, opts.timeout) || opts.timeout < 0.1)
            {
                return bad(v);
            }
        }
        else if (arg == "--seed")
        {
            if (!ParseNumber(v, opts.seed))
            {
                return bad(v);
            }
        }
        else if (arg == "--log")
        {
            opts.logLevel = v;
        }
        else
        {
            error = "unknown option " + arg + " (see --help)";
            return false;
        }
    }
    (void)sizeGiven;
    uint32_t ip;
    if (!opts.server && !ParseIpv4(opts.serverAddress, ip))
    {
        error = "'" + opts.serverAddress + "' is not an IPv4 address";
        return false;
    }
    if (opts.portMode == "raw" && opts.device.empty())
    {
        error = "--port-mode raw needs --dev IFACE";
        return false;
    }
    if (opts.portMode == "tap" && (opts.device.empty() || opts.localIp.empty()))
    {
        error = "--port-mode tap needs --dev TAPNAME and --local-ip (the engine's address "
                "behind the TAP)";
        return false;
    }
    if (opts.transport == "rocev2" && opts.streams != 1)
    {
        error = "rocev2 has no streams: use --qps for parallel connections";
        return false;
    }
    if (uint64_t(opts.depth) * opts.streams > opts.maxWrs)
    {
        error = "--depth x --streams (" + std::to_string(uint64_t(opts.depth) * opts.streams) +
                ") exceeds --max-wrs " + std::to_string(opts.maxWrs);
        return false;
    }
    if (opts.size > (1u << 30))
    {
        error = "--size is limited to 1G";
        return false;
    }
    opts.faults.seed = opts.seed * 7919 + (opts.server ? 1 : 2);
    std::string why;
    if (!opts.faults.Validate(why))
    {
        error = why;
        return false;
    }
    return true;
}

int
RunPerf(const PerfOptions& opts)
{
    // Engine deadlines are microseconds apart: ask the kernel for no timer slack (the default
    // for a normal thread is 50 us). See docs/hil.md, "Timers on real links".
    prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
    PerfApp app(opts);
    return app.Run();
}

} // namespace hil
} // namespace metaroce
