/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#ifndef METAROCE_HIL_TAP_H
#define METAROCE_HIL_TAP_H

#include "metaroce-encap.h" // MacAddress

#include <cstdint>
#include <string>

/**
 * \file
 * TAP devices and interface settings, by plain system calls (no Asio, no ns-3), shared by the
 * daemon's TAP frame port and the mixed-run fabric program (which reads the descriptor with a
 * TapFramePipe). Debian's ns-3 TapBridge / TapFdNetDeviceHelper look for a helper binary
 * at a build-machine path, so we open /dev/net/tun ourselves.
 *
 * Interface settings act in the network namespace of the calling thread; NetnsScope switches
 * the thread into a named namespace (ip netns) for a while, so a program can create a TAP
 * device inside another namespace (a TAP device stays in the namespace it was created in while
 * its descriptor works from anywhere).
 */

namespace metaroce
{
namespace hil
{

/**
 * Create (or attach to an existing persistent) TAP device \p name with IFF_TAP | IFF_NO_PI:
 * every read() is one Ethernet frame without a packet-information prefix.
 * \param name the interface name ("" lets the kernel choose tapN)
 * \param[out] actualName the name the kernel gave it
 * \param[out] error why it failed; a missing CAP_NET_ADMIN is named as such
 * \return a non-blocking, close-on-exec descriptor, or -1
 */
int OpenTap(const std::string& name, std::string& actualName, std::string& error);

/// \return the MAC address of interface \p name (false + \p error if it cannot be read).
bool GetInterfaceMac(const std::string& name, MacAddress& mac, std::string& error);
/// Set the MAC address of interface \p name (it must be down).
bool SetInterfaceMac(const std::string& name, const MacAddress& mac, std::string& error);
/// \return the MTU of interface \p name.
bool GetInterfaceMtu(const std::string& name, uint32_t& mtu, std::string& error);
/// Set the MTU of interface \p name.
bool SetInterfaceMtu(const std::string& name, uint32_t mtu, std::string& error);
/// Give interface \p name the IPv4 address \p ip with a /\p prefixLength netmask.
bool SetInterfaceAddress(const std::string& name,
                         uint32_t ip,
                         uint32_t prefixLength,
                         std::string& error);
/// Bring interface \p name up (or down).
bool SetInterfaceUp(const std::string& name, bool up, std::string& error);

/// EtherType of ARP.
constexpr uint16_t ETHERTYPE_ARP = 0x0806;
/// Size of an Ethernet frame carrying an IPv4-over-Ethernet ARP packet (without padding).
constexpr size_t ARP_FRAME_SIZE = 42;

/**
 * Recognise an IPv4-over-Ethernet ARP request.
 * \param[out] senderMac who asks
 * \param[out] senderIp its address
 * \param[out] targetIp the address asked for
 * \return true if \p frame is such a request
 */
bool ParseArpRequest(const uint8_t* frame,
                     size_t len,
                     MacAddress& senderMac,
                     uint32_t& senderIp,
                     uint32_t& targetIp);

/**
 * Build the ARP reply "\p ip is at \p mac" to \p toMac / \p toIp.
 * \param out at least ARP_FRAME_SIZE bytes
 * \return ARP_FRAME_SIZE
 */
size_t BuildArpReply(uint8_t* out,
                     const MacAddress& mac,
                     uint32_t ip,
                     const MacAddress& toMac,
                     uint32_t toIp);

/**
 * Parse "A.B.C.D/N".
 * \return false if malformed
 */
bool ParseIpv4Prefix(const std::string& text, uint32_t& ip, uint32_t& prefixLength);

/**
 * Runs the calling thread in the network namespace \p name (/run/netns/NAME, as made by
 * `ip netns add`) until destroyed; an empty name stays where it is.
 */
class NetnsScope
{
  public:
    /// Enter namespace \p name; Ok() says whether it worked.
    explicit NetnsScope(const std::string& name);
    /// Return to the original namespace.
    ~NetnsScope();
    NetnsScope(const NetnsScope&) = delete;
    NetnsScope& operator=(const NetnsScope&) = delete;

    /// \return true if the thread is in the requested namespace.
    bool Ok() const
    {
        return m_ok;
    }

    /// \return why entering failed.
    const std::string& Why() const
    {
        return m_why;
    }

  private:
    int m_original{-1}; //!< descriptor of the original namespace
    bool m_ok{false};   //!< entered
    std::string m_why;  //!< failure
};

} // namespace hil
} // namespace metaroce

#endif // METAROCE_HIL_TAP_H
