/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#include "metaroce-path-scheduler.h"

namespace metaroce
{

namespace
{

/// \return true if \p path echoed ECN within its last smoothed RTT.
bool
RecentlyMarked(const PathState& path, Time now)
{
    return path.lastEcn >= 0 && now - path.lastEcn < path.rtt.Smoothed();
}

/// Packet spraying: round robin over paths with room, preferring unmarked ones.
class SprayScheduler : public PathScheduler
{
  public:
    const char* Name() const override
    {
        return "spray";
    }

    int Select(const std::vector<PathState>& paths, const PathSet& withRoom, Time now) override
    {
        // The paths with room in round-robin order from the cursor (the set's members are
        // below paths.size()).
        if (!withRoom.Any())
        {
            return -1;
        }
        const uint32_t n = uint32_t(paths.size());
        const uint32_t first = withRoom.NextFrom(m_cursor);
        int fallback = -1;
        uint32_t i = first;
        do
        {
            if (!RecentlyMarked(paths[i], now))
            {
                m_cursor = (i + 1) % n;
                return int(i);
            }
            if (fallback < 0)
            {
                fallback = int(i);
            }
            i = withRoom.NextFrom((i + 1) % n);
        } while (i != first);
        m_cursor = (uint32_t(fallback) + 1) % n;
        return fallback;
    }

  private:
    uint32_t m_cursor{0}; //!< next path to consider
};

/// One path at a time: the lowest-numbered path that is not failed.
class SingleScheduler : public PathScheduler
{
  public:
    const char* Name() const override
    {
        return "single";
    }

    uint32_t PathsInUse(uint32_t) const override
    {
        return 1;
    }

    int Select(const std::vector<PathState>& paths, const PathSet&, Time) override
    {
        for (size_t i = 0; i < paths.size(); ++i)
        {
            if (paths[i].Usable())
            {
                return paths[i].HasRoom() ? int(i) : -1;
            }
        }
        return -1;
    }
};

} // namespace

std::unique_ptr<PathScheduler>
CreatePathScheduler(const std::string& name)
{
    if (name == "spray")
    {
        return std::make_unique<SprayScheduler>();
    }
    if (name == "single")
    {
        return std::make_unique<SingleScheduler>();
    }
    return nullptr;
}

} // namespace metaroce
