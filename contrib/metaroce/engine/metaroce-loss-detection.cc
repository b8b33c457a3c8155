/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#include "metaroce-loss-detection.h"

#include <algorithm>

namespace metaroce
{

namespace
{

/// \return true if \p e lies reorderThreshold transmissions behind the path's newest ACK.
bool
BehindSackGap(const PathState& path, const InflightEntry& e, const ConnectionConfig& cfg)
{
    return path.anyAcked &&
           int32_t(path.highestAckedOrder - e.sendOrder) >= int32_t(cfg.reorderThreshold);
}

/// SACK-gap loss detection over the per-path transmission order.
class SackGapLossDetection : public LossDetection
{
  public:
    const char* Name() const override
    {
        return "sack-gap";
    }

    Time DetectLosses(PathState& path, const LossContext& ctx, std::vector<uint32_t>& lost) override
    {
        if (!path.anyAcked)
        {
            return TIME_INFINITE;
        }
        for (uint32_t psn = path.ackedPsn; psn != path.nextPsn; psn = PsnAdd(psn, 1))
        {
            const InflightEntry& e = path.Entry(psn);
            if (e.state == InflightEntry::INFLIGHT && BehindSackGap(path, e, ctx.cfg))
            {
                lost.push_back(psn);
            }
        }
        return TIME_INFINITE; // (the SACK gap and the RTO decide: no deadline of its own)
    }
};

/// SACK gaps on the path, plus send-time ordering across the connection's paths: always
/// ("rack"), only at the connection's tail, against the connection's recent largest RTT
/// ("rack-tail"), or always, as suspicion that a probe of the path confirms ("rack-confirm").
class RackLossDetection : public LossDetection
{
  public:
    /// The variants of the time rule.
    enum class Variant : uint8_t
    {
        RACK,      //!< "rack"
        TAIL_ONLY, //!< "rack-tail"
        CONFIRM,   //!< "rack-confirm"
    };

    /// \param variant what the time rule does, and when
    explicit RackLossDetection(Variant variant)
        : m_tailOnly(variant == Variant::TAIL_ONLY),
          m_confirm(variant == Variant::CONFIRM)
    {
    }

    const char* Name() const override
    {
        return m_tailOnly ? "rack-tail" : (m_confirm ? "rack-confirm" : "rack");
    }

    bool UsesTime() const override
    {
        return true;
    }

    bool ConfirmsByProbe() const override
    {
        return m_confirm;
    }

    Time OverdueAfter(const PathState& path, const LossContext& ctx) const override
    {
        return Wait(path, ctx);
    }

    bool TimeRuleApplies(bool atTail) const override
    {
        return !m_tailOnly || atTail;
    }

    Time DueTime(const PathState& path, const LossContext& ctx, Time sentTime) const override
    {
        if (!TimeRuleApplies(ctx.atTail))
        {
            return TIME_INFINITE;
        }
        Time wait = Wait(path, ctx);
        return wait < 0 ? TIME_INFINITE : std::max(sentTime + wait, path.lastAck + wait);
    }

    Time DetectLosses(PathState& path, const LossContext& ctx, std::vector<uint32_t>& lost) override
    {
        Time again = TIME_INFINITE;
        path.lossAwaitsEvidence = false;
        path.lossSuspected = false;
        if (!TimeRuleApplies(ctx.atTail))
        {
            return m_sackGap.DetectLosses(path, ctx, lost); // later packets of the path come
        }
        const Time wait = Wait(path, ctx);
        for (uint32_t psn = path.ackedPsn; psn != path.nextPsn; psn = PsnAdd(psn, 1))
        {
            const InflightEntry& e = path.Entry(psn);
            if (e.state != InflightEntry::INFLIGHT)
            {
                continue;
            }
            if (BehindSackGap(path, e, ctx.cfg))
            {
                lost.push_back(psn);
                continue;
            }
            if (wait < 0)
            {
                continue; // no RTT known yet: the SACK gap and the RTO decide
            }
            // A path whose ACKs still come is alive and draining its own queue in order: a
            // loss on it shows as a SACK gap. Only a path quiet for a whole wait is judged by
            // time, so that a slow path's growing queue is not taken for loss.
            Time due = std::max(e.sentTime + wait, path.lastAck + wait);
            if (due > ctx.now)
            {
                again = std::min(again, due);
                if (!e.retransmitted)
                {
                    // Every later PSN was first sent after this packet: none is due earlier.
                    break;
                }
            }
            else if (e.sentTime < ctx.latestDeliveredSent)
            {
                if (!m_confirm)
                {
                    lost.push_back(psn);
                }
                else if (!path.lossSuspected)
                {
                    path.lossSuspected = true; // the probe covers every later PSN too
                }
            }
            else
            {
                path.lossAwaitsEvidence = true; // overdue, but nothing sent later arrived
            }
        }
        return again;
    }

  private:
    /// \return how long after its transmission a packet of \p path is overdue (-1: unknown).
    Time Wait(const PathState& path, const LossContext& ctx) const
    {
        Time rtt = path.rtt.HasSample() ? std::max(path.rtt.Smoothed(), path.rtt.Latest())
                                        : ctx.fallbackRtt;
        if (rtt < 0)
        {
            return -1;
        }
        if (m_tailOnly)
        {
            // A tail packet of a path whose queue grew since its last sample is not lost yet.
            rtt = std::max(rtt, ctx.recentMaxRtt);
        }
        Time base = std::max(ctx.cfg.rackReorderMin,
                             Time(double(ctx.minRtt) * ctx.cfg.rackReorderFraction));
        Time window = base * ctx.reorderMultiplier;
        if (ctx.reorderMultiplier > 1)
        {
            window = std::min(window, std::max(base, rtt)); // RFC 8985: at most an SRTT
        }
        return rtt + window;
    }

    bool m_tailOnly;                //!< the time rule applies at the tail only
    bool m_confirm;                 //!< the time rule finds suspects for a probe to confirm
    SackGapLossDetection m_sackGap; //!< the rule away from the tail ("rack-tail")
};

} // namespace

std::unique_ptr<LossDetection>
CreateLossDetection(const std::string& name)
{
    if (name == "sack-gap")
    {
        return std::make_unique<SackGapLossDetection>();
    }
    if (name == "rack")
    {
        return std::make_unique<RackLossDetection>(RackLossDetection::Variant::RACK);
    }
    if (name == "rack-tail")
    {
        return std::make_unique<RackLossDetection>(RackLossDetection::Variant::TAIL_ONLY);
    }
    if (name == "rack-confirm")
    {
        return std::make_unique<RackLossDetection>(RackLossDetection::Variant::CONFIRM);
    }
    return nullptr;
}

} // namespace metaroce
