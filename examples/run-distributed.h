/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#ifndef METAROCE_RUN_DISTRIBUTED_H
#define METAROCE_RUN_DISTRIBUTED_H

// Distributed (MPI) runs of metaroce-run (docs/distributed.md). Included by run.cc only; kept
// apart so the scenario runner carries a few one-line hooks.

#include "metaroce-results.pb.h"

#include "ns3/metaroce-fabric.h"
#include "ns3/metaroce-partition.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace metaroce_run
{

/**
 * Start a distributed run when launched by mpirun with more than one rank, or with --mpi.
 * Must run before anything uses the Simulator.
 * \param argc main's argc
 * \param argv main's argv
 * \return true if this run is distributed
 */
inline bool
StartDistributed(int* argc, char*** argv)
{
    return ns3::MetaRoceStartDistributed(argc, argv, "metaroce-run");
}

/**
 * Gather the flow rows on rank 0: each rank's rows are right for the flows whose source host it
 * owns (the sender's completion sets the FCT); rank 0 takes those rows from their owners.
 * \param flows this rank's rows, in workload order (replaced on rank 0)
 * \param srcHosts the source host of each row
 * \param fabric the fabric
 * \return true on rank 0, false on the other ranks (which then have nothing to write)
 */
inline bool
GatherFlows(std::vector<metaroce::results::FlowRecord>& flows,
            const std::vector<uint32_t>& srcHosts,
            ns3::Ptr<ns3::MetaRoceFabric> fabric)
{
    // Frame: 4-byte row index, 4-byte length, the serialized row.
    std::string mine;
    for (size_t i = 0; i < flows.size(); ++i)
    {
        if (!ns3::MetaRoceIsLocal(fabric->GetHost(srcHosts[i])))
        {
            continue;
        }
        const std::string row = flows[i].SerializeAsString();
        const uint32_t head[2] = {static_cast<uint32_t>(i), static_cast<uint32_t>(row.size())};
        mine.append(reinterpret_cast<const char*>(head), sizeof(head));
        mine += row;
    }
    const std::vector<std::string> all = ns3::MetaRoceGatherToRoot(mine);
    if (ns3::MetaRoceGetRank() != 0)
    {
        return false;
    }
    for (const std::string& part : all)
    {
        size_t at = 0;
        while (at + 8 <= part.size())
        {
            uint32_t head[2];
            std::memcpy(head, part.data() + at, sizeof(head));
            at += sizeof(head);
            if (head[0] < flows.size() && at + head[1] <= part.size())
            {
                flows[head[0]].ParseFromArray(part.data() + at, static_cast<int>(head[1]));
            }
            at += head[1];
        }
    }
    return true;
}

} // namespace metaroce_run

#endif // METAROCE_RUN_DISTRIBUTED_H
