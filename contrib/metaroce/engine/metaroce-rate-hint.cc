/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#include "metaroce-rate-hint.h"

#include "metaroce-transport.h"

#include <algorithm>

namespace metaroce
{

RateHintAllocator::RateHintAllocator(const EndpointConfig& cfg)
    : m_cfg(cfg),
      m_hintMbps(Mah::NO_RATE_HINT)
{
}

void
RateHintAllocator::NoteDataArrival(Time now, TransportConnection& conn)
{
    conn.lastDataRx = now;
    if (!conn.activeSender)
    {
        conn.activeSender = true;
        m_active.push_back(&conn);
        m_lastRecompute = -1; // a new sender changes the share at once
    }
}

uint32_t
RateHintAllocator::HintMbps(Time now)
{
    if (!m_cfg.rateHint)
    {
        return Mah::NO_RATE_HINT;
    }
    if (m_lastRecompute < 0 || now - m_lastRecompute >= m_cfg.rateHintPeriod)
    {
        m_lastRecompute = now;
        auto idle = [&](TransportConnection* c) {
            if (now - c->lastDataRx > m_cfg.rateHintActiveTime)
            {
                c->activeSender = false;
                return true;
            }
            return false;
        };
        m_active.erase(std::remove_if(m_active.begin(), m_active.end(), idle), m_active.end());
        size_t n = std::max<size_t>(1, m_active.size());
        double share = m_cfg.lineRateBps * m_cfg.rateHintUtilization / double(n) / 1e6;
        m_hintMbps = uint32_t(std::clamp(share, 1.0, double(Mah::NO_RATE_HINT - 1)));
    }
    return m_hintMbps;
}

void
RateHintAllocator::Forget(TransportConnection& conn)
{
    m_active.erase(std::remove(m_active.begin(), m_active.end(), &conn), m_active.end());
    conn.activeSender = false;
}

RateHintFollower::Change
RateHintFollower::OnAck(uint32_t hintMbps)
{
    double rate = m_ceiling;
    if (hintMbps != Mah::NO_RATE_HINT)
    {
        double hinted = double(hintMbps) * 1e6;
        rate = rate > 0 ? std::min(rate, hinted) : hinted;
    }
    if (rate == m_rate)
    {
        return Change::NONE;
    }
    bool decrease = rate > 0 && (m_rate == 0 || rate < m_rate);
    m_rate = rate;
    return decrease ? Change::DECREASE : Change::OTHER;
}

} // namespace metaroce
