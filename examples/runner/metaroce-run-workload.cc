/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#include "metaroce-run-workload.h"

#include "metaroce-run-scenario.h"

#include <filesystem>
#include <fstream>

namespace metaroce_run
{

using namespace ns3;
namespace pb = metaroce::results;

std::vector<uint32_t>
IncastSenders(uint32_t hosts, uint32_t receiver, uint32_t count)
{
    std::vector<uint32_t> senders;
    for (uint32_t h = 0; h < hosts && senders.size() < count; ++h)
    {
        if (h != receiver)
        {
            senders.push_back(h);
        }
    }
    return senders;
}

std::vector<uint32_t>
WorkloadHosts(const pb::Workload& w, uint32_t hosts)
{
    std::vector<uint32_t> first;
    for (uint32_t h = 0; h < (w.hosts() ? w.hosts() : hosts); ++h)
    {
        first.push_back(h);
    }
    return first;
}

void
CheckHtsimFlows(const MetaRoceHtsimMatrix& matrix,
                const metaroce::ConnectionConfig& cfg,
                const std::string& file)
{
    for (const MetaRoceHtsimFlow& f : matrix.flows)
    {
        if ((f.bytes + cfg.maxMessageSize - 1) / cfg.maxMessageSize > cfg.maxOutstandingWrs)
        {
            throw ScenarioError(file + ": line " + std::to_string(f.line) +
                                ": flow needs more messages than MaxOutstandingWrs");
        }
    }
}

namespace
{

/**
 * Add the flows of the scenario's htsim connection matrix.
 * \param plan the validated plan
 * \param load the workload
 */
void
AddHtsimFile(const ScenarioPlan& plan, Ptr<MetaRoceWorkloadHelper> load)
{
    std::filesystem::path file(plan.loader.Get().workload().file());
    if (file.is_relative())
    {
        file = plan.directory / file;
    }
    std::ifstream in(file);
    if (!in)
    {
        plan.loader.Invalid("workload.file", "cannot open " + file.string());
    }
    MetaRoceHtsimMatrix matrix;
    std::string error;
    if (!MetaRoceWorkloadHelper::ParseHtsimConnectionMatrix(in, matrix, error))
    {
        throw ScenarioError(file.string() + ": " + error);
    }
    CheckHtsimFlows(matrix, plan.connection, file.string());
    if (!load->AddHtsimConnectionMatrix(matrix, error))
    {
        throw ScenarioError(file.string() + ": " + error);
    }
}

} // namespace

Ptr<MetaRoceWorkloadHelper>
BuildWorkload(const ScenarioPlan& plan,
              Ptr<MetaRoceFabric> fabric,
              const std::vector<Ptr<MetaRoceNic>>& nics)
{
    const pb::Scenario& sc = plan.loader.Get();
    const uint32_t hosts = fabric->GetHostCount();
    Ptr<MetaRoceWorkloadHelper> load = CreateObject<MetaRoceWorkloadHelper>();
    load->Setup(fabric, nics);
    // Distributed runs: the helper checks every 10 us (simulated) whether all ranks are done.
    load->SetStopWhenDone(true);
    load->SetConnectionConfig(plan.connection);
    const pb::Workload& w = sc.workload();
    const Time start = FromUs(w.start_us());
    if (w.operation() == pb::Workload::READ)
    {
        if (w.kind() == pb::Workload::RING_ALLREDUCE)
        {
            plan.loader.Invalid("workload.operation", "READ applies to flows, not to rings");
        }
        load->SetFlowOperation(MetaRoceFlowApplication::READ);
    }
    switch (w.kind())
    {
    case pb::Workload::INCAST:
        load->AddIncast(IncastSenders(hosts, w.receiver(), w.senders()),
                        w.receiver(),
                        w.flow_bytes(),
                        start);
        break;
    case pb::Workload::PERMUTATION:
        load->AddPermutation(w.flow_bytes(), start, sc.seed());
        break;
    case pb::Workload::ALL_TO_ALL:
        load->AddAllToAll(WorkloadHosts(w, hosts), w.flow_bytes(), start);
        break;
    case pb::Workload::RING_ALLREDUCE:
        load->AddRingAllReduce(WorkloadHosts(w, hosts), w.flow_bytes(), w.channels(), start);
        break;
    case pb::Workload::HTSIM_FILE:
        AddHtsimFile(plan, load);
        break;
    default:
        plan.loader.Invalid("workload.kind", "unknown kind");
    }
    return load;
}

std::vector<uint32_t>
ReceivingHosts(Ptr<MetaRoceWorkloadHelper> load, uint32_t hosts)
{
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
    std::vector<uint32_t> receiving;
    for (uint32_t h = 0; h < hosts; ++h)
    {
        if (receives[h])
        {
            receiving.push_back(h);
        }
    }
    return receiving;
}

} // namespace metaroce_run
