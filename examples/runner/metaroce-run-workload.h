/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#ifndef METAROCE_RUN_WORKLOAD_H
#define METAROCE_RUN_WORKLOAD_H

#include "metaroce-results.pb.h"
#include "metaroce-run-plan.h"

#include "ns3/metaroce-fabric.h"
#include "ns3/metaroce-nic.h"
#include "ns3/metaroce-workload-helper.h"

#include <cstdint>
#include <string>
#include <vector>

/**
 * \file
 * The scenario runner's workload build: the flows and collectives of a validated scenario on a
 * built fabric, and the hosts whose goodput is tracked.
 */

namespace metaroce_run
{

/**
 * \param hosts the fabric's hosts
 * \param receiver the incast's receiver
 * \param count the incast's senders
 * \return the senders: the first \p count hosts other than \p receiver
 */
std::vector<uint32_t> IncastSenders(uint32_t hosts, uint32_t receiver, uint32_t count);

/**
 * \param w the completed workload
 * \param hosts the fabric's hosts
 * \return the hosts of an all-to-all or a ring: 0 .. w.hosts() - 1 (all hosts if 0)
 */
std::vector<uint32_t> WorkloadHosts(const metaroce::results::Workload& w, uint32_t hosts);

/**
 * Check that every flow of an htsim connection matrix fits the connection's outstanding work
 * requests; throws ScenarioError naming the file and line of the first that does not.
 * \param matrix the parsed matrix
 * \param cfg the connection configuration
 * \param file the matrix's file (for the message)
 */
void CheckHtsimFlows(const ns3::MetaRoceHtsimMatrix& matrix,
                     const metaroce::ConnectionConfig& cfg,
                     const std::string& file);

/**
 * Create the workload helper and add the scenario's flows or collectives. An htsim matrix that
 * cannot be opened, parsed or run throws ScenarioError naming the file (and line).
 * \param plan the validated plan (scenario, its directory, connection configuration)
 * \param fabric the fabric
 * \param nics the NICs by host
 * \return the workload (it stops the simulation when every flow is done)
 */
ns3::Ptr<ns3::MetaRoceWorkloadHelper> BuildWorkload(
    const ScenarioPlan& plan,
    ns3::Ptr<ns3::MetaRoceFabric> fabric,
    const std::vector<ns3::Ptr<ns3::MetaRoceNic>>& nics);

/**
 * \param load the workload
 * \param hosts the fabric's hosts
 * \return the hosts that receive any flow or take part in any collective, in host order
 */
std::vector<uint32_t> ReceivingHosts(ns3::Ptr<ns3::MetaRoceWorkloadHelper> load, uint32_t hosts);

} // namespace metaroce_run

#endif // METAROCE_RUN_WORKLOAD_H
