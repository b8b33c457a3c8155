/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#ifndef METAROCE_ROCEV2_CONNECTION_H
#define METAROCE_ROCEV2_CONNECTION_H

#include "metaroce-rocev2-rate-control.h"
#include "metaroce-rocev2-requester.h"
#include "metaroce-rocev2-responder.h"
#include "metaroce-transport.h"

#include <memory>

/**
 * \file
 * The RoCEv2 baseline: an InfiniBand reliable-connection queue pair carried over UDP/IPv4
 * (RoCEv2), with go-back-N (or IRN) loss recovery and DCQCN (or no) rate control, behind the
 * same verbs-style API as the MetaRoCE engine. docs/engine-rocev2.md describes the state
 * machines and what is simplified.
 */

namespace metaroce
{

/**
 * A RoCEv2 RC queue pair (transport "rocev2").
 *
 * Requester (RoceRequester): each send work request is cut into PMTU packets with
 * consecutive PSNs and the InfiniBand opcodes of its position (SEND/RDMA WRITE First,
 * Middle, Last, Only, with immediate on Last/Only; RETH on the first packet of a WRITE only).
 * Everything goes out on one UDP source port (one ECMP path). ACKs complete work requests in
 * post order; a PSN sequence error NAK or the local ACK timeout restarts transmission from
 * the first missing PSN (go-back-N); retry_cnt such events without progress end in
 * RETRY_EXC_ERR, rnr_retry RNR NAKs in RNR_RETRY_EXC_ERR; a fatal NAK completes its request
 * with the remote error and flushes the rest. The DCQCN reaction point paces new and resent
 * packets.
 *
 * Responder (RoceResponder): accepts only the expected PSN; places in-order payload straight
 * into memory (WRITE: R_Key and bounds checked on the first packet, then the running
 * address; SEND: the oldest posted receive); an out-of-sequence packet is dropped and
 * answered by one PSN sequence error NAK per error episode; duplicates are ACKed again; ACKs
 * are coalesced every ackEveryPackets packets, on AckReq (last packet of a message) or after
 * ackDelay; the AETH carries the MSN (count of completed inbound messages, modulo 2^24). The
 * DCQCN notification point sends at most one CNP per cnpInterval while CE-marked packets
 * arrive.
 *
 * Loss recovery is an object of each role chosen by rocev2.recovery
 * (metaroce-rocev2-recovery.h): "gbn" as above (GoBackNRecovery, GoBackNReceiver), or "irn"
 * (IrnRecovery, IrnReceiver; Mittal et al., SIGCOMM 2018): data packets use the IRN_*
 * opcodes (an IRH with the payload offset and receive WQE number, and the RETH on every
 * WRITE packet), so the responder places packets up to irnWindow PSNs ahead of its expected
 * PSN, tracks them in a bitmap, completes messages in PSN order and answers each
 * out-of-order packet with an IRN NACK (cumulative PSN + the PSN that arrived). The
 * requester keeps the SACKed PSNs in a bitmap and resends only the holes below the highest
 * SACKed PSN, each once on SACK evidence; the RTO_low/RTO_high timer resends every
 * unSACKed PSN. New PSNs are capped at the BDP cap. Rate control is one object of the queue
 * pair chosen by rocev2.dcqcn (metaroce-rocev2-rate-control.h): "dcqcn" or "none".
 *
 * The connection dispatches packets to the roles, arbitrates the transmit order (NAK, CNP,
 * selective NACK, ACK, then data), merges their deadlines and enters the error state for
 * both. docs/engine-rocev2.md has the model.
 */
class RoceV2Connection : public TransportConnection
{
  public:
    /// Requester role states.
    using RequesterState = RoceRequesterState;
    /// Responder role states.
    using ResponderState = RoceResponderState;

    /// Create connection \p qpn of \p ep (cfg must have been validated).
    RoceV2Connection(EndpointShared& ep, uint32_t qpn, const ConnectionConfig& cfg);

    Transport Kind() const override
    {
        return Transport::ROCEV2;
    }

    PostStatus PostSend(Time now, const SendWr& wr, const uint8_t* localPtr) override;
    void Flush(Time now) override;
    PostStatus PostRecv(Time now, const RecvWr& wr, uint8_t* localPtr) override;
    void HandlePacket(Time now, const DatagramMeta& meta, const ParsedPacket& pkt) override;
    bool PollTransmit(Time now, TxDatagram& out) override;
    bool WantsToSend(Time now) const override;
    Time NextDeadline() const override;
    void HandleTimeout(Time now) override;
    size_t StateBytes() const override;

    /// \return the requester state.
    RequesterState GetRequesterState() const
    {
        return m_requester.State();
    }

    /// \return the responder state.
    ResponderState GetResponderState() const
    {
        return m_responder.State();
    }

    /// \return the current sending rate in b/s (DCQCN's Rc, or the configured ceiling).
    double PacingRate() const
    {
        return m_rate->Rate();
    }

    /// \return the DCQCN reaction point (with rate control "none", an idle one).
    const DcqcnReactionPoint& Dcqcn() const
    {
        return m_rate->ReactionPoint();
    }

    /// \return the UDP source port of every packet of this queue pair.
    uint16_t SourcePort() const
    {
        return m_srcPort;
    }

    /// \return the responder's expected PSN.
    uint32_t ExpectedPsn() const
    {
        return m_responder.ExpectedPsn();
    }

    /// \return the responder's MSN (completed inbound messages modulo 2^24).
    uint32_t Msn() const
    {
        return m_responder.Msn();
    }

    /// \return the IB local ACK timeout for exponent \p n: 4.096 us * 2^n (0: infinite).
    static Time LocalAckTimeout(uint8_t n)
    {
        return RoceLocalAckTimeout(n);
    }

    /// \return the RNR NAK delay encoded by the 5-bit IB RNR timer \p code.
    static Time RnrTimerValue(uint8_t code);

  private:
    friend class RoceV2Role;

    /**
     * Enter the error state: the request holding \p failedPsn (if any) completes with
     * \p sendStatus, the oldest receive with \p recvStatus, every other outstanding work
     * request with WR_FLUSH_ERR, sends first.
     */
    void EnterError(WcStatus sendStatus, uint32_t failedPsn, WcStatus recvStatus);

    uint16_t m_srcPort;                      //!< the QP's UDP source port
    std::unique_ptr<RoceRateControl> m_rate; //!< rate control (DCQCN or none)
    RoceRequester m_requester;               //!< requester role
    RoceResponder m_responder;               //!< responder role
    Time m_now{0};                           //!< latest time the host passed in
};

} // namespace metaroce

#endif // METAROCE_ROCEV2_CONNECTION_H
