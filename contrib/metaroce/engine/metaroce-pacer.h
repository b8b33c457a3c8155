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
 * next may leave one serialisation time at the current rate later (no token bucket; a new rate
 * applies from the next packet on).
 *
 * A slack (0 in the simulator) lets a host whose timers fire tens of microseconds late keep the
 * rate: a packet may leave up to the slack before its time, and a late wake-up is made up for
 * up to the slack (the next time counts from at most the slack before now). So a connection
 * that wakes once per slack sends a slack's worth of packets back to back, and the largest
 * burst after a pause is two slacks' worth. The early release is what the `timer_slack` of
 * Linux's fq qdisc does; the make-up for lateness is ours.
 */
class Pacer
{
  public:
    /// Let packets leave up to \p slack (>= 0) early and make up lateness up to \p slack.
    void SetSlack(Time slack)
    {
        m_slack = std::max<Time>(slack, 0);
    }

    /// \return true if a packet may leave at \p now.
    bool MayTransmit(Time now) const
    {
        return now + m_slack >= m_next;
    }

    /// A packet of \p wireBytes (on the wire) left at \p now, paced at \p rateBps (> 0).
    void OnTransmit(Time now, uint64_t wireBytes, double rateBps)
    {
        m_next = std::max(now - m_slack, m_next) + TransmissionTime(wireBytes, rateBps);
    }

    /// \return when the next packet is due: the time to wake up for it if MayTransmit is false.
    Time NextRelease() const
    {
        return m_next;
    }

  private:
    Time m_next{0};  //!< when the next packet is due
    Time m_slack{0}; //!< how early a packet may leave, and how much lateness is made up
};

} // namespace metaroce

#endif // METAROCE_PACER_H
