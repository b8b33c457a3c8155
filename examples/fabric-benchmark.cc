/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

/**
 * \file
 * Issue 7, benchmarks 1 and 2: simulation speed and memory.
 *
 * Benchmark 1 (the default): a 3-tier fat tree running a permutation of long flows. Defaults:
 * k=16 (1,024 hosts), 100 Gb/s links, 4096-byte MTU, link delay chosen for about 12 us base
 * RTT across the core, 2 MiB flows, MetaRoCE with 8 paths.
 *
 *   build/bin/metaroce-fabric-benchmark                      # spraying over 8 paths
 *   build/bin/metaroce-fabric-benchmark --paths=1            # one path
 *   build/bin/metaroce-fabric-benchmark --k=8 --bytes=262144 # scaled down
 *
 * Benchmark 2: 64 hosts on a leaf-spine (4 leaves of 16 hosts, 1:1) running an all-to-all or
 * a ring all-reduce (the workloads of examples/scenarios/collective-*-64.textproto):
 *
 *   build/bin/metaroce-fabric-benchmark --workload=alltoall   # 64 x 63 flows of 256 KiB
 *   build/bin/metaroce-fabric-benchmark --workload=ring       # 16 MiB per rank, 4 channels
 *
 * Prints wall time, CPU time, simulated time, packet-hops (every data and ACK frame put on
 * every link, i.e. the MetaRoceNetDevice txFrames counters minus PFC frames), packet-hops per
 * wall-second and per CPU-second, the frames the NICs sent (data, ACKs, other) per MiB
 * delivered, ns-3 events executed per wall-second and the peak RSS of the
 * process. CPU time is the steadier figure on a shared machine.
 *
 * The heap uses transparent huge pages when the machine allows (MetaRoceUseHugePages: the
 * program starts itself again once with GLIBC_TUNABLES=glibc.malloc.hugetlb=1); the last line
 * says how the heap was backed. METAROCE_HUGE_PAGES=0 keeps 4 KiB pages.
 */

#include "ns3/command-line.h"
#include "ns3/metaroce-channel.h"
#include "ns3/metaroce-fabric.h"
#include "ns3/metaroce-huge-pages.h"
#include "ns3/metaroce-net-device.h"
#include "ns3/metaroce-nic.h"
#include "ns3/metaroce-partition.h"
#include "ns3/metaroce-simulator-impl.h"
#include "ns3/metaroce-stack-helper.h"
#include "ns3/metaroce-switch.h"
#include "ns3/metaroce-topology-helper.h"
#include "ns3/metaroce-workload-helper.h"
#include "ns3/nstime.h"
#include "ns3/object-factory.h"
#include "ns3/rng-seed-manager.h"
#include "ns3/simulator-impl.h"
#include "ns3/simulator.h"
#include "ns3/string.h"
#include "ns3/uinteger.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <sys/resource.h>
#include <vector>

using namespace ns3;

namespace
{

/// \return the peak resident set size of this process in MiB.
double
PeakRssMiB()
{
    struct rusage ru
    {
    };

    getrusage(RUSAGE_SELF, &ru);
    return double(ru.ru_maxrss) / 1024.0; // Linux reports KiB
}

/// \return user plus system CPU seconds of this process so far.
double
CpuSeconds()
{
    struct rusage ru
    {
    };

    getrusage(RUSAGE_SELF, &ru);
    return double(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
           double(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e-6;
}

/// \return seconds since \p t0 on a monotonic clock.
double
SecondsSince(std::chrono::steady_clock::time_point t0)
{
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

} // namespace

int
main(int argc, char** argv)
{
    // Transparent huge pages for the heap (may start the program again, once; docs/benchmarks.md).
    const std::string heapPages = MetaRoceUseHugePages(argv);
    // Under mpirun with several ranks (or --mpi): ns-3's DistributedSimulatorImpl, the fat tree
    // split by pod (docs/distributed.md); the figures are summed over the ranks.
    const bool distributed = MetaRoceStartDistributed(&argc, &argv, "metaroce-fabric-benchmark");
    if (!distributed)
    {
        // One process: ns-3's sequential event loop without its per-event overhead, the same
        // order of events and results (ns3/metaroce-simulator-impl.h); NS_GLOBAL_VALUE or
        // --SimulatorImplementationType=ns3::DefaultSimulatorImpl chooses another.
        MetaRoceSimulatorImpl::SelectByDefault();
    }
    std::string workload = "permutation";
    uint32_t k = 16;
    uint32_t leaves = 4;
    uint32_t hostsPerLeaf = 16;
    uint64_t bytes = 0; // 0: the workload's default
    uint32_t channels = 4;
    uint32_t paths = 8;
    uint32_t mtu = 4096;
    double rateGbps = 100;
    double delayNs = 0; // 0: choose for a ~12 us base RTT (fat tree) or 1 us (leaf-spine)
    double rttUs = 12;
    double stopMs = 1000;
    std::string transport = "metaroce";
    std::string scheduler = "ns3::MetaRoceScheduler";
    std::string tieBreak = "Insertion";
    uint32_t seed = 1;
    CommandLine cmd(__FILE__);
    cmd.AddValue("workload",
                 "permutation (1,024-host fat tree), alltoall or ring (64-host leaf-spine)",
                 workload);
    cmd.AddValue("k", "switch radix of the 3-tier fat tree (even); k^3/4 hosts", k);
    cmd.AddValue("leaves", "leaf-spine leaves (alltoall, ring)", leaves);
    cmd.AddValue("hostsPerLeaf", "leaf-spine hosts per leaf (alltoall, ring)", hostsPerLeaf);
    cmd.AddValue("bytes",
                 "bytes per flow (permutation 2 MiB, alltoall 256 KiB) or per rank (ring "
                 "16 MiB); 0 = the default",
                 bytes);
    cmd.AddValue("channels", "ring all-reduce channels", channels);
    cmd.AddValue("paths", "MetaRoCE paths per connection (1 = single path)", paths);
    cmd.AddValue("transport", "metaroce or rocev2", transport);
    cmd.AddValue("mtu", "payload bytes per packet", mtu);
    cmd.AddValue("rate", "link rate, Gb/s", rateGbps);
    cmd.AddValue("rtt", "target base RTT across the fat tree's core, us (sets the delay)", rttUs);
    cmd.AddValue("delay", "link delay, ns (overrides --rtt; leaf-spine default 1000)", delayNs);
    cmd.AddValue("stop", "simulated time limit, ms", stopMs);
    cmd.AddValue("seed", "run number (RngRun) for the permutation and the engines", seed);
    cmd.AddValue("scheduler",
                 "ns-3 event scheduler: ns3::MetaRoceScheduler (the module's 4-ary heap), "
                 "ns3::MapScheduler (ns-3's default), ns3::HeapScheduler, ...",
                 scheduler);
    cmd.AddValue("tieBreak",
                 "with ns3::MetaRoceScheduler: Insertion (ns-3's order of equal-time events) or "
                 "Link (the same order on any number of MPI ranks)",
                 tieBreak);
    bool listFlows = false;
    cmd.AddValue("listFlows",
                 "print the workload's flows (\"id src dst bytes\", host indices) and exit "
                 "without simulating (tools/htsim-compare.sh reads the permutation so)",
                 listFlows);
    bool mpiFlag = false;
    cmd.AddValue("mpi",
                 "distributed run over the MPI ranks (automatic under mpirun -np N > 1)",
                 mpiFlag);
    cmd.Parse(argc, argv);
    const bool fatTree = workload == "permutation";
    if (distributed && workload == "ring")
    {
        std::fprintf(stderr,
                     "error: --workload=ring is not supported in a distributed run (a collective "
                     "spans the ranks; docs/distributed.md)\n");
        return 2;
    }
    if (bytes == 0)
    {
        bytes = workload == "ring" ? 16 * 1024 * 1024 : fatTree ? 2 * 1024 * 1024 : 256 * 1024;
    }
    if ((workload != "permutation" && workload != "alltoall" && workload != "ring") ||
        (fatTree && (k < 2 || k % 2 != 0)) || (!fatTree && (leaves < 1 || hostsPerLeaf < 1)) ||
        paths == 0 || paths > metaroce::ConnectionConfig::MAX_PATHS ||
        (transport != "metaroce" && transport != "rocev2") || rateGbps <= 0 || channels == 0 ||
        (tieBreak != "Insertion" && tieBreak != "Link"))
    {
        std::fprintf(stderr,
                     "error: need workload permutation, alltoall or ring, an even k >= 2, "
                     "leaves and hostsPerLeaf >= 1, 1 <= paths <= 128, channels >= 1, "
                     "transport metaroce or rocev2, rate > 0 and tieBreak Insertion or Link\n");
        return 2;
    }
    RngSeedManager::SetRun(seed);
    ObjectFactory schedulerFactory;
    schedulerFactory.SetTypeId(scheduler);
    if (scheduler == "ns3::MetaRoceScheduler")
    {
        schedulerFactory.Set("TieBreak", StringValue(tieBreak));
    }
    Simulator::SetScheduler(schedulerFactory);
    const uint32_t ranks = MetaRoceGetRankCount();
    const bool root = MetaRoceGetRank() == 0;

    // Base RTT between the farthest hosts: 6 links each way in the 3-tier fat tree, 4 on the
    // leaf-spine. A data frame (MTU payload plus ~100 bytes of headers) is serialised at each
    // hop out; the ACK's serialisation back is small and ignored. On the fat tree the delay is
    // picked so that the sum is --rtt.
    const uint32_t linksEachWay = fatTree ? 6 : 4;
    const double rateBps = rateGbps * 1e9;
    const double dataSerUs = double(mtu + 100) * 8.0 / rateBps * 1e6;
    if (delayNs <= 0)
    {
        delayNs = fatTree
                      ? std::max(1.0, (rttUs - linksEachWay * dataSerUs) / (2 * linksEachWay) * 1e3)
                      : 1000;
    }
    const double propagationUs = 2 * linksEachWay * delayNs / 1e3;
    const double baseRttUs = propagationUs + linksEachWay * dataSerUs;

    const auto tBuild = std::chrono::steady_clock::now();
    MetaRoceTopologyHelper topo;
    topo.SetRankCount(ranks);
    topo.SetHostLinkRate(DataRate(uint64_t(rateBps)));
    topo.SetFabricLinkRate(DataRate(uint64_t(rateBps)));
    topo.SetLinkDelay(NanoSeconds(int64_t(delayNs + 0.5)));
    Ptr<MetaRoceFabric> fabric =
        fatTree ? topo.BuildFatTree(k, 3) : topo.BuildLeafSpine(leaves, hostsPerLeaf, 1.0);
    MetaRoceStackHelper stack;
    stack.SetNicAttribute("Transport", StringValue(transport));
    stack.SetNicAttribute("NumPaths", UintegerValue(paths));
    stack.SetNicAttribute("Mtu", UintegerValue(mtu));
    std::vector<Ptr<MetaRoceNic>> nics = stack.Install(fabric);
    MetaRoceStackHelper::AssignStreams(nics, 100);
    Ptr<MetaRoceWorkloadHelper> load = CreateObject<MetaRoceWorkloadHelper>();
    load->Setup(fabric, nics);
    load->SetStopWhenDone(true);
    std::vector<uint32_t> hosts(fabric->GetHostCount());
    for (uint32_t h = 0; h < hosts.size(); ++h)
    {
        hosts[h] = h;
    }
    if (workload == "permutation")
    {
        load->AddPermutation(bytes, MicroSeconds(1), seed);
    }
    else if (workload == "alltoall")
    {
        load->AddAllToAll(hosts, bytes, MicroSeconds(1));
    }
    else
    {
        load->AddRingAllReduce(hosts, bytes, channels, MicroSeconds(1));
    }
    if (listFlows)
    {
        for (const MetaRoceFlow& f : load->GetFlows())
        {
            std::printf("%u %u %u %llu\n",
                        f.id,
                        f.src,
                        f.dst,
                        static_cast<unsigned long long>(f.bytes));
        }
        Simulator::Destroy();
        return 0;
    }
    Simulator::Stop(MilliSeconds(stopMs));
    const double buildSeconds = SecondsSince(tBuild);

    if (root)
    {
        if (fatTree)
        {
            std::printf("fat tree k=%u (3 tiers, ", k);
        }
        else
        {
            std::printf("leaf-spine %u x %u (", leaves, hostsPerLeaf);
        }
        std::printf("%u hosts, %u switches, %zu links), %s, %s, %u path(s), %lu bytes per %s, "
                    "%.0f Gb/s, MTU %u, link delay %.0f ns, base RTT %.2f us "
                    "(%.2f us propagation + %.2f us serialisation), %s%s, %s, %u rank(s)\n",
                    fabric->GetHostCount(),
                    fabric->GetSwitchCount(),
                    fabric->GetLinks().size(),
                    workload.c_str(),
                    transport.c_str(),
                    paths,
                    static_cast<unsigned long>(bytes),
                    workload == "ring" ? "rank" : "flow",
                    rateGbps,
                    mtu,
                    delayNs,
                    baseRttUs,
                    propagationUs,
                    linksEachWay * dataSerUs,
                    scheduler.c_str(),
                    scheduler == "ns3::MetaRoceScheduler" ? (" " + tieBreak).c_str() : "",
                    Simulator::GetImplementation()->GetInstanceTypeId().GetName().c_str(),
                    ranks);
        std::fflush(stdout);
    }

    const uint64_t events0 = Simulator::GetEventCount();
    const double cpu0 = CpuSeconds();
    const auto tRun = std::chrono::steady_clock::now();
    Simulator::Run();
    const double wall = SecondsSince(tRun);
    const double cpu = CpuSeconds() - cpu0;
    const double simulatedUs = Simulator::Now().GetSeconds() * 1e6;

    uint64_t hops = 0;
    uint64_t pfc = 0;
    for (const MetaRoceLink& link : fabric->GetLinks())
    {
        for (const Ptr<MetaRoceNetDevice>& dev : {link.deviceA, link.deviceB})
        {
            const MetaRoceNetDevice::Counters& c = dev->GetCounters();
            hops += c.txFrames - c.pauseSent - c.resumeSent;
            pfc += c.pauseSent + c.resumeSent;
        }
    }
    uint64_t drops = 0;
    for (uint32_t s = 0; s < fabric->GetSwitchCount(); ++s)
    {
        drops += fabric->GetSwitch(s)->GetCounters().TotalDrops();
    }
    // Each rank counts its own nodes' frames and its hosts' completions: add them up.
    hops = MetaRoceSumOverRanks(hops);
    pfc = MetaRoceSumOverRanks(pfc);
    drops = MetaRoceSumOverRanks(drops);
    const uint64_t events = MetaRoceSumOverRanks(Simulator::GetEventCount() - events0);
    const double cpuAll = double(MetaRoceSumOverRanks(uint64_t(cpu * 1e6))) / 1e6;
    const double rssAll = double(MetaRoceSumOverRanks(uint64_t(PeakRssMiB() * 1024))) / 1024;
    const auto done = static_cast<uint32_t>(MetaRoceSumOverRanks(load->GetFlowsDone()));
    const size_t flows = load->GetFlows().size();
    size_t collectivesDone = 0;
    for (const MetaRoceCollective& c : load->GetCollectives())
    {
        collectivesDone += c.done ? 1 : 0;
    }
    const size_t collectives = load->GetCollectives().size();
    // What the transport did (issue 16's targets on this shape): engine retransmissions and
    // timeouts over all NICs, and the flows' slowdowns (this rank's flows).
    // And the frames the NICs sent per delivered byte (issue 20: ACK coalescing's lever).
    uint64_t retx = 0;
    uint64_t rtos = 0;
    uint64_t dataFrames = 0;
    uint64_t ackFrames = 0;
    uint64_t otherFrames = 0;
    uint64_t placed = 0;
    for (const Ptr<MetaRoceNic>& nic : nics)
    {
        const metaroce::CounterSet& c = nic->GetEngineCounters();
        retx += c.Get(metaroce::Counter::TX_RETRANSMIT);
        rtos += c.Get(metaroce::Counter::RTO);
        dataFrames += c.Get(metaroce::Counter::TX_DATA) + c.Get(metaroce::Counter::TX_RETRANSMIT);
        ackFrames += c.Get(metaroce::Counter::TX_ACK);
        otherFrames += c.Get(metaroce::Counter::TX_NAK) + c.Get(metaroce::Counter::TX_PROBE) +
                       c.Get(metaroce::Counter::TX_CNP);
        placed += c.Get(metaroce::Counter::BYTES_PLACED);
    }
    retx = MetaRoceSumOverRanks(retx);
    rtos = MetaRoceSumOverRanks(rtos);
    dataFrames = MetaRoceSumOverRanks(dataFrames);
    ackFrames = MetaRoceSumOverRanks(ackFrames);
    otherFrames = MetaRoceSumOverRanks(otherFrames);
    placed = MetaRoceSumOverRanks(placed);
    std::vector<double> slowdowns;
    for (const MetaRoceFlow& f : load->GetFlows())
    {
        if (f.done && f.idealFct.IsStrictlyPositive())
        {
            slowdowns.push_back(f.Slowdown());
        }
    }
    std::sort(slowdowns.begin(), slowdowns.end());

    if (!root)
    {
        Simulator::Destroy();
        MetaRoceDisableDistributed();
        return 0;
    }
    std::printf("flows %u/%zu done; collectives %zu/%zu done; switch drops %lu; PFC frames %lu\n",
                done,
                flows,
                collectivesDone,
                collectives,
                static_cast<unsigned long>(drops),
                static_cast<unsigned long>(pfc));
    std::printf("retransmissions %lu; timeouts %lu",
                static_cast<unsigned long>(retx),
                static_cast<unsigned long>(rtos));
    if (ranks == 1 && !slowdowns.empty())
    {
        double sum = 0;
        for (double x : slowdowns)
        {
            sum += x;
        }
        const size_t p99 = std::min(slowdowns.size() - 1, (slowdowns.size() * 99 + 99) / 100 - 1);
        std::printf("; flow slowdown mean %.3f p50 %.3f p99 %.3f max %.3f\n",
                    sum / slowdowns.size(),
                    slowdowns[slowdowns.size() / 2],
                    slowdowns[p99],
                    slowdowns.back());
    }
    else
    {
        std::printf("; flow slowdown %s\n",
                    ranks == 1 ? "(no flows)" : "(per rank, not gathered under MPI)");
    }
    std::printf("build %.2f s; wall %.2f s; cpu %.2f s; simulated %.1f us; packet-hops %lu; "
                "packet-hops/wall-s %.0f; packet-hops/cpu-s %.0f; events %lu; events/wall-s "
                "%.0f; peak RSS %.0f MiB\n",
                buildSeconds,
                wall,
                cpuAll,
                simulatedUs,
                static_cast<unsigned long>(hops),
                double(hops) / wall,
                double(hops) / cpuAll,
                static_cast<unsigned long>(events),
                double(events) / wall,
                rssAll);
    const double mib = double(placed) / (1024.0 * 1024.0);
    const uint64_t frames = dataFrames + ackFrames + otherFrames;
    std::printf("NIC frames %lu (data %lu, ACK %lu, other %lu); delivered %.1f MiB; per MiB "
                "delivered: %.1f frames (%.1f ACKs), %.0f packet-hops\n",
                static_cast<unsigned long>(frames),
                static_cast<unsigned long>(dataFrames),
                static_cast<unsigned long>(ackFrames),
                static_cast<unsigned long>(otherFrames),
                mib,
                mib > 0 ? double(frames) / mib : 0.0,
                mib > 0 ? double(ackFrames) / mib : 0.0,
                mib > 0 ? double(hops) / mib : 0.0);
    std::printf("heap: %s; %.0f MiB in huge pages at the end%s\n",
                heapPages.c_str(),
                double(MetaRoceAnonHugePageBytes()) / (1024.0 * 1024.0),
                ranks > 1 ? " (rank 0)" : "");
    if (ranks > 1)
    {
        std::printf("ranks %u: cpu of rank 0 %.2f s, all ranks %.2f s; peak RSS summed over the "
                    "ranks\n",
                    ranks,
                    cpu,
                    cpuAll);
    }
    Simulator::Destroy();
    MetaRoceDisableDistributed();
    return done == flows && collectivesDone == collectives ? 0 : 1;
}
