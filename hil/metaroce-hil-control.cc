/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#include "metaroce-hil-control.h"

#include "metaroce-hil-timers.h"
#include "metaroce-transport-settings.h"

#include <algorithm>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>
#include <cstdio>
#include <spdlog/spdlog.h>

namespace metaroce
{
namespace hil
{

ControlChannel::ControlChannel(boost::asio::ip::tcp::socket socket,
                               const HostClock& clock,
                               Time timeout)
    : m_socket(std::move(socket)),
      m_clock(clock),
      m_timeout(timeout),
      m_heartbeat(m_socket.get_executor()),
      m_delayCheck(m_socket.get_executor())
{
    boost::system::error_code ec;
    auto local = m_socket.local_endpoint(ec);
    if (!ec && local.address().is_v4())
    {
        m_localIp = local.address().to_v4().to_uint();
    }
    auto remote = m_socket.remote_endpoint(ec);
    if (!ec)
    {
        if (remote.address().is_v4())
        {
            m_peerIp = remote.address().to_v4().to_uint();
        }
        m_peerName = remote.address().to_string() + ":" + std::to_string(remote.port());
    }
    else
    {
        // The peer reset the connection before it was set up: say so in every message that
        // names it, rather than an empty name.
        m_peerName = "(a peer whose address is gone: " + ec.message() + ")";
    }
    m_socket.set_option(boost::asio::ip::tcp::no_delay(true), ec);
}

void
ControlChannel::Start(MessageHandler onMessage, ErrorHandler onError)
{
    m_onMessage = std::move(onMessage);
    m_onError = std::move(onError);
    m_lastHeard = m_clock.Now();
    DoReadHeader();
    DoHeartbeat();
}

void
ControlChannel::Send(const proto::ControlMessage& msg)
{
    if (m_closed)
    {
        return;
    }
    std::string body = msg.SerializeAsString();
    std::vector<uint8_t> framed(4 + body.size());
    uint32_t n = uint32_t(body.size());
    framed[0] = uint8_t(n >> 24);
    framed[1] = uint8_t(n >> 16);
    framed[2] = uint8_t(n >> 8);
    framed[3] = uint8_t(n);
    std::copy(body.begin(), body.end(), framed.begin() + 4);
    m_out.push_back(std::move(framed));
    if (!m_writing)
    {
        DoWrite();
    }
}

void
ControlChannel::DoWrite()
{
    m_writing = true;
    boost::asio::async_write(m_socket,
                             boost::asio::buffer(m_out.front()),
                             [self = shared_from_this()](const boost::system::error_code& error,
                                                         size_t) { self->OnWrite(error); });
}

void
ControlChannel::OnWrite(const boost::system::error_code& error)
{
    m_writing = false;
    if (m_closed)
    {
        return;
    }
    if (error)
    {
        Fail("control connection to " + m_peerName + " broke while sending: " + error.message());
        return;
    }
    m_out.pop_front();
    if (!m_out.empty())
    {
        DoWrite();
    }
    else if (m_closeAfterFlush)
    {
        Close();
    }
}

void
ControlChannel::CloseAfterFlush()
{
    m_onMessage = nullptr;
    m_onError = nullptr;
    if (!m_writing && m_out.empty())
    {
        Close();
    }
    else
    {
        m_closeAfterFlush = true;
    }
}

void
ControlChannel::DoReadHeader()
{
    boost::asio::async_read(m_socket,
                            boost::asio::buffer(m_header),
                            [self = shared_from_this()](const boost::system::error_code& error,
                                                        size_t) { self->OnReadHeader(error); });
}

void
ControlChannel::OnReadHeader(const boost::system::error_code& error)
{
    if (m_closed)
    {
        return;
    }
    if (error)
    {
        Fail(error == boost::asio::error::eof
                 ? "peer " + m_peerName + " closed the control connection"
                 : "control connection to " + m_peerName + ": " + error.message());
        return;
    }
    m_lastHeard = m_clock.Now();
    uint32_t length = uint32_t(m_header[0]) << 24 | uint32_t(m_header[1]) << 16 |
                      uint32_t(m_header[2]) << 8 | m_header[3];
    if (length > CONTROL_MAX_MESSAGE)
    {
        ++m_malformed;
        Fail("malformed control stream from " + m_peerName + ": message length " +
             std::to_string(length) + " exceeds " + std::to_string(CONTROL_MAX_MESSAGE) +
             " (not a metaroce-hil peer?)");
        return;
    }
    DoReadBody(length);
}

void
ControlChannel::DoReadBody(uint32_t length)
{
    m_body.resize(length);
    boost::asio::async_read(m_socket,
                            boost::asio::buffer(m_body),
                            [self = shared_from_this()](const boost::system::error_code& error,
                                                        size_t) { self->OnReadBody(error); });
}

void
ControlChannel::OnReadBody(const boost::system::error_code& error)
{
    if (m_closed)
    {
        return;
    }
    if (error)
    {
        Fail("control connection to " + m_peerName + " broke inside a message: " + error.message());
        return;
    }
    m_lastHeard = m_clock.Now();
    proto::ControlMessage msg;
    if (!msg.ParseFromArray(m_body.data(), int(m_body.size())) ||
        msg.body_case() == proto::ControlMessage::BODY_NOT_SET)
    {
        ++m_malformed;
        uint64_t suppressed = 0;
        if (m_malformedLog.Allow(m_clock.Now(), suppressed))
        {
            spdlog::warn("dropped a malformed {}-byte control message from {} ({} more "
                         "suppressed)",
                         m_body.size(),
                         m_peerName,
                         suppressed);
        }
    }
    else if (msg.body_case() == proto::ControlMessage::kHeartbeat)
    {
        // 0 is a report too: the peer's delay fell, or it measures none.
        uint64_t ns = msg.heartbeat().host_delay_ns();
        if (m_onPeerDelay)
        {
            m_onPeerDelay(Time(std::min<uint64_t>(ns, uint64_t(MAX_PEER_HOST_DELAY / 1000))) *
                          1000);
        }
    }
    else if (m_onMessage)
    {
        MessageHandler handler = m_onMessage; // may close the channel
        handler(msg);
    }
    if (!m_closed)
    {
        DoReadHeader();
    }
}

void
ControlChannel::SetHostDelayExchange(std::function<Time()> own, std::function<void(Time)> onPeer)
{
    m_ownHostDelay = std::move(own);
    m_onPeerDelay = std::move(onPeer);
    if (m_ownHostDelay && !m_delayChecking && !m_closed)
    {
        m_delayChecking = true;
        DoHostDelayCheck();
    }
}

void
ControlChannel::DoHeartbeat()
{
    // Tick at a quarter of the timeout (at most 1 s): heartbeat out, silence check in.
    Time interval = std::min<Time>(m_timeout / 4, MilliSeconds(1000));
    m_heartbeat.expires_after(std::chrono::nanoseconds(interval / 1000));
    m_heartbeat.async_wait([self = shared_from_this()](const boost::system::error_code& error) {
        self->OnHeartbeat(error);
    });
}

void
ControlChannel::OnHeartbeat(const boost::system::error_code& error)
{
    if (error || m_closed)
    {
        return;
    }
    Time silent = m_clock.Now() - m_lastHeard;
    if (silent > m_timeout)
    {
        char text[64];
        std::snprintf(text, sizeof(text), "%.1f", double(silent) / 1e12);
        Fail("peer " + m_peerName + " vanished: no control message for " + text + " s (timeout)");
        return;
    }
    SendHeartbeat();
    DoHeartbeat();
}

void
ControlChannel::SendHeartbeat()
{
    proto::ControlMessage hb;
    hb.mutable_heartbeat()->set_sequence(++m_heartbeatSeq);
    if (m_ownHostDelay)
    {
        m_delayReported = std::max<Time>(m_ownHostDelay(), 0);
        hb.mutable_heartbeat()->set_host_delay_ns(uint64_t(m_delayReported) / 1000);
    }
    Send(hb);
}

void
ControlChannel::DoHostDelayCheck()
{
    m_delayCheck.expires_after(std::chrono::nanoseconds(HOST_DELAY_CHECK / 1000));
    m_delayCheck.async_wait([self = shared_from_this()](const boost::system::error_code& error) {
        if (error || self->m_closed || !self->m_ownHostDelay)
        {
            self->m_delayChecking = false;
            return;
        }
        Time own = std::max<Time>(self->m_ownHostDelay(), 0);
        Time last = self->m_delayReported;
        if (own > last + std::max<Time>(last / 4, MicroSeconds(100)) || own < last / 2)
        {
            self->SendHeartbeat();
        }
        self->DoHostDelayCheck();
    });
}

void
ControlChannel::Fail(const std::string& reason)
{
    if (m_closed)
    {
        return;
    }
    ErrorHandler handler = m_onError;
    Close();
    if (handler)
    {
        handler(reason);
    }
}

void
ControlChannel::Close()
{
    if (m_closed)
    {
        return;
    }
    m_closed = true;
    boost::system::error_code ignored;
    m_heartbeat.cancel();
    m_delayCheck.cancel();
    m_socket.shutdown(boost::asio::ip::tcp::socket::shutdown_both, ignored);
    m_socket.close(ignored);
    m_onMessage = nullptr;
    m_onError = nullptr;
    m_ownHostDelay = nullptr;
    m_onPeerDelay = nullptr;
}

proto::ConnectionSettings
SettingsOf(const ConnectionConfig& cfg, bool icrc)
{
    proto::ConnectionSettings s;
    s.set_transport(cfg.transport);
    s.set_mtu(cfg.mtu);
    s.set_num_paths(cfg.transport == "rocev2" ? 1 : cfg.numPaths);
    s.set_max_outstanding_wrs(cfg.maxOutstandingWrs);
    s.set_max_message_size(cfg.maxMessageSize);
    s.set_max_streams(cfg.maxStreams);
    s.set_max_posted_recvs(cfg.maxPostedRecvs);
    s.set_icrc(icrc);
    if (cfg.transport == "rocev2")
    {
        s.set_rocev2_recovery(cfg.rocev2.recovery);
    }
    return s;
}

std::string
ApplySettings(const proto::ConnectionSettings& s, ConnectionConfig& cfg)
{
    // The transport fields go through the mapping the scenario runner uses too; the recovery
    // is RoCEv2's only.
    TransportSettings transport;
    transport.transport = s.transport();
    transport.numPaths = s.num_paths();
    transport.mtu = s.mtu();
    if (s.transport() == "rocev2")
    {
        transport.rocev2Recovery = RoceRecoveryOf(s);
    }
    ConnectionConfig applied = cfg;
    if (const std::optional<TransportError> error = ApplyTransportSettings(transport, applied))
    {
        return error->Message();
    }
    if (s.max_streams() == 0 || s.max_streams() > 65535)
    {
        return "bad max_streams " + std::to_string(s.max_streams());
    }
    applied.maxOutstandingWrs = s.max_outstanding_wrs();
    applied.maxMessageSize = s.max_message_size();
    applied.maxStreams = uint16_t(s.max_streams());
    applied.maxPostedRecvs = s.max_posted_recvs();
    cfg = applied;
    return "";
}

Time
ControlChannel::SmoothedRtt() const
{
    return TcpSmoothedRtt(const_cast<boost::asio::ip::tcp::socket&>(m_socket).native_handle());
}

std::string
RoceRecoveryOf(const proto::ConnectionSettings& s)
{
    if (s.transport() != "rocev2")
    {
        return "";
    }
    return s.rocev2_recovery().empty() ? "gbn" : s.rocev2_recovery();
}

std::string
CompareSettings(const proto::ConnectionSettings& ours,
                const proto::ConnectionSettings& peer,
                const std::string& oursName,
                const std::string& peerName)
{
    std::string diff;
    auto note = [&](const char* name, const std::string& a, const std::string& b) {
        if (a != b)
        {
            diff += (diff.empty() ? "" : "; ") + std::string(name) + ": " + oursName + " " + a +
                    ", " + peerName + " " + b;
        }
    };
    auto num = [](uint64_t v) { return std::to_string(v); };
    note("transport", ours.transport(), peer.transport());
    note("mtu", num(ours.mtu()), num(peer.mtu()));
    note("paths", num(ours.num_paths()), num(peer.num_paths()));
    note("max outstanding WRs", num(ours.max_outstanding_wrs()), num(peer.max_outstanding_wrs()));
    note("max message size", num(ours.max_message_size()), num(peer.max_message_size()));
    note("max streams", num(ours.max_streams()), num(peer.max_streams()));
    note("max posted recvs", num(ours.max_posted_recvs()), num(peer.max_posted_recvs()));
    note("icrc", ours.icrc() ? "on" : "off", peer.icrc() ? "on" : "off");
    note("rocev2 recovery", RoceRecoveryOf(ours), RoceRecoveryOf(peer));
    return diff;
}

} // namespace hil
} // namespace metaroce
