/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#ifndef METAROCE_RUN_DISTRIBUTED_H
#define METAROCE_RUN_DISTRIBUTED_H

// Distributed (MPI) runs of metaroce-run (docs/distributed.md). Included by run.cc only; kept
// apart so the scenario runner carries a few one-line hooks.

#include "metaroce-results.pb.h"

#include "ns3/metaroce-fabric.h"
#include "ns3/metaroce-partition.h"
#include "ns3/metaroce-workload-helper.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

namespace metaroce_run
{

/**
 * Serialize the selected rows for MetaRoceGatherToRoot. Frame: 4-byte row index, 4-byte
 * length, the serialized row.
 * \param rows the rows
 * \param send send(i): whether to send row i
 * \return the frames
 */
template <typename Row, typename Send>
std::string
PackRows(const std::vector<Row>& rows, Send send)
{
    std::string part;
    for (size_t i = 0; i < rows.size(); ++i)
    {
        if (send(i))
        {
            const std::string row = rows[i].SerializeAsString();
            const uint32_t head[2] = {static_cast<uint32_t>(i), static_cast<uint32_t>(row.size())};
            part.append(reinterpret_cast<const char*>(head), sizeof(head));
            part += row;
        }
    }
    return part;
}

/**
 * Call \p use(index, row) for every row in the frames of every rank (PackRows), rank 0's
 * first; a truncated frame ends its rank's part.
 * \param parts every rank's frames
 * \param use the consumer
 */
template <typename Row, typename Use>
void
UnpackRows(const std::vector<std::string>& parts, Use use)
{
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
            use(head[0], row);
            at += head[1];
        }
    }
}

/**
 * Gather rows that every rank holds in the same order (one per flow, switch or host port) on
 * rank 0: each rank sends the rows it owns (\p mine), whose counters only it has; rank 0 puts
 * them in place.
 * \param rows this rank's rows (replaced on rank 0 by their owners' rows)
 * \param mine for each row, whether this rank owns it
 * \return true on rank 0, false on the other ranks
 */
template <typename Row>
bool
GatherRows(std::vector<Row>& rows, const std::vector<bool>& mine)
{
    const std::vector<std::string> parts = ns3::MetaRoceGatherToRoot(
        PackRows(rows, [&mine](size_t i) { return i < mine.size() && mine[i]; }));
    if (ns3::MetaRoceGetRank() != 0)
    {
        return false;
    }
    UnpackRows<Row>(parts, [&rows](uint32_t index, const Row& row) {
        if (index < rows.size())
        {
            rows[index] = row;
        }
    });
    return true;
}

/**
 * Gather rows that only their owner creates (e.g. one per path of the connections a host
 * sends on) on rank 0, in rank order.
 * \param rows this rank's rows (on rank 0 replaced by every rank's rows, rank 0's first)
 * \return true on rank 0, false on the other ranks
 */
template <typename Row>
bool
GatherAppend(std::vector<Row>& rows)
{
    const std::vector<std::string> parts =
        ns3::MetaRoceGatherToRoot(PackRows(rows, [](size_t) { return true; }));
    if (ns3::MetaRoceGetRank() != 0)
    {
        return false;
    }
    rows.clear();
    UnpackRows<Row>(parts, [&rows](uint32_t, const Row& row) { rows.push_back(row); });
    return true;
}

/// Add a goodput sample's counts to another's.
inline void
AddSample(metaroce::results::GoodputSample& to, const metaroce::results::GoodputSample& from)
{
    to.set_bytes(to.bytes() + from.bytes());
    to.set_goodput_gbps(to.goodput_gbps() + from.goodput_gbps());
}

/// Add a flow goodput sample's counts to another's (bytes from the receiver's rank, packets
/// from the sender's).
inline void
AddSample(metaroce::results::FlowGoodputSample& to,
          const metaroce::results::FlowGoodputSample& from)
{
    to.set_bytes(to.bytes() + from.bytes());
    to.set_goodput_gbps(to.goodput_gbps() + from.goodput_gbps());
    to.set_tx_packets(to.tx_packets() + from.tx_packets());
}

/**
 * On rank 0 after GatherAppend: merge the samples of equal key (time, host or flow) from all
 * ranks into one, in the order of their first appearance (rank 0's).
 * \param rows the gathered samples
 * \param key a sample's key
 */
template <typename Row, typename Key>
void
SumSamples(std::vector<Row>& rows, Key key)
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

/**
 * Complete the collectives' records on rank 0: each rank has seen the (rank, channel) pairs of
 * the hosts it owns finish; a collective is done when the pairs of all ranks add up, and it
 * finished when the last of them did.
 * \param records the records (rank 0's view; completed on rank 0)
 * \param local this rank's collectives, in the same order
 */
inline void
MergeCollectives(std::vector<metaroce::results::CollectiveRecord>& records,
                 const std::vector<ns3::MetaRoceCollective>& local)
{
    // Per collective: pairs done, the latest pair's time (ps), failed.
    std::string mine;
    for (const ns3::MetaRoceCollective& c : local)
    {
        const int64_t row[3] = {int64_t(c.ranksDone),
                                c.ranksDone > 0 ? c.lastRankDone.GetPicoSeconds() : -1,
                                c.failed ? 1 : 0};
        mine.append(reinterpret_cast<const char*>(row), sizeof(row));
    }
    const std::vector<std::string> all = ns3::MetaRoceGatherToRoot(mine);
    if (ns3::MetaRoceGetRank() != 0)
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
        const ns3::MetaRoceCollective& c = local[i];
        metaroce::results::CollectiveRecord& r = records[i];
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

} // namespace metaroce_run

#endif // METAROCE_RUN_DISTRIBUTED_H
