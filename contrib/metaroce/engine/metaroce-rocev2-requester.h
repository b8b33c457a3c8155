/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#ifndef METAROCE_ROCEV2_REQUESTER_H
#define METAROCE_ROCEV2_REQUESTER_H

#include "metaroce-pacer.h"
#include "metaroce-rocev2-recovery.h"
#include "metaroce-rocev2-role.h"

#include <algorithm>
#include <deque>
#include <memory>

namespace metaroce
{

/**
 * The requester role of a RoCEv2 queue pair (Linux rxe's requester and completer): send work
 * requests are cut into PMTU packets with consecutive PSNs, paced at the rate control's
 * rate; ACKs complete them in post order; RNR NAKs pause sending for the RNR timer; fatal
 * NAKs and exhausted retry budgets put the queue pair in the error state. What is resent
 * after a loss, and when, is the recovery's (RoceRecovery); the requester keeps the PSN
 * space, the send queue, the timers and the retry budgets, and offers the recovery the
 * policy interface below.
 */
class RoceRequester : public RoceV2Role
{
  public:
    /// Create the requester of \p conn (whose configuration is already validated).
    explicit RoceRequester(RoceV2Connection& conn);

    /// Post a send work request.
    PostStatus PostSend(const SendWr& wr);
    /// Process an acknowledgement (ACK, NAK, RNR NAK or IRN NACK).
    void HandleAck(Time now, const ParsedPacket& pkt);
    /// Process an RDMA READ response or an atomic acknowledge.
    void HandleResponse(Time now, const ParsedPacket& pkt);
    /// Process a congestion notification packet.
    void HandleCnp(Time now);
    /// Report a new rate of the rate control (counters, observer).
    void SyncRate(Time now);

    /// Send the next data packet if state, pacing and recovery allow one. \return false if none.
    bool PollData(Time now, TxDatagram& out)
    {
        SyncRate(now);
        return MayTransmitData(now) && SendDataPacket(now, out);
    }

    /// \return true if a data packet may be sent at \p now.
    bool MayTransmitData(Time now) const;

    /// \return the requester's next deadline; \p lastNow is the latest time seen.
    Time NextDeadline(Time lastNow) const
    {
        Time t = m_rtoDeadline;
        if (m_state == RoceRequesterState::RNR_WAIT)
        {
            t = std::min(t, m_rnrDeadline);
        }
        bool dataPending =
            m_state == RoceRequesterState::SENDING || m_state == RoceRequesterState::RETRANSMITTING;
        if (dataPending && !m_pacer.MayTransmit(lastNow))
        {
            t = std::min(t, m_pacer.NextRelease()); // pacing release: a condition, so only if ahead
        }
        return t;
    }

    /// Process the RNR and retransmission timers due at \p now.
    void HandleTimeout(Time now);
    /**
     * Complete every outstanding request after the queue pair entered the error state: the
     * one holding \p failedPsn with \p status (unless WR_FLUSH_ERR), the others flushed.
     */
    void FlushAfterError(WcStatus status, uint32_t failedPsn);

    /// \return the requester state.
    RoceRequesterState State() const
    {
        return m_state;
    }

    /// \return heap bytes held by the requester (beyond its own size).
    size_t HeapBytes() const;

    // The policy interface: what the recovery (RoceRecovery) reads and moves.

    /// \return the oldest unacknowledged PSN.
    uint32_t UnackedPsn() const
    {
        return m_unackedPsn;
    }

    /// \return the PSN the next data packet carries (the send cursor).
    uint32_t SendPsn() const
    {
        return m_sendPsn;
    }

    /// \return the first PSN never transmitted.
    uint32_t MaxSentPsn() const
    {
        return m_maxSentPsn;
    }

    /// \return the first PSN of the next posted request.
    uint32_t NextPostPsn() const
    {
        return m_nextPostPsn;
    }

    /// \return the PSNs sent and not yet acknowledged.
    uint32_t InflightPackets() const
    {
        return uint32_t(PsnDiff(m_maxSentPsn, m_unackedPsn));
    }

    /// \return timeouts and sequence NAKs since the last progress (retry_cnt spent).
    uint32_t RetriesUsed() const
    {
        return uint32_t(m_cfg.rocev2.retryCount - m_retriesLeft);
    }

    /// Enter state \p state.
    void SetState(RoceRequesterState state)
    {
        m_state = state;
    }

    /// Move the send cursor to \p psn (clamped to the unacknowledged and posted PSNs).
    void Locate(uint32_t psn);

    /**
     * \return false if the first request never sent is an RDMA READ or an atomic and
     * maxRdAtomic of them are outstanding already (IB max_rd_atomic).
     */
    bool MayStartRequest() const
    {
        return m_unsentWqe >= m_sq.size() || !IsReadOrAtomic(m_sq[m_unsentWqe].wr.opcode) ||
               m_rdAtomicInflight < m_cfg.rocev2.maxRdAtomic;
    }

    /// \return the PSNs the first request never sent takes (an RDMA READ: all its responses).
    uint32_t NewRequestPsns() const
    {
        return m_unsentWqe < m_sq.size() && m_sq[m_unsentWqe].wr.opcode == WrOpcode::RDMA_READ
                   ? m_sq[m_unsentWqe].numPackets
                   : 1;
    }

    /**
     * The peer acknowledged every PSN before \p newUnacked (an ACK, a NAK or a selective
     * NACK). An acknowledgement cannot complete an RDMA READ or an atomic (in IB only their
     * responses do): progress stops at the first PSN whose response is missing,
     * and the responses from there are requested again.
     */
    void AckUpTo(Time now, uint32_t newUnacked);
    /**
     * Every PSN before \p newUnacked (ahead of UnackedPsn, not past MaxSentPsn) is
     * acknowledged: complete the requests it ends, reset the retry budgets, re-arm the timer.
     */
    void Progress(Time now, uint32_t newUnacked);

  private:
    /// Requester state of one send work request.
    struct SendWqe
    {
        SendWr wr;              //!< the work request (its SGE is checked per packet)
        uint32_t firstPsn{0};   //!< PSN of its first packet
        uint32_t numPackets{1}; //!< packets in the message
        uint32_t recvWqeSn{0};  //!< receive WQE it consumes (SEND, WRITE with immediate)
    };

    bool SendDataPacket(Time now, TxDatagram& out);
    bool SendRequest(Time now, TxDatagram& out, const SendWqe& w);
    void AfterSend(Time now, const TxDatagram& out, uint32_t psns);
    size_t IndexOf(uint32_t psn) const;
    uint32_t ImplicitAckLimit(uint32_t newUnacked) const;
    void ResponseGap(Time now, uint32_t psn);
    bool PlaceResponse(const SendWqe& w, uint32_t packet, const ParsedPacket& pkt);
    uint8_t OpcodeOf(const SendWqe& w, uint32_t packet) const;
    void GoBack(Time now, uint32_t psn, bool timeout = false);
    void ArmRto(Time now);
    void Complete(const SendWqe& w, WcStatus status);

    std::unique_ptr<RoceRecovery> m_recovery;             //!< loss recovery (go-back-N or IRN)
    RoceRequesterState m_state{RoceRequesterState::IDLE}; //!< requester state
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
    Time m_rtoArmedAt{0};              //!< when the retransmission timer was last armed
    Time m_rtoArmedRto{0};             //!< the RTO it was armed with
    Time m_rtoArmedHostDelay{0};       //!< the host delay it was armed with
    Time m_rnrDeadline{TIME_INFINITE}; //!< end of the RNR wait
    uint32_t m_rnrPsn{0};              //!< PSN to resume from after the RNR wait
    Pacer m_pacer;                     //!< spaces data packets at the current rate
    uint32_t m_nextRecvSn{0};          //!< RecvWqeSn of the next receive-consuming request
    size_t m_unsentWqe{0};             //!< index in m_sq of the request holding m_maxSentPsn
    uint32_t m_rdAtomicInflight{0};    //!< READs and atomics sent and not completed
    bool m_gapEpisode{false};          //!< responses were requested again from m_gapPsn
    uint32_t m_gapPsn{0};              //!< first PSN whose response was missing
};

} // namespace metaroce

#endif // METAROCE_ROCEV2_REQUESTER_H
