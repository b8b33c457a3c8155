/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

/**
 * \file
 * Canonical example: a permutation workload on a k-ary fat tree. Every host sends one flow
 * to a distinct host; the program prints the flow completion time slowdown (FCT / ideal
 * FCT) statistics and switch drops. Compare spraying with a single path:
 *
 *   metaroce-fat-tree-permutation --k=4 --paths=8
 *   metaroce-fat-tree-permutation --k=4 --paths=1
 *   metaroce-fat-tree-permutation --k=4 --transport=rocev2
 */

#include "ns3/command-line.h"
#include "ns3/metaroce-fabric.h"
#include "ns3/metaroce-huge-pages.h"
#include "ns3/metaroce-nic.h"
#include "ns3/metaroce-stack-helper.h"
#include "ns3/metaroce-switch.h"
#include "ns3/metaroce-topology-helper.h"
#include "ns3/metaroce-workload-helper.h"
#include "ns3/rng-seed-manager.h"
#include "ns3/simulator.h"
#include "ns3/string.h"
#include "ns3/uinteger.h"

#include <algorithm>
#include <cstdio>
#include <vector>

using namespace ns3;

int
main(int argc, char** argv)
{
    // Large fabrics run faster on a heap of huge pages; this may start the program again, once
    // (ns3/metaroce-huge-pages.h). METAROCE_HUGE_PAGES=0 turns it off.
    MetaRoceUseHugePages(argv);
    uint32_t k = 4;
    uint32_t tiers = 3;
    uint64_t bytes = 2 * 1024 * 1024;
    uint32_t paths = 8;
    std::string transport = "metaroce";
    uint32_t seed = 1;
    CommandLine cmd(__FILE__);
    cmd.AddValue("k", "switch radix of the fat tree (even)", k);
    cmd.AddValue("tiers", "2 or 3 tiers", tiers);
    cmd.AddValue("bytes", "bytes per flow", bytes);
    cmd.AddValue("paths", "MetaRoCE paths per connection (1 = single path)", paths);
    cmd.AddValue("transport", "metaroce or rocev2", transport);
    cmd.AddValue("seed", "run number (RngRun) for the permutation and the engines", seed);
    cmd.Parse(argc, argv);
    if (k < 2 || k % 2 != 0 || (tiers != 2 && tiers != 3) || bytes == 0 || paths == 0 ||
        paths > 64 || (transport != "metaroce" && transport != "rocev2"))
    {
        std::fprintf(stderr,
                     "error: need an even k >= 2, tiers 2 or 3, bytes > 0, "
                     "1 <= paths <= 64 and transport metaroce or rocev2\n");
        return 2;
    }
    RngSeedManager::SetRun(seed);

    MetaRoceTopologyHelper topo;
    Ptr<MetaRoceFabric> fabric = topo.BuildFatTree(k, tiers);
    MetaRoceStackHelper stack;
    stack.SetNicAttribute("Transport", StringValue(transport));
    stack.SetNicAttribute("NumPaths", UintegerValue(paths));
    std::vector<Ptr<MetaRoceNic>> nics = stack.Install(fabric);
    MetaRoceStackHelper::AssignStreams(nics, 100);
    Ptr<MetaRoceWorkloadHelper> load = CreateObject<MetaRoceWorkloadHelper>();
    load->Setup(fabric, nics);
    load->SetStopWhenDone(true);
    load->AddPermutation(bytes, MicroSeconds(1), seed);
    Simulator::Stop(Seconds(1));
    Simulator::Run();

    std::vector<double> slowdown;
    uint32_t failed = 0;
    for (const MetaRoceFlow& f : load->GetFlows())
    {
        if (f.done)
        {
            slowdown.push_back(f.Slowdown());
        }
        failed += !f.done;
    }
    std::sort(slowdown.begin(), slowdown.end());
    uint64_t drops = 0;
    for (uint32_t s = 0; s < fabric->GetSwitchCount(); ++s)
    {
        drops += fabric->GetSwitch(s)->GetCounters().TotalDrops();
    }
    std::printf("fat tree k=%u (%u tiers, %u hosts), %s, %u path(s), %lu-byte flows\n",
                k,
                tiers,
                fabric->GetHostCount(),
                transport.c_str(),
                paths,
                static_cast<unsigned long>(bytes));
    if (slowdown.empty())
    {
        std::printf("no flow completed (%u incomplete)\n", failed);
        Simulator::Destroy();
        return 1;
    }
    double mean = 0;
    for (double s : slowdown)
    {
        mean += s / double(slowdown.size());
    }
    auto pct = [&](double q) { return slowdown[size_t(q * double(slowdown.size() - 1))]; };
    std::printf("flows %zu done, %u incomplete; slowdown mean %.2f, p50 %.2f, p99 %.2f, max "
                "%.2f; switch drops %lu; simulated %.1f us\n",
                slowdown.size(),
                failed,
                mean,
                pct(0.5),
                pct(0.99),
                slowdown.back(),
                static_cast<unsigned long>(drops),
                Simulator::Now().GetSeconds() * 1e6);
    Simulator::Destroy();
    return failed == 0 ? 0 : 1;
}
