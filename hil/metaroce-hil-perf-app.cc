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
namespace
{

/// \return what the engine of \p shard holds: "shard 0: 2 connection(s), 1 memory region(s)
/// of 4096 bytes" (call on the shard's thread, or after it ended).
std::string
EngineHoldings(Shard& shard)
{
    Endpoint& ep = shard.host->GetEndpoint();
    return "shard " + std::to_string(shard.index) + ": " + std::to_string(ep.ConnectionCount()) +
           " connection(s), " + std::to_string(ep.RegionCount()) + " memory region(s) of " +
           std::to_string(ep.RegisteredBytes()) + " bytes";
}

} // namespace

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
        if (!EnsureShards(0, why))
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
    JoinShards();
    if (!m_opts.server && m_opts.threads > 1 && !m_totalsPrinted && m_clientSessions > 0)
    {
        PrintTotals(); // stopped before the last session's end reached the main loop (a signal)
    }
    return m_exitCode;
}

void
PerfApp::JoinShards()
{
    for (auto& shard : m_shards)
    {
        if (shard->thread.joinable())
        {
            shard->thread.join();
        }
    }
    // One thread from here on. Run what the shards still hold (the aborted operations'
    // handlers, ended sessions kept alive), while their engines exist: the contexts would
    // otherwise destroy them after the hosts.
    {
        std::lock_guard<std::mutex> lock(m_sessionsMutex);
        m_sessions.clear();
    }
    for (auto& shard : m_shards)
    {
        if (shard->ownIo)
        {
            shard->ownIo->restart();
            shard->ownIo->poll();
        }
    }
    for (auto& shard : m_shards)
    {
        EngineHost& host = *shard->host;
        PortCounters pc = host.Port().Counters();
        spdlog::info("final: port {}: tx {} rx {} tx failed {} rx malformed {} rx ignored {}{}; "
                     "engine rx drops: {}",
                     host.Port().Describe(),
                     pc.txFrames,
                     pc.rxFrames,
                     pc.txFailed,
                     pc.rxMalformed,
                     pc.rxIgnored,
                     pc.rxHandedOff + pc.rxHandoffDrops == 0
                         ? std::string()
                         : " handed off " + std::to_string(pc.rxHandedOff) + " hand-off drops " +
                               std::to_string(pc.rxHandoffDrops),
                     host.DropSummary());
        spdlog::info("final: engine of {}", EngineHoldings(*shard));
    }
}

size_t
PerfApp::OpenSessions()
{
    std::lock_guard<std::mutex> lock(m_sessionsMutex);
    return m_sessions.size();
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
    std::list<std::shared_ptr<Session>> sessions;
    {
        std::lock_guard<std::mutex> lock(m_sessionsMutex);
        sessions = m_sessions;
    }
    const std::string reason = std::string("interrupted by ") + name;
    for (auto& s : sessions)
    {
        OnShard(s, [s, reason, code]() {
            if (s->AwaitingHello())
            {
                s->DropUnauthenticated(reason);
                return;
            }
            s->Abort(reason, code == 0 ? 0 : 2);
        });
    }
    ReleaseOnShards(sessions);
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
    for (auto& shard : m_shards)
    {
        Shard* sh = shard.get();
        if (sh->io == &m_io)
        {
            sh->host->Close();
            continue;
        }
        // After whatever the shard has queued (a signal's aborts): close, then end its loop.
        boost::asio::post(*sh->io, [sh]() {
            sh->host->Close();
            sh->io->stop();
        });
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

bool
PerfApp::EnsureShards(uint32_t controlIp, std::string& why)
{
    if (!m_shards.empty())
    {
        return true;
    }
    uint32_t localIp = controlIp;
    if (!m_opts.localIp.empty() && !ParseIpv4(m_opts.localIp, localIp))
    {
        why = "bad --local-ip " + m_opts.localIp;
        return false;
    }
    const uint32_t threads = std::max<uint32_t>(m_opts.threads, 1);
    std::vector<std::unique_ptr<Shard>> shards;
    for (uint32_t i = 0; i < threads; ++i)
    {
        auto shard = std::make_unique<Shard>();
        shard->index = i;
        if (i == 0)
        {
            shard->io = &m_io;
        }
        else
        {
            shard->ownIo = std::make_unique<boost::asio::io_context>(1);
            shard->io = shard->ownIo.get();
        }
        std::unique_ptr<FramePort> port = OpenPort(i, controlIp, localIp, why, *shard->io);
        if (!port)
        {
            return false;
        }
        EndpointConfig ecfg;
        ecfg.localIp = localIp;
        ecfg.seed = m_opts.seed * 1000003 + (m_opts.server ? 1 : 2) + uint64_t(i) * 7919;
        ecfg.icrc = m_opts.icrc;
        ecfg.pacingSlack = Time(m_opts.pacingSlackUs * 1e6); // us to ps
        // Each shard hands out its own class of QPNs: the port group steers by it.
        ecfg.qpnStride = threads;
        ecfg.qpnOffset = i;
        spdlog::info("engine at {} on {}", Ipv4ToString(localIp), port->Describe());
        shard->host =
            std::make_unique<EngineHost>(*shard->io, m_clock, ecfg, std::move(port), m_opts.mtu);
        shard->host->Start();
        if (m_opts.hostDelay)
        {
            shard->host->StartHostDelayProbe(MilliSeconds(1), Time(m_opts.hostDelayWindowMs * 1e9));
        }
        shards.push_back(std::move(shard));
    }
    m_localIp = localIp;
    m_shards = std::move(shards);
    for (auto& shard : m_shards)
    {
        if (shard->ownIo)
        {
            Shard* sh = shard.get();
            sh->thread = std::thread([this, sh]() { RunShard(*sh); });
        }
    }
    return true;
}

void
PerfApp::RunShard(Shard& shard)
{
    if (m_opts.cpu >= 0)
    {
        // Thread i on CPU --cpu + i (wrapping over the CPUs this machine has).
        const long cpus = std::max(1L, sysconf(_SC_NPROCESSORS_ONLN));
        cpu_set_t set;
        CPU_ZERO(&set);
        CPU_SET(int((m_opts.cpu + shard.index) % uint32_t(cpus)), &set);
        if (pthread_setaffinity_np(pthread_self(), sizeof(set), &set) != 0)
        {
            spdlog::warn("shard {}: cannot pin to a CPU", shard.index);
        }
    }
    auto work = boost::asio::make_work_guard(*shard.io);
    if (m_opts.busyPollUs > 0)
    {
        while (!shard.io->stopped())
        {
            shard.io->poll();
        }
    }
    else
    {
        shard.io->run();
    }
}

std::unique_ptr<FramePort>
PerfApp::OpenPort(uint32_t index,
                  uint32_t controlIp,
                  uint32_t& localIp,
                  std::string& why,
                  boost::asio::io_context& ioContext)
{
    boost::asio::io_context* io = &ioContext;
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
        if (!m_opts.xdpMode.empty())
        {
            ParseXdpMode(m_opts.xdpMode, rc.xdpMode); // checked by ParsePerfOptions()
        }
        rc.ringRetireMs = m_opts.ringRetireMs;
        if (!m_opts.ringTxCopy.empty())
        {
            ParseRingTxCopy(m_opts.ringTxCopy, rc.ringTxCopy); // checked by ParsePerfOptions()
        }
        if (!m_opts.peerMac.empty())
        {
            rc.staticPeerMac = ParseMac(m_opts.peerMac, rc.peerMac);
        }
        rc.shards = std::max<uint32_t>(m_opts.threads, 1);
        rc.shardIndex = index;
        rc.fanoutId = m_fanoutId; // (shard 0 makes the group and sets it below)
        rc.xdpGroup = m_xdpGroup; // (likewise)
        auto raw = RawFramePort::Open(*io, m_clock, rc, why);
        if (!raw)
        {
            return nullptr;
        }
        if (index == 0)
        {
            m_fanoutId = raw->FanoutId(); // the group the other shards join
            m_xdpGroup = raw->XdpGroup();
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
        auto tap = TapFramePort::Open(*io, m_clock, tc, why);
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
        uc.shards = std::max<uint32_t>(m_opts.threads, 1);
        uc.shardIndex = index;
        port = UdpFramePort::Open(*io, m_clock, uc, why);
        if (!port)
        {
            return nullptr;
        }
    }
    if (!m_opts.pcap.empty())
    {
        std::string path = m_opts.pcap;
        if (m_opts.threads > 1)
        {
            path += "." + std::to_string(index); // one capture per shard
        }
        auto writer = PcapWriter::Open(path, why);
        if (!writer)
        {
            return nullptr;
        }
        port = std::make_unique<PcapFramePort>(m_clock, std::move(port), std::move(writer));
    }
    if (m_opts.faults.Enabled())
    {
        FaultConfig faults = m_opts.faults;
        faults.seed += uint64_t(index) * 104729; // each shard its own fault stream
        port = std::make_unique<FaultFramePort>(*io, m_clock, std::move(port), faults);
    }
    return port;
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
    std::string why;
    boost::system::error_code ec;
    const tcp::endpoint local = socket.local_endpoint(ec);
    const uint32_t controlIp =
        !ec && local.address().is_v4() ? local.address().to_v4().to_uint() : 0;
    if (!EnsureShards(controlIp, why))
    {
        spdlog::error("{}", why);
        Stop(1);
        return;
    }
    // The least busy shard (the lowest on a tie); counted now, so that the next accept sees it.
    Shard* shard = m_shards.front().get();
    for (auto& s : m_shards)
    {
        if (s->sessions.load() < shard->sessions.load())
        {
            shard = s.get();
        }
    }
    StartSession(*shard, std::move(socket), false);
    DoAccept();
}

void
PerfApp::StartSession(Shard& shard, tcp::socket socket, bool client)
{
    ++shard.sessions;
    const Time timeout = Time(m_opts.timeout * 1e12);
    auto start = [this, &shard, client, timeout](tcp::socket s) {
        auto channel = std::make_shared<ControlChannel>(std::move(s), m_clock, timeout);
        std::shared_ptr<Session> session;
        if (client)
        {
            session = std::make_shared<ClientSession>(*this, shard, channel);
        }
        else
        {
            session = std::make_shared<ServerSession>(*this, shard, channel);
        }
        {
            std::lock_guard<std::mutex> lock(m_sessionsMutex);
            m_sessions.push_back(session);
        }
        session->Start();
    };
    if (shard.io == &m_io)
    {
        start(std::move(socket));
        return;
    }
    // The socket moves to the shard's context, and the session is made on its thread.
    boost::system::error_code ec;
    const int fd = socket.release(ec);
    // If the hand-over fails, a client counts the session as failed (it waits for all).
    auto failed = [this, &shard, client](const std::string& why) {
        spdlog::error("cannot hand a control connection to shard {}: {}", shard.index, why);
        --shard.sessions;
        if (client)
        {
            boost::asio::post(m_io, [this]() { OneShotDone(1); });
        }
    };
    if (ec)
    {
        failed(ec.message());
        return;
    }
    boost::asio::post(*shard.io, [&shard, fd, start, failed]() {
        boost::system::error_code error;
        tcp::socket s(*shard.io);
        s.assign(tcp::v4(), fd, error);
        if (error)
        {
            close(fd);
            failed(error.message());
            return;
        }
        start(std::move(s));
    });
}

void
PerfApp::ReleaseOnShards(std::list<std::shared_ptr<Session>>& sessions)
{
    for (auto& s : sessions)
    {
        Shard& shard = s->GetShard();
        if (shard.io != &m_io)
        {
            boost::asio::post(*shard.io, [keep = std::move(s)]() {});
        }
    }
    sessions.clear();
}

void
PerfApp::OnShard(const std::shared_ptr<Session>& session, std::function<void()> fn)
{
    Shard& shard = session->GetShard();
    if (shard.io == &m_io)
    {
        fn();
        return;
    }
    boost::asio::post(*shard.io, std::move(fn));
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
    std::shared_ptr<Session> oldest;
    {
        std::lock_guard<std::mutex> lock(m_sessionsMutex);
        for (auto& s : m_sessions)
        {
            if (s->AwaitingHello())
            {
                ++pending;
                oldest = oldest ? oldest : s;
            }
        }
    }
    if (pending >= m_maxPending && oldest)
    {
        const std::string reason = std::to_string(pending) +
                                   " connections are waiting for their Hello (--max-pending " +
                                   std::to_string(m_maxPending) + "): closed the oldest";
        OnShard(oldest, [oldest, reason]() {
            if (oldest->AwaitingHello())
            {
                oldest->DropUnauthenticated(reason);
            }
        });
    }
    if (oldest)
    {
        std::list<std::shared_ptr<Session>> held{std::move(oldest)};
        ReleaseOnShards(held);
    }
}

void
PerfApp::NoteUnauthenticatedEnd(const std::string& peer, const std::string& reason)
{
    std::lock_guard<std::recursive_mutex> lock(m_outputMutex);
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
    std::string why;
    boost::system::error_code ec;
    const tcp::endpoint local = m_connecting.local_endpoint(ec);
    const uint32_t controlIp =
        !ec && local.address().is_v4() ? local.address().to_v4().to_uint() : 0;
    if (!EnsureShards(controlIp, why))
    {
        spdlog::error("{}", why);
        m_connecting.close(ec);
        Stop(1);
        return;
    }
    // One session per shard, each over its own control connection.
    // (The next connection is opened before this session sets up, which can take a while
    // for a large buffer, so that the sessions start together.)
    Shard& shard = *m_shards[m_clientSessions % m_shards.size()];
    ++m_clientSessions;
    tcp::socket socket = std::move(m_connecting);
    if (m_clientSessions < m_shards.size())
    {
        DoConnect();
    }
    StartSession(shard, std::move(socket), true);
}

void
PerfApp::SessionDone(Session* session, int code)
{
    // (On the session's shard.) Keep the session alive until this call stack unwinds.
    std::shared_ptr<Session> keep;
    {
        std::lock_guard<std::mutex> lock(m_sessionsMutex);
        for (auto it = m_sessions.begin(); it != m_sessions.end(); ++it)
        {
            if (it->get() == session)
            {
                keep = *it;
                m_sessions.erase(it);
                break;
            }
        }
    }
    if (keep)
    {
        --session->GetShard().sessions;
        boost::asio::post(*session->GetShard().io, [keep]() {});
    }
    // Its control socket is closed (or closing): a descriptor to accept with.
    boost::asio::post(m_io, [this]() { ResumeAccept(); });
    if (code < 0)
    {
        return; // a connection that never became a session
    }
    if (m_opts.daemon)
    {
        // What it gave back (Teardown() ran), and what is left once it is destroyed: the
        // handler above, queued first, drops what should be its last reference.
        const std::string ended =
            "session with " + session->Name() + " ended (" + (code == 0 ? "ok" : "error") +
            "); reclaimed " + std::to_string(session->ReclaimedConnections()) +
            " connection(s) and " + std::to_string(session->ReclaimedBytes()) + " registered bytes";
        Shard* shard = &session->GetShard();
        boost::asio::post(*shard->io, [this, shard, ended]() {
            spdlog::info("{}; left: {} session(s) open, {} in memory, engine of {}; waiting for "
                         "the next client",
                         ended,
                         OpenSessions(),
                         m_sessionObjects.load(),
                         EngineHoldings(*shard));
        });
        return;
    }
    boost::asio::post(m_io, [this, code]() { OneShotDone(code); });
}

void
PerfApp::OneShotDone(int code)
{
    if (m_stopped)
    {
        return;
    }
    if (!m_opts.server)
    {
        // A client ends with its last session, with the worst exit code of them (each
        // session is a test of its own and ends on its own, also when another failed).
        m_exitCode = std::max(m_exitCode, code);
        if (++m_clientDone < std::max<uint32_t>(m_opts.threads, 1))
        {
            return;
        }
        code = m_exitCode;
        if (m_opts.threads > 1)
        {
            PrintTotals();
        }
    }
    else
    {
        // A one-shot server serves as many sessions as its client runs at once (the Hello's
        // parallel_sessions, --threads), and ends with the last of them, with the worst exit
        // code.
        m_exitCode = std::max(m_exitCode, code);
        if (++m_serverDone < m_expectedSessions.load() || AnySessionRunning())
        {
            return; // OneShotDone() runs again when the next one ends
        }
        code = m_exitCode;
    }
    // Stop on the next turn so that the last control messages are flushed (unless a session
    // got past its Hello meanwhile: its end decides).
    auto linger = std::make_shared<boost::asio::steady_timer>(m_io);
    linger->expires_after(std::chrono::milliseconds(100));
    linger->async_wait([this, linger, code](const boost::system::error_code&) {
        if (!m_opts.server || !AnySessionRunning())
        {
            Stop(code);
        }
    });
}

bool
PerfApp::AnySessionRunning()
{
    std::list<std::shared_ptr<Session>> sessions;
    {
        std::lock_guard<std::mutex> lock(m_sessionsMutex);
        sessions = m_sessions;
    }
    bool running = false;
    for (const auto& session : sessions)
    {
        const Session::State state = session->GetState();
        running = running || state == Session::State::RUNNING || state == Session::State::FINISHING;
    }
    ReleaseOnShards(sessions);
    return running;
}

void
PerfApp::ExpectSessions(uint32_t sessions)
{
    uint32_t now = m_expectedSessions.load();
    while (sessions > now && !m_expectedSessions.compare_exchange_weak(now, sessions))
    {
    }
}

void
PerfApp::AddTotals(const SessionTotals& totals)
{
    std::lock_guard<std::recursive_mutex> lock(m_outputMutex);
    m_totals.push_back(totals);
}

void
PerfApp::PrintTotals()
{
    std::lock_guard<std::recursive_mutex> lock(m_outputMutex);
    if (m_totalsPrinted)
    {
        return;
    }
    m_totalsPrinted = true;
    SessionTotals sum;
    Time first = TIME_INFINITE;
    Time last = 0;
    bool pass = m_totals.size() == m_opts.threads;
    bool interrupted = false;
    bool failed = m_totals.size() != m_opts.threads;
    for (const SessionTotals& t : m_totals)
    {
        sum.bytes += t.bytes;
        sum.messages += t.messages;
        sum.retx += t.retx;
        sum.rto += t.rto;
        pass = pass && t.pass;
        interrupted = interrupted || t.interrupted;
        failed = failed || (!t.pass && !t.interrupted);
        if (t.start != 0)
        {
            first = std::min(first, t.start);
            last = std::max(last, t.end);
        }
    }
    const double seconds = first < last ? double(last - first) / 1e12 : 1e-9;
    // Goodput over the union of the sessions' run times: from the first start to the last end.
    std::printf("TOTAL role=client sessions=%zu threads=%u status=%s gbps=%.3f msgs=%" PRIu64
                " bytes=%" PRIu64 " retx=%" PRIu64 " rto=%" PRIu64 " time=%.3f\n",
                m_totals.size(),
                m_opts.threads,
                pass ? "PASS" : (interrupted && !failed ? "INTERRUPTED" : "FAIL"),
                double(sum.bytes) * 8 / seconds / 1e9,
                sum.messages,
                sum.bytes,
                sum.retx,
                sum.rto,
                seconds);
    std::fflush(stdout);
}

void
PerfApp::WriteTelemetry(const proto::TelemetryRecord& record)
{
    std::lock_guard<std::recursive_mutex> lock(m_outputMutex);
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
    std::lock_guard<std::recursive_mutex> lock(m_outputMutex);
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
    std::lock_guard<std::recursive_mutex> lock(m_outputMutex);
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
    std::list<std::shared_ptr<Session>> sessions;
    {
        std::lock_guard<std::mutex> lock(m_sessionsMutex);
        sessions = m_sessions;
    }
    for (auto& s : sessions)
    {
        OnShard(s, [s, now]() { s->OnReport(now, false); });
    }
    ReleaseOnShards(sessions);
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
