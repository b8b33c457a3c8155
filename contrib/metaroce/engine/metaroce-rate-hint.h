/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#ifndef METAROCE_RATE_HINT_H
#define METAROCE_RATE_HINT_H

#include "metaroce-config.h"

#include <cstdint>
#include <vector>

/**
 * \file
 * The receiver's fair-share rate hint, carried on every MetaRoCE ACK: the receiving endpoint
 * divides its inbound capacity among the connections that recently delivered data
 * (RateHintAllocator), and each sender paces at the hint of its ACKs (RateHintFollower).
 * The equal split is our model (RCP/EQDS-style), not Meta's formula; docs/engine.md.
 */

namespace metaroce
{

class TransportConnection;

/// Receiver side: one per endpoint.
class RateHintAllocator
{
  public:
    /// Create with the endpoint's settings (rateHint, lineRateBps, rateHint* constants).
    explicit RateHintAllocator(const EndpointConfig& cfg);

    /// A data packet for \p conn arrived at \p now: it is an active sender.
    void NoteDataArrival(Time now, TransportConnection& conn);

    /// \return the fair share per active sender in Mb/s (NO_RATE_HINT when hints are off).
    uint32_t HintMbps(Time now);

    /// Stop tracking \p conn (it is being destroyed).
    void Forget(TransportConnection& conn);

  private:
    const EndpointConfig& m_cfg;                //!< the endpoint's settings
    std::vector<TransportConnection*> m_active; //!< connections that recently received data
    Time m_lastRecompute{-1};                   //!< last recomputation of the share
    uint32_t m_hintMbps;                        //!< the share, cached for rateHintPeriod
};

/// Sender side: the pacing rate one connection takes from the hints on its ACKs.
class RateHintFollower
{
  public:
    /// How a hint changed the rate.
    enum class Change : uint8_t
    {
        NONE,     //!< unchanged
        DECREASE, //!< lower, or paced where it was unpaced
        OTHER,    //!< higher, or unpaced
    };

    /// Start at \p ceilingBps, the connection's own pacing ceiling (0: unpaced).
    explicit RateHintFollower(double ceilingBps)
        : m_ceiling(ceilingBps),
          m_rate(ceilingBps)
    {
    }

    /// Apply the hint \p hintMbps of one ACK (NO_RATE_HINT: none). \return the change.
    Change OnAck(uint32_t hintMbps);

    /// \return the pacing rate in b/s (0: unpaced).
    double Rate() const
    {
        return m_rate;
    }

  private:
    double m_ceiling; //!< the connection's own ceiling, b/s (0: none)
    double m_rate;    //!< current rate, b/s (0: unpaced)
};

} // namespace metaroce

#endif // METAROCE_RATE_HINT_H
