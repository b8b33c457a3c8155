/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

/**
 * \file
 * The scenario runner's summary and output writers (examples/runner/metaroce-run-results.h,
 * metaroce-run-writers.h) from hand-made rows, without running a simulation.
 */

#include "metaroce-run-writers.h"

#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <sstream>
#include <unistd.h>

namespace
{

namespace pb = metaroce::results;

/**
 * \param id flow id
 * \param fct its FCT in us (< 0: not completed)
 * \param start its start in us
 * \return a flow row
 */
pb::FlowRecord
Flow(uint32_t id, double fct, double start)
{
    pb::FlowRecord f;
    f.set_flow_id(id);
    f.set_src(id);
    f.set_dst(id + 1);
    f.set_bytes(1000);
    f.set_start_us(start);
    f.set_completed(fct >= 0);
    f.set_fct_us(fct >= 0 ? fct : -1);
    f.set_finish_us(fct >= 0 ? start + fct : -1);
    f.set_slowdown(fct >= 0 ? fct / 10 : -1);
    f.set_ideal_fct_us(10);
    return f;
}

/// Results of three flows (two completed) on two switches.
metaroce_run::RunResults
Results()
{
    metaroce_run::RunResults r;
    r.flows = {Flow(0, 20, 1), Flow(1, 40, 2), Flow(2, -1, 3)};
    r.flows[2].set_failed(true);
    for (uint64_t drops : {5, 7})
    {
        pb::SwitchCounters s;
        s.mutable_total()->set_drops_total(drops + 1);
        s.mutable_total()->set_drops_channel_loss(1);
        s.mutable_total()->set_ecn_marked(drops * 10);
        s.mutable_total()->set_pfc_pause_sent(drops);
        s.add_ports()->set_port(0);
        r.switches.push_back(s);
    }
    r.bytesPlaced = 2000;
    r.retransmissions = 3;
    r.timeouts = 1;
    r.channelDrops = 2;
    r.events = 1234;
    r.simTimeUs = 99.5;
    return r;
}

TEST(RunSummaryTest, SummarizesTheRows)
{
    pb::Scenario sc;
    sc.set_name("unit");
    sc.set_seed(4);
    const pb::RunSummary sum = metaroce_run::Summarize(sc, {8, 2, 10}, Results(), "cmd");
    EXPECT_EQ(sum.scenario(), "unit");
    EXPECT_EQ(sum.hosts(), 8U);
    EXPECT_EQ(sum.links(), 10U);
    EXPECT_EQ(sum.flows(), 3U);
    EXPECT_EQ(sum.flows_completed(), 2U);
    EXPECT_EQ(sum.flows_failed(), 1U);
    EXPECT_EQ(sum.bytes_total(), 3000U);
    EXPECT_DOUBLE_EQ(sum.fct_mean_us(), 30);
    EXPECT_DOUBLE_EQ(sum.fct_p50_us(), 20);
    EXPECT_DOUBLE_EQ(sum.fct_max_us(), 40);
    EXPECT_DOUBLE_EQ(sum.slowdown_max(), 4);
    // 2000 bytes placed from the first start (1 us) to the last finish (42 us).
    EXPECT_DOUBLE_EQ(sum.goodput_mean_gbps(), 2000 * 8 / (41 * 1e3));
    EXPECT_EQ(sum.switch_drops(), 12U); // channel losses are not switch drops
    EXPECT_EQ(sum.ecn_marked(), 120U);
    EXPECT_EQ(sum.pfc_pauses(), 12U);
    EXPECT_EQ(sum.channel_drops(), 2U);
    EXPECT_EQ(sum.events(), 1234U);
    EXPECT_FALSE(sum.all_completed());
    EXPECT_EQ(sum.command_line(), "cmd");

    const std::string text = metaroce_run::SummaryText(sc, sum, "heap", "runs/x");
    EXPECT_NE(text.find("flows           2 of 3 completed, 1 failed, 3000 bytes\n"),
              std::string::npos)
        << text;
    EXPECT_NE(text.find("fct (us)        mean 30.0  p50 20.0"), std::string::npos) << text;
    EXPECT_EQ(text.find("collectives"), std::string::npos) << text;
    EXPECT_NE(text.find("all completed   NO\nrun folder      runs/x\n"), std::string::npos);
}

TEST(RunSummaryTest, NoCompletedFlowNoStatistics)
{
    metaroce_run::RunResults r;
    r.flows = {Flow(0, -1, 1)};
    const pb::RunSummary sum = metaroce_run::Summarize(pb::Scenario(), {}, r, "");
    EXPECT_EQ(sum.flows_completed(), 0U);
    EXPECT_EQ(sum.fct_mean_us(), 0);
    EXPECT_EQ(sum.goodput_mean_gbps(), 0);
    EXPECT_EQ(metaroce_run::SummaryText(pb::Scenario(), sum, "", "").find("fct (us)"),
              std::string::npos);
}

TEST(RunWritersTest, CsvRowsFollowTheirHeaders)
{
    std::ostringstream flows;
    metaroce_run::WriteFlows(flows, {Flow(7, 12.3456, 1)});
    EXPECT_EQ(flows.str(),
              std::string(metaroce_run::FLOWS_HEADER) +
                  "\n7,7,8,1000,1.000,13.346,12.346,10.000,1.2346,0,0,1\n");
    std::ostringstream switches;
    const metaroce_run::RunResults r = Results();
    metaroce_run::WriteSwitches(switches, r.switches, false);
    std::ostringstream withPorts;
    metaroce_run::WriteSwitches(withPorts, r.switches, true);
    auto lines = [](const std::string& s) { return std::count(s.begin(), s.end(), '\n'); };
    EXPECT_EQ(lines(switches.str()), 3);  // header + 2 totals
    EXPECT_EQ(lines(withPorts.str()), 5); // and one port each
    metaroce_run::RankStats rank;
    rank.rank = 1;
    rank.hosts = 32;
    rank.switches = 20;
    rank.crossLinks = 16;
    rank.lookaheadUs = 1;
    rank.events = 1000;
    rank.framesSent = 77;
    rank.runWallS = 2.5;
    rank.runCpuS = 2;
    std::ostringstream ranks;
    metaroce_run::WriteRanks(ranks, {rank});
    EXPECT_EQ(ranks.str(),
              std::string(metaroce_run::RANKS_HEADER) + "\n1,32,20,16,1.000,1000,77,2.500,2.000\n");
    std::ostringstream queues;
    metaroce_run::WriteQueues(queues, r.switches);
    EXPECT_EQ(lines(queues.str()), 5);
}

TEST(RunWritersTest, WritesTheRunFolderOrSaysWhatFailed)
{
    const std::filesystem::path dir = std::filesystem::temp_directory_path() /
                                      ("metaroce-run-writers-" + std::to_string(::getpid()));
    std::filesystem::remove_all(dir);
    pb::Scenario sc;
    sc.mutable_output()->set_queue_peaks(true);
    const metaroce_run::RunResults r = Results();
    const pb::RunSummary sum = metaroce_run::Summarize(sc, {}, r, "");
    metaroce_run::WriteRunFolder(dir / "run", sc, r, sum, "text\n");
    for (const char* name : {"flows.csv",
                             "collectives.csv",
                             "goodput.csv",
                             "paths.csv",
                             "switches.csv",
                             "hosts.csv",
                             "queues.csv",
                             "scenario.pb.txt",
                             "summary.pb.txt",
                             "summary.txt",
                             "results.pb"})
    {
        EXPECT_TRUE(std::filesystem::is_regular_file(dir / "run" / name)) << name;
    }
    EXPECT_FALSE(std::filesystem::exists(dir / "run" / "flow_goodput.csv"));
    // results.pb: the scenario, 3 flows, 2 switches and the summary.
    std::ifstream in(dir / "run" / "results.pb", std::ios::binary);
    const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    EXPECT_GT(bytes.size(), 0U);

    // A run folder below a regular file cannot be created.
    std::ofstream(dir / "file") << "x";
    try
    {
        metaroce_run::WriteRunFolder(dir / "file" / "run", sc, r, sum, "");
        ADD_FAILURE() << "no error";
    }
    catch (const metaroce_run::OutputError& e)
    {
        EXPECT_EQ(
            std::string(e.what()).rfind("cannot create " + (dir / "file" / "run").string(), 0),
            0U)
            << e.what();
    }
    std::filesystem::remove_all(dir);
}

} // namespace
