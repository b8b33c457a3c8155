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
#include "metaroce-run-distributed.h"
#include "metaroce-run-outputs.h"
#include "metaroce-run-plan.h"
#include "metaroce-run-results.h"
#include "metaroce-run-samplers.h"
#include "metaroce-run-topology.h"
#include "metaroce-run-workload.h"
#include "metaroce-run-writers.h"

#include "ns3/command-line.h"
#include "ns3/core-module.h"
#include "ns3/metaroce-huge-pages.h"
#include "ns3/metaroce-partition.h"
#include "ns3/metaroce-simulator-impl.h"

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <google/protobuf/text_format.h>
#include <iostream>
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
    if (!distributed)
    {
        // One process: ns-3's sequential event loop without its per-event overhead, the same
        // order of events and results (ns3/metaroce-simulator-impl.h); NS_GLOBAL_VALUE or
        // --SimulatorImplementationType=ns3::DefaultSimulatorImpl chooses another.
        MetaRoceSimulatorImpl::SelectByDefault();
    }
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
    const ScenarioPlan plan = LoadScenario(options);
    const pb::Scenario& sc = plan.loader.Get();
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
    ConfigureSimulator(sc);
    Ptr<MetaRoceFabric> fabric = BuildFabric(sc.topology(), MetaRoceGetRankCount());
    const NodeNames names(fabric);
    int64_t streams = 0;
    const std::vector<Ptr<MetaRoceNic>> nics = InstallNics(sc.transport(), fabric, streams);
    ApplyLoss(plan.loader, fabric, names, streams);
    Ptr<MetaRoceWorkloadHelper> load = BuildWorkload(plan, fabric, nics);
    RunSamplers samplers = StartSamplers(sc.output(),
                                         fabric,
                                         nics,
                                         load,
                                         ReceivingHosts(load, fabric->GetHostCount()));

    // ---- Run
    Simulator::Stop(MicroSeconds(static_cast<int64_t>(std::llround(sc.stop_time_ms() * 1e3))));
    const auto runStart = std::chrono::steady_clock::now();
    const std::clock_t cpuStart = std::clock();
    Simulator::Run();
    const double runCpuS = double(std::clock() - cpuStart) / CLOCKS_PER_SEC;
    const double runWallS =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - runStart).count();
    FinishSamplers(samplers);

    // ---- Collect (in a distributed run, rank 0 gathers every rank's results)
    RunResults results = CollectResults(fabric, nics, load, samplers, names, distributed);
    if (distributed)
    {
        results.ranks = GatherRankStats(LocalRankStats(fabric, results.events, runWallS, runCpuS));
    }
    if (distributed && !GatherResults(results, fabric, load))
    {
        Simulator::Destroy();
        MetaRoceDisableDistributed();
        return 0;
    }
    const FabricSize size{fabric->GetHostCount(),
                          fabric->GetSwitchCount(),
                          static_cast<uint32_t>(fabric->GetLinks().size())};
    pb::RunSummary sum = Summarize(sc, size, results, commandLine);
    sum.set_wall_time_s(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - wallStart).count());

    // ---- Write
    const std::filesystem::path dir =
        outDir.empty() ? std::filesystem::path("runs") / (sc.name() + "-" + Timestamp())
                       : std::filesystem::path(outDir);
    const std::string human = SummaryText(sc, sum, heapPages, dir.string());
    WriteRunFolder(dir, sc, results, sum, human);
    if (!quiet)
    {
        std::cout << human;
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
    catch (const OutputError& e)
    {
        std::cerr << "metaroce-run: " << e.what() << std::endl;
        return EXIT_OUTPUT;
    }
}
