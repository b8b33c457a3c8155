/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#include "metaroce-verbs-config.h"

#include "metaroce-endpoint.h"
#include "metaroce-hil-log.h"
#include "metaroce-transport-settings.h"

#include <arpa/inet.h>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <optional>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

namespace metaroce
{
namespace verbs
{

namespace
{

/// Parse the unsigned variable \p name into \p out within [lo, hi]. \return false if bad.
bool
ReadUnsigned(const char* name, uint64_t lo, uint64_t hi, uint64_t& out, std::string& why)
{
    const char* text = std::getenv(name);
    if (text == nullptr || *text == '\0')
    {
        return true;
    }
    char* end = nullptr;
    errno = 0;
    unsigned long long v = std::strtoull(text, &end, 10);
    if (errno != 0 || *end != '\0' || text[0] == '-' || v < lo || v > hi)
    {
        why = std::string(name) + "=" + text + ": not a number in " + std::to_string(lo) + ".." +
              std::to_string(hi);
        return false;
    }
    out = v;
    return true;
}

/**
 * Parse the variable \p name, when it is set and not empty, as a whole number into \p out.
 * \return false with \p why if it is not one (or does not fit 32 bits)
 */
bool
ReadOptionalUnsigned(const char* name, std::optional<uint32_t>& out, std::string& why)
{
    const char* text = std::getenv(name);
    if (text == nullptr || *text == '\0')
    {
        return true;
    }
    uint64_t v = 0;
    if (!ReadUnsigned(name, 0, UINT32_MAX, v, why))
    {
        why = std::string(name) + "=" + text + ": not a whole number";
        return false;
    }
    out = uint32_t(v);
    return true;
}

/// \return whether \p bytes is an IB MTU (256 ... 4096, a power of two).
bool
IsIbMtu(uint32_t bytes)
{
    return bytes == 256 || bytes == 512 || bytes == 1024 || bytes == 2048 || bytes == 4096;
}

/// \return the variable \p field is read from: METAROCE_VERBS_TRANSPORT, _PATHS or _MTU.
const char*
TransportVariable(TransportField field)
{
    switch (field)
    {
    case TransportField::NUM_PATHS:
        return "METAROCE_VERBS_PATHS";
    case TransportField::MTU:
        return "METAROCE_VERBS_MTU";
    default: // the only other field read from the environment
        return "METAROCE_VERBS_TRANSPORT";
    }
}

/**
 * Read METAROCE_VERBS_TRANSPORT, _PATHS and _MTU (0: from the interface, so left out) and
 * check them with the engine's one transport mapping, ApplyTransportSettings() (names from the
 * policy-name registry, its limits and messages), then the MTU against the IB MTUs a port
 * reports.
 * \param[out] settings the fields that are set
 * \param[out] why the bad variable and value, then the mapping's message, e.g.
 *   "METAROCE_VERBS_PATHS=0: paths 0: must be in [1, 128]"
 * \return false on a bad value
 */
bool
ReadTransportSettings(TransportSettings& settings, std::string& why)
{
    settings = TransportSettings();
    if (const char* v = std::getenv("METAROCE_VERBS_TRANSPORT"); v != nullptr && *v != '\0')
    {
        settings.transport = v;
    }
    if (!ReadOptionalUnsigned("METAROCE_VERBS_PATHS", settings.numPaths, why) ||
        !ReadOptionalUnsigned("METAROCE_VERBS_MTU", settings.mtu, why))
    {
        return false;
    }
    if (settings.mtu == 0u)
    {
        settings.mtu.reset();
    }
    ConnectionConfig probe;
    if (const auto error = ApplyTransportSettings(settings, probe))
    {
        const char* name = TransportVariable(error->field);
        const char* value = std::getenv(name);
        why = std::string(name) + "=" + (value ? value : "") + ": " + error->Message();
        return false;
    }
    if (settings.mtu && !IsIbMtu(*settings.mtu))
    {
        why = "METAROCE_VERBS_MTU=" + std::to_string(*settings.mtu) +
              ": not an IB MTU: use 256, 512, 1024, 2048 or 4096";
        return false;
    }
    return true;
}

} // namespace

bool
LoadConfig(VerbsConfig& cfg, std::string& why)
{
    cfg = VerbsConfig();
    if (const char* v = std::getenv("METAROCE_VERBS_IFACE"))
    {
        cfg.iface = v;
        if (cfg.iface.size() >= IFNAMSIZ)
        {
            why = "METAROCE_VERBS_IFACE=" + cfg.iface + ": interface names are shorter than " +
                  std::to_string(IFNAMSIZ) + " characters";
            return false;
        }
    }
    if (const char* v = std::getenv("METAROCE_VERBS_IP"); v != nullptr && *v != '\0')
    {
        if (!hil::ParseIpv4(v, cfg.ip) || cfg.ip == 0)
        {
            why = std::string("METAROCE_VERBS_IP=") + v + ": not an IPv4 address";
            return false;
        }
    }
    if (const char* v = std::getenv("METAROCE_VERBS_PORT"); v != nullptr && *v != '\0')
    {
        cfg.portMode = v;
        if (cfg.portMode != "udp" && cfg.portMode != "raw")
        {
            why = "METAROCE_VERBS_PORT=" + cfg.portMode + ": use udp or raw";
            return false;
        }
    }
    TransportSettings transport;
    if (!ReadTransportSettings(transport, why))
    {
        return false;
    }
    cfg.transport = transport.transport.value_or(cfg.transport);
    cfg.numPaths = transport.numPaths.value_or(cfg.numPaths);
    cfg.mtu = transport.mtu.value_or(cfg.mtu);
    uint64_t v = cfg.udpPort;
    if (!ReadUnsigned("METAROCE_VERBS_UDP_PORT", 1, 65535, v, why))
    {
        return false;
    }
    cfg.udpPort = uint16_t(v);
    v = cfg.rtoMinUs;
    if (!ReadUnsigned("METAROCE_VERBS_RTO_MIN_US", 10, 1000000, v, why))
    {
        return false;
    }
    cfg.rtoMinUs = uint32_t(v);
    v = cfg.pacingSlackUs;
    if (!ReadUnsigned("METAROCE_VERBS_PACING_SLACK_US", 0, 10000, v, why))
    {
        return false;
    }
    cfg.pacingSlackUs = uint32_t(v);
    v = cfg.connTimeoutMs;
    if (!ReadUnsigned("METAROCE_VERBS_CONN_TIMEOUT_MS", 1, 3600000, v, why))
    {
        return false;
    }
    cfg.connTimeoutMs = uint32_t(v);
    v = cfg.seed;
    if (!ReadUnsigned("METAROCE_VERBS_SEED", 0, UINT64_MAX, v, why))
    {
        return false;
    }
    cfg.seed = v;
    if (const char* text = std::getenv("METAROCE_VERBS_LOSS"); text != nullptr && *text != '\0')
    {
        char* end = nullptr;
        double loss = std::strtod(text, &end);
        if (*end != '\0' || !(loss >= 0 && loss < 1))
        {
            why = std::string("METAROCE_VERBS_LOSS=") + text + ": not a probability in [0, 1)";
            return false;
        }
        cfg.loss = loss;
    }
    if (const char* text = std::getenv("METAROCE_VERBS_HOST_DELAY");
        text != nullptr && *text != '\0')
    {
        std::string value = text;
        if (value != "on" && value != "off")
        {
            why = "METAROCE_VERBS_HOST_DELAY=" + value + ": use on or off";
            return false;
        }
        cfg.hostDelay = value == "on";
    }
    if (const char* text = std::getenv("METAROCE_VERBS_LOG"); text != nullptr && *text != '\0')
    {
        std::string level = text;
        if (level != "off" && level != "error" && level != "warn" && level != "info" &&
            level != "debug" && level != "trace")
        {
            why = "METAROCE_VERBS_LOG=" + level + ": use off, error, warn, info, debug or trace";
            return false;
        }
        cfg.logLevel = level;
    }
    return true;
}

bool
FindInterface(const VerbsConfig& cfg, InterfaceInfo& info, std::string& why)
{
    ifaddrs* list = nullptr;
    if (getifaddrs(&list) != 0)
    {
        why = std::string("getifaddrs: ") + std::strerror(errno);
        return false;
    }
    bool found = false;
    for (ifaddrs* a = list; a != nullptr && !found; a = a->ifa_next)
    {
        if (a->ifa_addr == nullptr || a->ifa_addr->sa_family != AF_INET)
        {
            continue;
        }
        uint32_t ip = ntohl(reinterpret_cast<sockaddr_in*>(a->ifa_addr)->sin_addr.s_addr);
        bool match;
        if (!cfg.iface.empty())
        {
            match = cfg.iface == a->ifa_name && (cfg.ip == 0 || cfg.ip == ip);
        }
        else if (cfg.ip != 0)
        {
            match = cfg.ip == ip;
        }
        else
        {
            match = (a->ifa_flags & IFF_LOOPBACK) == 0;
        }
        if (match)
        {
            found = true;
            info.name = a->ifa_name;
            info.ip = ip;
            info.running = (a->ifa_flags & IFF_UP) && (a->ifa_flags & IFF_RUNNING);
        }
    }
    freeifaddrs(list);
    if (!found)
    {
        if (!cfg.iface.empty())
        {
            why = "interface " + cfg.iface + " has no IPv4 address" +
                  (cfg.ip != 0 ? " " + hil::Ipv4ToString(cfg.ip) : std::string()) +
                  " (METAROCE_VERBS_IFACE)";
        }
        else if (cfg.ip != 0)
        {
            why = "no interface has the address " + hil::Ipv4ToString(cfg.ip) +
                  " (METAROCE_VERBS_IP)";
        }
        else
        {
            why = "no non-loopback interface with an IPv4 address; set METAROCE_VERBS_IFACE";
        }
        return false;
    }
    int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd >= 0)
    {
        ifreq req{};
        std::strncpy(req.ifr_name, info.name.c_str(), IFNAMSIZ - 1);
        if (ioctl(fd, SIOCGIFMTU, &req) == 0)
        {
            info.mtu = uint32_t(req.ifr_mtu);
        }
        if (ioctl(fd, SIOCGIFHWADDR, &req) == 0)
        {
            std::memcpy(info.mac.bytes, req.ifr_hwaddr.sa_data, sizeof(info.mac.bytes));
        }
        close(fd);
    }
    return true;
}

uint32_t
ActiveMtuBytes(uint32_t ifaceMtu)
{
    constexpr uint32_t IP_UDP_BYTES = 20 + 8;
    for (uint32_t mtu = 4096; mtu > 256; mtu /= 2)
    {
        if (Endpoint::MaxDatagramSize(mtu) + IP_UDP_BYTES <= ifaceMtu)
        {
            return mtu;
        }
    }
    return 256;
}

} // namespace verbs
} // namespace metaroce
