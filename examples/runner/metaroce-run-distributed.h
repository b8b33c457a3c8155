/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#ifndef METAROCE_RUN_DISTRIBUTED_H
#define METAROCE_RUN_DISTRIBUTED_H

#include "metaroce-results.pb.h"
#include "metaroce-run-results.h"

#include "ns3/metaroce-collective-application.h"
#include "ns3/metaroce-fabric.h"
#include "ns3/metaroce-workload-helper.h"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

/**
 * \file
 * The scenario runner's distributed (MPI) runs (docs/distributed.md): after the run, each rank
 * sends rank 0 the rows of what it owns, and rank 0 merges them into one run's results.
 *
 * The row functions are templates over the runner's row messages, instantiated in the .cc
 * file for: FlowRecord, SwitchCounters, HostPortCounters, PathCounters, GoodputSample and
 * FlowGoodputSample.
 */

namespace metaroce_run
{

/**
 * Serialize the selected rows for MetaRoceGatherToRoot. Frame: 4-byte row index, 4-byte
 * length, the serialized row.
 * \param rows the rows
 * \param send for each row, whether to send it (rows past its end are not sent)
 * \return the frames
 */
template <typename Row>
std::string PackRows(const std::vector<Row>& rows, const std::vector<bool>& send);

/**
 * The rows in the frames of every rank (PackRows), rank 0's first; a truncated frame ends its
 * rank's part.
 * \param parts every rank's frames
 * \return (row index, row) pairs
 */
template <typename Row>
std::vector<std::pair<uint32_t, Row>> UnpackRows(const std::vector<std::string>& parts);

/**
 * Gather rows that every rank holds in the same order (one per flow, switch or host port) on
 * rank 0: each rank sends the rows it owns (\p mine), whose counters only it has; rank 0 puts
 * them in place.
 * \param rows this rank's rows (replaced on rank 0 by their owners' rows)
 * \param mine for each row, whether this rank owns it
 * \return true on rank 0, false on the other ranks
 */
template <typename Row>
bool GatherRows(std::vector<Row>& rows, const std::vector<bool>& mine);

/**
 * Gather rows that only their owner creates (e.g. one per path of the connections a host
 * sends on) on rank 0, in rank order.
 * \param rows this rank's rows (on rank 0 replaced by every rank's rows, rank 0's first)
 * \return true on rank 0, false on the other ranks
 */
template <typename Row>
bool GatherAppend(std::vector<Row>& rows);

/**
 * On rank 0 after GatherAppend: merge the goodput samples of equal time and host from all
 * ranks into one (bytes and goodput added), in the order of their first appearance.
 * \param rows the gathered samples
 */
void SumSamples(std::vector<metaroce::results::GoodputSample>& rows);

/**
 * On rank 0 after GatherAppend: merge the flow goodput samples of equal time and flow from all
 * ranks into one (bytes from the receiver's rank and packets from the sender's added), in the
 * order of their first appearance.
 * \param rows the gathered samples
 */
void SumSamples(std::vector<metaroce::results::FlowGoodputSample>& rows);

/**
 * Complete the collectives' records on rank 0: each rank has seen the (rank, channel) pairs of
 * the hosts it owns finish; a collective is done when the pairs of all ranks add up, and it
 * finished when the last of them did.
 * \param records the records (rank 0's view; completed on rank 0)
 * \param local this rank's collectives, in the same order
 */
void MergeCollectives(std::vector<metaroce::results::CollectiveRecord>& records,
                      const std::vector<ns3::MetaRoceCollective>& local);

/**
 * This rank's share of the run: the nodes it simulates, its links to other ranks and their
 * smallest delay (the lookahead of ns-3's granted-time-window synchronization), its events and
 * the frames it sent to other ranks.
 * \param fabric the fabric
 * \param events the events this rank executed
 * \param runWallS wall time of Simulator::Run
 * \param runCpuS CPU time during Simulator::Run
 * \return the row
 */
RankStats LocalRankStats(ns3::Ptr<ns3::MetaRoceFabric> fabric,
                         uint64_t events,
                         double runWallS,
                         double runCpuS);

/**
 * Gather every rank's row on rank 0 (a collective call: every rank makes it).
 * \param mine this rank's row
 * \return on rank 0 the rows of ranks 0..N-1; empty on the other ranks
 */
std::vector<RankStats> GatherRankStats(const RankStats& mine);

/**
 * Merge every rank's results on rank 0 (a collective call: every rank makes it): flows by
 * source host, switches, host ports, paths, goodput samples, collectives, and the counters
 * summed over the ranks.
 * \param results this rank's results (on rank 0 replaced by the merged results)
 * \param fabric the fabric
 * \param load the workload
 * \return true on rank 0, false on the other ranks
 */
bool GatherResults(RunResults& results,
                   ns3::Ptr<ns3::MetaRoceFabric> fabric,
                   ns3::Ptr<ns3::MetaRoceWorkloadHelper> load);

} // namespace metaroce_run

#endif // METAROCE_RUN_DISTRIBUTED_H
