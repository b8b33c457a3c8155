/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#ifndef METAROCE_VERBS_CONFIG_H
#define METAROCE_VERBS_CONFIG_H

#include "metaroce-encap.h"
#include "metaroce-hil-clock.h"

#include <cstdint>
#include <string>

/**
 * \file
 * The configuration of the drop-in libibverbs, read from METAROCE_VERBS_* environment
 * variables (docs/verbs.md), and the network interface the device sits on.
 */

namespace metaroce
{
namespace verbs
{

/// Settings from the environment.
struct VerbsConfig
{
    std::string iface;                 //!< METAROCE_VERBS_IFACE: interface ("" = first with IPv4)
    uint32_t ip{0};                    //!< METAROCE_VERBS_IP: address (0 = the interface's first)
    std::string transport{"metaroce"}; //!< METAROCE_VERBS_TRANSPORT: "metaroce" or "rocev2"
    uint32_t numPaths{8};              //!< METAROCE_VERBS_PATHS: MetaRoCE paths per QP (1..128)
    uint16_t udpPort{4791};            //!< METAROCE_VERBS_UDP_PORT: data port, ours and the peer's
    uint32_t mtu{0};                   //!< METAROCE_VERBS_MTU: active MTU (0 = from the interface)
    double loss{0};                    //!< METAROCE_VERBS_LOSS: fault wrapper drop probability
    uint64_t seed{1};                  //!< METAROCE_VERBS_SEED: engine and fault seed
    std::string logLevel{"warn"};      //!< METAROCE_VERBS_LOG: spdlog level
    uint32_t rtoMinUs{1000};           //!< METAROCE_VERBS_RTO_MIN_US: RTO floor (docs/hil.md)
    std::string portMode{"udp"};       //!< METAROCE_VERBS_PORT: "udp" sockets or "raw" AF_PACKET
    uint32_t connTimeoutMs{2000};      //!< METAROCE_VERBS_CONN_TIMEOUT_MS: give up on a silent peer
    bool hostDelay{true};              //!< METAROCE_VERBS_HOST_DELAY: RTOs wait the measured stalls
    /// METAROCE_VERBS_PACING_SLACK_US: the pacer's slack (metaroce-perf --pacing-slack-us)
    uint32_t pacingSlackUs{hil::DEFAULT_PACING_SLACK_US};
};

/**
 * Read the METAROCE_VERBS_* variables.
 * \param[out] cfg the settings
 * \param[out] why the first bad variable, e.g. "METAROCE_VERBS_PATHS=0: not in 1..128"
 * \return false on a bad value
 */
bool LoadConfig(VerbsConfig& cfg, std::string& why);

/// What the device reports about its interface.
struct InterfaceInfo
{
    std::string name;    //!< interface name
    uint32_t ip{0};      //!< IPv4 address (host order)
    uint32_t mtu{1500};  //!< interface MTU, bytes
    MacAddress mac;      //!< hardware address (zero if none)
    bool running{false}; //!< IFF_UP and IFF_RUNNING
};

/**
 * Find the interface of \p cfg (by name, by address, or the first non-loopback one with an
 * IPv4 address). \return false with \p why if there is none.
 */
bool FindInterface(const VerbsConfig& cfg, InterfaceInfo& info, std::string& why);

/// \return the largest IB MTU (256..4096) whose RoCEv2 packets fit in \p ifaceMtu bytes.
uint32_t ActiveMtuBytes(uint32_t ifaceMtu);

} // namespace verbs
} // namespace metaroce

#endif // METAROCE_VERBS_CONFIG_H
