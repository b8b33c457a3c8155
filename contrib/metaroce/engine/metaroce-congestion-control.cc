/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#include "metaroce-congestion-control.h"

#include <algorithm>
#include <limits>

namespace metaroce
{

namespace
{

/**
 * What the AIMD-family strategies share: window growth (slow start on long paths, else
 * additive increase), multiplicative decrease at most once per smoothed RTT, and the reaction
 * to loss and timeouts.
 */
class AimdFamily : public CongestionControl
{
  public:
    void OnLoss(PathState& path, Time now, const ConnectionConfig& cfg) override
    {
        if (cfg.lossWindowFactor < 1 && DecreaseAllowed(path, now))
        {
            Decrease(path, cfg.lossWindowFactor, now, cfg);
        }
    }

    void OnTimeout(PathState& path, const ConnectionConfig& cfg) override
    {
        // (Read only by slow start: a long path grows back to part of what it had, as TCP
        // after an RTO, instead of by aimdIncrease per round trip from minPathWindow. A
        // timeout before the path's first RTT sample says that the RTO, not yet fitted to the
        // path, was too short, nothing of the path's capacity: it leaves the end alone.)
        if (path.cwnd > cfg.minPathWindow && path.rtt.HasSample())
        {
            m_slowStartEnd = std::max(cfg.minPathWindow, path.cwnd * cfg.aimdDecrease);
        }
        path.cwnd = cfg.minPathWindow;
        m_timedOut = true;
    }

  protected:
    /// \return true if a decrease is allowed: at most one per smoothed RTT.
    bool DecreaseAllowed(const PathState& path, Time now) const
    {
        return m_lastDecrease < 0 || now - m_lastDecrease >= path.rtt.Smoothed();
    }

    /**
     * Note an ACK's time: the first ACK after a timeout starts the guard (Guarded).
     * \param now the ACK's time
     */
    void NoteAck(Time now)
    {
        if (m_timedOut)
        {
            m_timedOut = false;
            m_guardFrom = now;
        }
    }

    /**
     * \return true for one smoothed RTT from the first ACK after a timeout: its ECN echoes
     *         are for packets sent before the timeout, whose window is gone already (TCP
     *         reacts to ECE at most once per window), so they do not end slow start. (Read
     *         only by slow start; the decrease itself is as before.)
     */
    bool Guarded(const PathState& path, Time now) const
    {
        return m_guardFrom >= 0 && now - m_guardFrom < path.rtt.Smoothed();
    }

    /// \return true if \p path grows by slow start now (a long path, below the end)
    bool InSlowStart(const PathState& path, const AckEvent& ack, const ConnectionConfig& cfg) const
    {
        return cfg.slowStartMinRtt > 0 && ack.minRtt >= cfg.slowStartMinRtt &&
               path.cwnd < m_slowStartEnd;
    }

    /**
     * Grow the window for an ACK without an ECN echo: by slow start while the connection's
     * minimum RTT is at least slowStartMinRtt and the window is below where slow start ends
     * (only while the window, not the application, limits the path), else by additive
     * increase.
     */
    void Grow(PathState& path, const AckEvent& ack, const ConnectionConfig& cfg)
    {
        if (InSlowStart(path, ack, cfg))
        {
            if (!ack.connectionLimited)
            {
                if (ack.windowLimited)
                {
                    path.cwnd =
                        std::min({cfg.maxPathWindow, m_slowStartEnd, path.cwnd + ack.newlyAcked});
                }
                // (else the application limits the path: a window it does not fill would
                // only let a later burst out at once, so it stays as it is, in slow start)
                return;
            }
            m_slowStartEnd = path.cwnd; // the connection's cap is reached: slow start is over
        }
        Increase(path, ack.newlyAcked, cfg);
    }

    /// Additive increase for \p acked newly acknowledged packets.
    static void Increase(PathState& path, uint32_t acked, const ConnectionConfig& cfg)
    {
        path.cwnd = std::min(cfg.maxPathWindow, path.cwnd + cfg.aimdIncrease * acked / path.cwnd);
    }

    /// Multiplicative decrease by \p factor; slow start, if any, is over (unless Guarded).
    void Decrease(PathState& path, double factor, Time now, const ConnectionConfig& cfg)
    {
        path.cwnd = std::max(cfg.minPathWindow, path.cwnd * factor);
        m_lastDecrease = now;
        if (!Guarded(path, now))
        {
            m_slowStartEnd = path.cwnd;
        }
    }

    /// End slow start, if any, at the present window (an ECN echo: congestion), unless Guarded.
    void EndSlowStart(const PathState& path, Time now)
    {
        if (!Guarded(path, now))
        {
            m_slowStartEnd = std::min(m_slowStartEnd, path.cwnd);
        }
    }

  private:
    Time m_lastDecrease{-1}; //!< last multiplicative decrease
    bool m_timedOut{false};  //!< a timeout, no ACK since
    Time m_guardFrom{-1};    //!< the first ACK after the last timeout (Guarded)
    /// Slow start (slowStartMinRtt) grows the window up to this (TCP's ssthresh).
    double m_slowStartEnd{std::numeric_limits<double>::infinity()};
};

/**
 * Sender-driven, ECN-triggered AIMD per path (the public description's "conventional
 * ECN-based AIMD"): +aimdIncrease packets per RTT (slow start on long paths: slowStartMinRtt),
 * x aimdDecrease on an ECN echo, at most once per RTT.
 */
class AimdCongestionControl : public AimdFamily
{
  public:
    const char* Name() const override
    {
        return "aimd";
    }

    bool OnAck(PathState& path, const AckEvent& ack, const ConnectionConfig& cfg) override
    {
        NoteAck(ack.now);
        if (ack.ece)
        {
            if (DecreaseAllowed(path, ack.now))
            {
                Decrease(path, cfg.aimdDecrease, ack.now, cfg);
                return true;
            }
            EndSlowStart(path, ack.now);
            return false;
        }
        Grow(path, ack, cfg);
        return false;
    }
};

/**
 * DCTCP-style alternative: the decrease is proportional to the fraction of CE-marked
 * packets, estimated per path over roughly one window of ACKs.
 */
class DctcpCongestionControl : public AimdFamily
{
  public:
    const char* Name() const override
    {
        return "dctcp";
    }

    bool OnAck(PathState& path, const AckEvent& ack, const ConnectionConfig& cfg) override
    {
        NoteAck(ack.now);
        if (ack.ece && InSlowStart(path, ack, cfg) && !Guarded(path, ack.now))
        {
            // Slow start overshoots by up to twice the path's share: with the estimate still
            // near 0 the first decreases would hardly cut, so it starts from "all marked", as
            // Linux's DCTCP initialises alpha to 1. (Only on long paths: a datacenter path
            // never slow-starts, and its alpha starts at 0 as before.)
            m_alpha = 1;
        }
        m_windowAcked += ack.newlyAcked;
        m_windowMarked += std::min(ack.ceCount, ack.newlyAcked);
        bool decreased = false;
        if (m_windowAcked >= uint32_t(path.cwnd))
        {
            double fraction = m_windowAcked ? double(m_windowMarked) / m_windowAcked : 0;
            m_alpha = (1 - cfg.dctcpGain) * m_alpha + cfg.dctcpGain * fraction;
            if (m_windowMarked > 0 && DecreaseAllowed(path, ack.now))
            {
                Decrease(path, 1 - m_alpha / 2, ack.now, cfg);
                decreased = true;
            }
            m_windowAcked = 0;
            m_windowMarked = 0;
        }
        if (ack.ece)
        {
            EndSlowStart(path, ack.now);
        }
        else
        {
            Grow(path, ack, cfg);
        }
        return decreased;
    }

  private:
    double m_alpha{0};          //!< DCTCP congestion estimate
    uint32_t m_windowAcked{0};  //!< packets acknowledged in the current observation window
    uint32_t m_windowMarked{0}; //!< of which echoed CE
};

/// Fixed windows (initialPathWindow), for experiments that isolate loss recovery.
class FixedCongestionControl : public CongestionControl
{
  public:
    const char* Name() const override
    {
        return "fixed";
    }

    bool OnAck(PathState&, const AckEvent&, const ConnectionConfig&) override
    {
        return false;
    }

    void OnLoss(PathState&, Time, const ConnectionConfig&) override
    {
    }

    void OnTimeout(PathState&, const ConnectionConfig&) override
    {
    }
};

} // namespace

std::unique_ptr<CongestionControl>
CreateCongestionControl(const std::string& name)
{
    if (name == "aimd")
    {
        return std::make_unique<AimdCongestionControl>();
    }
    if (name == "dctcp")
    {
        return std::make_unique<DctcpCongestionControl>();
    }
    if (name == "fixed")
    {
        return std::make_unique<FixedCongestionControl>();
    }
    return nullptr;
}

} // namespace metaroce
