/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#ifndef METAROCE_RUN_TOPOLOGY_H
#define METAROCE_RUN_TOPOLOGY_H

#include "metaroce-results.pb.h"
#include "metaroce-run-outputs.h"
#include "metaroce-run-scenario.h"

#include "ns3/metaroce-fabric.h"
#include "ns3/metaroce-nic.h"

#include <cstdint>
#include <vector>

/**
 * \file
 * The scenario runner's topology build: the simulator's scheduler and seed, the fabric, the
 * NICs, and the loss model (random loss, link and plane events) of a validated scenario.
 */

namespace metaroce_run
{

/**
 * Set the simulator's scheduler (ns3::MetaRoceScheduler with the scenario's event_order) and
 * the random seed. Call before anything is built.
 * \param sc the completed scenario
 */
void ConfigureSimulator(const metaroce::results::Scenario& sc);

/**
 * Build the fabric of a topology, partitioned over \p rankCount ranks.
 * \param t the completed topology
 * \param rankCount MPI ranks (1 when not distributed)
 * \return the fabric
 */
ns3::Ptr<ns3::MetaRoceFabric> BuildFabric(const metaroce::results::Topology& t, uint32_t rankCount);

/**
 * Install a NIC on every host with the transport's settings and assign their random streams.
 * \param tr the completed transport
 * \param fabric the fabric
 * \param streams[out] the streams the NICs used (the loss models take the next ones)
 * \return the NICs by host
 */
std::vector<ns3::Ptr<ns3::MetaRoceNic>> InstallNics(const metaroce::results::Transport& tr,
                                                    ns3::Ptr<ns3::MetaRoceFabric> fabric,
                                                    int64_t& streams);

/**
 * \param scope the loss's scope
 * \param hostLink whether a link has a host at one end
 * \return whether random loss of that scope is put on that link
 */
bool LossApplies(metaroce::results::Loss::Scope scope, bool hostLink);

/**
 * Put the scenario's random loss on the links of its scope, assign the fabric's random streams
 * (after those of the NICs), then schedule its link and plane events. A link event naming a node
 * or link that does not exist throws ScenarioError with the field's location.
 * \param loader the scenario and its sources
 * \param fabric the fabric
 * \param names the fabric's node names
 * \param streams the streams the NICs used (InstallNics)
 */
void ApplyLoss(const ScenarioLoader& loader,
               ns3::Ptr<ns3::MetaRoceFabric> fabric,
               const NodeNames& names,
               int64_t streams);

} // namespace metaroce_run

#endif // METAROCE_RUN_TOPOLOGY_H
