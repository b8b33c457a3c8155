/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#include "metaroce-congestion-control.h"

#include <algorithm>

namespace metaroce
{

namespace
{

/// \return true if a decrease is allowed: at most one per smoothed RTT.
bool
DecreaseAllowed(const PathState& path, Time now)
{
    Time guard = path.hasRtt ? path.srtt : 0;
    return path.lastDecrease < 0 || now - path.lastDecrease >= guard;
}

/// Additive increase shared by the AIMD-family strategies.
void
Increase(PathState& path, uint32_t acked, const ConnectionConfig& cfg)
{
    path.cwnd = std::min(cfg.maxPathWindow, path.cwnd + cfg.aimdIncrease * acked / path.cwnd);
}

/// Multiplicative decrease shared by the AIMD-family strategies.
void
Decrease(PathState& path, double factor, Time now, const ConnectionConfig& cfg)
{
    path.cwnd = std::max(cfg.minPathWindow, path.cwnd * factor);
    path.lastDecrease = now;
}

/**
 * Sender-driven, ECN-triggered AIMD per path (the public description's "conventional
 * ECN-based AIMD"): +aimdIncrease packets per RTT, x aimdDecrease on an ECN echo, at most
 * once per RTT.
 */
class AimdCongestionControl : public CongestionControl
{
  public:
    const char* Name() const override
    {
        return "aimd";
    }

    bool OnAck(PathState& path, const AckEvent& ack, const ConnectionConfig& cfg) override
    {
        if (ack.ece)
        {
            if (DecreaseAllowed(path, ack.now))
            {
                Decrease(path, cfg.aimdDecrease, ack.now, cfg);
                return true;
            }
            return false;
        }
        Increase(path, ack.newlyAcked, cfg);
        return false;
    }

    void OnLoss(PathState& path, Time now, const ConnectionConfig& cfg) override
    {
        if (cfg.lossWindowFactor < 1 && DecreaseAllowed(path, now))
        {
            Decrease(path, cfg.lossWindowFactor, now, cfg);
        }
    }

    void OnTimeout(PathState& path, const ConnectionConfig& cfg) override
    {
        path.cwnd = cfg.minPathWindow;
    }
};

/**
 * DCTCP-style alternative: the decrease is proportional to the fraction of CE-marked
 * packets, estimated per path over roughly one window of ACKs.
 */
class DctcpCongestionControl : public CongestionControl
{
  public:
    const char* Name() const override
    {
        return "dctcp";
    }

    bool OnAck(PathState& path, const AckEvent& ack, const ConnectionConfig& cfg) override
    {
        path.windowAcked += ack.newlyAcked;
        path.windowMarked += std::min(ack.ceCount, ack.newlyAcked);
        bool decreased = false;
        if (path.windowAcked >= uint32_t(path.cwnd))
        {
            double fraction = path.windowAcked ? double(path.windowMarked) / path.windowAcked : 0;
            path.dctcpAlpha = (1 - cfg.dctcpGain) * path.dctcpAlpha + cfg.dctcpGain * fraction;
            if (path.windowMarked > 0 && DecreaseAllowed(path, ack.now))
            {
                Decrease(path, 1 - path.dctcpAlpha / 2, ack.now, cfg);
                decreased = true;
            }
            path.windowAcked = 0;
            path.windowMarked = 0;
        }
        if (!ack.ece)
        {
            Increase(path, ack.newlyAcked, cfg);
        }
        return decreased;
    }

    void OnLoss(PathState& path, Time now, const ConnectionConfig& cfg) override
    {
        if (cfg.lossWindowFactor < 1 && DecreaseAllowed(path, now))
        {
            Decrease(path, cfg.lossWindowFactor, now, cfg);
        }
    }

    void OnTimeout(PathState& path, const ConnectionConfig& cfg) override
    {
        path.cwnd = cfg.minPathWindow;
    }
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
