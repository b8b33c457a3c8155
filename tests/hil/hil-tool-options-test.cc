/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

// The command lines of the HIL tools, all on the option layer (metaroce-hil-options.h): each
// tool prints a help text that lists its options (and docs/hil.md documents every one of
// them), rejects an unknown option or a bad value with one line and exit status 64, and
// accepts the spellings that scripts, tests and docs use. No root needed: nothing runs past
// the command line, or it stops at the first device it cannot open.

#include "hil-test-util.h"
#include "metaroce-hil-options.h"
#include "metaroce-hil-perf.h"

#include <algorithm>
#include <fstream>
#include <gtest/gtest.h>
#include <regex>
#include <set>
#include <sstream>

namespace metaroce
{
namespace hil
{
namespace test
{
namespace
{

using std::chrono::milliseconds;

/// The tools on the option layer, by binary.
std::vector<std::string>
Tools()
{
    std::vector<std::string> tools = {METAROCE_PERF_BIN, METAROCE_HILD_BIN, METAROCE_UDP_BLAST_BIN};
#ifdef METAROCE_HIL_FORWARDER_BIN
    tools.push_back(METAROCE_HIL_FORWARDER_BIN);
#endif
#ifdef METAROCE_HIL_FABRIC_BIN
    tools.push_back(METAROCE_HIL_FABRIC_BIN);
#endif
    return tools;
}

/// \return the program name of \p path.
std::string
ProgramOf(const std::string& path)
{
    return path.substr(path.rfind('/') + 1);
}

/// Run \p argv to its end. \return the exit status; \p output gets what it printed.
int
RunTool(const std::vector<std::string>& argv, std::string& output)
{
    Process p(argv);
    int status = p.Wait(milliseconds(20000));
    output = p.Output();
    return status;
}

/// \return the options ("--name") a help text lists, without the deprecated spellings.
std::set<std::string>
ListedOptions(const std::string& help)
{
    std::set<std::string> names;
    const std::string listed = help.substr(0, help.find("Deprecated spellings"));
    std::istringstream lines(listed);
    std::string line;
    const std::regex option("^  (-h, )?(--[a-z0-9-]+)");
    std::smatch m;
    while (std::getline(lines, line))
    {
        if (std::regex_search(line, m, option))
        {
            names.insert(m[2]);
        }
    }
    return names;
}

/// \return the text of docs/hil.md.
std::string
HilDoc()
{
    std::ifstream in(std::string(METAROCE_DOCS_DIR) + "/hil.md");
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

TEST(HilToolOptions, HelpListsOptionsAndDocsDocumentThem)
{
    const std::string doc = HilDoc();
    ASSERT_FALSE(doc.empty()) << METAROCE_DOCS_DIR;
    for (const std::string& tool : Tools())
    {
        std::string help;
        ASSERT_EQ(RunTool({tool, "--help"}, help), 0) << tool << ":\n" << help;
        EXPECT_EQ(help.rfind("usage: " + ProgramOf(tool), 0), 0u) << help;
        const std::set<std::string> names = ListedOptions(help);
        EXPECT_GT(names.size(), 5u) << help;
        for (const std::string& name : names)
        {
            // Mentioned as an option, not as the start of a longer one.
            const std::regex mention(name + "([^a-z0-9-]|$)");
            EXPECT_TRUE(std::regex_search(doc, mention))
                << ProgramOf(tool) << " " << name << " is not in docs/hil.md";
        }
        std::string shortHelp;
        EXPECT_EQ(RunTool({tool, "-h"}, shortHelp), 0);
        EXPECT_EQ(shortHelp, help);
    }
}

TEST(HilToolOptions, UnknownOptionsAndBadValuesAreOneLineUsageErrors)
{
    for (const std::string& tool : Tools())
    {
        const std::string program = ProgramOf(tool);
        for (const std::vector<std::string>& args :
             std::vector<std::vector<std::string>>{{"--no-such-option"},
                                                   {"--seed", "x"},
                                                   {"--seed"},
                                                   {"--see", "3"}})
        {
            std::vector<std::string> argv = {tool};
            argv.insert(argv.end(), args.begin(), args.end());
            std::string out;
            EXPECT_EQ(RunTool(argv, out), EXIT_USAGE) << program << " " << args[0] << ":\n" << out;
            EXPECT_EQ(out.rfind(program + ": ", 0), 0u) << out;
            EXPECT_NE(out.find("(see --help)\n"), std::string::npos) << out;
            EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 1) << out;
        }
    }
}

TEST(HilToolOptions, PerfAcceptsEveryDocumentedSpelling)
{
    PerfOptions opts;
    std::string error;
    ASSERT_TRUE(ParsePerfOptions({"10.0.0.2",
                                  "--op",
                                  "send",
                                  "--size=16K",
                                  "--iters",
                                  "7",
                                  "--duration",
                                  "2.5",
                                  "--qps",
                                  "2",
                                  "--depth",
                                  "16",
                                  "--transport",
                                  "rocev2",
                                  "--roce-recovery",
                                  "irn",
                                  "--mtu",
                                  "4096",
                                  "--paths",
                                  "4",
                                  "--max-wrs",
                                  "64",
                                  "--no-icrc",
                                  "--port-mode",
                                  "raw",
                                  "--dev",
                                  "veth0",
                                  "--local-ip",
                                  "10.0.0.1",
                                  "--peer-mac",
                                  "02:00:00:00:00:01",
                                  "--raw-io",
                                  "ring-v3",
                                  "--ring-retire-ms",
                                  "4",
                                  "--data-port",
                                  "4800",
                                  "--sport-base",
                                  "30000",
                                  "--rate",
                                  "2.5",
                                  "--rto-min-us",
                                  "500",
                                  "--rt-priority",
                                  "10",
                                  "--tx-batch",
                                  "8",
                                  "--sched-probe",
                                  "off",
                                  "--udp-gso",
                                  "off",
                                  "--busy-poll",
                                  "50",
                                  "--cpu",
                                  "1",
                                  "--conn-timeout-ms",
                                  "3000",
                                  "--loss",
                                  "0.01",
                                  "--burst",
                                  "0.01,0.4",
                                  "--dup",
                                  "0.001",
                                  "--reorder",
                                  "0.01,200",
                                  "--pcap",
                                  "x.pcap",
                                  "--results",
                                  "dir",
                                  "--telemetry",
                                  "t.json",
                                  "--report",
                                  "0.5",
                                  "--log",
                                  "warn",
                                  "--port",
                                  "18600",
                                  "--listen",
                                  "10.0.0.1",
                                  "--max-pending",
                                  "4",
                                  "--timeout",
                                  "3",
                                  "--seed",
                                  "9"},
                                 false,
                                 opts,
                                 error))
        << error;
    EXPECT_FALSE(opts.server);
    EXPECT_EQ(opts.serverAddress, "10.0.0.2");
    EXPECT_EQ(opts.op, "send");
    EXPECT_EQ(opts.size, 16u * 1024);
    EXPECT_EQ(opts.duration, 2.5);
    EXPECT_EQ(opts.roceRecovery, "irn");
    EXPECT_FALSE(opts.icrc);
    EXPECT_EQ(opts.peerMac, "02:00:00:00:00:01");
    EXPECT_FALSE(opts.schedProbe);
    EXPECT_FALSE(opts.udpGso);
    EXPECT_EQ(opts.cpu, 1);
    EXPECT_EQ(opts.rtPriority, 10);
    EXPECT_EQ(opts.faults.burstStart, 0.01);
    EXPECT_EQ(opts.faults.burstEnd, 0.4);
    EXPECT_EQ(opts.faults.burstLoss, 1.0);
    EXPECT_EQ(opts.faults.reorderDelay, Time(200e6));
    EXPECT_EQ(opts.faults.seed, 9u * 7919 + 2);
    EXPECT_EQ(opts.controlPort, 18600);
    EXPECT_EQ(opts.maxPending, 4u);
    EXPECT_EQ(opts.seed, 9u);
    EXPECT_EQ(opts.commandLine.rfind("metaroce-perf 10.0.0.2 --op send", 0), 0u);

    // The server and the daemon; the TAP mode's settings.
    PerfOptions server;
    ASSERT_TRUE(ParsePerfOptions({"--port-mode",
                                  "tap",
                                  "--dev",
                                  "mrt0",
                                  "--local-ip",
                                  "10.250.3.1",
                                  "--tap-addr",
                                  "10.250.3.254/24"},
                                 true,
                                 server,
                                 error))
        << error;
    EXPECT_TRUE(server.server);
    EXPECT_TRUE(server.daemon);
    EXPECT_EQ(server.tapAddress, "10.250.3.254/24");

    // AF_XDP with several threads: shard i on queue i (the device's queue count is checked
    // when the port opens).
    PerfOptions xdp;
    ASSERT_TRUE(
        ParsePerfOptions({"--port-mode", "raw", "--dev", "v0", "--raw-io", "xdp", "--threads", "2"},
                         true,
                         xdp,
                         error))
        << error;
    EXPECT_EQ(xdp.threads, 2u);
}

TEST(HilToolOptions, PerfRejectsBadCombinationsWithTheReason)
{
    struct Case
    {
        std::vector<std::string> args;
        bool daemon;
        std::string why;
    };

    for (const Case& c : std::vector<Case>{
             {{"10.0.0"}, false, "is not an IPv4 address"},
             {{"10.0.0.1", "10.0.0.2"}, false, "unexpected argument '10.0.0.2'"},
             {{"10.0.0.1"}, true, "metaroce-hild takes no address"},
             {{"--port-mode", "raw"}, false, "--port-mode raw needs --dev"},
             {{"--port-mode", "tap", "--dev", "t0"}, false, "needs --dev TAPNAME and --local-ip"},
             {{"--transport", "rocev2", "--streams", "2"}, false, "rocev2 has no streams"},
             {{"--depth", "600", "--streams", "2"}, false, "exceeds --max-wrs 1024"},
             // The shared transport mapping (ApplyTransportSettings()) names the option.
             {{"--mtu", "1022"}, false, "--mtu 1022: must be a multiple of 4 in [64, 65536]"},
             {{"--size", "2G"}, false, "for --size"},
             {{"--burst", "0.1,0"}, false, "burst end probability"},
             {{"--loss", "1.5"}, false, "for --loss"},
             {{"--log", "loud"}, false, "for --log"},
             {{"--udp-gso"}, false, "--udp-gso"},
             {{"--peer-mac", "02:00"}, false, "a MAC address"},
             {{"--tap-addr", "10.0.0.1"}, false, "A.B.C.D/N"},
             {{"--threads", "2", "--port-mode", "tap", "--dev", "t0", "--local-ip", "10.0.0.1"},
              false,
              "needs --port-mode udp or raw"},
             {{"--port-mode", "raw", "--dev", "v0", "--raw-io", "xdp", "--xdp-mode", "drv"},
              false,
              "one of auto|zerocopy|native|generic"},
             {{"--port-mode", "raw", "--dev", "v0", "--raw-io", "ring", "--xdp-mode", "native"},
              false,
              "needs --port-mode raw --raw-io xdp"},
             {{"--xdp-mode", "generic"}, true, "needs --port-mode raw --raw-io xdp"},
             {{"10.0.0.1", "--threads", "2", "--results", "r"}, false, "hold one client session"},
             {{"--threads", "0"}, false, "--threads"},
             {{"--threads", "65"}, false, "--threads"},
             {{"10.0.0.1", "--threads", "8", "--qps", "64"}, false, "more UDP source ports"}})
    {
        PerfOptions opts;
        std::string error;
        EXPECT_FALSE(ParsePerfOptions(c.args, c.daemon, opts, error)) << c.args[0];
        EXPECT_NE(error.find(c.why), std::string::npos) << c.args[0] << ": " << error;
    }
}

#ifdef METAROCE_HIL_FABRIC_BIN
// The kebab-case spellings and the deprecated camelCase ones both pass the command line: the
// program stops at the namespace it cannot enter (status 1), not at a usage error (64).
TEST(HilToolOptions, FabricAcceptsNewAndDeprecatedSpellings)
{
    const std::string ns = "metaroce-no-such-netns";
    for (const std::vector<std::string>& args :
         std::vector<std::vector<std::string>>{{"--taps",
                                                ns + ":t0",
                                                "--sim-hosts",
                                                ns + "-b:c0",
                                                "--control-port",
                                                "18600",
                                                "--sim-timeout",
                                                "3",
                                                "--data-port",
                                                "4800",
                                                "--prefix-length",
                                                "16",
                                                "--host-queue-kb",
                                                "512",
                                                "--leaves",
                                                "2",
                                                "--hosts-per-leaf",
                                                "2",
                                                "--oversubscription",
                                                "2",
                                                "--host-rate",
                                                "10Gbps",
                                                "--fabric-rate",
                                                "300Mbps",
                                                "--delay",
                                                "2us",
                                                "--loss",
                                                "0.01",
                                                "--fail-link",
                                                "0:0:2,1:0:1:3",
                                                "--ecn=off",
                                                "--ecn-kmin",
                                                "5000",
                                                "--ecn-kmax",
                                                "60000",
                                                "--ecn-pmax",
                                                "0.5",
                                                "--duration",
                                                "1",
                                                "--seed",
                                                "3",
                                                "--slowdown",
                                                "2",
                                                "--max-lag-ms",
                                                "20",
                                                "--fail-behind"},
                                               {"--taps=" + ns + ":t0",
                                                "--simHosts=" + ns + "-b:c0",
                                                "--controlPort=18600",
                                                "--simTimeout=3",
                                                "--dataPort=4800",
                                                "--prefixLength=16",
                                                "--hostQueueKb=512",
                                                "--hostsPerLeaf=2",
                                                "--hostRate=10Gbps",
                                                "--fabricRate=300Mbps",
                                                "--failLink=0:0:2",
                                                "--ecn=0",
                                                "--ecnKmin=5000",
                                                "--ecnKmax=60000",
                                                "--ecnPmax=0.5",
                                                "--maxLagMs=20",
                                                "--failBehind"}})
    {
        std::vector<std::string> argv = {METAROCE_HIL_FABRIC_BIN};
        argv.insert(argv.end(), args.begin(), args.end());
        std::string out;
        EXPECT_EQ(RunTool(argv, out), 1) << args[2] << ":\n" << out;
        EXPECT_NE(out.find(ns), std::string::npos) << out;
    }
}

TEST(HilToolOptions, FabricRejectsBadValuesBeforeNs3Aborts)
{
    for (const std::vector<std::string>& args :
         std::vector<std::vector<std::string>>{{"--host-rate", "10 Gbps"},
                                               {"--fabric-rate", "fast"},
                                               {"--delay", "1"},
                                               {"--delay", "-1us"},
                                               {"--fail-link", "0:0"},
                                               {"--fail-link", "0:0:3:2"},
                                               {"--loss", "1"},
                                               {"--ecn-kmin", "9", "--ecn-kmax", "8"},
                                               {"--ecn", "maybe"}})
    {
        std::vector<std::string> argv = {METAROCE_HIL_FABRIC_BIN, "--taps", "x:t0"};
        argv.insert(argv.end(), args.begin(), args.end());
        std::string out;
        EXPECT_EQ(RunTool(argv, out), EXIT_USAGE) << args[0] << ":\n" << out;
        EXPECT_NE(out.find(args[0]), std::string::npos) << out;
    }
}
#endif // METAROCE_HIL_FABRIC_BIN

#ifdef METAROCE_HIL_FORWARDER_BIN
// Every option passes the command line; the program stops at the interface (status 1).
TEST(HilToolOptions, ForwarderAcceptsItsOptions)
{
    std::string out;
    EXPECT_EQ(RunTool({METAROCE_HIL_FORWARDER_BIN,
                       "--a",
                       "nx0",
                       "--b",
                       "nx1",
                       "--loss",
                       "0.01",
                       "--loss-ab",
                       "0.02",
                       "--loss-ba=0",
                       "--delay-us",
                       "1000",
                       "--rate-mbps",
                       "100",
                       "--seed",
                       "19",
                       "--udp-port",
                       "4791,4792",
                       "--udp-port",
                       "4793",
                       "--drop-any",
                       "--queue-frames",
                       "128",
                       "--duration",
                       "1",
                       "--report",
                       "0.5"},
                      out),
              1)
        << out;
    EXPECT_NE(out.find("metaroce-hil-forwarder: "), std::string::npos) << out;
    for (const std::vector<std::string>& args :
         std::vector<std::vector<std::string>>{{"--a", "x"},
                                               {"--a", "x", "--b", "x"},
                                               {"--a", "x", "--b", "y", "--udp-port", "0"},
                                               {"--a", "x", "--b", "y", "--queue-frames", "0"}})
    {
        std::vector<std::string> argv = {METAROCE_HIL_FORWARDER_BIN};
        argv.insert(argv.end(), args.begin(), args.end());
        EXPECT_EQ(RunTool(argv, out), EXIT_USAGE) << out;
    }
}
#endif // METAROCE_HIL_FORWARDER_BIN

} // namespace
} // namespace test
} // namespace hil
} // namespace metaroce
