/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#ifndef METAROCE_RTT_ESTIMATOR_H
#define METAROCE_RTT_ESTIMATOR_H

#include "metaroce-time.h"

namespace metaroce
{

/**
 * The round-trip estimate of one path and its retransmission timeout (RFC 6298): smoothed
 * RTT and variation from samples, the minimum and latest sample, and an RTO clamped to
 * [rtoMin, rtoMax] that doubles per timeout and keeps its back-off until the next sample.
 */
class RttEstimator
{
  public:
    /// Forget every sample; the RTO becomes \p initialRto.
    void Reset(Time initialRto)
    {
        *this = RttEstimator();
        m_rto = initialRto;
    }

    /// Take the sample \p sample; the RTO becomes srtt + 4 rttvar in [\p rtoMin, \p rtoMax].
    void AddSample(Time sample, Time rtoMin, Time rtoMax);

    /// Double the RTO (a timeout), up to \p rtoMax.
    void Backoff(Time rtoMax);

    /// \return true once a sample was taken.
    bool HasSample() const
    {
        return m_hasSample;
    }

    /// \return the smoothed RTT (0 before the first sample).
    Time Smoothed() const
    {
        return m_hasSample ? m_srtt : 0;
    }

    /// \return the RTT variation (0 before the first sample).
    Time Variation() const
    {
        return m_hasSample ? m_rttVar : 0;
    }

    /// \return the smallest sample (0 before the first sample).
    Time Min() const
    {
        return m_hasSample ? m_minRtt : 0;
    }

    /// \return the latest sample (0 before the first sample).
    Time Latest() const
    {
        return m_latest;
    }

    /// \return the current RTO, back-off included.
    Time Rto() const
    {
        return m_rto;
    }

  private:
    bool m_hasSample{false}; //!< a sample was taken
    Time m_srtt{0};          //!< smoothed RTT
    Time m_rttVar{0};        //!< RTT variation
    Time m_minRtt{0};        //!< smallest sample
    Time m_latest{0};        //!< most recent sample
    Time m_rto{0};           //!< current RTO (with back-off)
};

} // namespace metaroce

#endif // METAROCE_RTT_ESTIMATOR_H
