/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#ifndef METAROCE_HIL_CLOCK_H
#define METAROCE_HIL_CLOCK_H

#include "metaroce-time.h"

#include <chrono>
#include <cstdint>

/**
 * \file
 * The only place the HIL layer reads clocks: engine time (picoseconds) from steady_clock, and
 * wall-clock stamps (pcap) derived from one wall-clock reading at start.
 */

namespace metaroce
{
namespace hil
{

/**
 * The pacer's slack on a real host (EndpointConfig::pacingSlack, --pacing-slack-us,
 * METAROCE_VERBS_PACING_SLACK_US), microseconds. A software host wakes tens of microseconds
 * late, so without a slack a paced connection sends one packet per wake-up: on loopback
 * MetaRoCE, paced at its 100 Gb/s rate hint, reached 2.8 Gb/s with none and 7.4-7.6 Gb/s with
 * 10-100 us (docs/benchmarks.md, "The pacer's slack on a real host").
 */
constexpr uint32_t DEFAULT_PACING_SLACK_US = 50;

/// Converts between std::chrono clocks and engine Time.
class HostClock
{
  public:
    /// Steady clock used for timers.
    using Steady = std::chrono::steady_clock;

    /// Start the clock: engine time 0 is now.
    HostClock()
        : m_origin(Steady::now()),
          m_wallOriginNs(std::chrono::duration_cast<std::chrono::nanoseconds>(
                             std::chrono::system_clock::now().time_since_epoch())
                             .count())
    {
    }

    /// \return the engine time now.
    Time Now() const
    {
        return ToEngine(Steady::now());
    }

    /// \return \p t as engine time.
    Time ToEngine(Steady::time_point t) const
    {
        return std::chrono::duration_cast<std::chrono::nanoseconds>(t - m_origin).count() * 1000;
    }

    /// \return engine time \p t as a steady_clock time point (TIME_INFINITE: far future).
    Steady::time_point ToSteady(Time t) const
    {
        if (t == TIME_INFINITE)
        {
            return Steady::time_point::max();
        }
        return m_origin + std::chrono::nanoseconds(t / 1000);
    }

    /// \return nanoseconds since the Unix epoch at engine time \p t (for capture files).
    int64_t WallNanoseconds(Time t) const
    {
        return m_wallOriginNs + t / 1000;
    }

  private:
    Steady::time_point m_origin; //!< engine time 0
    int64_t m_wallOriginNs;      //!< wall clock at engine time 0, ns since the epoch
};

} // namespace hil
} // namespace metaroce

#endif // METAROCE_HIL_CLOCK_H
