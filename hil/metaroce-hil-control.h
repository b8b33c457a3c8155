/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#ifndef METAROCE_HIL_CONTROL_H
#define METAROCE_HIL_CONTROL_H

#include "metaroce-config.h"
#include "metaroce-hil-clock.h"
#include "metaroce-hil-log.h"
#include "metaroce-hil.pb.h"

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <vector>

/**
 * \file
 * The control plane: protobuf ControlMessages (hil/proto/metaroce-hil.proto) over TCP, each
 * behind a 4-byte big-endian length. The channel sends heartbeats every second and reports a
 * peer that stays silent for the timeout; malformed messages are counted and dropped with a
 * rate-limited log line, and a broken framing (length above 1 MiB) ends the channel.
 */

namespace metaroce
{
namespace hil
{

/// Largest control message accepted.
constexpr uint32_t CONTROL_MAX_MESSAGE = 1u << 20;
/// TCP port of the control plane (perftest's default).
constexpr uint16_t CONTROL_DEFAULT_PORT = 18515;

/// A framed protobuf connection to a peer daemon.
class ControlChannel : public std::enable_shared_from_this<ControlChannel>
{
  public:
    /// A received message (heartbeats are consumed by the channel).
    using MessageHandler = std::function<void(const proto::ControlMessage&)>;
    /// The channel ended: \p reason says why in one line.
    using ErrorHandler = std::function<void(const std::string& reason)>;

    /**
     * Take a connected socket.
     * \param timeout a peer silent for this long has vanished
     */
    ControlChannel(boost::asio::ip::tcp::socket socket, const HostClock& clock, Time timeout);

    /// Start reading, heartbeats and the silence watchdog.
    void Start(MessageHandler onMessage, ErrorHandler onError);
    /// Queue \p msg for sending.
    void Send(const proto::ControlMessage& msg);
    /// Close the socket and the timers; no handler is called afterwards.
    void Close();
    /// Close once the queued messages are sent; no handler is called afterwards.
    void CloseAfterFlush();

    /// \return the local IPv4 address of the connection (host order).
    uint32_t LocalIp() const
    {
        return m_localIp;
    }

    /// \return the peer's IPv4 address (host order).
    uint32_t PeerIp() const
    {
        return m_peerIp;
    }

    /// \return "ip:port" of the peer.
    const std::string& PeerName() const
    {
        return m_peerName;
    }

    /// A peer's host delay above this is taken as this (a bad value must not stop timers).
    static constexpr Time MAX_PEER_HOST_DELAY = MilliSeconds(1000);

    /// How often \p own() of SetHostDelayExchange() is checked for a change worth a report.
    static constexpr Time HOST_DELAY_CHECK = MilliSeconds(50);

    /**
     * Exchange host delays in the heartbeats: each one sent carries \p own() (0: none), and
     * each one received with a delay hands it, at most MAX_PEER_HOST_DELAY, to \p onPeer.
     * Between heartbeats, own() is read every HOST_DELAY_CHECK, and a delay that rose by a
     * quarter (and at least 100 us) or fell by half since the last report is sent at once in a
     * heartbeat of its own, so that a peer hears of a stall in tens of milliseconds, not at
     * the next heartbeat. Empty functions stop the exchange.
     */
    void SetHostDelayExchange(std::function<Time()> own, std::function<void(Time)> onPeer);

    /// \return the kernel's smoothed round-trip time of the connection (0 if unknown).
    Time SmoothedRtt() const;

    /// \return messages dropped because they did not parse.
    uint64_t Malformed() const
    {
        return m_malformed;
    }

  private:
    void DoReadHeader();
    void OnReadHeader(const boost::system::error_code& error);
    void DoReadBody(uint32_t length);
    void OnReadBody(const boost::system::error_code& error);
    void DoWrite();
    void OnWrite(const boost::system::error_code& error);
    void DoHeartbeat();
    void OnHeartbeat(const boost::system::error_code& error);
    void Fail(const std::string& reason);
    /// Send a heartbeat (with the host delay, if exchanged).
    void SendHeartbeat();
    void DoHostDelayCheck();

    boost::asio::ip::tcp::socket m_socket;   //!< connection
    const HostClock& m_clock;                //!< time
    Time m_timeout;                          //!< silence limit
    boost::asio::steady_timer m_heartbeat;   //!< heartbeat and watchdog tick
    MessageHandler m_onMessage;              //!< message handler
    ErrorHandler m_onError;                  //!< error handler
    uint8_t m_header[4]{};                   //!< length prefix being read
    std::vector<uint8_t> m_body;             //!< message being read
    std::deque<std::vector<uint8_t>> m_out;  //!< framed messages to send
    bool m_writing{false};                   //!< a write is in progress
    bool m_closed{false};                    //!< Close() or Fail() happened
    bool m_closeAfterFlush{false};           //!< CloseAfterFlush() was called
    Time m_lastHeard{0};                     //!< last byte received
    uint64_t m_heartbeatSeq{0};              //!< heartbeat counter
    std::function<Time()> m_ownHostDelay;    //!< SetHostDelayExchange()
    std::function<void(Time)> m_onPeerDelay; //!< SetHostDelayExchange()
    boost::asio::steady_timer m_delayCheck;  //!< HOST_DELAY_CHECK tick
    bool m_delayChecking{false};             //!< the tick is running
    Time m_delayReported{0};                 //!< the last own delay sent
    uint64_t m_malformed{0};                 //!< unparsable messages
    uint32_t m_localIp{0};                   //!< local address
    uint32_t m_peerIp{0};                    //!< peer address
    std::string m_peerName;                  //!< "ip:port"
    RateLimiter m_malformedLog;              //!< malformed-message lines
};

/// \return the settings of \p cfg as the control plane carries them.
proto::ConnectionSettings SettingsOf(const ConnectionConfig& cfg, bool icrc);

/**
 * The inverse of SettingsOf(): take the settings a peer sent into \p cfg (the ICRC flag is the
 * caller's). The one mapping of the control plane's settings to a ConnectionConfig: transport,
 * num_paths, mtu and rocev2_recovery go through ApplyTransportSettings(), the mapping the
 * scenario runner uses too (metaroce-transport-settings.h), so a bad one is refused with the
 * same message; RoCEv2 has one path (num_paths must still be in 1..MAX_PATHS).
 * \param s the peer's settings
 * \param[in,out] cfg the fields not carried by the control plane (timers, rates) are kept
 * \return "" if \p s passes ApplyTransportSettings() and has a stream count in 1..65535,
 *         else why not (then \p cfg is unchanged)
 */
std::string ApplySettings(const proto::ConnectionSettings& s, ConnectionConfig& cfg);

/// \return the RoCEv2 loss recovery \p s asks for ("gbn" when empty; "" for MetaRoCE).
std::string RoceRecoveryOf(const proto::ConnectionSettings& s);

/**
 * Compare the settings a peer sent with ours.
 * \param oursName, peerName how the message names the two sides ("server", "client")
 * \return "" if they match, else a one-line description of every difference
 *         ("transport: server metaroce, client rocev2; mtu: server 4096, client 1024")
 */
std::string CompareSettings(const proto::ConnectionSettings& ours,
                            const proto::ConnectionSettings& peer,
                            const std::string& oursName,
                            const std::string& peerName);

} // namespace hil
} // namespace metaroce

#endif // METAROCE_HIL_CONTROL_H
