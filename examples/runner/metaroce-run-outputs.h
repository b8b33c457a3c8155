/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#ifndef METAROCE_RUN_OUTPUTS_H
#define METAROCE_RUN_OUTPUTS_H

#include "metaroce-results.pb.h"

#include "ns3/metaroce-fabric.h"
#include "ns3/metaroce-net-device.h"
#include "ns3/metaroce-switch.h"
#include "ns3/node.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

/**
 * \file
 * What the scenario runner's output writers share: the CSV headers (docs/outputs.md documents
 * each column), node names, switch tiers, port counter rows and quantiles.
 */

namespace metaroce_run
{

/// Column headers of the CSV files (docs/outputs.md documents each column).
const char* const FLOWS_HEADER = "flow_id,src,dst,bytes,start_us,finish_us,fct_us,ideal_fct_us,"
                                 "slowdown,retransmissions,timeouts,completed";
/// collectives.csv header.
const char* const COLLECTIVES_HEADER = "collective_id,ranks,bytes_per_rank,channels,chunk_bytes,"
                                       "start_us,finish_us,duration_us,algbw_gbps,busbw_gbps,"
                                       "completed";
/// goodput.csv header.
const char* const GOODPUT_HEADER = "time_us,interval_us,host,bytes,goodput_gbps";
/// flow_goodput.csv header (output.flow_goodput).
const char* const FLOW_GOODPUT_HEADER =
    "time_us,interval_us,flow_id,src,dst,bytes,goodput_gbps,tx_packets";
/// queues.csv header (output.queue_peaks).
const char* const QUEUES_HEADER = "switch,port,plane,tier,peer,peak_queue_bytes,peak_queue_time_us";
/// paths.csv header.
const char* const PATHS_HEADER = "host,qpn,peer,flow_id,path,source_port,status,packets_sent,"
                                 "retransmissions,timeouts,ecn_echoes,packets_acked,"
                                 "cwnd_packets,srtt_us,min_rtt_us";
/// switches.csv header.
const char* const SWITCHES_HEADER =
    "switch,port,plane,tier,peer,rx_frames,enqueued_frames,enqueued_bytes,ecn_marked,"
    "pfc_pause_sent,pfc_resume_sent,pfc_pause_received,drops_total,drops_buffer_full,"
    "drops_queue_threshold,drops_link_down,drops_no_route,drops_channel_loss,drops_other";
/// hosts.csv header.
const char* const HOSTS_HEADER = "host,plane,peer,tx_frames,tx_bytes,rx_frames,rx_bytes,"
                                 "pfc_pause_received,drops_channel_loss,drops_link_down,"
                                 "drops_other";

/// ranks.csv header (distributed runs).
const char* const RANKS_HEADER = "rank,hosts,switches,cross_links,lookahead_us,events,"
                                 "frames_sent_remote,run_wall_s,run_cpu_s";

/// Names fabric nodes "h<i>" and "s<j>" and back.
class NodeNames
{
  public:
    /**
     * \param fabric the fabric
     */
    explicit NodeNames(ns3::Ptr<ns3::MetaRoceFabric> fabric);

    /**
     * \param node a node
     * \return its name
     */
    std::string Name(ns3::Ptr<ns3::Node> node) const;

    /**
     * \param name "h<i>" or "s<j>"
     * \return the node, or nullptr
     */
    ns3::Ptr<ns3::Node> Find(const std::string& name) const;

  private:
    /**
     * \param node a node
     * \param name its name
     */
    void Add(ns3::Ptr<ns3::Node> node, const std::string& name);

    std::map<uint32_t, std::string> m_names;            //!< by node id
    std::map<std::string, ns3::Ptr<ns3::Node>> m_nodes; //!< by name
};

/**
 * \param values numbers (sorted in place)
 * \param q quantile in [0, 1]
 * \return the nearest-rank quantile, 0 if empty
 */
double Quantile(std::vector<double>& values, double q);

/**
 * \param fabric the fabric
 * \return tier of each switch: 1 next to hosts, then BFS distance + 1
 */
std::vector<uint32_t> SwitchTiers(ns3::Ptr<ns3::MetaRoceFabric> fabric);

/**
 * Fill a port row from the switch's and the device's counters.
 * \param row the row
 * \param sw switch counters (switch-wide or one port)
 * \param dev device counters (the port's, or the sum of the ports')
 */
void FillPortCounters(metaroce::results::PortCounters& row,
                      const ns3::MetaRoceSwitch::Counters& sw,
                      const ns3::MetaRoceNetDevice::Counters& dev);

/**
 * \param r a port row
 * \return its CSV line
 */
std::string PortLine(const metaroce::results::PortCounters& r);

} // namespace metaroce_run

#endif // METAROCE_RUN_OUTPUTS_H
