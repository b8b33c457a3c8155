/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#ifndef METAROCE_CONGESTION_CONTROL_H
#define METAROCE_CONGESTION_CONTROL_H

#include "metaroce-config.h"
#include "metaroce-path.h"

#include <memory>
#include <string>

namespace metaroce
{

/// What one ACK told the sender about a path.
struct AckEvent
{
    Time now{0};            //!< arrival time
    uint32_t newlyAcked{0}; //!< packets newly acknowledged
    uint32_t ceCount{0};    //!< CE marks echoed
    bool ece{false};        //!< the ACK echoes ECN
    Time minRtt{0};         //!< the connection's minimum RTT (0: no sample yet)
    /// The connection had connectionWindow packets in flight when the ACK came: its cap,
    /// not the path's window, limits what the path sends.
    bool connectionLimited{false};
    /// The path had at least half its window in flight when the ACK came, so its window, not
    /// the application, limited what it sent (RFC 7661's "cwnd-limited", as Linux's
    /// tcp_is_cwnd_limited in slow start). Read only by slow start: an application-limited
    /// path does not grow its window there.
    bool windowLimited{true};
};

/**
 * Window control of one path. Each path of a connection has its own object, built by
 * CreateCongestionControl, which holds the strategy's state (as quinn-proto's per-path
 * Controller); the window itself stays in PathState, where the scheduler reads it.
 */
class CongestionControl
{
  public:
    virtual ~CongestionControl() = default;
    /// \return the name the strategy is chosen by.
    virtual const char* Name() const = 0;
    /**
     * React to an ACK on \p path.
     * \return true if the window was decreased
     */
    virtual bool OnAck(PathState& path, const AckEvent& ack, const ConnectionConfig& cfg) = 0;
    /// React to packets declared lost from a SACK gap.
    virtual void OnLoss(PathState& path, Time now, const ConnectionConfig& cfg) = 0;
    /// React to a retransmission timeout.
    virtual void OnTimeout(PathState& path, const ConnectionConfig& cfg) = 0;
};

/// \return a new controller of the strategy called \p name ("aimd", "dctcp", "fixed") for
/// one path, or nullptr if unknown.
std::unique_ptr<CongestionControl> CreateCongestionControl(const std::string& name);

} // namespace metaroce

#endif // METAROCE_CONGESTION_CONTROL_H
