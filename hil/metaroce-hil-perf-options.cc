/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

/**
 * \file
 * metaroce-perf / metaroce-hild: the command line (ParsePerfOptions(), PerfUsage()).
 */

#include "metaroce-hil-perf-session.h"

namespace metaroce
{
namespace hil
{
namespace
{

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
  --raw-io auto|ring|ring-v3|xdp|socket  raw mode: PACKET_MMAP rings (ring: TPACKET_V2,
                         frame by frame; ring-v3: TPACKET_V3 receive blocks, fewer wake-ups but a
                         lone frame waits up to the block-retire timer), an AF_XDP socket (xdp:
                         copy mode, frames up to 3840 bytes, so --mtu 3584 at most) or
                         recvmmsg/sendmmsg; auto is ring, falling back to socket with a warning
                         (default auto)
  --ring-retire-ms MS    raw mode, ring-v3: hand a partly filled receive block over after MS
                         (1-100, default 1; the kernel rounds up to a timer tick)
  --data-port N          UDP port datagrams are received on (default 4791)
  --sport-base N         UDP source port of path 0 (default client 50000, server 56000)
  --rate GBPS            pacing ceiling per connection (default: unpaced)
  --rto-min-us US        MetaRoCE RTO floor (default 1000; initial RTO is twice it)
  --rt-priority N        run under SCHED_FIFO priority N (1-99; needs CAP_SYS_NICE): avoids
                         spurious timeouts when the machine is busy (docs/hil.md)
  --tx-batch N           udp and raw mode: datagrams per sendmmsg() (default 64; 1: one
                         system call per datagram)
  --sched-probe on|off   measure how late this host wakes the program at start (16 sleeps of
                         1 ms) and keep the RTO floor above twice that (default on)
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
        else if (arg == "--sched-probe")
        {
            if (v != "on" && v != "off")
            {
                return bad(v);
            }
            opts.schedProbe = v == "on";
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
        else if (arg == "--raw-io")
        {
            RawIoMode mode;
            if (!ParseRawIoMode(v, mode))
            {
                return bad(v);
            }
            opts.rawIo = v;
        }
        else if (arg == "--ring-retire-ms")
        {
            if (!ParseNumber(v, opts.ringRetireMs) || opts.ringRetireMs < 1 ||
                opts.ringRetireMs > 100)
            {
                return bad(v);
            }
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

} // namespace hil
} // namespace metaroce
