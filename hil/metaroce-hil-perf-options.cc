/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

/**
 * \file
 * metaroce-perf / metaroce-hild: the command line on the HIL option layer
 * (metaroce-hil-options.h): ParsePerfOptions(), PerfUsage() and PerfMain().
 */

#include "metaroce-hil-options.h"
#include "metaroce-hil-perf-session.h"
#include "metaroce-transport-settings.h"

#include <iostream>
#include <map>

namespace metaroce
{
namespace hil
{
namespace
{

/// \return the probabilities P[,P...] of \p text, at most \p most of them, or false.
bool
ParseProbabilities(const std::string& text, size_t most, std::vector<double>& values)
{
    values.clear();
    std::string rest = text;
    while (values.size() < most)
    {
        const size_t comma = rest.find(',');
        double v = 0;
        if (!Real(v, -UNBOUNDED, UNBOUNDED)(rest.substr(0, comma)).empty())
        {
            return false;
        }
        values.push_back(v);
        if (comma == std::string::npos)
        {
            return true;
        }
        rest = rest.substr(comma + 1);
    }
    return false;
}

/// The command line of metaroce-perf (server or client) or metaroce-hild over PerfOptions.
class PerfCommandLine
{
  public:
    /**
     * \param daemonProgram true for metaroce-hild
     * \param opts where the values go
     */
    PerfCommandLine(bool daemonProgram, PerfOptions& opts);

    /// \return the option layer.
    ToolOptions& Options()
    {
        return m_options;
    }

    /**
     * After a successful parse: the address, the combinations and the fault settings.
     * \param args the arguments, for PerfOptions::commandLine
     * \return "" or the usage error
     */
    std::string Finish(const std::vector<std::string>& args);

  private:
    /// Add the options, section by section.
    void AddTestOptions();
    void AddConnectionOptions();
    void AddFrameOptions();
    void AddFaultOptions();
    void AddControlOptions();

    bool m_daemon;         //!< metaroce-hild
    PerfOptions& m_opts;   //!< the settings
    bool m_noIcrc{false};  //!< --no-icrc
    ToolOptions m_options; //!< the option layer
};

std::string
Synopsis(bool daemonProgram)
{
    return daemonProgram
               ? "usage: metaroce-hild [options]\n"
                 "  Serves metaroce-perf clients (as `metaroce-perf` without an address) until\n"
                 "  SIGINT/SIGTERM, one session per client."
               : "usage: metaroce-perf [options]              server: wait for one client\n"
                 "       metaroce-perf [options] SERVER_IP    client: run the test against "
                 "SERVER_IP";
}

PerfCommandLine::PerfCommandLine(bool daemonProgram, PerfOptions& opts)
    : m_daemon(daemonProgram),
      m_opts(opts),
      m_options(daemonProgram ? "metaroce-hild" : "metaroce-perf", Synopsis(daemonProgram))
{
    AddTestOptions();
    AddConnectionOptions();
    AddFrameOptions();
    AddFaultOptions();
    AddControlOptions();
    m_options.Epilog("Exit status: 0 pass, 1 error (mismatch, timeout, data error), 2 client "
                     "interrupted, 64 usage error.");
    m_options.AllowPositional(1);
}

void
PerfCommandLine::AddTestOptions()
{
    ToolOptions& o = m_options;
    PerfOptions& p = m_opts;
    o.Section("Test (client; the server adapts, within its limits)");
    o.Add("op",
          "write|send",
          "RDMA WRITE with immediate, or SEND (default write)",
          Choice(p.op, {"write", "send"}));
    o.Add("size",
          "BYTES",
          "message size, K/M/G suffixes, at most 1G (default 64K)",
          Size(p.size, 1, 1ULL << 30));
    o.Add("iters", "N", "messages per stream (default 5000)", Number(p.iters, 1));
    o.Add("duration", "SECONDS", "run for this long instead of --iters", Positive(p.duration));
    o.Add("streams",
          "N",
          "MetaRoCE streams per connection (default 1; rocev2: 1)",
          Number(p.streams, 1));
    o.Add("qps", "N", "connections (queue pairs), 1..64 (default 1)", Number(p.qps, 1, 64));
    o.Add("depth", "N", "messages in flight per stream (default 128)", Number(p.depth, 1));
}

void
PerfCommandLine::AddConnectionOptions()
{
    ToolOptions& o = m_options;
    PerfOptions& p = m_opts;
    o.Section("Connection settings (must match on both sides)");
    o.Add("transport",
          "metaroce|rocev2",
          "transport (default metaroce)",
          Choice(p.transport, PolicyNames(PolicyKind::TRANSPORT)));
    o.Add("roce-recovery",
          "gbn|irn",
          "rocev2 loss recovery: go-back-N or IRN selective repeat (default gbn; both ends "
          "must agree)",
          Matching(
              p.roceRecovery,
              [](const std::string& v) { return IsPolicyName(PolicyKind::ROCE_RECOVERY, v); },
              "a RoCEv2 recovery name (gbn or irn)"));
    o.Add("mtu",
          "BYTES",
          "payload bytes per packet, 256..9000 (default 1024; 4096 needs a link MTU >= 4200)",
          Number(p.mtu, 256, 9000));
    o.Add("paths",
          "N",
          "MetaRoCE paths = UDP source ports per connection, 1..64 (default 8)",
          Number(p.paths, 1, 64));
    o.Add("max-wrs",
          "N",
          "outstanding work requests per connection (default 1024)",
          Number(p.maxWrs, 1));
    o.AddFlag("no-icrc", m_noIcrc, "do not compute or check the ICRC");
}

void
PerfCommandLine::AddFrameOptions()
{
    ToolOptions& o = m_options;
    PerfOptions& p = m_opts;
    o.Section("Frames");
    o.Add("port-mode",
          "udp|raw|tap",
          "UDP sockets (no privileges), AF_PACKET (CAP_NET_RAW) or a TAP device (CAP_NET_ADMIN) "
          "(default udp)",
          Choice(p.portMode, {"udp", "raw", "tap"}));
    o.Add("dev",
          "IFACE",
          "raw mode: the interface; tap mode: the TAP device (created if needed)",
          Text(p.device));
    o.Add("tap-addr",
          "A.B.C.D/N",
          "tap mode: give the kernel side of the TAP this address (the gateway)",
          Matching(
              p.tapAddress,
              [](const std::string& v) {
                  uint32_t ip = 0;
                  uint32_t prefix = 0;
                  return ParseIpv4Prefix(v, ip, prefix);
              },
              "an IPv4 address with a prefix length (A.B.C.D/N)"));
    o.Add("local-ip",
          "A.B.C.D",
          "engine address (default: the control connection's / interface's); in udp and raw "
          "mode the server's control listener binds it too",
          Ipv4(p.localIp));
    o.Add("peer-mac",
          "MAC",
          "raw mode: destination MAC (default: kernel neighbour table)",
          Matching(
              p.peerMac,
              [](const std::string& v) {
                  MacAddress mac;
                  return ParseMac(v, mac);
              },
              "a MAC address (aa:bb:cc:dd:ee:ff)"));
    o.Add("raw-io",
          "MODE",
          "raw mode, auto|ring|ring-v3|xdp|socket: PACKET_MMAP rings (ring: TPACKET_V2, frame by "
          "frame; ring-v3: TPACKET_V3 "
          "receive blocks, fewer wake-ups but a lone frame waits up to the block-retire timer), "
          "an AF_XDP socket (xdp: see --xdp-mode; frames up to 3840 bytes, so --mtu 3584 at "
          "most) or recvmmsg/sendmmsg; auto is ring, falling back to socket with a warning "
          "(default auto)",
          Matching(
              p.rawIo,
              [](const std::string& v) {
                  RawIoMode mode;
                  return ParseRawIoMode(v, mode);
              },
              "one of auto|ring|ring-v3|xdp|socket"));
    o.Add("xdp-mode",
          "MODE",
          "raw mode, --raw-io xdp, auto|zerocopy|native|generic: zero-copy in the driver's XDP, "
          "copy mode in the driver's (native) XDP, or copy mode in generic XDP, which every "
          "interface has; auto is zerocopy where the driver has it, else generic, and says why "
          "it passed zerocopy over (default auto)",
          Matching(
              p.xdpMode,
              [](const std::string& v) {
                  XdpMode mode;
                  return ParseXdpMode(v, mode);
              },
              "one of auto|zerocopy|native|generic"));
    o.Add("ring-retire-ms",
          "MS",
          "raw mode, ring-v3: hand a partly filled receive block over after MS (1..100, default "
          "1; the kernel rounds up to a timer tick)",
          Number(p.ringRetireMs, 1, 100));
    o.Add("ring-tx-copy",
          "auto|on|off",
          "raw mode, ring and ring-v3: the kernel copies each frame out of the transmit ring "
          "into the packet (on) or sends it from the ring's pages (off); auto is on for a veth, "
          "which would copy the ring's pages into pages it allocates per frame (default auto)",
          Matching(
              p.ringTxCopy,
              [](const std::string& v) {
                  RingTxCopy mode;
                  return ParseRingTxCopy(v, mode);
              },
              "one of auto|on|off"));
    o.Add("data-port",
          "N",
          "UDP port datagrams are received on (default 4791)",
          Number(p.dataPort, 1));
    o.Add("sport-base",
          "N",
          "UDP source port of path 0 (default client 50000, server 56000)",
          Number(p.sourcePortBase, 1024, 65535 - 64 * 64));
    o.Add("rate",
          "GBPS",
          "pacing ceiling per connection (default: unpaced)",
          Real(p.rateGbps, 0, UNBOUNDED));
    o.Add("rto-min-us",
          "US",
          "MetaRoCE RTO floor (default 1000; initial RTO at least twice it)",
          Real(p.rtoMinUs, 1, UNBOUNDED));
    o.Add("pacing-slack-us",
          "US",
          "paced connections (rate hint, --rate, DCQCN): a packet may leave up to US early "
          "and a late wake-up is made up for up to US, so bursts of US leave back to back "
          "(0..10000, default 50; 0: one packet per wake-up; docs/hil.md)",
          Real(p.pacingSlackUs, 0, 10000));
    o.Add("rt-priority",
          "N",
          "run under SCHED_FIFO priority N (1..99; needs CAP_SYS_NICE): avoids spurious "
          "timeouts when the machine is busy (docs/hil.md)",
          Number(p.rtPriority, 1, 99));
    o.Add("tx-batch",
          "N",
          "udp and raw mode: datagrams per sendmmsg(), 1..1024 (default 64; 1: one system call "
          "per datagram)",
          Number(p.txBatch, 1, 1024));
    o.Add("sched-probe",
          "on|off",
          "measure how late this host wakes the program at start (16 sleeps of 1 ms) and keep "
          "the RTO floor above twice that (default on)",
          OnOff(p.schedProbe));
    o.Add("host-delay",
          "on|off",
          "measure how late this host wakes the program during the run (a 1 ms probe and the "
          "engine timer) and let every retransmission timer wait the largest lateness of the "
          "last few seconds longer (default on; docs/hil.md)",
          OnOff(p.hostDelay));
    o.Add("host-delay-window-ms",
          "MS",
          "how long a stall counts in the host delay: the largest lateness of the last half to "
          "whole window (100..60000, default 4000)",
          Real(p.hostDelayWindowMs, 100, 60000));
    o.Add("udp-gso",
          "on|off",
          "udp mode: send equal-sized datagrams as one GSO train and receive GRO trains "
          "(default on; off where the kernel refuses it)",
          OnOff(p.udpGso));
    o.Add("rx-buffer",
          "BYTES",
          "udp mode: the receive socket's buffer, K/M suffixes, 64K..1G (default 16M; beyond "
          "net.core.rmem_max only with CAP_NET_ADMIN): it should hold what the peer may have in "
          "flight",
          Size(p.rxBufferBytes, 64 << 10, 1ULL << 30));
    o.Add("backlog-ecn",
          "N",
          "udp and raw mode, auto|N: mark CE on datagrams read while the kernel receive queue "
          "held more than N, so that the sender's congestion control keeps it short (0: off; "
          "auto: 32 for metaroce, off for rocev2; default auto; docs/hil.md)",
          [&p](const std::string& text) {
              if (text == "auto")
              {
                  p.backlogEcn = -1;
                  return std::string();
              }
              uint32_t n = 0;
              std::string why = Number(n, 0, 1u << 20)(text);
              p.backlogEcn = n;
              return why.empty() ? why : std::string("auto or ") + why;
          });
    o.Add("busy-poll",
          "US",
          "poll the sockets instead of sleeping (keeps one core busy) and set SO_BUSY_POLL to "
          "US on the receive socket, 0..1000000 (default 0: off)",
          Number(p.busyPollUs, 0, 1000000));
    o.Add("cpu",
          "N",
          "pin the program's I/O thread to CPU N (with --threads, thread i to CPU N + i)",
          Number(p.cpu, 0, CPU_SETSIZE - 1));
    o.Add("threads",
          "N",
          "engine shards, each on its own thread, 1..64, udp or raw mode (default 1). The kernel "
          "steers each datagram to its shard by destination QPN; with --raw-io xdp shard i reads "
          "queue i of the device (N queues needed) and passes other shards' frames on. A server "
          "puts each session on the least busy shard; a client runs N sessions, one per shard, "
          "and adds them up (docs/hil.md)",
          Number(p.threads, 1, MAX_THREADS));
    o.Add("rto-initial-ms",
          "MS",
          "least RTO before the first RTT sample, for the first flight to a peer still waking "
          "up (default 10; docs/hil.md)",
          Real(p.rtoInitialMs, 0, UNBOUNDED));
    o.Add("conn-timeout-ms",
          "MS",
          "MetaRoCE: fail when nothing is acknowledged this long (default 2000)",
          Real(p.connectionTimeoutMs, 1, UNBOUNDED));
}

void
PerfCommandLine::AddFaultOptions()
{
    ToolOptions& o = m_options;
    FaultConfig& f = m_opts.faults;
    o.Section("Faults on egress (seeded by --seed)");
    o.Add("loss", "P", "drop probability", Real(f.loss, 0, 1));
    o.Add("burst",
          "P_START[,P_END[,P_LOSS]]",
          "Gilbert-Elliott burst drops (P_END 0.5, P_LOSS 1)",
          [&f](const std::string& text) {
              std::vector<double> p;
              if (!ParseProbabilities(text, 3, p))
              {
                  return std::string("P_START[,P_END[,P_LOSS]], probabilities");
              }
              f.burstStart = p[0];
              f.burstEnd = p.size() > 1 ? p[1] : f.burstEnd;
              f.burstLoss = p.size() > 2 ? p[2] : f.burstLoss;
              return std::string();
          });
    o.Add("dup", "P", "duplicate probability", Real(f.duplicate, 0, 1));
    o.Add("reorder",
          "P[,DELAY_US]",
          "hold back a datagram by DELAY_US (default 100)",
          [&f](const std::string& text) {
              std::vector<double> v;
              if (!ParseProbabilities(text, 2, v))
              {
                  return std::string("P[,DELAY_US]");
              }
              f.reorder = v[0];
              f.reorderDelay = Time((v.size() > 1 ? v[1] : 100) * 1e6);
              return std::string();
          });
}

void
PerfCommandLine::AddControlOptions()
{
    ToolOptions& o = m_options;
    PerfOptions& p = m_opts;
    o.Section("Output");
    o.Add("pcap",
          "FILE",
          "write sent and received frames (nanosecond pcap, Ethernet)",
          Text(p.pcap));
    o.Add("results",
          "DIR",
          "write DIR/results.pb (ResultRecord stream of proto/metaroce-results.proto) and "
          "DIR/goodput.csv, as metaroce-run",
          Text(p.results));
    o.Add("telemetry",
          "FILE",
          "write TelemetryRecord JSON lines every report interval (deprecated: use --results)",
          Text(p.telemetry));
    o.Add("report",
          "SECONDS",
          "report interval, at least 0.01 (default 1)",
          Real(p.report, 0.01, UNBOUNDED));
    o.Add("log",
          "LEVEL",
          "trace|debug|info|warn|error|critical|off (default info)",
          Choice(p.logLevel, {"trace", "debug", "info", "warn", "error", "critical", "off"}));
    o.Section("Control plane");
    o.Add("port", "N", "TCP control port (default 18515)", Number(p.controlPort, 1));
    o.Add("listen",
          "A.B.C.D",
          "server: address of the control listener (default: --local-ip in udp and raw mode, "
          "else 127.0.0.1; 0.0.0.0: every interface). Anyone who reaches it can start a "
          "session: there is no authentication (docs/hil.md, \"Trust model\")",
          Ipv4(p.listenIp));
    o.Add("max-pending",
          "N",
          "server: connections that may wait for their Hello at once; a new one closes the "
          "oldest (default 16, fewer under a low descriptor limit)",
          Number(p.maxPending, 1));
    o.Add("timeout",
          "SECONDS",
          "control-plane timeout: connect, silence, stragglers; at least 0.1 (default 5)",
          Real(p.timeout, 0.1, UNBOUNDED));
    o.Add("seed", "N", "seed of engine, data pattern and faults (default 1)", Number(p.seed));
}

std::string
PerfCommandLine::Finish(const std::vector<std::string>& args)
{
    PerfOptions& p = m_opts;
    p.daemon = m_daemon;
    p.icrc = !m_noIcrc;
    p.commandLine = m_daemon ? "metaroce-hild" : "metaroce-perf";
    for (const std::string& a : args)
    {
        p.commandLine += " " + a;
    }
    const auto& words = m_options.Positional();
    if (m_daemon && !words.empty())
    {
        return "metaroce-hild takes no address (it is always a server)";
    }
    p.server = words.empty();
    uint32_t ip = 0;
    if (!p.server)
    {
        p.serverAddress = words[0];
        if (!ParseIpv4(p.serverAddress, ip))
        {
            return "'" + p.serverAddress + "' is not an IPv4 address";
        }
    }
    if (p.portMode == "raw" && p.device.empty())
    {
        return "--port-mode raw needs --dev IFACE";
    }
    if (p.portMode == "tap" && (p.device.empty() || p.localIp.empty()))
    {
        return "--port-mode tap needs --dev TAPNAME and --local-ip (the engine's address behind "
               "the TAP)";
    }
    if (!p.xdpMode.empty() && (p.portMode != "raw" || p.rawIo != "xdp"))
    {
        return "--xdp-mode " + p.xdpMode + " needs --port-mode raw --raw-io xdp";
    }
    if (p.threads > 1 && p.portMode == "tap")
    {
        return "--threads " + std::to_string(p.threads) +
               " needs --port-mode udp or raw (the TAP port has one queue)";
    }
    if (p.threads > 1 && !p.server && (!p.results.empty() || !p.telemetry.empty()))
    {
        return "--results and --telemetry hold one client session: run the client without "
               "--threads, or one client per results folder";
    }
    if (p.threads > 1 && !p.server &&
        (p.sourcePortBase ? p.sourcePortBase : CLIENT_SOURCE_PORT_BASE) +
                uint64_t(p.threads) * p.qps * PORTS_PER_CONNECTION >
            65536)
    {
        return "--threads " + std::to_string(p.threads) + " x --qps " + std::to_string(p.qps) +
               " sessions need more UDP source ports than there are above --sport-base";
    }
    if (p.transport == "rocev2" && p.streams != 1)
    {
        return "rocev2 has no streams: use --qps for parallel connections";
    }
    if (uint64_t(p.depth) * p.streams > p.maxWrs)
    {
        return "--depth x --streams (" + std::to_string(uint64_t(p.depth) * p.streams) +
               ") exceeds --max-wrs " + std::to_string(p.maxWrs);
    }
    ConnectionConfig cfg;
    std::string why = PerfConnectionConfig(p, cfg);
    if (!why.empty())
    {
        return why;
    }
    p.faults.seed = p.seed * 7919 + (p.server ? 1 : 2);
    return p.faults.Validate(why) ? "" : why;
}

} // namespace

std::string
PerfConnectionConfig(const PerfOptions& opts, ConnectionConfig& cfg)
{
    TransportSettings transport;
    transport.transport = opts.transport;
    transport.numPaths = opts.paths;
    transport.mtu = opts.mtu;
    transport.rocev2Recovery = opts.roceRecovery;
    cfg = ConnectionConfig();
    if (const std::optional<TransportError> error = ApplyTransportSettings(transport, cfg))
    {
        const std::map<TransportField, std::string> options{
            {TransportField::TRANSPORT, "--transport"},
            {TransportField::NUM_PATHS, "--paths"},
            {TransportField::MTU, "--mtu"},
            {TransportField::ROCE_RECOVERY, "--roce-recovery"}};
        const auto option = options.find(error->field);
        return option == options.end() ? error->Message() : option->second + " " + error->problem;
    }
    cfg.maxOutstandingWrs = opts.maxWrs;
    cfg.lineRateBps = opts.rateGbps * 1e9;
    return "";
}

bool
ParsePerfOptions(const std::vector<std::string>& args,
                 bool daemonProgram,
                 PerfOptions& opts,
                 std::string& error)
{
    PerfCommandLine cmd(daemonProgram, opts);
    if (!cmd.Options().TryParse(args, error))
    {
        return false;
    }
    error = cmd.Finish(args);
    return error.empty();
}

std::string
PerfUsage(bool daemonProgram)
{
    PerfOptions opts;
    return PerfCommandLine(daemonProgram, opts).Options().Help();
}

int
PerfMain(int argc, char** argv, bool daemonProgram)
{
    const std::vector<std::string> args(argv + 1, argv + argc);
    PerfOptions opts;
    PerfCommandLine cmd(daemonProgram, opts);
    int status = cmd.Options().Parse(args);
    if (status >= 0)
    {
        return status;
    }
    const std::string error = cmd.Finish(args);
    if (!error.empty())
    {
        return cmd.Options().UsageError(error);
    }
    SetupLogging(opts.logLevel);
    return RunPerf(opts);
}

} // namespace hil
} // namespace metaroce
