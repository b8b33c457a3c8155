/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

/**
 * \file
 * The requester's path index: PathSet's operations against a reference set, and the spray
 * scheduler's choice over the index against the pass over every path it replaced, on random
 * path states. (The index itself is checked against the paths after every pump of every
 * engine test: NetworkConfig::checkInvariants.)
 */

#include "metaroce-path-scheduler.h"
#include "metaroce-path.h"
#include "metaroce-random.h"

#include <gtest/gtest.h>
#include <set>
#include <vector>

namespace metaroce
{
namespace test
{
namespace
{

/// \return the reference's member at or after \p from in round-robin order (set not empty).
uint32_t
ReferenceNextFrom(const std::set<uint32_t>& ref, uint32_t from)
{
    auto it = ref.lower_bound(from);
    return it != ref.end() ? *it : *ref.begin();
}

TEST(PathSetTest, AgreesWithAReferenceSetUnderRandomOperations)
{
    Rng rng(11);
    for (int round = 0; round < 200; ++round)
    {
        PathSet s;
        PathSet other;
        std::set<uint32_t> ref;
        std::set<uint32_t> otherRef;
        for (int op = 0; op < 300; ++op)
        {
            uint32_t id = uint32_t(rng.Below(128));
            bool in = rng.Below(2) == 0;
            s.Assign(id, in);
            if (in)
            {
                ref.insert(id);
            }
            else
            {
                ref.erase(id);
            }
            uint32_t o = uint32_t(rng.Below(128));
            other.Insert(o);
            otherRef.insert(o);
            ASSERT_EQ(s.Any(), !ref.empty());
            ASSERT_TRUE(s.Contains(id) == in);
            if (ref.empty())
            {
                continue;
            }
            ASSERT_EQ(s.First(), *ref.begin());
            uint32_t from = uint32_t(rng.Below(128));
            ASSERT_EQ(s.NextFrom(from), ReferenceNextFrom(ref, from)) << "from " << from;
            PathSet both = s.Intersect(other);
            for (uint32_t p = 0; p < 128; ++p)
            {
                ASSERT_EQ(both.Contains(p), ref.count(p) && otherRef.count(p)) << "path " << p;
            }
        }
        PathSet copy;
        for (uint32_t id : ref)
        {
            copy.Insert(id);
        }
        EXPECT_TRUE(copy == s);
        if (!ref.empty())
        {
            copy.Assign(*ref.begin(), false);
            EXPECT_FALSE(copy == s);
        }
    }
}

TEST(PathSetTest, NextFromWrapsAroundAtTheWordAndSetBoundaries)
{
    PathSet s;
    s.Insert(3);
    s.Insert(64);
    s.Insert(127);
    EXPECT_EQ(s.NextFrom(0), 3u);
    EXPECT_EQ(s.NextFrom(3), 3u);
    EXPECT_EQ(s.NextFrom(4), 64u);
    EXPECT_EQ(s.NextFrom(63), 64u);
    EXPECT_EQ(s.NextFrom(65), 127u);
    EXPECT_EQ(s.NextFrom(127), 127u);
    s.Assign(127, false);
    EXPECT_EQ(s.NextFrom(65), 3u); // wrapped
    s.Assign(3, false);
    EXPECT_EQ(s.NextFrom(65), 64u); // wrapped to the upper word
}

/// The spray rule as a pass over every path (the code the index replaced).
class ReferenceSpray
{
  public:
    int Select(const std::vector<PathState>& paths, Time now)
    {
        size_t n = paths.size();
        int fallback = -1;
        for (size_t k = 0; k < n; ++k)
        {
            size_t i = (m_cursor + k) % n;
            if (!paths[i].HasRoom())
            {
                continue;
            }
            const PathState& p = paths[i];
            if (p.lastEcn >= 0 && now - p.lastEcn < p.rtt.Smoothed())
            {
                if (fallback < 0)
                {
                    fallback = int(i);
                }
                continue;
            }
            m_cursor = (i + 1) % n;
            return int(i);
        }
        if (fallback >= 0)
        {
            m_cursor = (size_t(fallback) + 1) % n;
        }
        return fallback;
    }

  private:
    size_t m_cursor{0};
};

TEST(PathSchedulerTest, SprayOverTheIndexChoosesAsThePassOverEveryPath)
{
    Rng rng(5);
    const uint32_t counts[] = {1, 2, 7, 8, 63, 64, 65, 128};
    for (uint32_t n : counts)
    {
        std::vector<PathState> paths(n);
        for (uint32_t i = 0; i < n; ++i)
        {
            paths[i].id = uint8_t(i);
            paths[i].rtt.AddSample(MicroSeconds(5), MicroSeconds(1), MilliSeconds(1));
        }
        auto spray = CreatePathScheduler("spray");
        ASSERT_NE(spray, nullptr);
        ReferenceSpray reference;
        Time now = MicroSeconds(100);
        for (int step = 0; step < 3000; ++step)
        {
            // Change a few paths: status, window, packets in flight, sequence space, marks.
            for (int c = 0; c < 3; ++c)
            {
                PathState& p = paths[rng.Below(n)];
                p.status = rng.Below(6) == 0
                               ? (rng.Below(2) ? PathStatus::SUSPECT : PathStatus::FAILED)
                               : PathStatus::ACTIVE;
                p.cwnd = 1 + double(rng.Below(8)) + rng.Uniform();
                p.inflight = uint32_t(rng.Below(10));
                p.ackedPsn = 0;
                p.nextPsn = rng.Below(10) == 0 ? p.sackWindow : uint32_t(rng.Below(20));
                p.lastEcn = rng.Below(3) == 0 ? now - MicroSeconds(int64_t(rng.Below(10))) : -1;
            }
            PathSet withRoom;
            for (const PathState& p : paths)
            {
                withRoom.Assign(p.id, p.HasRoom());
            }
            int expected = reference.Select(paths, now);
            ASSERT_EQ(spray->Select(paths, withRoom, now), expected)
                << n << " paths, step " << step;
            now += NanoSeconds(330);
        }
    }
}

} // namespace
} // namespace test
} // namespace metaroce
