/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#ifndef METAROCE_HIL_TIMERS_H
#define METAROCE_HIL_TIMERS_H

#include "metaroce-config.h"
#include "metaroce-hil-clock.h"
#include "metaroce-time.h"

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <functional>
#include <string>
#include <vector>

/**
 * \file
 * Engine timer settings for software endpoints on real links. The engine's defaults are
 * datacenter timers (100 us RTO floor, 200 us initial RTO, IRN's fixed 100/320 us). A
 * user-space endpoint sees scheduling delays of milliseconds, and a real path (a forwarder, a
 * WAN emulator, a slow lab switch) may have a round trip of 1-10 ms before the engine has taken
 * a single RTT sample. The HIL tools therefore set the timers of every connection they create
 * from a floor (--rto-min-us) and the round trip the kernel measured on the control connection
 * to the same peer (TCP_INFO): see docs/hil.md, "Timers on real links".
 */

namespace metaroce
{
namespace hil
{

/// What the timers of a connection are derived from.
struct LinkTimerInputs
{
    Time rtoFloor{MilliSeconds(1)}; //!< --rto-min-us: the RTO never goes below it
    Time pathRtt{0};                //!< measured round trip to the peer (0: unknown)
    /// How late this host runs a process whose sleep has ended (MeasureSchedulingDelay()):
    /// a floor below twice that fires on the host's own stalls.
    Time schedulingDelay{0};
    Time connectionTimeout{MilliSeconds(2000)}; //!< --conn-timeout-ms
    /// --rto-initial-ms: the least RTO before the first RTT sample. The first flight of a
    /// session reaches a peer that has just gone back to sleep after the control handshake,
    /// and on a loaded host that peer read it up to 7.6 ms after it was sent (docs/hil.md).
    Time rtoInitialMin{MilliSeconds(10)};
};

/**
 * Set the timer fields of \p cfg for a software endpoint:
 * - rtoMin (and rtoFloor, the "adaptive" RTO policy's floor) = max(the floor, 2 x the host's
 *   scheduling delay);
 * - rtoInitial = max(2 x floor, 3 x path RTT, rtoInitialMin): the first packets of a
 *   connection on a 10 ms path, or to a peer still waking up, must not time out before the
 *   first acknowledgement can return;
 * - rtoMax = max(100 ms, 4 x rtoInitial);
 * - probeInterval = max(floor, path RTT);
 * - rackReorderMin (RACK's reordering window, at least) = floor / 2: a batching port and a
 *   stalling host reorder the paths by that much;
 * - connectionTimeout = the option;
 * - RoCEv2 IRN: RTO_low = max(floor, 2 x path RTT), RTO_high = 3.2 x RTO_low (the IRN paper's
 *   ratio), with exponential back-off on timeouts without progress (up to the Local ACK
 *   Timeout), so that a round trip grown above them does not spend the retry budget;
 * - lossDetection "sack-gap" and tailProbe "tlp": the recovery measured on real links (the
 *   simulator's defaults, "rack-confirm" and "tlp-rto", are not measured there yet).
 */
void ApplyLinkTimers(ConnectionConfig& cfg, const LinkTimerInputs& in);

/// \return "rto min 1.000 ms, initial 12.000 ms, ..." for logs.
std::string DescribeLinkTimers(const ConnectionConfig& cfg);

/**
 * Measure how late this host wakes a process: \p samples sleeps of \p sleep each, and how
 * much longer than asked each took. \return the 90th percentile of the excess (about
 * samples x sleep of wall time; the timer slack should already be set).
 */
Time MeasureSchedulingDelay(int samples = 16, Time sleep = MicroSeconds(1000));

/// How long a measured stall counts in the host delay by default (--host-delay-window-ms): in
/// alternated veth runs 4 s left no spurious timeout where 1 s left some (docs/benchmarks.md).
constexpr Time DEFAULT_HOST_DELAY_WINDOW = MilliSeconds(4000);

/**
 * The host delay of a software endpoint during a run: the largest lateness of the I/O
 * thread's wake-ups over the last half to whole window (two buckets of half a window each).
 * A peer on a host that stalled this long acknowledges that much later, and this host reads
 * the acknowledgements that much later, so its retransmission timers wait that much longer
 * (Endpoint::SetHostDelay; docs/hil.md, "Timers on real links"). A stall is forgotten one
 * window after it ended.
 */
class HostDelayEstimator
{
  public:
    /// \param window how long a stall is remembered (at least two picoseconds)
    explicit HostDelayEstimator(Time window);

    /// Add a wake-up at \p now that came \p late after its deadline (negative counts as 0).
    /// Times must not go backwards.
    void AddSample(Time now, Time late);
    /// \return the largest lateness of the samples of the last half to whole window at \p now.
    Time Estimate(Time now) const;

    /// \return the largest lateness ever added.
    Time Largest() const
    {
        return m_largest;
    }

    /// \return how many samples were added.
    uint64_t Samples() const
    {
        return m_samples;
    }

  private:
    Time m_half;          //!< bucket length
    int64_t m_bucket{-1}; //!< index of the current bucket (-1: none yet)
    Time m_current{0};    //!< the largest lateness in the current bucket
    Time m_previous{0};   //!< the largest lateness in the bucket before it
    Time m_largest{0};    //!< over the whole run
    uint64_t m_samples{0};
};

/**
 * The host delays peers report (ControlChannel::SetHostDelayExchange), one per peer: each
 * peer's latest report counts until \p expiry after it, so that a peer whose delay fell is
 * believed at once (its report is already the largest of its own last window), and a peer
 * gone silent or forgotten counts no more.
 */
class PeerHostDelays
{
  public:
    /// \param expiry how long a report counts
    explicit PeerHostDelays(Time expiry);

    /// Peer \p peer reported \p delay at \p now (negative counts as 0).
    void Set(const void* peer, Time now, Time delay);
    /// Forget peer \p peer (its session ended).
    void Forget(const void* peer);
    /// \return the largest report that still counts at \p now (0: none).
    Time Estimate(Time now) const;

    /// \return the largest report ever received.
    Time Largest() const
    {
        return m_largest;
    }

    /// \return how many reports were received.
    uint64_t Reports() const
    {
        return m_reports;
    }

  private:
    /// One peer's latest report.
    struct Report
    {
        const void* peer; //!< whose
        Time at;          //!< when
        Time delay;       //!< what
    };

    Time m_expiry;                //!< how long a report counts
    std::vector<Report> m_latest; //!< by peer (a few)
    Time m_largest{0};            //!< over the run
    uint64_t m_reports{0};        //!< received
};

/**
 * Measures the host delay of the thread that runs \p io: a timer of \p period set again and
 * again on it, and any other wake-up the owner reports (AddSample()), go into a
 * HostDelayEstimator of \p window; after each sample \p update gets the estimate. Used by
 * EngineHost (metaroce-perf, metaroce-hild) and the drop-in libibverbs.
 */
class HostDelayProbe
{
  public:
    /// Receives this host's delay after every sample (on the io_context's thread).
    using Update = std::function<void(Time own)>;

    HostDelayProbe(boost::asio::io_context& io,
                   const HostClock& clock,
                   Update update,
                   Time period = MilliSeconds(1),
                   Time window = DEFAULT_HOST_DELAY_WINDOW);
    HostDelayProbe(const HostDelayProbe&) = delete;
    HostDelayProbe& operator=(const HostDelayProbe&) = delete;

    /// Start the probe timer (at most once; not after Stop()).
    void Start();
    /// Stop the probe timer; no update is made afterwards.
    void Stop();
    /// Add a wake-up that came \p late after its deadline, and update.
    void AddSample(Time late);
    /// \return this host's delay now.
    Time Own() const;

    /// \return the estimator.
    const HostDelayEstimator& Estimator() const
    {
        return m_estimator;
    }

  private:
    void DoWait();

    const HostClock& m_clock;          //!< engine time
    boost::asio::steady_timer m_timer; //!< the probe's wake-ups
    Update m_update;                   //!< gets the estimate
    Time m_period;                     //!< between wake-ups
    Time m_deadline{0};                //!< of the pending wake-up
    HostDelayEstimator m_estimator;    //!< the lateness
    bool m_started{false};             //!< Start() was called
    bool m_stopped{false};             //!< Stop() was called
};

/// \return the kernel's smoothed round-trip time of TCP socket \p fd (TCP_INFO), 0 if unknown.
Time TcpSmoothedRtt(int fd);

} // namespace hil
} // namespace metaroce

#endif // METAROCE_HIL_TIMERS_H
