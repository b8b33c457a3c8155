/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#ifndef METAROCE_HIL_FABRIC_OPTIONS_H
#define METAROCE_HIL_FABRIC_OPTIONS_H

#include <cstdint>
#include <string>
#include <vector>

/**
 * \file
 * metaroce-hil-fabric's command line on the HIL option layer (metaroce-hil-options.h): the
 * options in kebab-case, with the ns-3 style camelCase spellings of earlier releases
 * (--hostsPerLeaf, --simHosts, ...) as deprecated aliases.
 */

namespace metaroce
{
namespace hil
{

/// One --taps or --sim-hosts entry.
struct TapSpec
{
    std::string netns; //!< namespace ("" = this one)
    std::string name;  //!< interface name
};

/// One --fail-link entry.
struct FailSpec
{
    uint32_t leaf;  //!< leaf switch index
    uint32_t spine; //!< spine switch index
    double start;   //!< seconds
    double stop;    //!< seconds (negative: for good)
};

/// The settings of metaroce-hil-fabric (defaults as in its --help).
struct FabricOptions
{
    std::vector<TapSpec> taps;        //!< --taps
    uint32_t leaves{2};               //!< leaf switches
    uint32_t hostsPerLeaf{2};         //!< hosts per leaf
    double oversubscription{1.0};     //!< leaf oversubscription
    std::string hostRate{"10Gbps"};   //!< host link rate (ns-3 DataRate text)
    std::string fabricRate{"10Gbps"}; //!< leaf-spine link rate (ns-3 DataRate text)
    std::string linkDelay{"1us"};     //!< propagation delay (ns-3 Time text)
    double loss{0};                   //!< Bernoulli loss per leaf-spine link and direction
    std::vector<FailSpec> failLinks;  //!< --fail-link
    bool ecn{true};                   //!< ECN marking
    uint32_t ecnKmin{100000};         //!< ECN Kmin, bytes
    uint32_t ecnKmax{400000};         //!< ECN Kmax, bytes
    double ecnPmax{0.2};              //!< ECN marking probability at Kmax
    uint16_t dataPort{4791};          //!< RoCE UDP port
    uint32_t prefixLength{16};        //!< prefix length of the TAP addresses
    uint32_t hostQueueKb{2048};       //!< TAP host port queue limit, KiB
    double duration{0};               //!< seconds (0: until a signal)
    uint32_t seed{1};                 //!< ns-3 run number
    std::string pcap;                 //!< pcap prefix ("" = none)
    std::vector<TapSpec> simHosts;    //!< --sim-hosts
    uint16_t controlPort{18515};      //!< simulated hosts' control port
    double simTimeout{5};             //!< simulated hosts' control timeout, seconds
    double slowdown{1};               //!< run K times slower than modelled
    double maxLagMs{10};              //!< lag bound, ms
    /// Mark CE on ECN-capable RoCE frames from a TAP while the simulation lags the wall clock
    /// by more than this, microseconds (0: off).
    double lagEcnUs{1000};
    std::string simulator{"metaroce"}; //!< the real-time event loop: "metaroce" or "ns3"
    bool failBehind{false};            //!< exit 3 if the run fell behind
};

/**
 * Parse metaroce-hil-fabric's command line into \p opts (printing the help text or a usage
 * error). Checks what needs no topology; the --fail-link switch numbers are checked by the
 * caller once the fabric is built.
 * \return -1 to run, else the exit status: 0 after --help, EXIT_USAGE (64) on a usage error
 */
int ParseFabricOptions(int argc, char** argv, FabricOptions& opts);

} // namespace hil
} // namespace metaroce

#endif // METAROCE_HIL_FABRIC_OPTIONS_H
