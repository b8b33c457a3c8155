/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#ifndef METAROCE_POLICY_NAMES_H
#define METAROCE_POLICY_NAMES_H

#include <cstdint>
#include <string>
#include <vector>

/**
 * \file
 * The one registry of the names that choose a policy in ConnectionConfig: transports,
 * congestion control, path schedulers, loss detection, RoCEv2 recovery and RoCEv2 rate
 * control. Validation, the scenario runner and the HIL tools check names here; the factories
 * build the same names (tests/engine/policy-names-test.cc keeps the two in step).
 */

namespace metaroce
{

/// A ConnectionConfig field chosen by name.
enum class PolicyKind : uint8_t
{
    TRANSPORT,          //!< ConnectionConfig::transport
    CONGESTION_CONTROL, //!< ConnectionConfig::congestionControl
    PATH_SCHEDULER,     //!< ConnectionConfig::pathScheduler
    LOSS_DETECTION,     //!< ConnectionConfig::lossDetection
    ROCE_RECOVERY,      //!< ConnectionConfig::rocev2.recovery
    TAIL_PROBE,         //!< ConnectionConfig::tailProbe
    FAILURE_DETECTION,  //!< ConnectionConfig::failureDetection
    RTO_POLICY,         //!< ConnectionConfig::rtoPolicy
    INITIAL_WINDOW,     //!< ConnectionConfig::initialWindow
    ROCE_RATE_CONTROL,  //!< ConnectionConfig::rocev2.dcqcn: "dcqcn" if true, else "none"
    ACK_POLICY,         //!< ConnectionConfig::ackPolicy
    RETURN_WINDOW,      //!< ConnectionConfig::returnWindow
    CONFIRM_HOLD,       //!< ConnectionConfig::confirmHold
};

/// \return the ConnectionConfig field that \p kind names ("congestionControl", ...).
const char* PolicyField(PolicyKind kind);

/// \return the names \p kind may take, the default first.
const std::vector<std::string>& PolicyNames(PolicyKind kind);

/// \return true if \p name is one of PolicyNames(\p kind).
bool IsPolicyName(PolicyKind kind, const std::string& name);

/// \return the choices of \p kind for a message: "aimd, dctcp or fixed".
std::string PolicyChoices(PolicyKind kind);

} // namespace metaroce

#endif // METAROCE_POLICY_NAMES_H
