/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#ifndef METAROCE_OBSERVER_H
#define METAROCE_OBSERVER_H

#include "metaroce-path.h"

#include <cstdint>

namespace metaroce
{

/// What happened to a path.
enum class PathEvent : uint8_t
{
    WINDOW,    //!< window changed
    RTT,       //!< new RTT sample
    LOSS,      //!< packets declared lost from a SACK gap
    TIMEOUT,   //!< retransmission timeout
    FAILED,    //!< declared failed (new source port, probing)
    RECOVERED, //!< probe answered: back in service
    SUSPECT,   //!< taken out on evidence from the other paths, probed
};

/// \return the name of \p e.
const char* PathEventName(PathEvent e);

/**
 * Observer of engine internals, for traces and logs (adapters turn calls into ns-3 trace
 * sources or spdlog lines). Every method has an empty default; the engine calls them
 * synchronously and the observer must not call back into the engine.
 */
class EngineObserver
{
  public:
    virtual ~EngineObserver() = default;

    /// \p event happened on \p path of connection \p qpn at \p now.
    virtual void OnPathEvent(Time /*now*/,
                             uint32_t /*qpn*/,
                             PathEvent /*event*/,
                             const PathState& /*path*/)
    {
    }

    /// The sending rate limit of connection \p qpn changed (0 = unlimited).
    virtual void OnRateChange(Time /*now*/, uint32_t /*qpn*/, double /*bitsPerSecond*/)
    {
    }
};

} // namespace metaroce

#endif // METAROCE_OBSERVER_H
