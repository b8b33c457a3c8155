/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#include "metaroce-verbs-config.h"

#include "metaroce-endpoint.h"
#include "metaroce-hil-log.h"

#include <arpa/inet.h>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
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
    if (const char* v = std::getenv("METAROCE_VERBS_TRANSPORT"); v != nullptr && *v != '\0')
    {
        cfg.transport = v;
        if (cfg.transport != "metaroce" && cfg.transport != "rocev2")
        {
            why = "METAROCE_VERBS_TRANSPORT=" + cfg.transport + ": use metaroce or rocev2";
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
    uint64_t v = cfg.numPaths;
    if (!ReadUnsigned("METAROCE_VERBS_PATHS", 1, ConnectionConfig::MAX_PATHS, v, why))
    {
        return false;
    }
    cfg.numPaths = uint32_t(v);
    v = cfg.udpPort;
    if (!ReadUnsigned("METAROCE_VERBS_UDP_PORT", 1, 65535, v, why))
    {
        return false;
    }
    cfg.udpPort = uint16_t(v);
    v = cfg.mtu;
    if (!ReadUnsigned("METAROCE_VERBS_MTU", 0, 4096, v, why))
    {
        return false;
    }
    if (v != 0 && v != 256 && v != 512 && v != 1024 && v != 2048 && v != 4096)
    {
        why = "METAROCE_VERBS_MTU=" + std::to_string(v) + ": use 256, 512, 1024, 2048 or 4096";
        return false;
    }
    cfg.mtu = uint32_t(v);
    v = cfg.rtoMinUs;
    if (!ReadUnsigned("METAROCE_VERBS_RTO_MIN_US", 10, 1000000, v, why))
    {
        return false;
    }
    cfg.rtoMinUs = uint32_t(v);
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
