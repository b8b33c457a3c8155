/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#ifndef METAROCE_PARTITION_H
#define METAROCE_PARTITION_H

#include "ns3/ptr.h"

#include <cstdint>
#include <string>
#include <vector>

/**
 * \file
 * Distributed (MPI) runs: which rank this process is, which nodes it owns, and the few
 * collective operations a scenario program needs. Compiled in every build; without MPI (the
 * module built against an ns-3 without the mpi module) every call answers as for one rank.
 */

namespace ns3
{

class MetaRoceChannel;
class Node;

/// \return true if the module was built against an ns-3 with the mpi module.
bool MetaRoceMpiAvailable();

/**
 * \return the number of processes the MPI launcher started, from its environment
 *         (OMPI_COMM_WORLD_SIZE, PMI_SIZE, PMIX_SIZE, MPI_LOCALNRANKS); 1 when not launched by one.
 */
uint32_t MetaRoceLaunchedRanks();

/**
 * Start a distributed run when launched by an MPI launcher with more than one rank
 * (MetaRoceLaunchedRanks) or when the arguments hold --mpi; must run before anything touches
 * the Simulator. Without MPI in this build, print why to stderr and exit with status 2.
 * \param argc main's argc
 * \param argv main's argv
 * \param program the program's name for the message
 * \return true if this run is distributed
 */
bool MetaRoceStartDistributed(int* argc, char*** argv, const std::string& program);

/**
 * Switch to ns-3's DistributedSimulatorImpl (granted-time-window conservative PDES) and start
 * MPI. Must run before anything touches the Simulator. Aborts when the module has no MPI.
 * \param argc main's argc
 * \param argv main's argv
 */
void MetaRoceEnableDistributed(int* argc, char*** argv);

/// Finish MPI (after Simulator::Destroy()); does nothing when not enabled.
void MetaRoceDisableDistributed();

/// \return true between MetaRoceEnableDistributed() and MetaRoceDisableDistributed().
bool MetaRoceDistributedEnabled();

/// \return this process's rank (MPI system id); 0 when not distributed.
uint32_t MetaRoceGetRank();

/// \return the number of ranks; 1 when not distributed.
uint32_t MetaRoceGetRankCount();

/**
 * \param node a node
 * \return true if this rank simulates \p node (always true when not distributed)
 */
bool MetaRoceIsLocal(Ptr<const Node> node);

/**
 * Collect one byte string from every rank on rank 0 (a collective call: every rank must make
 * it). Not distributed: returns {mine}.
 * \param mine this rank's string
 * \return on rank 0 the strings of ranks 0..N-1 in rank order; empty on the other ranks
 */
std::vector<std::string> MetaRoceGatherToRoot(const std::string& mine);

/**
 * Sum a value over all ranks (a collective call: every rank must make it, in the same order
 * relative to the simulation, e.g. from events scheduled at the same times on every rank).
 * \param value this rank's value
 * \return the sum on every rank (\p value when not distributed)
 */
uint64_t MetaRoceSumOverRanks(uint64_t value);

/**
 * Make a link whose two ends live on different ranks deliver across MPI: \p channel must be a
 * MetaRoceRemoteChannel with both devices attached (the topology helper does this).
 * \param channel the channel
 */
void MetaRoceConnectRemote(Ptr<MetaRoceChannel> channel);

/**
 * \param channel a link
 * \return the frames this rank sent to another rank over \p channel: 0 for a link within one
 * rank, or in a build without MPI
 */
uint64_t MetaRoceRemoteFramesSent(Ptr<const MetaRoceChannel> channel);

} // namespace ns3

#endif // METAROCE_PARTITION_H
