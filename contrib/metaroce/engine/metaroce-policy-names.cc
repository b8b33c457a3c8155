/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#include "metaroce-policy-names.h"

#include <algorithm>

namespace metaroce
{

const char*
PolicyField(PolicyKind kind)
{
    switch (kind)
    {
    case PolicyKind::TRANSPORT:
        return "transport";
    case PolicyKind::CONGESTION_CONTROL:
        return "congestionControl";
    case PolicyKind::PATH_SCHEDULER:
        return "pathScheduler";
    case PolicyKind::LOSS_DETECTION:
        return "lossDetection";
    case PolicyKind::ROCE_RECOVERY:
        return "rocev2.recovery";
    case PolicyKind::TAIL_PROBE:
        return "tailProbe";
    case PolicyKind::FAILURE_DETECTION:
        return "failureDetection";
    case PolicyKind::RTO_POLICY:
        return "rtoPolicy";
    case PolicyKind::INITIAL_WINDOW:
        return "initialWindow";
    case PolicyKind::ROCE_RATE_CONTROL:
        return "rocev2.dcqcn";
    case PolicyKind::ACK_POLICY:
        return "ackPolicy";
    case PolicyKind::RETURN_WINDOW:
        return "returnWindow";
    case PolicyKind::CONFIRM_HOLD:
        return "confirmHold";
    }
    return "?";
}

const std::vector<std::string>&
PolicyNames(PolicyKind kind)
{
    static const std::vector<std::string> transports{"metaroce", "rocev2"};
    static const std::vector<std::string> controls{"aimd", "dctcp", "fixed"};
    static const std::vector<std::string> schedulers{"spray", "single"};
    static const std::vector<std::string> detections{"sack-gap",
                                                     "rack",
                                                     "rack-tail",
                                                     "rack-confirm"};
    static const std::vector<std::string> recoveries{"gbn", "irn"};
    static const std::vector<std::string> tailProbes{"tlp", "none", "tlp-rto"};
    static const std::vector<std::string> failures{"cross-path", "rto"};
    static const std::vector<std::string> rtos{"adaptive", "fixed"};
    static const std::vector<std::string> initialWindows{"per-connection", "per-path", "bdp"};
    static const std::vector<std::string> rateControls{"dcqcn", "none"};
    static const std::vector<std::string> ackPolicies{"coalesced", "per-path"};
    static const std::vector<std::string> returnWindows{"share", "initial"};
    static const std::vector<std::string> confirmHolds{"none", "hold"};
    switch (kind)
    {
    case PolicyKind::TRANSPORT:
        return transports;
    case PolicyKind::CONGESTION_CONTROL:
        return controls;
    case PolicyKind::PATH_SCHEDULER:
        return schedulers;
    case PolicyKind::LOSS_DETECTION:
        return detections;
    case PolicyKind::ROCE_RECOVERY:
        return recoveries;
    case PolicyKind::TAIL_PROBE:
        return tailProbes;
    case PolicyKind::FAILURE_DETECTION:
        return failures;
    case PolicyKind::RTO_POLICY:
        return rtos;
    case PolicyKind::INITIAL_WINDOW:
        return initialWindows;
    case PolicyKind::ROCE_RATE_CONTROL:
        return rateControls;
    case PolicyKind::ACK_POLICY:
        return ackPolicies;
    case PolicyKind::RETURN_WINDOW:
        return returnWindows;
    case PolicyKind::CONFIRM_HOLD:
        return confirmHolds;
    }
    return transports;
}

bool
IsPolicyName(PolicyKind kind, const std::string& name)
{
    const std::vector<std::string>& names = PolicyNames(kind);
    return std::find(names.begin(), names.end(), name) != names.end();
}

std::string
PolicyChoices(PolicyKind kind)
{
    const std::vector<std::string>& names = PolicyNames(kind);
    std::string out;
    for (size_t i = 0; i < names.size(); ++i)
    {
        out += i == 0 ? "" : (i + 1 == names.size() ? " or " : ", ");
        out += names[i];
    }
    return out;
}

} // namespace metaroce
