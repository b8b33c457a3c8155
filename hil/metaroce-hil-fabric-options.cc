/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#include "metaroce-hil-fabric-options.h"

#include "metaroce-hil-options.h"

#include "ns3/data-rate.h"
#include "ns3/nstime.h"

#include <cctype>
#include <cstdlib>
#include <sstream>

namespace metaroce
{
namespace hil
{
namespace
{

/// \return \p text split at \p separator (empty fields kept; none for an empty text).
std::vector<std::string>
Split(const std::string& text, char separator)
{
    std::vector<std::string> fields;
    std::string field;
    std::istringstream in(text);
    while (std::getline(in, field, separator))
    {
        fields.push_back(field);
    }
    if (!text.empty() && text.back() == separator)
    {
        fields.emplace_back();
    }
    return fields;
}

/// \return true if \p text is an ns-3 DataRate ("10Gbps"); ns-3 aborts on some bad ones.
bool
IsDataRate(const std::string& text)
{
    if (text.empty() || text.find_first_of(" \t") != std::string::npos)
    {
        return false;
    }
    ns3::DataRateValue value;
    return value.DeserializeFromString(text, ns3::MakeDataRateChecker());
}

/// \return true if \p text is a time >= 0 with an ns-3 unit ("1us"); ns-3 aborts on bad ones.
bool
IsDelay(const std::string& text)
{
    char* end = nullptr;
    const double v = std::strtod(text.c_str(), &end);
    if (text.empty() || end == text.c_str() || !(v >= 0))
    {
        return false;
    }
    const std::string unit(end);
    for (const char* known : {"s", "ms", "us", "ns", "ps", "fs", "min", "h", "d", "y"})
    {
        if (unit == known)
        {
            return true;
        }
    }
    return false;
}

/// \return a parser of NETNS:NAME[,...] into \p target (\p needNetns: NETNS may not be empty).
ValueParser
TapList(std::vector<TapSpec>& target, bool needNetns)
{
    return [&target, needNetns](const std::string& text) -> std::string {
        const std::string expected =
            needNetns ? "NETNS:NAME[,...] (NETNS: the namespace of the control TAP)"
                      : "[NETNS:]NAME[,...]";
        std::vector<TapSpec> specs;
        for (const std::string& entry : Split(text, ','))
        {
            TapSpec spec;
            const size_t colon = entry.find(':');
            spec.name = colon == std::string::npos ? entry : entry.substr(colon + 1);
            spec.netns = colon == std::string::npos ? "" : entry.substr(0, colon);
            if (spec.name.empty() || (needNetns && spec.netns.empty()))
            {
                return expected;
            }
            specs.push_back(spec);
        }
        target = specs;
        return "";
    };
}

/// \return a parser of LEAF:SPINE:START[:STOP][,...] into \p target.
ValueParser
FailList(std::vector<FailSpec>& target)
{
    return [&target](const std::string& text) -> std::string {
        std::vector<FailSpec> specs;
        for (const std::string& entry : Split(text, ','))
        {
            const std::vector<std::string> f = Split(entry, ':');
            FailSpec spec{0, 0, 0, -1};
            if ((f.size() != 3 && f.size() != 4) || !Number(spec.leaf)(f[0]).empty() ||
                !Number(spec.spine)(f[1]).empty() || !Real(spec.start, 0, 1e6)(f[2]).empty() ||
                (f.size() == 4 &&
                 (!Real(spec.stop, 0, 1e6)(f[3]).empty() || spec.stop <= spec.start)))
            {
                return std::string("LEAF:SPINE:START_S[:STOP_S][,...] (STOP after START)");
            }
            specs.push_back(spec);
        }
        target = specs;
        return "";
    };
}

/// Add the options and their deprecated camelCase spellings.
void
AddFabricOptions(ToolOptions& o, FabricOptions& p)
{
    o.Section("Hosts");
    o.Add("taps",
          "[NETNS:]NAME[,...]",
          "TAP devices, created in namespace NETNS (empty: this one); the i-th takes the place "
          "of host i/leaves under leaf i%leaves (required)",
          TapList(p.taps, false));
    o.Add("sim-hosts",
          "NETNS:NAME[,...]",
          "simulated hosts running the engine (MetaRoceNic) that serve metaroce-perf clients: "
          "NETNS:NAME names the control TAP that carries each one's TCP control plane, created "
          "in namespace NETNS (not a client's); the j-th takes the place after the --taps hosts "
          "(position taps+j)",
          TapList(p.simHosts, true));
    o.Add("control-port",
          "N",
          "TCP port of the simulated hosts' control plane (default 18515)",
          Number(p.controlPort, 1));
    o.Add("sim-timeout",
          "SECONDS",
          "simulated hosts: control-plane silence limit and wait for stragglers, at most 3600 "
          "(default 5)",
          Positive(p.simTimeout, 3600));
    o.Add("data-port",
          "N",
          "UDP port of RoCE datagrams (the rest bypasses the fabric) (default 4791)",
          Number(p.dataPort, 1));
    o.Add("prefix-length",
          "N",
          "prefix length of the TAP addresses, 8..30 (default 16)",
          Number(p.prefixLength, 8, 30));
    o.Add("host-queue-kb",
          "KIB",
          "KiB a TAP host's port queues before dropping (default 2048)",
          Number(p.hostQueueKb));
    o.Section("Fabric");
    o.Add("leaves", "N", "leaf switches, 1..256 (default 2)", Number(p.leaves, 1, 256));
    o.Add("hosts-per-leaf",
          "N",
          "hosts per leaf, 1..254 (default 2)",
          Number(p.hostsPerLeaf, 1, 254));
    o.Add("oversubscription",
          "X",
          "leaf oversubscription; spines = ceil(hosts-per-leaf x host-rate / (oversubscription "
          "x fabric-rate)) (default 1)",
          Positive(p.oversubscription));
    o.Add("host-rate",
          "RATE",
          "host link rate (default 10Gbps)",
          Matching(p.hostRate, IsDataRate, "an ns-3 data rate such as 10Gbps"));
    o.Add("fabric-rate",
          "RATE",
          "leaf-spine link rate (default 10Gbps)",
          Matching(p.fabricRate, IsDataRate, "an ns-3 data rate such as 10Gbps"));
    o.Add("delay",
          "TIME",
          "link propagation delay (default 1us)",
          Matching(p.linkDelay, IsDelay, "a time with a unit such as 1us"));
    o.Add("loss",
          "P",
          "Bernoulli loss per frame on every leaf-spine link, each direction (a leaf-to-leaf "
          "crossing passes two links), below 1 (default 0)",
          Real(p.loss, 0, 1));
    o.Add("fail-link",
          "SPEC[,...]",
          "fail links, each SPEC LEAF:SPINE:START_S[:STOP_S] in seconds of simulated time (STOP "
          "omitted: for good)",
          FailList(p.failLinks));
    o.AddFlag("ecn", p.ecn, "ECN marking on switch egress queues (default on; --ecn=off)");
    o.Add("ecn-kmin", "BYTES", "ECN Kmin (default 100000)", Number(p.ecnKmin));
    o.Add("ecn-kmax", "BYTES", "ECN Kmax, at least Kmin (default 400000)", Number(p.ecnKmax));
    o.Add("ecn-pmax", "P", "ECN marking probability at Kmax (default 0.2)", Real(p.ecnPmax, 0, 1));
    o.Section("Run");
    o.Add("duration",
          "SECONDS",
          "seconds to run (default 0: until SIGINT/SIGTERM)",
          Real(p.duration, 0, UNBOUNDED));
    o.Add("seed", "N", "ns-3 run number (loss and ECN draws) (default 1)", Number(p.seed));
    o.Add("pcap",
          "PREFIX",
          "write pcap files PREFIX-<node>-<device>.pcap of the host ports",
          Text(p.pcap));
    o.Add("slowdown",
          "K",
          "run the fabric K times slower than modelled, 1..1000: link rates / K, propagation "
          "delays and --fail-link times x K (docs/hil.md, \"Keeping up\") (default 1)",
          Real(p.slowdown, 1, 1000));
    o.Add("max-lag-ms",
          "MS",
          "the run fell behind if the simulation lagged the wall clock by more than this, at "
          "most 60000 (default 10)",
          Positive(p.maxLagMs, 60000));
    o.Add("lag-ecn-us",
          "US",
          "mark CE on ECN-capable RoCE frames from a TAP while the simulation lags the wall "
          "clock by more than US microseconds, so that real senders slow down (0: off; "
          "default 1000; docs/hil.md, \"Keeping up\")",
          Real(p.lagEcnUs, 0, UNBOUNDED));
    o.AddFlag("fail-behind", p.failBehind, "exit with status 3 if the run fell behind");
    o.Add("simulator",
          "metaroce|ns3",
          "the real-time event loop: metaroce (ns3::MetaRoceRealtimeSimulatorImpl, no lock per "
          "event, waits without spinning) or ns3 (ns-3's RealtimeSimulatorImpl, best effort) "
          "(default metaroce; docs/hil.md, \"Keeping up\")",
          Choice(p.simulator, {"metaroce", "ns3"}));
    // The ns-3 CommandLine spellings of earlier releases.
    for (const char* name : {"sim-hosts",
                             "control-port",
                             "sim-timeout",
                             "data-port",
                             "prefix-length",
                             "host-queue-kb",
                             "hosts-per-leaf",
                             "host-rate",
                             "fabric-rate",
                             "fail-link",
                             "ecn-kmin",
                             "ecn-kmax",
                             "ecn-pmax",
                             "max-lag-ms",
                             "fail-behind"})
    {
        std::string camel;
        for (const char* c = name; *c != '\0'; ++c)
        {
            camel += *c == '-' ? char(std::toupper(*++c)) : *c;
        }
        o.Alias(camel, name);
    }
}

} // namespace

int
ParseFabricOptions(int argc, char** argv, FabricOptions& opts)
{
    ToolOptions o("metaroce-hil-fabric",
                  "usage: metaroce-hil-fabric --taps [NETNS:]NAME[,...] [options]\n"
                  "A simulated leaf-spine fabric in real time with TAP devices as host ports: "
                  "real daemons in\nnetwork namespaces talk through simulated switches "
                  "(docs/hil.md, \"Mixed runs\").\n"
                  "Example: metaroce-hil-fabric --taps a:mr0,b:mr1 --loss 0.01 --fail-link 0:0:2");
    AddFabricOptions(o, opts);
    o.Epilog("Exit status: 0 done, 1 error (or a simulated host failed), 3 fell behind with "
             "--fail-behind, 64 usage error.");
    const int status = o.Parse(argc, argv);
    if (status >= 0)
    {
        return status;
    }
    if (opts.taps.empty())
    {
        return o.UsageError("give at least one TAP device with --taps NETNS:NAME");
    }
    if (opts.loss >= 1)
    {
        return o.UsageError("--loss must be below 1");
    }
    if (opts.ecnKmin > opts.ecnKmax)
    {
        return o.UsageError("--ecn-kmin must not exceed --ecn-kmax");
    }
    for (const TapSpec& sim : opts.simHosts)
    {
        for (const TapSpec& tap : opts.taps)
        {
            if (tap.netns == sim.netns)
            {
                return o.UsageError("--sim-hosts namespace '" + sim.netns +
                                    "' holds a --taps device: the simulated host's address "
                                    "would be local there; use a namespace of its own");
            }
        }
    }
    if (opts.taps.size() + opts.simHosts.size() > uint64_t(opts.leaves) * opts.hostsPerLeaf)
    {
        return o.UsageError("more --taps and --sim-hosts entries than hosts (--leaves x "
                            "--hosts-per-leaf)");
    }
    return -1;
}

} // namespace hil
} // namespace metaroce
