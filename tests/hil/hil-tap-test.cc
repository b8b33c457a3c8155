/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

/**
 * \file
 * TAP devices: the daemon's TAP frame port (a routed TAP behind a veth pair, every byte
 * verified; the CAP_NET_ADMIN error without privileges), and mixed runs, where real
 * metaroce-perf daemons in two namespaces talk through metaroce-hil-fabric, a simulated
 * leaf-spine fabric in ns-3's real-time simulator with TAP devices as host ports. Each test
 * creates and removes its own namespaces; the namespace tests are skipped without root.
 */

#include "hil-test-util.h"

#include <chrono>
#include <csignal>
#include <gtest/gtest.h>
#include <unistd.h>

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
constexpr milliseconds RUN_LIMIT(40000);

/// Skip unless namespaces can be made; otherwise make a pair.
#define MAKE_NETNS(net)                                                                            \
    std::string why = NetnsPair::Unavailable();                                                    \
    if (!why.empty())                                                                              \
    {                                                                                              \
        GTEST_SKIP() << "HIL namespace tests skipped: " << why;                                    \
    }                                                                                              \
    NetnsPair net;                                                                                 \
    ASSERT_TRUE(net.Ok()) << net.Why()

/// \return the value of \p key in \p fields as a number (0 if absent).
uint64_t
Number(std::map<std::string, std::string>& fields, const std::string& key)
{
    return fields.count(key) ? std::stoull(fields[key]) : 0;
}

// Without CAP_NET_ADMIN the TAP port fails with a message that names the capability.
TEST(HilTapTest, UnprivilegedTapNamesCapability)
{
    std::vector<std::string> argv = {METAROCE_PERF_BIN,
                                     "--port-mode",
                                     "tap",
                                     "--dev",
                                     "mrtu" + std::to_string(getpid() % 100000),
                                     "--local-ip",
                                     "10.250.9.1",
                                     "--port",
                                     "18599"};
    if (geteuid() == 0)
    {
        if (RunQuiet("command -v setpriv") != 0)
        {
            GTEST_SKIP() << "setpriv (util-linux) is needed to drop root";
        }
        argv.insert(argv.begin(),
                    {"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--"});
    }
    Process perf(argv);
    int status = perf.Wait(milliseconds(10000));
    std::string out = perf.Output();
    EXPECT_EQ(status, 1) << out;
    EXPECT_NE(out.find("CAP_NET_ADMIN"), std::string::npos) << out;
}

// The daemon's engine behind a routed TAP device in namespace A; the client in B reaches it
// through A's kernel (veth, forwarding, TAP). Every byte verified, both transports.
class HilTapPortTest : public ::testing::TestWithParam<const char*>
{
};

TEST_P(HilTapPortTest, RoutedTapToUdp)
{
    MAKE_NETNS(net);
    ASSERT_EQ(RunQuiet("ip netns exec " + net.A() + " sysctl -w net.ipv4.ip_forward=1"), 0);
    ASSERT_EQ(RunQuiet("ip -n " + net.B() + " route add 10.250.3.0/24 via 10.250.1.1"), 0);
    std::vector<std::string> common = {"--transport",
                                       GetParam(),
                                       "--op",
                                       "write",
                                       "--mtu",
                                       "1024",
                                       "--size",
                                       "32K",
                                       "--iters",
                                       "300"};
    std::vector<std::string> s = {METAROCE_PERF_BIN,
                                  "--listen",
                                  "10.250.1.1",
                                  "--port-mode",
                                  "tap",
                                  "--dev",
                                  "mrt0",
                                  "--local-ip",
                                  "10.250.3.1",
                                  "--tap-addr",
                                  "10.250.3.254/24"};
    s.insert(s.end(), common.begin(), common.end());
    Process server(InNetns(net.A(), s));
    ASSERT_TRUE(WaitForOutput(server, "listening", milliseconds(5000))) << server.Output();
    std::vector<std::string> c = {METAROCE_PERF_BIN, "10.250.1.1"};
    c.insert(c.end(), common.begin(), common.end());
    Process client(InNetns(net.B(), c));
    int clientStatus = client.Wait(RUN_LIMIT);
    int serverStatus = server.Wait(milliseconds(5000));
    auto cr = ParseResult(client.Output());
    auto sr = ParseResult(server.Output());
    EXPECT_EQ(clientStatus, 0) << client.Output() << "\nserver:\n" << server.Output();
    EXPECT_EQ(serverStatus, 0) << server.Output();
    EXPECT_EQ(sr["status"], "PASS") << server.Output();
    EXPECT_EQ(sr["verified"], "300") << server.Output();
    EXPECT_EQ(sr["errors"], "0") << server.Output();
    EXPECT_NE(server.Output().find("port tap mrt0"), std::string::npos) << server.Output();
}

INSTANTIATE_TEST_SUITE_P(Transports,
                         HilTapPortTest,
                         ::testing::Values("metaroce", "rocev2"),
                         [](const auto& info) { return std::string(info.param); });

#ifdef METAROCE_HIL_FABRIC_BIN

/// A mixed run: metaroce-hil-fabric with TAP devices in namespaces A (10.0.0.1, leaf 0) and
/// B (10.0.1.1, leaf 1), a metaroce-perf server in A and a client in B.
struct MixedRun
{
    std::map<std::string, std::string> client; //!< client RESULT fields
    std::map<std::string, std::string> server; //!< server RESULT fields
    std::map<std::string, std::string> fabric; //!< fabric RESULT fields
    std::string clientOut;                     //!< outputs
    std::string serverOut;                     //!< ...
    std::string fabricOut;                     //!< ...
    int clientStatus{-1};                      //!< exit statuses
    int serverStatus{-1};                      //!< ...
    int fabricStatus{-1};                      //!< ...
};

MixedRun
RunMixed(const NetnsPair& net,
         const std::vector<std::string>& fabricArgs,
         const std::vector<std::string>& common,
         const std::string& portMode)
{
    MixedRun run;
    std::vector<std::string> f = {METAROCE_HIL_FABRIC_BIN,
                                  "--taps=" + net.A() + ":mrf0," + net.B() + ":mrf1"};
    f.insert(f.end(), fabricArgs.begin(), fabricArgs.end());
    Process fabric(f);
    if (!WaitForOutput(fabric, "fabric:", milliseconds(10000)))
    {
        run.fabricOut = fabric.Output();
        return run;
    }
    std::vector<std::string> s = {METAROCE_PERF_BIN,
                                  "--listen",
                                  "10.0.0.1",
                                  "--port-mode",
                                  portMode};
    std::vector<std::string> c = {METAROCE_PERF_BIN, "10.0.0.1", "--port-mode", portMode};
    if (portMode == "raw")
    {
        s.insert(s.end(), {"--dev", "mrf0"});
        c.insert(c.end(), {"--dev", "mrf1"});
    }
    s.insert(s.end(), common.begin(), common.end());
    c.insert(c.end(), common.begin(), common.end());
    Process server(InNetns(net.A(), s));
    WaitForOutput(server, "listening", milliseconds(5000));
    Process client(InNetns(net.B(), c));
    run.clientStatus = client.Wait(RUN_LIMIT);
    run.serverStatus = server.Wait(milliseconds(5000));
    fabric.Signal(SIGTERM);
    run.fabricStatus = fabric.Wait(milliseconds(5000));
    run.clientOut = client.Output();
    run.serverOut = server.Output();
    run.fabricOut = fabric.Output();
    run.client = ParseResult(run.clientOut);
    run.server = ParseResult(run.serverOut);
    run.fabric = ParseResult(run.fabricOut);
    return run;
}

// Real to real through the simulated fabric, raw frames on the TAP devices: every byte
// verified; the switches marked CE on real frames (a slow spine layer) and the marks reached
// the TAP.
TEST(HilMixedTest, RealToRealThroughFabricEcn)
{
    MAKE_NETNS(net);
    MixedRun run = RunMixed(net,
                            {"--fabricRate=300Mbps",
                             "--hostRate=10Gbps",
                             "--oversubscription=1000",
                             "--ecnKmin=5000",
                             "--ecnKmax=60000",
                             "--ecnPmax=1"},
                            {"--transport",
                             "metaroce",
                             "--op",
                             "write",
                             "--mtu",
                             "1024",
                             "--size",
                             "64K",
                             "--iters",
                             "300",
                             "--paths",
                             "4"},
                            "raw");
    std::string all =
        "client:\n" + run.clientOut + "\nserver:\n" + run.serverOut + "\nfabric:\n" + run.fabricOut;
    EXPECT_EQ(run.clientStatus, 0) << all;
    EXPECT_EQ(run.serverStatus, 0) << all;
    EXPECT_EQ(run.fabricStatus, 0) << all;
    EXPECT_EQ(run.server["status"], "PASS") << all;
    EXPECT_EQ(run.server["verified"], "300") << all;
    EXPECT_EQ(run.server["errors"], "0") << all;
    EXPECT_GT(Number(run.fabric, "ecn_marked"), 0U) << all;
    // The marked frames reached the receiver's TAP with CE in their IPv4 header.
    EXPECT_GT(Number(run.fabric, "tap_ce"), 0U) << all;
}

// Real to real through the simulated fabric with 1% loss on every leaf-spine link and one of
// the two spine links of the server's leaf failing during the transfer: data verified,
// retransmissions reported.
TEST(HilMixedTest, RealToRealThroughLossyFabricWithFailedPath)
{
    MAKE_NETNS(net);
    MixedRun run = RunMixed(net,
                            {"--loss=0.01", "--failLink=0:0:2"},
                            {"--transport",
                             "metaroce",
                             "--op",
                             "write",
                             "--mtu",
                             "1024",
                             "--size",
                             "64K",
                             "--iters",
                             "100000",
                             "--duration",
                             "4"},
                            "udp");
    std::string all =
        "client:\n" + run.clientOut + "\nserver:\n" + run.serverOut + "\nfabric:\n" + run.fabricOut;
    EXPECT_EQ(run.clientStatus, 0) << all;
    EXPECT_EQ(run.serverStatus, 0) << all;
    EXPECT_EQ(run.fabricStatus, 0) << all;
    EXPECT_EQ(run.client["status"], "PASS") << all;
    EXPECT_EQ(run.server["status"], "PASS") << all;
    EXPECT_EQ(run.server["errors"], "0") << all;
    EXPECT_GT(Number(run.server, "msgs"), 0U) << all;
    EXPECT_EQ(run.client["verified"], run.server["verified"]) << all;
    EXPECT_GT(Number(run.client, "retx"), 0U) << all;
    EXPECT_GT(Number(run.fabric, "device_drops"), 0U) << all;
    // The transfer was using the link when it failed.
    EXPECT_GT(Number(run.fabric, "failed_link_frames"), 0U) << all;
}

// A real metaroce-perf client talks to a simulated host: the client (namespace B, TAP mrf0 =
// host 10.0.0.1 under leaf 0) runs a WRITE test on raw frames and a SEND test in UDP mode
// against host 10.0.1.1 under leaf 1, whose engine is a MetaRoceNic in the simulation and whose
// control plane reaches the fabric program's server through a control TAP in namespace A.
// Every byte is verified twice: by the client's completions and the verdict it receives, and
// by the simulated host's check of its registered buffer (the fabric's summary). A client with
// settings the host cannot serve is rejected with the reason.
TEST(HilMixedTest, RealClientToSimulatedHost)
{
    MAKE_NETNS(net);
    const auto started = std::chrono::steady_clock::now();
    Process fabric({METAROCE_HIL_FABRIC_BIN,
                    "--taps=" + net.B() + ":mrf0",
                    "--simHosts=" + net.A() + ":mrc0",
                    "--simTimeout=3"});
    ASSERT_TRUE(WaitForOutput(fabric, "fabric:", milliseconds(10000))) << fabric.Output();
    const std::vector<std::string> common =
        {METAROCE_PERF_BIN, "10.0.1.1", "--size", "64K", "--iters", "300", "--paths", "4"};
    auto runClient = [&](const std::vector<std::string>& extra, std::string& out) {
        std::vector<std::string> argv = common;
        argv.insert(argv.end(), extra.begin(), extra.end());
        Process client(InNetns(net.B(), argv));
        int status = client.Wait(milliseconds(8000));
        out = client.Output();
        return status;
    };
    std::string writeOut;
    std::string sendOut;
    std::string rejectOut;
    const int writeStatus =
        runClient({"--op", "write", "--port-mode", "raw", "--dev", "mrf0"}, writeOut);
    const int sendStatus = runClient({"--op", "send"}, sendOut);
    const int rejectStatus = runClient({"--no-icrc"}, rejectOut);
    fabric.Signal(SIGTERM);
    const int fabricStatus = fabric.Wait(milliseconds(5000));
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    const std::string fabricOut = fabric.Output();
    std::string all = "write client:\n" + writeOut + "\nsend client:\n" + sendOut +
                      "\nrejected client:\n" + rejectOut + "\nfabric:\n" + fabricOut;
    auto writeResult = ParseResult(writeOut);
    auto sendResult = ParseResult(sendOut);
    auto fabricResult = ParseResult(fabricOut);
    // The real side: completions and the simulated receiver's verdict.
    EXPECT_EQ(writeStatus, 0) << all;
    EXPECT_EQ(writeResult["status"], "PASS") << all;
    EXPECT_EQ(writeResult["verified"], "300") << all;
    EXPECT_EQ(sendStatus, 0) << all;
    EXPECT_EQ(sendResult["status"], "PASS") << all;
    EXPECT_EQ(sendResult["verified"], "300") << all;
    EXPECT_EQ(rejectStatus, 1) << all;
    EXPECT_NE(rejectOut.find("rejected the session"), std::string::npos) << all;
    EXPECT_NE(rejectOut.find("ICRC"), std::string::npos) << all;
    // The simulated side: its buffer checked against the pattern, message by message.
    EXPECT_EQ(fabricStatus, 0) << all;
    EXPECT_EQ(fabricResult["sim_sessions"], "2") << all;
    EXPECT_EQ(fabricResult["sim_passed"], "2") << all;
    EXPECT_EQ(fabricResult["sim_failed"], "0") << all;
    EXPECT_EQ(fabricResult["sim_errors"], "0") << all;
    EXPECT_EQ(fabricResult["sim_verified_msgs"], "600") << all;
    EXPECT_EQ(Number(fabricResult, "sim_verified_bytes"), 600U * 65536) << all;
    EXPECT_NE(fabricOut.find("rejected 1;"), std::string::npos) << all;
    // The data crossed the simulated fabric (RoCE frames to and from the client's TAP).
    EXPECT_GT(Number(fabricResult, "tap_bytes"), 0U) << all;
    EXPECT_LT(seconds, 20.0) << all;
}

// --slowdown K runs the fabric K times slower (rates / K, delays x K) and the summary says
// whether the simulation kept up with the wall clock, with the largest lag and the frames the
// TAP devices queued; with a bound no event can meet, the run says it fell behind, and with
// --failBehind exits 3.
TEST(HilMixedTest, SlowdownAndTheLagReport)
{
    MAKE_NETNS(net);
    auto run = [&](const std::vector<std::string>& extra, std::string& clientOut) {
        std::vector<std::string> argv = {METAROCE_HIL_FABRIC_BIN,
                                         "--taps=" + net.B() + ":mrf0",
                                         "--simHosts=" + net.A() + ":mrc0",
                                         "--simTimeout=3"};
        argv.insert(argv.end(), extra.begin(), extra.end());
        Process fabric(argv);
        if (!WaitForOutput(fabric, "fabric:", milliseconds(10000)))
        {
            return std::make_pair(-2, fabric.Output());
        }
        Process client(InNetns(net.B(),
                               {METAROCE_PERF_BIN,
                                "10.0.1.1",
                                "--port-mode",
                                "raw",
                                "--dev",
                                "mrf0",
                                "--mtu",
                                "4096",
                                "--size",
                                "64K",
                                "--iters",
                                "100"}));
        EXPECT_EQ(client.Wait(milliseconds(15000)), 0) << client.Output() << fabric.Output();
        clientOut = client.Output();
        fabric.Signal(SIGTERM);
        const int status = fabric.Wait(milliseconds(5000));
        return std::make_pair(status, fabric.Output());
    };
    std::string clientOut;
    auto slowed = run({"--slowdown=4", "--maxLagMs=5000", "--lag-ecn-us=0"}, clientOut);
    auto result = ParseResult(slowed.second);
    EXPECT_EQ(slowed.first, 0) << slowed.second;
    EXPECT_EQ(ParseResult(clientOut)["status"], "PASS") << clientOut;
    EXPECT_NE(slowed.second.find("host 2.5 Gbps, fabric 2.5 Gbps, delay 4 us"), std::string::npos)
        << slowed.second;
    EXPECT_EQ(result["slowdown"], "4") << slowed.second;
    EXPECT_EQ(result["sim_verified_msgs"], "100") << slowed.second;
    EXPECT_EQ(result["fell_behind"], "0") << slowed.second;
    EXPECT_EQ(result["lag_over_bound"], "0") << slowed.second;
    EXPECT_EQ(result["lag_ce"], "0") << "marks for the lag are off" << slowed.second;
    EXPECT_TRUE(result.count("queued_max")) << slowed.second;
    EXPECT_LE(std::stod(result["lag_max_us"]), 5e6) << slowed.second;
    EXPECT_NE(slowed.second.find("real time: kept up: largest lag"), std::string::npos)
        << slowed.second;

    // Behind by more than 1 ns at every frame: the fabric marks every data frame from the TAP
    // CE for the lag (--lag-ecn-us), the frames stay valid (the ICRC skips the ECN bits), and
    // the simulated receiver echoes the marks to the real sender.
    auto behind = run({"--maxLagMs=0.001", "--failBehind=true", "--lag-ecn-us=0.001"}, clientOut);
    result = ParseResult(behind.second);
    EXPECT_EQ(behind.first, 3) << behind.second;
    EXPECT_GT(Number(result, "lag_ce"), 0U) << behind.second;
    EXPECT_EQ(result["sim_errors"], "0") << behind.second;
    EXPECT_EQ(ParseResult(clientOut)["status"], "PASS") << clientOut;
    EXPECT_GT(std::stoull(ParseResult(clientOut)["ecn_echoes"]), 0U) << clientOut;
    EXPECT_EQ(result["fell_behind"], "1") << behind.second;
    EXPECT_GT(Number(result, "lag_over_bound"), 0U) << behind.second;
    EXPECT_NE(behind.second.find("real time: FELL BEHIND"), std::string::npos) << behind.second;
    EXPECT_NE(behind.second.find("rerun with --slowdown=2"), std::string::npos) << behind.second;
}

// Bad --sim-hosts entries (or --simHosts, the deprecated spelling) are usage errors with a
// reason, before anything is created.
TEST(HilMixedTest, SimHostsUsageErrors)
{
    struct Case
    {
        std::string arg; //!< after --taps=x:t0
        std::string why; //!< in the message
    };

    for (const Case& c : {Case{"--simHosts=noColon", "for --simHosts: expected NETNS:NAME"},
                          Case{"--sim-hosts=:c0", "for --sim-hosts: expected NETNS:NAME"},
                          Case{"--sim-hosts=x:c0", "--sim-hosts namespace 'x' holds a --taps"},
                          Case{"--simHosts=y:c0,z:c1,w:c2,v:c3", "more --taps and --sim-hosts"},
                          Case{"--slowdown=0.5", "for --slowdown: expected a number in 1..1000"},
                          Case{"--slowdown=2000", "for --slowdown: expected a number in 1..1000"},
                          Case{"--maxLagMs=0", "for --maxLagMs: expected a number > 0"},
                          Case{"--max-lag-ms=70000", "for --max-lag-ms: expected a number > 0"}})
    {
        Process fabric({METAROCE_HIL_FABRIC_BIN, "--taps=x:t0", c.arg});
        EXPECT_EQ(fabric.Wait(milliseconds(10000)), 64) << c.arg << ":\n" << fabric.Output();
        EXPECT_NE(fabric.Output().find(c.why), std::string::npos) << c.arg << ":\n"
                                                                  << fabric.Output();
    }
}

#endif // METAROCE_HIL_FABRIC_BIN

} // namespace
} // namespace test
} // namespace hil
} // namespace metaroce
