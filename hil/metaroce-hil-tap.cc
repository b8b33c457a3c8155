/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#include "metaroce-hil-tap.h"

#include "metaroce-byte-order.h"

#include <arpa/inet.h>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <linux/if_tun.h>
#include <net/if.h>
#include <net/if_arp.h>
#include <netinet/in.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

namespace metaroce
{
namespace hil
{
namespace
{

/// The hint appended to "permission denied" errors of TAP devices.
std::string
NetAdminHint(const std::string& name)
{
    return ". TAP mode needs CAP_NET_ADMIN: run as root (or root in the network namespace), "
           "or `sudo setcap cap_net_admin+ep <program>`, or create the device for your user "
           "beforehand with `ip tuntap add dev " +
           (name.empty() ? std::string("NAME") : name) + " mode tap user $USER`";
}

/// Fill \p ifr with \p name. \return false (with \p error) if the name is not valid.
bool
FillName(ifreq& ifr, const std::string& name, std::string& error)
{
    if (name.empty() || name.size() >= IFNAMSIZ)
    {
        error = "bad interface name '" + name + "' (1 to " + std::to_string(IFNAMSIZ - 1) +
                " characters)";
        return false;
    }
    std::memset(&ifr, 0, sizeof(ifr));
    std::memcpy(ifr.ifr_name, name.c_str(), name.size());
    return true;
}

/// Run one interface ioctl on a throw-away socket of the current namespace.
bool
InterfaceIoctl(unsigned long request, ifreq& ifr, const char* what, std::string& error)
{
    int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
    {
        error = std::string("socket: ") + std::strerror(errno);
        return false;
    }
    int rc = ioctl(fd, request, &ifr);
    int err = errno;
    close(fd);
    if (rc != 0)
    {
        error = std::string(what) + " " + ifr.ifr_name + ": " + std::strerror(err);
        if (err == EPERM || err == EACCES)
        {
            error += " (needs CAP_NET_ADMIN)";
        }
        return false;
    }
    return true;
}

} // namespace

int
OpenTap(const std::string& name, std::string& actualName, std::string& error)
{
    int fd = open("/dev/net/tun", O_RDWR | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
    {
        int err = errno;
        error = std::string("open /dev/net/tun: ") + std::strerror(err);
        if (err == EPERM || err == EACCES)
        {
            error += NetAdminHint(name);
        }
        else if (err == ENOENT || err == ENODEV)
        {
            error += " (load the tun module: modprobe tun)";
        }
        return -1;
    }
    ifreq ifr{};
    if (!name.empty())
    {
        if (name.size() >= IFNAMSIZ)
        {
            error = "TAP name '" + name + "' is longer than " + std::to_string(IFNAMSIZ - 1) +
                    " characters";
            close(fd);
            return -1;
        }
        std::memcpy(ifr.ifr_name, name.c_str(), name.size());
    }
    ifr.ifr_flags = IFF_TAP | IFF_NO_PI;
    if (ioctl(fd, TUNSETIFF, &ifr) != 0)
    {
        int err = errno;
        error = "TUNSETIFF (create TAP " + (name.empty() ? std::string("tapN") : name) +
                "): " + std::strerror(err);
        if (err == EPERM || err == EACCES)
        {
            error += NetAdminHint(name);
        }
        else if (err == EBUSY)
        {
            error += " (another program has it open, or it exists and is not a TAP device)";
        }
        else if (err == EINVAL)
        {
            error += " (an interface of another type has this name)";
        }
        close(fd);
        return -1;
    }
    actualName = ifr.ifr_name;
    return fd;
}

bool
GetInterfaceMac(const std::string& name, MacAddress& mac, std::string& error)
{
    ifreq ifr;
    if (!FillName(ifr, name, error) || !InterfaceIoctl(SIOCGIFHWADDR, ifr, "SIOCGIFHWADDR", error))
    {
        return false;
    }
    std::memcpy(mac.bytes, ifr.ifr_hwaddr.sa_data, MAC_ADDRESS_SIZE);
    return true;
}

bool
SetInterfaceMac(const std::string& name, const MacAddress& mac, std::string& error)
{
    ifreq ifr;
    if (!FillName(ifr, name, error))
    {
        return false;
    }
    ifr.ifr_hwaddr.sa_family = ARPHRD_ETHER;
    std::memcpy(ifr.ifr_hwaddr.sa_data, mac.bytes, MAC_ADDRESS_SIZE);
    return InterfaceIoctl(SIOCSIFHWADDR, ifr, "SIOCSIFHWADDR", error);
}

bool
GetInterfaceMtu(const std::string& name, uint32_t& mtu, std::string& error)
{
    ifreq ifr;
    if (!FillName(ifr, name, error) || !InterfaceIoctl(SIOCGIFMTU, ifr, "SIOCGIFMTU", error))
    {
        return false;
    }
    mtu = uint32_t(ifr.ifr_mtu);
    return true;
}

bool
SetInterfaceMtu(const std::string& name, uint32_t mtu, std::string& error)
{
    ifreq ifr;
    if (!FillName(ifr, name, error))
    {
        return false;
    }
    ifr.ifr_mtu = int(mtu);
    return InterfaceIoctl(SIOCSIFMTU, ifr, "SIOCSIFMTU", error);
}

bool
SetInterfaceAddress(const std::string& name, uint32_t ip, uint32_t prefixLength, std::string& error)
{
    if (prefixLength == 0 || prefixLength > 32)
    {
        error = "bad prefix length /" + std::to_string(prefixLength);
        return false;
    }
    ifreq ifr;
    if (!FillName(ifr, name, error))
    {
        return false;
    }
    auto* addr = reinterpret_cast<sockaddr_in*>(&ifr.ifr_addr);
    addr->sin_family = AF_INET;
    addr->sin_addr.s_addr = htonl(ip);
    if (!InterfaceIoctl(SIOCSIFADDR, ifr, "SIOCSIFADDR", error))
    {
        return false;
    }
    FillName(ifr, name, error);
    auto* mask = reinterpret_cast<sockaddr_in*>(&ifr.ifr_netmask);
    mask->sin_family = AF_INET;
    mask->sin_addr.s_addr =
        htonl(prefixLength == 32 ? 0xffffffffu : ~(0xffffffffu >> prefixLength));
    return InterfaceIoctl(SIOCSIFNETMASK, ifr, "SIOCSIFNETMASK", error);
}

bool
SetInterfaceUp(const std::string& name, bool up, std::string& error)
{
    ifreq ifr;
    if (!FillName(ifr, name, error) || !InterfaceIoctl(SIOCGIFFLAGS, ifr, "SIOCGIFFLAGS", error))
    {
        return false;
    }
    if (bool(ifr.ifr_flags & IFF_UP) == up)
    {
        return true; // nothing to do (and no privilege needed for a device made for us)
    }
    if (up)
    {
        ifr.ifr_flags |= IFF_UP;
    }
    else
    {
        ifr.ifr_flags &= ~IFF_UP;
    }
    return InterfaceIoctl(SIOCSIFFLAGS, ifr, "SIOCSIFFLAGS", error);
}

bool
ParseArpRequest(const uint8_t* frame,
                size_t len,
                MacAddress& senderMac,
                uint32_t& senderIp,
                uint32_t& targetIp)
{
    // Ethernet | htype 1 | ptype 0x0800 | hlen 6 | plen 4 | oper | sha | spa | tha | tpa
    if (len < ARP_FRAME_SIZE || ReadU16(frame + ETHERNET_TYPE_OFFSET) != ETHERTYPE_ARP)
    {
        return false;
    }
    const uint8_t* arp = frame + ETHERNET_HEADER_SIZE;
    if (ReadU16(arp) != 1 || ReadU16(arp + 2) != ETHERTYPE_IPV4 || arp[4] != 6 || arp[5] != 4 ||
        ReadU16(arp + 6) != 1)
    {
        return false;
    }
    std::memcpy(senderMac.bytes, arp + 8, MAC_ADDRESS_SIZE);
    senderIp = ReadU32(arp + 14);
    targetIp = ReadU32(arp + 24);
    return true;
}

size_t
BuildArpReply(uint8_t* out,
              const MacAddress& mac,
              uint32_t ip,
              const MacAddress& toMac,
              uint32_t toIp)
{
    std::memcpy(out + ETHERNET_DST_OFFSET, toMac.bytes, MAC_ADDRESS_SIZE);
    std::memcpy(out + ETHERNET_SRC_OFFSET, mac.bytes, MAC_ADDRESS_SIZE);
    WriteU16(out + ETHERNET_TYPE_OFFSET, ETHERTYPE_ARP);
    uint8_t* arp = out + ETHERNET_HEADER_SIZE;
    WriteU16(arp, 1);
    WriteU16(arp + 2, ETHERTYPE_IPV4);
    arp[4] = 6;
    arp[5] = 4;
    WriteU16(arp + 6, 2); // reply
    std::memcpy(arp + 8, mac.bytes, MAC_ADDRESS_SIZE);
    WriteU32(arp + 14, ip);
    std::memcpy(arp + 18, toMac.bytes, MAC_ADDRESS_SIZE);
    WriteU32(arp + 24, toIp);
    return ARP_FRAME_SIZE;
}

bool
ParseIpv4Prefix(const std::string& text, uint32_t& ip, uint32_t& prefixLength)
{
    size_t slash = text.find('/');
    if (slash == std::string::npos || slash + 1 >= text.size() || text.size() - slash > 3)
    {
        return false;
    }
    in_addr a{};
    if (inet_pton(AF_INET, text.substr(0, slash).c_str(), &a) != 1)
    {
        return false;
    }
    uint32_t n = 0;
    for (size_t i = slash + 1; i < text.size(); ++i)
    {
        if (text[i] < '0' || text[i] > '9')
        {
            return false;
        }
        n = n * 10 + uint32_t(text[i] - '0');
    }
    if (n == 0 || n > 32)
    {
        return false;
    }
    ip = ntohl(a.s_addr);
    prefixLength = n;
    return true;
}

NetnsScope::NetnsScope(const std::string& name)
{
    if (name.empty())
    {
        m_ok = true;
        return;
    }
    if (name.find('/') != std::string::npos)
    {
        m_why = "bad namespace name '" + name + "'";
        return;
    }
    m_original = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
    if (m_original < 0)
    {
        m_why = std::string("open /proc/self/ns/net: ") + std::strerror(errno);
        return;
    }
    std::string path = "/run/netns/" + name;
    int target = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (target < 0)
    {
        m_why = "network namespace " + name + " (" + path + "): " + std::strerror(errno) +
                " (create it with `ip netns add " + name + "`)";
        return;
    }
    if (setns(target, CLONE_NEWNET) != 0)
    {
        int err = errno;
        m_why = "setns " + name + ": " + std::strerror(err);
        if (err == EPERM)
        {
            m_why += " (entering a namespace needs CAP_SYS_ADMIN: run as root)";
        }
        close(target);
        return;
    }
    close(target);
    m_ok = true;
}

NetnsScope::~NetnsScope()
{
    if (m_original >= 0)
    {
        if (m_ok && setns(m_original, CLONE_NEWNET) != 0)
        {
            // Cannot happen for a namespace we came from; staying in the wrong one would be
            // worse than stopping.
            std::abort();
        }
        close(m_original);
    }
}

} // namespace hil
} // namespace metaroce
