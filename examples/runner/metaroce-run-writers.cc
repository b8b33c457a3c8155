/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#include "metaroce-run-writers.h"

#include "metaroce-run-outputs.h"
#include "metaroce-run-scenario.h"

#include <fstream>
#include <google/protobuf/text_format.h>
#include <google/protobuf/util/delimited_message_util.h>
#include <system_error>

namespace metaroce_run
{

namespace pb = metaroce::results;
namespace gp = google::protobuf;

void
WriteFlows(std::ostream& out, const std::vector<pb::FlowRecord>& flows)
{
    out << FLOWS_HEADER << "\n";
    for (const pb::FlowRecord& f : flows)
    {
        out << f.flow_id() << "," << f.src() << "," << f.dst() << "," << f.bytes() << ","
            << Fixed(f.start_us(), 3) << "," << Fixed(f.finish_us(), 3) << ","
            << Fixed(f.fct_us(), 3) << "," << Fixed(f.ideal_fct_us(), 3) << ","
            << Fixed(f.slowdown(), 4) << "," << f.retransmissions() << "," << f.timeouts() << ","
            << (f.completed() ? 1 : 0) << "\n";
    }
}

void
WriteCollectives(std::ostream& out, const std::vector<pb::CollectiveRecord>& collectives)
{
    out << COLLECTIVES_HEADER << "\n";
    for (const pb::CollectiveRecord& c : collectives)
    {
        out << c.collective_id() << "," << c.ranks() << "," << c.bytes_per_rank() << ","
            << c.channels() << "," << c.chunk_bytes() << "," << Fixed(c.start_us(), 3) << ","
            << Fixed(c.finish_us(), 3) << "," << Fixed(c.duration_us(), 3) << ","
            << Fixed(c.algbw_gbps(), 3) << "," << Fixed(c.busbw_gbps(), 3) << ","
            << (c.completed() ? 1 : 0) << "\n";
    }
}

void
WriteGoodput(std::ostream& out, const std::vector<pb::GoodputSample>& samples)
{
    out << GOODPUT_HEADER << "\n";
    for (const pb::GoodputSample& g : samples)
    {
        out << Fixed(g.time_us(), 3) << "," << Fixed(g.interval_us(), 3) << "," << g.host() << ","
            << g.bytes() << "," << Fixed(g.goodput_gbps(), 3) << "\n";
    }
}

void
WriteFlowGoodput(std::ostream& out, const std::vector<pb::FlowGoodputSample>& samples)
{
    out << FLOW_GOODPUT_HEADER << "\n";
    for (const pb::FlowGoodputSample& g : samples)
    {
        out << Fixed(g.time_us(), 3) << "," << Fixed(g.interval_us(), 3) << "," << g.flow_id()
            << "," << g.src() << "," << g.dst() << "," << g.bytes() << ","
            << Fixed(g.goodput_gbps(), 3) << "," << g.tx_packets() << "\n";
    }
}

void
WritePaths(std::ostream& out, const std::vector<pb::PathCounters>& paths)
{
    out << PATHS_HEADER << "\n";
    for (const pb::PathCounters& p : paths)
    {
        out << p.host() << "," << p.qpn() << "," << p.peer() << "," << p.flow_id() << ","
            << p.path() << "," << p.source_port() << "," << p.status() << "," << p.packets_sent()
            << "," << p.retransmissions() << "," << p.timeouts() << "," << p.ecn_echoes() << ","
            << p.packets_acked() << "," << Fixed(p.cwnd_packets(), 2) << ","
            << Fixed(p.srtt_us(), 3) << "," << Fixed(p.min_rtt_us(), 3) << "\n";
    }
}

void
WriteSwitches(std::ostream& out, const std::vector<pb::SwitchCounters>& switches, bool ports)
{
    out << SWITCHES_HEADER << "\n";
    for (const pb::SwitchCounters& s : switches)
    {
        out << PortLine(s.total()) << "\n";
        for (const pb::PortCounters& p : s.ports())
        {
            if (ports)
            {
                out << PortLine(p) << "\n";
            }
        }
    }
}

void
WriteHosts(std::ostream& out, const std::vector<pb::HostPortCounters>& hostPorts)
{
    out << HOSTS_HEADER << "\n";
    for (const pb::HostPortCounters& h : hostPorts)
    {
        out << h.host() << "," << h.plane() << "," << h.peer() << "," << h.tx_frames() << ","
            << h.tx_bytes() << "," << h.rx_frames() << "," << h.rx_bytes() << ","
            << h.pfc_pause_received() << "," << h.drops_channel_loss() << "," << h.drops_link_down()
            << "," << h.drops_other() << "\n";
    }
}

void
WriteQueues(std::ostream& out, const std::vector<pb::SwitchCounters>& switches)
{
    out << QUEUES_HEADER << "\n";
    auto line = [&out](const pb::PortCounters& r) {
        out << r.switch_id() << "," << r.port() << "," << r.plane() << "," << r.tier() << ","
            << r.peer() << "," << r.peak_queue_bytes() << "," << Fixed(r.peak_queue_time_us(), 3)
            << "\n";
    };
    for (const pb::SwitchCounters& s : switches)
    {
        line(s.total());
        for (const pb::PortCounters& p : s.ports())
        {
            line(p);
        }
    }
}

void
WriteRanks(std::ostream& out, const std::vector<RankStats>& ranks)
{
    out << RANKS_HEADER << "\n";
    for (const RankStats& r : ranks)
    {
        out << r.rank << "," << r.hosts << "," << r.switches << "," << r.crossLinks << ","
            << Fixed(r.lookaheadUs, 3) << "," << r.events << "," << r.framesSent << ","
            << Fixed(r.runWallS, 3) << "," << Fixed(r.runCpuS, 3) << "\n";
    }
}

void
WriteResultRecords(std::ostream& out,
                   const pb::Scenario& sc,
                   const RunResults& results,
                   const pb::RunSummary& sum)
{
    auto write = [&out](const pb::ResultRecord& r) {
        gp::util::SerializeDelimitedToOstream(r, &out);
    };
    pb::ResultRecord r;
    *r.mutable_scenario() = sc;
    write(r);
    for (const pb::FlowRecord& f : results.flows)
    {
        *r.mutable_flow() = f;
        write(r);
    }
    for (const pb::CollectiveRecord& c : results.collectives)
    {
        *r.mutable_collective() = c;
        write(r);
    }
    for (const pb::GoodputSample& g : results.goodput)
    {
        *r.mutable_goodput() = g;
        write(r);
    }
    for (const pb::FlowGoodputSample& g : results.flowGoodput)
    {
        *r.mutable_flow_goodput() = g;
        write(r);
    }
    for (const pb::PathCounters& p : results.paths)
    {
        *r.mutable_path() = p;
        write(r);
    }
    for (const pb::SwitchCounters& s : results.switches)
    {
        *r.mutable_switch_counters() = s;
        write(r);
    }
    for (const pb::HostPortCounters& h : results.hostPorts)
    {
        *r.mutable_host_port() = h;
        write(r);
    }
    *r.mutable_summary() = sum;
    write(r);
}

namespace
{

/**
 * Open an output file.
 * \param dir the run folder
 * \param name the file name
 * \return the stream (throws OutputError if it cannot be created)
 */
std::ofstream
OpenOutput(const std::filesystem::path& dir, const std::string& name)
{
    std::ofstream out(dir / name, std::ios::binary);
    if (!out)
    {
        throw OutputError("cannot write " + (dir / name).string());
    }
    return out;
}

} // namespace

void
WriteRunFolder(const std::filesystem::path& dir,
               const pb::Scenario& sc,
               const RunResults& results,
               const pb::RunSummary& sum,
               const std::string& summaryText)
{
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec)
    {
        throw OutputError("cannot create " + dir.string() + ": " + ec.message());
    }
    {
        std::ofstream out = OpenOutput(dir, "flows.csv");
        WriteFlows(out, results.flows);
    }
    {
        std::ofstream out = OpenOutput(dir, "collectives.csv");
        WriteCollectives(out, results.collectives);
    }
    {
        std::ofstream out = OpenOutput(dir, "goodput.csv");
        WriteGoodput(out, results.goodput);
    }
    {
        std::ofstream out = OpenOutput(dir, "paths.csv");
        WritePaths(out, results.paths);
    }
    {
        std::ofstream out = OpenOutput(dir, "switches.csv");
        WriteSwitches(out, results.switches, sc.output().switch_ports());
    }
    {
        std::ofstream out = OpenOutput(dir, "hosts.csv");
        WriteHosts(out, results.hostPorts);
    }
    if (results.hasFlowGoodput)
    {
        std::ofstream out = OpenOutput(dir, "flow_goodput.csv");
        WriteFlowGoodput(out, results.flowGoodput);
    }
    if (sc.output().queue_peaks())
    {
        std::ofstream out = OpenOutput(dir, "queues.csv");
        WriteQueues(out, results.switches);
    }
    if (!results.ranks.empty())
    {
        std::ofstream out = OpenOutput(dir, "ranks.csv");
        WriteRanks(out, results.ranks);
    }
    std::string text;
    gp::TextFormat::PrintToString(sc, &text);
    OpenOutput(dir, "scenario.pb.txt") << text;
    gp::TextFormat::PrintToString(sum, &text);
    OpenOutput(dir, "summary.pb.txt") << text;
    OpenOutput(dir, "summary.txt") << summaryText;
    std::ofstream out = OpenOutput(dir, "results.pb");
    WriteResultRecords(out, sc, results, sum);
    if (!out)
    {
        throw OutputError("cannot write results.pb");
    }
}

} // namespace metaroce_run
