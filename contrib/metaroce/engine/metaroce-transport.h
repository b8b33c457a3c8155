/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#ifndef METAROCE_TRANSPORT_H
#define METAROCE_TRANSPORT_H

#include "metaroce-config.h"
#include "metaroce-counters.h"
#include "metaroce-datagram.h"
#include "metaroce-memory.h"
#include "metaroce-observer.h"
#include "metaroce-path.h"
#include "metaroce-random.h"
#include "metaroce-rate-hint.h"
#include "metaroce-ring-queue.h"
#include "metaroce-verbs.h"
#include "metaroce-wire.h"

#include <algorithm>
#include <deque>
#include <memory>
#include <string>
#include <vector>

/**
 * \file
 * What every transport engine (MetaRoCE, RoCEv2) has in common: the connection interface
 * the endpoint drives, and the endpoint state they share.
 */

namespace metaroce
{

/// A datagram to transmit: the caller supplies buffer/capacity, the engine fills the rest.
struct TxDatagram
{
    uint8_t* buffer{nullptr}; //!< where the datagram is written
    size_t capacity{0};       //!< bytes available at buffer
    size_t length{0};         //!< datagram length written
    DatagramMeta meta;        //!< addresses, ports and ECN codepoint
    uint32_t connectionId{0}; //!< local connection that produced it
    /// Path the datagram belongs to (-1: none, e.g. a single-path transport). A multiplane
    /// NIC maps it to a plane (port).
    int16_t pathId{-1};
    /// Input: the caller does not read a zero payload (one from a virtual memory region), so
    /// the engine may leave its bytes unwritten (payloadZero says so). Ignored with the ICRC on.
    bool zeroPayloadUnread{false};
    /// The payload is zeros (a virtual memory region); with zeroPayloadUnread not written.
    bool payloadZero{false};
    uint32_t payloadOffset{0}; //!< where the payload starts, in bytes from buffer
    uint32_t payloadLength{0}; //!< payload bytes (0: none)
};

class TransportConnection;

/// Endpoint-wide state shared by all connections of one endpoint.
class EndpointShared
{
  public:
    /// Create from \p cfg.
    explicit EndpointShared(const EndpointConfig& cfg);

    /// \return the endpoint configuration.
    const EndpointConfig& Config() const
    {
        return m_cfg;
    }

    /// Queue a completion for PollCompletion.
    void PushCompletion(const Completion& c)
    {
        m_completions.push_back(c);
    }

    /// Pop the oldest completion. \return false if none.
    bool PopCompletion(Completion& c);

    /**
     * \return a shared, immutable copy of \p cfg: connections with equal settings share
     * one (the endpoint keeps the last few distinct ones), so that an idle connection does
     * not carry its own 0.7 KB of settings.
     */
    std::shared_ptr<const ConnectionConfig> InternConfig(const ConnectionConfig& cfg);

    MemoryTable memory;  //!< registered regions
    CounterSet counters; //!< endpoint-wide counters
    /// The first disagreement a connection found with EndpointConfig::checkInvariants ("": none).
    std::string invariantFailure;
    Rng rng;                           //!< seeded by EndpointConfig::seed
    EngineObserver* observer{nullptr}; //!< optional observer
    /// Smoothed RTT of the connection sampled last (-1: none): what a new connection of the
    /// endpoint assumes before its own first sample (time-based loss detection, tail probe).
    Time lastSrtt{-1};
    /// How late this host (and its peers) may act on a packet beyond the path's round trip
    /// (Endpoint::SetHostDelay): every retransmission timer armed from now on waits this
    /// much longer. 0 in the simulator.
    Time hostDelay{0};

  private:
    EndpointConfig m_cfg;                //!< configuration
    RingQueue<Completion> m_completions; //!< completion queue
    /// Distinct connection settings in use, most recent last (InternConfig).
    std::vector<std::shared_ptr<const ConnectionConfig>> m_configs;

  public:
    RateHintAllocator fairShare{m_cfg}; //!< the receiver's fair-share rate hint
};

/**
 * One connection (queue pair) of an endpoint. Subclasses implement a transport; the
 * endpoint drives them through this interface and never looks inside.
 */
class TransportConnection
{
  public:
    /// Create connection \p qpn of endpoint \p ep.
    TransportConnection(EndpointShared& ep, uint32_t qpn, const ConnectionConfig& cfg);
    virtual ~TransportConnection() = default;
    TransportConnection(const TransportConnection&) = delete;
    TransportConnection& operator=(const TransportConnection&) = delete;

    /// \return the local connection number (BTH DestQP of incoming packets).
    uint32_t Qpn() const
    {
        return m_qpn;
    }

    /// \return the configuration.
    const ConnectionConfig& Config() const
    {
        return m_cfg;
    }

    /// Set the peer's host delay (Endpoint::SetPeerHostDelay).
    void SetPeerHostDelay(Time delay)
    {
        m_peerHostDelay = delay;
    }

    /// \return the host delay its retransmission timers wait: this host's (the endpoint's)
    /// or its peer's, whichever is larger.
    Time HostDelay() const
    {
        return std::max(m_ep.hostDelay, m_peerHostDelay);
    }

    /// \return the per-connection counters.
    const CounterSet& Counters() const
    {
        return m_counters;
    }

    /// \return true once Connect() was called.
    bool Connected() const
    {
        return m_connected;
    }

    /// \return true if the connection is in the error state.
    bool InError() const
    {
        return m_error;
    }

    /// \return the peer's IPv4 address.
    uint32_t RemoteIp() const
    {
        return m_remoteIp;
    }

    /// Bind to the peer \p remoteQpn at \p remoteIp.
    virtual void Connect(uint32_t remoteIp, uint32_t remoteQpn);

    /// \return the transport this connection runs.
    virtual Transport Kind() const = 0;
    /// Post a send work request (validated by the endpoint for key and state).
    virtual PostStatus PostSend(Time now, const SendWr& wr, const uint8_t* localPtr) = 0;
    /// Post a receive work request.
    virtual PostStatus PostRecv(Time now, const RecvWr& wr, uint8_t* localPtr) = 0;
    /// Process a parsed datagram addressed to this connection.
    virtual void HandlePacket(Time now, const DatagramMeta& meta, const ParsedPacket& pkt) = 0;
    /// Produce the next datagram if one may be sent now. \return false if none.
    virtual bool PollTransmit(Time now, TxDatagram& out) = 0;
    /// \return true if PollTransmit would produce a datagram at \p now.
    virtual bool WantsToSend(Time now) const = 0;
    /// \return the next time HandleTimeout must be called, or TIME_INFINITE.
    virtual Time NextDeadline() const = 0;
    /// Process every deadline that is due at \p now.
    virtual void HandleTimeout(Time now) = 0;
    /**
     * Enter the error state at the user's request (Verbs: a transition to ERR): every
     * outstanding send and receive work request completes with WR_FLUSH_ERR, in order.
     * Nothing happens if the connection is in the error state already.
     */
    virtual void Flush(Time now) = 0;

    /// \return the number of paths (for observation).
    virtual size_t PathCount() const
    {
        return 0;
    }

    /// \return path \p i (for observation), or nullptr.
    virtual const PathState* Path(size_t /*i*/) const
    {
        return nullptr;
    }

    /// \return bytes of engine state held by this connection (for memory benchmarks).
    virtual size_t StateBytes() const = 0;

    /**
     * Check the connection's derived state (indexes, running totals) against the state it
     * is derived from. \return "" if they agree, else a description of the disagreement.
     * For tests and debugging: it may cost a pass over the connection's state.
     */
    virtual std::string CheckInvariants() const
    {
        return {};
    }

    // Endpoint bookkeeping (owned by Endpoint and EndpointShared, not by subclasses).
    Time lastDataRx{-1};                   //!< last data arrival (rate-hint activity)
    bool activeSender{false};              //!< in EndpointShared's active list
    bool inReadyList{false};               //!< in the endpoint's transmit round robin
    Time scheduledDeadline{TIME_INFINITE}; //!< deadline the endpoint's timer heap holds
    uint64_t timerGeneration{0};           //!< invalidates stale timer-heap entries

  protected:
    /// Count \p n of \p c on the connection and on the endpoint.
    void Count(Counter c, uint64_t n = 1)
    {
        m_counters.Add(c, n);
        m_ep.counters.Add(c, n);
    }

    /**
     * Serialise \p pkt with \p payloadLength bytes from \p payload into \p out, fill the
     * addresses and compute the ICRC. \return false if the buffer is too small.
     */
    bool EmitDatagram(TxDatagram& out,
                      ParsedPacket& pkt,
                      const uint8_t* payload,
                      uint32_t payloadLength,
                      Ecn ecn,
                      uint16_t srcPort);

    /// Tell the observer about \p event on \p path.
    void NotifyPath(Time now, PathEvent event, const PathState& path)
    {
        if (m_ep.observer)
        {
            m_ep.observer->OnPathEvent(now, m_qpn, event, path);
        }
    }

    EndpointShared& m_ep;                                //!< shared endpoint state
    Time m_peerHostDelay{0};                             //!< SetPeerHostDelay()
    uint32_t m_qpn;                                      //!< local connection number
    std::shared_ptr<const ConnectionConfig> m_sharedCfg; //!< the settings (shared, immutable)
    const ConnectionConfig& m_cfg;                       //!< *m_sharedCfg
    CounterSet m_counters;                               //!< per-connection counters
    uint32_t m_remoteIp{0};                              //!< peer address
    uint32_t m_remoteQpn{0};                             //!< peer connection number
    bool m_connected{false};                             //!< Connect() called
    bool m_error{false};                                 //!< error state
};

} // namespace metaroce

#endif // METAROCE_TRANSPORT_H
