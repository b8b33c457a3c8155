/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#include "metaroce-hil-timers.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <thread>
#include <vector>

namespace metaroce
{
namespace hil
{

void
ApplyLinkTimers(ConnectionConfig& cfg, const LinkTimerInputs& in)
{
    const Time floor = std::max<Time>({in.rtoFloor, 2 * in.schedulingDelay, MicroSeconds(1)});
    const Time rtt = std::max<Time>(in.pathRtt, 0);
    cfg.rtoMin = floor;
    cfg.rtoFloor = floor; // the "adaptive" RTO policy's floor (issue 16): the same bound
    // RACK's reordering window (issue 16) is a fraction of the minimum RTT, microseconds on a
    // veth; a batching port sends a flush socket by socket (path by path) and a stalled host
    // delays whole bursts, so packets of different paths reach the peer up to that much out
    // of their send order. A window of half the floor keeps them from counting as lost.
    cfg.rackReorderMin = std::max(cfg.rackReorderMin, floor / 2);
    cfg.rtoInitial = std::max({2 * floor, 3 * rtt, in.rtoInitialMin});
    cfg.rtoMax = std::max<Time>(MilliSeconds(100), 4 * cfg.rtoInitial);
    cfg.probeInterval = std::max(floor, rtt);
    cfg.connectionTimeout = in.connectionTimeout;
    cfg.rocev2.irnRtoLow = std::max(floor, 2 * rtt);
    cfg.rocev2.irnRtoHigh = cfg.rocev2.irnRtoLow * 16 / 5;
    cfg.rocev2.irnRtoBackoff = true;
    // Real links keep the recovery policies measured on them (docs/hil.md): the simulator's
    // defaults since 2026-12-06 ("rack-confirm", "tlp-rto") judge paths by time, which on a
    // host that stalls for milliseconds is not measured yet.
    cfg.lossDetection = "sack-gap";
    cfg.tailProbe = "tlp";
}

std::string
DescribeLinkTimers(const ConnectionConfig& cfg)
{
    char text[256];
    std::snprintf(text,
                  sizeof(text),
                  "rto min %.3f ms, initial %.3f ms, max %.1f ms; probe %.3f ms; connection "
                  "timeout %.0f ms; irn %.3f/%.3f ms with back-off",
                  double(cfg.rtoMin) / 1e9,
                  double(cfg.rtoInitial) / 1e9,
                  double(cfg.rtoMax) / 1e9,
                  double(cfg.probeInterval) / 1e9,
                  double(cfg.connectionTimeout) / 1e9,
                  double(cfg.rocev2.irnRtoLow) / 1e9,
                  double(cfg.rocev2.irnRtoHigh) / 1e9);
    return text;
}

Time
MeasureSchedulingDelay(int samples, Time sleep)
{
    std::vector<Time> excess;
    const auto asked = std::chrono::nanoseconds(sleep / 1000);
    for (int i = 0; i < samples; ++i)
    {
        auto start = std::chrono::steady_clock::now();
        std::this_thread::sleep_for(asked);
        auto took = std::chrono::steady_clock::now() - start;
        excess.push_back(
            std::max<Time>(0, Time(std::chrono::nanoseconds(took - asked).count()) * 1000));
    }
    if (excess.empty())
    {
        return 0;
    }
    std::sort(excess.begin(), excess.end());
    return excess[(excess.size() * 9) / 10 < excess.size() ? (excess.size() * 9) / 10
                                                           : excess.size() - 1];
}

HostDelayEstimator::HostDelayEstimator(Time window)
    : m_half(std::max<Time>(window / 2, 1))
{
}

void
HostDelayEstimator::AddSample(Time now, Time late)
{
    late = std::max<Time>(late, 0);
    int64_t bucket = now / m_half;
    if (bucket != m_bucket)
    {
        m_previous = bucket == m_bucket + 1 ? m_current : 0;
        m_current = 0;
        m_bucket = bucket;
    }
    m_current = std::max(m_current, late);
    m_largest = std::max(m_largest, late);
    ++m_samples;
}

Time
HostDelayEstimator::Estimate(Time now) const
{
    int64_t bucket = now / m_half;
    if (m_bucket < 0 || bucket > m_bucket + 1)
    {
        return 0;
    }
    return bucket == m_bucket ? std::max(m_current, m_previous) : m_current;
}

PeerHostDelays::PeerHostDelays(Time expiry)
    : m_expiry(expiry)
{
}

void
PeerHostDelays::Set(const void* peer, Time now, Time delay)
{
    delay = std::max<Time>(delay, 0);
    ++m_reports;
    m_largest = std::max(m_largest, delay);
    for (Report& r : m_latest)
    {
        if (r.peer == peer)
        {
            r.at = now;
            r.delay = delay;
            return;
        }
    }
    m_latest.push_back(Report{peer, now, delay});
}

void
PeerHostDelays::Forget(const void* peer)
{
    m_latest.erase(std::remove_if(m_latest.begin(),
                                  m_latest.end(),
                                  [peer](const Report& r) { return r.peer == peer; }),
                   m_latest.end());
}

Time
PeerHostDelays::Estimate(Time now) const
{
    Time largest = 0;
    for (const Report& r : m_latest)
    {
        if (now - r.at < m_expiry)
        {
            largest = std::max(largest, r.delay);
        }
    }
    return largest;
}

HostDelayProbe::HostDelayProbe(boost::asio::io_context& io,
                               const HostClock& clock,
                               Update update,
                               Time period,
                               Time window)
    : m_clock(clock),
      m_timer(io),
      m_update(std::move(update)),
      m_period(std::max<Time>(period, MicroSeconds(100))),
      m_estimator(window)
{
}

void
HostDelayProbe::Start()
{
    if (m_started || m_stopped)
    {
        return;
    }
    m_started = true;
    DoWait();
}

void
HostDelayProbe::Stop()
{
    m_stopped = true;
    m_timer.cancel();
}

void
HostDelayProbe::DoWait()
{
    m_deadline = m_clock.Now() + m_period;
    m_timer.expires_at(m_clock.ToSteady(m_deadline));
    m_timer.async_wait([this](const boost::system::error_code& error) {
        if (error || m_stopped)
        {
            return;
        }
        AddSample(m_clock.Now() - m_deadline);
        DoWait();
    });
}

void
HostDelayProbe::AddSample(Time late)
{
    if (m_stopped)
    {
        return;
    }
    Time now = m_clock.Now();
    m_estimator.AddSample(now, late);
    if (m_update)
    {
        m_update(m_estimator.Estimate(now));
    }
}

Time
HostDelayProbe::Own() const
{
    return m_estimator.Estimate(m_clock.Now());
}

Time
TcpSmoothedRtt(int fd)
{
    tcp_info info{};
    socklen_t len = sizeof(info);
    if (fd < 0 || getsockopt(fd, IPPROTO_TCP, TCP_INFO, &info, &len) != 0)
    {
        return 0;
    }
    return MicroSeconds(info.tcpi_rtt);
}

} // namespace hil
} // namespace metaroce
