/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#include "metaroce-counters.h"

namespace metaroce
{

namespace
{
constexpr const char* COUNTER_NAMES[] = {
    "tx_data",
    "tx_retransmit",
    "tx_ack",
    "tx_nak",
    "tx_probe",
    "tx_cnp",
    "rx_data",
    "rx_duplicate",
    "rx_ack",
    "rx_nak",
    "rx_probe",
    "rx_cnp",
    "rx_malformed",
    "rx_bad_icrc",
    "rx_unknown_connection",
    "rx_wrong_source",
    "rx_wrong_transport",
    "rx_invalid",
    "rx_out_of_window",
    "rx_stale_epoch",
    "rx_access_error",
    "rx_rnr",
    "rx_resource_drop",
    "rx_out_of_sequence",
    "loss_detected",
    "rto",
    "path_failed",
    "path_recovered",
    "ecn_ce_received",
    "ecn_echo_received",
    "window_decrease",
    "bytes_placed",
    "messages_sent",
    "messages_received",
    "go_back_n",
    "tail_probe",
    "path_suspect",
    "confirm_probe",
};
static_assert(sizeof(COUNTER_NAMES) / sizeof(COUNTER_NAMES[0]) == size_t(Counter::COUNT),
              "every counter needs a name");
} // namespace

const char*
CounterName(Counter c)
{
    return size_t(c) < size_t(Counter::COUNT) ? COUNTER_NAMES[size_t(c)] : "unknown";
}

} // namespace metaroce
