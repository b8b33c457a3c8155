/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

/**
 * \file
 * metaroce-perf / metaroce-hild: the program (listener or connector, engine host, signals,
 * outputs).
 */

#include "metaroce-hil-perf-session.h"

namespace metaroce
{
namespace hil
{
namespace perf
{

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
    const std::string why = PerfConnectionConfig(m_opts, m_connection);
    if (!why.empty())
    {
        spdlog::error("{}", why);
        return 1;
    }
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
    if (m_opts.schedProbe)
    {
        // The RTO floor must stay above this host's own stalls (metaroce-hil-timers.h).
        m_schedulingDelay = MeasureSchedulingDelay();
        spdlog::info("scheduling delay (90th percentile of 16 1-ms sleeps): {:.3f} ms",
                     double(m_schedulingDelay) / 1e9);
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
        else
        {
            // Loopback unless told otherwise: the control plane has no authentication
            // (docs/hil.md, "Trust model").
            bindIp = 0x7F000001;
            spdlog::info("control listener on loopback only: give --listen A.B.C.D (or "
                         "--local-ip in udp and raw mode) for clients on other hosts");
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
        rc.backlogEcn = m_opts.backlogEcn < 0 ? BACKLOG_ECN_DEFAULT : uint32_t(m_opts.backlogEcn);
        ParseRawIoMode(m_opts.rawIo, rc.io); // checked by ParsePerfOptions()
        rc.ringRetireMs = m_opts.ringRetireMs;
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
        uc.receiveBufferBytes = int(m_opts.rxBufferBytes);
        uc.backlogEcn = m_opts.backlogEcn < 0 ? BACKLOG_ECN_DEFAULT : uint32_t(m_opts.backlogEcn);
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
    ecfg.pacingSlack = Time(m_opts.pacingSlackUs * 1e6); // us to ps
    m_localIp = localIp;
    spdlog::info("engine at {} on {}", Ipv4ToString(localIp), port->Describe());
    m_host = std::make_unique<EngineHost>(m_io, m_clock, ecfg, std::move(port), m_opts.mtu);
    m_host->Start();
    if (m_opts.hostDelay)
    {
        m_host->StartHostDelayProbe(MilliSeconds(1), Time(m_opts.hostDelayWindowMs * 1e9));
    }
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
    auto session = std::make_shared<ServerSession>(*this, *host, channel);
    m_sessions.push_back(session);
    session->Start();
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
    auto session = std::make_shared<ClientSession>(*this, *host, channel);
    m_sessions.push_back(session);
    session->Start();
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

} // namespace perf

int
RunPerf(const PerfOptions& opts)
{
    // Engine deadlines are microseconds apart: ask the kernel for no timer slack (the default
    // for a normal thread is 50 us). See docs/hil.md, "Timers on real links".
    prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
    perf::PerfApp app(opts);
    return app.Run();
}

} // namespace hil
} // namespace metaroce
