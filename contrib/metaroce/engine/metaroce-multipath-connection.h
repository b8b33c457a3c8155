/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#ifndef METAROCE_MULTIPATH_CONNECTION_H
#define METAROCE_MULTIPATH_CONNECTION_H

#include "metaroce-multipath-requester.h"
#include "metaroce-multipath-responder.h"
#include "metaroce-transport.h"

namespace metaroce
{

/**
 * A MetaRoCE connection (our model of the published design): many ordered streams above,
 * many paths below, one congestion controller.
 *
 * It composes two roles, as Linux rxe splits a queue pair: the requester
 * (MultipathRequester: sending, acknowledgements, loss recovery, path health, send
 * completions) and the responder (MultipathResponder: placement, receive completions, ACKs
 * and NAKs). The connection dispatches packets to them, arbitrates the transmit order (ACKs,
 * NAKs, probes, then data), merges their deadlines and enters the error state for both.
 */
class MultipathConnection : public TransportConnection
{
  public:
    /// Create connection \p qpn of \p ep (cfg must have been validated).
    MultipathConnection(EndpointShared& ep, uint32_t qpn, const ConnectionConfig& cfg);

    Transport Kind() const override
    {
        return Transport::METAROCE;
    }

    PostStatus PostSend(Time now, const SendWr& wr, const uint8_t* localPtr) override;
    void Flush(Time now) override;
    PostStatus PostRecv(Time now, const RecvWr& wr, uint8_t* localPtr) override;
    void HandlePacket(Time now, const DatagramMeta& meta, const ParsedPacket& pkt) override;
    bool PollTransmit(Time now, TxDatagram& out) override;
    bool WantsToSend(Time now) const override;
    Time NextDeadline() const override;
    void HandleTimeout(Time now) override;
    size_t PathCount() const override;
    const PathState* Path(size_t i) const override;
    size_t StateBytes() const override;
    std::string CheckInvariants() const override;

    /// \return the current pacing rate in b/s (0 = unpaced).
    double PacingRate() const
    {
        return m_requester.PacingRate();
    }

    /// \return the requester role (the responder hands it READ and atomic answers to send).
    MultipathRequester& Requester()
    {
        return m_requester;
    }

    /// \return the responder role (the requester NAKs through it a READ it cannot answer).
    MultipathResponder& Responder()
    {
        return m_responder;
    }

  private:
    friend class MultipathRole;

    /**
     * Enter the error state: \p failedSlot (a requester message slot, or NONE for each
     * stream's first unfinished message) completes with \p status, all other outstanding
     * work with WR_FLUSH_ERR, stream by stream.
     */
    void EnterError(Time now, uint32_t failedSlot, WcStatus status);
    /// \return the UDP source port NAKs leave on (path 0's).
    uint16_t NakSourcePort() const;

    MultipathRequester m_requester; //!< requester role
    MultipathResponder m_responder; //!< responder role
    Time m_now{0};                  //!< latest time the host passed in
};

} // namespace metaroce

#endif // METAROCE_MULTIPATH_CONNECTION_H
