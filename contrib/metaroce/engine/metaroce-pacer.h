/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#ifndef METAROCE_PACER_H
#define METAROCE_PACER_H

#include "metaroce-time.h"

#include <algorithm>
#include <cstdint>

namespace metaroce
{

/**
 * Spaces a connection's data packets at a rate, both transports' way: after each packet the
 * next may leave one serialisation time at the current rate later (no token bucket, no burst
 * allowance; a new rate applies from the next packet on).
 */
class Pacer
{
  public:
    /// \return true if a packet may leave at \p now.
    bool MayTransmit(Time now) const
    {
        return now >= m_next;
    }

    /// A packet of \p wireBytes (on the wire) left at \p now, paced at \p rateBps (> 0).
    void OnTransmit(Time now, uint64_t wireBytes, double rateBps)
    {
        m_next = std::max(now, m_next) + TransmissionTime(wireBytes, rateBps);
    }

    /// \return when the next packet may leave.
    Time NextRelease() const
    {
        return m_next;
    }

  private:
    Time m_next{0}; //!< earliest time of the next packet
};

} // namespace metaroce

#endif // METAROCE_PACER_H
