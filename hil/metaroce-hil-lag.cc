/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#include "metaroce-hil-lag.h"

#include <algorithm>
#include <cstdio>

namespace metaroce
{
namespace hil
{

LagMonitor::LagMonitor(double boundUs, uint64_t queueCapacity)
    : m_boundUs(boundUs),
      m_capacity(queueCapacity)
{
}

void
LagMonitor::Record(double simSeconds, double lagUs, uint64_t queued)
{
    ++m_report.observations;
    m_sumUs += lagUs;
    m_report.maxLagUs = std::max(m_report.maxLagUs, lagUs);
    m_report.maxQueued = std::max(m_report.maxQueued, queued);
    if (lagUs > m_boundUs)
    {
        if (m_report.overBound++ == 0)
        {
            m_report.firstOverS = simSeconds;
        }
    }
}

LagMonitor::Report
LagMonitor::GetReport() const
{
    Report r = m_report;
    r.meanLagUs = r.observations ? m_sumUs / double(r.observations) : 0.0;
    return r;
}

bool
LagMonitor::FellBehind() const
{
    return m_report.overBound > 0 || QueueFilled();
}

std::string
LagMonitor::Verdict(double slowdown) const
{
    const Report r = GetReport();
    char queue[160];
    if (m_capacity > 0)
    {
        std::snprintf(queue,
                      sizeof(queue),
                      "at most %llu frames queued of %llu a TAP holds",
                      (unsigned long long)r.maxQueued,
                      (unsigned long long)m_capacity);
    }
    else
    {
        std::snprintf(queue,
                      sizeof(queue),
                      "at most %llu frames queued",
                      (unsigned long long)r.maxQueued);
    }
    char line[640];
    if (!FellBehind())
    {
        std::snprintf(line,
                      sizeof(line),
                      "kept up: largest lag %.3f ms (bound %.3f ms), mean %.3f ms over %llu "
                      "events; %s",
                      r.maxLagUs / 1e3,
                      m_boundUs / 1e3,
                      r.meanLagUs / 1e3,
                      (unsigned long long)r.observations,
                      queue);
        return line;
    }
    char first[96] = "";
    if (r.overBound > 0)
    {
        std::snprintf(first, sizeof(first), ", first at %.3f s simulated", r.firstOverS);
    }
    std::snprintf(line,
                  sizeof(line),
                  "FELL BEHIND: the simulation ran up to %.3f ms behind the wall clock (bound "
                  "%.3f ms) in %llu of %llu events%s; %s%s. Its timing is not faithful: rerun "
                  "with --slowdown=%g (links at 1/%g of their rate) or on a less loaded machine",
                  r.maxLagUs / 1e3,
                  m_boundUs / 1e3,
                  (unsigned long long)r.overBound,
                  (unsigned long long)r.observations,
                  first,
                  queue,
                  QueueFilled() ? " (full: the TAP device dropped frames)" : "",
                  slowdown * 2,
                  slowdown * 2);
    return line;
}

} // namespace hil
} // namespace metaroce
