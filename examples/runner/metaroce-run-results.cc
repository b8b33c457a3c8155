/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#include "metaroce-run-results.h"

#include "metaroce-run-scenario.h"

#include "ns3/metaroce-channel.h"
#include "ns3/metaroce-net-device.h"
#include "ns3/metaroce-partition.h"
#include "ns3/metaroce-switch.h"
#include "ns3/simulator.h"

#include <algorithm>
#include <map>
#include <sstream>
#include <utility>

namespace metaroce_run
{

using namespace ns3;
namespace pb = metaroce::results;

namespace
{

/// The flow of each sending connection: (host, QPN) -> flow id.
using FlowOfConnection = std::map<std::pair<uint32_t, uint32_t>, int32_t>;

/**
 * \param load the workload
 * \param nics the NICs by host
 * \param flowOfConnection[out] the flow of each sending connection
 * \return one record per flow
 */
std::vector<pb::FlowRecord>
CollectFlows(Ptr<MetaRoceWorkloadHelper> load,
             const std::vector<Ptr<MetaRoceNic>>& nics,
             FlowOfConnection& flowOfConnection)
{
    std::vector<pb::FlowRecord> flows;
    for (const MetaRoceFlow& f : load->GetFlows())
    {
        pb::FlowRecord r;
        r.set_flow_id(f.id);
        r.set_src(f.src);
        r.set_dst(f.dst);
        r.set_bytes(f.bytes);
        r.set_start_us(ToUs(f.start));
        r.set_ideal_fct_us(ToUs(f.idealFct));
        r.set_completed(f.done);
        r.set_failed(f.failed);
        r.set_finish_us(f.done ? ToUs(f.finish) : -1);
        r.set_fct_us(f.done ? ToUs(f.Fct()) : -1);
        r.set_slowdown(f.done ? f.Slowdown() : -1);
        if (f.srcQpn)
        {
            flowOfConnection[{f.src, f.srcQpn}] = static_cast<int32_t>(f.id);
            const metaroce::TransportConnection* c =
                nics[f.src]->GetEndpoint().GetConnection(f.srcQpn);
            if (c)
            {
                r.set_retransmissions(c->Counters().Get(metaroce::Counter::TX_RETRANSMIT));
                r.set_timeouts(c->Counters().Get(metaroce::Counter::RTO));
            }
        }
        flows.push_back(r);
    }
    return flows;
}

/**
 * \param load the workload
 * \return one record per collective
 */
std::vector<pb::CollectiveRecord>
CollectCollectives(Ptr<MetaRoceWorkloadHelper> load)
{
    std::vector<pb::CollectiveRecord> collectives;
    for (size_t i = 0; i < load->GetCollectives().size(); ++i)
    {
        const MetaRoceCollective& c = load->GetCollectives()[i];
        pb::CollectiveRecord r;
        r.set_collective_id(static_cast<uint32_t>(i));
        r.set_ranks(static_cast<uint32_t>(c.ranks.size()));
        r.set_bytes_per_rank(c.bytesPerRank);
        r.set_channels(c.channels);
        r.set_chunk_bytes(c.chunkBytes);
        r.set_start_us(ToUs(c.start));
        r.set_completed(c.done);
        r.set_finish_us(c.done ? ToUs(c.finish) : -1);
        r.set_duration_us(c.done ? ToUs(c.finish - c.start) : -1);
        r.set_algbw_gbps(c.done ? c.AlgorithmBandwidth() / 1e9 : 0);
        r.set_busbw_gbps(c.done ? c.BusBandwidth() / 1e9 : 0);
        collectives.push_back(r);
    }
    return collectives;
}

/**
 * \param c a connection without paths (RoCEv2)
 * \param base the row's identifying fields
 * \return its one row (path -1)
 */
pb::PathCounters
ConnectionRow(const metaroce::TransportConnection& c, const pb::PathCounters& base)
{
    const metaroce::CounterSet& k = c.Counters();
    pb::PathCounters r = base;
    r.set_path(-1);
    r.set_packets_sent(k.Get(metaroce::Counter::TX_DATA) + k.Get(metaroce::Counter::TX_RETRANSMIT));
    r.set_retransmissions(k.Get(metaroce::Counter::TX_RETRANSMIT));
    r.set_timeouts(k.Get(metaroce::Counter::RTO));
    r.set_ecn_echoes(k.Get(metaroce::Counter::RX_CNP));
    r.set_cwnd_packets(-1);
    r.set_srtt_us(-1);
    r.set_min_rtt_us(-1);
    return r;
}

/**
 * \param p a path of a MetaRoCE connection
 * \param base the row's identifying fields
 * \return its row
 */
pb::PathCounters
PathRow(const metaroce::PathState& p, const pb::PathCounters& base)
{
    pb::PathCounters r = base;
    r.set_path(p.id);
    r.set_source_port(p.sourcePort);
    std::string status = metaroce::PathStatusName(p.status);
    std::transform(status.begin(), status.end(), status.begin(), ::tolower);
    r.set_status(status);
    r.set_packets_sent(p.packetsSent);
    r.set_retransmissions(p.retransmissions);
    r.set_timeouts(p.timeouts);
    r.set_ecn_echoes(p.ecnEchoes);
    r.set_packets_acked(p.packetsAcked);
    r.set_cwnd_packets(p.cwnd);
    r.set_srtt_us(p.rtt.HasSample() ? p.rtt.Smoothed() / 1e6 : -1);
    r.set_min_rtt_us(p.rtt.HasSample() ? p.rtt.Min() / 1e6 : -1);
    return r;
}

/**
 * \param fabric the fabric
 * \param nics the NICs by host
 * \param flowOfConnection the flow of each sending connection
 * \param distributed whether to skip the hosts of other ranks
 * \return the rows of the paths of every connection that sent data
 */
std::vector<pb::PathCounters>
CollectPaths(Ptr<MetaRoceFabric> fabric,
             const std::vector<Ptr<MetaRoceNic>>& nics,
             const FlowOfConnection& flowOfConnection,
             bool distributed)
{
    std::vector<pb::PathCounters> paths;
    for (uint32_t h = 0; h < fabric->GetHostCount(); ++h)
    {
        if (distributed && !MetaRoceIsLocal(fabric->GetHost(h)))
        {
            continue; // its rank has the counters
        }
        metaroce::Endpoint& ep = nics[h]->GetEndpoint();
        // The workload never destroys connections, so the QPNs are consecutive from the
        // engine's first QPN (which this scan does not assume).
        const size_t count = ep.ConnectionCount();
        size_t found = 0;
        for (uint32_t qpn = 0; found < count && qpn < count + 64; ++qpn)
        {
            const metaroce::TransportConnection* c = ep.GetConnection(qpn);
            found += c != nullptr;
            if (!c || c->Counters().Get(metaroce::Counter::TX_DATA) == 0)
            {
                continue;
            }
            pb::PathCounters base;
            base.set_host(h);
            base.set_qpn(qpn);
            const int64_t peer = fabric->FindHost(c->RemoteIp());
            base.set_peer(peer < 0 ? 0 : static_cast<uint32_t>(peer));
            auto it = flowOfConnection.find({h, qpn});
            base.set_flow_id(it == flowOfConnection.end() ? -1 : it->second);
            if (c->PathCount() == 0)
            {
                paths.push_back(ConnectionRow(*c, base));
                continue;
            }
            for (size_t i = 0; i < c->PathCount(); ++i)
            {
                if (const metaroce::PathState* p = c->Path(i))
                {
                    paths.push_back(PathRow(*p, base));
                }
            }
        }
    }
    return paths;
}

/**
 * \param fabric the fabric
 * \param names the fabric's node names
 * \return one row per host per plane, in host then plane order
 */
std::vector<pb::HostPortCounters>
CollectHostPorts(Ptr<MetaRoceFabric> fabric, const NodeNames& names)
{
    std::vector<pb::HostPortCounters> hostPorts;
    std::map<uint32_t, uint32_t> hostOfNode;
    for (uint32_t i = 0; i < fabric->GetHostCount(); ++i)
    {
        hostOfNode[fabric->GetHost(i)->GetId()] = i;
    }
    for (const MetaRoceLink& link : fabric->GetLinks())
    {
        const bool aIsHost = link.portA == MetaRoceSwitch::NO_PORT;
        if (!aIsHost && link.portB != MetaRoceSwitch::NO_PORT)
        {
            continue;
        }
        const Ptr<Node> host = aIsHost ? link.nodeA : link.nodeB;
        const MetaRoceNetDevice::Counters& d =
            (aIsHost ? link.deviceA : link.deviceB)->GetCounters();
        auto drops = [&d](MetaRoceDropReason r) { return d.drops[static_cast<uint32_t>(r)]; };
        pb::HostPortCounters row;
        row.set_host(hostOfNode[host->GetId()]);
        row.set_plane(link.plane);
        row.set_peer(names.Name(aIsHost ? link.nodeB : link.nodeA));
        row.set_tx_frames(d.txFrames);
        row.set_tx_bytes(d.txBytes);
        row.set_rx_frames(d.rxFrames);
        row.set_rx_bytes(d.rxBytes);
        row.set_pfc_pause_received(d.pauseReceived);
        row.set_drops_channel_loss(drops(MetaRoceDropReason::CHANNEL_LOSS));
        row.set_drops_link_down(drops(MetaRoceDropReason::LINK_DOWN));
        row.set_drops_other(d.TotalDrops() - row.drops_channel_loss() - row.drops_link_down());
        hostPorts.push_back(row);
    }
    std::stable_sort(hostPorts.begin(),
                     hostPorts.end(),
                     [](const pb::HostPortCounters& x, const pb::HostPortCounters& y) {
                         return x.host() != y.host() ? x.host() < y.host() : x.plane() < y.plane();
                     });
    return hostPorts;
}

/**
 * \param fabric the fabric
 * \param names the fabric's node names
 * \param queuePeaks the peak queues by switch (may be empty)
 * \return per switch: a total row and one row per port
 */
std::vector<pb::SwitchCounters>
CollectSwitches(Ptr<MetaRoceFabric> fabric,
                const NodeNames& names,
                const std::vector<std::unique_ptr<QueuePeaks>>& queuePeaks)
{
    const std::vector<uint32_t> tiers = SwitchTiers(fabric);
    std::map<std::pair<uint32_t, uint32_t>, std::string> portPeer;
    for (const MetaRoceLink& link : fabric->GetLinks())
    {
        portPeer[{link.nodeA->GetId(), link.portA}] = names.Name(link.nodeB);
        portPeer[{link.nodeB->GetId(), link.portB}] = names.Name(link.nodeA);
    }
    std::vector<pb::SwitchCounters> switches;
    for (uint32_t j = 0; j < fabric->GetSwitchCount(); ++j)
    {
        Ptr<MetaRoceSwitch> sw = fabric->GetSwitch(j);
        pb::SwitchCounters s;
        MetaRoceNetDevice::Counters devices;
        for (uint32_t p = 0; p < sw->GetNPorts(); ++p)
        {
            const MetaRoceNetDevice::Counters& d = sw->GetPort(p)->GetCounters();
            for (uint32_t r = 0; r < METAROCE_DROP_REASON_COUNT; ++r)
            {
                devices.drops[r] += d.drops[r];
            }
            pb::PortCounters& row = *s.add_ports();
            row.set_switch_id(j);
            row.set_port(static_cast<int32_t>(p));
            row.set_plane(fabric->GetSwitchPlane(j));
            row.set_tier(tiers[j]);
            row.set_peer(portPeer[{fabric->GetSwitchNode(j)->GetId(), p}]);
            FillPortCounters(row, sw->GetPortCounters(p), d);
            if (j < queuePeaks.size())
            {
                row.set_peak_queue_bytes(queuePeaks[j]->portPeak[p]);
                row.set_peak_queue_time_us(ToUs(queuePeaks[j]->portPeakTime[p]));
            }
        }
        pb::PortCounters& total = *s.mutable_total();
        total.set_switch_id(j);
        total.set_port(-1);
        total.set_plane(fabric->GetSwitchPlane(j));
        total.set_tier(tiers[j]);
        FillPortCounters(total, sw->GetCounters(), devices);
        if (j < queuePeaks.size())
        {
            total.set_peak_queue_bytes(queuePeaks[j]->bufferPeak);
            total.set_peak_queue_time_us(ToUs(queuePeaks[j]->bufferPeakTime));
        }
        switches.push_back(s);
    }
    return switches;
}

} // namespace

RunResults
CollectResults(Ptr<MetaRoceFabric> fabric,
               const std::vector<Ptr<MetaRoceNic>>& nics,
               Ptr<MetaRoceWorkloadHelper> load,
               const RunSamplers& samplers,
               const NodeNames& names,
               bool distributed)
{
    RunResults r;
    r.simTimeUs = ToUs(Simulator::Now());
    r.events = Simulator::GetEventCount();
    FlowOfConnection flowOfConnection;
    r.flows = CollectFlows(load, nics, flowOfConnection);
    r.collectives = CollectCollectives(load);
    r.paths = CollectPaths(fabric, nics, flowOfConnection, distributed);
    for (const MetaRoceLink& link : fabric->GetLinks())
    {
        for (const Ptr<MetaRoceNetDevice>& d : {link.deviceA, link.deviceB})
        {
            r.channelDrops +=
                d->GetCounters().drops[static_cast<uint32_t>(MetaRoceDropReason::CHANNEL_LOSS)];
        }
    }
    r.hostPorts = CollectHostPorts(fabric, names);
    r.switches = CollectSwitches(fabric, names, samplers.queuePeaks);
    for (const Ptr<MetaRoceNic>& nic : nics)
    {
        const metaroce::CounterSet& k = nic->GetEngineCounters();
        r.bytesPlaced += k.Get(metaroce::Counter::BYTES_PLACED);
        r.retransmissions += k.Get(metaroce::Counter::TX_RETRANSMIT);
        r.timeouts += k.Get(metaroce::Counter::RTO);
    }
    r.goodput = samplers.goodput->Samples();
    r.hasFlowGoodput = samplers.flowGoodput != nullptr;
    if (samplers.flowGoodput)
    {
        r.flowGoodput = samplers.flowGoodput->Samples();
    }
    return r;
}

pb::RunSummary
Summarize(const pb::Scenario& sc,
          const FabricSize& size,
          const RunResults& results,
          const std::string& commandLine)
{
    pb::RunSummary sum;
    sum.set_scenario(sc.name());
    sum.set_transport(sc.transport().name());
    sum.set_pfc(sc.topology().pfc());
    sum.set_seed(sc.seed());
    sum.set_hosts(size.hosts);
    sum.set_switches(size.switches);
    sum.set_links(size.links);
    sum.set_flows(static_cast<uint32_t>(results.flows.size()));
    std::vector<double> fcts;
    std::vector<double> slowdowns;
    uint64_t bytesTotal = 0;
    double firstStart = -1;
    double lastFinish = 0;
    uint32_t failed = 0;
    for (const pb::FlowRecord& f : results.flows)
    {
        bytesTotal += f.bytes();
        failed += f.failed();
        if (f.completed())
        {
            fcts.push_back(f.fct_us());
            slowdowns.push_back(f.slowdown());
            lastFinish = std::max(lastFinish, f.finish_us());
            firstStart = firstStart < 0 ? f.start_us() : std::min(firstStart, f.start_us());
        }
    }
    sum.set_flows_completed(static_cast<uint32_t>(fcts.size()));
    sum.set_flows_failed(failed);
    sum.set_bytes_total(bytesTotal);
    if (!fcts.empty())
    {
        double fctSum = 0;
        double sdSum = 0;
        for (size_t i = 0; i < fcts.size(); ++i)
        {
            fctSum += fcts[i];
            sdSum += slowdowns[i];
        }
        sum.set_fct_mean_us(fctSum / fcts.size());
        sum.set_slowdown_mean(sdSum / slowdowns.size());
        sum.set_fct_p50_us(Quantile(fcts, 0.5));
        sum.set_fct_p99_us(Quantile(fcts, 0.99));
        sum.set_fct_max_us(fcts.back());
        sum.set_slowdown_p50(Quantile(slowdowns, 0.5));
        sum.set_slowdown_p99(Quantile(slowdowns, 0.99));
        sum.set_slowdown_max(slowdowns.back());
    }
    sum.set_collectives(static_cast<uint32_t>(results.collectives.size()));
    double busbw = 0;
    uint32_t collectivesDone = 0;
    for (const pb::CollectiveRecord& c : results.collectives)
    {
        if (c.completed())
        {
            ++collectivesDone;
            busbw += c.busbw_gbps();
            lastFinish = std::max(lastFinish, c.finish_us());
            firstStart = firstStart < 0 ? c.start_us() : std::min(firstStart, c.start_us());
        }
    }
    sum.set_collectives_completed(collectivesDone);
    sum.set_busbw_gbps_mean(collectivesDone ? busbw / collectivesDone : 0);
    sum.set_goodput_mean_gbps(lastFinish > firstStart && firstStart >= 0
                                  ? results.bytesPlaced * 8 / ((lastFinish - firstStart) * 1e3)
                                  : 0);
    uint64_t switchDrops = 0;
    uint64_t ecnMarked = 0;
    uint64_t pfcPauses = 0;
    for (const pb::SwitchCounters& sw : results.switches)
    {
        switchDrops += sw.total().drops_total() - sw.total().drops_channel_loss();
        ecnMarked += sw.total().ecn_marked();
        pfcPauses += sw.total().pfc_pause_sent();
    }
    sum.set_retransmissions(results.retransmissions);
    sum.set_timeouts(results.timeouts);
    sum.set_switch_drops(switchDrops);
    sum.set_channel_drops(results.channelDrops);
    sum.set_ecn_marked(ecnMarked);
    sum.set_pfc_pauses(pfcPauses);
    sum.set_sim_time_us(results.simTimeUs);
    sum.set_events(results.events);
    sum.set_all_completed(fcts.size() == results.flows.size() &&
                          collectivesDone == results.collectives.size());
    sum.set_command_line(commandLine);
    return sum;
}

std::string
SummaryText(const pb::Scenario& sc,
            const pb::RunSummary& sum,
            const std::string& heapPages,
            const std::string& dir)
{
    const pb::Transport& tr = sc.transport();
    std::ostringstream human;
    human << "scenario        " << sc.name() << " (seed " << sc.seed() << ")\n"
          << "transport       " << tr.name() << (sc.topology().pfc() ? " with PFC" : " without PFC")
          << ", " << tr.paths() << " path(s), mtu " << tr.mtu() << ", cc " << tr.cc() << "\n"
          << "fabric          " << sum.hosts() << " hosts, " << sum.switches() << " switches, "
          << sum.links() << " links, " << sc.topology().planes() << " plane(s)\n"
          << "flows           " << sum.flows_completed() << " of " << sum.flows() << " completed, "
          << sum.flows_failed() << " failed, " << sum.bytes_total() << " bytes\n";
    if (sum.flows_completed() > 0)
    {
        human << "fct (us)        mean " << Fixed(sum.fct_mean_us(), 1) << "  p50 "
              << Fixed(sum.fct_p50_us(), 1) << "  p99 " << Fixed(sum.fct_p99_us(), 1) << "  max "
              << Fixed(sum.fct_max_us(), 1) << "\n"
              << "slowdown        mean " << Fixed(sum.slowdown_mean(), 3) << "  p50 "
              << Fixed(sum.slowdown_p50(), 3) << "  p99 " << Fixed(sum.slowdown_p99(), 3)
              << "  max " << Fixed(sum.slowdown_max(), 3) << "\n";
    }
    if (sum.collectives() > 0)
    {
        human << "collectives     " << sum.collectives_completed() << " of " << sum.collectives()
              << " completed, bus bandwidth " << Fixed(sum.busbw_gbps_mean(), 2) << " Gb/s\n";
    }
    human << "goodput         " << Fixed(sum.goodput_mean_gbps(), 2)
          << " Gb/s (all bytes placed / busy time)\n"
          << "retransmissions " << sum.retransmissions() << " packets, " << sum.timeouts()
          << " timeouts\n"
          << "switches        " << sum.switch_drops() << " drops, " << sum.channel_drops()
          << " link losses, " << sum.ecn_marked() << " ECN marks, " << sum.pfc_pauses()
          << " PFC pauses\n"
          << "simulated       " << Fixed(sum.sim_time_us(), 1) << " us, " << sum.events()
          << " events, " << Fixed(sum.wall_time_s(), 2) << " s wall\n"
          << "heap            " << heapPages << "\n"
          << "all completed   " << (sum.all_completed() ? "yes" : "NO") << "\n"
          << "run folder      " << dir << "\n";
    return human.str();
}

} // namespace metaroce_run
