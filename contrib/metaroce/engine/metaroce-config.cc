/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#include "metaroce-config.h"

#include "metaroce-policy-names.h"
#include "metaroce-wire.h"

#include <utility>

namespace metaroce
{

namespace
{
/// sizeof(ConnectionConfig) on x86-64 with libstdc++ when operator== was last checked.
constexpr size_t CONNECTION_CONFIG_SIZE = 824;
} // namespace

bool
ConnectionConfig::Validate(std::string& why) const
{
    const std::pair<PolicyKind, const std::string*> named[] = {
        {PolicyKind::TRANSPORT, &transport},
        {PolicyKind::CONGESTION_CONTROL, &congestionControl},
        {PolicyKind::PATH_SCHEDULER, &pathScheduler},
        {PolicyKind::LOSS_DETECTION, &lossDetection},
        {PolicyKind::ROCE_RECOVERY, &rocev2.recovery},
        {PolicyKind::TAIL_PROBE, &tailProbe},
        {PolicyKind::FAILURE_DETECTION, &failureDetection},
        {PolicyKind::RTO_POLICY, &rtoPolicy},
        {PolicyKind::INITIAL_WINDOW, &initialWindow},
        {PolicyKind::ACK_POLICY, &ackPolicy},
        {PolicyKind::RETURN_WINDOW, &returnWindow},
        {PolicyKind::CONFIRM_HOLD, &confirmHold},
    };
    for (const auto& [kind, name] : named)
    {
        if (!IsPolicyName(kind, *name))
        {
            why = std::string(PolicyField(kind)) + " \"" + *name + "\": expected " +
                  PolicyChoices(kind);
            return false;
        }
    }
    if (!IsValidMtu(mtu))
    {
        why = "mtu must be a multiple of 4 in [" + std::to_string(MIN_MTU) + ", " +
              std::to_string(MAX_MTU) + "]";
        return false;
    }
    if (numPaths < 1 || numPaths > MAX_PATHS)
    {
        why = "numPaths must be in [1, " + std::to_string(MAX_PATHS) + "]";
        return false;
    }
    if (sackWindow < 1 || sackWindow > SACK_BITS)
    {
        why = "sackWindow must be in [1, 256]";
        return false;
    }
    if (maxStreams < 1)
    {
        why = "maxStreams must be at least 1";
        return false;
    }
    if (maxOutstandingWrs < 1 || maxPostedRecvs < 1)
    {
        why = "maxOutstandingWrs and maxPostedRecvs must be at least 1";
        return false;
    }
    if (!(minPathWindow >= 1) || !(initialPathWindow >= minPathWindow) ||
        !(maxPathWindow >= initialPathWindow) || maxPathWindow > sackWindow - 1)
    {
        why = "need 1 <= minPathWindow <= initialPathWindow <= maxPathWindow < sackWindow";
        return false;
    }
    if (!(connectionWindow >= 1))
    {
        why = "connectionWindow must be at least 1";
        return false;
    }
    if (!(aimdDecrease > 0 && aimdDecrease < 1) || !(aimdIncrease > 0))
    {
        why = "aimdDecrease must be in (0,1) and aimdIncrease positive";
        return false;
    }
    if (!(lossWindowFactor > 0 && lossWindowFactor <= 1))
    {
        why = "lossWindowFactor must be in (0,1]";
        return false;
    }
    if (!(dctcpGain > 0 && dctcpGain <= 1))
    {
        why = "dctcpGain must be in (0,1]";
        return false;
    }
    if (rtoMin <= 0 || rtoMax < rtoMin || rtoInitial < rtoMin || rtoInitial > rtoMax)
    {
        why = "need 0 < rtoMin <= rtoInitial <= rtoMax";
        return false;
    }
    if (failureThreshold < 1 || reorderThreshold < 1 || ackEveryPackets < 1 ||
        ackCoalescePackets < 1)
    {
        why = "failureThreshold, reorderThreshold, ackEveryPackets and ackCoalescePackets must "
              "be at least 1";
        return false;
    }
    if (maxRdAtomic < 1 || maxRdAtomic > 255)
    {
        why = "maxRdAtomic must be in [1, 255]";
        return false;
    }
    if (probeInterval <= 0 || connectionTimeout <= 0 || ackDelay < 0 || rnrRetryDelay < 0 ||
        ackRepeatGap < 0)
    {
        why = "probeInterval and connectionTimeout must be positive, delays non-negative";
        return false;
    }
    if (slowStartMinRtt < 0)
    {
        why = "slowStartMinRtt must not be negative (0 turns it off)";
        return false;
    }
    // Below 1 the long-path pacing would hold a path under its own window's rate (and a gain
    // near 0 would make the pacer's gap overflow); above 100 it no longer paces anything.
    if (!(longPathPacingGain == 0 || (longPathPacingGain >= 1 && longPathPacingGain <= 100)))
    {
        why = "longPathPacingGain must be 0 (off) or between 1 and 100";
        return false;
    }
    if (lineRateBps < 0)
    {
        why = "lineRateBps must not be negative";
        return false;
    }
    if (!(rackReorderFraction >= 0) || rackReorderMin < 0 || !(tailRttEpochRtts > 0) ||
        !(tailProbeRtts > 0) || suspectLosses < 1)
    {
        why = "need rackReorderFraction >= 0, rackReorderMin >= 0, tailRttEpochRtts > 0, "
              "tailProbeRtts > 0 and suspectLosses >= 1";
        return false;
    }
    if (rtoFloor <= 0 || !(rtoMinRttFactor >= 0) || !(initialConnectionWindow >= 1))
    {
        why = "need rtoFloor > 0, rtoMinRttFactor >= 0 and initialConnectionWindow >= 1";
        return false;
    }
    if (retryLimit > 255)
    {
        why = "retryLimit must be at most 255";
        return false;
    }
    return ValidateRoceV2(why);
}

bool
ConnectionConfig::operator==(const ConnectionConfig& o) const
{
    // Every field is compared: a field added to ConnectionConfig or RoceV2Options without a
    // line here would make two different configurations share one copy at the endpoint. The
    // size checks below fail the build on this platform when the structs change, as a
    // reminder (tests/engine/config-test.cc changes each field in turn).
#if defined(__x86_64__) && defined(__GLIBCXX__)
    static_assert(sizeof(ConnectionConfig) == CONNECTION_CONFIG_SIZE,
                  "ConnectionConfig changed: update operator== and CONNECTION_CONFIG_SIZE");
#endif
    const RoceV2Options& a = rocev2;
    const RoceV2Options& b = o.rocev2;
    return std::tie(transport,
                    mtu,
                    maxMessageSize,
                    maxStreams,
                    maxOutstandingWrs,
                    maxPostedRecvs,
                    numPaths,
                    sackWindow,
                    sourcePortBase,
                    pathScheduler,
                    congestionControl,
                    initialPathWindow,
                    initialWindow,
                    initialConnectionWindow,
                    minPathWindow,
                    maxPathWindow,
                    connectionWindow,
                    aimdIncrease,
                    aimdDecrease,
                    dctcpGain,
                    lossWindowFactor,
                    slowStartMinRtt,
                    longPathPacingGain,
                    lineRateBps,
                    lossDetection,
                    reorderThreshold,
                    rackReorderFraction,
                    rackReorderMin,
                    tailRttEpochRtts,
                    tailProbe,
                    tailProbeRtts,
                    failureDetection,
                    suspectLosses,
                    rtoPolicy,
                    rtoFloor,
                    rtoMinRttFactor,
                    rtoInitial,
                    rtoMin,
                    rtoMax,
                    failureThreshold,
                    probeInterval,
                    returnWindow,
                    confirmHold,
                    connectionTimeout,
                    retryLimit,
                    rnrRetryDelay,
                    rnrRetryLimit,
                    ackPolicy,
                    ackCoalescePackets,
                    ackEveryPackets,
                    ackDelay,
                    ackRepeat,
                    ackRepeatGap,
                    maxRdAtomic) == std::tie(o.transport,
                                             o.mtu,
                                             o.maxMessageSize,
                                             o.maxStreams,
                                             o.maxOutstandingWrs,
                                             o.maxPostedRecvs,
                                             o.numPaths,
                                             o.sackWindow,
                                             o.sourcePortBase,
                                             o.pathScheduler,
                                             o.congestionControl,
                                             o.initialPathWindow,
                                             o.initialWindow,
                                             o.initialConnectionWindow,
                                             o.minPathWindow,
                                             o.maxPathWindow,
                                             o.connectionWindow,
                                             o.aimdIncrease,
                                             o.aimdDecrease,
                                             o.dctcpGain,
                                             o.lossWindowFactor,
                                             o.slowStartMinRtt,
                                             o.longPathPacingGain,
                                             o.lineRateBps,
                                             o.lossDetection,
                                             o.reorderThreshold,
                                             o.rackReorderFraction,
                                             o.rackReorderMin,
                                             o.tailRttEpochRtts,
                                             o.tailProbe,
                                             o.tailProbeRtts,
                                             o.failureDetection,
                                             o.suspectLosses,
                                             o.rtoPolicy,
                                             o.rtoFloor,
                                             o.rtoMinRttFactor,
                                             o.rtoInitial,
                                             o.rtoMin,
                                             o.rtoMax,
                                             o.failureThreshold,
                                             o.probeInterval,
                                             o.returnWindow,
                                             o.confirmHold,
                                             o.connectionTimeout,
                                             o.retryLimit,
                                             o.rnrRetryDelay,
                                             o.rnrRetryLimit,
                                             o.ackPolicy,
                                             o.ackCoalescePackets,
                                             o.ackEveryPackets,
                                             o.ackDelay,
                                             o.ackRepeat,
                                             o.ackRepeatGap,
                                             o.maxRdAtomic) &&
           std::tie(a.localAckTimeout,
                    a.retryCount,
                    a.rnrRetry,
                    a.minRnrTimer,
                    a.ackEveryPackets,
                    a.ackDelay,
                    a.maxInflightPackets,
                    a.recovery,
                    a.irnRtoLow,
                    a.irnRtoHigh,
                    a.irnLowThreshold,
                    a.irnRtoBackoff,
                    a.irnWindow,
                    a.dscp,
                    a.cnpDscp,
                    a.maxRdAtomic,
                    a.dcqcn,
                    a.dcqcnG,
                    a.dcqcnInitialAlpha,
                    a.dcqcnAlphaPeriod,
                    a.dcqcnRateIncreasePeriod,
                    a.dcqcnByteCounter,
                    a.dcqcnFastRecoverySteps,
                    a.dcqcnRaiBps,
                    a.dcqcnRhaiBps,
                    a.dcqcnMinRateBps,
                    a.cnpInterval) == std::tie(b.localAckTimeout,
                                               b.retryCount,
                                               b.rnrRetry,
                                               b.minRnrTimer,
                                               b.ackEveryPackets,
                                               b.ackDelay,
                                               b.maxInflightPackets,
                                               b.recovery,
                                               b.irnRtoLow,
                                               b.irnRtoHigh,
                                               b.irnLowThreshold,
                                               b.irnRtoBackoff,
                                               b.irnWindow,
                                               b.dscp,
                                               b.cnpDscp,
                                               b.maxRdAtomic,
                                               b.dcqcn,
                                               b.dcqcnG,
                                               b.dcqcnInitialAlpha,
                                               b.dcqcnAlphaPeriod,
                                               b.dcqcnRateIncreasePeriod,
                                               b.dcqcnByteCounter,
                                               b.dcqcnFastRecoverySteps,
                                               b.dcqcnRaiBps,
                                               b.dcqcnRhaiBps,
                                               b.dcqcnMinRateBps,
                                               b.cnpInterval);
}

bool
ConnectionConfig::ValidateRoceV2(std::string& why) const
{
    const RoceV2Options& r = rocev2;
    if (r.localAckTimeout > 31 || r.retryCount > 7 || r.rnrRetry > 7 || r.minRnrTimer > 31)
    {
        why = "rocev2: localAckTimeout and minRnrTimer must be <= 31, retry counts <= 7";
        return false;
    }
    if (r.ackEveryPackets < 1 || r.ackDelay < 0 || r.cnpInterval < 0)
    {
        why = "rocev2: ackEveryPackets must be at least 1, delays non-negative";
        return false;
    }
    if (r.irnRtoLow <= 0 || r.irnRtoHigh < r.irnRtoLow)
    {
        why = "rocev2: need 0 < irnRtoLow <= irnRtoHigh";
        return false;
    }
    if (r.irnWindow < 1 || r.irnWindow > (1u << 16) || (r.irnWindow & (r.irnWindow - 1)) != 0)
    {
        why = "rocev2: irnWindow must be a power of two in [1, 65536]";
        return false;
    }
    if (r.maxRdAtomic < 1)
    {
        why = "rocev2: maxRdAtomic must be at least 1";
        return false;
    }
    if (r.dscp > 63 || r.cnpDscp > 63)
    {
        why = "rocev2: DSCP values must be <= 63";
        return false;
    }
    if (!(r.dcqcnG > 0 && r.dcqcnG <= 1) ||
        !(r.dcqcnInitialAlpha >= 0 && r.dcqcnInitialAlpha <= 1) || r.dcqcnAlphaPeriod <= 0 ||
        r.dcqcnRateIncreasePeriod <= 0 || r.dcqcnByteCounter < 1 || !(r.dcqcnRaiBps >= 0) ||
        !(r.dcqcnRhaiBps >= 0) || !(r.dcqcnMinRateBps > 0))
    {
        why = "rocev2: need 0 < dcqcnG <= 1, alpha in [0,1], positive periods, byte counter "
              "and minimum rate, non-negative increase steps";
        return false;
    }
    return true;
}

} // namespace metaroce
