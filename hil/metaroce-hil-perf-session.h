/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#ifndef METAROCE_HIL_PERF_SESSION_H
#define METAROCE_HIL_PERF_SESSION_H

/**
 * \file
 * metaroce-perf / metaroce-hild internals shared by their source files: Session (one test
 * between a client and a server, either side; metaroce-hil-perf-session.cc, its reports in
 * metaroce-hil-perf-report.cc) and PerfApp (the program: listener or connector, engine host,
 * signals, outputs; metaroce-hil-perf-app.cc). The command line is metaroce-hil-perf-options.cc.
 */

#include "metaroce-endpoint.h"
#include "metaroce-hil-clock.h"
#include "metaroce-hil-control.h"
#include "metaroce-hil-engine-host.h"
#include "metaroce-hil-log.h"
#include "metaroce-hil-pcap.h"
#include "metaroce-hil-perf.h"
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
#include <atomic>
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
#include <mutex>
#include <sched.h>
#include <spdlog/spdlog.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <thread>

namespace metaroce
{
namespace hil
{
/// metaroce-perf / metaroce-hild internals (metaroce-hil-perf-*.cc).
namespace perf
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
inline std::string
Fixed(double value, int decimals)
{
    char text[64];
    std::snprintf(text, sizeof(text), "%.*f", decimals, value);
    return text;
}

/// Software name sent in Hello / Accept.
constexpr const char* SOFTWARE = PERF_SOFTWARE;

/// \return the counts of \p now accumulated since \p then.
inline PortCounters
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
    d.rxKernelDrops = now.rxKernelDrops - then.rxKernelDrops;
    d.rxBacklogMarked = now.rxBacklogMarked - then.rxBacklogMarked;
    d.rxHandedOff = now.rxHandedOff - then.rxHandedOff;
    d.rxHandoffDrops = now.rxHandoffDrops - then.rxHandoffDrops;
    return d;
}

/// \return "12.34" for \p bps in Gb/s.
inline std::string
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

/**
 * One engine of the program (--threads): an EngineHost on its own share of the data port,
 * with its own context and thread. Shard 0 runs on the program's main context and thread. A
 * session lives on one shard: its control channel, timers and connections run on that
 * shard's thread only. What the shards share is PerfApp's (the session list and the outputs,
 * under locks) and the kernel's (the port group that steers datagrams by QPN).
 */
struct Shard
{
    uint32_t index{0};                              //!< 0 .. threads - 1
    boost::asio::io_context* io{nullptr};           //!< its context (shard 0: the main one)
    std::unique_ptr<boost::asio::io_context> ownIo; //!< shards 1..: their own context
    std::unique_ptr<EngineHost> host;               //!< its engine
    std::thread thread;                             //!< shards 1..: the thread running ownIo
    std::atomic<uint32_t> sessions{0};              //!< sessions placed on it and not ended
};

/// What a session reports at its end, for a client's total over its sessions (--threads).
struct SessionTotals
{
    uint64_t bytes{0};       //!< completed payload bytes
    uint64_t messages{0};    //!< completed messages
    uint64_t retx{0};        //!< retransmissions
    uint64_t rto{0};         //!< timeouts
    Time start{0};           //!< traffic start (0: never started)
    Time end{0};             //!< traffic end
    bool pass{false};        //!< verified and not interrupted
    bool interrupted{false}; //!< stopped by a signal (without an error)
};

/**
 * One test between a client and a server: what both roles share (the control channel, the
 * connections, the buffer, reports, the end). ClientSession and ServerSession add their role.
 */
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

    virtual ~Session();

    /// Start: the client sends its Hello, the server waits for one.
    virtual void Start() = 0;
    void OnReport(Time now, bool final);
    void Abort(const std::string& reason, int code);

    State GetState() const
    {
        return m_state;
    }

    /// \return true for a server connection that has not sent a valid Hello yet.
    virtual bool AwaitingHello() const
    {
        return false;
    }

    /// Close a connection that is still waiting for its Hello (nothing was set up for it).
    virtual void DropUnauthenticated(const std::string& /* reason */)
    {
    }

    const std::string& Name() const
    {
        return m_name;
    }

    /// \return the shard the session runs on.
    Shard& GetShard() const
    {
        return m_shard;
    }

    /// \return the engine connections its teardown destroyed (0 before it).
    size_t ReclaimedConnections() const
    {
        return m_reclaimedConnections;
    }

    /// \return the registered bytes its teardown released in the engine (0 before it).
    uint64_t ReclaimedBytes() const
    {
        return m_reclaimedBytes;
    }

  protected:
    Session(PerfApp& app, Shard& shard, std::shared_ptr<ControlChannel> channel, bool client);

    /// \return the first UDP source port of the session's connections: \p base, moved past
    /// the other shards' sessions (whose 4-tuples must differ, so that no GRO train mixes
    /// two shards' QPNs). \return 0 if they do not fit below 65536.
    uint32_t ShardSourcePortBase(uint32_t base) const;

    /// Handle a control message of the role. \return false if it is not expected now.
    virtual bool OnRoleMessage(const proto::ControlMessage& msg) = 0;
    /// Handle a successful completion.
    virtual void OnRoleCompletion(const Completion& c) = 0;

    /// Cancel the role's timers (Teardown(); in the destructor the role's members are gone
    /// already, and their timers with them).
    virtual void StopRoleTimers()
    {
    }

    /// A report is due at \p now (a duration run may have ended without a completion).
    virtual void BeforeReport(Time /* now */)
    {
    }

    void OnMessage(const proto::ControlMessage& msg);
    void OnChannelError(const std::string& reason);
    void OnCompletion(const Completion& c);
    /// Settle the connections' settings for \p transport: its backlog marks, the timers from
    /// the control connection's round trip.
    void PrepareConnections(const std::string& transport);
    /// Create a connection with \p cfg whose completions reach this session.
    PostStatus AddConnection(const ConnectionConfig& cfg, uint32_t& qpn, std::string* why);
    /// PrepareConnections() and the workload's connections, from UDP source port \p portBase.
    bool CreateConnections(const std::string& transport, uint16_t portBase, std::string& why);
    /// \return the inputs of the connections' timers for a path of round trip \p pathRtt.
    LinkTimerInputs TimerInputs(Time pathRtt) const;
    /// \return our data address for the peer: the same in the client's Hello and the
    /// server's Accept.
    proto::DataAddress OurDataAddress() const;
    /// \return why \p peer, the peer's data address, cannot work ("" if it can): in UDP mode,
    /// the same address and port as ours (both programs on one host with the same ports).
    std::string SharedDataPort(const proto::DataAddress& peer) const;
    /// Connect the local connections to the peer's queue pairs \p qpns at \p peerIp, and learn
    /// the peer's frame address. \return why not ("" on success).
    std::string ConnectTo(const proto::DataAddress& peer,
                          const google::protobuf::RepeatedPtrField<proto::QueuePair>& qpns);
    /// Tell the port where the peer receives (its data address).
    void LearnPeerAddress(const proto::DataAddress& peer);
    void VerifyFailed(const std::string& what);
    void Finish(int code);
    /// Start the control channel's handlers.
    void StartChannel();
    /// With --host-delay on, report this host's delay to the peer in the heartbeats and take
    /// the peer's (the server once it accepted the client).
    void StartHostDelayExchange();
    /// The peer reported its host delay \p delay: this session's connections wait it.
    void OnPeerHostDelay(Time delay);
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

    PerfApp& m_app;                               //!< the program
    const PerfOptions& m_opts;                    //!< its options
    Shard& m_shard;                               //!< where it runs
    EngineHost& m_host;                           //!< the engine (the shard's)
    std::shared_ptr<ControlChannel> m_channel;    //!< control plane
    const bool m_client;                          //!< role
    std::string m_name;                           //!< for logs
    std::atomic<State> m_state{State::HANDSHAKE}; //!< progress (read by the main thread)
    ConnectionConfig m_ccfg;                      //!< connection settings
    proto::Workload m_workload;                   //!< what runs
    std::vector<uint32_t> m_qpns;                 //!< local connections
    std::map<uint32_t, uint32_t> m_connIndex;     //!< qpn -> connection index
    std::vector<Stream> m_streams;                //!< by conn * streams + stream
    std::vector<uint8_t> m_buffer;                //!< server: the destination region
    MemoryRegion m_mr;                            //!< server: m_buffer's registration
    MemoryRegion m_patternMr;                     //!< client: m_pattern's registration
    std::unique_ptr<DataPattern> m_pattern;       //!< message contents
    uint64_t m_size{0};                           //!< message size
    uint32_t m_depth{0};                          //!< slots per stream
    bool m_write{true};                           //!< op is write
    Time m_start{0};                              //!< traffic start
    Time m_end{0};                                //!< traffic end
    Time m_lastReport{0};                         //!< previous report
    uint64_t m_bytes{0};                          //!< completed payload bytes
    uint64_t m_messages{0};                       //!< completed messages
    uint64_t m_reportBytes{0};                    //!< m_bytes at the previous report
    uint64_t m_reportMessages{0};                 //!< m_messages at the previous report
    uint64_t m_reportRetx{0};                     //!< retransmissions at the previous report
    uint64_t m_errors{0};                         //!< verification errors
    std::string m_firstError;                     //!< first of them
    bool m_finishReceived{false};                 //!< server: Finish arrived
    bool m_verdictReceived{false};                //!< client: Verdict arrived
    proto::Verdict m_verdict;                     //!< client: the receiver's verdict
    bool m_interrupted{false};                    //!< stopped by a signal
    bool m_exchangingDelays{false};               //!< StartHostDelayExchange() ran
    bool m_torn{false};                           //!< Teardown() ran
    bool m_scenarioWritten{false};                //!< results: the Scenario record went out
    size_t m_reclaimedConnections{0};             //!< Teardown(): engine connections destroyed
    uint64_t m_reclaimedBytes{0};                 //!< Teardown(): registered bytes released
    // The engine host outlives sessions (a daemon serves many): what it had counted before
    // this session, so that the summary reports this session's share.
    PortCounters m_portAtStart; //!< port counters then
    RxCounts m_rxAtStart;       //!< engine receive results then
};

/// The client's side of a test: it sends Hello, posts the messages, sends Finish.
class ClientSession final : public Session
{
  public:
    ClientSession(PerfApp& app, Shard& shard, std::shared_ptr<ControlChannel> channel);

    /// Create the connections and the buffer, send Hello.
    void Start() override;

  private:
    bool OnRoleMessage(const proto::ControlMessage& msg) override;
    void OnRoleCompletion(const Completion& c) override;
    void BeforeReport(Time now) override;
    void OnAccept(const proto::Accept& accept);
    void OnVerdict(const proto::Verdict& verdict);
    bool MayPost(Time now) const;
    void PostMore();
    void CheckDone(Time now);

    proto::Region m_remote; //!< the server's region (write)
};

/**
 * The server's side of a test: it checks Hello (CheckHello()) and hands the receiving to a
 * VerifyingReceiver, the half it shares with the simulated hosts, driven through this
 * session's engine (ReceiveEngine).
 */
class ServerSession final : public Session, private ServerEngine
{
  public:
    ServerSession(PerfApp& app, Shard& shard, std::shared_ptr<ControlChannel> channel);

    /// Wait for the client's Hello.
    void Start() override;

    bool AwaitingHello() const override
    {
        return m_state == State::HANDSHAKE;
    }

    void DropUnauthenticated(const std::string& reason) override;

  private:
    bool OnRoleMessage(const proto::ControlMessage& msg) override;
    void OnRoleCompletion(const Completion& c) override;
    void StopRoleTimers() override;
    void OnHello(const proto::Hello& hello);
    void OnFinish(const proto::Finish& finish);
    void Reject(const std::string& reason);
    // The servers' engine access (ServerEngine): this session's EngineHost.
    PostStatus CreateConnection(const ConnectionConfig& cfg,
                                uint32_t& qpn,
                                std::string* why) override;
    PostStatus Connect(uint32_t qpn, uint32_t peerIp, uint32_t peerQpn) override;
    MemoryRegion RegisterMemory(uint8_t* base, uint64_t length, uint32_t access) override;
    PostStatus PostRecv(uint32_t qpn, const RecvWr& wr) override;
    void CheckDone();
    void SendVerdict();

    std::unique_ptr<VerifyingReceiver> m_receiver; //!< the receiving half (once accepted)
    boost::asio::steady_timer m_finishTimer;       //!< waits for stragglers
};

class PerfApp
{
  public:
    explicit PerfApp(const PerfOptions& opts);
    int Run();

    const PerfOptions& Options() const
    {
        return m_opts;
    }

    /// \return the connection configuration of the options (PerfConnectionConfig()), set by
    /// Run() before any session.
    const ConnectionConfig& Connection() const
    {
        return m_connection;
    }

    /// \return how late this host wakes the process (measured at start; 0 if not measured).
    Time SchedulingDelay() const
    {
        return m_schedulingDelay;
    }

    const HostClock& Clock() const
    {
        return m_clock;
    }

    /// Session \p session ended with \p code (-1: before its Hello). Called on its shard.
    void SessionDone(Session* session, int code);

    /// A Session object was made (+1) or destroyed (-1): the daemon reports how many exist.
    void CountSessionObject(int delta)
    {
        m_sessionObjects += delta;
    }

    /// A client session's figures at its end, for the total over sessions (any shard).
    void AddTotals(const SessionTotals& totals);
    /// An accepted client runs \p sessions at once (its Hello): a one-shot server serves
    /// that many before it exits (any shard).
    void ExpectSessions(uint32_t sessions);
    /// A connection ended before a valid Hello: log it, at most once per second.
    void NoteUnauthenticatedEnd(const std::string& peer, const std::string& reason);
    void WriteTelemetry(const proto::TelemetryRecord& record);
    void WriteResult(const rpb::ResultRecord& record);
    void WriteGoodput(const rpb::GoodputSample& sample);

    /// Held while a session writes its summary or outputs, so that shards do not interleave.
    std::recursive_mutex& OutputMutex()
    {
        return m_outputMutex;
    }

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
    /// Create the shards (their ports and engines) and start their threads, once.
    bool EnsureShards(uint32_t controlIp, std::string& why);
    /// \return the port of shard \p index on \p io, or nullptr with \p why.
    std::unique_ptr<FramePort> OpenPort(uint32_t index,
                                        uint32_t controlIp,
                                        uint32_t& localIp,
                                        std::string& why,
                                        boost::asio::io_context& io);
    void RunShard(Shard& shard);
    /// Create a session on \p shard for control socket \p socket (on the main context), on
    /// the shard's thread.
    void StartSession(Shard& shard, tcp::socket socket, bool client);
    /// Run \p fn on \p session's shard: at once on the main thread's shard, else posted.
    void OnShard(const std::shared_ptr<Session>& session, std::function<void()> fn);
    /// A one-shot program's session ended with \p code (main thread).
    void OneShotDone(int code);
    /// \return true if a session past its Hello is still running (main thread).
    bool AnySessionRunning();
    /// Drop the main thread's references to \p sessions on their shards, so that a session
    /// that ended meanwhile is destroyed there, not here.
    void ReleaseOnShards(std::list<std::shared_ptr<Session>>& sessions);
    void PrintTotals();
    void Stop(int code);
    /// Join the shards' threads and log their ports' final counters (after the main loop).
    void JoinShards();
    /// \return the sessions in the session list (any shard; those still without a Hello too).
    size_t OpenSessions();

    PerfOptions m_opts;                             //!< options
    std::atomic<int64_t> m_sessionObjects{0};       //!< Session objects alive (outlives m_io)
    ConnectionConfig m_connection;                  //!< the options' connection settings
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
    std::vector<std::unique_ptr<Shard>> m_shards;   //!< engines (created on demand)
    uint32_t m_fanoutId{0};                         //!< raw mode: the shards' fanout group
    std::shared_ptr<XdpShardGroup> m_xdpGroup;      //!< AF_XDP: what the shards share
    uint32_t m_localIp{0};                          //!< engine address
    std::mutex m_sessionsMutex;                     //!< guards m_sessions
    std::list<std::shared_ptr<Session>> m_sessions; //!< live sessions
    std::recursive_mutex m_outputMutex;             //!< guards outputs and stdout summaries
    uint32_t m_clientSessions{0};                   //!< client: sessions started
    uint32_t m_clientDone{0};                       //!< client: sessions ended (main thread)
    bool m_totalsPrinted{false};                    //!< client: PrintTotals() ran
    std::atomic<uint32_t> m_expectedSessions{1};    //!< one-shot server: ExpectSessions()
    uint32_t m_serverDone{0};                       //!< one-shot server: real sessions ended
    std::vector<SessionTotals> m_totals;            //!< client: AddTotals() (output mutex)
    std::ofstream m_telemetry;                      //!< telemetry output
    std::ofstream m_results;                        //!< --results: results.pb
    std::ofstream m_goodputCsv;                     //!< --results: goodput.csv
    int m_exitCode{0};                              //!< result
    bool m_stopped{false};                          //!< Stop() ran
    Time m_schedulingDelay{0};                      //!< MeasureSchedulingDelay() at start
};

} // namespace perf
} // namespace hil
} // namespace metaroce

#endif // METAROCE_HIL_PERF_SESSION_H
