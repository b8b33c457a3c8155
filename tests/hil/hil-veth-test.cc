/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

/**
 * \file
 * Real-to-real runs of metaroce-perf / metaroce-hild between two network namespaces joined by
 * a veth pair, in UDP and raw (AF_PACKET) modes, for MetaRoCE and RoCEv2, with every byte
 * verified by the receiver; faults, a mismatched configuration, a vanished peer and random
 * input. Each test creates and removes its own namespaces; without root they are skipped.
 */

#include "hil-test-util.h"

#include <csignal>
#include <gtest/gtest.h>
#include <thread>

namespace metaroce
{
namespace hil
{
namespace test
{
namespace
{

using std::chrono::milliseconds;

/// Longest a single program may run in these tests.
constexpr milliseconds RUN_LIMIT(30000);

class HilVethTest : public ::testing::Test
{
  protected:
    void SetUp() override
    {
        std::string why = NetnsPair::Unavailable();
        if (!why.empty())
        {
            GTEST_SKIP() << "HIL namespace tests skipped: " << why;
        }
        m_net = std::make_unique<NetnsPair>();
        ASSERT_TRUE(m_net->Ok()) << m_net->Why();
    }

    /// Start a server in namespace A with \p args.
    std::unique_ptr<Process> Server(std::vector<std::string> args,
                                    const std::string& bin = METAROCE_PERF_BIN)
    {
        args.insert(args.begin(), {bin, "--listen", "10.250.1.1"});
        return std::make_unique<Process>(InNetns(m_net->A(), args));
    }

    /// Start a client in namespace B against the server with \p args.
    std::unique_ptr<Process> Client(std::vector<std::string> args)
    {
        args.insert(args.begin(), {METAROCE_PERF_BIN, "10.250.1.1"});
        return std::make_unique<Process>(InNetns(m_net->B(), args));
    }

    /// Run a server and a client with the same settings and check that both pass.
    void RunPair(const std::vector<std::string>& common,
                 const std::vector<std::string>& serverOnly,
                 const std::vector<std::string>& clientOnly,
                 uint64_t expectMessages,
                 std::map<std::string, std::string>* clientResult = nullptr)
    {
        std::vector<std::string> s = common;
        s.insert(s.end(), serverOnly.begin(), serverOnly.end());
        std::vector<std::string> c = common;
        c.insert(c.end(), clientOnly.begin(), clientOnly.end());
        auto server = Server(s);
        auto client = Client(c);
        int clientStatus = client->Wait(RUN_LIMIT);
        int serverStatus = server->Wait(milliseconds(5000));
        std::string clientOut = client->Output();
        std::string serverOut = server->Output();
        auto cr = ParseResult(clientOut);
        auto sr = ParseResult(serverOut);
        EXPECT_EQ(clientStatus, 0) << "client:\n" << clientOut << "\nserver:\n" << serverOut;
        EXPECT_EQ(serverStatus, 0) << "server:\n" << serverOut;
        EXPECT_EQ(cr["status"], "PASS") << clientOut;
        EXPECT_EQ(sr["status"], "PASS") << serverOut;
        EXPECT_EQ(cr["verified"], std::to_string(expectMessages)) << clientOut;
        EXPECT_EQ(sr["verified"], std::to_string(expectMessages)) << serverOut;
        EXPECT_EQ(sr["errors"], "0") << serverOut;
        if (clientResult)
        {
            *clientResult = cr;
        }
    }

    std::unique_ptr<NetnsPair> m_net; //!< the namespaces
};

// Real to real, both modes, both transports, both operations: every byte verified.

TEST_F(HilVethTest, UdpMetaRoceWrite)
{
    RunPair({"--transport",
             "metaroce",
             "--op",
             "write",
             "--mtu",
             "4096",
             "--size",
             "64K",
             "--iters",
             "200"},
            {},
            {},
            200);
}

TEST_F(HilVethTest, UdpWithoutGso)
{
    // Datagram by datagram (sendmmsg of single datagrams, no GRO trains on receive).
    RunPair({"--transport",
             "rocev2",
             "--udp-gso",
             "off",
             "--mtu",
             "4096",
             "--size",
             "64K",
             "--iters",
             "200"},
            {},
            {},
            200);
}

TEST_F(HilVethTest, UdpRoceV2Send)
{
    RunPair({"--transport",
             "rocev2",
             "--op",
             "send",
             "--mtu",
             "4096",
             "--size",
             "16K",
             "--iters",
             "400"},
            {},
            {},
            400);
}

TEST_F(HilVethTest, RawMetaRoceSend)
{
    RunPair({"--transport",
             "metaroce",
             "--op",
             "send",
             "--mtu",
             "4096",
             "--size",
             "32K",
             "--iters",
             "200",
             "--port-mode",
             "raw",
             "--streams",
             "2"},
            {"--dev", "va"},
            {"--dev", "vb"},
            400);
}

TEST_F(HilVethTest, RawRoceV2Write)
{
    RunPair({"--transport",
             "rocev2",
             "--op",
             "write",
             "--mtu",
             "1024",
             "--size",
             "64K",
             "--iters",
             "200",
             "--port-mode",
             "raw"},
            {"--dev", "va"},
            {"--dev", "vb"},
            200);
}

// Raw mode through PACKET_MMAP rings: required (--raw-io ring and ring-v3 fail rather than
// falling back), jumbo frames that fill most of a TPACKET_V3 receive block, and a ring end
// talking to a socket-call end (the same bytes on the wire either way).

TEST_F(HilVethTest, RawRingsCarryJumboFramesToASocketPeer)
{
    auto server =
        Server({"--port-mode", "raw", "--dev", "va", "--raw-io", "ring-v3", "--mtu", "8192"});
    auto client = Client({"--port-mode",
                          "raw",
                          "--dev",
                          "vb",
                          "--raw-io",
                          "socket",
                          "--mtu",
                          "8192",
                          "--size",
                          "256K",
                          "--iters",
                          "100"});
    EXPECT_EQ(client->Wait(RUN_LIMIT), 0) << client->Output() << server->Output();
    EXPECT_EQ(server->Wait(milliseconds(5000)), 0) << server->Output();
    auto sr = ParseResult(server->Output());
    EXPECT_EQ(sr["status"], "PASS") << server->Output();
    EXPECT_EQ(sr["verified"], "100") << server->Output();
    EXPECT_EQ(sr["malformed"], "0") << server->Output();
    EXPECT_NE(server->Output().find("TPACKET_V3 rx"), std::string::npos) << server->Output();
    EXPECT_NE(client->Output().find("recvmmsg/sendmmsg"), std::string::npos) << client->Output();
}

TEST_F(HilVethTest, RawRingsSendFromTheRingPagesAndFromCopies)
{
    // On a veth the transmit ring has the kernel copy each frame into the packet
    // (--ring-tx-copy auto); "off" sends from the ring's pages, as on a NIC. Both ends of each
    // run use the same setting; every byte is verified, both transports.
    for (const char* copy : {"auto", "off"})
    {
        for (const char* transport : {"metaroce", "rocev2"})
        {
            const std::vector<std::string> common = {"--port-mode",
                                                     "raw",
                                                     "--raw-io",
                                                     "ring",
                                                     "--ring-tx-copy",
                                                     copy,
                                                     "--transport",
                                                     transport,
                                                     "--mtu",
                                                     "4096"};
            std::vector<std::string> s = common;
            s.insert(s.end(), {"--dev", "va"});
            std::vector<std::string> c = common;
            c.insert(c.end(), {"--dev", "vb", "--size", "64K", "--iters", "300"});
            auto server = Server(s);
            auto client = Client(c);
            EXPECT_EQ(client->Wait(RUN_LIMIT), 0) << client->Output() << server->Output();
            EXPECT_EQ(server->Wait(milliseconds(5000)), 0) << server->Output();
            auto sr = ParseResult(server->Output());
            EXPECT_EQ(sr["status"], "PASS") << copy << " " << transport << server->Output();
            EXPECT_EQ(sr["verified"], "300") << server->Output();
            EXPECT_EQ(sr["malformed"], "0") << server->Output();
            const bool copied = std::string(copy) == "auto";
            for (const std::string& out : {server->Output(), client->Output()})
            {
                EXPECT_NE(out.find("tx 32 slots"), std::string::npos) << out;
                EXPECT_EQ(out.find("(copied on send)") != std::string::npos, copied) << out;
            }
        }
    }
}

TEST_F(HilVethTest, RawRingsBothEndsSurviveRandomFrames)
{
    // A daemon on TPACKET_V2 rings serves a first client (its port opens with the first session),
    // takes a flood of random datagrams (which fill and turn its receive blocks), then serves a
    // ring client whose SEND test is verified on both ends.
    auto daemon = Server({"--port-mode", "raw", "--dev", "va", "--raw-io", "ring", "--mtu", "4096"},
                         METAROCE_HILD_BIN);
    ASSERT_TRUE(WaitForOutput(*daemon, "listening", milliseconds(10000))) << daemon->Output();
    auto first = Client({"--mtu", "4096", "--size", "16K", "--iters", "50"});
    EXPECT_EQ(first->Wait(RUN_LIMIT), 0) << first->Output() << daemon->Output();
    // That client is in UDP mode: it must not send this raw peer GSO trains, which the veth
    // hands over unsegmented, as oversized frames whose ICRC fails.
    ASSERT_TRUE(WaitForOutput(*daemon, "engine rx drops", milliseconds(5000))) << daemon->Output();
    EXPECT_NE(daemon->Output().find("bad_icrc 0,"), std::string::npos) << daemon->Output();
    std::string blastOutput;
    EXPECT_EQ(BlastRandomDatagrams(m_net->B(), 3000, 20000, 11, blastOutput), 0) << blastOutput;
    auto client = Client({"--port-mode",
                          "raw",
                          "--dev",
                          "vb",
                          "--raw-io",
                          "ring",
                          "--op",
                          "send",
                          "--mtu",
                          "4096",
                          "--size",
                          "32K",
                          "--iters",
                          "300"});
    EXPECT_EQ(client->Wait(RUN_LIMIT), 0) << client->Output() << daemon->Output();
    auto cr = ParseResult(client->Output());
    EXPECT_EQ(cr["status"], "PASS") << client->Output();
    EXPECT_EQ(cr["verified"], "300") << client->Output();
    EXPECT_NE(client->Output().find("TPACKET_V2 rx"), std::string::npos) << client->Output();
    daemon->Signal(SIGTERM);
    EXPECT_EQ(daemon->Wait(milliseconds(5000)), 0) << daemon->Output();
    std::string out = daemon->Output();
    EXPECT_NE(out.find("TPACKET_V2 rx"), std::string::npos) << out;
    EXPECT_NE(out.find("dropped a"), std::string::npos) << out; // the random datagrams
}

// The AF_XDP backend of the raw port on both ends (copy mode, generic XDP on the veth): the XDP
// program takes only the data port's datagrams, so the TCP control plane and ARP still reach
// the kernel; every byte verified. Skipped when the build has no AF_XDP support.
TEST_F(HilVethTest, RawXdpBothEnds)
{
#ifndef METAROCE_HIL_XDP_BUILT
    GTEST_SKIP() << "this build has no AF_XDP support (libxdp-dev, libbpf-dev, clang)";
#endif
    RunPair({"--port-mode",
             "raw",
             "--raw-io",
             "xdp",
             "--transport",
             "rocev2",
             "--mtu",
             "3072",
             "--size",
             "64K",
             "--iters",
             "300"},
            {"--dev", "va", "--log", "info"},
            {"--dev", "vb", "--log", "info"},
            300);
    // RunPair checked PASS, 300 verified on both ends, no errors; the backend was AF_XDP.
    auto server = Server({"--port-mode", "raw", "--raw-io", "xdp", "--dev", "va", "--mtu", "3072"});
    auto client = Client({"--port-mode",
                          "raw",
                          "--raw-io",
                          "xdp",
                          "--dev",
                          "vb",
                          "--mtu",
                          "3072",
                          "--op",
                          "send",
                          "--size",
                          "16K",
                          "--iters",
                          "200"});
    EXPECT_EQ(client->Wait(RUN_LIMIT), 0) << client->Output() << server->Output();
    EXPECT_EQ(server->Wait(milliseconds(5000)), 0) << server->Output();
    EXPECT_EQ(ParseResult(server->Output())["verified"], "200") << server->Output();
    EXPECT_NE(server->Output().find("AF_XDP copy mode"), std::string::npos) << server->Output();
    EXPECT_NE(client->Output().find("AF_XDP copy mode"), std::string::npos) << client->Output();
}

// The AF_XDP backend's other ways of attaching. Native (driver) XDP in copy mode on both ends:
// the veth takes only the xdp.frags entry point at this MTU, and every byte is verified.
// Zero-copy: a veth has no AF_XDP zero-copy, so the port refuses with the driver named as the
// reason (a kernel whose veth had it would pass instead), and no attempt leaves a program on the
// interface: a generic-XDP run on the same interfaces follows and passes.
TEST_F(HilVethTest, RawXdpNativeModeAndZeroCopyRefusedCleanly)
{
#ifndef METAROCE_HIL_XDP_BUILT
    GTEST_SKIP() << "this build has no AF_XDP support (libxdp-dev, libbpf-dev, clang)";
#endif
    auto args = [](const std::string& mode, const std::string& dev) {
        return std::vector<std::string>{"--port-mode",
                                        "raw",
                                        "--raw-io",
                                        "xdp",
                                        "--xdp-mode",
                                        mode,
                                        "--dev",
                                        dev,
                                        "--transport",
                                        "metaroce",
                                        "--mtu",
                                        "3584",
                                        "--size",
                                        "64K",
                                        "--iters",
                                        "200",
                                        "--log",
                                        "info"};
    };
    {
        auto server = Server(args("native", "va"));
        auto client = Client(args("native", "vb"));
        EXPECT_EQ(client->Wait(RUN_LIMIT), 0) << client->Output() << server->Output();
        EXPECT_EQ(server->Wait(milliseconds(5000)), 0) << server->Output();
        EXPECT_EQ(ParseResult(client->Output())["verified"], "200") << client->Output();
        EXPECT_EQ(ParseResult(server->Output())["verified"], "200") << server->Output();
        EXPECT_NE(server->Output().find("AF_XDP copy mode (native XDP"), std::string::npos)
            << server->Output();
        EXPECT_NE(client->Output().find("AF_XDP copy mode (native XDP"), std::string::npos)
            << client->Output();
    }
    {
        // A client asking for zero-copy against a generic-XDP server; then a generic-XDP client
        // on the same interface, served by the same server.
        auto server = Server(args("generic", "va"));
        auto refused = Client(args("zerocopy", "vb"));
        const int status = refused->Wait(RUN_LIMIT);
        const std::string out = refused->Output();
        if (out.find("AF_XDP zero-copy (native XDP") == std::string::npos)
        {
            EXPECT_EQ(status, 1) << out;
            EXPECT_NE(out.find("--xdp-mode zerocopy needs a driver with native XDP and AF_XDP "
                               "zero-copy"),
                      std::string::npos)
                << out;
        }
        auto client = Client(args("generic", "vb"));
        EXPECT_EQ(client->Wait(RUN_LIMIT), 0) << client->Output() << server->Output();
        EXPECT_EQ(server->Wait(milliseconds(5000)), 0) << server->Output();
        EXPECT_EQ(ParseResult(client->Output())["verified"], "200") << client->Output();
        EXPECT_NE(client->Output().find("AF_XDP copy mode (generic XDP)"), std::string::npos)
            << client->Output();
    }
}

TEST_F(HilVethTest, UdpMetaRoceMultipleConnectionsAndStreams)
{
    RunPair({"--mtu",
             "4096",
             "--size",
             "8K",
             "--iters",
             "100",
             "--qps",
             "2",
             "--streams",
             "3",
             "--depth",
             "16"},
            {},
            {},
            600);
}

// A 1% seeded loss on both directions: data still verified, retransmissions reported.

TEST_F(HilVethTest, MetaRoceRecoversFromOnePercentLoss)
{
    std::map<std::string, std::string> result;
    RunPair({"--mtu", "4096", "--size", "64K", "--iters", "200", "--loss", "0.01"},
            {},
            {},
            200,
            &result);
    EXPECT_GT(std::stoull(result["retx"]), 0u);
}

TEST_F(HilVethTest, RoceV2RecoversFromOnePercentLossInRawMode)
{
    std::map<std::string, std::string> result;
    RunPair({"--transport",
             "rocev2",
             "--mtu",
             "4096",
             "--size",
             "64K",
             "--iters",
             "100",
             "--loss",
             "0.01",
             "--port-mode",
             "raw"},
            {"--dev", "va"},
            {"--dev", "vb"},
            100,
            &result);
    EXPECT_GT(std::stoull(result["retx"]), 0u);
}

TEST_F(HilVethTest, RoceV2IrnRecoversFromOnePercentLoss)
{
    std::map<std::string, std::string> result;
    RunPair({"--transport",
             "rocev2",
             "--roce-recovery",
             "irn",
             "--mtu",
             "4096",
             "--size",
             "64K",
             "--iters",
             "100",
             "--loss",
             "0.01"},
            {},
            {},
            100,
            &result);
    EXPECT_GT(std::stoull(result["retx"]), 0u);
}

// The control plane rejects a mismatched configuration with a clear error on both sides.

TEST_F(HilVethTest, MismatchedConfigIsRejectedOnBothSides)
{
    auto server = Server({"--mtu", "4096", "--transport", "metaroce"});
    auto client = Client({"--mtu", "1024", "--transport", "metaroce", "--iters", "10"});
    EXPECT_EQ(client->Wait(RUN_LIMIT), 1);
    EXPECT_EQ(server->Wait(milliseconds(5000)), 1);
    std::string expected = "mtu: server 4096, client 1024";
    EXPECT_NE(client->Output().find(expected), std::string::npos) << client->Output();
    EXPECT_NE(server->Output().find(expected), std::string::npos) << server->Output();
    EXPECT_EQ(ParseResult(client->Output())["status"], "FAIL");
}

TEST_F(HilVethTest, MismatchedRoceRecoveryIsRejectedOnBothSides)
{
    auto server = Server({"--transport", "rocev2", "--roce-recovery", "irn"});
    auto client = Client({"--transport", "rocev2", "--iters", "10"});
    EXPECT_EQ(client->Wait(RUN_LIMIT), 1);
    EXPECT_EQ(server->Wait(milliseconds(5000)), 1);
    std::string expected = "rocev2 recovery: server irn, client gbn";
    EXPECT_NE(client->Output().find(expected), std::string::npos) << client->Output();
    EXPECT_NE(server->Output().find(expected), std::string::npos) << server->Output();
}

// The control plane has no authentication, so the daemon listens on loopback unless told
// otherwise (issue 19): a client in another namespace cannot reach it, and the daemon says why.

TEST_F(HilVethTest, TheControlListenerIsLoopbackByDefault)
{
    auto daemon = std::make_unique<Process>(InNetns(m_net->A(), {METAROCE_HILD_BIN}));
    ASSERT_TRUE(WaitForOutput(*daemon, "listening", milliseconds(10000))) << daemon->Output();
    EXPECT_NE(daemon->Output().find("listening on TCP 127.0.0.1:18515"), std::string::npos)
        << daemon->Output();
    EXPECT_NE(daemon->Output().find("loopback only: give --listen"), std::string::npos)
        << daemon->Output();
    auto client = Client({"--timeout", "1", "--iters", "10"});
    EXPECT_EQ(client->Wait(milliseconds(15000)), 1) << client->Output();
    daemon->Signal(SIGTERM);
    EXPECT_EQ(daemon->Wait(milliseconds(5000)), 0) << daemon->Output();
    EXPECT_EQ(daemon->Output().find("accepted client"), std::string::npos) << daemon->Output();
}

// A peer that accepts the control connection and then says nothing times out clearly.

TEST_F(HilVethTest, VanishedPeerTimesOut)
{
    // A TCP listener that accepts and stays silent, then a client with a 2 s timeout.
    auto silent = std::make_unique<Process>(
        InNetns(m_net->A(),
                {"python3",
                 "-c",
                 "import socket,time\n"
                 "s=socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)\n"
                 "s.bind(('0.0.0.0', 18515)); s.listen(1); print('ready', flush=True)\n"
                 "c,_=s.accept(); time.sleep(20)\n"}));
    // Start the client only once the listener is up: on a loaded machine the interpreter
    // can take longer to start than the client's 2 s connect budget.
    auto ready = std::chrono::steady_clock::now() + milliseconds(15000);
    while (silent->Output().find("ready") == std::string::npos &&
           std::chrono::steady_clock::now() < ready)
    {
        std::this_thread::sleep_for(milliseconds(50));
    }
    ASSERT_NE(silent->Output().find("ready"), std::string::npos) << "the listener never started";
    auto client = Client({"--timeout", "2", "--iters", "10"});
    auto start = std::chrono::steady_clock::now();
    EXPECT_EQ(client->Wait(milliseconds(15000)), 1) << client->Output();
    EXPECT_LT(std::chrono::steady_clock::now() - start, milliseconds(8000));
    EXPECT_NE(client->Output().find("vanished"), std::string::npos) << client->Output();
}

// Random datagrams and control bytes do not crash the daemon; it still serves a client and
// stops cleanly with a final report on SIGTERM.

TEST_F(HilVethTest, DaemonSurvivesRandomInputAndStopsOnSigterm)
{
    auto daemon = Server({"--mtu", "4096"}, METAROCE_HILD_BIN);
    std::this_thread::sleep_for(milliseconds(300));
    // Garbage on the control port first (the daemon creates its engine on the first
    // connection), then random datagrams at the data port.
    Process garbage(InNetns(m_net->B(),
                            {"bash",
                             "-c",
                             "head -c 3000 /dev/urandom > /dev/tcp/10.250.1.1/18515; "
                             "printf '\\0\\0\\0\\5hello' > /dev/tcp/10.250.1.1/18515"}));
    EXPECT_EQ(garbage.Wait(milliseconds(5000)), 0) << garbage.Output();
    std::string blastOutput;
    EXPECT_EQ(BlastRandomDatagrams(m_net->B(), 2000, 20000, 7, blastOutput), 0) << blastOutput;
    auto client = Client({"--mtu", "4096", "--size", "16K", "--iters", "100"});
    EXPECT_EQ(client->Wait(RUN_LIMIT), 0) << client->Output() << daemon->Output();
    EXPECT_EQ(ParseResult(client->Output())["status"], "PASS");
    daemon->Signal(SIGTERM);
    EXPECT_EQ(daemon->Wait(milliseconds(5000)), 0) << daemon->Output();
    std::string out = daemon->Output();
    EXPECT_NE(out.find("SIGTERM received"), std::string::npos) << out;
    EXPECT_NE(out.find("final: port"), std::string::npos) << out;
    EXPECT_NE(out.find("malformed control"), std::string::npos) << out;
    EXPECT_NE(out.find("dropped a"), std::string::npos) << out; // rate-limited datagram drops
}

// Two engine threads per side on the raw port, with rings and with socket calls: the shards'
// packet sockets form a PACKET_FANOUT group that steers each frame by its destination QPN,
// so each server thread receives its own session's frames and nothing else.

TEST_F(HilVethTest, RawPortWithTwoThreadsSteersFramesByQpn)
{
    for (const char* io : {"ring", "socket"})
    {
        SCOPED_TRACE(io);
        auto server =
            Server({"--port-mode", "raw", "--dev", "va", "--raw-io", io, "--threads", "2"});
        auto client = Client({"--port-mode",
                              "raw",
                              "--dev",
                              "vb",
                              "--raw-io",
                              io,
                              "--threads",
                              "2",
                              "--size",
                              "32K",
                              "--iters",
                              "200"});
        EXPECT_EQ(client->Wait(RUN_LIMIT), 0) << client->Output() << server->Output();
        EXPECT_EQ(server->Wait(milliseconds(5000)), 0) << server->Output();
        const std::string out = client->Output();
        EXPECT_NE(out.find("TOTAL role=client sessions=2 threads=2 status=PASS"), std::string::npos)
            << out;
        EXPECT_NE(out.find("msgs=400 bytes=" + std::to_string(400 * 32768)), std::string::npos)
            << out;
        const std::string srv = server->Output();
        for (int shard = 0; shard < 2; ++shard)
        {
            const size_t at = srv.find("(shard " + std::to_string(shard) + " of 2): tx ");
            ASSERT_NE(at, std::string::npos) << srv;
            const std::string line = srv.substr(at, srv.find('\n', at) - at);
            EXPECT_NE(line.find("unknown_connection 0,"), std::string::npos) << line;
            EXPECT_EQ(line.find(" rx 0 "), std::string::npos) << "an idle shard: " << line;
        }
    }
}

// The daemon with two engine threads: random datagrams reach both threads (steered by the
// QPN bytes they happen to hold) and crash neither; a client killed mid-transfer is reclaimed;
// a client with two sessions is verified; SIGTERM during a run stops every thread promptly.

TEST_F(HilVethTest, DaemonWithTwoThreadsSurvivesRandomInputAKilledClientAndSigterm)
{
    auto daemon = Server({"--mtu", "4096", "--threads", "2"}, METAROCE_HILD_BIN);
    ASSERT_TRUE(WaitForOutput(*daemon, "listening", milliseconds(10000))) << daemon->Output();
    // A first client creates the engines; it is killed mid-transfer.
    auto killed = Client({"--mtu", "4096", "--threads", "2", "--duration", "30"});
    ASSERT_TRUE(WaitForOutput(*killed, "accepted", milliseconds(10000))) << killed->Output();
    std::this_thread::sleep_for(milliseconds(500));
    killed->Signal(SIGKILL);
    killed->Wait(milliseconds(5000));
    std::string blastOutput;
    EXPECT_EQ(BlastRandomDatagrams(m_net->B(), 2000, 20000, 23, blastOutput), 0) << blastOutput;
    auto client = Client({"--mtu", "4096", "--threads", "2", "--size", "16K", "--iters", "100"});
    EXPECT_EQ(client->Wait(RUN_LIMIT), 0) << client->Output() << daemon->Output();
    EXPECT_NE(client->Output().find("TOTAL role=client sessions=2 threads=2 status=PASS"),
              std::string::npos)
        << client->Output();
    // A long run, interrupted by SIGTERM at the daemon.
    auto running = Client({"--mtu", "4096", "--threads", "2", "--duration", "30"});
    ASSERT_TRUE(WaitForOutput(*running, "accepted", milliseconds(10000))) << running->Output();
    std::this_thread::sleep_for(milliseconds(300));
    const auto stop = std::chrono::steady_clock::now();
    daemon->Signal(SIGTERM);
    EXPECT_EQ(daemon->Wait(milliseconds(5000)), 0) << daemon->Output();
    EXPECT_LT(std::chrono::steady_clock::now() - stop, milliseconds(3000));
    EXPECT_NE(running->Wait(milliseconds(15000)), -1) << "the client did not end";
    const std::string out = daemon->Output();
    EXPECT_NE(out.find("SIGTERM received"), std::string::npos) << out;
    // The killed client's two sessions ended and were reclaimed.
    size_t ended = 0;
    for (size_t at = out.find("ended (error)"); at != std::string::npos;
         at = out.find("ended (error)", at + 1))
    {
        ++ended;
    }
    EXPECT_GE(ended, 2u) << out;
    EXPECT_NE(out.find("final: port udp 10.250.1.1:4791 (shard 0 of 2)"), std::string::npos) << out;
    EXPECT_NE(out.find("final: port udp 10.250.1.1:4791 (shard 1 of 2)"), std::string::npos) << out;
}

} // namespace
} // namespace test
} // namespace hil
} // namespace metaroce
