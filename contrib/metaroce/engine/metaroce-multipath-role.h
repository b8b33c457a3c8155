/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#ifndef METAROCE_MULTIPATH_ROLE_H
#define METAROCE_MULTIPATH_ROLE_H

#include "metaroce-transport.h"

namespace metaroce
{

class MultipathConnection;

/// A placement result: drop the packet silently (no ACK, no NAK); the sender will resend.
constexpr uint8_t PLACE_SILENT_DROP = 0xFF;

/**
 * What the requester and responder roles of a MetaRoCE connection share: the connection they
 * belong to, its endpoint and configuration, and the connection's services (counters,
 * datagram emission, observer, error state).
 */
class MultipathRole
{
  protected:
    /// Bind the role to \p conn.
    explicit MultipathRole(MultipathConnection& conn);

    /// Count \p n of \p c on the connection and its endpoint.
    void Count(Counter c, uint64_t n = 1);
    /// Serialise \p pkt into \p out (see TransportConnection::EmitDatagram).
    bool EmitDatagram(TxDatagram& out,
                      ParsedPacket& pkt,
                      const uint8_t* payload,
                      uint32_t payloadLength,
                      Ecn ecn,
                      uint16_t srcPort);
    /// Tell the observer about \p event on \p path.
    void NotifyPath(Time now, PathEvent event, const PathState& path);
    /// Put the whole connection in the error state (see MultipathConnection::EnterError).
    void EnterError(Time now, uint32_t failedSlot, WcStatus status);
    /// \return the peer's connection number.
    uint32_t RemoteQpn() const;
    /// \return the local connection number.
    uint32_t Qpn() const;
    /// \return the host delay the connection's timers wait (TransportConnection::HostDelay).
    Time HostDelay() const;
    /// \return the UDP source port NAKs leave on.
    uint16_t NakSourcePort() const;

    MultipathConnection& m_conn;   //!< the connection this role belongs to
    EndpointShared& m_ep;          //!< shared endpoint state
    const ConnectionConfig& m_cfg; //!< the connection's configuration
};

} // namespace metaroce

#endif // METAROCE_MULTIPATH_ROLE_H
