/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#include "metaroce-partition.h"

#include "metaroce-channel.h"

#include "ns3/abort.h"
#include "ns3/global-value.h"
#include "ns3/log.h"
#include "ns3/node.h"
#include "ns3/string.h"

#ifdef METAROCE_HAVE_MPI
#include "metaroce-remote-channel.h"

#include "ns3/mpi-interface.h"

#include <mpi.h>
#endif

#include <cstdio>
#include <cstdlib>

namespace ns3
{

NS_LOG_COMPONENT_DEFINE("MetaRocePartition");

bool
MetaRoceMpiAvailable()
{
#ifdef METAROCE_HAVE_MPI
    return true;
#else
    return false;
#endif
}

uint32_t
MetaRoceLaunchedRanks()
{
    for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE", "MPI_LOCALNRANKS"})
    {
        if (const char* value = std::getenv(name))
        {
            const long n = std::strtol(value, nullptr, 10);
            if (n > 0)
            {
                return static_cast<uint32_t>(n);
            }
        }
    }
    return 1;
}

bool
MetaRoceStartDistributed(int* argc, char*** argv, const std::string& program)
{
    bool forced = false;
    for (int i = 1; i < *argc; ++i)
    {
        const std::string a = (*argv)[i];
        forced = forced || a == "--mpi" || a == "--mpi=1" || a == "--mpi=true";
    }
    if (!forced && MetaRoceLaunchedRanks() <= 1)
    {
        return false;
    }
    if (!MetaRoceMpiAvailable())
    {
        std::fprintf(stderr,
                     "%s: %s, but this build has no MPI; build ns-3 with MPI and this project "
                     "against it: ./metaroce mpi-setup && ./metaroce mpi-build "
                     "(docs/distributed.md)\n",
                     program.c_str(),
                     forced ? "--mpi was given" : "launched by mpirun with several ranks");
        std::exit(2);
    }
    MetaRoceEnableDistributed(argc, argv);
    return true;
}

#ifdef METAROCE_HAVE_MPI

void
MetaRoceEnableDistributed(int* argc, char*** argv)
{
    GlobalValue::Bind("SimulatorImplementationType", StringValue("ns3::DistributedSimulatorImpl"));
    MpiInterface::Enable(argc, argv);
}

void
MetaRoceDisableDistributed()
{
    if (MpiInterface::IsEnabled())
    {
        MpiInterface::Disable();
    }
}

bool
MetaRoceDistributedEnabled()
{
    return MpiInterface::IsEnabled();
}

uint32_t
MetaRoceGetRank()
{
    return MpiInterface::IsEnabled() ? MpiInterface::GetSystemId() : 0;
}

uint32_t
MetaRoceGetRankCount()
{
    return MpiInterface::IsEnabled() ? MpiInterface::GetSize() : 1;
}

std::vector<std::string>
MetaRoceGatherToRoot(const std::string& mine)
{
    if (!MpiInterface::IsEnabled() || MpiInterface::GetSize() == 1)
    {
        return {mine};
    }
    MPI_Comm comm = MpiInterface::GetCommunicator();
    const int ranks = static_cast<int>(MpiInterface::GetSize());
    const int rank = static_cast<int>(MpiInterface::GetSystemId());
    const int size = static_cast<int>(mine.size());
    std::vector<int> sizes(ranks, 0);
    MPI_Gather(&size, 1, MPI_INT, sizes.data(), 1, MPI_INT, 0, comm);
    std::vector<int> offsets(ranks, 0);
    int total = 0;
    for (int r = 0; r < ranks; ++r)
    {
        offsets[r] = total;
        total += sizes[r];
    }
    std::vector<char> all(rank == 0 ? std::max(total, 1) : 1);
    MPI_Gatherv(mine.data(),
                size,
                MPI_CHAR,
                all.data(),
                sizes.data(),
                offsets.data(),
                MPI_CHAR,
                0,
                comm);
    std::vector<std::string> out;
    if (rank == 0)
    {
        for (int r = 0; r < ranks; ++r)
        {
            out.emplace_back(all.data() + offsets[r], sizes[r]);
        }
    }
    return out;
}

uint64_t
MetaRoceSumOverRanks(uint64_t value)
{
    if (!MpiInterface::IsEnabled() || MpiInterface::GetSize() == 1)
    {
        return value;
    }
    unsigned long long in = value;
    unsigned long long out = 0;
    MPI_Allreduce(&in, &out, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, MpiInterface::GetCommunicator());
    return out;
}

void
MetaRoceConnectRemote(Ptr<MetaRoceChannel> channel)
{
    Ptr<MetaRoceRemoteChannel> remote = DynamicCast<MetaRoceRemoteChannel>(channel);
    NS_ABORT_MSG_IF(!remote, "MetaRoceConnectRemote needs a MetaRoceRemoteChannel");
    remote->ConnectReceivers();
}

uint64_t
MetaRoceRemoteFramesSent(Ptr<const MetaRoceChannel> channel)
{
    Ptr<const MetaRoceRemoteChannel> remote = DynamicCast<const MetaRoceRemoteChannel>(channel);
    return remote ? remote->GetRemoteSent() : 0;
}

#else // no MPI

void
MetaRoceEnableDistributed(int*, char***)
{
    NS_ABORT_MSG("this build of the metaroce module has no MPI: build ns-3 with NS3_MPI=ON and "
                 "configure with METAROCE_ENABLE_MPI=ON (./metaroce mpi-setup && ./metaroce "
                 "mpi-build; docs/distributed.md)");
}

void
MetaRoceDisableDistributed()
{
}

bool
MetaRoceDistributedEnabled()
{
    return false;
}

uint32_t
MetaRoceGetRank()
{
    return 0;
}

uint32_t
MetaRoceGetRankCount()
{
    return 1;
}

std::vector<std::string>
MetaRoceGatherToRoot(const std::string& mine)
{
    return {mine};
}

uint64_t
MetaRoceSumOverRanks(uint64_t value)
{
    return value;
}

void
MetaRoceConnectRemote(Ptr<MetaRoceChannel>)
{
    NS_ABORT_MSG("links across ranks need the module built with MPI (docs/distributed.md)");
}

uint64_t
MetaRoceRemoteFramesSent(Ptr<const MetaRoceChannel>)
{
    return 0;
}

#endif

bool
MetaRoceIsLocal(Ptr<const Node> node)
{
    return !node || MetaRoceGetRankCount() == 1 || node->GetSystemId() == MetaRoceGetRank();
}

} // namespace ns3
