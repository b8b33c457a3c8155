/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#include "metaroce-run-topology.h"

#include "ns3/boolean.h"
#include "ns3/double.h"
#include "ns3/enum.h"
#include "ns3/metaroce-channel.h"
#include "ns3/metaroce-scheduler.h"
#include "ns3/metaroce-stack-helper.h"
#include "ns3/metaroce-switch.h"
#include "ns3/metaroce-topology-helper.h"
#include "ns3/object-factory.h"
#include "ns3/rng-seed-manager.h"
#include "ns3/simulator.h"
#include "ns3/string.h"
#include "ns3/uinteger.h"

#include <algorithm>
#include <cmath>
#include <string>

namespace metaroce_run
{

using namespace ns3;
namespace pb = metaroce::results;

void
ConfigureSimulator(const pb::Scenario& sc)
{
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
}

Ptr<MetaRoceFabric>
BuildFabric(const pb::Topology& t, uint32_t rankCount)
{
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
    topo.SetRankCount(rankCount);
    switch (t.kind())
    {
    case pb::Topology::FAT_TREE:
        return topo.BuildFatTree(t.k(), t.tiers());
    case pb::Topology::SINGLE_SWITCH:
        return topo.BuildSingleSwitch(t.hosts());
    default:
        return topo.BuildLeafSpine(t.leaves(), t.hosts_per_leaf(), t.oversubscription());
    }
}

std::vector<Ptr<MetaRoceNic>>
InstallNics(const pb::Transport& tr, Ptr<MetaRoceFabric> fabric, int64_t& streams)
{
    MetaRoceStackHelper stack;
    stack.SetNicAttribute("Transport", StringValue(tr.name()));
    stack.SetNicAttribute("RoceRecovery", StringValue(tr.rocev2_recovery()));
    for (const pb::Attribute& a : tr.nic_attributes())
    {
        stack.SetNicAttribute(a.name(), StringValue(a.value()));
    }
    std::vector<Ptr<MetaRoceNic>> nics = stack.Install(fabric);
    streams = MetaRoceStackHelper::AssignStreams(nics, 0);
    return nics;
}

bool
LossApplies(pb::Loss::Scope scope, bool hostLink)
{
    switch (scope)
    {
    case pb::Loss::FABRIC_LINKS:
        return !hostLink;
    case pb::Loss::HOST_LINKS:
    case pb::Loss::HOST_DOWNLINKS:
        return hostLink;
    default:
        return true;
    }
}

namespace
{

/**
 * \param stopUs an event's stop_us
 * \return its end (0 = never)
 */
Time
StopOf(double stopUs)
{
    return stopUs == 0 ? Time::Max() : FromUs(stopUs);
}

/**
 * Put the scenario's random loss (Bernoulli or Gilbert-Elliott) on the links of its scope.
 * \param loss the loss model
 * \param fabric the fabric
 */
void
ApplyRandomLoss(const pb::Loss& loss, Ptr<MetaRoceFabric> fabric)
{
    const bool ge = loss.has_gilbert_elliott() && loss.gilbert_elliott().p() > 0;
    if (loss.bernoulli() <= 0 && !ge)
    {
        return;
    }
    for (const MetaRoceLink& link : fabric->GetLinks())
    {
        const bool hostLink =
            link.portA == MetaRoceSwitch::NO_PORT || link.portB == MetaRoceSwitch::NO_PORT;
        if (!LossApplies(loss.scope(), hostLink))
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

} // namespace

void
ApplyLoss(const ScenarioLoader& loader,
          Ptr<MetaRoceFabric> fabric,
          const NodeNames& names,
          int64_t streams)
{
    const pb::Loss& loss = loader.Get().loss();
    // Random loss, then the fabric's streams (the error models exist now).
    ApplyRandomLoss(loss, fabric);
    fabric->AssignStreams(streams + 1000);

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
                                   std::to_string(fabric->GetHostCount() - 1) + ", switches s0..s" +
                                   std::to_string(fabric->GetSwitchCount() - 1) + ")");
            }
            Ptr<MetaRoceChannel> ch = fabric->GetChannel(a, b);
            if (!ch)
            {
                loader.Invalid(at + ".a", "no link between " + e.a() + " and " + e.b());
            }
            if (kind == 0)
            {
                fabric->FailLink(ch, FromUs(e.start_us()), StopOf(e.stop_us()));
            }
            else
            {
                fabric->DegradeLink(ch, e.fraction(), FromUs(e.start_us()), StopOf(e.stop_us()));
            }
        }
    }
    for (const pb::PlaneEvent& e : loss.fail_plane())
    {
        fabric->FailPlane(e.plane(), FromUs(e.start_us()), StopOf(e.stop_us()));
    }
}

} // namespace metaroce_run
