/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#ifndef METAROCE_LOSS_DETECTION_H
#define METAROCE_LOSS_DETECTION_H

#include "metaroce-config.h"
#include "metaroce-path.h"

#include <memory>
#include <string>
#include <vector>

namespace metaroce
{

/// What a loss detection strategy may know of the connection besides the path it examines.
struct LossContext
{
    const ConnectionConfig& cfg; //!< connection settings
    Time now;                    //!< current time
    Time minRtt;                 //!< smallest RTT sample of any path (0: none yet)
    Time fallbackRtt;            //!< RTT to assume for a path without a sample (-1: none)
    Time latestDeliveredSent;    //!< latest send time of any packet acknowledged (-1: none)
    uint32_t reorderMultiplier;  //!< the reordering window in base windows (DSACK-adapted)
    bool atTail;                 //!< nothing new to send and no resend queued
    Time recentMaxRtt;           //!< largest RTT sample of any path lately (-1: none)
};

/// Decides which in-flight packets of a path are lost, after an ACK or at a deadline.
class LossDetection
{
  public:
    virtual ~LossDetection() = default;
    /// \return the name the strategy is chosen by.
    virtual const char* Name() const = 0;

    /// \return true if the strategy may judge by time (deadlines, DSACK-adapted window).
    virtual bool UsesTime() const
    {
        return false;
    }

    /**
     * \return true if a packet the time rule finds overdue is only suspect: the caller asks
     * its path with a probe, and the probe's reply confirms the loss (PathState::lossSuspected).
     */
    virtual bool ConfirmsByProbe() const
    {
        return false;
    }

    /**
     * \return how long after its transmission a packet of \p path is overdue, its path's
     * round trip plus the reordering window (-1: unknown, or the strategy does not use time).
     * A confirmation probe unanswered for this long is taken as lost too.
     */
    virtual Time OverdueAfter(const PathState& /* path */, const LossContext& /* ctx */) const
    {
        return -1;
    }

    /**
     * \return true if the time rule applies now (\p atTail: the connection has nothing new
     * to send and no resend queued). When false, evidence that arrives on one path cannot
     * make packets of the other paths lost, and the caller skips them.
     */
    virtual bool TimeRuleApplies(bool /* atTail */) const
    {
        return false;
    }

    /**
     * \return when a packet sent at \p sentTime on \p path is due to be examined by time
     * (TIME_INFINITE: the strategy does not use time).
     */
    virtual Time DueTime(const PathState& /* path */,
                         const LossContext& /* ctx */,
                         Time /* sentTime */) const
    {
        return TIME_INFINITE;
    }

    /**
     * Append to \p lost the PSNs of \p path's INFLIGHT packets that are now deemed lost; the
     * caller changes their state. Also sets path.lossAwaitsEvidence (a packet is overdue, but
     * no later-sent packet has arrived) and path.lossSuspected (ConfirmsByProbe(): a packet
     * is overdue and a later-sent one arrived).
     * \return when to look at the path again (TIME_INFINITE: no packet waits on time); the
     * caller arms the path's LOSS timer with it
     */
    virtual Time DetectLosses(PathState& path,
                              const LossContext& ctx,
                              std::vector<uint32_t>& lost) = 0;
};

/**
 * \return the strategy called \p name, or nullptr if unknown.
 *
 * "sack-gap": a path carries its own ordered sequence, so a packet is lost as soon as
 * reorderThreshold packets sent after it on the same path have been acknowledged (a SACK
 * gap). Ordering is by transmission, not PSN, so a lost retransmission is detected the same
 * way. A lost packet with nothing acknowledged after it on its path waits for the RTO.
 *
 * "rack" (in the spirit of RACK, RFC 8985; our model [M]): "sack-gap", plus a time rule that
 * works across paths. A packet is lost once some packet of the connection sent after it, on
 * any path, has been acknowledged, and its own path's round trip plus a reordering window
 * has passed since it was sent: sent + max(srtt, latest RTT) of its path + max(rackReorderMin,
 * rackReorderFraction x the connection's minimum RTT, times a multiplier that grows by one for
 * each round trip in which the receiver reports a duplicate, as RFC 8985's DSACK rule, up to
 * the smoothed RTT), and the path has had no ACK for all of
 * that time (a path whose ACKs still come drains its own queue in order, so its losses show
 * as SACK gaps; a slow path's growing queue is not loss). Send times, not sequence numbers,
 * are compared, so paths of different RTTs are told apart, and a lost retransmission is
 * detected the same way.
 *
 * "rack-tail" (our model [M]): "rack"'s time rule only while the connection is at its tail
 * (nothing new to send, no resend queued), and "sack-gap" otherwise; a path's RTT is taken as
 * at least the largest RTT sample of any of the connection's paths in the last one to two
 * epochs of tailRttEpochRtts minimum RTTs. While new data is sent, a lost packet is usually
 * followed on its path by later packets whose ACKs reveal the SACK gap; a tail has no such
 * packets. Judging queued packets by time mid-transfer, against a path's own RTT, is what made
 * "rack" resend packets that an asymmetric queue only delayed.
 *
 * "rack-confirm" (our model [M]): "rack"'s rules find suspects, not losses. A path carries
 * its packets in order (one UDP source port, one ECMP route, one priority), so a probe sent on
 * the path after a suspect arrives after it: the probe's reply reports the path's SACK state
 * as the probe found it, and a suspect it does not acknowledge is lost (the requester marks
 * it). A packet that an asymmetric queue only delayed is acknowledged by the reply, and costs
 * a header-only probe instead of a resend.
 */
std::unique_ptr<LossDetection> CreateLossDetection(const std::string& name);

} // namespace metaroce

#endif // METAROCE_LOSS_DETECTION_H
