/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#ifndef METAROCE_TRANSPORT_SETTINGS_H
#define METAROCE_TRANSPORT_SETTINGS_H

#include "metaroce-config.h"

#include <cstdint>
#include <optional>
#include <string>

/**
 * \file
 * The one mapping of a connection's transport fields (transport name, paths, MTU, congestion
 * or rate control, RoCEv2 recovery, path scheduler, path windows) onto a ConnectionConfig.
 * The scenario runner (a scenario's `transport`), the HIL control plane (ConnectionSettings,
 * ApplySettings()) and metaroce-perf's options all go through it, so a value means the same
 * and a bad one gets the same message everywhere. Names are checked against the policy-name
 * registry (metaroce-policy-names.h). Callers that know where a value came from (a scenario
 * field, an ns-3 attribute, a command-line option) put that in front of TransportError::problem.
 */

namespace metaroce
{

/// A field of TransportSettings.
enum class TransportField : uint8_t
{
    TRANSPORT,           //!< TransportSettings::transport
    NUM_PATHS,           //!< TransportSettings::numPaths
    MTU,                 //!< TransportSettings::mtu
    CONGESTION_CONTROL,  //!< TransportSettings::congestionControl
    ROCE_RECOVERY,       //!< TransportSettings::rocev2Recovery
    PATH_SCHEDULER,      //!< TransportSettings::pathScheduler
    INITIAL_PATH_WINDOW, //!< TransportSettings::initialPathWindow
    MAX_PATH_WINDOW,     //!< TransportSettings::maxPathWindow
};

/// \return the name of \p field in a message: "transport", "paths", "congestion control", ...
const char* TransportFieldLabel(TransportField field);

/**
 * The transport fields of a connection, as a scenario, the control plane or a command line
 * gives them. A field left empty keeps the ConnectionConfig's value.
 */
struct TransportSettings
{
    std::optional<std::string> transport; //!< "metaroce" or "rocev2"
    /// MetaRoCE paths, 1..ConnectionConfig::MAX_PATHS; checked for RoCEv2 too, which has one.
    std::optional<uint32_t> numPaths;
    std::optional<uint32_t> mtu; //!< payload bytes per packet (ConnectionConfig::IsValidMtu())
    /// metaroce: the congestion control ("aimd", ...); rocev2: its rate control, "dcqcn" or
    /// "none" (ConnectionConfig::RoceV2Options::dcqcn).
    std::optional<std::string> congestionControl;
    std::optional<std::string> rocev2Recovery; //!< "gbn" or "irn" (checked for metaroce too)
    std::optional<std::string> pathScheduler;  //!< "spray" or "single"
    std::optional<double> initialPathWindow;   //!< packets, positive
    std::optional<double> maxPathWindow;       //!< packets, positive
};

/// Why TransportSettings cannot be applied: the first bad field.
struct TransportError
{
    TransportField field{TransportField::TRANSPORT}; //!< the bad field
    /// What is wrong, starting with the value: "'cubic': expected aimd, dctcp or fixed",
    /// "0: must be in [1, 128]". A caller puts the field's name or origin in front.
    std::string problem;

    /// \return the problem after the field's label: "paths 0: must be in [1, 128]".
    std::string Message() const;
};

/**
 * Apply \p settings to \p cfg: check every field given, then set them all, or none.
 * RoCEv2 has one path: with transport "rocev2" numPaths becomes 1 whatever is given.
 * \param settings the fields to set
 * \param[in,out] cfg the configuration; unchanged when a field is bad
 * \return nothing on success, else the first bad field in the order of TransportField
 */
std::optional<TransportError> ApplyTransportSettings(const TransportSettings& settings,
                                                     ConnectionConfig& cfg);

/**
 * The inverse of ApplyTransportSettings(): every field as \p cfg has it (congestionControl
 * "dcqcn" or "none" for RoCEv2).
 * \param cfg a configuration
 * \return its transport fields, all given
 */
TransportSettings TransportSettingsOf(const ConnectionConfig& cfg);

/**
 * A number as the messages of the mapping and its callers print it.
 * \param value a number
 * \return it with as few digits as iostream's default precision needs (4, 0.5, -1)
 */
std::string FormatShortest(double value);

} // namespace metaroce

#endif // METAROCE_TRANSPORT_SETTINGS_H
