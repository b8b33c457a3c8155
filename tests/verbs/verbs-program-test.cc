/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

// Unmodified Verbs programs (ibverbs-utils, perftest) on the drop-in libibverbs through
// metaroce-verbs-run, between two network namespaces joined by a veth pair (MTU 1500, so the
// port's active MTU is 1024 as on a RoCE NIC). Each check reads the program's own success
// output and exit code.

#include "hil-test-util.h"

#include <cstdlib>
#include <gtest/gtest.h>
#include <memory>
#include <thread>
#include <unistd.h>

namespace
{

using metaroce::hil::test::InNetns;
using metaroce::hil::test::NetnsPair;
using metaroce::hil::test::Process;
using namespace std::chrono_literals;

/// \return why the programs cannot run here ("" if they can).
std::string
Unavailable()
{
    std::string why = NetnsPair::Unavailable();
    if (!why.empty())
    {
        return why;
    }
    for (const char* prog : {"ibv_devinfo", "ibv_rc_pingpong"})
    {
        if (std::system((std::string("command -v ") + prog + " >/dev/null").c_str()) != 0)
        {
            return std::string(prog) + " is missing (apt-get install ibverbs-utils perftest)";
        }
    }
    return "";
}

/// Two namespaces with the veth pair "va" (10.250.1.1) / "vb" (10.250.1.2).
class VerbsProgramTest : public ::testing::Test
{
  protected:
    void SetUp() override
    {
        std::string why = Unavailable();
        if (!why.empty())
        {
            GTEST_SKIP() << "verbs program tests skipped: " << why;
        }
        m_net = std::make_unique<NetnsPair>(1500);
        ASSERT_TRUE(m_net->Ok()) << m_net->Why();
        // The port reports the link's state, as a NIC does: wait until both ends have carrier.
        for (auto [ns, dev] : {std::pair{m_net->A(), "va"}, std::pair{m_net->B(), "vb"}})
        {
            std::string cmd = "ip -n " + ns + " link show " + dev + " | grep -q LOWER_UP";
            auto end = std::chrono::steady_clock::now() + 5s;
            while (std::system(cmd.c_str()) != 0 && std::chrono::steady_clock::now() < end)
            {
                std::this_thread::sleep_for(20ms);
            }
        }
    }

    /// argv of \p prog in namespace \p ns through metaroce-verbs-run with \p options.
    std::vector<std::string> Run(const std::string& ns,
                                 const std::string& iface,
                                 std::vector<std::string> options,
                                 std::vector<std::string> prog)
    {
        std::vector<std::string> argv = {METAROCE_VERBS_RUN_BIN, "--iface", iface, "--log", "info"};
        argv.insert(argv.end(), options.begin(), options.end());
        argv.push_back("--");
        argv.insert(argv.end(), prog.begin(), prog.end());
        return InNetns(ns, argv);
    }

    /**
     * Run \p prog as server in A and as client of 10.250.1.1 in B. \return both outputs;
     * \p serverRc / \p clientRc their exit codes (-1: killed after the timeout)
     */
    void RunPair(std::vector<std::string> options,
                 std::vector<std::string> prog,
                 int& serverRc,
                 int& clientRc,
                 std::string& serverOut,
                 std::string& clientOut)
    {
        Process server(Run(m_net->A(), "va", options, prog));
        std::this_thread::sleep_for(500ms); // the server listens on its TCP port
        std::vector<std::string> clientProg = prog;
        clientProg.push_back("10.250.1.1");
        Process client(Run(m_net->B(), "vb", options, clientProg));
        clientRc = client.Wait(40s);
        serverRc = server.Wait(10s);
        serverOut = server.Output();
        clientOut = client.Output();
    }

    std::unique_ptr<NetnsPair> m_net;
};

TEST_F(VerbsProgramTest, IbvDevicesAndDevinfoShowARoceDevice)
{
    Process devices(Run(m_net->A(), "va", {}, {"ibv_devices"}));
    ASSERT_EQ(devices.Wait(10s), 0) << devices.Output();
    EXPECT_NE(devices.Output().find("metaroce0"), std::string::npos) << devices.Output();

    Process info(Run(m_net->A(), "va", {}, {"ibv_devinfo", "-v"}));
    ASSERT_EQ(info.Wait(10s), 0) << info.Output();
    std::string out = info.Output();
    for (const char* line : {"hca_id:\tmetaroce0",
                             "state:\t\t\tPORT_ACTIVE (4)",
                             "active_mtu:\t\t1024 (3)",
                             "link_layer:\t\tEthernet",
                             "GID[  0]:\t\t::ffff:10.250.1.1, RoCE v2"})
    {
        EXPECT_NE(out.find(line), std::string::npos) << "missing \"" << line << "\" in\n" << out;
    }

    // Both transports offer atomics.
    Process rocev2(Run(m_net->A(), "va", {"--transport", "rocev2"}, {"ibv_devinfo", "-v"}));
    ASSERT_EQ(rocev2.Wait(10s), 0);
    EXPECT_NE(rocev2.Output().find("atomic_cap:\t\t\tATOMIC_HCA (1)"), std::string::npos);
    EXPECT_NE(out.find("atomic_cap:\t\t\tATOMIC_HCA (1)"), std::string::npos) << out;
}

TEST_F(VerbsProgramTest, BadConfigurationIsAClearError)
{
    Process bad(Run(m_net->A(), "va", {"--paths", "0"}, {"ibv_devices"}));
    EXPECT_NE(bad.Wait(10s), 0);
    EXPECT_NE(bad.Output().find("METAROCE_VERBS_PATHS=0: paths 0: must be in [1, 128]"),
              std::string::npos)
        << bad.Output();
    Process none(Run(m_net->A(), "nosuch0", {}, {"ibv_devinfo"}));
    EXPECT_NE(none.Wait(10s), 0);
    EXPECT_NE(none.Output().find("interface nosuch0 has no IPv4 address"), std::string::npos)
        << none.Output();
}

/// ibv_rc_pingpong's success lines on both sides (each failure shows both sides' output: one
/// side's error is often the other side's doing).
void
ExpectPingpong(int serverRc, int clientRc, const std::string& server, const std::string& client)
{
    const std::string both = "--- server:\n" + server + "--- client:\n" + client;
    EXPECT_EQ(serverRc, 0) << both;
    EXPECT_EQ(clientRc, 0) << both;
    EXPECT_NE(server.find("iters in"), std::string::npos) << both;
    EXPECT_NE(client.find("iters in"), std::string::npos) << both;
}

TEST_F(VerbsProgramTest, RcPingpongMetaRoce)
{
    int s, c;
    std::string so, co;
    RunPair({"--transport", "metaroce"}, {"ibv_rc_pingpong", "-g", "0", "-n", "200"}, s, c, so, co);
    ExpectPingpong(s, c, so, co);
    EXPECT_NE(so.find("metaroce transport"), std::string::npos) << so;
}

TEST_F(VerbsProgramTest, RcPingpongRoceV2WithCompletionEvents)
{
    int s, c;
    std::string so, co;
    RunPair({"--transport", "rocev2"},
            {"ibv_rc_pingpong", "-g", "0", "-n", "200", "-e", "-s", "8192"},
            s,
            c,
            so,
            co);
    ExpectPingpong(s, c, so, co);
    EXPECT_NE(so.find("rocev2 transport"), std::string::npos) << so;
}

TEST_F(VerbsProgramTest, RcPingpongMetaRoceThroughOnePercentLoss)
{
    int s, c;
    std::string so, co;
    RunPair({"--transport", "metaroce", "--loss", "0.01", "--seed", "7"},
            {"ibv_rc_pingpong", "-g", "0", "-n", "500", "-s", "4096"},
            s,
            c,
            so,
            co);
    ExpectPingpong(s, c, so, co);
    // The fault wrapper dropped datagrams and the engine resent them.
    EXPECT_EQ(co.find(" 0 fault drops"), std::string::npos) << co;
    EXPECT_EQ(co.find(" 0 retransmitted"), std::string::npos) << co;
}

/// A lost acknowledgement of the last message: the peer resends it after its RTO, and the side
/// that has finished must still be there to answer (the linger of ibv_destroy_qp). With 10 %
/// loss on both sides the last acknowledgement of one of these runs is lost more often than not.
TEST_F(VerbsProgramTest, RcPingpongSurvivesLostLastAcknowledgements)
{
    for (const char* transport : {"metaroce", "rocev2"})
    {
        for (const char* seed : {"1", "2", "3"})
        {
            SCOPED_TRACE(std::string(transport) + " seed " + seed);
            int s, c;
            std::string so, co;
            RunPair({"--transport", transport, "--loss", "0.1", "--seed", seed},
                    {"ibv_rc_pingpong", "-g", "0", "-n", "20", "-s", "1024"},
                    s,
                    c,
                    so,
                    co);
            ExpectPingpong(s, c, so, co);
        }
    }
}

} // namespace

TEST_F(VerbsProgramTest, RcPingpongMetaRoceOnTheRawPort)
{
    int s, c;
    std::string so, co;
    RunPair({"--transport", "metaroce", "--port-mode", "raw"},
            {"ibv_rc_pingpong", "-g", "0", "-n", "200"},
            s,
            c,
            so,
            co);
    ExpectPingpong(s, c, so, co);
    EXPECT_NE(so.find("raw va 10.250.1.1"), std::string::npos) << so;
}

TEST_F(VerbsProgramTest, RawPortWithoutCapNetRawIsAClearError)
{
    if (std::system("command -v setpriv >/dev/null") != 0)
    {
        GTEST_SKIP() << "setpriv (util-linux) is missing";
    }
    std::vector<std::string> argv = {"setpriv",
                                     "--inh-caps=-net_raw",
                                     "--bounding-set=-net_raw",
                                     METAROCE_VERBS_RUN_BIN,
                                     "--iface",
                                     "va",
                                     "--port-mode",
                                     "raw",
                                     "--",
                                     "ibv_rc_pingpong",
                                     "-g",
                                     "0"};
    Process p(InNetns(m_net->A(), argv));
    EXPECT_NE(p.Wait(10s), 0) << p.Output();
    EXPECT_NE(p.Output().find("Raw mode needs CAP_NET_RAW"), std::string::npos) << p.Output();
    EXPECT_NE(p.Output().find("Couldn't get context for metaroce0"), std::string::npos)
        << p.Output();
}

/// Runs one perftest program between the namespaces.
class PerftestTest : public VerbsProgramTest
{
  protected:
    void Check(std::vector<std::string> options,
               std::vector<std::string> prog,
               const std::string& header)
    {
        if (std::system(("command -v " + prog[0] + " >/dev/null").c_str()) != 0)
        {
            GTEST_SKIP() << prog[0] << " is missing (apt-get install perftest)";
        }
        std::vector<std::string> argv = prog;
        for (const char* a : {"-d", "metaroce0", "-x", "0", "-F"})
        {
            argv.push_back(a);
        }
        int s, c;
        std::string so, co;
        RunPair(options, argv, s, c, so, co);
        EXPECT_EQ(s, 0) << so;
        EXPECT_EQ(c, 0) << co;
        EXPECT_NE(co.find(header), std::string::npos) << co;
        EXPECT_NE(so.find(header), std::string::npos) << so;
    }
};

TEST_F(PerftestTest, WriteBwMetaRoce)
{
    Check({"--transport", "metaroce"}, {"ib_write_bw", "-s", "65536", "-n", "200"}, "#bytes");
}

TEST_F(PerftestTest, WriteBwRoceV2)
{
    Check({"--transport", "rocev2"}, {"ib_write_bw", "-s", "65536", "-n", "200"}, "#bytes");
}

TEST_F(PerftestTest, SendBwMetaRoce)
{
    Check({"--transport", "metaroce"}, {"ib_send_bw", "-s", "4096", "-n", "200"}, "#bytes");
}

TEST_F(PerftestTest, WriteLatMetaRoce)
{
    Check({"--transport", "metaroce"}, {"ib_write_lat", "-s", "64", "-n", "200"}, "t_typical");
}

TEST_F(PerftestTest, ReadBwRoceV2)
{
    Check({"--transport", "rocev2"}, {"ib_read_bw", "-s", "65536", "-n", "200"}, "#bytes");
}

TEST_F(PerftestTest, AtomicBwRoceV2)
{
    Check({"--transport", "rocev2"}, {"ib_atomic_bw", "-n", "200"}, "#bytes");
}

TEST_F(PerftestTest, WriteBwMetaRoceThroughOnePercentLoss)
{
    Check({"--transport", "metaroce", "--loss", "0.01", "--seed", "3"},
          {"ib_write_bw", "-s", "65536", "-n", "200"},
          "#bytes");
}

TEST_F(PerftestTest, ReadBwMetaRoce)
{
    Check({"--transport", "metaroce"}, {"ib_read_bw", "-s", "65536", "-n", "200"}, "#bytes");
}

TEST_F(PerftestTest, AtomicBwMetaRoce)
{
    Check({"--transport", "metaroce"}, {"ib_atomic_bw", "-n", "200"}, "#bytes");
}

TEST_F(PerftestTest, SendBwMetaRoceThroughOnePercentLoss)
{
    Check({"--transport", "metaroce", "--loss", "0.01", "--seed", "4"},
          {"ib_send_bw", "-s", "4096", "-n", "200"},
          "#bytes");
}

TEST_F(PerftestTest, WriteLatMetaRoceThroughOnePercentLoss)
{
    Check({"--transport", "metaroce", "--loss", "0.01", "--seed", "5"},
          {"ib_write_lat", "-s", "64", "-n", "200"},
          "t_typical");
}

TEST_F(PerftestTest, AtomicBwMetaRoceThroughOnePercentLoss)
{
    Check({"--transport", "metaroce", "--loss", "0.01", "--seed", "6"},
          {"ib_atomic_bw", "-n", "200"},
          "#bytes");
}

TEST_F(PerftestTest, ReadBwMetaRoceThroughOnePercentLoss)
{
    Check({"--transport", "metaroce", "--loss", "0.01", "--seed", "3"},
          {"ib_read_bw", "-s", "65536", "-n", "200"},
          "#bytes");
}
