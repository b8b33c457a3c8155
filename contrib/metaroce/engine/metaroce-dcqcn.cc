/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#include "metaroce-dcqcn.h"

#include <algorithm>
#include <cmath>

namespace metaroce
{

DcqcnReactionPoint::DcqcnReactionPoint(const ConnectionConfig::RoceV2Options& opt,
                                       double lineRateBps)
    : m_g(opt.dcqcnG),
      m_alphaPeriod(opt.dcqcnAlphaPeriod),
      m_increasePeriod(opt.dcqcnRateIncreasePeriod),
      m_byteCounter(opt.dcqcnByteCounter),
      m_f(opt.dcqcnFastRecoverySteps),
      m_rai(opt.dcqcnRaiBps),
      m_rhai(opt.dcqcnRhaiBps),
      m_minRate(std::min(opt.dcqcnMinRateBps, lineRateBps)),
      m_lineRate(lineRateBps),
      m_rc(lineRateBps),
      m_rt(lineRateBps),
      m_alpha(opt.dcqcnInitialAlpha)
{
}

void
DcqcnReactionPoint::Advance(Time now)
{
    if (!m_started)
    {
        m_started = true;
        m_alphaBase = now;
        m_alphaSteps = 0;
    }
    if (now > m_alphaBase)
    {
        int64_t steps = (now - m_alphaBase) / m_alphaPeriod;
        if (steps > m_alphaSteps)
        {
            // alpha <- (1 - g) alpha once per K without a CNP.
            m_alpha *= std::pow(1.0 - m_g, double(steps - m_alphaSteps));
            m_alphaSteps = steps;
        }
    }
    if (!m_limited || now <= m_timerBase)
    {
        return;
    }
    int64_t due = (now - m_timerBase) / m_increasePeriod;
    while (m_limited && int64_t(m_timerEvents) < due)
    {
        ++m_timerEvents;
        Increase();
    }
    if (!m_limited)
    {
        m_timerEvents = uint32_t(std::min<int64_t>(due, UINT32_MAX)); // recovered: stop
    }
}

void
DcqcnReactionPoint::OnCnp(Time now)
{
    Advance(now);
    ++m_cnps;
    m_rt = m_rc;
    m_rc = std::max(m_minRate, m_rc * (1.0 - m_alpha / 2));
    m_alpha = (1.0 - m_g) * m_alpha + m_g;
    m_alphaBase = now;
    m_alphaSteps = 0;
    m_timerBase = now;
    m_timerEvents = 0;
    m_byteEvents = 0;
    m_bytes = 0;
    m_limited = true;
    m_stage = Stage::FAST_RECOVERY;
}

void
DcqcnReactionPoint::OnBytesSent(Time now, uint64_t bytes)
{
    Advance(now);
    if (!m_limited)
    {
        return;
    }
    m_bytes += bytes;
    while (m_limited && m_bytes >= m_byteCounter)
    {
        m_bytes -= m_byteCounter;
        ++m_byteEvents;
        Increase();
    }
}

void
DcqcnReactionPoint::Increase()
{
    // The first F events of either kind are fast recovery; past F on one counter the target
    // grows additively, past F on both hyper-additively.
    uint32_t hi = std::max(m_timerEvents, m_byteEvents);
    uint32_t lo = std::min(m_timerEvents, m_byteEvents);
    if (hi <= m_f)
    {
        m_stage = Stage::FAST_RECOVERY;
    }
    else if (lo > m_f)
    {
        m_stage = Stage::HYPER;
        m_rt += m_rhai;
    }
    else
    {
        m_stage = Stage::ADDITIVE;
        m_rt += m_rai;
    }
    m_rt = std::min(m_rt, m_lineRate);
    m_rc = std::min((m_rt + m_rc) / 2, m_lineRate);
    // Within a millionth of the line rate counts as recovered (the halving never lands
    // exactly on it).
    if (m_rt >= m_lineRate && m_rc >= m_lineRate * (1 - 1e-6))
    {
        m_rc = m_lineRate;
        m_limited = false;
        m_stage = Stage::LINE_RATE;
    }
}

} // namespace metaroce
