/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

/**
 * \file
 * A short simulated transfer captured to pcap, for Wireshark (tests/wireshark runs tshark over
 * it). One flow from host 0 to the last host over a lossy host link (Bernoulli loss, so
 * retransmissions appear), with the ICRC computed (NIC attribute Icrc=true) so that Wireshark
 * can validate it. The capture is of host 0's port: every frame it sends (before the loss)
 * and every frame it receives.
 *
 *   metaroce-pcap-capture --out=DIR --transport=metaroce      (DIR/metaroce.pcap)
 *   metaroce-pcap-capture --out=DIR --transport=rocev2        (DIR/rocev2.pcap)
 *   metaroce-pcap-capture --topology=leafspine --paths=4 --loss=0.05
 *
 * Writes DIR/<transport>.pcap and DIR/<transport>.json (what was run: transport, paths,
 * hosts, addresses, frames lost, flow completion). The default DIR is ./metaroce-pcap-capture
 * under the current directory. Exits 0 when the flow completes.
 */

#include "ns3/boolean.h"
#include "ns3/command-line.h"
#include "ns3/metaroce-channel.h"
#include "ns3/metaroce-fabric.h"
#include "ns3/metaroce-net-device.h"
#include "ns3/metaroce-nic.h"
#include "ns3/metaroce-stack-helper.h"
#include "ns3/metaroce-topology-helper.h"
#include "ns3/metaroce-workload-helper.h"
#include "ns3/rng-seed-manager.h"
#include "ns3/simulator.h"
#include "ns3/string.h"
#include "ns3/uinteger.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <system_error>
#include <vector>

using namespace ns3;

namespace
{

std::string
Dotted(uint32_t a)
{
    return std::to_string(a >> 24) + "." + std::to_string((a >> 16) & 0xFF) + "." +
           std::to_string((a >> 8) & 0xFF) + "." + std::to_string(a & 0xFF);
}

} // namespace

int
main(int argc, char** argv)
{
    std::string out = "metaroce-pcap-capture";
    std::string transport = "metaroce";
    std::string topology = "single";
    uint64_t bytes = 256 * 1024;
    uint32_t paths = 4;
    double loss = 0.03;
    uint32_t seed = 1;
    CommandLine cmd(__FILE__);
    cmd.AddValue("out", "output directory (created if needed)", out);
    cmd.AddValue("transport", "metaroce or rocev2", transport);
    cmd.AddValue("topology",
                 "single (2 hosts, one switch) or leafspine (2 leaves, 2 spines)",
                 topology);
    cmd.AddValue("bytes", "bytes of the transfer", bytes);
    cmd.AddValue("paths", "MetaRoCE paths per connection (1..64)", paths);
    cmd.AddValue("loss", "Bernoulli frame loss on host 0's link, both directions", loss);
    cmd.AddValue("seed", "run number (RngRun)", seed);
    cmd.Parse(argc, argv);
    if ((transport != "metaroce" && transport != "rocev2") ||
        (topology != "single" && topology != "leafspine") || paths == 0 || paths > 64 ||
        bytes == 0 || loss < 0 || loss >= 1)
    {
        std::fprintf(stderr,
                     "error: need transport metaroce|rocev2, topology single|leafspine, "
                     "paths 1..64, bytes > 0, 0 <= loss < 1\n");
        return 2;
    }
    std::error_code ec;
    std::filesystem::create_directories(out, ec);
    if (ec)
    {
        std::fprintf(stderr, "error: cannot create %s: %s\n", out.c_str(), ec.message().c_str());
        return 2;
    }
    const std::string pcap = out + "/" + transport + ".pcap";
    const std::string summary = out + "/" + transport + ".json";
    RngSeedManager::SetRun(seed);

    MetaRoceTopologyHelper topo;
    Ptr<MetaRoceFabric> fabric =
        topology == "single" ? topo.BuildSingleSwitch(2) : topo.BuildLeafSpine(2, 2);
    const uint32_t src = 0;
    const uint32_t dst = topo.GetHostCount() - 1; // on the other leaf in a leaf-spine
    Ptr<MetaRoceChannel> link =
        fabric->GetChannel(fabric->GetHost(src), topo.GetHostPorts(src)[0]->GetPeer()->GetNode());
    if (loss > 0)
    {
        fabric->SetBernoulliLoss(link, loss);
    }
    fabric->AssignStreams(10);

    MetaRoceStackHelper stack;
    stack.SetNicAttribute("Transport", StringValue(transport));
    stack.SetNicAttribute("Icrc", BooleanValue(true)); // so Wireshark can validate it
    stack.SetNicAttribute("NumPaths", UintegerValue(paths));
    std::vector<Ptr<MetaRoceNic>> nics = stack.Install(fabric);
    MetaRoceStackHelper::AssignStreams(nics, 100);

    topo.EnablePcap(pcap, topo.GetHostPorts(src)[0], false, true);

    Ptr<MetaRoceWorkloadHelper> load = CreateObject<MetaRoceWorkloadHelper>();
    load->Setup(fabric, nics);
    load->SetStopWhenDone(true);
    load->AddFlow(src, dst, bytes, MicroSeconds(1));
    Simulator::Stop(Seconds(1));
    Simulator::Run();

    const MetaRoceFlow& flow = load->GetFlows().at(0);
    // Direction 0 carries what device 0 sends.
    const uint32_t sent = link->GetDevice(0) == topo.GetHostPorts(src)[0] ? 0 : 1;
    const uint64_t lostSent = link->GetDropped(sent);
    const uint64_t lostReceived = link->GetDropped(1 - sent);
    std::printf("%s over %s, %lu bytes, %u paths, loss %.3f: %s in %.1f us; lost %lu frames sent "
                "by host 0, %lu towards it; capture %s\n",
                transport.c_str(),
                topology.c_str(),
                static_cast<unsigned long>(bytes),
                paths,
                loss,
                flow.done ? "done" : "INCOMPLETE",
                flow.done ? flow.Fct().GetMicroSeconds() * 1.0 : -1.0,
                static_cast<unsigned long>(lostSent),
                static_cast<unsigned long>(lostReceived),
                pcap.c_str());
    {
        std::ofstream js(summary);
        js << "{\"transport\": \"" << transport << "\", \"topology\": \"" << topology
           << "\", \"paths\": " << paths << ", \"bytes\": " << bytes << ", \"loss\": " << loss
           << ", \"src\": \"" << Dotted(fabric->GetHostAddress(src)) << "\", \"dst\": \""
           << Dotted(fabric->GetHostAddress(dst)) << "\", \"lost_sent\": " << lostSent
           << ", \"lost_received\": " << lostReceived
           << ", \"done\": " << (flow.done ? "true" : "false") << ", \"pcap\": \"" << transport
           << ".pcap\"}\n";
    }
    // Destroying the simulation releases the trace sinks, which closes the pcap file.
    Simulator::Destroy();
    return flow.done ? 0 : 1;
}
