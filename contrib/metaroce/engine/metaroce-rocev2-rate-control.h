/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#ifndef METAROCE_ROCEV2_RATE_CONTROL_H
#define METAROCE_ROCEV2_RATE_CONTROL_H

#include "metaroce-config.h"
#include "metaroce-dcqcn.h"
#include "metaroce-time.h"

#include <cstdint>
#include <memory>
#include <string>

/**
 * \file
 * Rate control of a RoCEv2 queue pair, chosen by name (PolicyKind::ROCE_RATE_CONTROL):
 * "dcqcn" runs DCQCN's reaction point (the sender's rate) and notification point (the
 * receiver's CNPs); "none" sends at the pacing ceiling and never sends a CNP.
 */

namespace metaroce
{

/// A new sending rate for the connection to report (to its counters and observer).
struct RoceRateChange
{
    bool changed{false};   //!< the rate differs from the one reported last
    bool decreased{false}; //!< it is lower than a rate reported before
    double rate{0};        //!< the new rate, b/s
};

/**
 * Rate control of one RoCEv2 queue pair: both its sender side (the rate data packets are
 * paced at) and its receiver side (when congestion feedback goes back to the peer). Built by
 * CreateRoceRateControl, one object per queue pair, holding the controller's state.
 */
class RoceRateControl
{
  public:
    virtual ~RoceRateControl() = default;
    /// \return the name the controller is chosen by.
    virtual const char* Name() const = 0;
    /// \return the current sending rate, b/s.
    virtual double Rate() const = 0;
    /**
     * Apply the controller's timers up to \p now.
     * \return the rate change to report; each new rate is reported once
     */
    virtual RoceRateChange Advance(Time now) = 0;
    /// \p bytes of data were sent at \p now.
    virtual void OnBytesSent(Time now, uint64_t bytes) = 0;
    /// A congestion notification (CNP) arrived at \p now.
    virtual void OnCnp(Time now) = 0;
    /// A CE-marked data packet arrived at \p now. \return true if a CNP must be sent now.
    virtual bool OnCeMarked(Time now) = 0;
    /// \return the DCQCN reaction point ("none": an idle one at the ceiling, never driven).
    virtual const DcqcnReactionPoint& ReactionPoint() const = 0;
    /// \return heap bytes the controller holds (itself included).
    virtual size_t HeapBytes() const = 0;
};

/// \return the rate-control name \p opt selects: "dcqcn" if opt.dcqcn, else "none".
const char* RoceRateControlName(const ConnectionConfig::RoceV2Options& opt);

/**
 * \return a new rate controller called \p name ("dcqcn", "none") pacing at most at
 * \p ceilingBps, or nullptr if the name is unknown.
 */
std::unique_ptr<RoceRateControl> CreateRoceRateControl(const std::string& name,
                                                       const ConnectionConfig::RoceV2Options& opt,
                                                       double ceilingBps);

} // namespace metaroce

#endif // METAROCE_ROCEV2_RATE_CONTROL_H
