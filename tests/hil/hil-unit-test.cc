/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

/**
 * \file
 * HIL pieces that need no privileges: the seeded fault model, the pcap writer, the settings
 * comparison of the control plane, MAC helpers, and a whole metaroce-perf run on loopback in
 * UDP mode (the unprivileged mode).
 */

#include "hil-test-util.h"
#include "metaroce-encap.h"
#include "metaroce-endpoint.h"
#include "metaroce-hil-backlog-ecn.h"
#include "metaroce-hil-control.h"
#include "metaroce-hil-fault-port.h"
#include "metaroce-hil-lag.h"
#include "metaroce-hil-packet-ring.h"
#include "metaroce-hil-pcap.h"
#include "metaroce-hil-perf.h"
#include "metaroce-hil-raw-port.h"
#include "metaroce-hil-timers.h"
#include "metaroce-hil-udp-port.h"
#include "metaroce-wire.h"

#include <csignal>
#include <cstdio>
#include <fstream>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <thread>
#include <unistd.h>

namespace metaroce
{
namespace hil
{
namespace test
{
namespace
{

TEST(HilFaultModel, SameSeedSameDecisions)
{
    FaultConfig cfg;
    cfg.loss = 0.1;
    cfg.duplicate = 0.05;
    cfg.reorder = 0.05;
    cfg.burstStart = 0.01;
    cfg.seed = 42;
    FaultModel a(cfg);
    FaultModel b(cfg);
    for (int i = 0; i < 10000; ++i)
    {
        auto da = a.Decide();
        auto db = b.Decide();
        ASSERT_EQ(da.drop, db.drop);
        ASSERT_EQ(da.duplicate, db.duplicate);
        ASSERT_EQ(da.reorder, db.reorder);
    }
}

TEST(HilFaultModel, RatesMatchTheConfiguration)
{
    FaultConfig cfg;
    cfg.loss = 0.01;
    cfg.duplicate = 0.02;
    cfg.reorder = 0.03;
    FaultModel m(cfg);
    int drops = 0;
    int dups = 0;
    int reorders = 0;
    constexpr int N = 200000;
    for (int i = 0; i < N; ++i)
    {
        auto d = m.Decide();
        drops += d.drop;
        dups += d.duplicate;
        reorders += d.reorder;
    }
    EXPECT_NEAR(double(drops) / N, 0.01, 0.002);
    EXPECT_NEAR(double(dups) / N, 0.02, 0.003);
    EXPECT_NEAR(double(reorders) / N, 0.03, 0.003);
}

TEST(HilFaultModel, GilbertElliottDropsComeInBursts)
{
    FaultConfig cfg;
    cfg.burstStart = 0.001; // mean good run 1000 datagrams
    cfg.burstEnd = 0.2;     // mean burst 5 datagrams
    FaultModel m(cfg);
    int drops = 0;
    int runs = 0;
    bool previous = false;
    for (int i = 0; i < 200000; ++i)
    {
        bool drop = m.Decide().drop;
        drops += drop;
        runs += drop && !previous;
        previous = drop;
    }
    ASSERT_GT(runs, 0);
    EXPECT_NEAR(double(drops) / runs, 5.0, 1.0); // mean burst length 1 / burstEnd
}

TEST(HilFaultModel, ValidateRejectsBadProbabilities)
{
    FaultConfig cfg;
    cfg.loss = 1.5;
    std::string why;
    EXPECT_FALSE(cfg.Validate(why));
    EXPECT_NE(why.find("loss"), std::string::npos);
}

TEST(HilPcap, WritesNanosecondEthernetFramesThatParse)
{
    std::string path = "/tmp/metaroce-hil-pcap-test-" + std::to_string(getpid()) + ".pcap";
    {
        std::string error;
        auto w = PcapWriter::Open(path, error);
        ASSERT_TRUE(w) << error;
        DatagramMeta meta;
        meta.srcIp = 0x0afa0101;
        meta.dstIp = 0x0afa0102;
        meta.srcPort = 50000;
        meta.ecn = Ecn::CE;
        uint8_t datagram[100];
        for (int i = 0; i < 100; ++i)
        {
            datagram[i] = uint8_t(i);
        }
        w->WriteDatagram(1700000000123456789,
                         SyntheticMac(meta.srcIp),
                         SyntheticMac(meta.dstIp),
                         meta,
                         datagram,
                         sizeof(datagram));
        EXPECT_EQ(w->Frames(), 1u);
    }
    std::ifstream in(path, std::ios::binary);
    std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)),
                               std::istreambuf_iterator<char>());
    std::remove(path.c_str());
    ASSERT_EQ(bytes.size(), 24u + 16u + FRAME_HEADERS_SIZE + 100u);
    uint32_t magic;
    uint32_t linkType;
    uint32_t sec;
    uint32_t nsec;
    uint32_t caplen;
    std::memcpy(&magic, &bytes[0], 4);
    std::memcpy(&linkType, &bytes[20], 4);
    std::memcpy(&sec, &bytes[24], 4);
    std::memcpy(&nsec, &bytes[28], 4);
    std::memcpy(&caplen, &bytes[32], 4);
    EXPECT_EQ(magic, 0xa1b23c4du);
    EXPECT_EQ(linkType, 1u);
    EXPECT_EQ(sec, 1700000000u);
    EXPECT_EQ(nsec, 123456789u);
    EXPECT_EQ(caplen, FRAME_HEADERS_SIZE + 100);
    ParsedFrame frame;
    ASSERT_EQ(ParseFrame(&bytes[40], caplen, frame), FrameStatus::OK);
    EXPECT_EQ(frame.meta.srcPort, 50000);
    EXPECT_EQ(frame.meta.ecn, Ecn::CE);
    EXPECT_EQ(frame.datagramLen, 100u);
    EXPECT_EQ(frame.datagram[99], 99);
}

TEST(HilControl, CompareSettingsNamesEveryDifference)
{
    ConnectionConfig a;
    ConnectionConfig b;
    b.transport = "rocev2";
    b.mtu = 1024;
    std::string diff =
        CompareSettings(SettingsOf(a, true), SettingsOf(b, true), "server", "client");
    EXPECT_NE(diff.find("transport: server metaroce, client rocev2"), std::string::npos) << diff;
    EXPECT_NE(diff.find("mtu: server 4096, client 1024"), std::string::npos) << diff;
    EXPECT_EQ(CompareSettings(SettingsOf(a, true), SettingsOf(a, true), "server", "client"), "");
}

// ApplySettings() is SettingsOf() backwards, RoCEv2's one path included; bad settings leave
// the configuration alone.
TEST(HilControl, ApplySettingsInvertsSettingsOf)
{
    ConnectionConfig sent;
    sent.transport = "rocev2";
    sent.mtu = 1024;
    sent.numPaths = 8;
    sent.maxOutstandingWrs = 333;
    sent.maxMessageSize = 1u << 20;
    sent.maxStreams = 3;
    sent.maxPostedRecvs = 77;
    sent.rocev2.recovery = "irn";
    ConnectionConfig got;
    got.rtoMin = sent.rtoMin * 3; // not carried: kept
    const auto rtoMin = got.rtoMin;
    ASSERT_EQ(ApplySettings(SettingsOf(sent, true), got), "");
    EXPECT_EQ(got.transport, "rocev2");
    EXPECT_EQ(got.numPaths, 1u);
    EXPECT_EQ(got.rocev2.recovery, "irn");
    EXPECT_EQ(got.rtoMin, rtoMin);
    EXPECT_EQ(CompareSettings(SettingsOf(sent, true), SettingsOf(got, true), "a", "b"), "");

    proto::ConnectionSettings bad = SettingsOf(sent, true);
    bad.set_rocev2_recovery("sack");
    ConnectionConfig untouched;
    EXPECT_EQ(ApplySettings(bad, untouched), "rocev2 recovery 'sack': expected gbn or irn");
    EXPECT_EQ(untouched.transport, ConnectionConfig().transport);
    bad = SettingsOf(sent, true);
    bad.set_transport("tcp");
    EXPECT_EQ(ApplySettings(bad, untouched), "transport 'tcp': expected metaroce or rocev2");
    bad = SettingsOf(sent, true);
    bad.set_max_streams(70000);
    EXPECT_EQ(ApplySettings(bad, untouched), "bad max_streams 70000");
    // The transport fields are the shared mapping's (ApplyTransportSettings()): its limits and
    // messages, for a MetaRoCE peer as for a scenario.
    bad = SettingsOf(ConnectionConfig(), true);
    bad.set_mtu(1022);
    EXPECT_EQ(ApplySettings(bad, untouched), "mtu 1022: must be a multiple of 4 in [64, 65536]");
    bad = SettingsOf(ConnectionConfig(), true);
    bad.set_num_paths(0);
    EXPECT_EQ(ApplySettings(bad, untouched), "paths 0: must be in [1, 128]");
    bad.set_num_paths(200);
    EXPECT_EQ(ApplySettings(bad, untouched), "paths 200: must be in [1, 128]");
    bad.set_num_paths(4);
    bad.set_rocev2_recovery("sack"); // MetaRoCE: not RoCEv2's field, not read
    ASSERT_EQ(ApplySettings(bad, untouched), "");
    EXPECT_EQ(untouched.numPaths, 4u);
    EXPECT_EQ(untouched.rocev2.recovery, "gbn");
}

TEST(HilFramePort, MacHelpers)
{
    MacAddress mac;
    ASSERT_TRUE(ParseMac("02:00:0a:fa:01:02", mac));
    EXPECT_EQ(MacToString(mac), "02:00:0a:fa:01:02");
    EXPECT_TRUE(SyntheticMac(0x0afa0102) == mac);
    EXPECT_FALSE(ParseMac("02:00:0a:fa:01", mac));
    EXPECT_FALSE(ParseMac("02:00:0a:fa:01:02:03", mac));
}

// The unprivileged mode end to end: two processes on 127.0.0.1, distinct data and control
// ports, no namespaces, no root.
TEST(HilPacketRing, RefusesASocketThatIsNotAPacketSocket)
{
    // The rings belong to AF_PACKET sockets: anything else fails with the call that refused.
    int fd = socket(AF_INET, SOCK_DGRAM, 0);
    ASSERT_GE(fd, 0);
    std::string error;
    EXPECT_EQ(PacketRing::Map(fd, PacketRingConfig(), error), nullptr);
    EXPECT_NE(error.find("PACKET_VERSION"), std::string::npos) << error;
    close(fd);
    PacketRingConfig zero;
    zero.retireTimeoutMs = 0;
    EXPECT_EQ(PacketRing::Map(-1, zero, error), nullptr);
    EXPECT_NE(error.find("bad sizes"), std::string::npos) << error;
}

TEST(HilPacketRing, RawIoOptions)
{
    RawIoMode mode = RawIoMode::SOCKET;
    EXPECT_TRUE(ParseRawIoMode("ring", mode));
    EXPECT_EQ(mode, RawIoMode::RING);
    EXPECT_TRUE(ParseRawIoMode("ring-v3", mode));
    EXPECT_EQ(mode, RawIoMode::RING_V3);
    EXPECT_TRUE(ParseRawIoMode("xdp", mode));
    EXPECT_EQ(mode, RawIoMode::XDP);
    EXPECT_TRUE(ParseRawIoMode("auto", mode));
    EXPECT_EQ(mode, RawIoMode::AUTO);
    EXPECT_TRUE(ParseRawIoMode("socket", mode));
    EXPECT_EQ(mode, RawIoMode::SOCKET);
    EXPECT_FALSE(ParseRawIoMode("mmap", mode));
    for (XdpMode m : {XdpMode::AUTO, XdpMode::ZEROCOPY, XdpMode::NATIVE, XdpMode::GENERIC})
    {
        XdpMode parsed = m == XdpMode::AUTO ? XdpMode::GENERIC : XdpMode::AUTO;
        EXPECT_TRUE(ParseXdpMode(XdpModeName(m), parsed)) << XdpModeName(m);
        EXPECT_EQ(parsed, m);
    }
    XdpMode xdp = XdpMode::NATIVE;
    EXPECT_FALSE(ParseXdpMode("drv", xdp));
    EXPECT_FALSE(ParseXdpMode("", xdp));
    EXPECT_EQ(xdp, XdpMode::NATIVE);
    RingTxCopy copy = RingTxCopy::AUTO;
    for (const auto& [text, want] :
         std::vector<std::pair<std::string, RingTxCopy>>{{"on", RingTxCopy::ON},
                                                         {"off", RingTxCopy::OFF},
                                                         {"auto", RingTxCopy::AUTO}})
    {
        EXPECT_TRUE(ParseRingTxCopy(text, copy)) << text;
        EXPECT_EQ(copy, want) << text;
    }
    EXPECT_FALSE(ParseRingTxCopy("yes", copy));
    EXPECT_EQ(copy, RingTxCopy::AUTO);
    PerfOptions opts;
    std::string error;
    EXPECT_TRUE(
        ParsePerfOptions({"--raw-io", "ring-v3", "--ring-retire-ms", "4", "--ring-tx-copy", "off"},
                         false,
                         opts,
                         error))
        << error;
    EXPECT_EQ(opts.rawIo, "ring-v3");
    EXPECT_EQ(opts.ringRetireMs, 4u);
    EXPECT_EQ(opts.ringTxCopy, "off");
    for (const auto& bad : std::vector<std::vector<std::string>>{{"--raw-io", "mmap"},
                                                                 {"--ring-retire-ms", "0"},
                                                                 {"--ring-retire-ms", "101"},
                                                                 {"--ring-tx-copy", "yes"}})
    {
        PerfOptions o;
        EXPECT_FALSE(ParsePerfOptions(bad, false, o, error)) << bad[0] << " " << bad[1];
        EXPECT_NE(error.find(bad[1]), std::string::npos) << error;
    }
}

TEST(HilLagMonitor, KeepsUpWithinTheBound)
{
    LagMonitor lag(10000, 1000);
    lag.Record(0.01, 100, 0);
    lag.Record(0.02, 9000, 12);
    lag.Record(0.03, 500, 3);
    EXPECT_FALSE(lag.FellBehind());
    const LagMonitor::Report r = lag.GetReport();
    EXPECT_EQ(r.observations, 3u);
    EXPECT_DOUBLE_EQ(r.maxLagUs, 9000);
    EXPECT_DOUBLE_EQ(r.meanLagUs, 3200);
    EXPECT_EQ(r.maxQueued, 12u);
    EXPECT_EQ(r.overBound, 0u);
    EXPECT_DOUBLE_EQ(r.firstOverS, -1);
    const std::string verdict = lag.Verdict(1);
    EXPECT_EQ(verdict.rfind("kept up: largest lag 9.000 ms (bound 10.000 ms)", 0), 0u) << verdict;
    EXPECT_NE(verdict.find("at most 12 frames queued of 1000"), std::string::npos) << verdict;
}

TEST(HilLagMonitor, SaysWhenAndHowFarTheRunFellBehind)
{
    LagMonitor lag(1000, 1000);
    lag.Record(0.5, 200, 0);
    lag.Record(1.25, 45000, 300);
    lag.Record(1.5, 2000, 10);
    EXPECT_TRUE(lag.FellBehind());
    EXPECT_FALSE(lag.QueueFilled());
    EXPECT_EQ(lag.GetReport().overBound, 2u);
    EXPECT_DOUBLE_EQ(lag.GetReport().firstOverS, 1.25);
    const std::string verdict = lag.Verdict(4);
    EXPECT_EQ(verdict.rfind("FELL BEHIND: the simulation ran up to 45.000 ms", 0), 0u) << verdict;
    EXPECT_NE(verdict.find("in 2 of 3 events, first at 1.250 s simulated"), std::string::npos)
        << verdict;
    EXPECT_NE(verdict.find("--slowdown=8"), std::string::npos) << verdict;
    // A full TAP queue is falling behind even when every event was on time.
    LagMonitor full(1000, 100);
    full.Record(0.1, 10, 100);
    EXPECT_TRUE(full.FellBehind());
    EXPECT_TRUE(full.QueueFilled());
    EXPECT_NE(full.Verdict(1).find("the TAP device dropped frames"), std::string::npos);
}

TEST(HilHostDelay, RemembersAStallForHalfToOneWindow)
{
    HostDelayEstimator e(MilliSeconds(1000)); // buckets of 500 ms
    EXPECT_EQ(e.Estimate(0), 0);
    e.AddSample(MilliSeconds(100), MicroSeconds(50));
    e.AddSample(MilliSeconds(200), MicroSeconds(3000)); // a 3 ms stall
    e.AddSample(MilliSeconds(300), -7);                 // early counts as 0
    EXPECT_EQ(e.Estimate(MilliSeconds(300)), MicroSeconds(3000));
    e.AddSample(MilliSeconds(600), MicroSeconds(40)); // the next bucket still sees it
    EXPECT_EQ(e.Estimate(MilliSeconds(900)), MicroSeconds(3000));
    EXPECT_EQ(e.Estimate(MilliSeconds(1100)), MicroSeconds(40)) << "the stall's bucket is gone";
    e.AddSample(MilliSeconds(1200), MicroSeconds(20));
    EXPECT_EQ(e.Estimate(MilliSeconds(1200)), MicroSeconds(40));
    EXPECT_EQ(e.Estimate(MilliSeconds(2600)), 0) << "nothing measured for over a window";
    e.AddSample(MilliSeconds(5000), MicroSeconds(10)); // after a gap, nothing older counts
    EXPECT_EQ(e.Estimate(MilliSeconds(5000)), MicroSeconds(10));
    EXPECT_EQ(e.Largest(), MicroSeconds(3000));
    EXPECT_EQ(e.Samples(), 6u);
}

TEST(HilHostDelay, EachPeersLatestReportCountsUntilItExpires)
{
    PeerHostDelays d(MilliSeconds(4000));
    int p1 = 0;
    int p2 = 0;
    EXPECT_EQ(d.Estimate(0), 0);
    d.Set(&p1, MilliSeconds(100), MicroSeconds(3000));
    d.Set(&p2, MilliSeconds(200), MicroSeconds(500));
    EXPECT_EQ(d.Estimate(MilliSeconds(300)), MicroSeconds(3000)) << "the largest peer";
    d.Set(&p1, MilliSeconds(400), MicroSeconds(200)); // p1's delay fell: believed at once
    EXPECT_EQ(d.Estimate(MilliSeconds(500)), MicroSeconds(500));
    d.Set(&p2, MilliSeconds(600), -1); // negative counts as 0
    EXPECT_EQ(d.Estimate(MilliSeconds(700)), MicroSeconds(200));
    EXPECT_EQ(d.Estimate(MilliSeconds(4400)), 0) << "p1's report expired, p2's is 0";
    d.Set(&p1, MilliSeconds(5000), MicroSeconds(800));
    d.Forget(&p1);
    EXPECT_EQ(d.Estimate(MilliSeconds(5000)), 0) << "a forgotten peer counts no more";
    EXPECT_EQ(d.Largest(), MicroSeconds(3000));
    EXPECT_EQ(d.Reports(), 5u);
}

/// Two started control channels a and b, connected over loopback TCP.
class HilChannelPair : public ::testing::Test
{
  protected:
    /// Connect a and b with silence limit \p timeout and start them.
    void Connect(Time timeout)
    {
        using boost::asio::ip::tcp;
        tcp::acceptor acceptor(io, tcp::endpoint(boost::asio::ip::address_v4::loopback(), 0));
        tcp::socket client(io);
        client.connect(acceptor.local_endpoint());
        tcp::socket server = acceptor.accept();
        a = std::make_shared<ControlChannel>(std::move(client), clock, timeout);
        b = std::make_shared<ControlChannel>(std::move(server), clock, timeout);
        a->Start([](const proto::ControlMessage&) {}, [](const std::string&) {});
        b->Start([](const proto::ControlMessage&) {}, [](const std::string&) {});
    }

    void TearDown() override
    {
        for (auto& c : {a, b})
        {
            if (c)
            {
                c->Close();
            }
        }
    }

    boost::asio::io_context io;
    HostClock clock;
    std::shared_ptr<ControlChannel> a;
    std::shared_ptr<ControlChannel> b;
};

TEST_F(HilChannelPair, HeartbeatsCarryEachSidesHostDelayToTheOther)
{
    // Two control channels over loopback TCP with a 0.4 s timeout (a heartbeat every 0.1 s):
    // A reports 2 ms, B learns it; a report above the limit arrives clamped; a channel that
    // measures nothing reports 0.
    Connect(MilliSeconds(400));
    std::vector<Time> atA;
    std::vector<Time> atB;
    Time aReports = MicroSeconds(2000);
    a->SetHostDelayExchange([&aReports]() { return aReports; },
                            [&atA](Time d) { atA.push_back(d); });
    b->SetHostDelayExchange(nullptr, [&atB](Time d) { atB.push_back(d); });
    io.run_for(std::chrono::milliseconds(350));
    ASSERT_FALSE(atB.empty());
    EXPECT_EQ(atB.back(), MicroSeconds(2000));
    for (Time d : atA)
    {
        EXPECT_EQ(d, 0) << "B measures nothing, so its heartbeats say 0";
    }
    aReports = MilliSeconds(60000);
    io.run_for(std::chrono::milliseconds(250));
    EXPECT_EQ(atB.back(), ControlChannel::MAX_PEER_HOST_DELAY);
}

TEST_F(HilChannelPair, AHostDelayStallIsReportedBeforeTheNextHeartbeat)
{
    // Heartbeats come once a second: a delay that rises 150 ms after the start is reported
    // by a check (every 50 ms) long before the heartbeat at 1 s. (Loose bounds: the test
    // waits up to 700 ms, so that a loaded machine does not fail it.)
    Connect(MilliSeconds(10000));
    Time aDelay = 0;
    std::vector<std::pair<Time, Time>> atB; // (when, delay)
    const Time start = clock.Now();
    a->SetHostDelayExchange([&aDelay]() { return aDelay; }, nullptr);
    b->SetHostDelayExchange(nullptr, [&](Time d) { atB.emplace_back(clock.Now(), d); });
    io.run_for(std::chrono::milliseconds(150));
    EXPECT_TRUE(atB.empty()) << "no change, no report before the first heartbeat";
    aDelay = MicroSeconds(3000);
    while (atB.empty() && clock.Now() - start < MilliSeconds(850))
    {
        io.run_one_for(std::chrono::milliseconds(10));
    }
    ASSERT_EQ(atB.size(), 1u);
    EXPECT_EQ(atB[0].second, MicroSeconds(3000));
    EXPECT_LT(atB[0].first - start, MilliSeconds(1000)) << "before the first heartbeat";
}

TEST(HilLoopback, UdpModeNeedsNoPrivileges)
{
    std::string control = std::to_string(20000 + getpid() % 20000);
    Process server({METAROCE_PERF_BIN,
                    "--port",
                    control,
                    "--data-port",
                    "4893",
                    "--mtu",
                    "1024",
                    "--sport-base",
                    "40000"});
    Process client({METAROCE_PERF_BIN,
                    "127.0.0.1",
                    "--port",
                    control,
                    "--data-port",
                    "4894",
                    "--mtu",
                    "1024",
                    "--sport-base",
                    "30000",
                    "--size",
                    "16K",
                    "--iters",
                    "200"});
    int clientStatus = client.Wait(std::chrono::milliseconds(30000));
    int serverStatus = server.Wait(std::chrono::milliseconds(5000));
    EXPECT_EQ(clientStatus, 0) << client.Output() << server.Output();
    EXPECT_EQ(serverStatus, 0) << server.Output();
    auto cr = ParseResult(client.Output());
    EXPECT_EQ(cr["status"], "PASS") << client.Output();
    EXPECT_EQ(cr["verified"], "200") << client.Output();
    // The host delay is measured during the run (--host-delay, default on).
    EXPECT_NE(client.Output().find("host delay: "), std::string::npos) << client.Output();
    EXPECT_EQ(client.Output().find(" 0 wake-ups measured"), std::string::npos) << client.Output();
}

// --threads 2 on both sides: the client runs one session per engine thread and adds them up;
// the server puts the two sessions on its two threads; the kernel steers every datagram to the
// thread that owns its QPN, so no engine sees a connection it does not know.
TEST(HilLoopback, TwoEngineThreadsOnEachSideRunTwoVerifiedSessions)
{
    std::string control = std::to_string(20000 + (getpid() + 13) % 20000);
    Process server({METAROCE_PERF_BIN,
                    "--port",
                    control,
                    "--threads",
                    "2",
                    "--data-port",
                    "4911",
                    "--sport-base",
                    "40000"});
    Process client({METAROCE_PERF_BIN,
                    "127.0.0.1",
                    "--port",
                    control,
                    "--threads",
                    "2",
                    "--data-port",
                    "4912",
                    "--sport-base",
                    "30000",
                    "--size",
                    "64K",
                    "--iters",
                    "300"});
    const int clientStatus = client.Wait(std::chrono::milliseconds(30000));
    const int serverStatus = server.Wait(std::chrono::milliseconds(5000));
    EXPECT_EQ(clientStatus, 0) << client.Output() << server.Output();
    EXPECT_EQ(serverStatus, 0) << server.Output();
    const std::string out = client.Output();
    const std::string srv = server.Output();
    // Two sessions, each verified, and their total.
    size_t results = 0;
    for (size_t at = out.find("RESULT role=client status=PASS"); at != std::string::npos;
         at = out.find("RESULT role=client status=PASS", at + 1))
    {
        ++results;
    }
    EXPECT_EQ(results, 2u) << out;
    const size_t total = out.find("TOTAL role=client sessions=2 threads=2 status=PASS");
    ASSERT_NE(total, std::string::npos) << out;
    EXPECT_NE(out.find("msgs=600 bytes=" + std::to_string(600 * 65536), total), std::string::npos)
        << out;
    // Each server thread received one session's data, and nothing it did not own.
    for (int shard = 0; shard < 2; ++shard)
    {
        const std::string port =
            "final: port udp 127.0.0.1:4911 (shard " + std::to_string(shard) + " of 2): tx ";
        const size_t at = srv.find(port);
        ASSERT_NE(at, std::string::npos) << srv;
        const std::string line = srv.substr(at, srv.find('\n', at) - at);
        EXPECT_NE(line.find("unknown_connection 0,"), std::string::npos) << line;
        EXPECT_EQ(line.find(" rx 0 "), std::string::npos) << "shard " << shard << " idle: " << line;
    }
    EXPECT_EQ(srv.find("RESULT role=server status=FAIL"), std::string::npos) << srv;
}

// A one-shot server serves every session of a --threads client, even when a large buffer
// delays the second session's Hello; an interrupted --threads client still prints its TOTAL.
TEST(HilLoopback, AOneShotServerServesEverySessionOfAThreadedClient)
{
    const std::string control = std::to_string(20000 + (getpid() + 17) % 20000);
    const std::vector<std::string> serverArgs{METAROCE_PERF_BIN,
                                              "--port",
                                              control,
                                              "--threads",
                                              "2",
                                              "--data-port",
                                              "4913",
                                              "--sport-base",
                                              "40000"};
    const std::vector<std::string> clientArgs{METAROCE_PERF_BIN,
                                              "127.0.0.1",
                                              "--port",
                                              control,
                                              "--threads",
                                              "2",
                                              "--data-port",
                                              "4914",
                                              "--sport-base",
                                              "30000"};
    {
        Process server(serverArgs);
        std::vector<std::string> args = clientArgs;
        args.insert(args.end(), {"--size", "2M", "--depth", "64", "--iters", "2"});
        Process client(args);
        EXPECT_EQ(client.Wait(std::chrono::milliseconds(30000)), 0)
            << client.Output() << server.Output();
        EXPECT_EQ(server.Wait(std::chrono::milliseconds(5000)), 0) << server.Output();
        EXPECT_NE(client.Output().find("TOTAL role=client sessions=2 threads=2 status=PASS"),
                  std::string::npos)
            << client.Output();
    }
    Process server(serverArgs);
    std::vector<std::string> args = clientArgs;
    args.insert(args.end(), {"--duration", "20"});
    Process client(args);
    ASSERT_TRUE(WaitForOutput(client, "accepted", std::chrono::milliseconds(10000)))
        << client.Output();
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    client.Signal(SIGINT);
    EXPECT_EQ(client.Wait(std::chrono::milliseconds(10000)), 2) << client.Output();
    EXPECT_NE(client.Output().find("TOTAL role=client sessions=2 threads=2 status=INTERRUPTED"),
              std::string::npos)
        << client.Output();
    server.Wait(std::chrono::milliseconds(15000));
}

/// A port that only answers what the wrappers must pass on (the rest does nothing).
class BlockPort : public FramePort
{
  public:
    void Start(ReceiveHandler, BatchHandler) override
    {
    }

    SendStatus Send(const TxDatagram&) override
    {
        return SendStatus::SENT;
    }

    bool DeliversInBlocks() const override
    {
        return true;
    }

    void SetBacklogEcn(uint32_t threshold) override
    {
        backlogEcn = threshold;
    }

    void AsyncWaitWritable(WritableHandler) override
    {
    }

    void Close() override
    {
    }

    PortCounters Counters() const override
    {
        return PortCounters();
    }

    std::string Describe() const override
    {
        return "block";
    }

    uint32_t backlogEcn{12345}; //!< what SetBacklogEcn() got
};

// A TPACKET_V3 port keeps --backlog-ecn auto off (AutoBacklogEcn) behind the pcap and fault
// wrappers too: they pass DeliversInBlocks() and SetBacklogEcn() through.
TEST(HilPortWrappers, PassOnThatTheInnerPortDeliversInBlocks)
{
    boost::asio::io_context io;
    HostClock clock;
    auto inner = std::make_unique<BlockPort>();
    BlockPort* block = inner.get();
    FaultConfig faults;
    faults.loss = 0.01;
    auto fault = std::make_unique<FaultFramePort>(io, clock, std::move(inner), faults);
    const std::string file = ::testing::TempDir() + "metaroce-wrapper-test.pcap";
    std::string why;
    auto writer = PcapWriter::Open(file, why);
    ASSERT_NE(writer, nullptr) << why;
    PcapFramePort pcap(clock, std::move(fault), std::move(writer));
    EXPECT_TRUE(pcap.DeliversInBlocks());
    pcap.SetBacklogEcn(AutoBacklogEcn("metaroce", pcap.DeliversInBlocks()));
    EXPECT_EQ(block->backlogEcn, 0u);
    pcap.Close();
    std::remove(file.c_str());
}

/// A plain UDP socket on 127.0.0.1: \return its fd (port in \p port), -1 on failure.
int
LoopbackSink(uint16_t& port)
{
    int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(0x7f000001);
    socklen_t len = sizeof(a);
    if (fd < 0 || bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0 ||
        getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0)
    {
        return -1;
    }
    timeval tv{2, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    port = ntohs(a.sin_port);
    return fd;
}

// The pump writes a datagram straight into the UDP port's batch slot (ReserveTxBuffer) and
// Send() queues it without a copy; a reservation given back, or passed over by a Send() of
// another buffer, leaves the batch as if there had been none.
TEST(HilUdpPort, DatagramsWrittenInTheReservedSlotLeaveUnchanged)
{
    boost::asio::io_context io;
    HostClock clock;
    uint16_t peerPort = 0;
    const int peer = LoopbackSink(peerPort);
    ASSERT_GE(peer, 0);
    UdpPortConfig cfg;
    cfg.localIp = 0x7f000001;
    cfg.dataPort = 0; // any
    cfg.gso = false;
    std::string why;
    std::unique_ptr<UdpFramePort> port = UdpFramePort::Open(io, clock, cfg, why);
    ASSERT_NE(port, nullptr) << why;
    port->LearnPeer(0x7f000001, MacAddress(), peerPort, true);
    auto datagram = [](uint8_t* at, size_t n, uint8_t seed) {
        for (size_t i = 0; i < n; ++i)
        {
            at[i] = uint8_t(seed + i * 7);
        }
    };
    auto send = [&](uint8_t* buffer, size_t n) {
        TxDatagram tx;
        tx.buffer = buffer;
        tx.capacity = n;
        tx.length = n;
        tx.meta.srcIp = 0x7f000001;
        tx.meta.dstIp = 0x7f000001;
        tx.meta.srcPort = 50123;
        tx.meta.dstPort = ROCE_UDP_PORT;
        return port->Send(tx);
    };
    // 1. In place.
    size_t capacity = 0;
    uint8_t* slot = port->ReserveTxBuffer(capacity);
    ASSERT_NE(slot, nullptr);
    EXPECT_GE(capacity, 9000u);
    EXPECT_EQ(port->ReserveTxBuffer(capacity), nullptr) << "one reservation at a time";
    datagram(slot, 1000, 1);
    EXPECT_EQ(send(slot, 1000), SendStatus::SENT);
    // 2. Reserved, given back; then a datagram from another buffer.
    ASSERT_NE(port->ReserveTxBuffer(capacity), nullptr);
    port->ReleaseTxBuffer();
    std::vector<uint8_t> own(500);
    datagram(own.data(), own.size(), 2);
    EXPECT_EQ(send(own.data(), own.size()), SendStatus::SENT);
    // 3. Reserved, but a datagram from another buffer is sent instead.
    ASSERT_NE(port->ReserveTxBuffer(capacity), nullptr);
    datagram(own.data(), 300, 3);
    EXPECT_EQ(send(own.data(), 300), SendStatus::SENT);
    EXPECT_EQ(port->Flush(), SendStatus::SENT);
    const std::vector<std::pair<size_t, uint8_t>> expected{{1000, 1}, {500, 2}, {300, 3}};
    for (const auto& [n, seed] : expected)
    {
        std::vector<uint8_t> want(n);
        datagram(want.data(), n, seed);
        std::vector<uint8_t> got(2000);
        const ssize_t r = recv(peer, got.data(), got.size(), 0);
        ASSERT_EQ(r, ssize_t(n)) << "datagram of seed " << int(seed);
        got.resize(n);
        EXPECT_TRUE(got == want) << "datagram of seed " << int(seed);
    }
    EXPECT_EQ(port->Counters().txFrames, 3u);
    port->Close();
    close(peer);
}

// The daemon's shards (--threads) share one UDP data port: the kernel steers every datagram
// to the shard of its destination QPN's class, (QPN - FIRST_QPN) mod shards, whatever its
// source port; a datagram too short for a BTH goes to shard 0. Another program on the port
// is refused.
TEST(HilUdpPort, ShardsOfOneDataPortEachReceiveTheirQpnClass)
{
    boost::asio::io_context io;
    HostClock clock;
    uint16_t dataPort = 0;
    {
        const int probe = LoopbackSink(dataPort); // a free port, given back
        ASSERT_GE(probe, 0);
        close(probe);
    }
    constexpr uint32_t SHARDS = 3;
    std::vector<std::unique_ptr<UdpFramePort>> ports;
    std::vector<std::vector<uint32_t>> got(SHARDS);
    size_t received = 0;
    for (uint32_t s = 0; s < SHARDS; ++s)
    {
        UdpPortConfig cfg;
        cfg.localIp = 0x7f000001;
        cfg.dataPort = dataPort;
        cfg.shards = SHARDS;
        cfg.shardIndex = s;
        std::string why;
        ports.push_back(UdpFramePort::Open(io, clock, cfg, why));
        ASSERT_NE(ports.back(), nullptr) << why;
        EXPECT_NE(ports.back()->Describe().find("shard " + std::to_string(s) + " of 3"),
                  std::string::npos);
        ports.back()->Start(
            [&got, &received, s](const DatagramMeta&, const uint8_t* data, size_t len) {
                got[s].push_back(len >= Bth::SIZE ? Bth::Read(data).destQp : 0);
                ++received;
            },
            nullptr);
    }
    {
        // A second group on the same port (another daemon) is refused.
        UdpPortConfig other;
        other.localIp = 0x7f000001;
        other.dataPort = dataPort;
        other.shards = 2;
        std::string why;
        EXPECT_EQ(UdpFramePort::Open(io, clock, other, why), nullptr);
        EXPECT_NE(why.find("is in use"), std::string::npos) << why;
    }
    const int tx = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    ASSERT_GE(tx, 0);
    sockaddr_in to{};
    to.sin_family = AF_INET;
    to.sin_addr.s_addr = htonl(0x7f000001);
    to.sin_port = htons(dataPort);
    std::vector<uint32_t> qpns;
    for (uint32_t q = FIRST_QPN; q < FIRST_QPN + 30; ++q)
    {
        qpns.push_back(q);
    }
    qpns.push_back(0x123455); // a large QPN: (0x123455 - 2) mod 3 = 0
    for (uint32_t qpn : qpns)
    {
        Bth bth;
        bth.opcode = 0x0a;
        bth.destQp = qpn;
        bth.psn = qpn;
        uint8_t buf[64] = {};
        bth.Write(buf);
        ASSERT_EQ(sendto(tx, buf, sizeof(buf), 0, reinterpret_cast<sockaddr*>(&to), sizeof(to)),
                  ssize_t(sizeof(buf)));
    }
    const uint8_t runt[3] = {1, 2, 3};
    sendto(tx, runt, sizeof(runt), 0, reinterpret_cast<sockaddr*>(&to), sizeof(to));
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (received < qpns.size() + 1 && std::chrono::steady_clock::now() < deadline)
    {
        io.run_for(std::chrono::milliseconds(10));
        io.restart();
    }
    ASSERT_EQ(received, qpns.size() + 1);
    for (uint32_t s = 0; s < SHARDS; ++s)
    {
        size_t runts = 0;
        for (uint32_t qpn : got[s])
        {
            if (qpn == 0)
            {
                ++runts;
                continue;
            }
            EXPECT_EQ((qpn - FIRST_QPN) % SHARDS, s) << "qpn " << qpn << " reached shard " << s;
        }
        EXPECT_EQ(runts, s == 0 ? 1u : 0u) << "shard " << s;
    }
    EXPECT_EQ(got[1].size(), 10u);
    EXPECT_EQ(got[2].size(), 10u);
    close(tx);
    for (auto& p : ports)
    {
        p->Close();
    }
}

// Both sides on one host with the same UDP data port would take each other's datagrams and
// fail without saying why: the server rejects the client with the reason, both exit 1.
TEST(HilLoopback, TheSameDataPortOnBothSidesIsRefusedWithTheReason)
{
    std::string control = std::to_string(20000 + (getpid() + 7) % 20000);
    Process server({METAROCE_PERF_BIN, "--port", control, "--data-port", "4915"});
    Process client(
        {METAROCE_PERF_BIN, "127.0.0.1", "--port", control, "--data-port", "4915", "--iters", "1"});
    const int clientStatus = client.Wait(std::chrono::milliseconds(20000));
    const int serverStatus = server.Wait(std::chrono::milliseconds(5000));
    EXPECT_EQ(clientStatus, 1) << client.Output() << server.Output();
    EXPECT_EQ(serverStatus, 1) << server.Output();
    const std::string reason = "the peer's data address is this program's own (udp 127.0.0.1:4915)";
    EXPECT_NE(client.Output().find(reason), std::string::npos) << client.Output();
    EXPECT_NE(server.Output().find(reason), std::string::npos) << server.Output();
    EXPECT_EQ(ParseResult(client.Output())["status"], "FAIL") << client.Output();
}

} // namespace
} // namespace test
} // namespace hil
} // namespace metaroce
