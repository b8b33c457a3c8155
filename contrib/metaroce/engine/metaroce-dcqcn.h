/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#ifndef METAROCE_DCQCN_H
#define METAROCE_DCQCN_H

#include "metaroce-config.h"
#include "metaroce-time.h"

#include <cstdint>

/**
 * \file
 * DCQCN (Zhu et al., "Congestion Control for Large-Scale RDMA Deployments", SIGCOMM 2015):
 * the reaction point (sender rate) and the notification point (receiver CNP pacing) of one
 * queue pair. Parameters and their sources are in ConnectionConfig::RoceV2Options and
 * docs/engine-rocev2.md.
 *
 * Both timers of the reaction point (alpha decay every K without CNPs, rate increase every
 * T) run on a fixed grid that restarts at each CNP, so their effect at any time is a pure
 * function of the time since the last CNP. Advance(now) applies every grid point up to now
 * before the state is read or changed: identical to firing each timer, but without waking
 * the host every 55 us for the lifetime of the connection.
 */

namespace metaroce
{

/// DCQCN reaction point: the sending rate of one queue pair.
class DcqcnReactionPoint
{
  public:
    /// Which DCQCN increase stage the last increase event used.
    enum class Stage : uint8_t
    {
        LINE_RATE,     //!< never cut, or fully recovered
        FAST_RECOVERY, //!< both counters below F: Rc moves half way to Rt
        ADDITIVE,      //!< one counter past F: Rt += R_AI
        HYPER,         //!< both counters past F: Rt += R_HAI
    };

    /**
     * Create a reaction point sending at \p lineRateBps.
     * \param opt DCQCN parameters (the dcqcn* fields)
     * \param lineRateBps the rate before any CNP and the ceiling of every increase
     */
    DcqcnReactionPoint(const ConnectionConfig::RoceV2Options& opt, double lineRateBps);

    /// Apply every alpha-decay and rate-increase timer event up to \p now.
    void Advance(Time now);
    /// A CNP arrived at \p now: Rt = Rc, Rc *= 1 - alpha/2, alpha grows, counters restart.
    void OnCnp(Time now);
    /// \p bytes were sent at \p now (drives the byte counter).
    void OnBytesSent(Time now, uint64_t bytes);

    /// \return the current rate Rc, b/s.
    double Rate() const
    {
        return m_rc;
    }

    /// \return the target rate Rt, b/s.
    double TargetRate() const
    {
        return m_rt;
    }

    /// \return the congestion estimate alpha.
    double Alpha() const
    {
        return m_alpha;
    }

    /// \return the stage of the most recent increase event.
    Stage LastStage() const
    {
        return m_stage;
    }

    /// \return the line rate (ceiling), b/s.
    double LineRate() const
    {
        return m_lineRate;
    }

    /// \return the number of CNPs processed.
    uint64_t CnpCount() const
    {
        return m_cnps;
    }

  private:
    /// One rate-increase event (timer or byte counter).
    void Increase();

    double m_g;                      //!< alpha gain
    Time m_alphaPeriod;              //!< K
    Time m_increasePeriod;           //!< T
    uint64_t m_byteCounter;          //!< B
    uint32_t m_f;                    //!< fast-recovery steps F
    double m_rai;                    //!< additive step
    double m_rhai;                   //!< hyper step
    double m_minRate;                //!< floor
    double m_lineRate;               //!< ceiling
    double m_rc;                     //!< current rate
    double m_rt;                     //!< target rate
    double m_alpha;                  //!< congestion estimate
    bool m_started{false};           //!< the alpha grid has an origin
    bool m_limited{false};           //!< below line rate: increase timer runs
    Time m_alphaBase{0};             //!< origin of the alpha grid (start or last CNP)
    int64_t m_alphaSteps{0};         //!< alpha decays applied since m_alphaBase
    Time m_timerBase{0};             //!< origin of the increase grid (last CNP)
    uint32_t m_timerEvents{0};       //!< timer events since the last CNP (T counter)
    uint32_t m_byteEvents{0};        //!< byte-counter events since the last CNP (BC counter)
    uint64_t m_bytes{0};             //!< bytes sent since the last byte-counter event
    uint64_t m_cnps{0};              //!< CNPs processed
    Stage m_stage{Stage::LINE_RATE}; //!< stage of the last increase
};

/// DCQCN notification point: at most one CNP per interval for one queue pair.
class DcqcnNotificationPoint
{
  public:
    /// Create with the minimum gap \p interval between CNPs.
    explicit DcqcnNotificationPoint(Time interval)
        : m_interval(interval)
    {
    }

    /// A CE-marked packet arrived at \p now. \return true if a CNP must be sent now.
    bool OnCeMarked(Time now)
    {
        if (m_sent && now - m_last < m_interval)
        {
            return false;
        }
        m_sent = true;
        m_last = now;
        return true;
    }

  private:
    Time m_interval;    //!< minimum gap
    Time m_last{0};     //!< last CNP
    bool m_sent{false}; //!< a CNP was sent
};

} // namespace metaroce

#endif // METAROCE_DCQCN_H
