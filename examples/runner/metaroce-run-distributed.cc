/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#include "metaroce-run-distributed.h"

#include "ns3/metaroce-channel.h"
#include "ns3/metaroce-partition.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <type_traits>

namespace metaroce_run
{

using namespace ns3;
namespace pb = metaroce::results;

template <typename Row>
std::string
PackRows(const std::vector<Row>& rows, const std::vector<bool>& send)
{
    std::string part;
    for (size_t i = 0; i < rows.size() && i < send.size(); ++i)
    {
        if (send[i])
        {
            const std::string row = rows[i].SerializeAsString();
            const uint32_t head[2] = {static_cast<uint32_t>(i), static_cast<uint32_t>(row.size())};
            part.append(reinterpret_cast<const char*>(head), sizeof(head));
            part += row;
        }
    }
    return part;
}

template <typename Row>
std::vector<std::pair<uint32_t, Row>>
UnpackRows(const std::vector<std::string>& parts)
{
    std::vector<std::pair<uint32_t, Row>> rows;
    for (const std::string& from : parts)
    {
        size_t at = 0;
        while (at + 8 <= from.size())
        {
            uint32_t head[2];
            std::memcpy(head, from.data() + at, sizeof(head));
            at += sizeof(head);
            if (at + head[1] > from.size())
            {
                break;
            }
            Row row;
            row.ParseFromArray(from.data() + at, static_cast<int>(head[1]));
            rows.emplace_back(head[0], std::move(row));
            at += head[1];
        }
    }
    return rows;
}

template <typename Row>
bool
GatherRows(std::vector<Row>& rows, const std::vector<bool>& mine)
{
    const std::vector<std::string> parts = MetaRoceGatherToRoot(PackRows(rows, mine));
    if (MetaRoceGetRank() != 0)
    {
        return false;
    }
    for (auto& [index, row] : UnpackRows<Row>(parts))
    {
        if (index < rows.size())
        {
            rows[index] = std::move(row);
        }
    }
    return true;
}

template <typename Row>
bool
GatherAppend(std::vector<Row>& rows)
{
    const std::vector<std::string> parts =
        MetaRoceGatherToRoot(PackRows(rows, std::vector<bool>(rows.size(), true)));
    if (MetaRoceGetRank() != 0)
    {
        return false;
    }
    rows.clear();
    for (auto& indexed : UnpackRows<Row>(parts))
    {
        rows.push_back(std::move(indexed.second));
    }
    return true;
}

/// The row messages the runner gathers.
#define METAROCE_RUN_GATHERED_ROW(Row)                                                             \
    template std::string PackRows(const std::vector<Row>&, const std::vector<bool>&);              \
    template std::vector<std::pair<uint32_t, Row>> UnpackRows(const std::vector<std::string>&);    \
    template bool GatherRows(std::vector<Row>&, const std::vector<bool>&);                         \
    template bool GatherAppend(std::vector<Row>&);
METAROCE_RUN_GATHERED_ROW(pb::FlowRecord)
METAROCE_RUN_GATHERED_ROW(pb::SwitchCounters)
METAROCE_RUN_GATHERED_ROW(pb::HostPortCounters)
METAROCE_RUN_GATHERED_ROW(pb::PathCounters)
METAROCE_RUN_GATHERED_ROW(pb::GoodputSample)
METAROCE_RUN_GATHERED_ROW(pb::FlowGoodputSample)
#undef METAROCE_RUN_GATHERED_ROW

namespace
{

/// Add a goodput sample's counts to another's.
void
AddSample(pb::GoodputSample& to, const pb::GoodputSample& from)
{
    to.set_bytes(to.bytes() + from.bytes());
    to.set_goodput_gbps(to.goodput_gbps() + from.goodput_gbps());
}

/// Add a flow goodput sample's counts to another's (bytes from the receiver's rank, packets
/// from the sender's).
void
AddSample(pb::FlowGoodputSample& to, const pb::FlowGoodputSample& from)
{
    to.set_bytes(to.bytes() + from.bytes());
    to.set_goodput_gbps(to.goodput_gbps() + from.goodput_gbps());
    to.set_tx_packets(to.tx_packets() + from.tx_packets());
}

/**
 * Merge the samples of equal key from all ranks into one, in the order of their first
 * appearance (rank 0's).
 * \param rows the gathered samples
 * \param key a sample's key
 */
template <typename Row, typename Key>
void
SumSamplesBy(std::vector<Row>& rows, Key key)
{
    std::map<decltype(key(rows.front())), size_t> index;
    std::vector<Row> merged;
    for (const Row& r : rows)
    {
        auto [it, fresh] = index.emplace(key(r), merged.size());
        if (fresh)
        {
            merged.push_back(r);
        }
        else
        {
            AddSample(merged[it->second], r);
        }
    }
    rows = std::move(merged);
}

} // namespace

void
SumSamples(std::vector<pb::GoodputSample>& rows)
{
    SumSamplesBy(rows, [](const pb::GoodputSample& g) {
        return std::make_pair(g.time_us(), int64_t(g.host()));
    });
}

void
SumSamples(std::vector<pb::FlowGoodputSample>& rows)
{
    SumSamplesBy(rows, [](const pb::FlowGoodputSample& g) {
        return std::make_pair(g.time_us(), int64_t(g.flow_id()));
    });
}

void
MergeCollectives(std::vector<pb::CollectiveRecord>& records,
                 const std::vector<MetaRoceCollective>& local)
{
    // Per collective: pairs done, the latest pair's time (ps), failed.
    std::string mine;
    for (const MetaRoceCollective& c : local)
    {
        const int64_t row[3] = {int64_t(c.ranksDone),
                                c.ranksDone > 0 ? c.lastRankDone.GetPicoSeconds() : -1,
                                c.failed ? 1 : 0};
        mine.append(reinterpret_cast<const char*>(row), sizeof(row));
    }
    const std::vector<std::string> all = MetaRoceGatherToRoot(mine);
    if (MetaRoceGetRank() != 0)
    {
        return;
    }
    for (size_t i = 0; i < local.size() && i < records.size(); ++i)
    {
        int64_t pairs = 0;
        int64_t last = -1;
        bool failed = false;
        for (const std::string& from : all)
        {
            if (from.size() < (i + 1) * 3 * sizeof(int64_t))
            {
                continue;
            }
            int64_t row[3];
            std::memcpy(row, from.data() + i * sizeof(row), sizeof(row));
            pairs += row[0];
            last = std::max(last, row[1]);
            failed = failed || row[2] != 0;
        }
        const MetaRoceCollective& c = local[i];
        pb::CollectiveRecord& r = records[i];
        const bool done = !failed && uint64_t(pairs) == c.ranks.size() * c.channels && last >= 0;
        r.set_completed(done);
        if (!done)
        {
            continue;
        }
        const double finishUs = double(last) / 1e6;
        const double durationUs = finishUs - r.start_us();
        const double algbw = durationUs > 0 ? double(c.bytesPerRank) * 8 / (durationUs * 1e3) : 0;
        const double n = double(c.ranks.size());
        r.set_finish_us(finishUs);
        r.set_duration_us(durationUs);
        r.set_algbw_gbps(algbw);
        r.set_busbw_gbps(algbw * 2 * (n - 1) / n);
    }
}

RankStats
LocalRankStats(Ptr<MetaRoceFabric> fabric, uint64_t events, double runWallS, double runCpuS)
{
    RankStats r;
    r.rank = MetaRoceGetRank();
    for (uint32_t h = 0; h < fabric->GetHostCount(); ++h)
    {
        r.hosts += MetaRoceIsLocal(fabric->GetHost(h));
    }
    for (uint32_t j = 0; j < fabric->GetSwitchCount(); ++j)
    {
        r.switches += MetaRoceIsLocal(fabric->GetSwitchNode(j));
    }
    Time lookahead = Time::Max();
    for (const MetaRoceLink& link : fabric->GetLinks())
    {
        const bool a = MetaRoceIsLocal(link.nodeA);
        const bool b = MetaRoceIsLocal(link.nodeB);
        if (a != b)
        {
            ++r.crossLinks;
            lookahead = std::min(lookahead, link.channel->GetDelay());
        }
        r.framesSent += MetaRoceRemoteFramesSent(link.channel);
    }
    r.lookaheadUs = r.crossLinks ? lookahead.GetPicoSeconds() / 1e6 : 0;
    r.events = events;
    r.runWallS = runWallS;
    r.runCpuS = runCpuS;
    return r;
}

std::vector<RankStats>
GatherRankStats(const RankStats& mine)
{
    static_assert(std::is_trivially_copyable_v<RankStats>, "RankStats travels as bytes");
    const std::vector<std::string> parts =
        MetaRoceGatherToRoot(std::string(reinterpret_cast<const char*>(&mine), sizeof(mine)));
    std::vector<RankStats> all;
    for (const std::string& part : parts)
    {
        if (part.size() == sizeof(RankStats))
        {
            RankStats r;
            std::memcpy(&r, part.data(), sizeof(r));
            all.push_back(r);
        }
    }
    return all;
}

bool
GatherResults(RunResults& results, Ptr<MetaRoceFabric> fabric, Ptr<MetaRoceWorkloadHelper> load)
{
    // Each rank has the counters of the nodes it owns: rank 0 collects them (flows by source
    // host, switches, host ports, paths, goodput samples).
    std::vector<bool> mine;
    for (const MetaRoceFlow& f : load->GetFlows())
    {
        mine.push_back(MetaRoceIsLocal(fabric->GetHost(f.src)));
    }
    const bool root = GatherRows(results.flows, mine);
    mine.clear();
    for (uint32_t j = 0; j < fabric->GetSwitchCount(); ++j)
    {
        mine.push_back(MetaRoceIsLocal(fabric->GetSwitchNode(j)));
    }
    GatherRows(results.switches, mine);
    mine.clear();
    for (const pb::HostPortCounters& row : results.hostPorts)
    {
        mine.push_back(MetaRoceIsLocal(fabric->GetHost(row.host())));
    }
    GatherRows(results.hostPorts, mine);
    MergeCollectives(results.collectives, load->GetCollectives());
    GatherAppend(results.paths);
    std::stable_sort(
        results.paths.begin(),
        results.paths.end(),
        [](const pb::PathCounters& x, const pb::PathCounters& y) { return x.host() < y.host(); });
    // Goodput samples: every rank samples at the same times; a rank's bytes are those of its
    // own hosts (zero for the others), so the samples add up.
    GatherAppend(results.goodput);
    SumSamples(results.goodput);
    GatherAppend(results.flowGoodput);
    SumSamples(results.flowGoodput);
    results.events = MetaRoceSumOverRanks(results.events);
    results.channelDrops = MetaRoceSumOverRanks(results.channelDrops);
    results.bytesPlaced = MetaRoceSumOverRanks(results.bytesPlaced);
    results.retransmissions = MetaRoceSumOverRanks(results.retransmissions);
    results.timeouts = MetaRoceSumOverRanks(results.timeouts);
    return root;
}

} // namespace metaroce_run
