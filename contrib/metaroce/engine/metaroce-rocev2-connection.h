/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#ifndef METAROCE_ROCEV2_CONNECTION_H
#define METAROCE_ROCEV2_CONNECTION_H

#include "metaroce-pacer.h"
#include "metaroce-rocev2-rate-control.h"
#include "metaroce-transport.h"

#include <deque>
#include <memory>
#include <vector>

/**
 * \file
 * The RoCEv2 baseline: an InfiniBand reliable-connection queue pair carried over UDP/IPv4
 * (RoCEv2), with go-back-N loss recovery and DCQCN, behind the same verbs-style API as the
 * MetaRoCE engine. docs/engine-rocev2.md describes the state machines and what is simplified.
 */

namespace metaroce
{

/**
 * A RoCEv2 RC queue pair (transport "rocev2").
 *
 * Requester: each send work request is cut into PMTU packets with consecutive PSNs and the
 * InfiniBand opcodes of its position (SEND/RDMA WRITE First, Middle, Last, Only, with
 * immediate on Last/Only; RETH on the first packet of a WRITE only). Everything goes out on
 * one UDP source port (one ECMP path). ACKs complete work requests in post order; a PSN
 * sequence error NAK or the local ACK timeout restarts transmission from the first missing
 * PSN (go-back-N); retry_cnt such events without progress end in RETRY_EXC_ERR, rnr_retry
 * RNR NAKs in RNR_RETRY_EXC_ERR; a fatal NAK completes its request with the remote error and
 * flushes the rest. The DCQCN reaction point paces new and resent packets.
 *
 * Responder: accepts only the expected PSN; places in-order payload straight into memory
 * (WRITE: R_Key and bounds checked on the first packet, then the running address; SEND: the
 * oldest posted receive); an out-of-sequence packet is dropped and answered by one PSN
 * sequence error NAK per error episode; duplicates are ACKed again; ACKs are coalesced every
 * ackEveryPackets packets, on AckReq (last packet of a message) or after ackDelay; the AETH
 * carries the MSN (count of completed inbound messages, modulo 2^24). The DCQCN notification
 * point sends at most one CNP per cnpInterval while CE-marked packets arrive.
 *
 * IRN mode (rocev2.recovery = "irn", Mittal et al., SIGCOMM 2018): data packets use the
 * IRN_* opcodes (an IRH with the payload offset and receive WQE number, and the RETH on every
 * WRITE packet), so the responder places packets up to irnWindow PSNs ahead of its expected
 * PSN, tracks them in a bitmap, completes messages in PSN order and answers each
 * out-of-order packet with an IRN NACK (cumulative PSN + the PSN that arrived). The
 * requester keeps the SACKed PSNs in a bitmap and resends only the holes below the highest
 * SACKed PSN, each once on SACK evidence; the RTO_low/RTO_high timer resends every
 * unSACKed PSN. New PSNs are capped at the BDP cap. docs/engine-rocev2.md has the model.
 */
class RoceV2Connection : public TransportConnection
{
  public:
    /// Requester role states.
    enum class RequesterState : uint8_t
    {
        IDLE,           //!< nothing outstanding
        SENDING,        //!< sending PSNs never sent before
        RETRANSMITTING, //!< replaying PSNs after a sequence NAK or a timeout (go-back-N)
        WAITING_ACK,    //!< everything posted is sent; waiting for acknowledgements
        RNR_WAIT,       //!< paused by an RNR NAK until the RNR timer expires
        ERROR,          //!< the queue pair is in the error state
    };

    /// Responder role states (position in the inbound message stream).
    enum class ResponderState : uint8_t
    {
        IDLE,     //!< between messages: expects a First or Only packet
        IN_WRITE, //!< inside a multi-packet RDMA WRITE
        IN_SEND,  //!< inside a multi-packet SEND
        ERROR,    //!< the queue pair is in the error state
    };

    /// Create connection \p qpn of \p ep (cfg must have been validated).
    RoceV2Connection(EndpointShared& ep, uint32_t qpn, const ConnectionConfig& cfg);

    Transport Kind() const override
    {
        return Transport::ROCEV2;
    }

    PostStatus PostSend(Time now, const SendWr& wr, const uint8_t* localPtr) override;
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
        return m_reqState;
    }

    /// \return the responder state.
    ResponderState GetResponderState() const
    {
        return m_respState;
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
        return m_ePsn;
    }

    /// \return the responder's MSN (completed inbound messages modulo 2^24).
    uint32_t Msn() const
    {
        return m_msn;
    }

    /// \return the IB local ACK timeout for exponent \p n: 4.096 us * 2^n (0: infinite).
    static Time LocalAckTimeout(uint8_t n);

    /// \return the RNR NAK delay encoded by the 5-bit IB RNR timer \p code.
    static Time RnrTimerValue(uint8_t code);

  private:
    /// Requester state of one send work request.
    struct SendWqe
    {
        SendWr wr;                        //!< the work request (its SGE is checked per packet)
        uint32_t firstPsn{0};             //!< PSN of its first packet
        uint32_t numPackets{1};           //!< packets in the message
        uint32_t recvWqeSn{0}; //!< IRN: receive WQE it consumes (SEND, WRITE with immediate)
    };

    /// IRN responder: what the in-order pass needs of a packet placed ahead of ePSN.
    struct IrnSlot
    {
        uint8_t opcode{0};     //!< BTH opcode
        bool ackReq{false};    //!< BTH AckReq
        uint32_t recvWqeSn{0}; //!< IRH RecvWqeSn
        uint32_t endOffset{0}; //!< offset + length of its payload in the message
        uint32_t dmaLength{0}; //!< WRITE: RETH DMA length
        uint32_t immDt{0};     //!< immediate data
    };

    /// A posted receive work request.
    struct PostedRecv
    {
        RecvWr wr; //!< the work request (its SGE is checked per packet)
    };

    /// Outcome of executing an in-sequence request packet at the responder.
    enum class Exec : uint8_t
    {
        OK,      //!< placed
        RNR,     //!< no receive posted: RNR NAK, not placed
        INVALID, //!< NAK invalid request (opcode sequence, lengths)
        ACCESS,  //!< NAK remote access error (R_Key, bounds, permission)
        LENGTH,  //!< SEND longer than the receive buffer: NAK invalid request
        LOCAL_PROT, //!< receive buffer no longer registered: NAK remote operational error
    };

    // Requester
    bool SendDataPacket(Time now, TxDatagram& out);
    uint8_t OpcodeOf(const SendWqe& w, uint32_t packet) const;
    void Locate(uint32_t psn);
    void Progress(Time now, uint32_t newUnacked);
    void GoBack(Time now, uint32_t psn);
    void HandleAck(Time now, const ParsedPacket& pkt);
    void ArmRto(Time now);
    Time RtoValue() const;
    void AfterSend();
    bool MayTransmitData(Time now) const;
    uint32_t InflightPackets() const;
    void SyncRate(Time now);

    // Responder
    void HandleData(Time now, const DatagramMeta& meta, const ParsedPacket& pkt);
    Exec Execute(const ParsedPacket& pkt);
    void QueueNak(uint8_t syndrome, uint32_t psn);
    void ScheduleAck(Time now, bool immediate);
    bool SendAck(TxDatagram& out, uint8_t syndrome, uint32_t psn);
    bool SendCnp(TxDatagram& out);

    // IRN requester
    bool IrnSacked(uint32_t psn) const;
    bool IrnHolePending() const;
    void IrnSkipSacked();
    void IrnSelectPsn();
    void IrnRestart(Time now, uint32_t psn);
    void IrnUpdateState();
    void HandleIrnNack(Time now, const ParsedPacket& pkt);
    uint32_t IrnCap() const;

    /// \return true if \p info may come next in the responder's opcode sequence (First/Only
    /// between messages, Middle/Last of the same operation inside one).
    bool OpcodeFollows(const OpcodeInfo& info) const;

    // IRN responder
    void HandleIrnData(Time now, const ParsedPacket& pkt);
    Exec IrnPlace(const ParsedPacket& pkt);
    Exec IrnDeliver(const IrnSlot& slot);
    void IrnQueueNack(uint32_t sackPsn);
    bool SendIrnNack(TxDatagram& out, uint32_t sackPsn);
    void NakFor(Exec result, uint32_t psn);
    Exec PlaceIntoRecv(const PostedRecv& recv, uint32_t offset, const ParsedPacket& pkt);

    // Both
    void EnterError(WcStatus sendStatus, uint32_t failedPsn, WcStatus recvStatus);
    void Complete(const SendWqe& w, WcStatus status);

    // Requester state
    RequesterState m_reqState{RequesterState::IDLE}; //!< requester state
    std::deque<SendWqe> m_sq;          //!< outstanding send work requests, in post order
    uint32_t m_nextPostPsn{0};         //!< first PSN of the next posted request
    uint32_t m_unackedPsn{0};          //!< oldest unacknowledged PSN
    uint32_t m_sendPsn{0};             //!< next PSN to transmit
    uint32_t m_maxSentPsn{0};          //!< first PSN never transmitted
    size_t m_sendWqe{0};               //!< index in m_sq of the request holding m_sendPsn
    uint32_t m_sendPacket{0};          //!< packet of m_sendPsn within that request
    uint8_t m_retriesLeft;             //!< retry_cnt budget left
    uint8_t m_rnrRetriesLeft;          //!< rnr_retry budget left
    Time m_rtoDeadline{TIME_INFINITE}; //!< retransmission timer
    Time m_rnrDeadline{TIME_INFINITE}; //!< end of the RNR wait
    uint32_t m_rnrPsn{0};              //!< PSN to resume from after the RNR wait
    std::unique_ptr<RoceRateControl> m_rate; //!< rate control (DCQCN or none)
    Pacer m_pacer;                     //!< spaces data packets at the current rate
    uint16_t m_srcPort;                //!< the QP's UDP source port
    uint32_t m_nextRecvSn{0};          //!< IRN: RecvWqeSn of the next receive-consuming WR

    // IRN (empty vectors in go-back-N mode)
    bool m_irn;                        //!< recovery == "irn"
    uint32_t m_irnMask;                //!< irnWindow - 1 (bitmap index of a PSN)
    std::vector<uint64_t> m_sacked;    //!< requester: SACKed PSNs in [unacked, unacked+window)
    uint32_t m_retxPsn{0};             //!< requester: next PSN to consider for retransmission
    uint32_t m_lossBound{0};           //!< requester: unSACKed PSNs below this are lost
    std::vector<uint64_t> m_placed;    //!< responder: PSNs placed in (ePSN, ePSN+window)
    std::vector<IrnSlot> m_slots;      //!< responder: per-PSN info of placed packets
    std::vector<uint32_t> m_nackQueue; //!< responder: ring of SACK PSNs of NACKs to send
    uint32_t m_nackHead{0};            //!< first entry of m_nackQueue
    uint32_t m_nackCount{0};           //!< entries in m_nackQueue
    uint32_t m_rqBaseSn{0};            //!< responder: RecvWqeSn of m_rq.front()
    uint32_t m_irnMsgSn{0};            //!< responder: RecvWqeSn of the SEND being delivered

    // Responder state
    ResponderState m_respState{ResponderState::IDLE}; //!< responder state
    std::deque<PostedRecv> m_rq;                      //!< posted receives, oldest first
    uint32_t m_ePsn{0};                               //!< expected PSN
    uint32_t m_msn{0};                                //!< message sequence number
    bool m_nakEpisode{false};          //!< a NAK was sent; drop out-of-sequence packets silently
    uint64_t m_respVa{0};              //!< WRITE: address of the next byte
    uint32_t m_respRkey{0};            //!< WRITE: R_Key of the message
    uint32_t m_respRemaining{0};       //!< WRITE: bytes still expected
    uint32_t m_respLength{0};          //!< WRITE: DMA length of the message
    uint32_t m_respOffset{0};          //!< SEND: bytes placed so far
    uint32_t m_unackedCount{0};        //!< in-order packets since the last ACK
    Time m_ackDeadline{TIME_INFINITE}; //!< coalescing timer
    bool m_ackNow{false};              //!< an ACK is due
    bool m_nakPending{false};          //!< a NAK is due
    uint8_t m_nakSyndrome{0};          //!< its syndrome
    uint32_t m_nakPsn{0};              //!< its PSN
    bool m_cnpNow{false};              //!< a CNP is due
    Time m_now{0};                     //!< latest time the host passed in
};

} // namespace metaroce

#endif // METAROCE_ROCEV2_CONNECTION_H
