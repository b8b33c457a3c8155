/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

/**
 * \file
 * Issue 7, benchmark 3 (NIC part): heap bytes per connection in the ns-3 NIC model.
 *
 *   build/bin/metaroce-nic-memory                       # 4,000 connections, MetaRoCE, 8 paths
 *   build/bin/metaroce-nic-memory --transport=rocev2
 *   build/bin/metaroce-nic-memory --connections=4000 --bytes=65536
 *
 * Two hosts on one switch. Host A opens --connections connections to host B
 * (MetaRoceConnectionHelper::Connect: one QP on each NIC, so each NIC holds that many). The
 * heap held by the process (glibc mallinfo2().uordblks) is read before and after, and again
 * after every connection has carried one RDMA WRITE of --bytes and the simulation has drained
 * (the pools a connection grows on first use are then included). Figures are per connection
 * (per QP, i.e. the delta over 2 x connections QPs), next to the engine's own StateBytes()
 * estimate of one connection.
 */

#include "ns3/command-line.h"
#include "ns3/metaroce-fabric.h"
#include "ns3/metaroce-nic.h"
#include "ns3/metaroce-stack-helper.h"
#include "ns3/metaroce-topology-helper.h"
#include "ns3/simulator.h"
#include "ns3/string.h"
#include "ns3/uinteger.h"

#include <cstdio>
#include <malloc.h>
#include <string>
#include <vector>

using namespace ns3;

namespace
{

/// \return bytes of heap in use (glibc arenas plus mmapped chunks).
size_t
HeapInUse()
{
    const struct mallinfo2 mi = mallinfo2();
    return mi.uordblks + mi.hblkhd;
}

uint32_t g_completions = 0; //!< successful send completions

/// Count successful completions.
void
OnCompletion(Ptr<MetaRoceNic> /* nic */, const metaroce::Completion& c)
{
    g_completions += c.status == metaroce::WcStatus::SUCCESS ? 1 : 0;
}

} // namespace

int
main(int argc, char** argv)
{
    uint32_t connections = 4000;
    uint32_t paths = 8;
    uint64_t bytes = 65536;
    std::string transport = "metaroce";
    CommandLine cmd(__FILE__);
    cmd.AddValue("connections", "connections from host A to host B", connections);
    cmd.AddValue("transport", "metaroce or rocev2", transport);
    cmd.AddValue("paths", "MetaRoCE paths per connection", paths);
    cmd.AddValue("bytes", "bytes of the one WRITE each connection carries (0 = none)", bytes);
    cmd.Parse(argc, argv);
    if (connections == 0 || paths == 0 || paths > 64 ||
        (transport != "metaroce" && transport != "rocev2"))
    {
        std::fprintf(stderr,
                     "error: need connections > 0, 1 <= paths <= 64, "
                     "transport metaroce or rocev2\n");
        return 2;
    }

    MetaRoceTopologyHelper topo;
    Ptr<MetaRoceFabric> fabric = topo.BuildSingleSwitch(2);
    MetaRoceStackHelper stack;
    stack.SetNicAttribute("Transport", StringValue(transport));
    stack.SetNicAttribute("NumPaths", UintegerValue(paths));
    std::vector<Ptr<MetaRoceNic>> nics = stack.Install(fabric);
    Ptr<MetaRoceNic> a = nics[0];
    Ptr<MetaRoceNic> b = nics[1];
    a->SetCompletionCallback(MakeCallback(&OnCompletion));
    const uint32_t access =
        metaroce::ACCESS_LOCAL_WRITE | metaroce::ACCESS_REMOTE_WRITE | metaroce::ACCESS_REMOTE_READ;
    const metaroce::MemoryRegion src = a->RegisterMemory(nullptr, uint64_t(1) << 40, access);
    const metaroce::MemoryRegion dst = b->RegisterMemory(nullptr, uint64_t(1) << 40, access);
    // The first pair sizes the endpoint-wide tables; it is not counted.
    MetaRoceConnectionHelper::Connect(a, b);
    std::vector<uint32_t> qpns;
    qpns.reserve(connections);

    const size_t before = HeapInUse();
    for (uint32_t i = 0; i < connections; ++i)
    {
        qpns.push_back(MetaRoceConnectionHelper::Connect(a, b).first);
    }
    const size_t created = HeapInUse();

    if (bytes > 0)
    {
        for (uint32_t i = 0; i < connections; ++i)
        {
            metaroce::SendWr wr;
            wr.wrId = i;
            wr.opcode = metaroce::WrOpcode::RDMA_WRITE;
            wr.sge = {src.addr + i * bytes, static_cast<uint32_t>(bytes), src.lkey};
            wr.remoteAddr = dst.addr + i * bytes;
            wr.rkey = dst.rkey;
            wr.signaled = true;
            if (a->PostSend(qpns[i], wr) != metaroce::PostStatus::OK)
            {
                std::fprintf(stderr, "error: PostSend failed on connection %u\n", i);
                return 1;
            }
        }
        Simulator::Stop(Seconds(1));
        Simulator::Run();
    }
    const size_t used = HeapInUse();

    const double qps = 2.0 * connections;
    const size_t stateBytes = a->GetEndpoint().GetConnection(qpns[0])->StateBytes();
    std::printf("%s, %u path(s), %u connections (one QP on each of 2 NICs each)\n",
                transport.c_str(),
                transport == "metaroce" ? paths : 1u,
                connections);
    std::printf("heap per QP: %.0f B idle (created and connected); %.0f B after one %lu-byte "
                "WRITE each (%u/%u completed); engine StateBytes %zu B\n",
                double(created - before) / qps,
                double(used - before) / qps,
                static_cast<unsigned long>(bytes),
                g_completions,
                bytes > 0 ? connections : 0,
                stateBytes);
    Simulator::Destroy();
    return bytes == 0 || g_completions == connections ? 0 : 1;
}
