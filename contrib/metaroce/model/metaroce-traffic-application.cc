/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#include "metaroce-traffic-application.h"

#include "metaroce-partition.h"

#include "ns3/abort.h"
#include "ns3/log.h"
#include "ns3/node.h"
#include "ns3/simulator.h"

#include <algorithm>
#include <vector>

namespace ns3
{

NS_LOG_COMPONENT_DEFINE("MetaRoceTrafficApplication");

NS_OBJECT_ENSURE_REGISTERED(MetaRoceTrafficHost);
NS_OBJECT_ENSURE_REGISTERED(MetaRoceTrafficApplication);

namespace
{

/// Size of the virtual region each NIC exposes to the traffic applications.
constexpr uint64_t VIRTUAL_REGION_BYTES = uint64_t(1) << 46;

/// The applications that stop the simulation when all of them have finished.
struct StopWhenDone
{
    /// In the order they asked (the same on every rank, for the distributed check).
    std::vector<MetaRoceTrafficApplication*> apps;
    uint32_t unfinished{0}; //!< how many of them have not finished (as this rank saw it)
    bool checking{false};   //!< distributed runs: the periodic check is scheduled
};

/// \return the one registry (a simulation has one set of applications, like its nodes).
StopWhenDone&
Waiting()
{
    static StopWhenDone registry;
    return registry;
}

/// Distributed runs: the period of the global check.
const Time GLOBAL_CHECK_INTERVAL = MicroSeconds(10);

} // namespace

// ---- MetaRoceTrafficHost

TypeId
MetaRoceTrafficHost::GetTypeId()
{
    static TypeId tid = TypeId("ns3::MetaRoceTrafficHost")
                            .SetParent<Object>()
                            .SetGroupName("MetaRoce")
                            .AddConstructor<MetaRoceTrafficHost>();
    return tid;
}

MetaRoceTrafficHost::MetaRoceTrafficHost()
{
}

MetaRoceTrafficHost::~MetaRoceTrafficHost()
{
}

Ptr<MetaRoceTrafficHost>
MetaRoceTrafficHost::Get(Ptr<MetaRoceNic> nic)
{
    NS_ABORT_MSG_IF(!nic, "MetaRoceTrafficHost::Get: no NIC");
    Ptr<MetaRoceTrafficHost> host = nic->GetObject<MetaRoceTrafficHost>();
    if (host)
    {
        NS_ABORT_MSG_IF(host->m_nic != PeekPointer(nic),
                        "a node with two MetaRoCE NICs: the traffic applications support one");
        return host;
    }
    host = CreateObject<MetaRoceTrafficHost>();
    host->m_nic = PeekPointer(nic);
    nic->TraceConnectWithoutContext("Completion",
                                    MakeCallback(&MetaRoceTrafficHost::OnCompletion, host));
    nic->AggregateObject(host);
    return host;
}

void
MetaRoceTrafficHost::DoDispose()
{
    m_sinks.clear();
    m_nic = nullptr;
    Object::DoDispose();
}

const metaroce::MemoryRegion&
MetaRoceTrafficHost::Region()
{
    if (m_region.lkey == 0)
    {
        m_region =
            m_nic->RegisterMemory(nullptr,
                                  VIRTUAL_REGION_BYTES,
                                  metaroce::ACCESS_LOCAL_WRITE | metaroce::ACCESS_REMOTE_WRITE |
                                      metaroce::ACCESS_REMOTE_READ);
        NS_ABORT_MSG_IF(m_region.lkey == 0, "RegisterMemory failed on a traffic host");
    }
    return m_region;
}

void
MetaRoceTrafficHost::Listen(uint32_t qpn, CompletionSink sink)
{
    m_sinks[qpn] = sink;
}

void
MetaRoceTrafficHost::OnCompletion(const metaroce::Completion& completion)
{
    auto it = m_sinks.find(completion.connectionId);
    if (it != m_sinks.end())
    {
        it->second(completion);
    }
}

// ---- MetaRoceTrafficApplication

TypeId
MetaRoceTrafficApplication::GetTypeId()
{
    static TypeId tid =
        TypeId("ns3::MetaRoceTrafficApplication").SetParent<Application>().SetGroupName("MetaRoce");
    return tid;
}

MetaRoceTrafficApplication::MetaRoceTrafficApplication()
{
}

MetaRoceTrafficApplication::~MetaRoceTrafficApplication()
{
}

void
MetaRoceTrafficApplication::DoDispose()
{
    SetStopWhenDone(false);
    Application::DoDispose();
}

bool
MetaRoceTrafficApplication::IsFinished() const
{
    return m_finished;
}

/// Distributed runs: every rank checks, at the same simulated times, whether every waiting
/// application finished on some rank (a flow) or on all of them (a collective).
static void
GlobalCheck()
{
    StopWhenDone& w = Waiting();
    if (w.apps.empty())
    {
        w.checking = false;
        return;
    }
    uint64_t summed = 0;
    uint64_t finished = 0;
    bool others = true;
    for (MetaRoceTrafficApplication* app : w.apps)
    {
        bool done = false;
        if (app->CheckFinishedOnAllRanks(done))
        {
            others = others && done;
        }
        else
        {
            ++summed;
            finished += app->IsFinished();
        }
    }
    if (MetaRoceSumOverRanks(finished) >= summed && others)
    {
        w.checking = false;
        Simulator::Stop();
        return;
    }
    Simulator::Schedule(GLOBAL_CHECK_INTERVAL, &GlobalCheck);
}

void
MetaRoceTrafficApplication::SetStopWhenDone(bool stop)
{
    StopWhenDone& w = Waiting();
    if (stop == m_stopWhenDone)
    {
        return;
    }
    m_stopWhenDone = stop;
    if (stop)
    {
        w.apps.push_back(this);
        w.unfinished += !m_finished;
        if (!w.checking && MetaRoceGetRankCount() > 1)
        {
            // A rank sees only the completions of the hosts it owns: all ranks compare notes
            // periodically (a collective call, at the same simulated times on every rank).
            w.checking = true;
            Simulator::Schedule(GLOBAL_CHECK_INTERVAL, &GlobalCheck);
        }
        return;
    }
    w.apps.erase(std::find(w.apps.begin(), w.apps.end(), this));
    w.unfinished -= !m_finished;
    if (w.apps.empty())
    {
        w.checking = false; // Simulator::Destroy disposes the applications and the check
    }
}

void
MetaRoceTrafficApplication::NotifyFinished()
{
    if (m_finished)
    {
        return;
    }
    m_finished = true;
    if (!m_stopWhenDone)
    {
        return;
    }
    StopWhenDone& w = Waiting();
    --w.unfinished;
    if (w.unfinished == 0 && MetaRoceGetRankCount() == 1)
    {
        Simulator::Stop();
    }
}

bool
MetaRoceTrafficApplication::CheckFinishedOnAllRanks(bool& /*finished*/) const
{
    return false;
}

} // namespace ns3
