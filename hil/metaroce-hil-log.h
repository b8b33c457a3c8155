/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#ifndef METAROCE_HIL_LOG_H
#define METAROCE_HIL_LOG_H

#include "metaroce-time.h"

#include <cstdint>
#include <string>

/**
 * \file
 * Logging helpers: logger setup and a rate limiter for lines about dropped input, so that a
 * stream of garbage costs one log line per second instead of one per frame.
 */

namespace metaroce
{
namespace hil
{

/**
 * Set up the default spdlog logger (stderr, "[time] [level] message").
 * \param level "trace", "debug", "info", "warn", "error" or "off"
 */
void SetupLogging(const std::string& level);

/// Allows one event per period and counts the ones it suppressed in between.
class RateLimiter
{
  public:
    /// Allow one event per \p period.
    explicit RateLimiter(Time period = MilliSeconds(1000))
        : m_period(period)
    {
    }

    /**
     * Record an event at \p now.
     * \param[out] suppressed events suppressed since the last allowed one (when allowed)
     * \return true if the caller should log it
     */
    bool Allow(Time now, uint64_t& suppressed)
    {
        if (m_last >= 0 && now - m_last < m_period)
        {
            ++m_suppressed;
            return false;
        }
        m_last = now;
        suppressed = m_suppressed;
        m_suppressed = 0;
        return true;
    }

  private:
    Time m_period;            //!< minimum time between allowed events
    Time m_last{-1};          //!< last allowed event
    uint64_t m_suppressed{0}; //!< suppressed since then
};

/// \return "a.b.c.d" for the host-order IPv4 address \p ip.
std::string Ipv4ToString(uint32_t ip);

/// Parse "a.b.c.d". \return false if \p text is not an IPv4 address.
bool ParseIpv4(const std::string& text, uint32_t& ip);

} // namespace hil
} // namespace metaroce

#endif // METAROCE_HIL_LOG_H
