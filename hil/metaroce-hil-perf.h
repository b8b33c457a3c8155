/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#ifndef METAROCE_HIL_PERF_H
#define METAROCE_HIL_PERF_H

#include "metaroce-config.h"
#include "metaroce-hil-backlog-ecn.h"
#include "metaroce-hil-clock.h"
#include "metaroce-hil-fault-port.h"
#include "metaroce-hil-udp-port.h"

#include <cstdint>
#include <string>
#include <vector>

/**
 * \file
 * metaroce-perf and metaroce-hild: a perftest-style bandwidth test (ib_write_bw / ib_send_bw)
 * over the engine on real frames, and the same server as a long-running daemon.
 *
 * The client fills every message from a seeded pattern (a window into a random buffer chosen
 * by connection, stream and message number) and posts RDMA WRITE with immediate ("write",
 * the immediate carries the message number so the receiver sees each message) or SEND
 * ("send") work requests, keeping --depth messages in flight per stream. The server checks
 * every byte of every message when its completion arrives and reports the verdict back.
 */

namespace metaroce
{
namespace hil
{

/// Largest --threads (engine shards of one metaroce-perf or metaroce-hild).
constexpr uint32_t MAX_THREADS = 64;
/// UDP source port of path 0 of a client's first connection unless --sport-base says.
constexpr uint32_t CLIENT_SOURCE_PORT_BASE = 50000;
/// UDP source port of path 0 of a server's first connection unless --sport-base says.
constexpr uint32_t SERVER_SOURCE_PORT_BASE = 56000;

/// Command-line settings of metaroce-perf / metaroce-hild.
struct PerfOptions
{
    bool server{true};                 //!< server (no address given) or client
    bool daemon{false};                //!< serve clients until SIGINT/SIGTERM (metaroce-hild)
    std::string serverAddress;         //!< client: the server's IPv4 address
    uint16_t controlPort{18515};       //!< TCP port of the control plane
    std::string transport{"metaroce"}; //!< "metaroce" or "rocev2"
    std::string op{"write"};           //!< "write" or "send"
    uint64_t size{65536};              //!< message size, bytes
    uint64_t iters{5000};              //!< messages per stream (when duration is 0)
    double duration{0};                //!< seconds of traffic (0: use iters)
    uint32_t paths{8};                 //!< MetaRoCE paths per connection
    uint32_t streams{1};               //!< MetaRoCE streams per connection
    uint32_t qps{1};                   //!< connections
    uint32_t depth{128};               //!< messages in flight per stream
    uint32_t mtu{1024};                //!< payload bytes per packet
    uint32_t maxWrs{1024};             //!< max outstanding work requests per connection
    uint32_t sourcePortBase{0};        //!< UDP source port of path 0 of connection 0 (0: default)
    double rateGbps{0};                //!< per-connection pacing ceiling (0: unpaced)
    /// RTO floor, microseconds. Software endpoints see millisecond scheduling jitter, so the
    /// HIL default is ten times the engine's datacenter default (100 us).
    std::string roceRecovery{"gbn"}; //!< RoCEv2 loss recovery: "gbn" or "irn"
    double rtoMinUs{1000};
    double connectionTimeoutMs{2000}; //!< give up on a peer that acknowledges nothing this long
    double rtoInitialMs{10};          //!< least RTO before the first RTT sample
    int rtPriority{0};                //!< SCHED_FIFO priority (0: normal scheduling)
    uint32_t txBatch{64};             //!< udp/raw: datagrams queued per sendmmsg()
    bool udpGso{true};                //!< udp: UDP GSO send, GRO receive
    /// udp/raw: mark CE on datagrams read while the kernel queue held more than this (0: off;
    /// -1: auto, AutoBacklogEcn() of the session's transport)
    int64_t backlogEcn{-1};
    bool schedProbe{true};          //!< measure the scheduling delay for the RTO floor
    bool hostDelay{true};           //!< RTOs wait the scheduling delay measured during the run
    double hostDelayWindowMs{4000}; //!< how long a measured stall counts (host delay)
    /// How early a paced packet may leave and how much lateness the pacer makes up (Pacer's
    /// slack), microseconds: a real host wakes tens of microseconds late.
    double pacingSlackUs{DEFAULT_PACING_SLACK_US};
    /// udp: receive socket buffer, bytes (UDP_RECEIVE_BUFFER_DEFAULT)
    uint64_t rxBufferBytes{uint64_t(UDP_RECEIVE_BUFFER_DEFAULT)};
    uint32_t busyPollUs{0}; //!< poll the context; SO_BUSY_POLL microseconds (0: off)
    int cpu{-1};            //!< CPU to pin the I/O thread to (-1: none)
    /// Engine shards, each an Endpoint on its own thread and share of the data port (udp
    /// mode): a server places each session on the least busy; a client runs one session per
    /// shard (docs/hil.md, "Several threads").
    uint32_t threads{1};
    std::string portMode{"udp"};  //!< "udp", "raw" or "tap"
    std::string device;           //!< raw mode: interface; tap mode: TAP device
    std::string tapAddress;       //!< tap mode: kernel-side address "A.B.C.D/N" ("": none)
    std::string localIp;          //!< engine address (default: from the control connection)
    std::string peerMac;          //!< raw mode: static destination MAC
    std::string rawIo{"auto"};    //!< raw mode: "auto", "ring", "ring-v3", "xdp" or "socket"
    std::string xdpMode;          //!< --raw-io xdp: "auto", "zerocopy", "native", "generic"
    uint32_t ringRetireMs{1};     //!< raw mode, ring-v3: receive block retire timeout, ms
    std::string ringTxCopy;       //!< raw mode, rings: "auto" ("" too), "on" or "off"
    uint16_t dataPort{4791};      //!< UDP port datagrams are received on
    FaultConfig faults;           //!< egress faults
    std::string pcap;             //!< capture file ("" = none)
    std::string telemetry;        //!< telemetry JSON-lines file ("" = none; deprecated)
    std::string results;          //!< folder for results.pb and goodput.csv ("" = none)
    std::string commandLine;      //!< the arguments, for RunSummary.command_line
    double timeout{5};            //!< control-plane timeout, seconds
    double report{1};             //!< report interval, seconds
    uint64_t seed{1};             //!< engine, pattern and fault seed
    bool icrc{true};              //!< ICRC on
    std::string logLevel{"info"}; //!< spdlog level
    /// Server: address the control listener binds ("": --local-ip in UDP and raw mode, else
    /// 127.0.0.1; "0.0.0.0": every interface).
    std::string listenIp;
    /// Server: control connections that may wait for their Hello at once; beyond it the oldest
    /// is closed. 0: 16, fewer when RLIMIT_NOFILE leaves less than twice that many descriptors
    /// free, so that half of the free descriptors stay for clients that said Hello.
    uint32_t maxPending{0};
};

/**
 * Parse the command line (without printing).
 * \param args the arguments, without the program name
 * \param daemonProgram true for metaroce-hild (server mode forced, daemon on)
 * \param[out] opts the settings
 * \param[out] error the problem, or "help" when --help was given
 * \return true if the options are valid
 */
bool ParsePerfOptions(const std::vector<std::string>& args,
                      bool daemonProgram,
                      PerfOptions& opts,
                      std::string& error);

/**
 * The connection configuration of \p opts, before the link timers (metaroce-hil-timers.h):
 * --transport, --paths, --mtu and --roce-recovery through the mapping the scenario runner and
 * the control plane use too (ApplyTransportSettings(), metaroce-transport-settings.h), then
 * --max-wrs and --rate-gbps. ParsePerfOptions() refuses options for which it fails.
 * \param opts the settings
 * \param[out] cfg the configuration
 * \return "" or the bad option and why ("--mtu 1022: must be a multiple of 4 in [64, 65536]")
 */
std::string PerfConnectionConfig(const PerfOptions& opts, ConnectionConfig& cfg);

/// \return the --help text of metaroce-hild (\p daemonProgram) or metaroce-perf.
std::string PerfUsage(bool daemonProgram);

/**
 * The whole program metaroce-perf or metaroce-hild: parse the command line (printing the help
 * text or a usage error), set up logging and RunPerf().
 * \param argc, argv main()'s arguments
 * \param daemonProgram true for metaroce-hild
 * \return the process exit code: RunPerf()'s, 0 after --help, or EXIT_USAGE (64)
 */
int PerfMain(int argc, char** argv, bool daemonProgram);

/**
 * Run a server, daemon or client until it is done or a signal stops it.
 * \return the process exit code: 0 pass, 1 error (mismatch, timeout, data error),
 *         2 client interrupted
 */
int RunPerf(const PerfOptions& opts);

} // namespace hil
} // namespace metaroce

#endif // METAROCE_HIL_PERF_H
