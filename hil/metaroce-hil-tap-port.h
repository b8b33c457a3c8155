/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#ifndef METAROCE_HIL_TAP_PORT_H
#define METAROCE_HIL_TAP_PORT_H

#include "metaroce-hil-clock.h"
#include "metaroce-hil-frame-port.h"
#include "metaroce-hil-log.h"

#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <memory>
#include <vector>

/**
 * \file
 * The TAP frame port: the engine is a host behind a TAP device (/dev/net/tun, IFF_TAP), with
 * the kernel of this network namespace as its only neighbour, like a virtual machine on a
 * routed TAP. Frames are built and parsed by the engine's shared EncapsulateFrame() /
 * ParseFrame() (byte-identical to the simulator's and the raw port's, ECN bits included).
 *
 * The engine owns its address (--local-ip) and a MAC (default 02:00 + the address); the
 * kernel's side of the TAP is the gateway: every datagram goes to the TAP interface's own MAC
 * (or to --peer-mac) and the kernel routes it (net.ipv4.ip_forward=1 where the peer is behind
 * another interface). The port answers the kernel's ARP requests for its address itself.
 *
 * Needs CAP_NET_ADMIN to create the device (or a persistent device made beforehand for the
 * user with `ip tuntap add ... user`). A device the port created disappears when it closes.
 */

namespace metaroce
{
namespace hil
{

/// Settings of a TapFramePort.
struct TapPortConfig
{
    std::string device;               //!< TAP interface name (created if it does not exist)
    uint32_t localIp{0};              //!< engine address (required)
    uint16_t dataPort{ROCE_UDP_PORT}; //!< UDP destination port of our datagrams
    bool localMacGiven{false};        //!< use localMac (else 02:00 + localIp)
    MacAddress localMac;              //!< the engine's MAC
    bool staticPeerMac{false};        //!< send every frame to peerMac
    MacAddress peerMac;               //!< the static next hop (default: the TAP's kernel MAC)
    uint32_t kernelIp{0};             //!< address to give the kernel side (0: leave it)
    uint32_t kernelPrefixLength{24};  //!< its prefix length
    uint32_t minMtu{0};               //!< raise the TAP MTU to at least this (0: leave it)
};

/// Transport datagrams in Ethernet frames on a TAP device.
class TapFramePort : public FramePort
{
  public:
    /**
     * Create or attach to the TAP device, configure it and bring it up.
     * \param[out] error why it failed (a missing CAP_NET_ADMIN is named as such)
     * \return the port, or nullptr
     */
    static std::unique_ptr<TapFramePort> Open(boost::asio::io_context& io,
                                              const HostClock& clock,
                                              const TapPortConfig& cfg,
                                              std::string& error);

    ~TapFramePort() override;

    /// \return the engine address.
    uint32_t LocalIp() const
    {
        return m_cfg.localIp;
    }

    /// \return the TAP MTU.
    uint32_t Mtu() const
    {
        return m_mtu;
    }

    /// \return ARP requests for the engine address answered.
    uint64_t ArpReplies() const
    {
        return m_arpReplies;
    }

    void Start(ReceiveHandler onDatagram, BatchHandler onBatch) override;
    SendStatus Send(const TxDatagram& tx) override;
    void AsyncWaitWritable(WritableHandler handler) override;
    void Close() override;
    PortCounters Counters() const override;
    std::string Describe() const override;

    MacAddress LocalMac() const override
    {
        return m_cfg.localMac;
    }

  private:
    TapFramePort(boost::asio::io_context& io,
                 const HostClock& clock,
                 const TapPortConfig& cfg,
                 int fd,
                 const MacAddress& gatewayMac,
                 uint32_t mtu);

    void DoReceive();
    void OnReceive(const boost::system::error_code& error);
    /// Answer \p frame if it is an ARP request for our address. \return true if it was ARP.
    bool HandleArp(const uint8_t* frame, size_t len);

    const HostClock& m_clock;                    //!< for rate-limited logs
    TapPortConfig m_cfg;                         //!< settings (localMac filled in)
    boost::asio::posix::stream_descriptor m_tap; //!< the TAP descriptor
    MacAddress m_gatewayMac;                     //!< the kernel side's MAC
    uint32_t m_mtu;                              //!< TAP MTU
    ReceiveHandler m_onDatagram;                 //!< receive handler
    BatchHandler m_onBatch;                      //!< batch handler
    PortCounters m_counters;                     //!< counters
    uint64_t m_arpReplies{0};                    //!< ARP replies sent
    std::vector<uint8_t> m_rxBuffer;             //!< one frame
    std::vector<uint8_t> m_txBuffer;             //!< one frame
    bool m_closed{false};                        //!< Close() was called
    RateLimiter m_errorLog;                      //!< error lines
    RateLimiter m_malformedLog;                  //!< malformed-frame lines
};

} // namespace hil
} // namespace metaroce

#endif // METAROCE_HIL_TAP_PORT_H
