/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

/**
 * \file
 * metaroce-perf --results: a loopback run (UDP mode, no privileges) writes results.pb in the
 * scenario runner's framing (length-delimited metaroce.results.ResultRecord) and a goodput.csv
 * with the runner's columns, so the same plot scripts read simulated and real runs.
 */

#include "hil-test-util.h"
#include "metaroce-results.pb.h"

#include <filesystem>
#include <fstream>
#include <google/protobuf/io/zero_copy_stream_impl.h>
#include <google/protobuf/util/delimited_message_util.h>
#include <gtest/gtest.h>
#include <sstream>
#include <unistd.h>

namespace metaroce
{
namespace hil
{
namespace test
{
namespace
{

namespace rpb = ::metaroce::results;

/// \return every record of the results.pb at \p path (empty if it cannot be opened).
std::vector<rpb::ResultRecord>
ReadResults(const std::filesystem::path& path, bool& clean)
{
    std::vector<rpb::ResultRecord> records;
    std::ifstream in(path, std::ios::binary);
    clean = bool(in);
    if (!in)
    {
        return records;
    }
    google::protobuf::io::IstreamInputStream stream(&in);
    while (true)
    {
        rpb::ResultRecord r;
        bool eof = false;
        if (!google::protobuf::util::ParseDelimitedFromZeroCopyStream(&r, &stream, &eof))
        {
            clean = eof; // a clean end of the stream, or a truncated / corrupt record
            break;
        }
        records.push_back(r);
    }
    return records;
}

/// Check one side's results folder.
void
CheckFolder(const std::filesystem::path& dir,
            bool sender,
            uint64_t expectedBytes,
            uint32_t expectedPaths)
{
    SCOPED_TRACE(dir.string());
    bool clean = false;
    std::vector<rpb::ResultRecord> records = ReadResults(dir / "results.pb", clean);
    ASSERT_TRUE(clean) << "results.pb does not parse as delimited ResultRecords";
    ASSERT_GE(records.size(), 3u);

    // Framing as the runner's: scenario first, summary last, goodput before paths.
    EXPECT_EQ(records.front().record_case(), rpb::ResultRecord::kScenario);
    EXPECT_EQ(records.front().scenario().transport().name(), "metaroce");
    ASSERT_EQ(records.back().record_case(), rpb::ResultRecord::kSummary);
    size_t goodputs = 0;
    size_t paths = 0;
    size_t summaries = 0;
    uint64_t goodputBytes = 0;
    uint64_t pathAcked = 0;
    bool pathSeen = false;
    for (const rpb::ResultRecord& r : records)
    {
        switch (r.record_case())
        {
        case rpb::ResultRecord::kGoodput:
            EXPECT_FALSE(pathSeen) << "goodput sample after the paths";
            ++goodputs;
            goodputBytes += r.goodput().bytes();
            EXPECT_EQ(r.goodput().host(), -1);
            EXPECT_GT(r.goodput().interval_us(), 0);
            break;
        case rpb::ResultRecord::kPath:
            pathSeen = true;
            ++paths;
            pathAcked += r.path().packets_acked();
            EXPECT_EQ(r.path().host(), 0u); // the client sends
            EXPECT_EQ(r.path().peer(), 1u);
            EXPECT_EQ(r.path().status(), "active");
            break;
        case rpb::ResultRecord::kSummary:
            ++summaries;
            break;
        default:
            break;
        }
    }
    const rpb::RunSummary& s = records.back().summary();
    EXPECT_EQ(summaries, 1u);
    EXPECT_GE(goodputs, 1u);
    EXPECT_EQ(paths, expectedPaths);
    EXPECT_EQ(s.bytes_total(), expectedBytes);
    EXPECT_EQ(goodputBytes, s.bytes_total()) << "goodput samples do not add up to the total";
    EXPECT_TRUE(s.all_completed());
    EXPECT_EQ(s.transport(), "metaroce");
    EXPECT_EQ(s.hosts(), 2u);
    EXPECT_EQ(s.flows(), 1u);
    EXPECT_GT(s.goodput_mean_gbps(), 0);
    EXPECT_NE(s.command_line().find("--results"), std::string::npos);
    if (sender)
    {
        EXPECT_GT(pathAcked, 0u);
    }

    // goodput.csv: the runner's header, one row per GoodputSample, the same bytes.
    std::ifstream csv(dir / "goodput.csv");
    ASSERT_TRUE(csv);
    std::string line;
    ASSERT_TRUE(std::getline(csv, line));
    EXPECT_EQ(line, "time_us,interval_us,host,bytes,goodput_gbps");
    size_t rows = 0;
    uint64_t csvBytes = 0;
    while (std::getline(csv, line))
    {
        std::stringstream fields(line);
        std::string f[5];
        for (std::string& x : f)
        {
            std::getline(fields, x, ',');
        }
        EXPECT_EQ(f[2], "-1") << line;
        csvBytes += std::stoull(f[3]);
        ++rows;
    }
    EXPECT_EQ(rows, goodputs);
    EXPECT_EQ(csvBytes, goodputBytes);
}

TEST(HilResults, LoopbackRunWritesSharedSchema)
{
    const int pid = getpid();
    std::string control = std::to_string(21000 + pid % 8000);
    std::filesystem::path root =
        std::filesystem::temp_directory_path() / ("metaroce-hil-results-" + std::to_string(pid));
    std::filesystem::remove_all(root);

    struct Cleanup
    {
        std::filesystem::path dir;

        ~Cleanup()
        {
            std::error_code ignored;
            std::filesystem::remove_all(dir, ignored);
        }
    } cleanup{root};

    Process server({METAROCE_PERF_BIN,
                    "--port",
                    control,
                    "--data-port",
                    "4895",
                    "--mtu",
                    "1024",
                    "--sport-base",
                    "42000",
                    "--paths",
                    "4",
                    "--report",
                    "0.02",
                    "--results",
                    (root / "server").string()});
    Process client({METAROCE_PERF_BIN, "127.0.0.1", "--port",    control,
                    "--data-port",     "4896",      "--mtu",     "1024",
                    "--sport-base",    "32000",     "--size",    "16K",
                    "--iters",         "400",       "--paths",   "4",
                    "--report",        "0.02",      "--results", (root / "client").string()});
    int clientStatus = client.Wait(std::chrono::milliseconds(30000));
    int serverStatus = server.Wait(std::chrono::milliseconds(5000));
    ASSERT_EQ(clientStatus, 0) << client.Output() << server.Output();
    ASSERT_EQ(serverStatus, 0) << server.Output();
    const uint64_t bytes = 400ull * 16384;
    CheckFolder(root / "client", true, bytes, 4);
    // The server only acknowledges: no sending connection, no path rows (as the runner).
    CheckFolder(root / "server", false, bytes, 0);
}

} // namespace
} // namespace test
} // namespace hil
} // namespace metaroce
