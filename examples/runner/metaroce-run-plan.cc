/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#include "metaroce-run-plan.h"

#include "ns3/metaroce-switch.h"
#include "ns3/metaroce-transport-settings.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <sstream>

namespace metaroce_run
{

using namespace ns3;
namespace pb = metaroce::results;

namespace
{

/**
 * Report bad input.
 * \param message what is wrong, with its location
 */
[[noreturn]] void
BadInput(const std::string& message)
{
    throw ScenarioError(message);
}

/**
 * Merge the scenario file into \p plan (nothing if \p path is empty): a directory, a file
 * that cannot be opened or read, and a syntax error are errors.
 * \param path the file
 * \param plan the plan being loaded
 */
void
MergeFile(const std::string& path, ScenarioPlan& plan)
{
    ScenarioLoader& loader = plan.loader;
    if (!path.empty())
    {
        // A directory opens as a stream that reads nothing, which would run the defaults.
        std::error_code ec;
        if (std::filesystem::is_directory(path, ec))
        {
            BadInput(path + ": is a directory; --scenario takes a scenario file (for example "
                            "examples/scenarios/incast-leaf-spine.textproto)");
        }
        std::ifstream in(path, std::ios::binary);
        if (!in)
        {
            BadInput(path + ": cannot open the scenario file");
        }
        std::ostringstream text;
        text << in.rdbuf();
        if (in.bad())
        {
            BadInput(path + ": cannot read the scenario file");
        }
        loader.Merge(text.str(), path, true, true);
        plan.directory = std::filesystem::absolute(path).parent_path();
        if (loader.Get().name().empty())
        {
            loader.Get().set_name(std::filesystem::path(path).stem().string());
        }
    }
    if (loader.Get().name().empty())
    {
        loader.Get().set_name("default");
    }
}

/**
 * Apply --loss: a Bernoulli probability, ge:p,r,h_g,h_b (Gilbert-Elliott) or none.
 * \param loss the option's value
 * \param loader the scenario
 */
void
MergeLoss(const std::string& loss, ScenarioLoader& loader)
{
    pb::Loss& l = *loader.Get().mutable_loss();
    const std::string label = "--loss=" + loss;
    l.clear_gilbert_elliott();
    l.set_bernoulli(0);
    if (loss.rfind("ge:", 0) == 0)
    {
        std::string csv = loss.substr(3);
        std::replace(csv.begin(), csv.end(), ',', ' ');
        std::istringstream in(csv);
        double p;
        double r;
        double hg;
        double hb;
        std::string rest;
        if (!(in >> p >> r >> hg >> hb) || (in >> rest))
        {
            BadInput(label + ": expected ge:p,r,h_g,h_b");
        }
        loader.Merge("loss { gilbert_elliott { p: " + Fixed(p, 12) + " r: " + Fixed(r, 12) +
                         " h_g: " + Fixed(hg, 12) + " h_b: " + Fixed(hb, 12) + " } }",
                     label,
                     false,
                     false);
    }
    else if (loss != "none" && loss != "0")
    {
        loader.Merge("loss { bernoulli: " + loss + " }", label, false, false);
    }
}

/**
 * Complete and check the scenario's transport fields and apply them to \p cfg: the shared
 * mapping (ApplyTransportSettings()) checks the fields the scenario gives and applies them;
 * a field left out keeps the NIC's value (\p cfg on input) and is filled in from it. Then a
 * field given must agree with a NIC attribute given for the same setting.
 * \param loader the scenario and its sources
 * \param nic where the NIC settings came from
 * \param cfg[in,out] the connection configuration (the NIC's on input)
 * \return true for transport rocev2
 */
bool
CompleteTransport(ScenarioLoader& loader, const NicSettings& nic, metaroce::ConnectionConfig& cfg)
{
    using metaroce::TransportField;
    pb::Transport& tr = *loader.Get().mutable_transport();
    const metaroce::ConnectionConfig nicCfg = cfg;
    // Empty and 0 mean "left out".
    metaroce::TransportSettings given;
    auto give = [](auto& field, const auto& value, bool present) {
        if (present)
        {
            field = value;
        }
    };
    give(given.transport, tr.name(), !tr.name().empty());
    give(given.numPaths, tr.paths(), tr.paths() != 0);
    give(given.mtu, tr.mtu(), tr.mtu() != 0);
    give(given.congestionControl, tr.cc(), !tr.cc().empty());
    give(given.rocev2Recovery, tr.rocev2_recovery(), !tr.rocev2_recovery().empty());
    give(given.pathScheduler, tr.path_scheduler(), !tr.path_scheduler().empty());
    give(given.initialPathWindow, tr.initial_path_window(), tr.initial_path_window() != 0);
    give(given.maxPathWindow, tr.max_path_window(), tr.max_path_window() != 0);
    if (const auto error = metaroce::ApplyTransportSettings(given, cfg))
    {
        static const std::map<TransportField, std::string> paths{
            {TransportField::TRANSPORT, "transport.name"},
            {TransportField::NUM_PATHS, "transport.paths"},
            {TransportField::MTU, "transport.mtu"},
            {TransportField::CONGESTION_CONTROL, "transport.cc"},
            {TransportField::ROCE_RECOVERY, "transport.rocev2_recovery"},
            {TransportField::PATH_SCHEDULER, "transport.path_scheduler"},
            {TransportField::INITIAL_PATH_WINDOW, "transport.initial_path_window"},
            {TransportField::MAX_PATH_WINDOW, "transport.max_path_window"}};
        loader.Invalid(paths.at(error->field), error->problem);
    }
    // The completed scenario says what runs (a RoCEv2 QP has one path).
    const metaroce::TransportSettings used = metaroce::TransportSettingsOf(cfg);
    tr.set_name(*used.transport);
    tr.set_paths(*used.numPaths);
    tr.set_mtu(*used.mtu);
    tr.set_cc(*used.congestionControl);
    tr.set_rocev2_recovery(*used.rocev2Recovery);
    tr.set_path_scheduler(*used.pathScheduler);
    tr.set_initial_path_window(*used.initialPathWindow);
    tr.set_max_path_window(*used.maxPathWindow);
    const bool roce = tr.name() == "rocev2";

    // The NIC's own settings are those of the attributes (program defaults and
    // transport.nic_attributes); a field given must agree with one given for the same setting.
    nic.Agree(loader, "transport.name", "Transport", tr.name(), tr.name() == nicCfg.transport);
    if (!roce)
    {
        nic.Agree(loader,
                  "transport.paths",
                  "NumPaths",
                  std::to_string(tr.paths()),
                  tr.paths() == nicCfg.numPaths);
    }
    nic.Agree(loader, "transport.mtu", "Mtu", std::to_string(tr.mtu()), tr.mtu() == nicCfg.mtu);
    if (roce)
    {
        nic.Agree(loader,
                  "transport.cc",
                  "Dcqcn",
                  tr.cc(),
                  (tr.cc() == "dcqcn") == nicCfg.rocev2.dcqcn);
        nic.Agree(loader,
                  "transport.rocev2_recovery",
                  "RoceRecovery",
                  tr.rocev2_recovery(),
                  tr.rocev2_recovery() == nicCfg.rocev2.recovery);
        return roce;
    }
    nic.Agree(loader,
              "transport.cc",
              "CongestionControl",
              tr.cc(),
              tr.cc() == nicCfg.congestionControl);
    nic.Agree(loader,
              "transport.path_scheduler",
              "PathScheduler",
              tr.path_scheduler(),
              tr.path_scheduler() == nicCfg.pathScheduler);
    nic.Agree(loader,
              "transport.initial_path_window",
              "InitialPathWindow",
              metaroce::FormatShortest(tr.initial_path_window()),
              tr.initial_path_window() == nicCfg.initialPathWindow);
    nic.Agree(loader,
              "transport.max_path_window",
              "MaxPathWindow",
              metaroce::FormatShortest(tr.max_path_window()),
              tr.max_path_window() == nicCfg.maxPathWindow);
    return roce;
}

} // namespace

ScenarioPlan
LoadScenario(const ScenarioOptions& options)
{
    ScenarioPlan plan;
    plan.directory = std::filesystem::current_path();
    MergeFile(options.scenarioPath, plan);
    ScenarioLoader& loader = plan.loader;
    if (!options.seed.empty())
    {
        loader.Merge("seed: " + options.seed, "--seed=" + options.seed, false, false);
    }
    if (!options.transport.empty())
    {
        loader.Merge(SetToTextFormat("transport.name=" + options.transport),
                     "--transport=" + options.transport,
                     false,
                     false);
    }
    if (!options.pfc.empty())
    {
        loader.Merge("topology { pfc: " + options.pfc + " }", "--pfc=" + options.pfc, false, false);
    }
    if (!options.stopMs.empty())
    {
        loader.Merge("stop_time_ms: " + options.stopMs,
                     "--stop-ms=" + options.stopMs,
                     false,
                     false);
    }
    if (!options.loss.empty())
    {
        MergeLoss(options.loss, loader);
    }
    for (const std::string& s : options.sets)
    {
        const std::string text = SetToTextFormat(s);
        loader.Merge(text, "--set '" + s + "'", false, text == s);
    }

    // The connection configuration the workload uses starts from the NIC's: the program's
    // ns3::MetaRoceNic defaults with transport.nic_attributes applied (e.g. RoceLocalAckTimeout,
    // RtoMin). Complete fills the transport fields left out from it and rejects a field that
    // disagrees with an attribute given for the same setting.
    Ptr<MetaRoceNic> defaults = CreateObject<MetaRoceNic>();
    const NicSettings nicSettings(loader, defaults);
    plan.connection = defaults->GetDefaultConnectionConfig();
    Complete(loader, nicSettings, plan.connection);
    const std::string warning =
        StopBeforeTimeoutWarning(loader.Get(), nicSettings, plan.connection);
    if (!warning.empty())
    {
        plan.warnings.push_back(warning);
    }
    return plan;
}

std::string
StopBeforeTimeoutWarning(const pb::Scenario& sc,
                         const NicSettings& nic,
                         const metaroce::ConnectionConfig& cfg)
{
    if (sc.transport().name() != "rocev2")
    {
        return "";
    }
    const bool irn = sc.transport().rocev2_recovery() == "irn";
    const std::string attribute = irn ? "RoceIrnRtoLow" : "RoceLocalAckTimeout";
    double timeoutMs;
    std::string timer;
    if (irn)
    {
        timeoutMs = cfg.rocev2.irnRtoLow / 1e9; // engine times are picoseconds
        timer = "the IRN retransmission timeout RoceIrnRtoLow";
    }
    else
    {
        const uint8_t n = cfg.rocev2.localAckTimeout;
        if (n == 0)
        {
            return ""; // no timer at all
        }
        timeoutMs = 4.096e-3 * std::ldexp(1.0, std::min<int>(n, 31));
        timer = "the RoCEv2 local ACK timeout (RoceLocalAckTimeout " + std::to_string(n) +
                ": 4.096 us * 2^" + std::to_string(n) + ")";
    }
    if (!(sc.stop_time_ms() < timeoutMs))
    {
        return "";
    }
    const std::string origin = nic.Origin(attribute);
    std::ostringstream os;
    os << "stop_time_ms " << sc.stop_time_ms() << " is shorter than " << timer << " = "
       << Fixed(timeoutMs, 3)
       << " ms: a lost packet that needs a timeout is never retransmitted before the run stops"
       << (origin.empty()
               ? " (built-in default; set " + attribute + " with transport.nic_attributes)"
               : " (" + origin + ")");
    return os.str();
}

uint32_t
HostCount(const pb::Topology& t)
{
    switch (t.kind())
    {
    case pb::Topology::FAT_TREE:
        return t.tiers() == 2 ? t.k() * t.k() / 2 : t.k() * t.k() * t.k() / 4;
    case pb::Topology::SINGLE_SWITCH:
        return t.hosts();
    default:
        return t.leaves() * t.hosts_per_leaf();
    }
}

void
Complete(ScenarioLoader& loader, const NicSettings& nic, metaroce::ConnectionConfig& cfg)
{
    pb::Scenario& s = loader.Get();
    if (s.seed() == 0)
    {
        s.set_seed(1);
    }
    if (s.stop_time_ms() == 0)
    {
        s.set_stop_time_ms(1000);
    }
    if (!(s.stop_time_ms() > 0))
    {
        loader.Invalid("stop_time_ms", "must be positive");
    }
    if (s.event_order().empty())
    {
        s.set_event_order("insertion");
    }
    if (s.event_order() != "insertion" && s.event_order() != "link")
    {
        loader.Invalid("event_order", "'" + s.event_order() + "': expected insertion or link");
    }

    // Transport first: the PFC default depends on it.
    const bool roce = CompleteTransport(loader, nic, cfg);

    // Topology.
    pb::Topology& t = *s.mutable_topology();
    if (t.kind() == pb::Topology::KIND_UNSPECIFIED)
    {
        t.set_kind(pb::Topology::LEAF_SPINE);
    }
    if (t.kind() == pb::Topology::MULTIPLANE && t.planes() == 0)
    {
        t.set_planes(2);
    }
    if (t.planes() == 0)
    {
        t.set_planes(1);
    }
    if (t.planes() > 16)
    {
        loader.Invalid("topology.planes", "at most 16");
    }
    switch (t.kind())
    {
    case pb::Topology::FAT_TREE:
        if (t.k() == 0)
        {
            t.set_k(4);
        }
        if (t.tiers() == 0)
        {
            t.set_tiers(3);
        }
        if (t.k() % 2 != 0 || t.k() > 64)
        {
            loader.Invalid("topology.k", "must be even and at most 64");
        }
        if (t.tiers() != 2 && t.tiers() != 3)
        {
            loader.Invalid("topology.tiers", "must be 2 or 3");
        }
        break;
    case pb::Topology::SINGLE_SWITCH:
        if (t.hosts() == 0)
        {
            t.set_hosts(17);
        }
        if (t.hosts() < 2 || t.hosts() > 254)
        {
            loader.Invalid("topology.hosts", "must be 2 to 254");
        }
        break;
    default:
        if (t.leaves() == 0)
        {
            t.set_leaves(2);
        }
        if (t.hosts_per_leaf() == 0)
        {
            t.set_hosts_per_leaf(8);
        }
        if (t.oversubscription() == 0)
        {
            t.set_oversubscription(1);
        }
        if (t.hosts_per_leaf() > 254)
        {
            loader.Invalid("topology.hosts_per_leaf", "at most 254");
        }
        if (t.leaves() > 4096)
        {
            loader.Invalid("topology.leaves", "at most 4096");
        }
        if (!(t.oversubscription() > 0))
        {
            loader.Invalid("topology.oversubscription", "must be positive");
        }
        break;
    }
    if (t.link_rate_gbps() == 0)
    {
        t.set_link_rate_gbps(100);
    }
    if (!(t.link_rate_gbps() > 0) || t.link_rate_gbps() > 1e4)
    {
        loader.Invalid("topology.link_rate_gbps", "must be in (0, 10000]");
    }
    if (t.fabric_rate_gbps() == 0)
    {
        t.set_fabric_rate_gbps(t.link_rate_gbps());
    }
    if (!(t.fabric_rate_gbps() > 0) || t.fabric_rate_gbps() > 1e4)
    {
        loader.Invalid("topology.fabric_rate_gbps", "must be in (0, 10000]");
    }
    if (t.link_delay_ns() == 0)
    {
        t.set_link_delay_ns(1000);
    }
    if (t.link_delay_ns() < 0)
    {
        loader.Invalid("topology.link_delay_ns", "must not be negative");
    }
    if (t.has_ecn())
    {
        pb::Ecn& e = *t.mutable_ecn();
        if (e.pmax() < 0 || e.pmax() > 1)
        {
            loader.Invalid("topology.ecn.pmax", "must be in [0, 1]");
        }
        if (e.kmin_bytes() && e.kmax_bytes() && e.kmin_bytes() > e.kmax_bytes())
        {
            loader.Invalid("topology.ecn.kmin_bytes", "must not exceed kmax_bytes");
        }
    }
    if (!t.has_pfc())
    {
        t.set_pfc(roce);
    }
    for (int i = 0; i < t.switch_attributes_size(); ++i)
    {
        const std::string why = CheckAttribute(MetaRoceSwitch::GetTypeId(), t.switch_attributes(i));
        if (!why.empty())
        {
            loader.Invalid("topology.switch_attributes[" + std::to_string(i) + "].name", why);
        }
    }
    const uint32_t hosts = HostCount(t);
    if (hosts < 2)
    {
        loader.Invalid("topology", "needs at least 2 hosts");
    }
    if (hosts > 65536)
    {
        loader.Invalid("topology", std::to_string(hosts) + " hosts: at most 65536");
    }

    // Workload.
    pb::Workload& w = *s.mutable_workload();
    if (w.kind() == pb::Workload::KIND_UNSPECIFIED)
    {
        w.set_kind(pb::Workload::INCAST);
    }
    if (w.flow_bytes() == 0)
    {
        w.set_flow_bytes(1 << 20);
    }
    if (w.start_us() == 0)
    {
        w.set_start_us(1);
    }
    if (w.start_us() < 0)
    {
        loader.Invalid("workload.start_us", "must not be negative");
    }
    const uint64_t maxMessage = cfg.maxMessageSize;
    switch (w.kind())
    {
    case pb::Workload::INCAST:
        if (w.receiver() >= hosts)
        {
            loader.Invalid("workload.receiver",
                           "host " + std::to_string(w.receiver()) + " but the topology has " +
                               std::to_string(hosts) + " hosts");
        }
        if (w.senders() == 0)
        {
            w.set_senders(hosts - 1);
        }
        if (w.senders() > hosts - 1)
        {
            loader.Invalid("workload.senders",
                           "at most " + std::to_string(hosts - 1) + " (hosts minus the receiver)");
        }
        break;
    case pb::Workload::ALL_TO_ALL:
    case pb::Workload::RING_ALLREDUCE:
        if (w.hosts() == 0)
        {
            w.set_hosts(hosts);
        }
        if (w.hosts() < 2 || w.hosts() > hosts)
        {
            loader.Invalid("workload.hosts", "must be 2 to " + std::to_string(hosts));
        }
        if (w.kind() == pb::Workload::RING_ALLREDUCE)
        {
            if (w.channels() == 0)
            {
                w.set_channels(4);
            }
            if (w.channels() > 64)
            {
                loader.Invalid("workload.channels", "at most 64");
            }
            const uint64_t pieces = uint64_t(w.hosts()) * w.channels();
            if ((w.flow_bytes() + pieces - 1) / pieces > maxMessage)
            {
                loader.Invalid("workload.flow_bytes", "ring chunk exceeds the largest message");
            }
        }
        break;
    case pb::Workload::HTSIM_FILE:
        if (w.file().empty())
        {
            loader.Invalid("workload.kind", "HTSIM_FILE needs workload.file");
        }
        break;
    default:
        break;
    }
    if ((w.flow_bytes() + maxMessage - 1) / maxMessage > cfg.maxOutstandingWrs)
    {
        loader.Invalid("workload.flow_bytes", "needs more messages than MaxOutstandingWrs");
    }

    // Loss.
    pb::Loss& l = *s.mutable_loss();
    if (l.bernoulli() < 0 || l.bernoulli() >= 1)
    {
        loader.Invalid("loss.bernoulli", "must be in [0, 1)");
    }
    if (l.has_gilbert_elliott())
    {
        const pb::GilbertElliott& g = l.gilbert_elliott();
        for (const auto& [name, v] : std::vector<std::pair<std::string, double>>{{"p", g.p()},
                                                                                 {"r", g.r()},
                                                                                 {"h_g", g.h_g()},
                                                                                 {"h_b", g.h_b()}})
        {
            if (v < 0 || v > 1)
            {
                loader.Invalid("loss.gilbert_elliott." + name, "must be in [0, 1]");
            }
        }
        if (l.bernoulli() > 0 && g.p() > 0)
        {
            loader.Invalid("loss.gilbert_elliott", "use bernoulli or gilbert_elliott, not both");
        }
    }
    for (int i = 0; i < l.fail_plane_size(); ++i)
    {
        const std::string at = "loss.fail_plane[" + std::to_string(i) + "]";
        if (l.fail_plane(i).plane() >= t.planes())
        {
            loader.Invalid(at + ".plane",
                           "the topology has " + std::to_string(t.planes()) + " plane(s)");
        }
        if (l.fail_plane(i).stop_us() != 0 &&
            l.fail_plane(i).stop_us() <= l.fail_plane(i).start_us())
        {
            loader.Invalid(at + ".stop_us", "must be after start_us (0 = never)");
        }
    }
    for (int kind = 0; kind < 2; ++kind)
    {
        const auto& events = kind == 0 ? l.fail_link() : l.degrade_link();
        const std::string field = kind == 0 ? "loss.fail_link" : "loss.degrade_link";
        for (int i = 0; i < events.size(); ++i)
        {
            const std::string at = field + "[" + std::to_string(i) + "]";
            const pb::LinkEvent& e = events.Get(i);
            if (e.start_us() < 0 || (e.stop_us() != 0 && e.stop_us() <= e.start_us()))
            {
                loader.Invalid(at + ".stop_us", "start_us >= 0 and stop_us after it (0 = never)");
            }
            if (kind == 1 && !(e.fraction() > 0 && e.fraction() <= 1))
            {
                loader.Invalid(at + ".fraction", "must be in (0, 1]");
            }
        }
    }

    // Output.
    pb::Output& o = *s.mutable_output();
    if (o.goodput_interval_us() == 0)
    {
        o.set_goodput_interval_us(10);
    }
    if (!(o.goodput_interval_us() >= 0.01))
    {
        loader.Invalid("output.goodput_interval_us", "must be at least 0.01");
    }
    if (!o.has_per_host_goodput())
    {
        o.set_per_host_goodput(true);
    }
    if (!o.has_switch_ports())
    {
        o.set_switch_ports(true);
    }
    if (!o.has_flow_goodput())
    {
        o.set_flow_goodput(false);
    }
    if (!o.has_queue_peaks())
    {
        o.set_queue_peaks(false);
    }

    std::string why;
    if (!cfg.Validate(why))
    {
        loader.Invalid("transport", "the engine refuses the connection settings: " + why);
    }
}

} // namespace metaroce_run
