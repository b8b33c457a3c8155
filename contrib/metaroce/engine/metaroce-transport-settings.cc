/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#include "metaroce-transport-settings.h"

#include "metaroce-policy-names.h"

#include <cmath>
#include <sstream>

namespace metaroce
{

namespace
{

/// \return "'name': expected <the choices of kind>" if \p name is not one of \p kind's names.
std::optional<std::string>
BadName(PolicyKind kind, const std::string& name)
{
    if (IsPolicyName(kind, name))
    {
        return std::nullopt;
    }
    return "'" + name + "': expected " + PolicyChoices(kind);
}

/// \return "<value>: must be positive" if \p window is not a positive number of packets.
std::optional<std::string>
BadWindow(double window)
{
    if (std::isfinite(window) && window > 0)
    {
        return std::nullopt;
    }
    return FormatShortest(window) + ": must be positive";
}

} // namespace

const char*
TransportFieldLabel(TransportField field)
{
    switch (field)
    {
    case TransportField::TRANSPORT:
        return "transport";
    case TransportField::NUM_PATHS:
        return "paths";
    case TransportField::MTU:
        return "mtu";
    case TransportField::CONGESTION_CONTROL:
        return "congestion control";
    case TransportField::ROCE_RECOVERY:
        return "rocev2 recovery";
    case TransportField::PATH_SCHEDULER:
        return "path scheduler";
    case TransportField::INITIAL_PATH_WINDOW:
        return "initial path window";
    case TransportField::MAX_PATH_WINDOW:
        return "max path window";
    }
    return "?";
}

std::string
TransportError::Message() const
{
    return std::string(TransportFieldLabel(field)) + " " + problem;
}

std::optional<TransportError>
ApplyTransportSettings(const TransportSettings& s, ConnectionConfig& cfg)
{
    const std::string transport = s.transport.value_or(cfg.transport);
    const bool roce = transport == "rocev2";
    auto fail = [](TransportField field, std::string problem) {
        return std::optional<TransportError>(TransportError{field, std::move(problem)});
    };
    if (auto bad = BadName(PolicyKind::TRANSPORT, transport); bad && s.transport)
    {
        return fail(TransportField::TRANSPORT, *bad);
    }
    if (s.numPaths && (*s.numPaths < 1 || *s.numPaths > ConnectionConfig::MAX_PATHS))
    {
        return fail(TransportField::NUM_PATHS,
                    std::to_string(*s.numPaths) + ": must be in [1, " +
                        std::to_string(ConnectionConfig::MAX_PATHS) + "]");
    }
    if (s.mtu && !ConnectionConfig::IsValidMtu(*s.mtu))
    {
        return fail(TransportField::MTU,
                    std::to_string(*s.mtu) + ": must be a multiple of 4 in [" +
                        std::to_string(ConnectionConfig::MIN_MTU) + ", " +
                        std::to_string(ConnectionConfig::MAX_MTU) + "]");
    }
    if (s.congestionControl)
    {
        // RoCEv2's rate control is DCQCN or nothing; MetaRoCE's congestion control is a policy.
        if (roce && !IsPolicyName(PolicyKind::ROCE_RATE_CONTROL, *s.congestionControl))
        {
            return fail(TransportField::CONGESTION_CONTROL,
                        "'" + *s.congestionControl + "': rocev2 takes " +
                            PolicyChoices(PolicyKind::ROCE_RATE_CONTROL));
        }
        if (auto bad = BadName(PolicyKind::CONGESTION_CONTROL, *s.congestionControl); bad && !roce)
        {
            return fail(TransportField::CONGESTION_CONTROL, *bad);
        }
    }
    if (s.rocev2Recovery)
    {
        if (auto bad = BadName(PolicyKind::ROCE_RECOVERY, *s.rocev2Recovery))
        {
            return fail(TransportField::ROCE_RECOVERY, *bad);
        }
    }
    if (s.pathScheduler)
    {
        if (auto bad = BadName(PolicyKind::PATH_SCHEDULER, *s.pathScheduler))
        {
            return fail(TransportField::PATH_SCHEDULER, *bad);
        }
    }
    if (s.initialPathWindow)
    {
        if (auto bad = BadWindow(*s.initialPathWindow))
        {
            return fail(TransportField::INITIAL_PATH_WINDOW, *bad);
        }
    }
    if (s.maxPathWindow)
    {
        if (auto bad = BadWindow(*s.maxPathWindow))
        {
            return fail(TransportField::MAX_PATH_WINDOW, *bad);
        }
    }

    cfg.transport = transport;
    cfg.numPaths = roce ? 1 : s.numPaths.value_or(cfg.numPaths);
    cfg.mtu = s.mtu.value_or(cfg.mtu);
    if (s.congestionControl && roce)
    {
        cfg.rocev2.dcqcn = *s.congestionControl == "dcqcn";
    }
    else if (s.congestionControl)
    {
        cfg.congestionControl = *s.congestionControl;
    }
    cfg.rocev2.recovery = s.rocev2Recovery.value_or(cfg.rocev2.recovery);
    cfg.pathScheduler = s.pathScheduler.value_or(cfg.pathScheduler);
    cfg.initialPathWindow = s.initialPathWindow.value_or(cfg.initialPathWindow);
    cfg.maxPathWindow = s.maxPathWindow.value_or(cfg.maxPathWindow);
    return std::nullopt;
}

std::string
FormatShortest(double value)
{
    std::ostringstream os;
    os << value;
    return os.str();
}

TransportSettings
TransportSettingsOf(const ConnectionConfig& cfg)
{
    TransportSettings s;
    s.transport = cfg.transport;
    s.numPaths = cfg.numPaths;
    s.mtu = cfg.mtu;
    s.congestionControl =
        cfg.transport == "rocev2" ? (cfg.rocev2.dcqcn ? "dcqcn" : "none") : cfg.congestionControl;
    s.rocev2Recovery = cfg.rocev2.recovery;
    s.pathScheduler = cfg.pathScheduler;
    s.initialPathWindow = cfg.initialPathWindow;
    s.maxPathWindow = cfg.maxPathWindow;
    return s;
}

} // namespace metaroce
