/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#ifndef METAROCE_RUN_WRITERS_H
#define METAROCE_RUN_WRITERS_H

#include "metaroce-results.pb.h"
#include "metaroce-run-results.h"

#include <filesystem>
#include <ostream>
#include <stdexcept>
#include <string>
#include <vector>

/**
 * \file
 * The scenario runner's output writers: each CSV file of a run folder (docs/outputs.md
 * documents every column) written to a stream, and the whole run folder.
 */

namespace metaroce_run
{

/// An output that could not be written (metaroce-run exits with 1).
class OutputError : public std::runtime_error
{
  public:
    /// \param message what could not be written
    explicit OutputError(const std::string& message)
        : std::runtime_error(message)
    {
    }
};

/**
 * Write flows.csv.
 * \param out the stream
 * \param flows the rows
 */
void WriteFlows(std::ostream& out, const std::vector<metaroce::results::FlowRecord>& flows);

/**
 * Write collectives.csv.
 * \param out the stream
 * \param collectives the rows
 */
void WriteCollectives(std::ostream& out,
                      const std::vector<metaroce::results::CollectiveRecord>& collectives);

/**
 * Write goodput.csv.
 * \param out the stream
 * \param samples the rows
 */
void WriteGoodput(std::ostream& out, const std::vector<metaroce::results::GoodputSample>& samples);

/**
 * Write flow_goodput.csv.
 * \param out the stream
 * \param samples the rows
 */
void WriteFlowGoodput(std::ostream& out,
                      const std::vector<metaroce::results::FlowGoodputSample>& samples);

/**
 * Write paths.csv.
 * \param out the stream
 * \param paths the rows
 */
void WritePaths(std::ostream& out, const std::vector<metaroce::results::PathCounters>& paths);

/**
 * Write switches.csv: per switch its total row, then (with \p ports) one row per port.
 * \param out the stream
 * \param switches the rows
 * \param ports whether to write the port rows (output.switch_ports)
 */
void WriteSwitches(std::ostream& out,
                   const std::vector<metaroce::results::SwitchCounters>& switches,
                   bool ports);

/**
 * Write hosts.csv.
 * \param out the stream
 * \param hostPorts the rows
 */
void WriteHosts(std::ostream& out,
                const std::vector<metaroce::results::HostPortCounters>& hostPorts);

/**
 * Write queues.csv: per switch its total row, then one row per port.
 * \param out the stream
 * \param switches the rows
 */
void WriteQueues(std::ostream& out, const std::vector<metaroce::results::SwitchCounters>& switches);

/**
 * Write ranks.csv (distributed runs).
 * \param out the stream
 * \param ranks one row per rank
 */
void WriteRanks(std::ostream& out, const std::vector<RankStats>& ranks);

/**
 * Write results.pb: length-delimited ResultRecords, the scenario first, then every row, the
 * summary last.
 * \param out the stream
 * \param sc the completed scenario
 * \param results the results
 * \param sum the summary
 */
void WriteResultRecords(std::ostream& out,
                        const metaroce::results::Scenario& sc,
                        const RunResults& results,
                        const metaroce::results::RunSummary& sum);

/**
 * Create the run folder and write every file of it (docs/outputs.md); throws OutputError
 * naming the folder or file that could not be written.
 * \param dir the run folder
 * \param sc the completed scenario
 * \param results the results (all ranks')
 * \param sum the summary
 * \param summaryText summary.txt's text (SummaryText)
 */
void WriteRunFolder(const std::filesystem::path& dir,
                    const metaroce::results::Scenario& sc,
                    const RunResults& results,
                    const metaroce::results::RunSummary& sum,
                    const std::string& summaryText);

} // namespace metaroce_run

#endif // METAROCE_RUN_WRITERS_H
