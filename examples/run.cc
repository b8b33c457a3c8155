/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

/**
 * \file
 * metaroce-run: the scenario runner. Reads a scenario (topology, transport, workload, loss
 * model, seed) from a protobuf text-format file (metaroce.results.Scenario in
 * proto/metaroce-results.proto), applies command-line overrides, runs it on the ns-3 fabric
 * and writes a run folder: flows.csv, collectives.csv, goodput.csv, paths.csv, switches.csv,
 * summary.txt, summary.pb.txt, scenario.pb.txt and results.pb. docs/outputs.md documents
 * every file and column; docs/scenarios.md the scenario format.
 *
 *   metaroce-run --scenario=examples/scenarios/incast-leaf-spine.textproto --out=runs/x \
 *       --seed=2 --transport=rocev2 --set='transport { paths: 4 }' --set=workload.flow_bytes=65536
 *
 * Exit codes: 0 the run finished (even if some flows did not complete: see summary.txt),
 * 1 an output could not be written, 2 bad input (scenario file, override or value); the
 * message names the file, line and column, or the option.
 */

#include "metaroce-results.pb.h"
#include "metaroce-run-outputs.h"
#include "metaroce-run-plan.h"
#include "metaroce-run-samplers.h"
#include "run-distributed.h"

#include "ns3/boolean.h"
#include "ns3/command-line.h"
#include "ns3/core-module.h"
#include "ns3/metaroce-channel.h"
#include "ns3/metaroce-fabric.h"
#include "ns3/metaroce-huge-pages.h"
#include "ns3/metaroce-net-device.h"
#include "ns3/metaroce-nic.h"
#include "ns3/metaroce-policy-names.h"
#include "ns3/metaroce-scheduler.h"
#include "ns3/metaroce-stack-helper.h"
#include "ns3/metaroce-switch.h"
#include "ns3/metaroce-topology-helper.h"
#include "ns3/metaroce-workload-helper.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <google/protobuf/text_format.h>
#include <google/protobuf/util/delimited_message_util.h>
#include <iostream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

using namespace ns3;
using namespace metaroce_run;
namespace pb = metaroce::results;
namespace gp = google::protobuf;

namespace
{

/// Exit code of bad input: scenario file, override or command-line value.
constexpr int EXIT_BAD_INPUT = 2;
/// Exit code of an output that could not be written.
constexpr int EXIT_OUTPUT = 1;

/**
 * Print an input error and exit with EXIT_BAD_INPUT.
 * \param message what is wrong, with its location
 */
[[noreturn]] void
BadInput(const std::string& message)
{
    std::cerr << "metaroce-run: " << message << std::endl;
    std::exit(EXIT_BAD_INPUT);
}

/**
 * Open an output file (exit 1 if it cannot be created).
 * \param dir the run folder
 * \param name the file name
 * \return the stream
 */
std::ofstream
OpenOutput(const std::filesystem::path& dir, const std::string& name)
{
    std::ofstream out(dir / name, std::ios::binary);
    if (!out)
    {
        std::cerr << "metaroce-run: cannot write " << (dir / name).string() << std::endl;
        std::exit(EXIT_OUTPUT);
    }
    return out;
}

/// \return "YYYYmmdd-HHMMSS" of the local time.
std::string
Timestamp()
{
    char buf[32];
    const std::time_t now = std::time(nullptr);
    std::strftime(buf, sizeof(buf), "%Y%m%d-%H%M%S", std::localtime(&now));
    return buf;
}

/**
 * The runner: load and validate the scenario, build, run, collect and write.
 * \param argc argument count
 * \param argv arguments
 * \return the exit code
 */
int
RunScenario(int argc, char* argv[])
{
    // Transparent huge pages for the heap: may start the program again, once, with the same
    // arguments (ns3/metaroce-huge-pages.h); results do not depend on it.
    const std::string heapPages = MetaRoceUseHugePages(argv);
    const auto wallStart = std::chrono::steady_clock::now();
    // Under mpirun with several ranks (or --mpi): ns-3's DistributedSimulatorImpl.
    const bool distributed = MetaRoceStartDistributed(&argc, &argv, "metaroce-run");
    std::string commandLine;
    for (int i = 0; i < argc; ++i)
    {
        commandLine += (i ? " " : "") + std::string(argv[i]);
    }

    // Options are taken as strings and checked here, so a bad value exits with 2 and a message
    // naming the option (ns-3's own parsing exits with 1).
    std::string scenarioPath;
    std::string outDir;
    std::string seedArg;
    std::string transportArg;
    std::string pfcArg;
    std::string lossArg;
    std::string stopArg;
    std::vector<std::string> sets;
    bool printScenario = false;
    bool quiet = false;
    CommandLine cmd(__FILE__);
    cmd.Usage("Run a MetaRoCE scenario (protobuf text format, metaroce.results.Scenario) and "
              "write a run folder; see docs/scenarios.md and docs/outputs.md.");
    cmd.AddValue("scenario",
                 "scenario file (text format); none = the built-in default",
                 scenarioPath);
    cmd.AddValue("out", "run folder (default runs/<name>-<date>-<time>)", outDir);
    cmd.AddValue("seed", "override: seed", seedArg);
    cmd.AddValue("transport", "override: transport.name (metaroce or rocev2)", transportArg);
    cmd.AddValue("pfc", "override: topology.pfc (true/false)", pfcArg);
    cmd.AddValue("loss",
                 "override the random loss: a Bernoulli probability (0.01), "
                 "ge:p,r,h_g,h_b (Gilbert-Elliott) or none",
                 lossArg);
    cmd.AddValue("stop-ms", "override: stop_time_ms", stopArg);
    cmd.AddValue("set",
                 "override any field, repeatable: 'field.path=value' or a text-format snippet "
                 "such as 'transport { paths: 4 }'",
                 MakeCallback(+[](std::string) -> bool { return true; }));
    cmd.AddValue("print-scenario", "print the completed scenario and exit", printScenario);
    cmd.AddValue("quiet", "do not print the summary", quiet);
    bool mpiFlag = false;
    cmd.AddValue("mpi",
                 "distributed run over the MPI ranks (automatic under mpirun -np N > 1); "
                 "docs/distributed.md",
                 mpiFlag);
    // Collect every --set in order (ns-3 keeps only the last value of an option).
    for (int i = 1; i < argc; ++i)
    {
        const std::string a = argv[i];
        for (const std::string prefix : {"--set=", "-set="})
        {
            if (a.rfind(prefix, 0) == 0)
            {
                sets.push_back(a.substr(prefix.size()));
            }
        }
        if (a == "--set" || a == "-set")
        {
            BadInput("--set needs a value: --set='field.path=value'");
        }
        CheckAttributeOption(a);
    }
    cmd.Parse(argc, argv);

    ScenarioOptions options;
    options.scenarioPath = scenarioPath;
    options.seed = seedArg;
    options.transport = transportArg;
    options.pfc = pfcArg;
    options.stopMs = stopArg;
    options.loss = lossArg;
    options.sets = sets;
    ScenarioPlan plan = LoadScenario(options);
    ScenarioLoader& loader = plan.loader;
    const std::filesystem::path& scenarioDir = plan.directory;
    const metaroce::ConnectionConfig& cfg = plan.connection;
    const pb::Scenario& sc = loader.Get();
    for (const std::string& warning : plan.warnings)
    {
        if (MetaRoceGetRank() == 0)
        {
            std::cerr << "metaroce-run: warning: " << warning << std::endl;
        }
    }
    if (printScenario)
    {
        std::string text;
        gp::TextFormat::PrintToString(sc, &text);
        std::cout << text;
        return 0;
    }

    // ---- Build
    // ns3::MetaRoceScheduler: with TieBreak Insertion the same event order (and results) as
    // ns-3's default MapScheduler, and faster on large fabrics (docs/benchmarks.md).
    ObjectFactory scheduler;
    scheduler.SetTypeId("ns3::MetaRoceScheduler");
    scheduler.Set("TieBreak",
                  EnumValue(sc.event_order() == "link" ? MetaRoceScheduler::LINK
                                                       : MetaRoceScheduler::INSERTION));
    Simulator::SetScheduler(scheduler);
    RngSeedManager::SetSeed(static_cast<uint32_t>(std::max<uint64_t>(1, sc.seed() % 4294967295u)));
    RngSeedManager::SetRun(1);
    const pb::Topology& t = sc.topology();
    MetaRoceTopologyHelper topo;
    topo.SetHostLinkRate(DataRate(static_cast<uint64_t>(std::llround(t.link_rate_gbps() * 1e9))));
    topo.SetFabricLinkRate(
        DataRate(static_cast<uint64_t>(std::llround(t.fabric_rate_gbps() * 1e9))));
    topo.SetLinkDelay(NanoSeconds(static_cast<int64_t>(std::llround(t.link_delay_ns()))));
    topo.SetPlaneCount(t.planes());
    topo.SetBuffer(t.buffer() == pb::Topology::DEEP ? MetaRoceSwitch::DEEP
                                                    : MetaRoceSwitch::SHALLOW,
                   t.buffer_bytes());
    if (t.has_ecn())
    {
        const pb::Ecn& e = t.ecn();
        if (e.has_enabled())
        {
            topo.SetSwitchAttribute("EcnEnabled", BooleanValue(e.enabled()));
        }
        if (e.kmin_bytes())
        {
            topo.SetSwitchAttribute("EcnKmin", UintegerValue(e.kmin_bytes()));
        }
        if (e.kmax_bytes())
        {
            topo.SetSwitchAttribute("EcnKmax", UintegerValue(e.kmax_bytes()));
        }
        if (e.pmax() > 0)
        {
            topo.SetSwitchAttribute("EcnPmax", DoubleValue(e.pmax()));
        }
    }
    topo.SetPfc(t.pfc());
    for (const pb::Attribute& a : t.switch_attributes())
    {
        topo.SetSwitchAttribute(a.name(), StringValue(a.value()));
    }
    topo.SetRankCount(MetaRoceGetRankCount());
    Ptr<MetaRoceFabric> fabric;
    switch (t.kind())
    {
    case pb::Topology::FAT_TREE:
        fabric = topo.BuildFatTree(t.k(), t.tiers());
        break;
    case pb::Topology::SINGLE_SWITCH:
        fabric = topo.BuildSingleSwitch(t.hosts());
        break;
    default:
        fabric = topo.BuildLeafSpine(t.leaves(), t.hosts_per_leaf(), t.oversubscription());
        break;
    }
    const uint32_t hosts = fabric->GetHostCount();
    const NodeNames names(fabric);

    MetaRoceStackHelper stack;
    stack.SetNicAttribute("Transport", StringValue(sc.transport().name()));
    stack.SetNicAttribute("RoceRecovery", StringValue(sc.transport().rocev2_recovery()));
    for (const pb::Attribute& a : sc.transport().nic_attributes())
    {
        stack.SetNicAttribute(a.name(), StringValue(a.value()));
    }
    std::vector<Ptr<MetaRoceNic>> nics = stack.Install(fabric);
    const int64_t streams = MetaRoceStackHelper::AssignStreams(nics, 0);

    // Random loss, then the fabric's streams (the error models exist now).
    const pb::Loss& loss = sc.loss();
    const bool ge = loss.has_gilbert_elliott() && loss.gilbert_elliott().p() > 0;
    if (loss.bernoulli() > 0 || ge)
    {
        for (const MetaRoceLink& link : fabric->GetLinks())
        {
            const bool hostLink =
                link.portA == MetaRoceSwitch::NO_PORT || link.portB == MetaRoceSwitch::NO_PORT;
            if ((loss.scope() == pb::Loss::FABRIC_LINKS && hostLink) ||
                (loss.scope() == pb::Loss::HOST_LINKS && !hostLink))
            {
                continue;
            }
            if (loss.scope() == pb::Loss::HOST_DOWNLINKS && !hostLink)
            {
                continue;
            }
            if (ge)
            {
                const pb::GilbertElliott& g = loss.gilbert_elliott();
                fabric->SetGilbertElliottLoss(link.channel, g.p(), g.r(), g.h_g(), g.h_b());
            }
            else
            {
                fabric->SetBernoulliLoss(link.channel, loss.bernoulli());
            }
            if (loss.scope() == pb::Loss::HOST_DOWNLINKS)
            {
                // Keep only the switch-to-host direction lossy.
                link.channel->SetErrorModel(link.portA == MetaRoceSwitch::NO_PORT ? link.deviceA
                                                                                  : link.deviceB,
                                            nullptr);
            }
        }
    }
    fabric->AssignStreams(streams + 1000);

    auto stopOf = [](double stopUs) { return stopUs == 0 ? Time::Max() : FromUs(stopUs); };
    for (int kind = 0; kind < 2; ++kind)
    {
        const auto& events = kind == 0 ? loss.fail_link() : loss.degrade_link();
        const std::string field = kind == 0 ? "loss.fail_link" : "loss.degrade_link";
        for (int i = 0; i < events.size(); ++i)
        {
            const pb::LinkEvent& e = events.Get(i);
            const std::string at = field + "[" + std::to_string(i) + "]";
            Ptr<Node> a = names.Find(e.a());
            Ptr<Node> b = names.Find(e.b());
            if (!a || !b)
            {
                loader.Invalid(at + (a ? ".b" : ".a"),
                               "no node '" + (a ? e.b() : e.a()) + "' (hosts h0..h" +
                                   std::to_string(hosts - 1) + ", switches s0..s" +
                                   std::to_string(fabric->GetSwitchCount() - 1) + ")");
            }
            Ptr<MetaRoceChannel> ch = fabric->GetChannel(a, b);
            if (!ch)
            {
                loader.Invalid(at + ".a", "no link between " + e.a() + " and " + e.b());
            }
            if (kind == 0)
            {
                fabric->FailLink(ch, FromUs(e.start_us()), stopOf(e.stop_us()));
            }
            else
            {
                fabric->DegradeLink(ch, e.fraction(), FromUs(e.start_us()), stopOf(e.stop_us()));
            }
        }
    }
    for (const pb::PlaneEvent& e : loss.fail_plane())
    {
        fabric->FailPlane(e.plane(), FromUs(e.start_us()), stopOf(e.stop_us()));
    }

    // Workload.
    Ptr<MetaRoceWorkloadHelper> load = CreateObject<MetaRoceWorkloadHelper>();
    load->Setup(fabric, nics);
    // Distributed runs: the helper checks every 10 us (simulated) whether all ranks are done.
    load->SetStopWhenDone(true);
    load->SetConnectionConfig(cfg);
    const pb::Workload& w = sc.workload();
    const Time start = FromUs(w.start_us());
    std::vector<uint32_t> first;
    for (uint32_t h = 0; h < (w.hosts() ? w.hosts() : hosts); ++h)
    {
        first.push_back(h);
    }
    switch (w.kind())
    {
    case pb::Workload::INCAST: {
        std::vector<uint32_t> senders;
        for (uint32_t h = 0; h < hosts && senders.size() < w.senders(); ++h)
        {
            if (h != w.receiver())
            {
                senders.push_back(h);
            }
        }
        load->AddIncast(senders, w.receiver(), w.flow_bytes(), start);
        break;
    }
    case pb::Workload::PERMUTATION:
        load->AddPermutation(w.flow_bytes(), start, sc.seed());
        break;
    case pb::Workload::ALL_TO_ALL:
        load->AddAllToAll(first, w.flow_bytes(), start);
        break;
    case pb::Workload::RING_ALLREDUCE:
        load->AddRingAllReduce(first, w.flow_bytes(), w.channels(), start);
        break;
    case pb::Workload::HTSIM_FILE: {
        std::filesystem::path file(w.file());
        if (file.is_relative())
        {
            file = scenarioDir / file;
        }
        std::ifstream in(file);
        if (!in)
        {
            loader.Invalid("workload.file", "cannot open " + file.string());
        }
        MetaRoceHtsimMatrix matrix;
        std::string error;
        if (!MetaRoceWorkloadHelper::ParseHtsimConnectionMatrix(in, matrix, error))
        {
            BadInput(file.string() + ": " + error);
        }
        for (const MetaRoceHtsimFlow& f : matrix.flows)
        {
            if ((f.bytes + cfg.maxMessageSize - 1) / cfg.maxMessageSize > cfg.maxOutstandingWrs)
            {
                BadInput(file.string() + ": line " + std::to_string(f.line) +
                         ": flow needs more messages than MaxOutstandingWrs");
            }
        }
        if (!load->AddHtsimConnectionMatrix(matrix, error))
        {
            BadInput(file.string() + ": " + error);
        }
        break;
    }
    default:
        loader.Invalid("workload.kind", "unknown kind");
    }

    // Goodput rows for every receiving host.
    std::vector<bool> receives(hosts, false);
    for (const MetaRoceFlow& f : load->GetFlows())
    {
        receives[f.dst] = true;
    }
    for (const MetaRoceCollective& c : load->GetCollectives())
    {
        for (uint32_t r : c.ranks)
        {
            receives[r] = true;
        }
    }
    std::vector<uint32_t> tracked;
    for (uint32_t h = 0; h < hosts && sc.output().per_host_goodput(); ++h)
    {
        if (receives[h])
        {
            tracked.push_back(h);
        }
    }
    GoodputSampler goodput(nics, tracked, FromUs(sc.output().goodput_interval_us()));
    std::unique_ptr<FlowGoodputSampler> flowGoodput;
    if (sc.output().flow_goodput())
    {
        flowGoodput =
            std::make_unique<FlowGoodputSampler>(nics,
                                                 load,
                                                 FromUs(sc.output().goodput_interval_us()));
    }
    std::vector<std::unique_ptr<QueuePeaks>> queuePeaks;
    for (uint32_t j = 0; j < fabric->GetSwitchCount() && sc.output().queue_peaks(); ++j)
    {
        auto peaks = std::make_unique<QueuePeaks>();
        peaks->sw = fabric->GetSwitch(j);
        peaks->portPeak.assign(peaks->sw->GetNPorts(), 0);
        peaks->portPeakTime.assign(peaks->sw->GetNPorts(), Seconds(0));
        peaks->sw->TraceConnectWithoutContext(
            "Forward",
            MakeBoundCallback(&QueuePeaks::OnForward, peaks.get()));
        queuePeaks.push_back(std::move(peaks));
    }

    // ---- Run
    Simulator::Stop(MicroSeconds(static_cast<int64_t>(std::llround(sc.stop_time_ms() * 1e3))));
    Simulator::Run();
    goodput.Finish();
    if (flowGoodput)
    {
        flowGoodput->Finish();
    }
    const Time end = Simulator::Now();
    uint64_t events = Simulator::GetEventCount();

    // ---- Collect
    std::vector<pb::ResultRecord> records;
    std::map<std::pair<uint32_t, uint32_t>, int32_t> flowOfConnection;
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

    // Paths of every connection that sent data.
    std::vector<pb::PathCounters> paths;
    for (uint32_t h = 0; h < hosts; ++h)
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
                const metaroce::CounterSet& k = c->Counters();
                pb::PathCounters r = base;
                r.set_path(-1);
                r.set_packets_sent(k.Get(metaroce::Counter::TX_DATA) +
                                   k.Get(metaroce::Counter::TX_RETRANSMIT));
                r.set_retransmissions(k.Get(metaroce::Counter::TX_RETRANSMIT));
                r.set_timeouts(k.Get(metaroce::Counter::RTO));
                r.set_ecn_echoes(k.Get(metaroce::Counter::RX_CNP));
                r.set_cwnd_packets(-1);
                r.set_srtt_us(-1);
                r.set_min_rtt_us(-1);
                paths.push_back(r);
                continue;
            }
            for (size_t i = 0; i < c->PathCount(); ++i)
            {
                const metaroce::PathState* p = c->Path(i);
                if (!p)
                {
                    continue;
                }
                pb::PathCounters r = base;
                r.set_path(p->id);
                r.set_source_port(p->sourcePort);
                std::string status = metaroce::PathStatusName(p->status);
                std::transform(status.begin(), status.end(), status.begin(), ::tolower);
                r.set_status(status);
                r.set_packets_sent(p->packetsSent);
                r.set_retransmissions(p->retransmissions);
                r.set_timeouts(p->timeouts);
                r.set_ecn_echoes(p->ecnEchoes);
                r.set_packets_acked(p->packetsAcked);
                r.set_cwnd_packets(p->cwnd);
                r.set_srtt_us(p->rtt.HasSample() ? p->rtt.Smoothed() / 1e6 : -1);
                r.set_min_rtt_us(p->rtt.HasSample() ? p->rtt.Min() / 1e6 : -1);
                paths.push_back(r);
            }
        }
    }

    // Switches: a total row, then one row per port.
    const std::vector<uint32_t> tiers = SwitchTiers(fabric);
    std::vector<pb::SwitchCounters> switches;
    uint64_t channelDrops = 0;
    for (const MetaRoceLink& link : fabric->GetLinks())
    {
        for (const Ptr<MetaRoceNetDevice>& d : {link.deviceA, link.deviceB})
        {
            channelDrops +=
                d->GetCounters().drops[static_cast<uint32_t>(MetaRoceDropReason::CHANNEL_LOSS)];
        }
    }
    std::map<std::pair<uint32_t, uint32_t>, std::string> portPeer;
    for (const MetaRoceLink& link : fabric->GetLinks())
    {
        portPeer[{link.nodeA->GetId(), link.portA}] = names.Name(link.nodeB);
        portPeer[{link.nodeB->GetId(), link.portB}] = names.Name(link.nodeA);
    }
    // Host ports: one row per host per plane, in host then plane order.
    std::vector<pb::HostPortCounters> hostPorts;
    {
        std::map<uint32_t, uint32_t> hostOfNode;
        for (uint32_t i = 0; i < hosts; ++i)
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
                             return x.host() != y.host() ? x.host() < y.host()
                                                         : x.plane() < y.plane();
                         });
    }
    uint64_t switchDrops = 0;
    uint64_t ecnMarked = 0;
    uint64_t pfcPauses = 0;
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

    uint64_t placed = 0;
    uint64_t retransmissions = 0;
    uint64_t timeouts = 0;
    for (const Ptr<MetaRoceNic>& nic : nics)
    {
        const metaroce::CounterSet& k = nic->GetEngineCounters();
        placed += k.Get(metaroce::Counter::BYTES_PLACED);
        retransmissions += k.Get(metaroce::Counter::TX_RETRANSMIT);
        timeouts += k.Get(metaroce::Counter::RTO);
    }
    std::vector<pb::GoodputSample> goodputRows = goodput.Samples();
    std::vector<pb::FlowGoodputSample> flowGoodputRows;
    if (flowGoodput)
    {
        flowGoodputRows = flowGoodput->Samples();
    }
    if (distributed)
    {
        // Each rank has the counters of the nodes it owns: rank 0 collects them (flows by
        // source host, switches, host ports, paths, goodput samples) and writes the run folder.
        std::vector<bool> mine;
        for (const MetaRoceFlow& f : load->GetFlows())
        {
            mine.push_back(MetaRoceIsLocal(fabric->GetHost(f.src)));
        }
        const bool root = metaroce_run::GatherRows(flows, mine);
        mine.clear();
        for (uint32_t j = 0; j < fabric->GetSwitchCount(); ++j)
        {
            mine.push_back(MetaRoceIsLocal(fabric->GetSwitchNode(j)));
        }
        metaroce_run::GatherRows(switches, mine);
        mine.clear();
        for (const pb::HostPortCounters& row : hostPorts)
        {
            mine.push_back(MetaRoceIsLocal(fabric->GetHost(row.host())));
        }
        metaroce_run::GatherRows(hostPorts, mine);
        metaroce_run::MergeCollectives(collectives, load->GetCollectives());
        metaroce_run::GatherAppend(paths);
        std::stable_sort(paths.begin(),
                         paths.end(),
                         [](const pb::PathCounters& x, const pb::PathCounters& y) {
                             return x.host() < y.host();
                         });
        // Goodput samples: every rank samples at the same times; a rank's bytes are those of
        // its own hosts (zero for the others), so the samples add up.
        metaroce_run::GatherAppend(goodputRows);
        metaroce_run::SumSamples(goodputRows, [](const pb::GoodputSample& g) {
            return std::make_pair(g.time_us(), int64_t(g.host()));
        });
        metaroce_run::GatherAppend(flowGoodputRows);
        metaroce_run::SumSamples(flowGoodputRows, [](const pb::FlowGoodputSample& g) {
            return std::make_pair(g.time_us(), int64_t(g.flow_id()));
        });
        events = MetaRoceSumOverRanks(events);
        channelDrops = MetaRoceSumOverRanks(channelDrops);
        placed = MetaRoceSumOverRanks(placed);
        retransmissions = MetaRoceSumOverRanks(retransmissions);
        timeouts = MetaRoceSumOverRanks(timeouts);
        if (!root)
        {
            Simulator::Destroy();
            MetaRoceDisableDistributed();
            return 0;
        }
    }
    for (const pb::SwitchCounters& sw : switches)
    {
        switchDrops += sw.total().drops_total() - sw.total().drops_channel_loss();
        ecnMarked += sw.total().ecn_marked();
        pfcPauses += sw.total().pfc_pause_sent();
    }

    // Summary.
    pb::RunSummary sum;
    sum.set_scenario(sc.name());
    sum.set_transport(sc.transport().name());
    sum.set_pfc(t.pfc());
    sum.set_seed(sc.seed());
    sum.set_hosts(hosts);
    sum.set_switches(fabric->GetSwitchCount());
    sum.set_links(static_cast<uint32_t>(fabric->GetLinks().size()));
    sum.set_flows(static_cast<uint32_t>(flows.size()));
    std::vector<double> fcts;
    std::vector<double> slowdowns;
    uint64_t bytesTotal = 0;
    double firstStart = -1;
    double lastFinish = 0;
    uint32_t failed = 0;
    for (const pb::FlowRecord& f : flows)
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
    sum.set_collectives(static_cast<uint32_t>(collectives.size()));
    double busbw = 0;
    uint32_t collectivesDone = 0;
    for (const pb::CollectiveRecord& c : collectives)
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
                                  ? placed * 8 / ((lastFinish - firstStart) * 1e3)
                                  : 0);
    sum.set_retransmissions(retransmissions);
    sum.set_timeouts(timeouts);
    sum.set_switch_drops(switchDrops);
    sum.set_channel_drops(channelDrops);
    sum.set_ecn_marked(ecnMarked);
    sum.set_pfc_pauses(pfcPauses);
    sum.set_sim_time_us(ToUs(end));
    sum.set_events(events);
    sum.set_all_completed(fcts.size() == flows.size() && collectivesDone == collectives.size());
    sum.set_command_line(commandLine);
    sum.set_wall_time_s(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - wallStart).count());

    // ---- Write
    std::filesystem::path dir =
        outDir.empty() ? std::filesystem::path("runs") / (sc.name() + "-" + Timestamp())
                       : std::filesystem::path(outDir);
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec)
    {
        std::cerr << "metaroce-run: cannot create " << dir.string() << ": " << ec.message()
                  << std::endl;
        return EXIT_OUTPUT;
    }
    {
        std::ofstream out = OpenOutput(dir, "flows.csv");
        out << FLOWS_HEADER << "\n";
        for (const pb::FlowRecord& f : flows)
        {
            out << f.flow_id() << "," << f.src() << "," << f.dst() << "," << f.bytes() << ","
                << Fixed(f.start_us(), 3) << "," << Fixed(f.finish_us(), 3) << ","
                << Fixed(f.fct_us(), 3) << "," << Fixed(f.ideal_fct_us(), 3) << ","
                << Fixed(f.slowdown(), 4) << "," << f.retransmissions() << "," << f.timeouts()
                << "," << (f.completed() ? 1 : 0) << "\n";
        }
    }
    {
        std::ofstream out = OpenOutput(dir, "collectives.csv");
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
    {
        std::ofstream out = OpenOutput(dir, "goodput.csv");
        out << GOODPUT_HEADER << "\n";
        for (const pb::GoodputSample& g : goodputRows)
        {
            out << Fixed(g.time_us(), 3) << "," << Fixed(g.interval_us(), 3) << "," << g.host()
                << "," << g.bytes() << "," << Fixed(g.goodput_gbps(), 3) << "\n";
        }
    }
    {
        std::ofstream out = OpenOutput(dir, "paths.csv");
        out << PATHS_HEADER << "\n";
        for (const pb::PathCounters& p : paths)
        {
            out << p.host() << "," << p.qpn() << "," << p.peer() << "," << p.flow_id() << ","
                << p.path() << "," << p.source_port() << "," << p.status() << ","
                << p.packets_sent() << "," << p.retransmissions() << "," << p.timeouts() << ","
                << p.ecn_echoes() << "," << p.packets_acked() << "," << Fixed(p.cwnd_packets(), 2)
                << "," << Fixed(p.srtt_us(), 3) << "," << Fixed(p.min_rtt_us(), 3) << "\n";
        }
    }
    {
        std::ofstream out = OpenOutput(dir, "switches.csv");
        out << SWITCHES_HEADER << "\n";
        for (const pb::SwitchCounters& s : switches)
        {
            out << PortLine(s.total()) << "\n";
            for (const pb::PortCounters& p : s.ports())
            {
                if (sc.output().switch_ports())
                {
                    out << PortLine(p) << "\n";
                }
            }
        }
    }
    {
        std::ofstream out = OpenOutput(dir, "hosts.csv");
        out << HOSTS_HEADER << "\n";
        for (const pb::HostPortCounters& h : hostPorts)
        {
            out << h.host() << "," << h.plane() << "," << h.peer() << "," << h.tx_frames() << ","
                << h.tx_bytes() << "," << h.rx_frames() << "," << h.rx_bytes() << ","
                << h.pfc_pause_received() << "," << h.drops_channel_loss() << ","
                << h.drops_link_down() << "," << h.drops_other() << "\n";
        }
    }
    if (flowGoodput)
    {
        std::ofstream out = OpenOutput(dir, "flow_goodput.csv");
        out << FLOW_GOODPUT_HEADER << "\n";
        for (const pb::FlowGoodputSample& g : flowGoodputRows)
        {
            out << Fixed(g.time_us(), 3) << "," << Fixed(g.interval_us(), 3) << "," << g.flow_id()
                << "," << g.src() << "," << g.dst() << "," << g.bytes() << ","
                << Fixed(g.goodput_gbps(), 3) << "," << g.tx_packets() << "\n";
        }
    }
    if (sc.output().queue_peaks())
    {
        std::ofstream out = OpenOutput(dir, "queues.csv");
        out << QUEUES_HEADER << "\n";
        auto line = [&out](const pb::PortCounters& r) {
            out << r.switch_id() << "," << r.port() << "," << r.plane() << "," << r.tier() << ","
                << r.peer() << "," << r.peak_queue_bytes() << ","
                << Fixed(r.peak_queue_time_us(), 3) << "\n";
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
    {
        std::string text;
        gp::TextFormat::PrintToString(sc, &text);
        OpenOutput(dir, "scenario.pb.txt") << text;
        gp::TextFormat::PrintToString(sum, &text);
        OpenOutput(dir, "summary.pb.txt") << text;
    }
    std::ostringstream human;
    human << "scenario        " << sc.name() << " (seed " << sc.seed() << ")\n"
          << "transport       " << sc.transport().name() << (t.pfc() ? " with PFC" : " without PFC")
          << ", " << sc.transport().paths() << " path(s), mtu " << sc.transport().mtu() << ", cc "
          << sc.transport().cc() << "\n"
          << "fabric          " << hosts << " hosts, " << sum.switches() << " switches, "
          << sum.links() << " links, " << t.planes() << " plane(s)\n"
          << "flows           " << sum.flows_completed() << " of " << sum.flows() << " completed, "
          << sum.flows_failed() << " failed, " << bytesTotal << " bytes\n";
    if (!fcts.empty())
    {
        human << "fct (us)        mean " << Fixed(sum.fct_mean_us(), 1) << "  p50 "
              << Fixed(sum.fct_p50_us(), 1) << "  p99 " << Fixed(sum.fct_p99_us(), 1) << "  max "
              << Fixed(sum.fct_max_us(), 1) << "\n"
              << "slowdown        mean " << Fixed(sum.slowdown_mean(), 3) << "  p50 "
              << Fixed(sum.slowdown_p50(), 3) << "  p99 " << Fixed(sum.slowdown_p99(), 3)
              << "  max " << Fixed(sum.slowdown_max(), 3) << "\n";
    }
    if (!collectives.empty())
    {
        human << "collectives     " << collectivesDone << " of " << collectives.size()
              << " completed, bus bandwidth " << Fixed(sum.busbw_gbps_mean(), 2) << " Gb/s\n";
    }
    human << "goodput         " << Fixed(sum.goodput_mean_gbps(), 2)
          << " Gb/s (all bytes placed / busy time)\n"
          << "retransmissions " << retransmissions << " packets, " << timeouts << " timeouts\n"
          << "switches        " << switchDrops << " drops, " << channelDrops << " link losses, "
          << ecnMarked << " ECN marks, " << pfcPauses << " PFC pauses\n"
          << "simulated       " << Fixed(sum.sim_time_us(), 1) << " us, " << events << " events, "
          << Fixed(sum.wall_time_s(), 2) << " s wall\n"
          << "heap            " << heapPages << "\n"
          << "all completed   " << (sum.all_completed() ? "yes" : "NO") << "\n"
          << "run folder      " << dir.string() << "\n";
    OpenOutput(dir, "summary.txt") << human.str();

    {
        std::ofstream out = OpenOutput(dir, "results.pb");
        auto write = [&out](const pb::ResultRecord& r) {
            gp::util::SerializeDelimitedToOstream(r, &out);
        };
        pb::ResultRecord r;
        *r.mutable_scenario() = sc;
        write(r);
        for (const pb::FlowRecord& f : flows)
        {
            *r.mutable_flow() = f;
            write(r);
        }
        for (const pb::CollectiveRecord& c : collectives)
        {
            *r.mutable_collective() = c;
            write(r);
        }
        for (const pb::GoodputSample& g : goodputRows)
        {
            *r.mutable_goodput() = g;
            write(r);
        }
        if (flowGoodput)
        {
            for (const pb::FlowGoodputSample& g : flowGoodputRows)
            {
                *r.mutable_flow_goodput() = g;
                write(r);
            }
        }
        for (const pb::PathCounters& p : paths)
        {
            *r.mutable_path() = p;
            write(r);
        }
        for (const pb::SwitchCounters& s : switches)
        {
            *r.mutable_switch_counters() = s;
            write(r);
        }
        for (const pb::HostPortCounters& h : hostPorts)
        {
            *r.mutable_host_port() = h;
            write(r);
        }
        *r.mutable_summary() = sum;
        write(r);
        if (!out)
        {
            std::cerr << "metaroce-run: cannot write results.pb" << std::endl;
            return EXIT_OUTPUT;
        }
    }
    if (!quiet)
    {
        std::cout << human.str();
    }
    Simulator::Destroy();
    MetaRoceDisableDistributed();
    return 0;
}
} // namespace

int
main(int argc, char* argv[])
{
    try
    {
        return RunScenario(argc, argv);
    }
    catch (const ScenarioError& e)
    {
        BadInput(e.what());
    }
}
