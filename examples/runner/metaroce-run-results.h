/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#ifndef METAROCE_RUN_RESULTS_H
#define METAROCE_RUN_RESULTS_H

#include "metaroce-results.pb.h"
#include "metaroce-run-outputs.h"
#include "metaroce-run-samplers.h"

#include "ns3/metaroce-fabric.h"
#include "ns3/metaroce-nic.h"
#include "ns3/metaroce-workload-helper.h"

#include <cstdint>
#include <string>
#include <vector>

/**
 * \file
 * The scenario runner's result collection: after the run, the rows of every output file (one
 * per flow, collective, path, switch port and host port, and the goodput samples) and the
 * run-wide counters, read from the fabric, the NICs and the samplers; then the run's summary
 * and its human-readable text, computed from those rows alone.
 */

namespace metaroce_run
{

/// One rank's share of a distributed run (ranks.csv; docs/distributed.md).
struct RankStats
{
    uint32_t rank{0};       //!< MPI rank
    uint32_t hosts{0};      //!< hosts it simulates
    uint32_t switches{0};   //!< switches it simulates
    uint32_t crossLinks{0}; //!< links with one end on this rank and the other on another
    double lookaheadUs{0};  //!< the smallest delay of those links (0 if none)
    uint64_t events{0};     //!< simulator events it executed
    uint64_t framesSent{0}; //!< frames it sent to other ranks (one MPI message each)
    double runWallS{0};     //!< wall time of its Simulator::Run
    double runCpuS{0};      //!< CPU time of its process during Simulator::Run
};

/// The rows and counters of a finished run, before they are written.
struct RunResults
{
    std::vector<metaroce::results::FlowRecord> flows;              //!< flows.csv
    std::vector<metaroce::results::CollectiveRecord> collectives;  //!< collectives.csv
    std::vector<metaroce::results::PathCounters> paths;            //!< paths.csv
    std::vector<metaroce::results::SwitchCounters> switches;       //!< switches.csv, queues.csv
    std::vector<metaroce::results::HostPortCounters> hostPorts;    //!< hosts.csv
    std::vector<metaroce::results::GoodputSample> goodput;         //!< goodput.csv
    std::vector<metaroce::results::FlowGoodputSample> flowGoodput; //!< flow_goodput.csv
    bool hasFlowGoodput{false};                                    //!< output.flow_goodput
    std::vector<RankStats> ranks; //!< ranks.csv: one row per rank (distributed runs only)
    uint64_t events{0};           //!< simulator events
    uint64_t channelDrops{0};     //!< frames lost on links (random loss)
    uint64_t bytesPlaced{0};      //!< payload bytes placed by all NICs
    uint64_t retransmissions{0};  //!< packets retransmitted by all NICs
    uint64_t timeouts{0};         //!< retransmission timeouts of all NICs
    double simTimeUs{0};          //!< simulated time at the end
};

/**
 * Read every row and counter after the run. In a distributed run the paths of hosts of other
 * ranks are skipped (their rank has them; GatherResults collects them).
 * \param fabric the fabric
 * \param nics the NICs by host
 * \param load the workload
 * \param samplers the samplers (finished)
 * \param names the fabric's node names
 * \param distributed whether this is one rank of a distributed run
 * \return the results of this process
 */
RunResults CollectResults(ns3::Ptr<ns3::MetaRoceFabric> fabric,
                          const std::vector<ns3::Ptr<ns3::MetaRoceNic>>& nics,
                          ns3::Ptr<ns3::MetaRoceWorkloadHelper> load,
                          const RunSamplers& samplers,
                          const NodeNames& names,
                          bool distributed);

/// What the summary says about the fabric, besides the results.
struct FabricSize
{
    uint32_t hosts{0};    //!< hosts
    uint32_t switches{0}; //!< switches
    uint32_t links{0};    //!< links
};

/**
 * The run's summary (summary.pb.txt), from the rows and counters alone: flow and collective
 * statistics, drops, marks and pauses summed over the switches' total rows. The wall time is
 * left to the caller.
 * \param sc the completed scenario
 * \param size the fabric's size
 * \param results the results (all ranks')
 * \param commandLine the command line
 * \return the summary
 */
metaroce::results::RunSummary Summarize(const metaroce::results::Scenario& sc,
                                        const FabricSize& size,
                                        const RunResults& results,
                                        const std::string& commandLine);

/**
 * \param sc the completed scenario
 * \param sum the summary
 * \param heapPages how the heap is backed (MetaRoceUseHugePages)
 * \param dir the run folder
 * \return summary.txt's text (also printed unless --quiet)
 */
std::string SummaryText(const metaroce::results::Scenario& sc,
                        const metaroce::results::RunSummary& sum,
                        const std::string& heapPages,
                        const std::string& dir);

} // namespace metaroce_run

#endif // METAROCE_RUN_RESULTS_H
