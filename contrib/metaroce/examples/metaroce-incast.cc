/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

/**
 * \file
 * Canonical example: an N-to-1 incast through one switch. Prints each flow's completion
 * time, the switch's drops, ECN marks and pause frames, and the peak queue.
 *
 *   metaroce-incast --senders=16 --transport=metaroce              (lossy, rate hints)
 *   metaroce-incast --senders=16 --transport=metaroce --hint=false (ECN AIMD only)
 *   metaroce-incast --senders=16 --transport=rocev2 --pfc=true     (lossless RoCEv2)
 */

#include "ns3/boolean.h"
#include "ns3/command-line.h"
#include "ns3/metaroce-fabric.h"
#include "ns3/metaroce-nic.h"
#include "ns3/metaroce-stack-helper.h"
#include "ns3/metaroce-switch.h"
#include "ns3/metaroce-topology-helper.h"
#include "ns3/metaroce-workload-helper.h"
#include "ns3/rng-seed-manager.h"
#include "ns3/simulator.h"
#include "ns3/string.h"

#include <cstdio>
#include <vector>

using namespace ns3;

int
main(int argc, char** argv)
{
    uint32_t senders = 16;
    uint64_t bytes = 512 * 1024;
    std::string transport = "metaroce";
    bool pfc = false;
    bool hint = true;
    uint64_t buffer = 4 * 1024 * 1024;
    uint32_t seed = 1;
    CommandLine cmd(__FILE__);
    cmd.AddValue("senders", "number of senders", senders);
    cmd.AddValue("bytes", "bytes per sender", bytes);
    cmd.AddValue("transport", "metaroce or rocev2", transport);
    cmd.AddValue("pfc", "run PFC in the switch", pfc);
    cmd.AddValue("hint", "receiver fair-share rate hints (MetaRoCE)", hint);
    cmd.AddValue("buffer", "switch shared buffer, bytes", buffer);
    cmd.AddValue("seed", "run number (RngRun)", seed);
    cmd.Parse(argc, argv);
    if (senders == 0 || senders > 1000 || bytes == 0 ||
        (transport != "metaroce" && transport != "rocev2"))
    {
        std::fprintf(stderr,
                     "error: need 1..1000 senders, bytes > 0, transport metaroce or "
                     "rocev2\n");
        return 2;
    }
    RngSeedManager::SetRun(seed);

    MetaRoceTopologyHelper topo;
    topo.SetBuffer(MetaRoceSwitch::SHALLOW, buffer);
    topo.SetPfc(pfc);
    Ptr<MetaRoceFabric> fabric = topo.BuildSingleSwitch(senders + 1);
    MetaRoceStackHelper stack;
    stack.SetNicAttribute("Transport", StringValue(transport));
    stack.SetNicAttribute("RateHint", BooleanValue(hint));
    std::vector<Ptr<MetaRoceNic>> nics = stack.Install(fabric);
    // Every random variable on a fixed stream, the switch's ECN marking too, so that the
    // output does not depend on how many streams other modules drew first (in-tree test).
    const int64_t used = MetaRoceStackHelper::AssignStreams(nics, 100);
    fabric->AssignStreams(100 + used);
    Ptr<MetaRoceWorkloadHelper> load = CreateObject<MetaRoceWorkloadHelper>();
    load->Setup(fabric, nics);
    load->SetStopWhenDone(true);
    std::vector<uint32_t> from;
    for (uint32_t i = 0; i < senders; ++i)
    {
        from.push_back(i);
    }
    load->AddIncast(from, senders, bytes, MicroSeconds(1));
    Simulator::Stop(Seconds(1));
    Simulator::Run();

    std::printf("%u-to-1 incast, %lu bytes each, %s, PFC %s, rate hint %s\n",
                senders,
                static_cast<unsigned long>(bytes),
                transport.c_str(),
                pfc ? "on" : "off",
                hint ? "on" : "off");
    uint32_t done = 0;
    for (const MetaRoceFlow& f : load->GetFlows())
    {
        done += f.done;
        std::printf("  flow %3u: host %3u  FCT %8.1f us  ideal %8.1f us  %s\n",
                    f.id,
                    f.src,
                    f.done ? f.Fct().GetMicroSeconds() * 1.0 : -1.0,
                    f.idealFct.GetMicroSeconds() * 1.0,
                    f.done ? "" : "INCOMPLETE");
    }
    const MetaRoceSwitch::Counters& c = fabric->GetSwitch(0)->GetCounters();
    std::printf("switch: drops %lu, ECN marks %lu, pause frames sent %lu\n",
                static_cast<unsigned long>(c.TotalDrops()),
                static_cast<unsigned long>(c.ecnMarked),
                static_cast<unsigned long>(c.pfcPauseSent));
    std::printf("%u/%u flows done at %.1f us\n",
                done,
                senders,
                Simulator::Now().GetSeconds() * 1e6);
    Simulator::Destroy();
    return done == senders ? 0 : 1;
}
