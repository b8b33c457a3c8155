/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#ifndef METAROCE_RUN_PLAN_H
#define METAROCE_RUN_PLAN_H

#include "metaroce-run-scenario.h"

#include <filesystem>
#include <string>
#include <vector>

/**
 * \file
 * The scenario runner's plan: the scenario file and the command-line overrides, loaded,
 * completed and validated, with its connection configuration. LoadScenario throws
 * ScenarioError on bad input and builds nothing.
 */

namespace metaroce_run
{

/// What metaroce-run's command line gives the scenario (each "" when not given).
struct ScenarioOptions
{
    std::string scenarioPath;      //!< --scenario: the file ("" = the built-in default)
    std::string seed;              //!< --seed
    std::string transport;         //!< --transport
    std::string pfc;               //!< --pfc
    std::string stopMs;            //!< --stop-ms
    std::string loss;              //!< --loss
    std::vector<std::string> sets; //!< every --set, in order
};

/// A completed, validated scenario, ready to build.
struct ScenarioPlan
{
    ScenarioLoader loader;                 //!< the scenario and where each field came from
    std::filesystem::path directory;       //!< relative workload files are read from here
    metaroce::ConnectionConfig connection; //!< the connection configuration of the workload
    std::vector<std::string> warnings;     //!< what the user should know before it runs
};

/**
 * Load the scenario file, apply the overrides (the options, then each --set), take the NIC
 * settings given outside the scenario into account, fill the defaults and check every value.
 * \param options the command line's scenario options
 * \return the plan (throws ScenarioError naming the file, line and column, or the option)
 */
ScenarioPlan LoadScenario(const ScenarioOptions& options);

/**
 * The warning for a run that stops before a RoCEv2 sender's retransmission timer can fire: a
 * packet lost at its tail is then never recovered, and the flow is reported as not completed
 * with nothing in the results pointing at the timer.
 * \param sc the completed scenario
 * \param nic where the NIC settings came from
 * \param cfg the connection configuration
 * \return the warning, or "" if the timer fits in the run
 */
std::string StopBeforeTimeoutWarning(const metaroce::results::Scenario& sc,
                                     const NicSettings& nic,
                                     const metaroce::ConnectionConfig& cfg);

/**
 * \param t a topology
 * \return the number of hosts it will have (for validation before building)
 */
uint32_t HostCount(const metaroce::results::Topology& t);

/**
 * Fill defaults and check every value; throws ScenarioError naming the field's location on a
 * bad one. A transport field left out takes the NIC's setting (\p cfg); a field given must
 * agree with a NIC attribute given for the same setting (docs/scenarios.md, "NIC settings").
 * \param loader the scenario and its sources
 * \param nic where the NIC settings came from
 * \param cfg[in,out] the connection configuration (the NIC's, with \p nic applied, on input)
 */
void Complete(ScenarioLoader& loader, const NicSettings& nic, metaroce::ConnectionConfig& cfg);

} // namespace metaroce_run

#endif // METAROCE_RUN_PLAN_H
