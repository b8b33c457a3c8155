/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#include "metaroce-rtt-estimator.h"

#include <algorithm>

namespace metaroce
{

void
RttEstimator::AddSample(Time sample, Time rtoMin, Time rtoMax)
{
    m_latest = sample;
    if (!m_hasSample)
    {
        m_hasSample = true;
        m_srtt = sample;
        m_rttVar = sample / 2;
        m_minRtt = sample;
    }
    else
    {
        Time err = m_srtt > sample ? m_srtt - sample : sample - m_srtt;
        m_rttVar = (3 * m_rttVar + err) / 4;
        m_srtt = (7 * m_srtt + sample) / 8;
        m_minRtt = std::min(m_minRtt, sample);
    }
    m_rto = std::clamp(m_srtt + 4 * m_rttVar, rtoMin, rtoMax);
}

void
RttEstimator::Backoff(Time rtoMax)
{
    m_rto = std::min(m_rto * 2, rtoMax);
}

} // namespace metaroce
