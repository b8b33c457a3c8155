/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#ifndef METAROCE_HIL_LAG_H
#define METAROCE_HIL_LAG_H

#include <cstdint>
#include <string>

/**
 * \file
 * How far a real-time simulation fell behind the wall clock, judged against a bound. The
 * mixed-run fabric records every frame it exchanges with a TAP device and a periodic tick: how
 * late the event ran (wall clock minus simulated time) and how many frames its TAP device had
 * read but the simulator had not handled yet. No clock is read here: the caller measures.
 */

namespace metaroce
{
namespace hil
{

/// The lag of a real-time simulation, against a bound.
class LagMonitor
{
  public:
    /// What was observed.
    struct Report
    {
        uint64_t observations{0}; //!< events recorded
        double maxLagUs{0};       //!< largest lag
        double meanLagUs{0};      //!< mean lag
        uint64_t maxQueued{0};    //!< most frames queued behind an event
        uint64_t overBound{0};    //!< events that ran later than the bound
        double firstOverS{-1};    //!< simulated time of the first of them (-1: none)
    };

    /**
     * \param boundUs the largest lag, microseconds, at which the run still counts as real time
     * \param queueCapacity frames a TAP device queues before it drops frames (0: unknown)
     */
    LagMonitor(double boundUs, uint64_t queueCapacity);

    /**
     * Record one event.
     * \param simSeconds its simulated time
     * \param lagUs how long after its wall-clock time it ran
     * \param queued frames read from a TAP device and not yet handled when it ran
     */
    void Record(double simSeconds, double lagUs, uint64_t queued);

    /// \return what was observed so far.
    Report GetReport() const;

    /// \return true if some event ran later than the bound, or a TAP queue filled up.
    bool FellBehind() const;

    /// \return true if a TAP device's queue reached its capacity (it drops frames there).
    bool QueueFilled() const
    {
        return m_capacity > 0 && m_report.maxQueued >= m_capacity;
    }

    /**
     * \param slowdown the run's --slowdown factor
     * \return one line saying whether the run kept up, with the figures, and what to do if not
     */
    std::string Verdict(double slowdown) const;

  private:
    double m_boundUs;    //!< the bound
    uint64_t m_capacity; //!< TAP queue capacity
    double m_sumUs{0};   //!< sum of lags
    Report m_report;     //!< maxima and counts
};

} // namespace hil
} // namespace metaroce

#endif // METAROCE_HIL_LAG_H
