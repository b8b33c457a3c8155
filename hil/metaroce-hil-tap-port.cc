/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#include "metaroce-hil-tap-port.h"

#include "metaroce-byte-order.h"
#include "metaroce-hil-ethernet.h"
#include "metaroce-hil-tap.h"

#include <cerrno>
#include <cstring>
#include <spdlog/spdlog.h>
#include <unistd.h>

namespace metaroce
{
namespace hil
{
namespace
{

/// Largest frame read (jumbo frames and then some; longer ones are truncated and dropped).
constexpr size_t TAP_FRAME_MAX = 65536 + FRAME_HEADERS_SIZE;

} // namespace

std::unique_ptr<TapFramePort>
TapFramePort::Open(boost::asio::io_context& io,
                   const HostClock& clock,
                   const TapPortConfig& cfg,
                   std::string& error)
{
    if (cfg.localIp == 0)
    {
        error = "TAP mode needs the engine's own address (--local-ip): the kernel's address on "
                "the TAP is the gateway, not the engine";
        return nullptr;
    }
    if (cfg.kernelIp == cfg.localIp)
    {
        error = "--tap-addr is the kernel's address on the TAP (the engine's gateway); it must "
                "differ from the engine's --local-ip";
        return nullptr;
    }
    std::string name;
    int fd = OpenTap(cfg.device, name, error);
    if (fd < 0)
    {
        return nullptr;
    }
    auto fail = [&](const std::string& what) {
        error = what;
        close(fd);
        return nullptr;
    };
    uint32_t mtu = 0;
    if (!GetInterfaceMtu(name, mtu, error))
    {
        return fail(error);
    }
    if (cfg.minMtu > mtu)
    {
        if (!SetInterfaceMtu(name, cfg.minMtu, error))
        {
            return fail(error);
        }
        mtu = cfg.minMtu;
    }
    if (cfg.kernelIp != 0 &&
        !SetInterfaceAddress(name, cfg.kernelIp, cfg.kernelPrefixLength, error))
    {
        return fail(error);
    }
    if (!SetInterfaceUp(name, true, error))
    {
        return fail(error);
    }
    MacAddress gateway;
    if (!GetInterfaceMac(name, gateway, error))
    {
        return fail(error);
    }
    TapPortConfig c = cfg;
    c.device = name;
    if (!c.localMacGiven)
    {
        c.localMac = SyntheticMac(c.localIp);
    }
    if (c.localMac == gateway)
    {
        return fail("the engine MAC " + MacToString(c.localMac) + " equals the TAP's own MAC");
    }
    return std::unique_ptr<TapFramePort>(new TapFramePort(io, clock, c, fd, gateway, mtu));
}

TapFramePort::TapFramePort(boost::asio::io_context& io,
                           const HostClock& clock,
                           const TapPortConfig& cfg,
                           int fd,
                           const MacAddress& gatewayMac,
                           uint32_t mtu)
    : m_clock(clock),
      m_cfg(cfg),
      m_tap(io, fd),
      m_gatewayMac(gatewayMac),
      m_mtu(mtu),
      m_rxBuffer(TAP_FRAME_MAX),
      m_txBuffer(TAP_FRAME_MAX)
{
}

TapFramePort::~TapFramePort()
{
    Close();
}

void
TapFramePort::Start(ReceiveHandler onDatagram, BatchHandler onBatch)
{
    m_onDatagram = std::move(onDatagram);
    m_onBatch = std::move(onBatch);
    DoReceive();
}

void
TapFramePort::DoReceive()
{
    if (m_closed)
    {
        return;
    }
    m_tap.async_wait(boost::asio::posix::stream_descriptor::wait_read,
                     [this](const boost::system::error_code& error) { OnReceive(error); });
}

bool
TapFramePort::HandleArp(const uint8_t* frame, size_t len)
{
    MacAddress senderMac;
    uint32_t senderIp = 0;
    uint32_t targetIp = 0;
    if (!ParseArpRequest(frame, len, senderMac, senderIp, targetIp))
    {
        return len >= ETHERNET_HEADER_SIZE &&
               ReadU16(frame + ETHERNET_TYPE_OFFSET) == ETHERTYPE_ARP;
    }
    if (targetIp != m_cfg.localIp)
    {
        return true;
    }
    uint8_t reply[ARP_FRAME_SIZE];
    BuildArpReply(reply, m_cfg.localMac, m_cfg.localIp, senderMac, senderIp);
    if (write(m_tap.native_handle(), reply, sizeof(reply)) == ssize_t(sizeof(reply)))
    {
        ++m_arpReplies;
    }
    return true;
}

void
TapFramePort::OnReceive(const boost::system::error_code& error)
{
    if (error)
    {
        if (error != boost::asio::error::operation_aborted)
        {
            spdlog::error("tap port: receive wait failed: {}", error.message());
        }
        return;
    }
    bool any = false;
    for (int i = 0; i < 128 && !m_closed; ++i)
    {
        ssize_t n = read(m_tap.native_handle(), m_rxBuffer.data(), m_rxBuffer.size());
        if (n <= 0)
        {
            break;
        }
        const uint8_t* frame = m_rxBuffer.data();
        if (HandleArp(frame, size_t(n)))
        {
            continue;
        }
        ParsedFrame parsed;
        if (!AcceptEngineFrame(frame,
                               size_t(n),
                               m_cfg.localIp,
                               m_cfg.dataPort,
                               "tap port",
                               m_clock.Now(),
                               m_malformedLog,
                               m_counters,
                               parsed))
        {
            continue;
        }
        any = true;
        m_onDatagram(parsed.meta, parsed.datagram, parsed.datagramLen);
    }
    if (any && m_onBatch)
    {
        m_onBatch();
    }
    DoReceive();
}

SendStatus
TapFramePort::Send(const TxDatagram& tx)
{
    if (m_closed)
    {
        return SendStatus::FAILED;
    }
    const MacAddress& dst = m_cfg.staticPeerMac ? m_cfg.peerMac : m_gatewayMac;
    const size_t len = EncapsulateForPort(tx,
                                          m_cfg.dataPort,
                                          m_cfg.localMac,
                                          dst,
                                          m_mtu,
                                          m_txBuffer.data(),
                                          m_txBuffer.size(),
                                          "tap port",
                                          m_cfg.device,
                                          "the TAP MTU",
                                          m_clock.Now(),
                                          m_errorLog,
                                          m_counters);
    if (len == 0)
    {
        return SendStatus::FAILED;
    }
    const ssize_t n = write(m_tap.native_handle(), m_txBuffer.data(), len);
    return CountSendResult(n,
                           len,
                           tx.length,
                           "tap port: write to",
                           m_cfg.device,
                           m_clock.Now(),
                           m_errorLog,
                           m_counters);
}

void
TapFramePort::AsyncWaitWritable(WritableHandler handler)
{
    m_tap.async_wait(boost::asio::posix::stream_descriptor::wait_write, std::move(handler));
}

void
TapFramePort::Close()
{
    if (m_closed)
    {
        return;
    }
    m_closed = true;
    boost::system::error_code ignored;
    m_tap.close(ignored);
}

PortCounters
TapFramePort::Counters() const
{
    return m_counters;
}

std::string
TapFramePort::Describe() const
{
    return "tap " + m_cfg.device + " " + Ipv4ToString(m_cfg.localIp) + " " +
           MacToString(m_cfg.localMac) + " via " + MacToString(m_gatewayMac) + " mtu " +
           std::to_string(m_mtu);
}

} // namespace hil
} // namespace metaroce
