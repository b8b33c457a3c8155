/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#ifndef METAROCE_ROCEV2_RESPONDER_H
#define METAROCE_ROCEV2_RESPONDER_H

#include "metaroce-rocev2-recovery.h"
#include "metaroce-rocev2-role.h"

#include <cstring>
#include <deque>
#include <memory>
#include <vector>

namespace metaroce
{

/// Outcome of executing a request packet at the RoCEv2 responder.
enum class RoceExec : uint8_t
{
    OK,         //!< placed
    RNR,        //!< no receive posted: RNR NAK, not placed
    INVALID,    //!< NAK invalid request (opcode sequence, lengths)
    ACCESS,     //!< NAK remote access error (R_Key, bounds, permission)
    LENGTH,     //!< SEND longer than the receive buffer: NAK invalid request
    LOCAL_PROT, //!< receive buffer no longer registered: NAK remote operational error
};

/**
 * The responder role of a RoCEv2 queue pair (Linux rxe's responder): it keeps the posted
 * receives, the expected PSN and MSN, the position in the inbound message stream, ACK
 * coalescing, the pending NAK and the CNP due from the rate control's notification point.
 * Which data packets are accepted and how they are placed is the recovery's
 * (RoceRecoveryReceiver); the responder offers it the policy interface below.
 */
class RoceResponder : public RoceV2Role
{
  public:
    /// Create the responder of \p conn (whose configuration is already validated).
    explicit RoceResponder(RoceV2Connection& conn);

    /// Post a receive work request.
    PostStatus PostRecv(const RecvWr& wr);
    /// Process a data packet.
    void HandleData(Time now, const DatagramMeta& meta, const ParsedPacket& pkt);

    /// \return true if a NAK is due (it is sent even in the error state).
    bool NakPending() const
    {
        return m_nakPending;
    }

    /// Send the due NAK. \return false if it could not be written.
    bool SendNak(TxDatagram& out);

    /// \return true if a CNP, a READ response, an atomic acknowledge, a selective NACK or an
    /// ACK is due.
    bool ControlPending() const
    {
        return m_cnpNow || m_ackNow || m_responseCount > 0 || m_receiver->NackPending();
    }

    /// \return true if READ responses or atomic acknowledges are due (they go before any
    /// acknowledgement of a later PSN, NAKs included).
    bool ResponsePending() const
    {
        return m_responseCount > 0;
    }

    /**
     * Send the due CNP, READ response or atomic acknowledge, selective NACK or ACK, in that
     * order of priority.
     * \param[out] sent whether a datagram was written
     * \return true if one was due
     */
    bool PollControl(TxDatagram& out, bool& sent);

    /// \return the coalescing timer's deadline.
    Time NextDeadline() const
    {
        return m_ackDeadline;
    }

    /// Process the coalescing timer if due at \p now.
    void HandleTimeout(Time now);
    /// Flush every posted receive after the queue pair entered the error state (the oldest
    /// with \p status) and drop every due control packet.
    void FlushAfterError(WcStatus status);

    /// \return the responder state.
    RoceResponderState State() const
    {
        return m_state;
    }

    /// \return heap bytes held by the responder (beyond its own size).
    size_t HeapBytes() const;

    // The policy interface: what the recovery's receiver (RoceRecoveryReceiver) reads and
    // moves.

    /// \return the expected PSN.
    uint32_t ExpectedPsn() const
    {
        return m_ePsn;
    }

    /// \return the MSN (completed inbound messages modulo 2^24).
    uint32_t Msn() const
    {
        return m_msn;
    }

    /// The expected PSN was executed: move past it (one more packet for the next ACK).
    void AcceptExpected()
    {
        m_ePsn = PsnAdd(m_ePsn, 1);
        ++m_unackedCount;
    }

    /// \return in-order packets accepted since the last ACK.
    uint32_t InOrderSinceAck() const
    {
        return m_unackedCount;
    }

    /// Make an ACK due at once (the coalescing timer is left as it is).
    void MarkAckDue()
    {
        m_ackNow = true;
    }

    /// Make an ACK due now, or within ackDelay unless \p immediate.
    void ScheduleAck(Time now, bool immediate);
    /// Queue a NAK with \p syndrome for \p psn (replaces a queued one).
    void QueueNak(uint8_t syndrome, uint32_t psn);
    /// Withdraw a queued PSN sequence error NAK (the missing packet arrived before it left).
    void CancelSequenceNak();
    /// Answer \p result of executing \p psn: the NAK it calls for, and the error state.
    void NakFor(RoceExec result, uint32_t psn);
    /// Send a selective NACK for \p sackPsn (it acknowledges every PSN before ePSN).
    bool SendSelectiveNack(TxDatagram& out, uint32_t sackPsn);

    /**
     * \return true if \p info may come next in the opcode sequence (First/Only between
     * messages, Middle/Last of the same operation inside one).
     */
    bool OpcodeFollows(const OpcodeInfo& info) const;

    /// Enter state \p state.
    void SetState(RoceResponderState state)
    {
        m_state = state;
    }

    /// \return the number of posted receives.
    size_t RecvCount() const
    {
        return m_rq.size();
    }

    /// Place \p pkt's payload at \p offset of the \p k-th oldest posted receive.
    RoceExec PlaceIntoRecv(size_t k, uint32_t offset, const ParsedPacket& pkt);
    /// \return true if the whole WRITE range [va, va + length) may be written with \p rkey.
    bool WriteAllowed(uint32_t rkey, uint64_t va, uint32_t length);

    /// Place \p pkt's payload at \p va with \p rkey (RDMA WRITE).
    RoceExec PlaceWrite(uint32_t rkey, uint64_t va, const ParsedPacket& pkt)
    {
        uint32_t len = pkt.payloadLength;
        if (len == 0)
        {
            return RoceExec::OK;
        }
        uint8_t* dst = nullptr;
        if (m_ep.memory.Check(rkey, va, len, ACCESS_REMOTE_WRITE, &dst) != PostStatus::OK)
        {
            return RoceExec::ACCESS; // outside the region, or deregistered mid-message
        }
        if (dst != nullptr)
        {
            std::memcpy(dst, pkt.payload, len);
        }
        Count(Counter::BYTES_PLACED, len);
        return RoceExec::OK;
    }

    /// A message ended in order: advance the MSN.
    void EndMessage();
    /// Complete the oldest posted receive as \p opcode with \p byteLen bytes.
    void CompleteRecv(WcOpcode opcode, uint32_t byteLen, bool hasImm, uint32_t immData);

  private:
    /// READ responses or an atomic acknowledge still to send.
    struct Response
    {
        uint32_t psn{0};      //!< PSN of the first response packet
        uint32_t packets{1};  //!< response packets
        uint32_t next{0};     //!< next packet to send
        uint64_t va{0};       //!< READ: first byte
        uint32_t rkey{0};     //!< READ: R_Key
        uint32_t length{0};   //!< READ: bytes
        bool atomic{false};   //!< an atomic acknowledge, not READ responses
        bool resend{false};   //!< answers a duplicate request
        uint64_t original{0}; //!< atomic: the value found
    };

    /// A saved atomic result (the replay cache).
    struct AtomicResult
    {
        bool valid{false};    //!< slot in use
        uint32_t psn{0};      //!< PSN of the request
        uint64_t original{0}; //!< the value it found
    };

    bool SendAck(TxDatagram& out, uint8_t syndrome, uint32_t psn);
    bool SendCnp(TxDatagram& out);
    bool SendResponse(TxDatagram& out);
    void HandleRequest(Time now, const ParsedPacket& pkt);
    void HandleDuplicateRequest(const ParsedPacket& pkt);
    RoceExec ExecuteRead(const ParsedPacket& pkt, bool resend);
    RoceExec ExecuteAtomic(const ParsedPacket& pkt);
    bool QueueResponse(const Response& r);
    bool Responding(uint32_t psn) const;

    /// A posted receive work request.
    struct PostedRecv
    {
        RecvWr wr; //!< the work request (its SGE is checked per packet)
    };

    std::unique_ptr<RoceRecoveryReceiver> m_receiver;     //!< recovery's responder half
    RoceResponderState m_state{RoceResponderState::IDLE}; //!< responder state
    std::deque<PostedRecv> m_rq;                          //!< posted receives, oldest first
    uint32_t m_ePsn{0};                                   //!< expected PSN
    uint32_t m_msn{0};                                    //!< message sequence number
    uint32_t m_unackedCount{0};                           //!< in-order packets since the last ACK
    Time m_ackDeadline{TIME_INFINITE};                    //!< coalescing timer
    bool m_ackNow{false};                                 //!< an ACK is due
    bool m_nakPending{false};                             //!< a NAK is due
    uint8_t m_nakSyndrome{0};                             //!< its syndrome
    uint32_t m_nakPsn{0};                                 //!< its PSN
    bool m_cnpNow{false};                                 //!< a CNP is due
    std::vector<Response> m_responses;         //!< ring of responses due (sized at first use)
    size_t m_responseHead{0};                  //!< oldest entry of m_responses
    size_t m_responseCount{0};                 //!< entries in m_responses
    std::vector<AtomicResult> m_atomicResults; //!< replay cache, maxRdAtomic entries
    size_t m_atomicNext{0};                    //!< slot the next result overwrites
};

} // namespace metaroce

#endif // METAROCE_ROCEV2_RESPONDER_H
