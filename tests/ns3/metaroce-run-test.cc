/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

/**
 * \file
 * The scenario runner (build/bin/metaroce-run, examples/run.cc) run as a program on a tiny
 * leaf-spine incast: every output file with its documented header and consistent numbers, the
 * same seed reproducing flows.csv byte for byte, overrides, and bad input giving exit code 2
 * with the line. Skipped when the runner is not built (no protobuf).
 */

#include <gtest/gtest.h>

#ifdef METAROCE_RUN_BINARY

#include "metaroce-results.pb.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <google/protobuf/io/zero_copy_stream_impl.h>
#include <google/protobuf/text_format.h>
#include <google/protobuf/util/delimited_message_util.h>
#include <map>
#include <sstream>
#include <string>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

namespace
{

namespace fs = std::filesystem;
namespace pb = metaroce::results;

/// 6-to-1 incast on 2 leaves x 4 hosts (3 senders cross the spines), 1% loss on spine links.
const char* const TINY_SCENARIO = R"(# tiny incast for metaroce-run-test
name: "tiny-incast"
seed: 3
topology {
  kind: LEAF_SPINE
  leaves: 2
  hosts_per_leaf: 4
  link_rate_gbps: 100
}
transport { name: "metaroce" paths: 4 }
workload { kind: INCAST senders: 6 receiver: 0 flow_bytes: 65536 }
loss { bernoulli: 0.01 scope: FABRIC_LINKS }
stop_time_ms: 50
output { goodput_interval_us: 5 }
)";

/// The documented headers (docs/outputs.md).
const std::map<std::string, std::string> HEADERS = {
    {"flows.csv",
     "flow_id,src,dst,bytes,start_us,finish_us,fct_us,ideal_fct_us,slowdown,retransmissions,"
     "timeouts,completed"},
    {"collectives.csv",
     "collective_id,ranks,bytes_per_rank,channels,chunk_bytes,start_us,finish_us,duration_us,"
     "algbw_gbps,busbw_gbps,completed"},
    {"goodput.csv", "time_us,interval_us,host,bytes,goodput_gbps"},
    {"paths.csv",
     "host,qpn,peer,flow_id,path,source_port,status,packets_sent,retransmissions,timeouts,"
     "ecn_echoes,packets_acked,cwnd_packets,srtt_us,min_rtt_us"},
    {"switches.csv",
     "switch,port,plane,tier,peer,rx_frames,enqueued_frames,enqueued_bytes,ecn_marked,"
     "pfc_pause_sent,pfc_resume_sent,pfc_pause_received,drops_total,drops_buffer_full,"
     "drops_queue_threshold,drops_link_down,drops_no_route,drops_channel_loss,drops_other"},
    {"hosts.csv",
     "host,plane,peer,tx_frames,tx_bytes,rx_frames,rx_bytes,pfc_pause_received,"
     "drops_channel_loss,drops_link_down,drops_other"},
};

/// A CSV file: header and rows of named cells.
struct Csv
{
    std::string header;                                   //!< first line
    std::vector<std::map<std::string, std::string>> rows; //!< rows by column name
};

/// \return the file's bytes ("" if missing).
std::string
ReadFile(const fs::path& path)
{
    std::ifstream in(path, std::ios::binary);
    std::ostringstream os;
    os << in.rdbuf();
    return os.str();
}

/// \return \p line split at commas.
std::vector<std::string>
Split(const std::string& line)
{
    std::vector<std::string> cells;
    std::stringstream ss(line);
    std::string cell;
    while (std::getline(ss, cell, ','))
    {
        cells.push_back(cell);
    }
    if (!line.empty() && line.back() == ',')
    {
        cells.emplace_back();
    }
    return cells;
}

/// \return the CSV file parsed.
Csv
ReadCsv(const fs::path& path)
{
    Csv csv;
    std::ifstream in(path);
    std::getline(in, csv.header);
    const std::vector<std::string> names = Split(csv.header);
    std::string line;
    while (std::getline(in, line))
    {
        const std::vector<std::string> cells = Split(line);
        EXPECT_EQ(cells.size(), names.size()) << path << ": " << line;
        std::map<std::string, std::string> row;
        for (size_t i = 0; i < names.size() && i < cells.size(); ++i)
        {
            row[names[i]] = cells[i];
        }
        csv.rows.push_back(row);
    }
    return csv;
}

class MetaRoceRunTest : public ::testing::Test
{
  protected:
    void SetUp() override
    {
        m_dir = fs::temp_directory_path() /
                ("metaroce-run-test-" + std::to_string(::getpid()) + "-" +
                 ::testing::UnitTest::GetInstance()->current_test_info()->name());
        fs::remove_all(m_dir);
        fs::create_directories(m_dir);
        m_scenario = m_dir / "tiny.textproto";
        std::ofstream(m_scenario) << TINY_SCENARIO;
    }

    void TearDown() override
    {
        if (!HasFailure())
        {
            fs::remove_all(m_dir);
        }
    }

    /**
     * Run metaroce-run.
     * \param args arguments (shell-quoted by the caller where needed)
     * \param[out] output its stdout and stderr
     * \param env environment changes, as arguments of env(1) (e.g. "-u X Y=1"); none if empty
     * \return its exit code
     */
    int Run(const std::string& args, std::string& output, const std::string& env = "")
    {
        const std::string command = (env.empty() ? "" : "env " + env + " ") +
                                    std::string(METAROCE_RUN_BINARY) + " " + args + " 2>&1";
        FILE* pipe = ::popen(command.c_str(), "r");
        if (!pipe)
        {
            return -1;
        }
        char buf[4096];
        size_t n;
        output.clear();
        while ((n = std::fread(buf, 1, sizeof(buf), pipe)) > 0)
        {
            output.append(buf, n);
        }
        const int status = ::pclose(pipe);
        return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    }

    /**
     * Run the tiny scenario into a subfolder.
     * \param name the subfolder
     * \param extra more arguments
     * \param env environment changes (see Run)
     * \return the run folder
     */
    fs::path RunTiny(const std::string& name,
                     const std::string& extra = "",
                     const std::string& env = "")
    {
        const fs::path out = m_dir / name;
        std::string output;
        const int code =
            Run("--scenario=" + m_scenario.string() + " --out=" + out.string() + " " + extra,
                output,
                env);
        EXPECT_EQ(code, 0) << output;
        return out;
    }

    fs::path m_dir;      //!< temporary folder of the test
    fs::path m_scenario; //!< the tiny scenario file
};

TEST_F(MetaRoceRunTest, WritesEveryFileWithDocumentedHeadersAndConsistentNumbers)
{
    const fs::path out = RunTiny("run");
    for (const char* file : {"flows.csv",
                             "collectives.csv",
                             "goodput.csv",
                             "paths.csv",
                             "switches.csv",
                             "hosts.csv",
                             "summary.txt",
                             "summary.pb.txt",
                             "scenario.pb.txt",
                             "results.pb"})
    {
        EXPECT_TRUE(fs::exists(out / file)) << file;
    }
    for (const auto& [file, header] : HEADERS)
    {
        EXPECT_EQ(ReadCsv(out / file).header, header) << file;
    }

    // Flows: all complete, FCT = finish - start >= ideal, slowdown >= 1.
    const Csv flows = ReadCsv(out / "flows.csv");
    ASSERT_EQ(flows.rows.size(), 6U);
    uint64_t bytes = 0;
    uint64_t flowRetransmissions = 0;
    for (const auto& f : flows.rows)
    {
        EXPECT_EQ(f.at("completed"), "1");
        EXPECT_EQ(f.at("dst"), "0");
        const double fct = std::stod(f.at("fct_us"));
        EXPECT_NEAR(fct, std::stod(f.at("finish_us")) - std::stod(f.at("start_us")), 0.002);
        EXPECT_GE(fct, std::stod(f.at("ideal_fct_us")));
        EXPECT_GE(std::stod(f.at("slowdown")), 1.0);
        EXPECT_NEAR(std::stod(f.at("slowdown")), fct / std::stod(f.at("ideal_fct_us")), 1e-3);
        bytes += std::stoull(f.at("bytes"));
        flowRetransmissions += std::stoull(f.at("retransmissions"));
    }
    EXPECT_EQ(bytes, 6U * 65536);

    // Goodput: the whole-fabric rows add up to every byte of every flow; host 0 is tracked.
    uint64_t placed = 0;
    uint64_t placedAtHost0 = 0;
    for (const auto& g : ReadCsv(out / "goodput.csv").rows)
    {
        (g.at("host") == "-1" ? placed : placedAtHost0) += std::stoull(g.at("bytes"));
        EXPECT_GT(std::stod(g.at("interval_us")), 0);
    }
    EXPECT_EQ(placed, bytes);
    EXPECT_EQ(placedAtHost0, bytes);

    // Paths: one row per path of each of the 6 sending connections; retransmissions agree.
    const Csv paths = ReadCsv(out / "paths.csv");
    EXPECT_EQ(paths.rows.size(), 6U * 4);
    uint64_t pathRetransmissions = 0;
    for (const auto& p : paths.rows)
    {
        pathRetransmissions += std::stoull(p.at("retransmissions"));
        EXPECT_EQ(p.at("peer"), "0");
        EXPECT_NE(p.at("flow_id"), "-1");
    }
    EXPECT_EQ(pathRetransmissions, flowRetransmissions);

    // Switches: 2 leaves + spines, a total row (port -1) then one row per port.
    const Csv switches = ReadCsv(out / "switches.csv");
    uint64_t totalDrops = 0;
    uint64_t channelLoss = 0;
    for (const auto& s : switches.rows)
    {
        if (s.at("port") == "-1")
        {
            totalDrops += std::stoull(s.at("drops_total"));
            channelLoss += std::stoull(s.at("drops_channel_loss"));
        }
    }

    // The summary in text format and the binary record stream agree with the CSV files.
    pb::RunSummary summary;
    ASSERT_TRUE(
        google::protobuf::TextFormat::ParseFromString(ReadFile(out / "summary.pb.txt"), &summary));
    EXPECT_EQ(summary.flows(), 6U);
    EXPECT_EQ(summary.flows_completed(), 6U);
    EXPECT_TRUE(summary.all_completed());
    EXPECT_EQ(summary.bytes_total(), bytes);
    EXPECT_EQ(summary.retransmissions(), flowRetransmissions);
    EXPECT_EQ(summary.switch_drops() + summary.channel_drops(), totalDrops);
    EXPECT_LE(channelLoss, summary.channel_drops()); // hosts' ports also lose frames
    EXPECT_GE(summary.slowdown_p50(), 1.0);

    std::ifstream in(out / "results.pb", std::ios::binary);
    google::protobuf::io::IstreamInputStream stream(&in);
    std::map<int, int> counts;
    pb::ResultRecord record;
    pb::ResultRecord first;
    bool clean = true;
    while (google::protobuf::util::ParseDelimitedFromZeroCopyStream(&record, &stream, &clean))
    {
        if (counts.empty())
        {
            first = record;
        }
        ++counts[record.record_case()];
    }
    EXPECT_TRUE(clean) << "results.pb ends in the middle of a record";
    EXPECT_EQ(first.record_case(), pb::ResultRecord::kScenario);
    EXPECT_EQ(first.scenario().name(), "tiny-incast");
    EXPECT_EQ(record.record_case(), pb::ResultRecord::kSummary);
    EXPECT_EQ(record.summary().flows_completed(), 6U);
    EXPECT_EQ(counts[pb::ResultRecord::kFlow], 6);
    EXPECT_EQ(counts[pb::ResultRecord::kPath], static_cast<int>(paths.rows.size()));
    EXPECT_EQ(counts[pb::ResultRecord::kSwitchCounters], static_cast<int>(summary.switches()));
    EXPECT_EQ(counts[pb::ResultRecord::kHostPort], static_cast<int>(summary.hosts()));
}

TEST_F(MetaRoceRunTest, HostDownlinkLossIsTheEndToEndLossAndHostsCsvMeasuresIt)
{
    // 6 x 1 MiB into host 0 with 5% loss on the switch-to-host direction of host links only.
    const fs::path out = RunTiny("down",
                                 "--loss=0.05 --set=loss.scope=HOST_DOWNLINKS "
                                 "--set=workload.flow_bytes=1048576");
    for (const auto& s : ReadCsv(out / "switches.csv").rows)
    {
        EXPECT_EQ(s.at("drops_channel_loss"), "0")
            << "switch " << s.at("switch") << " port " << s.at("port") << ": uplinks are lossless";
    }
    const Csv hosts = ReadCsv(out / "hosts.csv");
    ASSERT_EQ(hosts.rows.size(), 8U);
    uint64_t ackLost = 0;
    uint64_t ackFrames = 0;
    for (const auto& h : hosts.rows)
    {
        const uint64_t lost = std::stoull(h.at("drops_channel_loss"));
        const uint64_t frames =
            std::stoull(h.at("rx_frames")) - std::stoull(h.at("pfc_pause_received")) + lost;
        if (h.at("host") == "0")
        {
            // The receiver gets data only: its loss rate is the end-to-end data loss rate.
            const double rate = static_cast<double>(lost) / frames;
            EXPECT_GT(frames, 1536U); // 6 x 256 packets, retransmissions on top
            EXPECT_GT(rate, 0.03);
            EXPECT_LT(rate, 0.07);
        }
        else
        {
            ackLost += lost;
            ackFrames += frames;
        }
    }
    ASSERT_GT(ackFrames, 0U);
    EXPECT_GT(static_cast<double>(ackLost) / ackFrames, 0.02);
    EXPECT_LT(static_cast<double>(ackLost) / ackFrames, 0.08);
}

TEST_F(MetaRoceRunTest, FlowGoodputAndQueuePeaksAddUpWhenEnabled)
{
    // Off by default: no file.
    const fs::path plain = RunTiny("plain");
    EXPECT_FALSE(fs::exists(plain / "flow_goodput.csv"));
    EXPECT_FALSE(fs::exists(plain / "queues.csv"));

    const fs::path out =
        RunTiny("extra", "--set=output.flow_goodput=true --set=output.queue_peaks=true");
    const Csv flows = ReadCsv(out / "flows.csv");
    const Csv samples = ReadCsv(out / "flow_goodput.csv");
    EXPECT_EQ(samples.header, "time_us,interval_us,flow_id,src,dst,bytes,goodput_gbps,tx_packets");
    std::map<std::string, uint64_t> placed;
    std::map<std::string, uint64_t> sent;
    for (const auto& r : samples.rows)
    {
        placed[r.at("flow_id")] += std::stoull(r.at("bytes"));
        sent[r.at("flow_id")] += std::stoull(r.at("tx_packets"));
    }
    ASSERT_EQ(flows.rows.size(), 6U);
    for (const auto& f : flows.rows)
    {
        ASSERT_EQ(f.at("completed"), "1");
        const uint64_t bytes = std::stoull(f.at("bytes"));
        // Every byte of a completed flow is placed exactly once (first copies only).
        EXPECT_EQ(placed[f.at("flow_id")], bytes) << "flow " << f.at("flow_id");
        // At least one packet per MTU-sized piece, plus the retransmissions.
        EXPECT_GE(sent[f.at("flow_id")],
                  (bytes + 4095) / 4096 + std::stoull(f.at("retransmissions")));
    }

    const Csv queues = ReadCsv(out / "queues.csv");
    EXPECT_EQ(queues.header, "switch,port,plane,tier,peer,peak_queue_bytes,peak_queue_time_us");
    std::map<std::string, uint64_t> sharedPeak;
    uint64_t receiverPeak = 0;
    uint64_t largestOtherPort = 0;
    for (const auto& r : queues.rows)
    {
        const uint64_t peak = std::stoull(r.at("peak_queue_bytes"));
        if (r.at("port") == "-1")
        {
            sharedPeak[r.at("switch")] = peak;
            continue;
        }
        // A port's egress queue is part of its switch's shared buffer.
        EXPECT_LE(peak, sharedPeak.at(r.at("switch")))
            << "switch " << r.at("switch") << " port " << r.at("port");
        if (r.at("peer") == "h0")
        {
            receiverPeak = peak;
        }
        else
        {
            largestOtherPort = std::max(largestOtherPort, peak);
        }
    }
    // A 6-to-1 incast: the queue towards the receiver is the deepest in the fabric.
    EXPECT_GT(receiverPeak, 8U * 4096U);
    EXPECT_GT(receiverPeak, largestOtherPort);
}

TEST_F(MetaRoceRunTest, SameSeedGivesIdenticalOutputsAndOverridesChangeThem)
{
    const fs::path a = RunTiny("a");
    const fs::path b = RunTiny("b");
    for (const char* file : {"flows.csv", "goodput.csv", "paths.csv", "switches.csv", "hosts.csv"})
    {
        const std::string first = ReadFile(a / file);
        EXPECT_FALSE(first.empty()) << file;
        EXPECT_EQ(first, ReadFile(b / file)) << file << " differs between identical runs";
    }

    // Another seed changes the lossy run; --set changes the workload; --transport the engine.
    const fs::path seed = RunTiny("seed", "--seed=4");
    EXPECT_NE(ReadFile(a / "flows.csv"), ReadFile(seed / "flows.csv"));
    const fs::path bigger = RunTiny("bigger", "--set=workload.flow_bytes=131072");
    const Csv flows = ReadCsv(bigger / "flows.csv");
    ASSERT_EQ(flows.rows.size(), 6U);
    EXPECT_EQ(flows.rows[0].at("bytes"), "131072");
    const fs::path roce = RunTiny("roce", "--transport=rocev2 --set='transport { paths: 2 }'");
    pb::Scenario scenario;
    ASSERT_TRUE(google::protobuf::TextFormat::ParseFromString(ReadFile(roce / "scenario.pb.txt"),
                                                              &scenario));
    EXPECT_EQ(scenario.transport().name(), "rocev2");
    EXPECT_TRUE(scenario.topology().pfc()) << "PFC defaults to on for rocev2";
    EXPECT_EQ(ReadCsv(roce / "paths.csv").rows.at(0).at("path"), "-1");
}

/// \return the text after "heap" on the heap line of a run's summary.txt
std::string
HeapLine(const fs::path& run)
{
    std::istringstream in(ReadFile(run / "summary.txt"));
    std::string line;
    while (std::getline(in, line))
    {
        if (line.rfind("heap ", 0) == 0)
        {
            return line.substr(line.find_first_not_of(' ', 4));
        }
    }
    return "";
}

TEST_F(MetaRoceRunTest, HugePagesChangeOnlyTheHeapAndKeepTheArguments)
{
    // The runner may start itself again with glibc.malloc.hugetlb=1 (MetaRoceUseHugePages): the
    // second run must get every argument (one holds spaces) and give the same results.
    const std::string extra = "--seed=4 --set='transport { paths: 2 }'";
    const std::string clean = "-u GLIBC_TUNABLES -u METAROCE_HUGE_PAGES -u LD_PRELOAD";
    const fs::path off = RunTiny("off", extra, clean + " METAROCE_HUGE_PAGES=0");
    const fs::path forced =
        RunTiny("forced", extra, clean + " GLIBC_TUNABLES=glibc.malloc.hugetlb=1");
    const fs::path automatic = RunTiny("automatic", extra, clean);
    EXPECT_EQ(HeapLine(off), "4 KiB pages (METAROCE_HUGE_PAGES=0)");
    EXPECT_EQ(HeapLine(forced),
              "transparent huge pages requested (GLIBC_TUNABLES glibc.malloc.hugetlb=1)");
    const std::string automaticLine = HeapLine(automatic);
    std::string thp;
    std::getline(std::ifstream("/sys/kernel/mm/transparent_hugepage/enabled"), thp);
    if (thp.find("[madvise]") != std::string::npos)
    {
        // glibc 2.36 (Debian 12) reads the tunable, so the runner started itself again.
        EXPECT_EQ(automaticLine,
                  "transparent huge pages requested (GLIBC_TUNABLES glibc.malloc.hugetlb=1)");
    }
    else if (thp.find("[always]") != std::string::npos)
    {
        EXPECT_EQ(automaticLine, "transparent huge pages (the kernel's mode is always)");
    }
    else
    {
        EXPECT_EQ(automaticLine.rfind("4 KiB pages (the kernel", 0), 0U) << automaticLine;
    }
    pb::Scenario scenario;
    ASSERT_TRUE(
        google::protobuf::TextFormat::ParseFromString(ReadFile(automatic / "scenario.pb.txt"),
                                                      &scenario));
    EXPECT_EQ(scenario.transport().paths(), 2U) << "an argument was lost";
    EXPECT_EQ(scenario.seed(), 4U) << "an argument was lost";
    for (const char* file : {"flows.csv", "goodput.csv", "paths.csv", "switches.csv", "hosts.csv"})
    {
        const std::string reference = ReadFile(off / file);
        EXPECT_FALSE(reference.empty()) << file;
        EXPECT_EQ(reference, ReadFile(forced / file)) << file;
        EXPECT_EQ(reference, ReadFile(automatic / file)) << file;
    }
}

TEST_F(MetaRoceRunTest, BadInputExitsWithTwoAndNamesTheLine)
{
    struct Case
    {
        std::string text;   //!< scenario file
        std::string args;   //!< extra arguments
        std::string expect; //!< in the message
    };

    const std::vector<Case> cases = {
        {"name: \"x\"\ntopology {\n  leaves 2\n}\n", "", "bad.textproto:3:10: "},
        {"topology {\n  kind: LEAF_SPINE\n  colour: 2\n}\n", "", "bad.textproto:3:"},
        {"topology {\n  kind: CUBE\n}\n", "", "\"CUBE\" for field \"kind\""},
        {"topology { kind: FAT_TREE\n  k: 5 }\n", "", "bad.textproto:2:3: topology.k"},
        {"workload {\n  receiver: 99\n}\n", "", "bad.textproto:2:3: workload.receiver"},
        {"", "--seed=abc", "--seed=abc"},
        {"", "--set='transport { paths: 200 }'", "transport.paths: 200: must be in [1, 128]"},
        {"", "--set=workload.colour=1", "no field 'colour'"},
        {"", "--loss=2", "loss.bernoulli"},
        {"loss {\n fail_link { a: \"s0\" b: \"h9\" }\n}\n", "", "bad.textproto:2:14: "},
        {"",
         "--set='transport { nic_attributes { name: \"RtoMin\" value: \"5 parsecs\" } }'",
         "bad time"},
    };
    for (const Case& c : cases)
    {
        const fs::path file = m_dir / "bad.textproto";
        std::ofstream(file) << c.text;
        std::string output;
        const int code =
            Run("--scenario=" + file.string() + " --out=" + (m_dir / "bad").string() + " " + c.args,
                output);
        EXPECT_EQ(code, 2) << c.text << c.args << "\n" << output;
        EXPECT_NE(output.find(c.expect), std::string::npos)
            << "expected '" << c.expect << "' in: " << output;
        EXPECT_FALSE(fs::exists(m_dir / "bad" / "flows.csv"));
    }
    std::string output;
    EXPECT_EQ(Run("--scenario=" + (m_dir / "missing.textproto").string(), output), 2);
    EXPECT_NE(output.find("cannot open"), std::string::npos) << output;
}

TEST_F(MetaRoceRunTest, ScenarioDirectoryIsRejected)
{
    // A directory opens as an empty stream: it used to run the built-in defaults.
    std::string output;
    EXPECT_EQ(Run("--scenario=" + m_dir.string() + " --out=" + (m_dir / "dir").string(), output),
              2);
    EXPECT_NE(output.find(m_dir.string() + ": is a directory"), std::string::npos) << output;
    EXPECT_FALSE(fs::exists(m_dir / "dir"));
}

TEST_F(MetaRoceRunTest, NicSettingGivenTwiceWithDifferentValuesIsRejected)
{
    struct Case
    {
        std::string args;   //!< arguments after the tiny scenario (transport paths: 4)
        std::string expect; //!< in the message
    };

    const std::string nicAttribute = "--set='transport { nic_attributes { name: \"%s\" value: "
                                     "\"%s\" } }'";
    auto attribute = [&](const std::string& name, const std::string& value) {
        std::string a = nicAttribute;
        a.replace(a.find("%s"), 2, name);
        a.replace(a.find("%s"), 2, value);
        return a;
    };
    const std::vector<Case> cases = {
        // A scenario field against an ns-3 default or a nic_attributes entry.
        {"--ns3::MetaRoceNic::NumPaths=2",
         "tiny.textproto:10:30: transport.paths: 4 disagrees with --ns3::MetaRoceNic::NumPaths=2"},
        {attribute("NumPaths", "2"),
         "transport.paths: 4 disagrees with --set 'transport { nic_attributes { name: "
         "\"NumPaths\" value: \"2\" } }': transport.nic_attributes[0] NumPaths=2"},
        {"--set=transport.cc=aimd " + attribute("CongestionControl", "dctcp"),
         "transport.cc: aimd disagrees with"},
        {"--transport=rocev2 --set=transport.cc=dcqcn " + attribute("Dcqcn", "false"),
         "transport.cc: dcqcn disagrees with"},
        {"--set=transport.mtu=1024 --ns3::MetaRoceNic::Mtu=2048",
         "transport.mtu: 1024 disagrees with --ns3::MetaRoceNic::Mtu=2048"},
        // A nic_attributes entry against an ns-3 default.
        {"--ns3::MetaRoceNic::RtoMin=1ms " + attribute("RtoMin", "50us"),
         "transport.nic_attributes[0].value: RtoMin=50us disagrees with "
         "--ns3::MetaRoceNic::RtoMin=+1e+06ns"}, // as ns-3 prints the value
        // An enum attribute (EnumValue over the engine's policy names) from the command line.
        {"--set=transport.cc=aimd --ns3::MetaRoceNic::CongestionControl=dctcp",
         "transport.cc: aimd disagrees with --ns3::MetaRoceNic::CongestionControl=dctcp"},
        {"--set=transport.path_scheduler=spray --ns3::MetaRoceNic::PathScheduler=single",
         "transport.path_scheduler: spray disagrees with "
         "--ns3::MetaRoceNic::PathScheduler=single"},
        // A policy name the engine does not know is rejected where it was given, before the
        // run: 'cubic' used to run AIMD.
        {attribute("CongestionControl", "cubic"),
         "transport.nic_attributes[0].value: bad value 'cubic' for CongestionControl: expected "
         "aimd, dctcp or fixed"},
        {"--ns3::MetaRoceNic::PathScheduler=round-robin",
         "--ns3::MetaRoceNic::PathScheduler=round-robin: bad value 'round-robin' for "
         "PathScheduler: expected spray or single"},
        {"--ns3::MetaRoceNic::Transport=roce",
         "--ns3::MetaRoceNic::Transport=roce: bad value 'roce' for Transport: expected metaroce "
         "or rocev2"},
        {"-ns3::MetaRoceNic::RoceRecovery=sack",
         "-ns3::MetaRoceNic::RoceRecovery=sack: bad value 'sack' for RoceRecovery: expected gbn "
         "or irn"},
        // Any other type's enum, attribute or type given on the command line.
        {"--ns3::MetaRoceSwitch::BufferPreset=Huge",
         "--ns3::MetaRoceSwitch::BufferPreset=Huge: bad value 'Huge' for BufferPreset: expected "
         "Shallow or Deep"},
        {"--ns3::MetaRoceNic::Mtus=1024",
         "--ns3::MetaRoceNic::Mtus=1024: no attribute 'Mtus' in ns3::MetaRoceNic"},
        {"--ns3::MetaRoceNix::Mtu=1024", "--ns3::MetaRoceNix::Mtu=1024: no type ns3::MetaRoceNix"},
        {"--ns3::MetaRoceNic::RtoMin=soon",
         "--ns3::MetaRoceNic::RtoMin=soon: bad time 'soon' for RtoMin"},
    };
    for (const Case& c : cases)
    {
        std::string output;
        const int code = Run("--scenario=" + m_scenario.string() +
                                 " --out=" + (m_dir / "bad").string() + " " + c.args,
                             output);
        EXPECT_EQ(code, 2) << c.args << "\n" << output;
        EXPECT_NE(output.find(c.expect), std::string::npos)
            << "expected '" << c.expect << "' in: " << output;
        EXPECT_FALSE(fs::exists(m_dir / "bad"));
    }
}

TEST_F(MetaRoceRunTest, NicSettingsFillTheTransportFieldsLeftOut)
{
    // The same value in two places is no conflict.
    std::string output;
    EXPECT_EQ(Run("--scenario=" + m_scenario.string() +
                      " --print-scenario --ns3::MetaRoceNic::NumPaths=4 "
                      "--set='transport { nic_attributes { name: \"NumPaths\" value: \"4\" } }'",
                  output),
              0)
        << output;
    // Fields left out take the NIC's setting: nic_attributes first, then the ns-3 defaults.
    const fs::path bare = m_dir / "bare.textproto";
    std::ofstream(bare) << "transport { nic_attributes { name: \"NumPaths\" value: \"2\" } "
                           "nic_attributes { name: \"PathScheduler\" value: \"single\" } }\n";
    ASSERT_EQ(Run("--scenario=" + bare.string() +
                      " --print-scenario --ns3::MetaRoceNic::CongestionControl=dctcp "
                      "--ns3::MetaRoceNic::Mtu=1024",
                  output),
              0)
        << output;
    pb::Scenario scenario;
    ASSERT_TRUE(google::protobuf::TextFormat::ParseFromString(output, &scenario)) << output;
    EXPECT_EQ(scenario.transport().paths(), 2U);
    EXPECT_EQ(scenario.transport().path_scheduler(), "single");
    EXPECT_EQ(scenario.transport().cc(), "dctcp");
    EXPECT_EQ(scenario.transport().mtu(), 1024U);
    ASSERT_EQ(Run("--scenario=" + bare.string() +
                      " --print-scenario --transport=rocev2 --ns3::MetaRoceNic::Dcqcn=false "
                      "--ns3::MetaRoceNic::RoceRecovery=irn",
                  output),
              0)
        << output;
    ASSERT_TRUE(google::protobuf::TextFormat::ParseFromString(output, &scenario)) << output;
    EXPECT_EQ(scenario.transport().cc(), "none");
    EXPECT_EQ(scenario.transport().rocev2_recovery(), "irn");
}

TEST_F(MetaRoceRunTest, StopTimeBelowTheRoceRetransmissionTimerWarns)
{
    std::string output;
    // Go-back-N: 4.096 us * 2^14 = 67.1 ms by default.
    EXPECT_EQ(Run("--scenario=" + m_scenario.string() +
                      " --print-scenario --transport=rocev2 --stop-ms=50",
                  output),
              0);
    EXPECT_NE(output.find("metaroce-run: warning: stop_time_ms 50 is shorter than the RoCEv2 "
                          "local ACK timeout (RoceLocalAckTimeout 14: 4.096 us * 2^14) = 67.109 "
                          "ms"),
              std::string::npos)
        << output;
    // Shorter timer from nic_attributes, IRN's own timer, and MetaRoCE: no warning.
    for (const std::string& args :
         {std::string("--transport=rocev2 --stop-ms=50 --set='transport { nic_attributes { "
                      "name: \"RoceLocalAckTimeout\" value: \"10\" } }'"),
          std::string("--transport=rocev2 --stop-ms=50 --set='transport.rocev2_recovery=\"irn\"'"),
          std::string("--stop-ms=0.01")})
    {
        EXPECT_EQ(Run("--scenario=" + m_scenario.string() + " --print-scenario " + args, output),
                  0);
        EXPECT_EQ(output.find("warning"), std::string::npos) << args << "\n" << output;
    }
    // IRN warns about its RTO_low, naming where it was set.
    EXPECT_EQ(Run("--scenario=" + m_scenario.string() +
                      " --print-scenario --transport=rocev2 --stop-ms=0.05 "
                      "--set='transport.rocev2_recovery=\"irn\"'",
                  output),
              0);
    EXPECT_NE(output.find("shorter than the IRN retransmission timeout RoceIrnRtoLow = 0.100 ms"),
              std::string::npos)
        << output;
    // The run itself still happens and writes its folder.
    RunTiny("short", "--transport=rocev2 --stop-ms=1");
    EXPECT_TRUE(fs::exists(m_dir / "short" / "flows.csv"));
}

TEST_F(MetaRoceRunTest, ExampleScenariosParse)
{
    for (const auto& entry : fs::directory_iterator(METAROCE_SCENARIO_DIR))
    {
        if (entry.path().extension() != ".textproto")
        {
            continue;
        }
        std::string output;
        EXPECT_EQ(Run("--scenario=" + entry.path().string() + " --print-scenario", output), 0)
            << entry.path() << ": " << output;
    }
}

} // namespace

#else

TEST(MetaRoceRunTest, Skipped)
{
    GTEST_SKIP() << "metaroce-run is not built (protobuf missing)";
}

#endif
