/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#ifndef METAROCE_PATH_SCHEDULER_H
#define METAROCE_PATH_SCHEDULER_H

#include "metaroce-path.h"

#include <memory>
#include <string>
#include <vector>

namespace metaroce
{

/// Chooses the path for the next new packet of a connection (one instance per connection).
class PathScheduler
{
  public:
    virtual ~PathScheduler() = default;
    /// \return the name the scheduler is chosen by.
    virtual const char* Name() const = 0;
    /**
     * \return the index of the path to use, or -1 if no path has room. \p withRoom holds
     * exactly the paths whose HasRoom() is true (the requester keeps it), so that a choice
     * need not visit the paths without room.
     */
    virtual int Select(const std::vector<PathState>& paths, const PathSet& withRoom, Time now) = 0;

    /// \return how many of a connection's \p numPaths paths carry its packets at a time.
    virtual uint32_t PathsInUse(uint32_t numPaths) const
    {
        return numPaths;
    }
};

/**
 * \return the scheduler called \p name, or nullptr if unknown:
 * "spray" (packet-by-packet round robin over paths with room, skipping paths that echoed
 * ECN within their last RTT while clear paths have room) or "single" (the lowest-numbered
 * usable path: one path at a time, as a single-path transport would).
 */
std::unique_ptr<PathScheduler> CreatePathScheduler(const std::string& name);

} // namespace metaroce

#endif // METAROCE_PATH_SCHEDULER_H
