/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

/**
 * \file
 * metaroce-perf / metaroce-hild: a session's reports (progress lines, telemetry, results records,
 * summary).
 */

#include "metaroce-hil-perf-session.h"

namespace metaroce
{
namespace hil
{
namespace perf
{

uint64_t
Session::Retransmissions() const
{
    uint64_t n = 0;
    for (uint32_t qpn : m_qpns)
    {
        if (const TransportConnection* c = m_host.GetEndpoint().GetConnection(qpn))
        {
            n += c->Counters().Get(Counter::TX_RETRANSMIT);
        }
    }
    return n;
}

proto::TelemetryRecord
Session::Telemetry(Time now,
                   Time interval,
                   uint64_t bytes,
                   uint64_t messages,
                   uint64_t retx,
                   bool final) const
{
    proto::TelemetryRecord r;
    r.set_source("hil");
    r.set_run(m_opts.transport + "-" + m_opts.op + "-" + std::to_string(m_size));
    r.set_node(Ipv4ToString(m_app.LocalIp()));
    r.set_role(m_client ? "sender" : "receiver");
    r.set_transport(m_ccfg.transport);
    r.set_time_ps(now - m_start);
    r.set_interval_ps(interval);
    r.set_bytes(bytes);
    r.set_messages(messages);
    r.set_goodput_bps(interval > 0 ? double(bytes) * 8e12 / double(interval) : 0);
    r.set_retransmissions(retx);
    r.set_total_bytes(m_bytes);
    r.set_total_retransmissions(Retransmissions());
    r.set_final(final);
    CounterSet sum;
    for (uint32_t qpn : m_qpns)
    {
        const TransportConnection* c = m_host.GetEndpoint().GetConnection(qpn);
        if (!c)
        {
            continue;
        }
        for (size_t i = 0; i < size_t(Counter::COUNT); ++i)
        {
            sum.Add(Counter(i), c->Counters().Get(Counter(i)));
        }
        for (size_t p = 0; p < c->PathCount(); ++p)
        {
            const PathState* ps = c->Path(p);
            if (!ps)
            {
                continue;
            }
            proto::PathCounters* pc = r.add_paths();
            pc->set_path_id(ps->id + uint32_t(m_connIndex.at(qpn)) * PORTS_PER_CONNECTION);
            pc->set_source_port(ps->sourcePort);
            pc->set_status(PathStatusName(ps->status));
            pc->set_packets_sent(ps->packetsSent);
            pc->set_retransmissions(ps->retransmissions);
            pc->set_packets_acked(ps->packetsAcked);
            pc->set_cwnd_packets(ps->cwnd);
            pc->set_srtt_ps(ps->rtt.Smoothed());
        }
    }
    for (size_t i = 0; i < size_t(Counter::COUNT); ++i)
    {
        if (sum.Get(Counter(i)) != 0)
        {
            proto::NamedCounter* nc = r.add_counters();
            nc->set_name(CounterName(Counter(i)));
            nc->set_value(sum.Get(Counter(i)));
        }
    }
    return r;
}

void
Session::OnReport(Time now, bool final)
{
    if (m_state != State::RUNNING && m_state != State::FINISHING && !final)
    {
        return;
    }
    BeforeReport(now);
    Time interval = now - m_lastReport;
    if (interval <= 0)
    {
        return;
    }
    uint64_t bytes = m_bytes - m_reportBytes;
    uint64_t messages = m_messages - m_reportMessages;
    uint64_t retxTotal = Retransmissions();
    uint64_t retx = retxTotal - m_reportRetx;
    if (!final)
    {
        double seconds = double(interval) / 1e12;
        std::printf("[%7.2f s] %s %s Gb/s  %.1f kmsg/s  retx %" PRIu64 " (total %" PRIu64 ")\n",
                    double(now - m_start) / 1e12,
                    m_client ? "sent" : "recv",
                    Gbps(double(bytes) * 8 / seconds).c_str(),
                    double(messages) / seconds / 1e3,
                    retx,
                    retxTotal);
        std::fflush(stdout);
    }
    m_app.WriteTelemetry(Telemetry(now, interval, bytes, messages, retx, final));
    if (m_app.WritesResults())
    {
        if (!m_scenarioWritten)
        {
            // The stream starts with the scenario as run, as the runner's does.
            rpb::ResultRecord r;
            rpb::Scenario* sc = r.mutable_scenario();
            sc->set_name(RunLabel());
            sc->mutable_transport()->set_name(m_ccfg.transport);
            sc->mutable_transport()->set_paths(m_ccfg.transport == "rocev2" ? 1 : m_ccfg.numPaths);
            sc->mutable_transport()->set_mtu(m_ccfg.mtu);
            sc->set_seed(m_opts.seed);
            sc->mutable_output()->set_goodput_interval_us(m_opts.report * 1e6);
            m_app.WriteResult(r);
            m_scenarioWritten = true;
        }
        rpb::GoodputSample g;
        const double intervalUs = double(interval) / 1e6;
        g.set_time_us(double(now - m_start) / 1e6);
        g.set_interval_us(intervalUs);
        g.set_host(-1); // the whole node, as the runner's fabric-wide rows
        g.set_bytes(bytes);
        g.set_goodput_gbps(intervalUs > 0 ? double(bytes) * 8 / (intervalUs * 1e3) : 0);
        m_app.WriteGoodput(g);
    }
    m_lastReport = now;
    m_reportBytes = m_bytes;
    m_reportMessages = m_messages;
    m_reportRetx = retxTotal;
}

std::string
Session::RunLabel() const
{
    return m_ccfg.transport + "-" + (m_write ? "write" : "send") + "-" + std::to_string(m_size);
}

void
Session::WriteResultPaths()
{
    // One row per path of every sending connection, as the runner's paths.csv.
    Endpoint& ep = m_host.GetEndpoint();
    for (uint32_t qpn : m_qpns)
    {
        const TransportConnection* c = ep.GetConnection(qpn);
        if (!c || c->Counters().Get(Counter::TX_DATA) == 0)
        {
            continue;
        }
        rpb::PathCounters base;
        base.set_host(m_client ? CLIENT_HOST : SERVER_HOST);
        base.set_qpn(qpn);
        base.set_peer(m_client ? SERVER_HOST : CLIENT_HOST);
        base.set_flow_id(int32_t(m_connIndex.at(qpn)));
        rpb::ResultRecord r;
        if (c->PathCount() == 0)
        {
            const CounterSet& k = c->Counters();
            rpb::PathCounters* p = r.mutable_path();
            *p = base;
            p->set_path(-1);
            p->set_packets_sent(k.Get(Counter::TX_DATA) + k.Get(Counter::TX_RETRANSMIT));
            p->set_retransmissions(k.Get(Counter::TX_RETRANSMIT));
            p->set_timeouts(k.Get(Counter::RTO));
            p->set_ecn_echoes(k.Get(Counter::RX_CNP));
            p->set_cwnd_packets(-1);
            p->set_srtt_us(-1);
            p->set_min_rtt_us(-1);
            m_app.WriteResult(r);
            continue;
        }
        for (size_t i = 0; i < c->PathCount(); ++i)
        {
            const PathState* ps = c->Path(i);
            if (!ps)
            {
                continue;
            }
            rpb::PathCounters* p = r.mutable_path();
            *p = base;
            p->set_path(ps->id);
            p->set_source_port(ps->sourcePort);
            std::string status = PathStatusName(ps->status);
            std::transform(status.begin(), status.end(), status.begin(), ::tolower);
            p->set_status(status);
            p->set_packets_sent(ps->packetsSent);
            p->set_retransmissions(ps->retransmissions);
            p->set_timeouts(ps->timeouts);
            p->set_ecn_echoes(ps->ecnEchoes);
            p->set_packets_acked(ps->packetsAcked);
            p->set_cwnd_packets(ps->cwnd);
            p->set_srtt_us(ps->rtt.HasSample() ? double(ps->rtt.Smoothed()) / 1e6 : -1);
            p->set_min_rtt_us(ps->rtt.HasSample() ? double(ps->rtt.Min()) / 1e6 : -1);
            m_app.WriteResult(r);
        }
    }
}

void
Session::WriteResultSummary(Time now, bool pass)
{
    CounterSet sum;
    for (uint32_t qpn : m_qpns)
    {
        if (const TransportConnection* c = m_host.GetEndpoint().GetConnection(qpn))
        {
            for (size_t i = 0; i < size_t(Counter::COUNT); ++i)
            {
                sum.Add(Counter(i), c->Counters().Get(Counter(i)));
            }
        }
    }
    const double seconds = std::max(1e-9, double(now - m_start) / 1e12);
    const uint32_t flows = m_workload.connections();
    rpb::ResultRecord r;
    rpb::RunSummary* s = r.mutable_summary();
    s->set_scenario(RunLabel());
    s->set_transport(m_ccfg.transport);
    s->set_pfc(false);
    s->set_seed(m_opts.seed);
    s->set_hosts(2);
    s->set_switches(0);
    s->set_links(1);
    s->set_flows(flows);
    s->set_flows_completed(pass ? flows : 0);
    s->set_flows_failed(m_errors > 0 ? flows : 0);
    s->set_bytes_total(m_bytes);
    s->set_goodput_mean_gbps(double(m_bytes) * 8 / seconds / 1e9);
    s->set_retransmissions(sum.Get(Counter::TX_RETRANSMIT));
    s->set_timeouts(sum.Get(Counter::RTO));
    s->set_channel_drops(CountersSince(m_host.Port().Counters(), m_portAtStart).faultDropped);
    s->set_sim_time_us(double(now - m_start) / 1e6);
    s->set_wall_time_s(seconds);
    s->set_all_completed(pass);
    s->set_command_line(m_opts.commandLine);
    m_app.WriteResult(r);
}

void
Session::PrintFinal(Time now)
{
    std::lock_guard<std::recursive_mutex> lock(m_app.OutputMutex()); // one summary at a time
    OnReport(now, true);
    Endpoint& ep = m_host.GetEndpoint();
    CounterSet sum;
    for (uint32_t qpn : m_qpns)
    {
        if (const TransportConnection* c = ep.GetConnection(qpn))
        {
            for (size_t i = 0; i < size_t(Counter::COUNT); ++i)
            {
                sum.Add(Counter(i), c->Counters().Get(Counter(i)));
            }
        }
    }
    double seconds = std::max(1e-9, double(now - m_start) / 1e12);
    double gbps = double(m_bytes) * 8 / seconds / 1e9;
    uint64_t retx = sum.Get(Counter::TX_RETRANSMIT);
    // This session's share: a daemon's port and engine outlive its sessions.
    const PortCounters lifetime = m_host.Port().Counters();
    const PortCounters pc = CountersSince(lifetime, m_portAtStart);
    bool pass;
    std::string verified;
    if (m_client)
    {
        pass = m_errors == 0 && m_verdictReceived && !m_interrupted;
        verified = m_verdictReceived ? std::to_string(m_verdict.messages_verified()) : "0";
    }
    else
    {
        pass = m_errors == 0 && m_finishReceived;
        verified = m_errors == 0 ? std::to_string(m_messages) : "0";
    }
    std::printf("---- metaroce-perf %s summary (%s) ----\n",
                m_client ? "client" : "server",
                m_name.c_str());
    std::printf("transport %s  op %s  size %" PRIu64 "  mtu %u  paths %u  streams %u  "
                "connections %u  depth %u  port %s\n",
                m_ccfg.transport.c_str(),
                m_write ? "write" : "send",
                m_size,
                m_ccfg.mtu,
                m_ccfg.transport == "rocev2" ? 1 : m_ccfg.numPaths,
                m_workload.streams(),
                m_workload.connections(),
                m_depth,
                m_host.Port().Describe().c_str());
    std::printf("messages %" PRIu64 "  bytes %" PRIu64 "  time %.3f s\n",
                m_messages,
                m_bytes,
                seconds);
    std::printf("goodput %.3f Gb/s  message rate %.1f kmsg/s\n",
                gbps,
                double(m_messages) / seconds / 1e3);
    std::printf("data packets %" PRIu64 "  retransmissions %" PRIu64 "  loss detected %" PRIu64
                "  rto %" PRIu64 "  go-back-n %" PRIu64 "  duplicates received %" PRIu64 "\n",
                sum.Get(Counter::TX_DATA),
                retx,
                sum.Get(Counter::LOSS_DETECTED),
                sum.Get(Counter::RTO),
                sum.Get(Counter::GO_BACK_N),
                sum.Get(Counter::RX_DUPLICATE));
    std::printf("port: tx %" PRIu64 " rx %" PRIu64 " tx failed %" PRIu64 " rx malformed %" PRIu64
                " rx ignored %" PRIu64 " rx kernel drops %" PRIu64 " rx backlog ce %" PRIu64
                " handed off %" PRIu64 " hand-off drops %" PRIu64 "  faults: dropped %" PRIu64
                " duplicated %" PRIu64 " reordered %" PRIu64 "\n",
                pc.txFrames,
                pc.rxFrames,
                pc.txFailed,
                pc.rxMalformed,
                pc.rxIgnored,
                pc.rxKernelDrops,
                pc.rxBacklogMarked,
                pc.rxHandedOff,
                pc.rxHandoffDrops,
                pc.faultDropped,
                pc.faultDuplicated,
                pc.faultReordered);
    std::printf("engine rx drops: %s\n", m_host.DropSummary(m_rxAtStart).c_str());
    const TimerStats& ts = m_host.GetTimerStats();
    std::printf("timer: %" PRIu64 " kernel-timer expiries, late by %.1f us mean, %.1f us max; "
                "%" PRIu64 " datagrams read just before a timeout\n",
                ts.expiries,
                ts.expiries ? double(ts.lateSum) / double(ts.expiries) / 1e6 : 0.0,
                double(ts.lateMax) / 1e6,
                ts.drained);
    if (const HostDelayEstimator* hd = m_host.HostDelay())
    {
        std::printf("host delay: %.3f ms now; largest %.3f ms here (%" PRIu64
                    " wake-ups measured), %.3f ms reported by peers (%" PRIu64 " reports)\n",
                    double(m_host.GetEndpoint().HostDelay()) / 1e9,
                    double(hd->Largest()) / 1e9,
                    hd->Samples(),
                    double(m_host.PeerHostDelay().Largest()) / 1e9,
                    m_host.PeerHostDelay().Reports());
    }
    if (m_client)
    {
        std::printf("receiver verified %s messages, %" PRIu64 " bytes, %" PRIu64 " errors%s%s\n",
                    verified.c_str(),
                    m_verdictReceived ? m_verdict.bytes_verified() : 0,
                    m_verdictReceived ? m_verdict.errors() : 0,
                    m_firstError.empty() ? "" : ": ",
                    m_firstError.c_str());
    }
    else
    {
        std::printf("verified %s messages, %" PRIu64 " errors%s%s\n",
                    verified.c_str(),
                    m_errors,
                    m_firstError.empty() ? "" : ": ",
                    m_firstError.c_str());
    }
    std::printf("RESULT role=%s status=%s transport=%s op=%s size=%" PRIu64 " gbps=%.3f "
                "msgs=%" PRIu64 " bytes=%" PRIu64 " retx=%" PRIu64 " verified=%s errors=%" PRIu64
                " malformed=%" PRIu64 " malformed_lifetime=%" PRIu64 " data_packets=%" PRIu64
                " rto=%" PRIu64 " loss_detected=%" PRIu64 " rx_kernel_drops=%" PRIu64
                " rx_backlog_ce=%" PRIu64 " ecn_echoes=%" PRIu64 " rx_handoffs=%" PRIu64
                " rx_handoff_drops=%" PRIu64 "\n",
                m_client ? "client" : "server",
                pass ? "PASS" : (m_interrupted && m_errors == 0 ? "INTERRUPTED" : "FAIL"),
                m_ccfg.transport.c_str(),
                m_write ? "write" : "send",
                m_size,
                gbps,
                m_messages,
                m_bytes,
                retx,
                verified.c_str(),
                m_errors,
                m_host.RxDropped(m_rxAtStart) + pc.rxMalformed,
                m_host.RxDropped() + lifetime.rxMalformed,
                sum.Get(Counter::TX_DATA),
                sum.Get(Counter::RTO),
                sum.Get(Counter::LOSS_DETECTED),
                pc.rxKernelDrops,
                pc.rxBacklogMarked,
                sum.Get(Counter::ECN_ECHO_RECEIVED) + sum.Get(Counter::RX_CNP),
                pc.rxHandedOff,
                pc.rxHandoffDrops);
    std::fflush(stdout);
    if (m_app.WritesResults())
    {
        WriteResultPaths();
        WriteResultSummary(now, pass);
    }
    if (m_client)
    {
        SessionTotals t;
        t.bytes = m_bytes;
        t.messages = m_messages;
        t.retx = retx;
        t.rto = sum.Get(Counter::RTO);
        t.start = m_start;
        t.end = now;
        t.pass = pass;
        t.interrupted = m_interrupted && m_errors == 0;
        m_app.AddTotals(t);
    }
}

} // namespace perf
} // namespace hil
} // namespace metaroce
