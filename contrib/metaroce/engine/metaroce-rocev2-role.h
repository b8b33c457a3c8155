/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#ifndef METAROCE_ROCEV2_ROLE_H
#define METAROCE_ROCEV2_ROLE_H

#include "metaroce-rocev2-rate-control.h"
#include "metaroce-transport.h"

namespace metaroce
{

class RoceV2Connection;

/// Requester role states of a RoCEv2 queue pair.
enum class RoceRequesterState : uint8_t
{
    IDLE,           //!< nothing outstanding
    SENDING,        //!< sending PSNs never sent before
    RETRANSMITTING, //!< replaying PSNs after a sequence NAK or a timeout (go-back-N)
    WAITING_ACK,    //!< everything posted is sent; waiting for acknowledgements
    RNR_WAIT,       //!< paused by an RNR NAK until the RNR timer expires
    ERROR,          //!< the queue pair is in the error state
};

/// Responder role states of a RoCEv2 queue pair (position in the inbound message stream).
enum class RoceResponderState : uint8_t
{
    IDLE,     //!< between messages: expects a First or Only packet
    IN_WRITE, //!< inside a multi-packet RDMA WRITE
    IN_SEND,  //!< inside a multi-packet SEND
    ERROR,    //!< the queue pair is in the error state
};

/// Unacknowledged PSNs are kept below half of the 24-bit space so PSN comparisons hold.
constexpr uint32_t ROCE_MAX_OUTSTANDING_PSNS = 1u << 22;

/// \return the IB local ACK timeout for exponent \p n: 4.096 us * 2^n (0: infinite).
Time RoceLocalAckTimeout(uint8_t n);

/**
 * What the requester and responder roles of a RoCEv2 queue pair share: the connection they
 * belong to, its endpoint and configuration, and the connection's services (counters,
 * datagram emission, rate control, error state).
 */
class RoceV2Role
{
  public:
    /// Count \p n of \p c on the connection and its endpoint (TransportConnection::Count).
    void Count(Counter c, uint64_t n = 1)
    {
        m_counters.Add(c, n);
        m_ep.counters.Add(c, n);
    }

    /// \return the connection's configuration.
    const ConnectionConfig& Config() const
    {
        return m_cfg;
    }

  protected:
    /// Bind the role to \p conn.
    explicit RoceV2Role(RoceV2Connection& conn);

    /**
     * Serialise \p pkt into \p out from the queue pair's UDP source port and give it DSCP
     * \p dscp (see TransportConnection::EmitDatagram). \return false if it did not fit.
     */
    bool Emit(TxDatagram& out,
              ParsedPacket& pkt,
              const uint8_t* payload,
              uint32_t payloadLength,
              Ecn ecn,
              uint8_t dscp);
    /**
     * Put the whole queue pair in the error state: the request holding \p failedPsn gets
     * \p sendStatus, the oldest receive \p recvStatus, all other work WR_FLUSH_ERR.
     */
    void EnterError(WcStatus sendStatus, uint32_t failedPsn, WcStatus recvStatus);

    /// \return the queue pair's rate control.
    RoceRateControl& RateControl()
    {
        return m_rate;
    }

    /// \return the peer's queue pair number.
    uint32_t RemoteQpn() const
    {
        return m_remoteQpn;
    }

    /// \return the local queue pair number.
    uint32_t Qpn() const
    {
        return m_qpn;
    }

    RoceV2Connection& m_conn;      //!< the connection this role belongs to
    EndpointShared& m_ep;          //!< shared endpoint state
    const ConnectionConfig& m_cfg; //!< the connection's configuration
    CounterSet& m_counters;        //!< the connection's counters
    RoceRateControl& m_rate;       //!< the queue pair's rate control
    const uint32_t m_qpn;          //!< the local queue pair number
    const uint32_t& m_remoteQpn;   //!< the peer's queue pair number (set by Connect)
};

} // namespace metaroce

#endif // METAROCE_ROCEV2_ROLE_H
